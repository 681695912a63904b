"""A computed chunk: the fold of the source leaves beneath its node.

Its leaves' stamps are read (cached) and their field read as the source presents it one
chunk per leaf (``read_leaf``: checked, re-encoded where a leaf is encoded otherwise),
``config["compute.leaves_at_once"]`` leaves at once, each folded into the chunk as it
arrives (``hive/folds.Accumulator``): memory is that many leaves' values beside the
chunk. A chunk folded from immutable ``run-*`` versions only is kept (``ComputedChunks``)
under the stamps it was folded from, and used again while each is still the one the
session's stamp cache holds: a leaf committed again (a stamp re-read, a new ``serve``
generation) makes it folded anew.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunkbytes import plain_bytes
from ..errors import EncodingError
from ..hive.arraymeta import fill_number
from ..hive.folds import Accumulator
from ..hive.leaves import Leaf, LeafCache
from ..io.ranges import BytesLike, slice_bytes
from ..transcode import decode_chunk
from ..tunables import setting
from ..view.arrays import FieldArray
from ..view.computed import ComputedArray
from .plan import Absent, Compute, plan_chunk

if TYPE_CHECKING:
    from ..session import HiveSession

Under = tuple[tuple[str, Leaf], ...]  # the stamps a chunk was folded from, by leaf path
Executor = tuple[Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]]


async def computed_chunk(session: HiveSession, plan: Compute,
                         run: Executor) -> BytesLike | None:
    """The bytes of computed chunk ``plan`` (little-endian values), ``None`` when no cell
    beneath it holds a value (the fill value). ``run``: the executor's ``(execute,
    read_leaf)``, which its leaves are read with. Cost: kept, a look at each of its
    leaves' cached stamps; else every leaf beneath it read (:func:`fold_chunk`)."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, ComputedArray)
    key = (plan.array, plan.coords)
    found = session.computed.get(key, session.leaves)
    if found is None:
        data, under = await fold_chunk(session, array, plan.coords, run)
        if under is not None:
            session.computed.put(key, under, data)
        found = (data,)
    data = found[0]
    return None if data is None else slice_bytes(data, plan.byte_range)


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
    execute, read_leaf = run
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
    folded from."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: OrderedDict[tuple[str, tuple[int, ...]], tuple[Under, bytes | None]] = (
            OrderedDict())
        self._bytes = 0

    def get(self, key: tuple[str, tuple[int, ...]],
            leaves: LeafCache) -> tuple[bytes | None] | None:
        """``(bytes,)`` of a kept chunk whose every stamp is still the one ``leaves``
        holds, else ``None``. Cost: a cache look per leaf beneath it."""
        found = self._kept.get(key)
        if found is None:
            return None
        under, data = found
        if not all(leaves.hit(path) is leaf for path, leaf in under):
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return (data,)

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
