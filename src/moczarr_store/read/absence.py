"""What a read that finds nothing means: the content of its leaf version, a stamp that
moved under the read (:class:`~moczarr_store.errors.LeafMovedError`: the key is planned
again), or damage, reported once per (level, kind) by the session's ``problems``.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..diagnostics import FIRST_NAMES, first_names
from ..errors import LeafMovedError
from ..hive.jsonio import read_document
from ..hive.leaves import Leaf, tick
from ..view.arrays import FieldArray
from .plan import LeafRead

if TYPE_CHECKING:
    from ..session import HiveSession

WINDOW_PROBES = 4096  # stamps read to find whether a pyramid level has a window


async def settle_absence(session: HiveSession, plan: LeafRead, missing: str | None) -> None:
    """A read of a ``run-*`` version found nothing (``missing``: the key; ``None``: bytes
    cut short). The version is immutable, so that is its content, unless the writer has
    committed another version since and removed this one: the leaf's stamp is read again
    (:meth:`~moczarr_store.hive.leaves.LeafCache.reread`: one GET, shared by the misses
    of one leaf met together; none when the cached stamp has moved on already: a stamp
    never names a version again once it left it) and if it moved,
    :class:`LeafMovedError` makes the caller plan the key again. A confirmed absence is
    remembered: the next read of that key re-reads no stamp. An unversioned leaf
    (rewritten in place) missing an object while it has no stamp is being rewritten: an
    error naming it, never its half-written state read as the fill value (its cached
    stamp is kept for the reads after the rewrite). Cost: none for a key known absent,
    else one GET (every time, for unversioned leaves: their absences can change)."""
    if not plan.immutable:
        if missing is not None:
            await _check_in_place(session, plan)
        return
    if missing is not None and session.absences.peek(missing) is not None:
        return
    after = tick()
    leaf = session.leaves.peek(plan.leaf)  # moved on already (another read found out)?
    if _names(leaf, plan):
        leaf = await session.leaves.rereading(plan.leaf)  # or is finding out now?
    if _names(leaf, plan):
        leaf = await session.leaves.reread(plan.leaf, session.backend.get, after)
    assert isinstance(leaf, Leaf)
    if leaf.state != "stamped" or leaf.current != plan.version:
        now = f"version {leaf.current!r}" if leaf.state == "stamped" else f"{leaf.state}"
        raise LeafMovedError(f"leaf {plan.leaf}: its commit stamp moved from version "
                             f"{plan.version!r} to {now} while {plan.object} was read")
    if missing is not None:
        session.absences.put(missing, True)


def _names(leaf: object, plan: LeafRead) -> bool:
    """Whether ``leaf`` (a stamp as read, if any) may still name ``plan``'s version: only a
    stamp read after the miss can confirm it, any stamp that names another refutes it."""
    return not isinstance(leaf, Leaf) or leaf.state == "stamped" and leaf.current == plan.version


async def _check_in_place(session: HiveSession, plan: LeafRead) -> None:
    """An unversioned leaf's object is missing: an error if the leaf has no stamp now
    (zagg rewrites such a leaf by clearing it, then writing it, its stamp last)."""
    leaf = await session.leaves.reread(plan.leaf, session.backend.get, tick(), replace=False)
    if leaf.state != "stamped":
        raise LeafMovedError(
            f"leaf {plan.leaf}: {plan.object} is missing and the leaf has no commit stamp "
            f"now ({leaf.state}): it is being rewritten in place (unversioned leaves "
            "cannot be read while a writer rewrites them)")


async def no_array(session: HiveSession, plan: LeafRead, array: FieldArray, data: Any) -> None:
    """A leaf version without this array: its chunks read as missing. Damage is warned
    once per (level, kind): the version is gone; bytes with no metadata to read them by;
    no metadata although the leaf's commit stamp hashes the array (it was written). Cost:
    the version check (:func:`check_version`); the stamp is cached."""
    if not await check_version(session, plan, array):
        return
    if data is not None and not isinstance(data, BaseException):
        session.problems.note(array.level.path, "no-array", plan.object)
        return
    leaf = await session.leaves.resolve(plan.leaf, session.backend.get)
    if leaf.hashed is not None and array.group in leaf.hashed:
        session.problems.note(array.level.path, "unwritten", plan.leaf,
                              what=f"hashes array {array.group} in its commit stamp but has "
                              "no metadata for it")


async def check_version(session: HiveSession, plan: LeafRead, array: FieldArray) -> bool:
    """Whether the leaf version a chunk read as missing was read from still exists; if it
    is gone (a ``current`` pointer left dangling, or moved on and the old version deleted),
    that is damage, warned once. Cost: one GET per leaf version (cached)."""
    group = plan.meta.rsplit("/", 2)[0]

    async def group_exists() -> bool:
        return await read_document(session.backend, f"{group}/zarr.json") is not None

    if await session.groups.get(group, group_exists):
        return True
    if plan.immutable:
        version = group.rsplit("/", 2)[-2]
        what = f"points at version {version!r}, which is missing"
        session.problems.note(array.level.path, "dangling", plan.leaf, what=what)
    else:
        session.problems.note(array.level.path, "no-group", plan.leaf)
    return False


async def check_window(session: HiveSession, path: str, window: str) -> None:
    """An overview or column object absent from ``window``: if no object of its level is
    stamped in that window, the level was not made for it (not yet swept, or deleted), and
    its cells read as the fill value: warned once, naming the objects, as moczarr warns.
    Cost, once per (level, window): the stamps of its objects there (outside an AOI too)
    in domain order until one is stamped (cached), in growing batches; none when it has
    more than ``WINDOW_PROBES`` there (it is assumed made)."""
    level = session.view.levels[path]
    ranks = level.node_ranks if level.uncut_ranks is None else level.uncut_ranks  # any AOI's
    level = replace(level, node_ranks=ranks, windows=(), window=window)

    async def absent() -> list[str]:
        """The first of the level's objects in ``window`` when none is stamped, else
        ``[]`` (also when more than ``WINDOW_PROBES``: assume the level was made)."""
        paths = [p for _, _, p in itertools.islice(level.object_pairs(), WINDOW_PROBES + 1)]
        if len(paths) > WINDOW_PROBES:
            return []
        start, size = 0, 1
        while start < len(paths):
            found = await asyncio.gather(*(session.leaves.resolve(p, session.backend.get)
                                           for p in paths[start : start + size]))
            if any(leaf.state == "stamped" for leaf in found):
                return []
            start, size = start + size, size * 8
        return paths[: FIRST_NAMES + 1]

    missing = await session.windows.get((path, window), absent)
    if missing:
        session.problems.note(path, "unswept", repr(window), noun="window",
                              what=f"has no stamped {level.artifact} object (not yet swept, "
                              f"or deleted; absent: {first_names(missing)})")
