"""``AsyncCache``: concurrent callers of one missing key share a single load, its value or
its failure; a failed load is not remembered; the LRU keeps ``max_entries``."""

from __future__ import annotations

import asyncio

import pytest

from moczarr_store.cache import AsyncCache


def test_concurrent_callers_share_one_load():
    cache: AsyncCache[int] = AsyncCache(8)
    loads = []

    async def load() -> int:
        loads.append(1)
        await asyncio.sleep(0.01)
        return 42

    async def main() -> list[int]:
        return await asyncio.gather(*(cache.get("k", load) for _ in range(5)))

    assert asyncio.run(main()) == [42] * 5
    assert len(loads) == 1
    assert cache.peek("k") == 42


def test_a_failed_load_fails_every_waiter_and_is_not_remembered():
    cache: AsyncCache[int] = AsyncCache(8)
    loads = []

    async def fail() -> int:
        loads.append(1)
        await asyncio.sleep(0.01)
        raise OSError("boom")

    async def main() -> list[object]:
        return await asyncio.gather(*(cache.get("k", fail) for _ in range(3)),
                                    return_exceptions=True)

    got = asyncio.run(main())
    assert len(loads) == 1 and all(isinstance(e, OSError) for e in got)
    assert cache.peek("k") is None

    async def ok() -> int:
        return 7

    assert asyncio.run(cache.get("k", ok)) == 7  # loaded again, then kept


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
