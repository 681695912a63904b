"""A computed chunk: the fold of the source leaves beneath its node.

Its leaves' stamps are read (cached) and their field read as the source presents it one
chunk per leaf (``read_leaf``: checked, re-encoded where a leaf is encoded otherwise),
``config["compute.leaves_at_once"]`` leaves at once, each folded into the chunk as it
arrives (``hive/folds.Accumulator``): memory is that many leaves' values beside the
chunk. A chunk folded from immutable ``run-*`` versions only is kept (``ComputedChunks``)
under the stamps it was folded from, and used again while each is still the one the
session's stamp cache holds; a stamp read again (``refresh()``, a new ``serve``
generation, which takes the chunks its predecessor kept) is compared, and a leaf committed
again makes the chunk folded anew. Requests for one chunk met while it is being folded
share that fold.

The orders coarser than the shard order keep their nodes at order 0 (one per base cell),
so each of their chunks folds every leaf of its base cell. Where the fold gives exactly
the same values folded again (``min``, ``max``; an integer ``sum`` with fill value 0), such
a chunk is folded from the chunk of the same node at the finest of those orders (kept, or
folded once for all of them): one pass over the leaves serves every coarse order.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..chunkbytes import plain_bytes
from ..errors import EncodingError, MocHiveError
from ..hive.arraymeta import fill_number
from ..hive.folds import Accumulator, Fold
from ..hive.leaves import Leaf, LeafCache, Read
from ..io.ranges import BytesLike, slice_bytes
from ..transcode import decode_chunk
from ..tunables import setting
from ..view.arrays import FieldArray
from ..view.computed import ComputedArray
from .plan import Absent, Compute, LeafRead, plan_chunk

if TYPE_CHECKING:
    from ..session import HiveSession
    from ..view.tree import View

Under = tuple[tuple[str, Leaf], ...]  # the stamps a chunk was folded from, by leaf path
T = TypeVar("T")
Executor = tuple[Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]],
                 Callable[..., memoryview | None]]


async def computed_chunk(session: HiveSession, plan: Compute,
                         run: Executor) -> BytesLike | None:
    """The bytes of computed chunk ``plan`` (little-endian values), ``None`` when no cell
    beneath it holds a value (the fill value). ``run``: the executor's ``(execute,
    read_leaf)``, which its leaves are read with. Cost: kept, a look at each of its
    leaves' cached stamps; else every leaf beneath it read (:func:`fold_chunk`), or the
    chunk it is folded from again (:func:`refolded`)."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, ComputedArray)
    data, _ = await _chunk(session, array, plan.coords, run)
    return None if data is None else slice_bytes(data, plan.byte_range)


async def _chunk(session: HiveSession, array: ComputedArray, coords: tuple[int, ...],
                 run: Executor) -> tuple[bytes | None, Under | None]:
    """Chunk ``coords`` of ``array`` and the stamps it was folded from: kept, or folded
    (once for every request that meets it being folded) and kept where it may be."""
    key = (array.path, coords)
    found = await session.computed.get(key, session.leaves, session.backend.get)
    if found is not None:
        return found
    finer = refold_source(session, array)

    async def fold() -> tuple[bytes | None, Under | None]:
        if finer is not None:
            made = refolded(array, await _chunk(session, finer, coords, run))
        else:
            made = await fold_chunk(session, array, coords, run)
        if made[1] is not None:
            session.computed.put(key, made[1], made[0])
        return made

    return await session.computed.once(key, fold)


def refold_source(session: HiveSession, array: ComputedArray) -> ComputedArray | None:
    """The computed array whose chunks ``array``'s are folded from (the same field and
    node, at the finest order whose nodes are at order 0), or ``None``: folded from the
    leaves. Only where folding a folded cell again gives exactly what the leaves give:
    ``min`` and ``max`` (a folded cell with a value is never the fill value), an integer
    ``sum`` whose fill value is 0 (a skipped cell adds 0). No I/O."""
    level, fold = array.level, array.fold
    source = level.source
    assert source is not None
    if not _refolds(fold) or level.node_order or level.cell_order >= source.depth:
        return None
    path = f"{level.path.rsplit('/', 1)[0]}/o{source.depth}/{array.name}"
    finer = session.view.arrays.get(path)
    if not isinstance(finer, ComputedArray) or finer.level.node_order or finer.fold != fold \
            or [s.level for s in finer.sources] != [s.level for s in array.sources]:
        return None  # (a D24 region coarser than the finer order: not in its chunks)
    return finer


def coarse_sources(view: View) -> list[ComputedArray]:
    """The computed arrays that coarser orders are folded from again (the finest order
    whose nodes are at order 0, each field whose fold :func:`refold_source` allows), in
    path order. No I/O."""
    found = []
    for path in sorted(view.arrays):
        array = view.arrays[path]
        if isinstance(array, ComputedArray) and not array.level.node_order:
            source = array.level.source
            assert source is not None
            if array.level.cell_order == source.depth and _refolds(array.fold):
                found.append(array)
    return found


def refolded(array: ComputedArray, finer: tuple[bytes | None, Under | None]
             ) -> tuple[bytes | None, Under | None]:
    """``array``'s chunk folded from ``finer``, the chunk of the same node at a finer
    order (:func:`refold_source`), under the same stamps. Cost: one pass over its cells."""
    data, under = finer
    if data is None:
        return None, under
    fold = array.fold
    values = np.frombuffer(data, dtype=fold.dtype.newbyteorder("<"))
    cells = array.level.cells_per_node
    accumulator = Accumulator(fold, cells)
    accumulator.add(values, values.size // cells, 0)
    out = accumulator.result().astype(fold.dtype.newbyteorder("<"), copy=False)
    return out.tobytes(), under


def _refolds(fold: Fold) -> bool:
    """Whether a cell folded by ``fold`` folds again to what its cells fold to."""
    return fold.method in ("min", "max") or (fold.dtype.kind in "iub" and not fold.fill.any())


async def fold_chunk(session: HiveSession, array: ComputedArray, coords: tuple[int, ...],
                     run: Executor) -> tuple[bytes | None, Under | None]:
    """Chunk ``coords`` folded from its source leaves (of every source level it composes:
    a leaf at the chunk's own order passes through, a fold of one cell), and the stamps it
    was folded from (``None``: a leaf read in place, whose bytes may change under its
    stamp: not kept)."""
    level = array.level
    accumulator = Accumulator(array.fold, level.cells_per_node)
    jobs = []
    for source in array.sources:
        windows, first, stop, offsets = array.beneath(coords, source.level)
        jobs += [(source, w, i, int(offset)) for w in windows
                 for i, offset in zip(range(first, stop), offsets.tolist(), strict=True)]
    at_once = max(1, setting("compute.leaves_at_once"))
    under: list[tuple[str, Leaf]] = []
    kept = True
    for start in range(0, len(jobs), at_once):
        batch = jobs[start : start + at_once]
        if _folded_now(session, array, accumulator, batch, under, run[2]):
            continue
        read = await asyncio.gather(*(leaf_values(session, source, w, i, run)
                                     for source, w, i, _ in batch))
        for (source, _, _, offset), (path, leaf, values, immutable) in zip(batch, read,
                                                                           strict=True):
            # the stamp as the cache keeps it (a slim copy of the one read): what get() sees
            under.append((path, session.leaves.hit(path) or leaf))
            kept = kept and immutable
            if values is not None:
                cells = source.level.cells_per_node
                factor = 4 ** (source.level.cell_order - level.cell_order)
                _add(accumulator, values, min(factor, cells), offset * cells // factor, path,
                     array)
    if not accumulator.seen.any():
        return None, tuple(under) if kept else None
    values = accumulator.result().astype(array.fold.dtype.newbyteorder("<"), copy=False)
    return values.tobytes(), tuple(under) if kept else None


def _folded_now(session: HiveSession, array: ComputedArray, accumulator: Accumulator,
                batch: list[tuple[FieldArray, str | None, int, int]],
                under: list[tuple[str, Leaf]], read_now: Callable[..., memoryview | None],
                ) -> bool:
    """``batch`` (``(source, window, leaf index, offset)`` each) folded into
    ``accumulator`` without a task, its stamps added to ``under``, when each leaf's stamp
    is cached or in the page cache and its chunks are a span's fast path
    (``read_now``: immutable versions encoded as declared, plain values, all in the page
    cache): one read into one buffer and one fold of it. ``False``, nothing folded or
    added, otherwise: the batch is read leaf by leaf (which reports what is wrong). Cost:
    the batch's stamps, leaf ``zarr.json`` and chunk objects, read inline."""
    source = batch[0][0]
    meta = source.meta
    plain = plain_bytes(meta.codecs, meta.data_type)
    if plain is None or any(job[0] is not source for job in batch) \
            or not np.can_cast(plain, array.fold.dtype, "safe"):
        return False
    level, per = source.level, source.chunks_per_leaf
    leaves, backend = session.leaves, session.backend
    parts: list[LeafRead] = []
    stamps: list[tuple[str, Leaf]] = []
    try:
        paths = [level.object_path(index, window) for _, window, index, _ in batch]
        if leaves.stamps_now(paths, backend):  # kept in one pass where it can; a failure
            return False  # is said where the leaf by leaf read reads that stamp again
        for path, (_, window, index, _) in zip(paths, batch, strict=True):
            leaf = leaves.resolve_now(path, backend)
            if leaf is None:
                return False
            prefix = (level.windows.index(window),) if source.windowed and window is not None \
                else ()
            for k in range(per):
                plan = plan_chunk(source, (*prefix, index * per + k), leaf)
                if not isinstance(plan, LeafRead):
                    return False
                parts.append(plan)
            stamps.append((path, leaf))
        fill = np.full(math.prod(source.part_chunks), fill_number(meta.fill_value, plain),
                       plain).tobytes()
        data = read_now(session, parts, source, fill, False)
    except MocHiveError:  # read leaf by leaf, which says what is wrong
        return False
    if data is None:
        return False
    cells = level.cells_per_node
    factor = 4 ** (level.cell_order - array.level.cell_order)
    starts = np.array([offset for *_, offset in batch], np.int64) * cells // factor
    rows = np.frombuffer(data, dtype=plain).reshape(len(batch), cells)
    accumulator.add_rows(rows, min(factor, cells), starts)
    hit = leaves.hit
    under.extend((path, hit(path) or leaf) for path, leaf in stamps)
    return True


def _add(accumulator: Accumulator, values: np.ndarray, factor: int, at: int, path: str,
         array: ComputedArray) -> None:
    if not np.can_cast(values.dtype, array.fold.dtype, "safe"):
        raise EncodingError(
            f"{path}: field {array.name!r} holds {values.dtype} values, which cannot be cast "
            f"safely to the {array.fold.dtype} its declared fold gives {array.path}")
    accumulator.add(values, factor, at)


async def leaf_values(session: HiveSession, source: FieldArray, window: str | None,
                      index: int, run: Executor) -> tuple[str, Leaf, np.ndarray | None, bool]:
    """``(path, stamp, values, immutable)`` of field ``source`` in the ``index``-th leaf of
    its level (in ``window``): its values as one flat array (``None``: no value, as the
    source view reads it: an absent leaf, or one it refuses, whose problem is noted), and
    whether they come from an immutable version. Cost: the leaf's stamp (cached) and its
    chunks of the field (``read_leaf``), one at a time."""
    execute, read_leaf, _ = run
    level = source.level
    path = level.object_path(index, window)
    leaf = await session.leaves.resolve(path, session.backend.get)
    prefix = (level.windows.index(window),) if source.windowed and window is not None else ()
    parts, immutable = [], True
    for k in range(source.chunks_per_leaf):
        plan = plan_chunk(source, (*prefix, index * source.chunks_per_leaf + k), leaf)
        if isinstance(plan, Absent):
            await execute(session, plan)  # a problem is noted, as the source view notes it
            return path, leaf, None, True
        immutable = immutable and plan.immutable
        data, _ = await read_leaf(session, plan, source)
        parts.append(await _values(source, data))
    return path, leaf, np.concatenate(parts) if len(parts) > 1 else parts[0], immutable


async def _values(source: FieldArray, data: BytesLike | None) -> np.ndarray:
    """One leaf chunk's values from its bytes as ``source`` declares them (fill: none)."""
    meta = source.meta
    shape = list(source.part_chunks)
    plain = plain_bytes(meta.codecs, meta.data_type)
    if data is None:
        dtype = plain if plain is not None else np.dtype(str(meta.data_type))
        return np.full(int(np.prod(shape)), fill_number(meta.fill_value, dtype), dtype)
    if plain is not None:
        return np.frombuffer(memoryview(data).cast("B"), dtype=plain)
    return (await decode_chunk(meta, shape, bytes(data))).reshape(-1)


class ComputedChunks:
    """The computed chunks a session keeps: up to ``limit`` bytes of them, least recently
    used let go first (``config["cache.computed_bytes"]``), each with the stamps it was
    folded from; and the folds under way, so that requests for one chunk share one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: OrderedDict[tuple[str, tuple[int, ...]], tuple[Under, bytes | None]] = (
            OrderedDict())
        self._bytes = 0
        self._folding: dict[tuple[str, tuple[int, ...]],
                            tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = {}

    async def get(self, key: tuple[str, tuple[int, ...]], leaves: LeafCache,
                  read: Read) -> tuple[bytes | None, Under] | None:
        """``(bytes, stamps)`` of a kept chunk whose every leaf's stamp is still the one it
        was folded from, else ``None``. Cost: a cache look per leaf beneath it; a stamp
        ``leaves`` does not hold (a new ``serve`` generation, ``refresh()``) read with
        ``read`` and compared."""
        found = self._kept.get(key)
        if found is None:
            return None
        under, data = found
        if not leaves.holds(under):
            try:
                now = await asyncio.gather(*(leaves.resolve(path, read) for path, _ in under))
            except Exception:  # the fold reads them again, and says what is wrong
                now = []
            if len(now) != len(under) or any(
                    new.slim() != old for (_, old), new in zip(under, now, strict=False)):
                self._drop(key)
                return None
            under = tuple((path, leaves.hit(path) or new.slim())
                          for (path, _), new in zip(under, now, strict=True))
            self._kept[key] = (under, data)
        self._kept.move_to_end(key)
        return data, under

    def adopt(self, other: ComputedChunks) -> None:
        """Take the chunks ``other`` keeps (a new ``serve`` generation takes its
        predecessor's): each is used again once its leaves' stamps, read anew, are the
        ones it was folded from."""
        self._kept, other._kept = other._kept, OrderedDict()
        self._bytes, other._bytes = other._bytes, 0

    async def once(self, key: tuple[str, tuple[int, ...]],
                   fold: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``fold()``'s result, run once for every caller that asks for ``key`` while it
        runs (on one event loop); a caller cancelled leaves it running for the others."""
        loop = asyncio.get_running_loop()
        found = self._folding.get(key)
        if found is None or found[0] is not loop:
            task: asyncio.Task[T] = loop.create_task(fold())
            self._folding[key] = loop, task
            task.add_done_callback(lambda done: self._finished(key, done))
        else:
            task = found[1]
        return await asyncio.shield(task)

    def _finished(self, key: tuple[str, tuple[int, ...]], task: asyncio.Task[Any]) -> None:
        if self._folding.get(key, (None, None))[1] is task:
            del self._folding[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failure is its callers' to raise

    def put(self, key: tuple[str, tuple[int, ...]], under: Under, data: bytes | None) -> None:
        self._drop(key)
        size = len(data or b"") + 64 * len(under)
        if size > self.limit:
            return
        self._kept[key] = (under, data)
        self._bytes += size
        while self._bytes > self.limit:
            self._drop(next(iter(self._kept)))

    def _drop(self, key: tuple[str, tuple[int, ...]]) -> None:
        found = self._kept.pop(key, None)
        if found is not None:
            self._bytes -= len(found[1] or b"") + 64 * len(found[0])
