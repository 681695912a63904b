"""Bounded LRUs: :class:`AsyncCache` of values loaded asynchronously, with one in-flight
load per key; :class:`Lru`, a plain one shared across threads."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Lru(Generic[V]):
    """At most ``max_entries`` values by key, the least recently used let go first; safe
    across threads (sessions on other threads' event loops share one). Cost: a dict
    operation under a lock."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._kept: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Hashable) -> V | None:
        """The value kept under ``key`` (counted as a use), or ``None``."""
        with self._lock:
            value = self._kept.get(key)
            if value is not None:
                self._kept.move_to_end(key)
            return value

    def setdefault(self, key: Hashable, value: V) -> V:
        """The value kept under ``key`` (counted as a use), else ``value``, kept now."""
        with self._lock:
            kept = self._kept.setdefault(key, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)
            return kept


class AsyncCache(Generic[V]):
    """Concurrent requests for one missing key share a single load (per event loop).

    ``keep`` turns a loaded value into what the cache retains (e.g. a slimmer form);
    the caller that triggered the load still receives the full value.
    """

    def __init__(self, max_entries: int, keep: Callable[[V], V] = lambda value: value) -> None:
        self.max_entries = max_entries
        self._keep = keep
        self._done: OrderedDict[Hashable, V] = OrderedDict()
        self._pending: dict[tuple[int, Hashable], asyncio.Future[Any] | None] = {}

    def __len__(self) -> int:
        return len(self._done)

    def put(self, key: Hashable, value: V) -> None:
        self._done[key] = self._keep(value)
        self._done.move_to_end(key)
        while len(self._done) > self.max_entries:
            self._done.popitem(last=False)

    def hit(self, key: Hashable) -> V | None:
        """The cached value, counted as a use, or ``None``: no await where it is known."""
        value = self._done.get(key)
        if value is not None:
            self._done.move_to_end(key)
        return value

    def holds(self, pairs: Iterable[tuple[Hashable, V]]) -> bool:
        """Whether each key's cached value is that very object, each counted as a use
        (:meth:`hit`) up to the first that is not. Cost: two dict operations a key."""
        done = self._done
        get, use = done.get, done.move_to_end
        for key, value in pairs:
            if get(key) is not value:
                return False
            use(key)
        return True

    def peek(self, key: Hashable, default: object = None) -> V | object:
        """The cached value (not counted as a use), or ``default``."""
        return self._done.get(key, default)

    def loading(self, key: Hashable) -> bool:
        """Whether a load of ``key`` is under way on the running event loop (a caller that
        would read it itself waits for that one instead)."""
        pending = self._pending  # mostly empty: a scan served inline never waits on one
        return bool(pending) and (id(asyncio.get_running_loop()), key) in pending

    def clear(self) -> None:
        self._done.clear()

    async def get(self, key: Hashable, load: Callable[[], Awaitable[V]]) -> V:
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key]
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        if slot in self._pending:  # a load is under way: wait for it (a future made once)
            pending = self._pending[slot]
            if pending is None:
                pending = self._pending[slot] = loop.create_future()
            return await asyncio.shield(pending)
        self._pending[slot] = None  # no future until a second caller asks (most never do)
        try:
            value = await load()
            self.put(key, value)
        except BaseException as err:
            future = self._pending.pop(slot)
            if future is not None:
                future.set_exception(err)
                future.exception()  # retrieved: the waiters re-raise it themselves
            raise
        future = self._pending.pop(slot)
        if future is not None:
            future.set_result(value)
        return value
