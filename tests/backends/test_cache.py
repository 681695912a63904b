"""``AsyncCache``: concurrent callers of one missing key share a single load, its value or
its failure; a failed load is not remembered; the LRU keeps ``max_entries``."""

from __future__ import annotations

import asyncio

import pytest

from moczarr_store.cache import AsyncCache


def _slow_load(outcome: object, loads: list[int]):
    """A load that counts its calls, waits so that others ask meanwhile, then returns
    ``outcome`` (or raises it, an exception)."""

    async def load() -> object:
        loads.append(1)
        await asyncio.sleep(0.01)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return load


def _callers(cache: AsyncCache, load, n: int) -> list[object]:
    async def main() -> list[object]:
        return await asyncio.gather(*(cache.get("k", load) for _ in range(n)),
                                    return_exceptions=True)

    return asyncio.run(main())


def test_concurrent_callers_share_one_load():
    cache: AsyncCache[int] = AsyncCache(8)
    loads: list[int] = []
    assert _callers(cache, _slow_load(42, loads), 5) == [42] * 5
    assert len(loads) == 1
    assert cache.peek("k") == 42


def test_a_failed_load_fails_every_waiter_and_is_not_remembered():
    cache: AsyncCache[int] = AsyncCache(8)
    loads: list[int] = []
    got = _callers(cache, _slow_load(OSError("boom"), loads), 3)
    assert len(loads) == 1 and all(isinstance(e, OSError) for e in got)
    assert cache.peek("k") is None
    assert _callers(cache, _slow_load(7, loads), 1) == [7]  # loaded again, then kept


def test_a_lone_load_that_fails_raises_to_its_caller():
    cache: AsyncCache[int] = AsyncCache(8)

    async def fail() -> int:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        asyncio.run(cache.get("k", fail))
    assert len(cache) == 0


def test_the_least_recently_used_entry_goes_first():
    cache: AsyncCache[int] = AsyncCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.hit("a") == 1  # "b" is now the oldest
    cache.put("c", 3)
    assert cache.peek("b") is None and cache.peek("a") == 1 and cache.peek("c") == 3


def test_holds_says_whether_each_key_holds_that_very_object_and_counts_the_uses():
    cache: AsyncCache[object] = AsyncCache(max_entries=3)
    a, b, c = object(), object(), object()
    for key, value in (("a", a), ("b", b), ("c", c)):
        cache.put(key, value)
    assert cache.holds([("a", a), ("b", b)])
    assert not cache.holds([("a", a), ("c", object())])  # an equal key, another object
    assert not cache.holds([("z", a)])  # not cached
    cache.put("d", object())  # "c" was used least recently (a and b were just held)
    assert cache.peek("c") is None and cache.peek("a") is a and cache.peek("b") is b
