"""Virtual arrays: their ``zarr.json`` and how a chunk coordinate resolves to a source."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from ..chunkbytes import chunk_check, full_shard_index, plain_bytes
from ..errors import LeafSchemaError, SphereTooLarge
from ..hive.arraymeta import (
    ArrayMeta,
    Codec,
    Sharding,
    codec_chain,
    declare,
    fill_number,
    leading_axis,
)
from ..hive.ids import child_values_into
from ..hive.level import Level
from ..hive.runs import RunEncoding
from ..io.ranges import BytesLike

SPAN_BYTES = 4 << 20
"""About the bytes of one chunk of ``chunking="span"`` (of the level's largest field): a
full scan pays zarr's and dask's per-chunk cost once per this many bytes: zarr's own scan
stops gaining past ~1 MiB a chunk, xarray's pays ~0.4 ms per dask task and gains up to a
few MiB (``benchmarks/chunk_curve.py`` measures the curve)."""
SPHERE_MAX_CHUNKS = 2**24
"""Chunks along ``cells`` an array of a ``geometry="sphere"`` level may have, at most."""
_BYTES_LE_JSON = {"name": "bytes", "configuration": {"endian": "little"}}
_BYTES_LE = codec_chain([_BYTES_LE_JSON])[0]
_VLEN_UTF8 = {"name": "vlen-utf8", "configuration": {}}
_DEFAULT_KEYS = {"name": "default", "configuration": {"separator": "/"}}


class LeafChunk(NamedTuple):
    """Where a virtual chunk lives: a key below the data prefix of one node's leaf (a
    tuple: made for every chunk read, at a third of a frozen dataclass's cost)."""

    node: int | None  # None: a sphere node no object covers (geometry="sphere")
    window: str | None
    key: str
    path: str | None = None  # a fixed leaf (arrays with no cells axis: the template)
    inner: int | None = None  # the inner chunk of the shard object (chunking="inner")


def _fill_json(value: object, source: np.dtype, target: np.dtype) -> object:
    """A zarr v3 fill value of ``source`` as the same value of ``target`` (safe casts only)."""
    cast = np.asarray(fill_number(value, source), dtype=source).astype(target, casting="safe")[()]
    if target.kind == "f":
        if np.isnan(cast):
            return "NaN"
        return ("Infinity" if cast > 0 else "-Infinity") if np.isinf(cast) else float(cast)
    return bool(cast) if target.kind == "b" else int(cast)


def declared_meta(name: str, template: ArrayMeta, runs: list[RunEncoding]) -> ArrayMeta:
    """The leaf metadata field ``name`` is declared with: the template's, with the numpy
    promotion of every learned writer run's data type (what moczarr's concatenation of
    the leaves reports) and the template's fill value in that type. Promotion is made
    among bool, integer and float types only; any other data type stays the template's
    (a leaf that differs is then refused when read)."""
    source = template.dtype
    if source is None:
        return template
    found = (run.arrays[name].dtype for run in runs if name in run.arrays)
    promoted = np.result_type(source, *(d for d in found if d is not None))
    if promoted == source:
        return template
    try:
        fill = _fill_json(template.fill_value, source, promoted)
    except (TypeError, ValueError, OverflowError):
        return template  # no fill value to carry over: the template's type stands
    return template.derive(data_type=promoted.name, fill_value=fill)


AUTO_MAX_LEAVES = 4096
"""Leaves one chunk of ``chunking="auto"`` joins at most: a chunk's plan and a read of one
of its cells stay bounded on hives of tiny leaves (one-cell leaves: 4,096 cells a chunk)."""
AUTO_LEAVES = 16
"""Leaves a chunk of ``chunking="auto"`` joins when that holds between ``AUTO_MIN_BYTES``
and ``AUTO_MAX_BYTES`` of the level's largest field. A read of one cell reads every leaf
of its chunk, each about 1 µs warm where inotify watches it (``io/watch.py``), 6–10 µs
where a ``stat`` checks it, against about 0.3 ms for a one-leaf chunk: 16 keep a lookup
within ~1.6x ``"leaf"``'s even with the ``stat`` (32: ~2.4x, 128: ~6x on 4,096-cell leaves;
``benchmarks/chunk_curve.py``)."""
AUTO_MIN_BYTES = 512 << 10
"""Bytes of the level's largest field a chunk of ``chunking="auto"`` holds at least (more
than ``AUTO_LEAVES`` leaves, up to ``AUTO_MAX_LEAVES``): below it xarray's scans pay dask's
per-task cost on too few bytes (``benchmarks/chunk_curve.py``, 4,096-cell leaves: 8 leaves
a chunk, 256 KiB, scan at ~4.9x the raw reads of their objects through xarray; 16, 512 KiB,
at ~2.7x)."""
AUTO_MAX_BYTES = 8 << 20
"""Bytes of the level's largest field a chunk of ``chunking="auto"`` holds at most (fewer
than ``AUTO_LEAVES`` leaves, at least one): 65,536-cell leaves (512 KB of ``count``), 16 a
chunk, scan through xarray at ~3.4x the raw reads, 8 a chunk at ~5.9x, as a plain zarr
copy with those chunks does (``benchmarks/chunk_curve.py``)."""


def spans(chunking: str | int) -> bool:
    """Whether ``chunking`` joins consecutive leaves in one chunk (``"auto"``, ``"span"``,
    a count)."""
    return isinstance(chunking, int) or chunking in ("auto", "span")


def leaves_per_chunk(level: Level, chunking: str | int) -> int:
    """Leaves joined in one chunk along ``cells``: ``chunking`` when it is a count; for
    ``"span"`` as many of the level's largest leaf array as fit ``SPAN_BYTES`` (at least
    one); for ``"auto"`` :func:`auto_leaves` of that leaf array's bytes; 1 for every other
    chunking. Fields whose leaves cannot be joined byte for byte (compressed,
    variable-length) stay one leaf per chunk whatever this says. No I/O."""
    if isinstance(chunking, int):
        return chunking
    if not spans(chunking):
        return 1
    largest = max((meta.nbytes for meta in level.arrays.values()), default=0)
    if chunking == "auto":
        return auto_leaves(largest)
    return max(1, SPAN_BYTES // largest) if largest else 1


def auto_leaves(largest: int) -> int:
    """``chunking="auto"``'s leaves per chunk for leaves whose largest array holds
    ``largest`` bytes (0: none numeric, one leaf): ``AUTO_LEAVES``, more while a chunk would
    hold under ``AUTO_MIN_BYTES`` (at most ``AUTO_MAX_LEAVES``), fewer while it would hold
    over ``AUTO_MAX_BYTES`` (at least one). 4,096-cell leaves of 32 KB and 65,536-cell
    leaves of 512 KB: 16; one-cell leaves: 4,096."""
    if largest <= 0:
        return 1
    k = max(AUTO_LEAVES, -(-AUTO_MIN_BYTES // largest))
    k = min(k, AUTO_MAX_BYTES // largest)
    return min(max(k, 1), AUTO_MAX_LEAVES)


class FieldArray:
    """A leaf array of every node, concatenated along its ``cells`` axis.

    On an unscoped windowed product a leading ``window`` axis selects the leaf's window.
    An array with no ``cells`` axis (a raster's ``time``) is served from the template.
    """

    def __init__(
        self, level: Level, name: str, leaf_meta: ArrayMeta, cell_attrs: dict[str, Any],
        chunking: str | int = "shard", sphere: bool = False, span: int = 1,
    ) -> None:
        """``leaf_meta``: the template's leaf array; ``cell_attrs``: attributes an array
        with a ``cells`` axis carries (its ``coordinates``, its ``grid_mapping``);
        ``span``: leaves joined per chunk when ``chunking`` spans (``"span"`` or an int);
        an array whose leaf chunks cannot be joined by bytes is presented ``"leaf"``."""
        self.level, self.name, self.sphere = level, name, sphere
        self.path = f"{level.path}/{name}"
        self.group = f"{level.cell_order}/{name}"
        where = f"{level.template_data or level.template}/{self.group}"
        source = self.source_meta = declared_meta(name, leaf_meta, level.encodings)
        if not source.shape:
            raise LeafSchemaError(f"{where}: needs a regular chunk grid and a shape")
        names = source.dimension_names
        self.axis = names.index("cells") if "cells" in names else None
        self.check = chunk_check(source)
        self.mode, self.chunks_per_leaf, self.windowed = "shard", 1, False
        self.span, self.part_fill = 1, b""  # a span's leaf count; a leaf chunk of fill
        shape, chunks, dims = list(source.shape), list(source.chunk_shape), list(names)
        codecs, attrs = source.codecs, dict(source.attributes)
        if self.axis is not None:
            codecs, chunks = self._along_cells(where, chunking, span)
            shape[self.axis] = domain_nodes(level, sphere) * level.cells_per_node
            attrs.update(cell_attrs)
            self.windowed = bool(level.windows)
        if self.windowed:
            shape, chunks, dims = [len(level.windows), *shape], [1, *chunks], ["window", *dims]
            codecs = leading_axis(codecs)
        self.part_chunks = tuple(chunks)  # one leaf's chunk (the whole chunk unless spanning)
        if self.span > 1:
            chunks[self.windowed] *= self.span
        self.leaf_encoding = source.key_encoding
        self.leaf_encoding.key((0,) * len(names))  # refuse unknown encodings now
        self._keys: dict[tuple[int, ...], str] = {}  # leaf chunk keys by inner coordinates
        self.meta = source.derive(codecs=codecs, shape=shape, chunk_shape=chunks,
                                  chunk_key_encoding=_DEFAULT_KEYS, attributes=attrs,
                                  dimension_names=dims)
        self.grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunks, strict=True))

    def _along_cells(self, where: str, chunking: str | int,
                     span: int) -> tuple[tuple[Codec, ...], list[int]]:
        """The codecs and chunk shape of a leaf chunk as presented (``chunking``, its
        leaves joined by ``span``); sets the mode, the chunks per leaf and the span."""
        source, cells, axis = self.source_meta, self.level.cells_per_node, self.axis
        assert axis is not None
        chunks, codecs, shard = list(source.chunk_shape), source.codecs, source.sharding
        if source.shape[axis] != cells or cells % chunks[axis]:
            raise LeafSchemaError(
                f"{where}: shape {list(source.shape)} / chunks {chunks} do not tile {cells} "
                "cells per leaf"
            )
        joins = spans(chunking)
        per_leaf = "leaf" if joins else str(chunking)  # a span's parts are leaf chunks
        if shard is not None and self._reframes(per_leaf, shard, chunks):
            self.mode = per_leaf
            codecs = shard.codecs or (_BYTES_LE,)
            if per_leaf == "inner":
                chunks = list(shard.chunk_shape)
        elif shard is not None and per_leaf == "leaf" and self._recodes(shard, chunks):
            self.mode = "recode"  # one chunk per leaf, like the fixed-size fields
            codecs = shard.codecs[:1]
        self.chunks_per_leaf = cells // chunks[axis]
        nodes = domain_nodes(self.level, self.sphere)
        plain = plain_bytes(codecs, source.data_type)
        if joins and min(span, nodes) > 1 and axis == 0 and self.chunks_per_leaf == 1 \
                and plain is not None:
            # chunk bytes are C-ordered with cells first: k leaves' chunks are their join
            self.span = min(span, nodes)
            self.part_fill = np.full(
                math.prod(chunks), fill_number(source.fill_value, plain), plain).tobytes()
        return codecs, chunks

    def _reframes(self, chunking: str, shard: Sharding, chunks: list[int]) -> bool:
        """Whether this array can be presented leaf- or inner-chunked, as asked.

        That needs one sharding_indexed object per leaf whose inner chunks split only
        the cells axis; ``leaf`` also needs fixed-size (uncompressed) inner chunks.
        """
        axis = self.axis
        if chunking == "shard" or not self.check.shard_chunks \
                or chunks[axis] != self.level.cells_per_node:  # type: ignore[index]
            return False
        if any(i != o for d, (i, o) in enumerate(zip(shard.chunk_shape, chunks, strict=True))
               if d != axis):
            return False
        return chunking == "inner" or self.check.inner_nbytes is not None

    def _recodes(self, shard: Sharding, chunks: list[int]) -> bool:
        """Whether a sharded leaf array of a variable-length type (ragged cells) is
        presented one chunk per leaf in ``leaf`` mode: its values decoded and encoded
        again with the inner chain's array-to-bytes codec alone (no compressor), so that
        it is chunked on the same boundaries as the fixed-size fields."""
        if self.source_meta.dtype is not None:
            return False  # compressed numbers stay sharded: re-encoding costs more than it buys
        return bool(shard.codecs) and self._reframes("inner", shard, chunks)

    def _leaf_coords(self, coords: tuple[int, ...]) -> tuple[str | None, int, list[int]]:
        """``(window, node index, chunk coordinates inside that node's leaf)``."""
        window = None
        if self.windowed:
            window, coords = self.level.windows[coords[0]], coords[1:]
        inner = list(coords)
        if self.axis is None:
            return window, -1, inner
        node, inner[self.axis] = divmod(coords[self.axis], self.chunks_per_leaf)
        return window, node, inner

    def span_parts(self, coords: tuple[int, ...]) -> list[tuple[int, ...] | None]:
        """The leaf chunks virtual chunk ``coords`` joins, in order, as coordinates of the
        array one leaf per chunk (``None`` past the domain's end). No I/O."""
        at, nodes = self.windowed, domain_nodes(self.level, self.sphere)
        first = coords[at] * self.span
        return [(*coords[:at], node, *coords[at + 1 :]) if node < nodes else None
                for node in range(first, first + self.span)]

    def span_objects(
        self, coords: tuple[int, ...]
    ) -> list[tuple[tuple[int, ...], LeafChunk, str | None] | None]:
        """Each part of virtual chunk ``coords`` as ``(coordinates, locate(them),
        object_path(them))``, the coordinates as :meth:`span_parts` gives them; ``None``
        past the domain's end. No I/O; one ``locate`` per span and its nodes' paths in one
        pass (on a sphere, a binary search per part)."""
        parts = self.span_parts(coords)
        if self.sphere:
            return [None if p is None else (p, *self.located_object(p)) for p in parts]
        present = [p for p in parts if p is not None]
        if not present:
            return [None] * len(parts)
        at = self.windowed  # a span's parts differ only in their node (chunks_per_leaf 1)
        first = self.locate(present[0])
        paths = self.level.object_paths(present[0][at], present[-1][at] + 1, first.window)
        found: list[tuple[tuple[int, ...], LeafChunk, str | None] | None] = [
            (p, LeafChunk(p[at], first.window, first.key), path)
            for p, path in zip(present, paths, strict=True)]
        return found + [None] * (len(parts) - len(present))

    def leaf_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The region of the leaf array that leaf chunk ``coords`` covers (coordinates of
        the array one leaf chunk per chunk: the virtual ones unless spanning)."""
        chunks = self.part_chunks[self.windowed:]
        _window, _node, inner = self._leaf_coords(coords)
        return tuple(slice(i * n, (i + 1) * n) for i, n in zip(inner, chunks, strict=True))

    @property
    def gaps_by_design(self) -> bool:
        """Whether a node may lack a leaf by design (a window it was not observed in)."""
        return self.windowed or self.level.window is not None

    @property
    def chunk_rows(self) -> int | None:
        """Rows along ``cells`` of a chunk as zarr reads it (of an inner chunk when a
        shard passes through); ``None``: no cells axis."""
        if self.axis is None:
            return None
        shard = self.meta.sharding
        if shard is not None:
            return shard.chunk_shape[self.windowed + self.axis]
        return self.level.cells_per_node // self.chunks_per_leaf * self.span

    @property
    def shard_rows(self) -> int | None:
        """Rows along ``cells`` of a shard passed through (``None``: the array is not
        presented sharded, or has no cells axis)."""
        if self.axis is None or self.meta.sharding is None:
            return None
        return self.meta.chunk_shape[self.windowed + self.axis]

    def object_path(self, coords: tuple[int, ...]) -> str | None:
        """The hive-relative path of the leaf (or overview object) chunk ``coords`` is in;
        ``None`` for a sphere node no object covers (read as the fill value, no request)."""
        return self.located_object(coords)[1]

    def located_object(self, coords: tuple[int, ...]) -> tuple[LeafChunk, str | None]:
        """``locate(coords)`` and ``object_path(coords)``, locating once."""
        located = self.locate(coords)
        if located.path or located.node is None:
            return located, located.path
        return located, self.level.object_path(located.node, located.window)

    def locate(self, coords: tuple[int, ...]) -> LeafChunk:
        window, node, inner = self._leaf_coords(coords)
        if self.sphere and node >= 0:
            node = covered_index(self.level, node)  # type: ignore[assignment]
        part = None
        if self.mode == "inner" and self.axis is not None:  # inner mode has a cells axis;
            # the shard object is the leaf's only chunk along it
            part, inner[self.axis] = inner[self.axis], 0
        at = tuple(inner)  # at most the chunks of one leaf: the keys are kept
        key = self._keys.get(at)
        if key is None:
            key = self._keys[at] = f"{self.group}/{self.leaf_encoding.key(at)}"
        if node is not None and node < 0:
            return LeafChunk(-1, None, key, self.level.template)
        return LeafChunk(node, window, key, inner=part)


class FabricatedArray:
    """A coordinate array computed from the domain; its chunks never touch storage.

    ``produce(start, stop, length)`` gives the values of rows ``[start, stop)`` padded to
    ``length`` rows (``into``: it takes a fourth argument, writable bytes to compute them
    in); ``tail`` (a shard index, when the array is presented sharded) follows the values
    of every chunk."""

    def __init__(self, meta: ArrayMeta, rows: int, produce: Callable[..., bytes | memoryview],
                 tail: bytes = b"", into: bool = False) -> None:
        self.meta, self.rows, self._produce, self._tail = meta, rows, produce, tail
        self._into = into
        self.path = ""  # set when the view places it
        shape = meta.shape
        # a scalar's grid is empty: it has no chunk (its value is the fill value)
        self.grid = () if not shape else (math.ceil(shape[0] / rows),) if shape[0] else (0,)
        self._last: tuple[int, bytes] | None = None  # a shard is read in parts: keep one

    def fabricate(self, coords: tuple[int, ...],
                  take: Callable[[int], memoryview] | None = None) -> bytes | memoryview:
        """The bytes of chunk ``coords``; a chunk of fixed-size values without a shard index
        is computed into ``take(nbytes)`` when given (a pool's buffer, whose pages are
        already mapped: new memory costs a page fault per 4 KiB)."""
        last = self._last
        if last is not None and last[0] == coords[0]:
            return last[1]
        start = coords[0] * self.rows
        stop = min(start + self.rows, self.meta.shape[0])
        if not self._tail:
            if take is not None and self._into:
                nbytes = self.rows * np.dtype(self.meta.data_type).itemsize
                return self._produce(start, stop, self.rows, take(nbytes))
            return self._produce(start, stop, self.rows)
        values = self._produce(start, stop, self.rows)
        chunk = bytes(values) + self._tail
        self._last = (coords[0], chunk)
        return chunk

    def values(self, chunk: BytesLike) -> memoryview:
        """The values of a chunk as :meth:`fabricate` gives it (without its shard index)."""
        view = memoryview(chunk).cast("B")
        return view[: len(view) - len(self._tail)]

    def fabricate_run(self, first: int, stop: int) -> list[BytesLike]:
        """Chunks ``first`` to ``stop - 1`` as :meth:`fabricate` gives them; values of a
        fixed size are computed in one pass over the run (not one per chunk), each
        chunk a view of that pass when the array has no shard index to append."""
        if self.meta.data_type == "string":  # variable-length: one payload per chunk
            return [bytes(self.fabricate((i,))) for i in range(first, stop)]
        start, count = first * self.rows, stop - first
        end = min(stop * self.rows, self.meta.shape[0])
        block = memoryview(self._produce(start, end, count * self.rows)).cast("B")
        step = len(block) // count
        chunks: list[BytesLike] = [block[i * step : (i + 1) * step] for i in range(count)]
        if not self._tail:
            return chunks
        return [bytes(chunk) + self._tail for chunk in chunks]


def _coordinate_meta(n: int, rows: int, data_type: str, fill: object,
                     codec: dict[str, Any], dim: str, attrs: dict[str, Any]) -> ArrayMeta:
    return declare({
        "shape": [n],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [rows]}},
        "chunk_key_encoding": _DEFAULT_KEYS,
        "fill_value": fill,
        "codecs": [codec],
        "attributes": attrs,
        "dimension_names": [dim],
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    })


def domain_nodes(level: Level, sphere: bool) -> int:
    """Nodes along ``cells``: the covered ones, or every node of the sphere."""
    return 12 * 4**level.node_order if sphere else level.n_nodes


def domain_position(level: Level, index: int, sphere: bool) -> int:
    """Where the level's ``index``-th object lies along ``cells`` (in nodes)."""
    return int(level.node_ranks[index]) - 4**level.node_order if sphere else index


def covered_index(level: Level, node: int) -> int | None:
    """The index among the level's objects of sphere node ``node`` (NESTED order), or
    ``None`` when no object covers it. Cost: one binary search."""
    rank = 4**level.node_order + node
    index = int(np.searchsorted(level.node_ranks, rank))
    covered = index < level.n_nodes and int(level.node_ranks[index]) == rank
    return index if covered else None


def check_sphere(level: Level, rows: int) -> None:
    """Refuse a sphere whose arrays would have more than ``SPHERE_MAX_CHUNKS`` chunks."""
    nodes = domain_nodes(level, True)
    chunks = -(-nodes * level.cells_per_node // rows)
    if chunks > SPHERE_MAX_CHUNKS:
        raise SphereTooLarge(
            f"{level.path}: geometry='sphere' would span {nodes:,} nodes of order "
            f"{level.node_order} in {chunks:,} chunks of {rows:,} cells "
            f"(12*4**{level.cell_order} cells), more than the {SPHERE_MAX_CHUNKS:,} chunks "
            "allowed; open it with the default geometry='covered'"
        )


COORDINATE_TYPES = {"morton": "uint64", "cell_ids": "uint64", "lon": "float64",
                    "lat": "float64"}
"""The per-cell coordinates :func:`cell_coordinate` fabricates, and their data types."""


def rows_into(level: Level, sphere: bool, out: np.ndarray, start: int, stop: int,
              nested: bool) -> int:
    """Rows ``[start, stop)`` of the level as packed words (``nested``: NESTED ids) into
    ``out`` (``ids.child_values_into``); returns how many rows there are (fewer past the
    domain's end). Cost: one pass over the rows."""
    cells = level.cells_per_node
    first, last = start // cells, -(-stop // cells)  # the nodes the rows fall in
    if sphere:
        nodes = np.arange(first, last, dtype=np.uint64) + np.uint64(4**level.node_order)
    else:
        nodes = level.node_ranks[first:last]
    skip = first * cells
    return child_values_into(out, nodes, level.depth, start - skip, stop - skip,
                             level.cell_order, nested).size


def cell_centres(order: int, nested: np.ndarray, latitude: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lon, lat)`` in degrees (longitudes in [-180, 180)) of the NESTED cells ``nested``
    at ``order``, under mortie's ``latitude`` convention: ``"authalic"`` (cells on WGS84's
    authalic sphere, latitudes made geodetic) or ``"geodetic-spherical"``.
    Cost: mortie's HEALPix kernel, ~0.3 µs a cell (0.1 µs more for geodetic latitudes)."""
    # mortie's HEALPix kernel, the one its public uniq2geo runs per order: called
    # directly, one order skips uniq2geo's grouping (4x its cost)
    from mortie import authalic_to_geodetic
    from mortie._healpix import pix2ang

    lon, lat = pix2ang(order, np.ascontiguousarray(nested, dtype="<u8").view(np.int64))
    lon = (lon + 180.0) % 360.0 - 180.0
    if latitude == "authalic":
        lat = authalic_to_geodetic(lat)
    return lon, lat


class Centres:
    """The cells' centres of a level's rows (:func:`cell_centres`, under mortie's
    ``latitude`` convention). ``lon`` and ``lat`` of a chunk are computed together; the
    pairs computed last are kept, up to ``kept`` bytes (``config["cache.centre_bytes"]``,
    read when the session is created), so the other half and a read again cost nothing.
    Cost: :func:`cell_centres` per row not kept."""

    def __init__(self, level: Level, sphere: bool, latitude: str, kept: int) -> None:
        self.level, self.sphere, self.latitude, self.kept = level, sphere, latitude, kept
        self._pairs: OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = (
            OrderedDict())
        self._bytes = 0

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """``(lon, lat)`` of rows ``[start, stop)`` (fewer past the domain's end)."""
        key = (start, stop)
        pair = self._pairs.get(key)
        if pair is not None:
            self._pairs.move_to_end(key)
            return pair
        nested = np.empty(stop - start, "<u8")
        done = rows_into(self.level, self.sphere, nested, start, stop, True)
        pair = cell_centres(self.level.cell_order, nested[:done], self.latitude)
        size = 16 * done
        if size <= self.kept:
            self._pairs[key], self._bytes = pair, self._bytes + size
            while self._bytes > self.kept:
                _, (old, _) = self._pairs.popitem(last=False)
                self._bytes -= 16 * old.size
        return pair


def cell_coordinate(level: Level, kind: str, attrs: dict[str, Any], rows: int,
                    sphere: bool = False, shard_rows: int | None = None,
                    centres: Centres | None = None) -> FabricatedArray:
    """A per-cell coordinate of every row (:data:`COORDINATE_TYPES`): ``morton`` (packed
    words), ``cell_ids`` (NESTED ids), or ``lon`` / ``lat`` (from ``centres``), chunked
    by ``rows`` (a divisor or a multiple of the cells per node, as the fields are
    chunked): each node's cells as words or NESTED ids (``ids.child_values_into``). With
    ``shard_rows`` (the fields pass their leaves' shards through) the array is sharded as
    they are: shards of ``shard_rows``, inner chunks of ``rows``, every inner chunk
    present (the index is the same for every shard). Cost: the rows of a chunk in numpy
    (the centres: :class:`Centres`), no I/O; nothing per node is kept on the sphere.
    """
    data_type = COORDINATE_TYPES[kind]

    def produce(start: int, stop: int, length: int,
                into: memoryview | None = None) -> memoryview:
        """Rows ``[start, stop)`` padded to ``length`` (zeros; NaN for the centres), into
        ``into`` (bytes of ``length`` rows) or new memory."""
        out = np.empty(length, data_type) if into is None else np.frombuffer(
            into, data_type, length)
        if centres is None:
            done = rows_into(level, sphere, out, start, stop, kind != "morton")
            out[done:] = 0  # past the domain's end (the last chunk): zero
        else:
            values = centres.rows(start, stop)[kind == "lat"]
            done = values.size
            out[:done] = values
            out[done:] = np.nan
        return out.data.cast("B")

    n = domain_nodes(level, sphere) * level.cells_per_node
    fill = 0 if centres is None else "NaN"
    if shard_rows is None:
        return FabricatedArray(_coordinate_meta(n, rows, data_type, fill, _BYTES_LE_JSON,
                                                "cells", attrs), rows, produce, into=True)
    codec = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [rows], "codecs": [_BYTES_LE_JSON],
        "index_codecs": [_BYTES_LE_JSON, {"name": "crc32c"}], "index_location": "end"}}
    meta = _coordinate_meta(n, shard_rows, data_type, fill, codec, "cells", attrs)
    tail = full_shard_index(rows * 8, shard_rows // rows)
    return FabricatedArray(meta, shard_rows, produce, tail)


def grid_mapping(attrs: dict[str, Any]) -> FabricatedArray:
    """A scalar variable that only carries ``attrs`` (a CF grid mapping): no chunk is
    stored, so its one value is its fill value, 0."""
    meta = _coordinate_meta(0, 1, "int32", 0, _BYTES_LE_JSON, "", attrs).derive(
        shape=[], dimension_names=[], chunk_shape=[])
    return FabricatedArray(meta, 1, lambda *_: b"")  # no chunk: never produced


def cell_ranges(level: Level, sphere: bool = False) -> np.ndarray:
    """The level's rows as contiguous ``[start, stop)`` ranges of NESTED ids at order 29
    (what ``healpix_geo``'s ``RangeMOCIndex.from_ranges`` and xdggs's ``"ranges"``
    compression take), one per run of consecutive nodes. Cost: O(nodes), 16 bytes per run."""
    if sphere:
        return np.array([[0, 12 * 4**29]], dtype="<u8")
    nested = level.node_ranks.astype("<u8") - np.uint64(4**level.node_order)
    if not nested.size:
        return np.zeros((0, 2), dtype="<u8")
    breaks = np.flatnonzero(np.diff(nested) != 1) + 1
    starts = nested[np.r_[0, breaks]]
    stops = nested[np.r_[breaks - 1, nested.size - 1]] + np.uint64(1)
    unit = np.uint64(2 * (29 - level.node_order))
    return np.stack([starts << unit, stops << unit], axis=1)


def window_strings(labels: tuple[str, ...]) -> FabricatedArray:
    """The window axis: labels in chronological order (vlen-utf8 strings)."""
    payloads = [
        (1).to_bytes(4, "little") + len(b).to_bytes(4, "little") + b
        for b in (label.encode() for label in labels)
    ]
    meta = _coordinate_meta(len(labels), 1, "string", "", _VLEN_UTF8, "window", {})
    return FabricatedArray(meta, 1, lambda start, *_: payloads[start])


def window_positions(labels: tuple[str, ...]) -> FabricatedArray:
    """The window axis as numbers (0, 1, ...), the labels in its ``labels`` attribute:
    for clients that decode no Zarr string type."""
    values = np.arange(len(labels), dtype="<i4")
    attrs = {"labels": list(labels)}
    meta = _coordinate_meta(len(labels), 1, "int32", 0, _BYTES_LE_JSON, "window", attrs)
    return FabricatedArray(meta, 1, lambda start, stop, _: values[start:stop].tobytes())


def window_names(window: Any) -> list[str]:
    """The labels of a level's ``window`` array (a zarr array of either form: the strings,
    or the positions with the labels in its ``labels`` attribute). Reads it whole."""
    labels = window.attrs.get("labels")
    return [str(x) for x in (window[:] if labels is None else labels)]


def window_instants(instants: list[datetime]) -> FabricatedArray:
    """Window start or end instants, CF-encoded as int64 seconds since the epoch."""
    values = np.array([int(i.timestamp()) for i in instants], dtype="<i8")
    attrs = {"units": "seconds since 1970-01-01T00:00:00+00:00", "calendar": "proleptic_gregorian"}
    meta = _coordinate_meta(len(instants), 1, "int64", 0, _BYTES_LE_JSON, "window", attrs)
    return FabricatedArray(meta, 1, lambda start, stop, _: values[start:stop].tobytes())
