"""Virtual arrays: their ``zarr.json`` and how a chunk coordinate resolves to a source."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from zarr.codecs import ShardingCodec
from zarr.core.codec_pipeline import codecs_from_list
from zarr.core.metadata.v3 import ArrayV3Metadata

from ..errors import LeafSchemaError, MalformedMetadataError
from ..hive.jsonio import is_int
from ..hive.level import Level
from ..hive.paths import short
from ..hive.runs import RunEncoding

FABRICATED_ROWS = 65_536
_BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
_VLEN_UTF8 = {"name": "vlen-utf8", "configuration": {}}
_DEFAULT_KEYS = {"name": "default", "configuration": {"separator": "/"}}


def check_leaf_meta(meta: object, where: str) -> dict:
    """A leaf array's ``zarr.json``, checked before this module reads it: the fields read
    here have the JSON types they are read as, then zarr parses the whole document.
    A defect is a :class:`MalformedMetadataError` naming ``where`` and the field.
    Cost: ~0.5 ms (zarr's parse)."""
    if not isinstance(meta, dict):
        raise MalformedMetadataError(f"{where}: not a JSON object")
    shape: Any = meta.get("shape")
    _expect(where, "shape", shape, "a list of ints >= 0",
            isinstance(shape, list) and all(is_int(n) and n >= 0 for n in shape))
    rank = len(shape)
    grid: Any = meta.get("chunk_grid")
    _expect(where, "chunk_grid", grid, "an object", isinstance(grid, dict))
    _expect(where, "chunk_grid.name", grid.get("name"), "a string",
            isinstance(grid.get("name"), str))
    _check_conf(where, "chunk_grid", grid)
    _check_chunk_shape(where, "chunk_grid.configuration.chunk_shape",
                       (grid.get("configuration") or {}).get("chunk_shape"), rank)
    _check_codecs(where, "codecs", meta.get("codecs"), rank)
    keys: Any = meta.get("chunk_key_encoding", {"name": "default"})
    _expect(where, "chunk_key_encoding", keys, "an object with a string name",
            isinstance(keys, dict) and isinstance(keys.get("name"), str))
    _check_conf(where, "chunk_key_encoding", keys)
    separator = (keys.get("configuration") or {}).get("separator", "/")
    _expect(where, "chunk_key_encoding.configuration.separator", separator, "a string",
            isinstance(separator, str))
    names: Any = meta.get("dimension_names")
    _expect(where, "dimension_names", names, f"a list of {rank} strings (every axis named, "
            "as xarray and the reference reader need)",
            isinstance(names, list) and len(names) == rank
            and all(isinstance(n, str) for n in names))
    attrs = meta.get("attributes", {})
    _expect(where, "attributes", attrs, "an object", isinstance(attrs, dict))
    try:
        _check_pipelines(ArrayV3Metadata.from_dict(dict(meta)).codecs)
    except Exception as err:  # zarr's own checks: data_type, fill_value, codec configuration
        raise MalformedMetadataError(
            f"{where}: not valid zarr v3 array metadata ({type(err).__name__}: {err})"
        ) from None
    return meta


def _check_pipelines(codecs) -> None:
    """zarr checks a sharding codec's inner and index chains only when it decodes: check
    them now (each needs exactly one array-to-bytes codec)."""
    for codec in codecs:
        if isinstance(codec, ShardingCodec):
            for chain in (codec.codecs, codec.index_codecs):
                codecs_from_list(chain)
                _check_pipelines(chain)


def _expect(where: str, field: str, value: object, want: str, ok: bool) -> None:
    if not ok:
        raise MalformedMetadataError(f"{where}: field {field!r} {short(value)} is not {want}")


def _check_conf(where: str, field: str, named: dict) -> None:
    conf = named.get("configuration")
    _expect(where, f"{field}.configuration", conf, "an object",
            conf is None or isinstance(conf, dict))


def _check_chunk_shape(where: str, field: str, chunks: object, rank: int) -> None:
    _expect(where, field, chunks, f"a list of {rank} ints >= 1",
            isinstance(chunks, list) and len(chunks) == rank
            and all(is_int(n) and n >= 1 for n in chunks))


def _check_codecs(where: str, field: str, codecs: Any, rank: int) -> None:
    """A codec chain: objects with a string name; a sharding codec's configuration too."""
    _expect(where, field, codecs, "a list", isinstance(codecs, list))
    for i, codec in enumerate(codecs):
        here = f"{field}[{i}]"
        _expect(where, here, codec, "an object with a string name",
                isinstance(codec, dict) and isinstance(codec.get("name"), str))
        _check_conf(where, here, codec)
        if codec["name"] != "sharding_indexed":
            continue
        conf = codec.get("configuration") or {}
        _check_chunk_shape(where, f"{here}.configuration.chunk_shape", conf.get("chunk_shape"),
                           rank)
        _check_codecs(where, f"{here}.configuration.codecs", conf.get("codecs", []), rank)
        _check_codecs(where, f"{here}.configuration.index_codecs", conf.get("index_codecs", []),
                      1)
        location = conf.get("index_location", "end")
        _expect(where, f"{here}.configuration.index_location", location, "'start' or 'end'",
                location in ("start", "end"))


@dataclass(frozen=True)
class LeafChunk:
    """Where a virtual chunk lives: a key below the data prefix of one shard's leaf."""

    shard: int
    window: str | None
    key: str
    path: str | None = None  # a fixed leaf (arrays with no cells axis: the template)
    inner: int | None = None  # the inner chunk of the shard object (chunking="inner")


@dataclass(frozen=True)
class ChunkCheck:
    """What the store knows about a leaf chunk object's bytes, to verify or re-frame them."""

    nbytes: int | None = None  # exact size of an uncompressed plain chunk
    shard_chunks: int | None = None  # inner chunks of a sharding_indexed object
    index_at_end: bool = True
    index_crc: bool = False
    inner_nbytes: int | None = None  # size of an uncompressed inner chunk
    inner_fill: bytes = b""  # the bytes of an inner chunk of fill values

    @property
    def index_nbytes(self) -> int:
        return 16 * (self.shard_chunks or 0) + (4 if self.index_crc else 0)


def _itemsize(data_type: object) -> int | None:
    try:
        return np.dtype(data_type).itemsize if isinstance(data_type, str) else None
    except TypeError:
        return None


def chunk_check(meta: dict) -> ChunkCheck:
    codecs = meta.get("codecs") or []
    chunk_shape = meta["chunk_grid"]["configuration"]["chunk_shape"]
    if len(codecs) == 1 and codecs[0].get("name") == "bytes":
        size = _itemsize(meta.get("data_type"))
        return ChunkCheck(nbytes=None if size is None else size * math.prod(chunk_shape))
    if len(codecs) == 1 and codecs[0].get("name") == "sharding_indexed":
        conf = codecs[0].get("configuration", {})
        inner = conf.get("chunk_shape") or chunk_shape
        index_codecs = [c.get("name") for c in conf.get("index_codecs", [])]
        if index_codecs not in (["bytes"], ["bytes", "crc32c"]):
            return ChunkCheck()
        plain = _plain_bytes(conf.get("codecs") or [], meta)
        return ChunkCheck(
            shard_chunks=math.prod(o // i for o, i in zip(chunk_shape, inner, strict=True)),
            index_at_end=conf.get("index_location", "end") == "end",
            index_crc=index_codecs[-1] == "crc32c",
            inner_nbytes=None if plain is None else plain.itemsize * math.prod(inner),
            inner_fill=b"" if plain is None else np.full(
                math.prod(inner), _fill(meta.get("fill_value"), plain), dtype=plain).tobytes(),
        )
    return ChunkCheck()


def _plain_bytes(codecs: list[dict], meta: dict) -> np.dtype | None:
    """The on-disk dtype when ``codecs`` is a lone fixed-size ``bytes`` codec."""
    if len(codecs) != 1 or codecs[0].get("name") != "bytes":
        return None
    try:
        dtype = np.dtype(meta.get("data_type"))
    except TypeError:
        return None
    if dtype.kind not in "biuf" or dtype.itemsize == 0:
        return None
    endian = (codecs[0].get("configuration") or {}).get("endian", "little")
    return dtype.newbyteorder("<" if endian == "little" else ">")


def _fill(value: object, dtype: np.dtype) -> object:
    """A zarr v3 fill value as a number ("NaN", "Infinity" and hex bit patterns too)."""
    if isinstance(value, str) and value.startswith("0x"):
        bits = np.array(int(value, 16), dtype=f"u{dtype.itemsize}")
        return bits.view(dtype.newbyteorder("="))[()]
    if isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    return value


def _numeric(data_type: object) -> np.dtype | None:
    """A bool, integer or float data type; ``None`` for any other (or a malformed one)."""
    try:
        dtype = np.dtype(data_type) if isinstance(data_type, str) else None
    except TypeError:
        return None
    return dtype if dtype is not None and dtype.kind in "biuf" else None


def _fill_json(value: object, source: np.dtype, target: np.dtype) -> object:
    """A zarr v3 fill value of ``source`` as the same value of ``target`` (safe casts only)."""
    cast = np.asarray(_fill(value, source), dtype=source).astype(target, casting="safe")[()]
    if target.kind == "f":
        if np.isnan(cast):
            return "NaN"
        return ("Infinity" if cast > 0 else "-Infinity") if np.isinf(cast) else float(cast)
    return bool(cast) if target.kind == "b" else int(cast)


def declared_meta(name: str, template: dict, runs: list[RunEncoding]) -> dict:
    """The leaf metadata field ``name`` is declared with: the template's, with the numpy
    promotion of every learned writer run's data type (what moczarr's concatenation of
    the leaves reports) and the template's fill value in that type. Promotion is made
    among bool, integer and float types only; any other data type stays the template's
    (a leaf that differs is then refused when read)."""
    source = _numeric(template.get("data_type"))
    if source is None:
        return template
    found = (_numeric(run.arrays[name].get("data_type")) for run in runs if name in run.arrays)
    promoted = np.result_type(source, *(d for d in found if d is not None))
    if promoted == source:
        return template
    try:
        fill = _fill_json(template.get("fill_value"), source, promoted)
    except (TypeError, ValueError, OverflowError):
        return template  # no fill value to carry over: the template's type stands
    return {**template, "data_type": promoted.name, "fill_value": fill}


def _leaf_chunk_key(encoding: dict, coords: tuple[int, ...]) -> str:
    name = encoding.get("name", "default")
    sep = (encoding.get("configuration") or {}).get("separator")
    if name == "default":
        return "c" + (sep or "/") + (sep or "/").join(map(str, coords))
    if name == "v2":
        return (sep or ".").join(map(str, coords))
    raise LeafSchemaError(f"chunk_key_encoding {encoding!r} is not supported")


def _with_leading_axis(codecs: list[dict]) -> list[dict]:
    """A codec chain for the same bytes under one more leading axis of length 1.

    Only a sharding codec's inner chunk shape depends on the rank: the shard index and
    the inner chunks' bytes of a (n,) array equal those of the (1, n) array.
    """
    out = []
    for codec in codecs:
        if codec.get("name") == "sharding_indexed":
            conf = codec["configuration"]
            conf = {**conf, "chunk_shape": [1, *conf["chunk_shape"]],
                    "codecs": _with_leading_axis(conf.get("codecs", []))}
            codec = {**codec, "configuration": conf}
        out.append(codec)
    return out


class FieldArray:
    """A leaf array of every node, concatenated along its ``cells`` axis.

    On an unscoped windowed product a leading ``window`` axis selects the leaf's window.
    An array with no ``cells`` axis (a raster's ``time``) is served from the template.
    """

    def __init__(
        self, level: Level, name: str, leaf_meta: dict, coordinates: str, chunking: str = "shard"
    ) -> None:
        self.level, self.name = level, name
        self.path = f"{level.path}/{name}"
        where = f"{level.template_data or level.template}/{level.cell_order}/{name}"
        check_leaf_meta(leaf_meta, f"{where}/zarr.json")
        leaf_meta = self.source = declared_meta(name, leaf_meta, level.encodings)
        shape = list(leaf_meta.get("shape") or [])
        grid = leaf_meta.get("chunk_grid", {})
        if grid.get("name") != "regular" or not shape:
            raise LeafSchemaError(f"{where}: needs a regular chunk grid and a shape")
        chunks = list(grid["configuration"]["chunk_shape"])
        names = list(leaf_meta["dimension_names"])
        self.axis = names.index("cells") if "cells" in names else None
        dims = list(names)
        cells = level.cells_per_shard
        self.chunks_per_leaf = 1
        attrs = dict(leaf_meta.get("attributes") or {})
        codecs = leaf_meta.get("codecs")
        self.windowed = False
        self.check = chunk_check(leaf_meta)
        self.mode = "shard"
        if self.axis is not None:
            if shape[self.axis] != cells or cells % chunks[self.axis]:
                raise LeafSchemaError(
                    f"{where}: shape {shape} / chunks {chunks} do not tile {cells} cells per leaf"
                )
            if self._reframes(chunking, leaf_meta, chunks, cells):
                self.mode = chunking
                inner = codecs[0]["configuration"]
                codecs = inner.get("codecs") or [_BYTES_LE]
                if chunking == "inner":
                    chunks = list(inner["chunk_shape"])
            self.chunks_per_leaf = cells // chunks[self.axis]
            shape[self.axis] = level.n_shards * cells
            attrs["coordinates"] = coordinates
            self.windowed = bool(level.windows)
        if self.windowed:
            shape, chunks, dims = [len(level.windows), *shape], [1, *chunks], ["window", *dims]
            codecs = _with_leading_axis(codecs)
        self.leaf_encoding = leaf_meta.get("chunk_key_encoding", {"name": "default"})
        _leaf_chunk_key(self.leaf_encoding, (0,) * len(names))  # refuse unknown encodings now
        self.meta = {
            **leaf_meta,
            "codecs": codecs,
            "shape": shape,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": _DEFAULT_KEYS,
            "attributes": attrs,
            "dimension_names": dims,
        }
        self.grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunks, strict=True))
        self.group = f"{level.cell_order}/{name}"

    def _reframes(self, chunking: str, leaf_meta: dict, chunks: list[int], cells: int) -> bool:
        """Whether this array can be presented leaf- or inner-chunked, as asked.

        That needs one sharding_indexed object per leaf whose inner chunks split only
        the cells axis; ``leaf`` also needs fixed-size (uncompressed) inner chunks.
        """
        codecs = leaf_meta.get("codecs") or []
        if chunking == "shard" or not self.check.shard_chunks or chunks[self.axis] != cells:
            return False
        inner = codecs[0]["configuration"].get("chunk_shape") or chunks
        if any(i != o for d, (i, o) in enumerate(zip(inner, chunks, strict=True))
               if d != self.axis):
            return False
        return chunking == "inner" or self.check.inner_nbytes is not None

    def _leaf_coords(self, coords: tuple[int, ...]) -> tuple[str | None, int, list[int]]:
        """``(window, node index, chunk coordinates inside that node's leaf)``."""
        window = None
        if self.windowed:
            window, coords = self.level.windows[coords[0]], coords[1:]
        inner = list(coords)
        if self.axis is None:
            return window, -1, inner
        shard, inner[self.axis] = divmod(coords[self.axis], self.chunks_per_leaf)
        return window, shard, inner

    def leaf_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The region of the leaf array that virtual chunk ``coords`` covers."""
        chunks = self.meta["chunk_grid"]["configuration"]["chunk_shape"][self.windowed:]
        _window, _shard, inner = self._leaf_coords(coords)
        return tuple(slice(i * n, (i + 1) * n) for i, n in zip(inner, chunks, strict=True))

    @property
    def source_meta(self) -> dict:
        """The leaf array metadata the view is derived from (the template's, with the data
        type every learned writer run promotes to): a leaf encoded exactly so is passed
        through; any other is re-encoded."""
        return self.source

    @property
    def windowed_view(self) -> bool:
        """Whether a node may lack a leaf by design (a window it was not observed in)."""
        return self.windowed or self.level.window is not None

    def leaf_path(self, coords: tuple[int, ...]) -> str:
        """The hive-relative path of the leaf (or overview object) chunk ``coords`` is in."""
        located = self.locate(coords)
        return located.path or self.level.leaf_path(located.shard, located.window)

    def locate(self, coords: tuple[int, ...]) -> LeafChunk:
        window, shard, inner = self._leaf_coords(coords)
        part = None
        if self.mode == "inner":  # the shard object is the leaf's only chunk along cells
            part, inner[self.axis] = inner[self.axis], 0
        key = f"{self.group}/{_leaf_chunk_key(self.leaf_encoding, tuple(inner))}"
        if shard < 0:
            return LeafChunk(-1, None, key, self.level.template)
        return LeafChunk(shard, window, key, inner=part)


class FabricatedArray:
    """A coordinate array computed from the domain; its chunks never touch storage."""

    def __init__(self, meta: dict, rows: int, produce) -> None:
        self.meta, self.rows, self._produce = meta, rows, produce
        self.path = ""  # set when the view places it
        self.grid = (math.ceil(meta["shape"][0] / rows),) if meta["shape"][0] else (0,)

    def fabricate(self, coords: tuple[int, ...]) -> bytes | memoryview:
        start = coords[0] * self.rows
        return self._produce(start, min(start + self.rows, self.meta["shape"][0]), self.rows)


def _coordinate_meta(n: int, rows: int, data_type: str, fill, codec: dict, dim: str,
                     attrs: dict) -> dict:
    return {
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
    }


def cell_coordinate(level: Level, kind: str, attrs: dict) -> FabricatedArray:
    """``morton`` (packed words) or ``cell_ids`` (NESTED ids) of every row.

    A chunk holds whole shard subtrees: one broadcast add of each shard's first value
    and the per-child steps (child ``i`` adds ``i`` to the rank, so ``i << shift`` to
    the word: a child index never carries into the order bits).
    """
    cells = level.cells_per_shard
    rows = cells * max(1, min(FABRICATED_ROWS // cells, level.n_shards))
    first_rank = np.asarray(level.shard_ranks, dtype="<u8") << np.uint64(2 * level.depth)
    steps = np.arange(cells, dtype="<u8")
    if kind == "morton":
        shift = np.uint64(6 + 2 * (27 - level.cell_order))
        first = (first_rank << shift) | np.uint64(level.cell_order)
        steps <<= shift
    else:
        first = first_rank - np.uint64(4**level.cell_order)

    def produce(start: int, stop: int, length: int) -> memoryview:
        out = np.empty(length, dtype="<u8")
        out[stop - start :] = 0
        np.add(first[start // cells : stop // cells, None], steps,
               out=out[: stop - start].reshape(-1, cells))
        return memoryview(out).cast("B")

    meta = _coordinate_meta(level.n_shards * cells, rows, "uint64", 0, _BYTES_LE, "cells", attrs)
    return FabricatedArray(meta, rows, produce)


def window_labels(labels: tuple[str, ...]) -> FabricatedArray:
    """The window axis: labels in chronological order (vlen-utf8 strings)."""
    payload = len(labels).to_bytes(4, "little") + b"".join(
        len(b).to_bytes(4, "little") + b for b in (label.encode() for label in labels)
    )
    meta = _coordinate_meta(
        len(labels), max(1, len(labels)), "string", "", _VLEN_UTF8, "window", {}
    )
    return FabricatedArray(meta, max(1, len(labels)), lambda *_: payload)


def window_instants(instants: list[datetime]) -> FabricatedArray:
    """Window start or end instants, CF-encoded as int64 seconds since the epoch."""
    values = np.array([int(i.timestamp()) for i in instants], dtype="<i8").tobytes()
    attrs = {"units": "seconds since 1970-01-01T00:00:00+00:00", "calendar": "proleptic_gregorian"}
    n = max(1, len(instants))
    meta = _coordinate_meta(len(instants), n, "int64", 0, _BYTES_LE, "window", attrs)
    return FabricatedArray(meta, n, lambda *_: values)
