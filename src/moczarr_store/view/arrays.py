"""Virtual arrays: their ``zarr.json`` and how a chunk coordinate resolves to a source."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..hive.ids import child_ranks, ranks_to_nested, ranks_to_words
from ..hive.product import Product

FABRICATED_ROWS = 65_536
COORDINATES_ATTR = "morton cell_ids"
_BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}


class LeafSchemaError(ValueError):
    """A leaf array's metadata cannot be presented as a slice of a virtual array."""


@dataclass(frozen=True)
class LeafChunk:
    """Where a virtual chunk lives: a key below a shard's leaf data prefix."""

    shard: int
    key: str


@dataclass(frozen=True)
class ChunkCheck:
    """What the store can verify about a passed-through chunk object."""

    nbytes: int | None = None  # exact size of an uncompressed plain chunk
    shard_chunks: int | None = None  # inner chunks of a sharding_indexed object
    index_at_end: bool = True
    index_crc: bool = False

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
        return ChunkCheck(
            shard_chunks=math.prod(o // i for o, i in zip(chunk_shape, inner, strict=True)),
            index_at_end=conf.get("index_location", "end") == "end",
            index_crc=index_codecs[-1] == "crc32c",
        )
    return ChunkCheck()


def _leaf_chunk_key(encoding: dict, coords: tuple[int, ...]) -> str:
    name = encoding.get("name", "default")
    sep = (encoding.get("configuration") or {}).get("separator")
    if name == "default":
        return "c" + (sep or "/") + (sep or "/").join(map(str, coords))
    if name == "v2":
        return (sep or ".").join(map(str, coords))
    raise LeafSchemaError(f"chunk_key_encoding {encoding!r} is not supported")


class FieldArray:
    """A leaf array of every shard, concatenated along its first (cells) axis."""

    def __init__(self, product: Product, name: str, leaf_meta: dict) -> None:
        self.product, self.name = product, name
        where = f"{product.template}/{product.manifest.cell_order}/{name}"
        shape = leaf_meta.get("shape")
        grid = leaf_meta.get("chunk_grid", {})
        if grid.get("name") != "regular" or not shape:
            raise LeafSchemaError(f"{where}: needs a regular chunk grid and a cells axis")
        chunks = grid["configuration"]["chunk_shape"]
        cells = product.cells_per_shard
        if shape[0] != cells or cells % chunks[0]:
            raise LeafSchemaError(
                f"{where}: shape {shape} / chunks {chunks} do not tile {cells} cells per leaf"
            )
        self.chunks_per_leaf = cells // chunks[0]
        self.leaf_encoding = leaf_meta.get("chunk_key_encoding", {"name": "default"})
        _leaf_chunk_key(self.leaf_encoding, (0,) * len(shape))  # refuse unknown encodings now
        names = list(leaf_meta.get("dimension_names") or [None] * len(shape))
        dims = [n or ("cells" if i == 0 else f"dim_{i}") for i, n in enumerate(names)]
        attrs = dict(leaf_meta.get("attributes") or {})
        attrs["coordinates"] = COORDINATES_ATTR
        self.meta = {
            **leaf_meta,
            "shape": [product.n_shards * cells, *shape[1:]],
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "attributes": attrs,
            "dimension_names": dims,
        }
        self.grid = tuple(
            math.ceil(s / c) for s, c in zip(self.meta["shape"], chunks, strict=True)
        )
        self.check = chunk_check(leaf_meta)
        self.group = f"{product.manifest.cell_order}/{name}"

    def locate(self, coords: tuple[int, ...]) -> LeafChunk:
        shard, first = divmod(coords[0], self.chunks_per_leaf)
        key = _leaf_chunk_key(self.leaf_encoding, (first, *coords[1:]))
        return LeafChunk(shard, f"{self.group}/{key}")


class CoordinateArray:
    """``morton`` (packed words) or ``cell_ids`` (NESTED ids), fabricated per chunk."""

    def __init__(self, product: Product, kind: str, attrs: dict) -> None:
        self.product, self.kind = product, kind
        cells = product.cells_per_shard
        self.rows = cells * max(1, FABRICATED_ROWS // cells)
        n = product.n_shards * cells
        self.meta = {
            "shape": [n],
            "data_type": "uint64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [self.rows]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [_BYTES_LE],
            "attributes": attrs,
            "dimension_names": ["cells"],
            "zarr_format": 3,
            "node_type": "array",
            "storage_transformers": [],
        }
        self.grid = (math.ceil(n / self.rows),)

    def fabricate(self, coords: tuple[int, ...]) -> bytes:
        """The chunk's bytes: little-endian uint64, full chunk length (zero tail)."""
        manifest = self.product.manifest
        start = coords[0] * self.rows
        stop = min(start + self.rows, self.meta["shape"][0])
        ranks = child_ranks(self.product.shard_ranks, manifest.depth, start, stop)
        values = (
            ranks_to_words(ranks, manifest.cell_order)
            if self.kind == "morton"
            else ranks_to_nested(ranks, manifest.cell_order)
        )
        out = np.zeros(self.rows, dtype="<u8")
        out[: values.size] = values
        return out.tobytes()
