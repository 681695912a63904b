"""Which listed leaves of a level exist, learned in bulk: the same for every chunking.

A coverage may list far more leaves than were written. Reading one commit stamp per
listed leaf would cost a request per absent leaf; instead, once a level's stamps read
mostly absent (a few of them, see :meth:`Presence.tally`), the level is *sparse*: the
leaves a read needs are looked up in listings of the digit tree, a run of consecutive
nodes at a time (:func:`~moczarr_store.hive.walk.existing_nodes`: one LIST per directory
that exists), and only the leaves found there have their stamps read. Runs grow while
they find the level sparse, so a scan's LISTs are bounded by the directories that exist.

What a session learned stays until ``refresh()`` (which makes a new :class:`Presence`),
as the commit stamps it read do: a leaf written later is found after ``refresh()``. The
check of every stamp at open (``verify="open"``, ``load.drop_unstamped``) learns the same
way, with a :class:`Presence` of its own (it renumbers the level's nodes).
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MocHiveError
from .level import Level
from .walk import existing_nodes

if TYPE_CHECKING:
    from ..io.reader import HiveIO

SAMPLE = 8
"""Stamps whose reading decides whether a level is sparse: more than half of ``SAMPLE``
read in a row absent makes it so."""
FIRST_RUN = 64
"""Nodes the first listing of a sparse level covers; each listing that finds its run
sparse doubles the next, up to ``LAST_RUN``."""
LAST_RUN = 1 << 16


@dataclass(frozen=True)
class Found:
    """What one listing found for nodes ``lo`` to ``hi - 1`` of a level of ``listed``
    nodes: the indices of those with a directory (ascending)."""

    lo: int
    hi: int
    present: np.ndarray
    listed: int

    @property
    def missing(self) -> int:
        return self.hi - self.lo - len(self.present)

    @cached_property
    def what(self) -> str:
        """What a leaf this listing found absent has (the problem's words): the count is
        a lower bound for the level (the level's total would take listing all of it)."""
        return (f"has no commit stamp (no directory): at least {self.missing:,} of the "
                f"{self.listed:,} leaves the level lists are missing (one listing found them "
                f"among the {self.hi - self.lo:,} around it)")

    def has(self, node: int) -> bool:
        """Whether ``node`` (within this run) has a directory."""
        at = int(np.searchsorted(self.present, node))
        return at < len(self.present) and int(self.present[at]) == node

    def gone(self, first: int, last: int) -> np.ndarray:
        """For nodes ``first`` to ``last`` (within this run), whether each is absent."""
        out = np.ones(last - first + 1, dtype=bool)
        at = self.present[(self.present >= first) & (self.present <= last)]
        out[at - first] = False
        return out


@dataclass
class _Level:
    sparse: bool | None = None  # None: not known sparse; False: its backend cannot list
    seen: int = 0  # stamps tallied since the last decision, and how many were absent
    absent: int = 0
    run: int = FIRST_RUN  # nodes the next listing covers
    probed: bool = False  # a first absent stamp had the run from it listed
    los: list[int] = field(default_factory=list)  # the runs listed, by first node
    found: list[Found] = field(default_factory=list)
    # listings under way: (event loop id, first node, past the last node, its future)
    pending: list[tuple[int, int, int, asyncio.Future[Found]]] = field(default_factory=list)


class Presence:
    """A session's knowledge of which listed leaves exist, per level, up to ``limit``
    nodes' worth (``config["cache.listed_runs"]``: runs and the present nodes they hold;
    all runs let go when one more would not fit, the levels' sparse flags kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._levels: dict[str, _Level] = {}
        self._kept = 0

    def _level(self, path: str) -> _Level:
        return self._levels.setdefault(path, _Level())

    def sparse(self, level: str) -> bool | None:
        """Whether ``level`` is known sparse (``False``: it cannot be listed)."""
        known = self._levels.get(level)
        return None if known is None else known.sparse

    def tally(self, level: str, seen: int, absent: int) -> None:
        """``seen`` stamps of ``level`` read, ``absent`` of them without a stamp. Every
        ``SAMPLE`` stamps the level becomes sparse if most of them were absent. No I/O."""
        known = self._level(level)
        if known.sparse is not None:
            return
        known.seen += seen
        known.absent += absent
        if known.seen >= SAMPLE:
            if 2 * known.absent > known.seen:
                known.sparse = True
            known.seen = known.absent = 0

    async def absent(self, backend: HiveIO, level: Level, node: int) -> Found | None:
        """The listing that found ``node`` absent, or ``None`` (it has a directory, or
        its stamp is to be read): :meth:`gone` of one node, without arrays."""
        if self.sparse(level.path) is not True:
            return None
        known = self._level(level.path)
        try:
            found = await self._run(backend, level, known, node, node)
        except MocHiveError:  # cannot list (plain HTTP): stamps one by one from now on
            known.sparse = False
            return None
        return None if found.has(node) else found

    async def gone(self, backend: HiveIO, level: Level, first: int,
                   last: int) -> tuple[np.ndarray, Found] | None:
        """For nodes ``first`` to ``last`` of ``level``, whether a listing found each
        absent, and the first run that answered (for the warning); ``None`` when stamps
        are read one by one: the level is not known sparse. Cost: nothing for nodes
        listed before; else one :func:`~moczarr_store.hive.walk.existing_nodes` per run
        not yet listed (concurrent callers share it); a backend that cannot list is
        remembered."""
        if self.sparse(level.path) is not True:
            return None
        known = self._level(level.path)
        parts: list[np.ndarray] = []
        answered: Found | None = None
        node = first
        while node <= last:
            try:
                found = await self._run(backend, level, known, node, last)
            except MocHiveError:  # cannot list (plain HTTP): stamps one by one from now on
                known.sparse = False
                return None
            stop = min(last, found.hi - 1)
            parts.append(found.gone(node, stop))
            answered = answered or found
            node = stop + 1
        assert answered is not None
        return np.concatenate(parts), answered

    async def probe(self, backend: HiveIO, level: Level, node: int) -> Found | None:
        """A stamp of ``node`` read absent: the first such of a level not known sparse
        lists the run from it (what it found: how many listed leaves are missing there),
        which makes the level sparse if most are. Cost: once per level, one
        :func:`~moczarr_store.hive.walk.existing_nodes` of ``FIRST_RUN`` nodes."""
        known = self._level(level.path)
        if known.sparse is False:
            return None
        if known.probed:  # the leaves met together wait for that listing, if it holds them
            found = await self._known(known, node)
        else:
            known.probed = True
            try:
                found = await self._run(backend, level, known, node, node)
            except MocHiveError:  # cannot list (plain HTTP)
                known.sparse = False
                return None
        return None if found is None or found.has(node) else found

    async def _run(self, backend: HiveIO, level: Level, known: _Level,
                   node: int, last: int) -> Found:
        """The run holding ``node``: listed before, under way, or listed now (through
        ``last`` at least, when the next run listed does not begin before)."""
        found = await self._known(known, node)
        if found is not None:
            return found
        loop = id(asyncio.get_running_loop())
        stop = level.n_nodes
        at = bisect.bisect_right(known.los, node)
        if at < len(known.los):
            stop = known.los[at]
        for pending_loop, lo, _hi, _future in known.pending:
            if pending_loop == loop and node < lo:
                stop = min(stop, lo)
        hi = min(stop, max(node + known.run, last + 1))
        future = asyncio.get_running_loop().create_future()
        entry = (loop, node, hi, future)
        known.pending.append(entry)
        try:
            exists = await existing_nodes(backend, level.root,
                                          level.node_ranks[node:hi], level.node_order,
                                          level.manifest.path_grouping)
            found = Found(node, hi, node + np.flatnonzero(exists), level.n_nodes)
            future.set_result(found)
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: a caller with no waiter logs nothing
            raise
        finally:
            known.pending.remove(entry)
        self._keep(known, found)
        if 2 * len(found.present) < hi - node:
            known.run = min(2 * known.run, LAST_RUN)
            known.sparse = True
        else:  # mostly present here: sample stamps again
            known.sparse, known.run = None, FIRST_RUN
        return found

    @staticmethod
    async def _known(known: _Level, node: int) -> Found | None:
        """The run holding ``node`` listed before or under way (on this event loop)."""
        at = bisect.bisect_right(known.los, node) - 1
        if at >= 0 and node < known.found[at].hi:
            return known.found[at]
        loop = id(asyncio.get_running_loop())
        for pending_loop, lo, hi, future in known.pending:
            if pending_loop == loop and lo <= node < hi:
                return await asyncio.shield(future)
        return None

    def _keep(self, known: _Level, found: Found) -> None:
        size = 1 + len(found.present)
        if self._kept + size > self.limit:
            for level in self._levels.values():
                level.los.clear()
                level.found.clear()
            self._kept = 0
        at = bisect.bisect_left(known.los, found.lo)
        known.los.insert(at, found.lo)
        known.found.insert(at, found)
        self._kept += size
