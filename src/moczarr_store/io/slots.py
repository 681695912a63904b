"""A cap on requests in flight that starts the next waiting request the moment one ends.

With :class:`asyncio.Semaphore` a freed slot wakes the waiting task, and that task issues its
request only when the event loop reaches it: behind every callback already queued, and
when a hundred requests complete together (a cold scan at a 50 ms round trip) that is
milliseconds of each slot's time spent idle. :class:`RequestSlots` hands a freed slot to
the next request by starting it at once, in a task of its own: on Python 3.12 and later
eagerly (it runs up to its first wait, the request issued, before the freeing request goes
on), earlier as the next task the loop runs. Cost: nothing while a slot is free (the
request runs in its caller's task); a task per request that had to wait.

New work can also wait for room (:meth:`RequestSlots.room`): a scan that plans all its
chunks at once would otherwise queue thousands of requests, each a chain of suspended
coroutines the garbage collector walks again and again (at a cap of 128 and 50 ms a
request, ~230 ms of a 2.8 s scan of 6,300 requests).
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from .. import state

T = TypeVar("T")
_EAGER: dict[str, Any] = {"eager_start": True} if sys.version_info >= (3, 12) else {}


class _Waiting:
    """A request waiting for a slot: what starts it, the future its caller awaits, the
    caller's context, and the task serving it once started."""

    __slots__ = ("args", "context", "start", "task", "waiter")

    def __init__(self, start: Callable[..., Awaitable[Any]], args: tuple[Any, ...],
                 waiter: asyncio.Future[Any]) -> None:
        self.start = start
        self.args = args
        self.waiter = waiter
        self.context = contextvars.copy_context()
        self.task: asyncio.Task[Any] | None = None


class RequestSlots:
    """At most ``cap`` requests in flight on one event loop, started in the order they
    asked (first come, first served)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.free = cap
        self._waiting: deque[_Waiting] = deque()
        self._handing_over = False
        self._serving: set[asyncio.Task[Any]] = set()
        self._room: deque[tuple[asyncio.Future[Any], int]] = deque()  # new work waiting for room
        self._promised = 0  # requests new work let go has yet to make

    def room(self, requests: int) -> Awaitable[None] | None:
        """``None`` while fewer than ``cap`` requests wait for a slot, counting those new
        work let go has yet to ask for (and no new work waits before this); else what to
        await before making ``requests`` more. New work thus waits while a cap's worth
        waits, the slots busy meanwhile; a freed slot lets it go in the order it came
        while the count stays under the cap. Work let go counts as its ``requests`` for two
        turns of the loop (by then they are made, its tasks started eagerly or not).
        Cost: none while there is room."""
        if len(self._waiting) + self._promised < self.cap and not self._room:
            self._promise(requests)
            return None
        gate = asyncio.get_running_loop().create_future()  # cancelled with its caller
        self._room.append((gate, requests))
        return gate

    def _promise(self, requests: int) -> None:
        self._promised += requests
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, self._kept, requests)  # two turns on

    def _kept(self, requests: int) -> None:
        """Two turns after work was let go: its caller has run and the tasks it started
        have (eagerly or not), so its requests are made, or never will be."""
        self._promised -= requests
        if not self._handing_over:
            self._let_go()

    async def run(self, start: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await start(*args)`` in a slot: at once if one is free, else when one frees
        (the request then runs in a task of its own, cancelled if the caller is)."""
        if self.free > 0 and not self._waiting:
            self.free -= 1
            try:
                return await start(*args)
            finally:
                self._release()
        waiting = _Waiting(start, args, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        try:
            return await waiting.waiter
        except asyncio.CancelledError:
            if waiting.task is not None:
                waiting.task.cancel()
            raise

    def _release(self) -> None:
        """A slot freed: start waiting requests while slots are free. A request started
        here that ends at once frees its slot again inside this loop, not by recursion."""
        self.free += 1
        if self._handing_over:
            return
        self._handing_over = True
        try:
            while self.free > 0 and self._waiting:
                waiting = self._waiting.popleft()
                if waiting.waiter.done():  # its caller was cancelled while it waited
                    continue
                self.free -= 1
                loop = waiting.waiter.get_loop()
                task = asyncio.Task(self._serve(waiting), loop=loop, context=waiting.context,
                                    **_EAGER)
                if not task.done():  # kept until it ends (the loop holds only weak references)
                    waiting.task = task
                    self._serving.add(task)
            self._let_go()
        finally:
            self._handing_over = False

    def _let_go(self) -> None:
        """Let new work waiting for room go, first come first served, while what waits
        for a slot (and what work let go has yet to ask for) stays under the cap. Called
        whenever that count falls, so work never waits on a count that will not."""
        room = self._room
        while room and len(self._waiting) + self._promised < self.cap:
            gate, requests = room.popleft()
            if not gate.done():  # else its caller was cancelled
                gate.set_result(None)
                self._promise(requests)

    async def _serve(self, waiting: _Waiting) -> None:
        """Run a request that waited, its outcome handed to its caller."""
        waiter = waiting.waiter
        try:
            result = await waiting.start(*waiting.args)
        except asyncio.CancelledError:
            waiter.cancel()
            raise
        except Exception as err:
            if not waiter.done():
                waiter.set_exception(err)
        else:
            if not waiter.done():
                waiter.set_result(result)
        finally:
            if waiting.task is not None:  # None if it ended as it started
                self._serving.discard(waiting.task)
            self._release()


def started(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``coro`` in a task started at once: on Python 3.12 and later eagerly (it runs up to
    its first wait, a request issued, before this returns), earlier as the next task the
    loop runs. For requests gathered in a loop: each goes out as it is made, not after the
    loop ends. Cost: a task."""
    return asyncio.Task(coro, loop=asyncio.get_running_loop(), **_EAGER)


# event loop -> {cap: its RequestSlots}; a loop let go takes its slots with it
PER_LOOP: state.Part[
    weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, RequestSlots]]
] = state.Part("request slots per event loop", weakref.WeakKeyDictionary)


def request_slots(cap: int) -> RequestSlots:
    """The process-wide :class:`RequestSlots` for ``cap`` on the running event loop."""
    slots = PER_LOOP().setdefault(asyncio.get_running_loop(), {})
    if cap not in slots:
        slots[cap] = RequestSlots(cap)
    return slots[cap]
