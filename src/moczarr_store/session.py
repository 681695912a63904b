"""``HiveSession``: one opened hive in one process: its caches, its levels and its view.

A session is built from a backend and :class:`~moczarr_store.options.OpenOptions` (not
from a store); a store and its read-only copies share one. It opens the hive once
(concurrent first requests share the open), reads overview levels when a path first needs
them (``ensure_levels``), and adds each to the view without rebuilding the others.
Never pickled: an unpickled store starts a session of its own, which adopts the hive as
the pickled one presented it (:meth:`HiveSession.snapshot`) and shares what other copies
of it learned of immutable versions (:func:`adopt_pickled`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import pickle
import uuid

import numpy as np

from . import state
from .cache import AsyncCache, Lru
from .diagnostics import Problems
from .errors import HiveFormatError, MocHiveError, OutsideRootError
from .hive.leaves import LeafCache
from .hive.level import Level, Product
from .hive.presence import Presence
from .hive.roster import Hive, load_hive, settle
from .io.backend import Backend
from .io.buffers import BufferPool
from .options import OpenOptions
from .read.compute import ComputedChunks
from .read.execute import remember_template
from .read.plan import SpanPlans
from .tunables import check_settings
from .view.tree import View

LEARNED_KEPT = 4  # stores unpickled last whose immutable versions' caches a process keeps
logger = logging.getLogger("moczarr_store")


class HiveSession:
    """The hive behind a store: opened lazily, with bounded caches.

    ``leaves`` holds commit stamps (an LRU); ``leaf_metas``, ``indexes``, ``groups`` and
    ``absences`` hold what was learned about immutable ``run-*`` versions; ``problems``
    counts the damage met while reading. The caches' bounds are the ``cache.*`` keys of
    ``moczarr_store.config`` when the session is created.
    """

    def __init__(self, backend: Backend, options: OpenOptions) -> None:
        self.backend = backend
        self.options = options
        # read once, all checked (a bad one is refused at construction): refresh() keeps them
        self._bounds = bound = {key.split(".")[1]: value for key, value
                                in check_settings().items() if key.startswith("cache.")}
        self.leaves = LeafCache(bound["stamps"], backend.url)
        self.leaf_metas: AsyncCache[object] = AsyncCache(bound["leaf_metas"])
        self.indexes: AsyncCache[np.ndarray | None] = AsyncCache(bound["shard_indexes"])
        self.groups: AsyncCache[bool] = AsyncCache(bound["version_groups"])
        self.absences: AsyncCache[bool] = AsyncCache(bound["absences"])
        # (level, window): its objects when none is stamped (the level was not made for it)
        self.windows: AsyncCache[list[str]] = AsyncCache(bound["version_groups"])
        self.problems = Problems()
        self.span_plans = SpanPlans(bound["span_parts"])
        self.computed = ComputedChunks(bound["computed_bytes"])
        # which listed leaves of sparse levels exist, learned from listings
        self.presence = Presence(bound["listed_runs"])
        self.centre_bytes: int = bound["centre_bytes"]  # each level's kept cell centres
        # what coordinate chunks are computed into: the local reader's pool, else a new one
        self.coordinate_buffers = backend.buffers or BufferPool()
        self._hive: Hive | None = None
        self._view: View | None = None
        self._opened: AsyncCache[None] = AsyncCache(1)
        self._refused: MocHiveError | None = None  # the hive's metadata refused the open
        self._settled: AsyncCache[None] = AsyncCache(1 << 16)
        # what this session serves (the stamps it keeps) is its own: dask names its arrays
        # by this, so two sessions' datasets never share a name (and a merged graph a task)
        self.token = uuid.uuid4().hex
        self._pickled: tuple[str, bytes] | None = None  # see pickled()

    @property
    def hive(self) -> Hive:
        """The hive as read so far (``ensure_levels`` first)."""
        if self._hive is None:
            raise RuntimeError("the session has not been opened: await ensure_levels() first")
        return self._hive

    @property
    def view(self) -> View:
        """The virtual hierarchy as read so far (``ensure_levels`` first)."""
        if self._view is None:
            raise RuntimeError("the session has not been opened: await ensure_levels() first")
        return self._view

    def snapshot(self) -> Hive | None:
        """The hive as this session presents it (``None`` before it opened), for an
        unpickled copy of the store to :meth:`adopt`: a process it is sent to (a dask
        worker) then maps every key to the objects this one does."""
        return self._hive

    def pickled(self) -> tuple[str, bytes] | None:
        """:meth:`snapshot` pickled, with the token of the session that first pickled it
        (``None`` before the session opened): what an unpickled store adopts
        (:func:`adopt_pickled`). Pickled once per snapshot (a level read later makes
        another); a session that adopted one passes it on as it came, so a copy pickled
        again on its way (through dask's scheduler) is still the same snapshot to a worker."""
        if self._hive is None:
            return None
        if self._pickled is None:
            self._pickled = (self.token, pickle.dumps(self._hive, pickle.HIGHEST_PROTOCOL))
        return self._pickled

    def _make_view(self, hive: Hive) -> View:
        opts = self.options
        centres = self.centre_bytes if opts.centres else None
        return View(hive, opts.view_attrs(), opts.chunking, opts.geometry, centres,
                    opts.window_labels)

    def adopt(self, hive: Hive) -> None:
        """Present ``hive`` (a :meth:`snapshot` from another process) as this session's
        opened hive: the same levels, nodes and declared encodings, whatever the hive
        holds now (a writer may have added leaves since; they are not in this view). Leaf
        stamps are read afresh, as any new session reads them. No request."""
        self._view = self._make_view(hive)
        self._hive, self._pickled = hive, None
        self._opened.put(None, None)
        for product in hive.products:
            for level in product.levels:
                remember_template(self, level)

    def refresh(self) -> None:
        """Read every leaf's stamp afresh from the next request on: a leaf a writer has
        committed again is read from its new version. The structure opened stays (its
        levels and nodes: a key names the node it named), and so does what was learned
        of immutable versions; what listings said of which leaves exist is let go, as
        the stamps are. A new token: dask names what is served from now on anew.
        No request."""
        self.leaves = LeafCache(self._bounds["stamps"], self.backend.url)
        self.span_plans = SpanPlans(self._bounds["span_parts"])
        self.presence = Presence(self._bounds["listed_runs"])
        self.token = uuid.uuid4().hex

    async def ensure_levels(self, path: str | None = "") -> View:
        """The view, with every level node ``path`` needs read (``""``: all of them, for
        the root; ``None``: none beyond the open). Cost at first open: the manifest(s), the
        root MOC and one template object's metadata per product; per overview level read
        later: its template's stamp, group and array metadata."""
        await self._opened.get(None, self._open)
        hive, view = self.hive, self.view
        wanted = [] if path is None else hive.pending_for(path)
        if wanted:
            outcomes = await asyncio.gather(
                *(self._settle(product, level) for product, level in wanted),
                return_exceptions=True,
            )
            for product, level in wanted:  # the levels read are kept even if another failed
                if (level in product.levels and not view.has_node(level.path)
                        and view.add_level(product, level)):
                    remember_template(self, level)
                    logger.debug("%s: read level %s (%d nodes); %d requests so far",
                                 self.backend, level.path, level.n_nodes,
                                 self.backend.stats.total)
            self._pickled = None  # the snapshot changed (last, for a pickle from a thread)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
        return view

    async def _settle(self, product: Product, level: Level) -> None:
        """Read one declared level's schema, once however many requests need it."""
        opts = self.options

        async def load() -> None:
            await settle(self.backend, self.leaves, product, level, opts.verify, opts.aoi_cells)

        await self._settled.get(level.path, load)

    async def _open(self) -> None:
        """Open the hive. A refusal by its metadata (or by a link out of a local root) is
        remembered: later requests raise it again without re-reading the hive or repeating
        its warnings; a failed read (I/O) is retried by the next request."""
        opts = self.options
        if self._refused is not None:
            raise self._refused.with_traceback(None)
        try:
            hive = await load_hive(self.backend, self.leaves, opts.verify, opts.window,
                                   opts.aoi_cells, opts.computed_orders)
            self._view = self._make_view(hive)
        except (HiveFormatError, OutsideRootError) as err:
            self._refused = err
            raise
        self._hive = hive
        for product in hive.products:
            for level in product.levels:
                remember_template(self, level)
        logger.info(
            "opened %s (%s): levels %s, %d more declared; %d requests %s",
            self.backend, opts.describe() or "default options",
            ", ".join(f"{lv.path} ({lv.n_nodes} nodes)"
                      for p in self._hive.products for lv in p.levels),
            sum(len(p.pending) for p in self._hive.products),
            self.backend.stats.total, dict(self.backend.stats.counts),
        )


# what a process learned of immutable versions (leaf_metas, indexes, groups), by store
Learned = tuple[AsyncCache[object], AsyncCache[np.ndarray | None], AsyncCache[bool]]
LEARNED: state.Part[Lru[Learned]] = state.Part(
    "immutable versions learned by unpickled stores", lambda: Lru(LEARNED_KEPT))


def adopt_pickled(session: HiveSession, origin: str, snapshot: bytes) -> None:
    """Make ``session`` present ``snapshot`` (a pickled :meth:`HiveSession.snapshot` of the
    session whose token is ``origin``) with what this process learned of immutable
    versions under it before (``leaf_metas``, ``indexes``, ``groups``: shared by the copies
    it unpickles of that store, kept for the ``LEARNED_KEPT`` stores unpickled last). dask
    sends a worker a copy of the store per array of each compute: the later copies read no
    leaf array metadata again. Stamps stay each copy's own, read afresh. Cost: a hash of
    ``snapshot``, and unpickling it."""
    key = (origin, hashlib.blake2b(snapshot, digest_size=16).digest())
    session.leaf_metas, session.indexes, session.groups = LEARNED().setdefault(
        key, (session.leaf_metas, session.indexes, session.groups))
    session.adopt(pickle.loads(snapshot))
    session._pickled = (origin, snapshot)

