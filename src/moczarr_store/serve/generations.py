"""Store generations: how a long-running server sees a hive that changes under it.

A leaf's commit stamp names the ``run-*`` version its bytes live in, and a store caches
the stamps it read for its lifetime. The server therefore serves each request from one
*generation*, a :class:`MocHiveStore` that it replaces with a fresh one (new session,
empty caches) once ``stamp_ttl`` seconds have passed since the generation began. So:

- a leaf re-pointed at time ``T`` is served from its new version by ``T + stamp_ttl`` at
  the latest, and at once when the writer removes the old version (a read that finds it
  gone reads the stamp again: :mod:`..read.fresh`);
- a request uses one generation throughout (its plan, the size and the bytes of one
  chunk come from one stamp), so a chunk never mixes versions;
- ``Cache-Control: max-age`` is what is left of the serving generation's lifetime, so a
  client's cached copy is never kept past the point where the server itself may change;
  and only where a key keeps naming the same cells across restarts (the sphere geometry,
  no window axis): else ``no-cache`` (a client revalidates with the entity tag, which
  names the node's object), since a restart on a grown hive moves chunks;
- the structure the server first opened (levels, their nodes and declared encodings) is
  kept by every later generation: a client holding an array's metadata reads each chunk
  from the node it named then. A leaf a writer adds (between two others in domain order,
  it would shift every chunk after it) is served after a restart.

Cost: the first generation opens the hive (a constant number of requests); each later one
copies its structure (no request) and reads each leaf stamp again the first time one of
its chunks is asked for. It takes the computed chunks its predecessor kept: one is used
again once the stamps of the leaves it was folded from are read again and unchanged.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

from ..cache import AsyncCache
from ..options import DEFAULT_STAMP_TTL, check_stamp_ttl
from ..store import MocHiveStore
from ..tunables import setting


class Generation:
    """One store, and the sizes of immutable objects learned through it, until ``expires``
    (a ``time.monotonic()`` instant)."""

    def __init__(self, store: MocHiveStore, expires: float) -> None:
        self.store = store
        self.expires = expires
        self.sizes: AsyncCache[int | None] = AsyncCache(setting("serve.object_sizes"))
        self.declared: dict[str, str] = {}  # array path -> its declared chunk encoding
        # each keeps its plan's parts
        self.span_tags: AsyncCache[tuple[Any, str | None]] = AsyncCache(
            setting("serve.span_tags"))

    def max_age(self, now: float) -> int:
        """Whole seconds left in this generation's lifetime."""
        return max(0, math.floor(self.expires - now))

    def cache_control(self, now: float) -> str:
        """How long a client may reuse an answer unasked: the rest of this generation's
        lifetime where a key names the same cells whatever a writer adds later (the
        sphere geometry, no window axis), else not at all (``no-cache``: ask again with
        the entity tag). A restart on a grown hive would otherwise let a client's cache
        put one node's chunk, or a fill, at another node's position."""
        if positions_kept(self.store):
            return f"public, max-age={self.max_age(now)}"
        return "public, no-cache"


def positions_kept(store: MocHiveStore) -> bool:
    """Whether every key of ``store`` names the same cells after a writer's later runs:
    arrays spanning the sphere, and no window axis (a window added before the others
    moves it). Cost: nothing (the hive's products, once opened)."""
    if store.options.geometry != "sphere":
        return False
    if store.options.window is not None:
        return True
    hive = store.session.snapshot()  # None before the first key opened it: not known yet
    return hive is not None and not any(p.manifest.windowed for p in hive.products)


class Generations:
    """The current generation, replaced by a fresh store from ``make()`` once it expires.

    ``first`` (if given) serves the first generation. Nothing is read here: a generation's
    store opens the hive on its first request.
    """

    def __init__(
        self,
        make: Callable[[], MocHiveStore],
        stamp_ttl: float = DEFAULT_STAMP_TTL,
        first: MocHiveStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stamp_ttl = check_stamp_ttl(stamp_ttl)
        self._make, self._clock = make, clock
        self._current = Generation(first or make(), clock() + self.stamp_ttl)
        self.count = 1

    def current(self) -> Generation:
        """The generation to serve a request from, starting a new one if it expired."""
        now = self._clock()
        if now >= self._current.expires:
            fresh = self._make()
            shown = self._current.store.session.snapshot()
            if shown is not None:  # what clients were shown stays: only the stamps renew
                fresh.session.adopt(copy.deepcopy(shown))
                # computed chunks too, each used again once its leaves' stamps are re-read
                fresh.session.computed.adopt(self._current.store.session.computed)
            self._current = Generation(fresh, now + self.stamp_ttl)
            self.count += 1
        return self._current

    def expire(self) -> None:
        """End the current generation: the next request starts a new one."""
        self._current.expires = self._clock()

    def now(self) -> float:
        return self._clock()


def store_factory(
    source_or_store: Any, store_options: dict[str, Any]
) -> tuple[Callable[[], MocHiveStore], MocHiveStore]:
    """A function that makes a fresh store of the same hive with the same options, and the
    first store (the one given, or a new one, so bad options fail here)."""
    if isinstance(source_or_store, MocHiveStore):
        if store_options:
            raise TypeError(
                f"store options {sorted(store_options)} apply to a source, not to a MocHiveStore"
            )
        state = source_or_store.__getstate__()

        def again() -> MocHiveStore:
            store = MocHiveStore.__new__(MocHiveStore)
            store.__setstate__(state)
            store.backend.maps_spans = source_or_store.backend.maps_spans  # read as it was
            return store

        return again, source_or_store

    def make() -> MocHiveStore:
        return MocHiveStore(source_or_store, **store_options)

    return make, make()
