"""The cap on requests in flight (:mod:`moczarr_store.io.slots`): never more than the cap,
first come first served, a freed slot starting the next request at once, outcomes and
cancellation reaching the right caller."""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading

import pytest

from moczarr_store.io.slots import RequestSlots, request_slots

CALLER = contextvars.ContextVar("caller", default=None)


def test_never_more_in_flight_than_the_cap_and_first_come_first_served():
    started: list[int] = []
    in_flight = most = 0

    async def request(i: int) -> int:
        nonlocal in_flight, most
        started.append(i)
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001 * (i % 3))
        in_flight -= 1
        return i * 10

    async def main() -> list[int]:
        slots = RequestSlots(4)
        got = await asyncio.gather(*(slots.run(lambda i=i: request(i)) for i in range(50)))
        assert slots.free == 4 and not slots._waiting and not slots._serving
        return got

    assert asyncio.run(main()) == [i * 10 for i in range(50)]
    assert most == 4
    assert started == list(range(50))


def test_a_freed_slot_starts_the_next_request_before_its_caller_goes_on():
    events: list[str] = []

    async def request(name: str) -> None:
        events.append(f"{name} starts")
        await asyncio.sleep(0)
        events.append(f"{name} ends")

    async def caller(slots: RequestSlots, name: str) -> None:
        await slots.run(lambda: request(name))
        events.append(f"{name} returned")

    async def main() -> None:
        slots = RequestSlots(1)
        await asyncio.gather(caller(slots, "a"), caller(slots, "b"))

    asyncio.run(main())
    assert events.index("b starts") > events.index("a ends")
    if sys.version_info >= (3, 12):  # started eagerly: issued before "a" goes on
        assert events.index("b starts") < events.index("a returned")


def test_outcomes_reach_their_own_callers_with_their_context():
    async def request(i: int) -> tuple[int, object]:
        await asyncio.sleep(0)
        if i % 2:
            raise KeyError(i)
        return i, CALLER.get()

    async def caller(slots: RequestSlots, i: int) -> object:
        CALLER.set(f"caller {i}")
        try:
            return await slots.run(lambda: request(i))
        except KeyError as err:
            return ("raised", err.args[0])

    async def main() -> list[object]:
        slots = RequestSlots(2)
        return await asyncio.gather(*(caller(slots, i) for i in range(10)))

    assert asyncio.run(main()) == [
        ("raised", i) if i % 2 else (i, f"caller {i}") for i in range(10)
    ]


def test_requests_ending_at_once_hand_slots_over_without_recursion():
    async def fails_at_once() -> None:
        raise ValueError("refused")

    async def slow() -> None:
        await asyncio.sleep(0.01)

    async def main() -> RequestSlots:
        slots = RequestSlots(1)
        first = asyncio.ensure_future(slots.run(slow))
        await asyncio.sleep(0)  # it holds the one slot; the rest wait
        waiting = [asyncio.ensure_future(slots.run(fails_at_once)) for _ in range(2_000)]
        await first
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(o, ValueError) for o in outcomes)
        return slots

    done: list[RequestSlots] = []
    runner = threading.Thread(target=lambda: done.append(asyncio.run(main())), daemon=True)
    runner.start()
    runner.join(60)  # a hand-over by recursion overflows the stack and hangs the loop
    assert done, "the slots were not all handed over within 60 s"
    assert done[0].free == 1 and not done[0]._waiting


def test_a_cancelled_caller_never_starts_or_stops_its_request_and_frees_its_slot():
    started: list[str] = []
    finished: list[str] = []

    async def request(name: str, seconds: float) -> str:
        started.append(name)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            finished.append(f"{name} cancelled")
            raise
        finished.append(name)
        return name

    async def main() -> RequestSlots:
        slots = RequestSlots(1)
        holder = asyncio.ensure_future(slots.run(lambda: request("holder", 0.02)))
        await asyncio.sleep(0)
        never = asyncio.ensure_future(slots.run(lambda: request("never", 0)))
        stopped = asyncio.ensure_future(slots.run(lambda: request("stopped", 10)))
        last = asyncio.ensure_future(slots.run(lambda: request("last", 0)))
        await asyncio.sleep(0)
        never.cancel()  # cancelled while it waits: never started
        assert await holder == "holder"
        await asyncio.sleep(0.005)
        assert started == ["holder", "stopped"]
        stopped.cancel()  # cancelled while its request runs: the request is stopped
        with pytest.raises(asyncio.CancelledError):
            await stopped
        assert await last == "last"
        return slots

    slots = asyncio.run(main())
    assert started == ["holder", "stopped", "last"]
    assert finished == ["holder", "stopped cancelled", "last"]
    assert slots.free == 1


def test_one_set_of_slots_per_event_loop_and_cap():
    async def main() -> tuple[RequestSlots, RequestSlots, RequestSlots]:
        return request_slots(8), request_slots(8), request_slots(16)

    a, b, c = asyncio.run(main())
    assert a is b and a is not c and (a.cap, c.cap) == (8, 16)
    d, _, _ = asyncio.run(main())
    assert d is not a


async def _turns() -> None:
    """A few turns of the event loop: what was set in motion has run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def _held(slots: RequestSlots, names: str) -> dict[str, asyncio.Future]:
    """Requests ``names`` made in turn, each in flight until its future is set."""
    loop = asyncio.get_running_loop()
    ends = {name: loop.create_future() for name in names}
    for name in names:
        asyncio.ensure_future(slots.run(lambda name=name: ends[name]))
    await asyncio.sleep(0)
    return ends


async def _through(slots: RequestSlots, name: str, requests: int, passed: list[str],
                   asked: list[asyncio.Future] | None = None) -> None:
    """New work: room for ``requests``, then (with ``asked``) that many, each in flight
    until its future (added to ``asked``) is set, in a task started as the loop goes on
    (not eagerly)."""
    room = slots.room(requests)
    if room is not None:
        await room
    passed.append(name)
    for _ in range(requests if asked is not None else 0):
        asked.append(asyncio.get_running_loop().create_future())
        asyncio.ensure_future(slots.run(lambda end=asked[-1]: end))


def test_new_work_waits_while_a_cap_s_worth_of_requests_waits_then_goes_in_order():
    async def main() -> RequestSlots:
        slots = RequestSlots(2)
        ends = await _held(slots, "abc")  # a, b in flight; c waits
        assert slots.room(0) is None  # fewer than the cap wait: go now
        ends |= await _held(slots, "d")  # c, d wait: a cap's worth
        passed: list[str] = []
        asked: list[asyncio.Future] = []
        work = [asyncio.ensure_future(_through(slots, name, n, passed, asked))
                for name, n in (("first", 3), ("second", 1))]
        await _turns()
        assert passed == []
        ends["a"].set_result(None)  # c starts, d waits: the first goes, and asks for 3
        await _turns()
        assert passed == ["first"] and len(slots._waiting) == 4
        ends["b"].set_result(None)
        ends["c"].set_result(None)
        await _turns()
        assert passed == ["first"]  # 2 of the first's wait: still a cap's worth
        ends["d"].set_result(None)
        await _turns()
        assert passed == ["first", "second"]  # one waits, and the second's one to come
        for end in asked:
            end.set_result(None)
        await asyncio.gather(*work)
        await _turns()
        return slots

    slots = asyncio.run(main())
    assert slots.free == 2 and slots._promised == 0 and not slots._room


def test_new_work_waiting_for_room_goes_once_what_was_let_go_asked_for_nothing():
    async def main() -> RequestSlots:
        slots = RequestSlots(1)
        loop = asyncio.get_running_loop()
        end = loop.create_future()
        held = asyncio.ensure_future(slots.run(lambda: end))
        await asyncio.sleep(0)
        waits = asyncio.ensure_future(slots.run(lambda: loop.create_future()))  # never ends
        passed: list[str] = []
        work = {name: asyncio.ensure_future(_through(slots, name, 5, passed))
                for name in ("first", "gone", "last")}
        await asyncio.sleep(0)
        assert passed == []
        work["gone"].cancel()  # cancelled while it waits for room: skipped
        waits.cancel()  # cancelled while it waits for a slot: never made
        end.set_result(None)  # no slot will free again
        await _turns()  # the first goes, then (asking for none of its 5) the last
        assert passed == ["first", "last"]
        await asyncio.gather(held, work["first"], work["last"])
        return slots

    slots = asyncio.run(main())
    assert slots.free == 1 and slots._promised == 0 and not slots._room and not slots._serving
