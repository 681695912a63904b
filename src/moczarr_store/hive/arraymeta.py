"""A zarr v3 array's metadata as one frozen, typed record: :class:`ArrayMeta`.

A leaf array's ``zarr.json`` becomes one only through :func:`parse_array` (or
:func:`parse_node`): the bounded JSON reader (``jsonio.load_json``) decodes the bytes, the
fields this package reads are checked to have the JSON types they are read as, then zarr
parses the whole document (data type, fill value, every codec's configuration). A defect
is a :class:`MalformedMetadataError` naming the document and the field. Documents
byte-identical to one parsed before (the leaves of one writer run) are not parsed again:
an LRU of ``PARSED_KEPT`` documents of up to ``PARSED_MAX_BYTES`` each, keyed by their bytes
(a part of the process state, ``PARSED``).

The view's virtual arrays are records of the same type, derived from their leaf arrays'
(:meth:`ArrayMeta.derive`); :attr:`ArrayMeta.document` is the JSON a record stands for,
read only to write it out (a ``zarr.json``, zarr's own metadata class).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from zarr.codecs import BytesCodec, ShardingCodec

# zarr internals with no public equivalent in zarr 3.1.6 and 3.4.2: the check of a codec
# chain, and the v3 array metadata class
from zarr.core.codec_pipeline import codecs_from_list
from zarr.core.metadata.v3 import ArrayV3Metadata

from .. import state
from ..cache import Lru
from ..errors import LeafSchemaError, MalformedMetadataError
from ..io.ranges import BytesLike
from .jsonio import is_int, load_json
from .paths import short

PARSED_KEPT = 256
"""Distinct leaf array documents whose parse a process keeps (keyed by their bytes)."""
PARSED_MAX_BYTES = 1 << 16
"""Largest document whose parse is kept (a writer's are about 1 KiB)."""
ENCODING_KEYS = ("shape", "data_type", "fill_value", "codecs", "chunk_grid", "chunk_key_encoding")
"""The fields that decide an array's chunks' bytes."""

Json = Any  # a JSON value as ``json.loads`` gives it


@dataclass(frozen=True)
class Codec:
    """One codec of a chain: its name and configuration (``{}`` when it states none)."""

    name: str
    configuration: Mapping[str, Json]
    document: Mapping[str, Json] = field(compare=False, repr=False)  # as written

    @property
    def endian(self) -> str:
        """A ``bytes`` codec's byte order (``"little"`` unless it says otherwise)."""
        return str(self.configuration.get("endian", "little"))

    def to_json(self) -> dict[str, Json]:
        return dict(self.document)


@dataclass(frozen=True)
class Sharding(Codec):
    """A ``sharding_indexed`` codec: inner chunks, their chain, the index's chain and place."""

    chunk_shape: tuple[int, ...] = ()
    codecs: tuple[Codec, ...] = ()
    index_codecs: tuple[Codec, ...] = ()
    index_at_end: bool = True

    def with_leading_axis(self) -> Sharding:
        """The same codec for an array of one more leading axis of length 1."""
        inner = leading_axis(self.codecs)
        conf = {**self.configuration, "chunk_shape": [1, *self.chunk_shape],
                "codecs": [c.to_json() for c in inner]}
        return Sharding(self.name, conf, {**self.document, "configuration": conf},
                        (1, *self.chunk_shape), inner, self.index_codecs, self.index_at_end)


@dataclass(frozen=True)
class KeyEncoding:
    """How chunk coordinates name a chunk's key (``"default"`` or ``"v2"``)."""

    name: str = "default"
    separator: str | None = None

    def key(self, coords: Sequence[int]) -> str:
        """The key of chunk ``coords`` below the array."""
        if self.name == "default":
            sep = self.separator or "/"
            return "c" + sep + sep.join(map(str, coords))
        if self.name == "v2":
            return (self.separator or ".").join(map(str, coords))
        raise LeafSchemaError(f"chunk_key_encoding {self.name!r} is not supported")


@dataclass(frozen=True)
class ArrayMeta:
    """A zarr v3 array's metadata (a leaf array's, or a virtual array's derived from it).

    ``data_type`` and ``fill_value`` are as the document gives them (JSON); ``dtype`` is
    the numpy type of a bool, integer or float array (``None`` for any other)."""

    shape: tuple[int, ...]
    data_type: Json
    fill_value: Json
    chunk_shape: tuple[int, ...]
    codecs: tuple[Codec, ...]
    dimension_names: tuple[str, ...]
    key_encoding: KeyEncoding
    attributes: Mapping[str, Json]
    document: Mapping[str, Json] = field(compare=False, repr=False)

    @functools.cached_property
    def dtype(self) -> np.dtype | None:
        return numeric(self.data_type)

    @property
    def sharding(self) -> Sharding | None:
        """The sharding codec, when it is the whole chain (one object per chunk)."""
        codecs = self.codecs
        return codecs[0] if len(codecs) == 1 and isinstance(codecs[0], Sharding) else None

    @property
    def nbytes(self) -> int:
        """Decoded bytes of the whole array (0: not a numeric array)."""
        return 0 if self.dtype is None else self.dtype.itemsize * math.prod(self.shape)

    @property
    def chunk_nbytes(self) -> int:
        """Decoded bytes of one chunk (0: not a numeric array)."""
        return 0 if self.dtype is None else self.dtype.itemsize * math.prod(self.chunk_shape)

    @functools.cached_property
    def encoding(self) -> tuple[str, ...]:
        """What decides the chunks' bytes, comparable as a value (as JSON text: ``16.0``
        is not ``16``)."""
        return tuple(json.dumps(self.document.get(k), sort_keys=True) for k in ENCODING_KEYS)

    @property
    def chunk_encoding(self) -> tuple[str, ...]:
        """:attr:`encoding` less the shape: what one chunk's bytes depend on."""
        return self.encoding[1:]

    def to_json(self) -> dict[str, Json]:
        """The document (a shallow copy: its nested values are shared, never changed)."""
        return dict(self.document)

    def derive(self, **changes: Json) -> ArrayMeta:
        """The record of this document with ``changes`` (JSON fields; ``codecs`` as
        records, ``chunk_shape`` for a regular grid's); not checked again: for what this
        package derives from checked records."""
        doc = dict(self.document)
        for key, value in changes.items():
            if key == "chunk_shape":
                doc["chunk_grid"] = {"name": "regular",
                                     "configuration": {"chunk_shape": list(value)}}
            elif key == "codecs":
                doc["codecs"] = [c.to_json() for c in value]
            else:
                doc[key] = value
        return declare(doc)


def leading_axis(codecs: Sequence[Codec]) -> tuple[Codec, ...]:
    """A codec chain for the same bytes under one more leading axis of length 1: only a
    sharding codec's inner chunk shape depends on the rank (the shard index and the inner
    chunks' bytes of a (n,) array equal those of the (1, n) array)."""
    return tuple(c.with_leading_axis() if isinstance(c, Sharding) else c for c in codecs)


def named_dtype(data_type: object) -> np.dtype | None:
    """The numpy dtype a zarr v3 data type names, ``None`` for one numpy has no name for."""
    try:
        return np.dtype(data_type) if isinstance(data_type, str) else None
    except TypeError:
        return None


def numeric(data_type: object) -> np.dtype | None:
    """The numpy dtype of a bool, integer or float data type; ``None`` for any other."""
    dtype = named_dtype(data_type)
    return dtype if dtype is not None and dtype.kind in "biuf" else None


def fill_number(value: object, dtype: np.dtype) -> object:
    """A zarr v3 fill value as a number ("NaN", "Infinity" and hex bit patterns too)."""
    if isinstance(value, str) and value.startswith("0x"):
        bits = np.array(int(value, 16), dtype=f"u{dtype.itemsize}")
        return bits.view(dtype.newbyteorder("="))[()]
    if isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    return value


# -- from bytes: the one way in ---------------------------------------------------------------

PARSED: state.Part[Lru[ArrayMeta]] = state.Part("parsed leaf array documents",
                                                 lambda: Lru(PARSED_KEPT))


def parse_array(payload: BytesLike, where: str) -> ArrayMeta:
    """The array metadata document ``payload`` (the object ``where``), checked. Cost: a
    document seen before, a dictionary look-up; any other, its JSON decode and zarr's parse.
    A defect raises every time (it is never kept)."""
    small = len(payload) <= PARSED_MAX_BYTES
    content = bytes(payload) if small else b""  # a large one is decoded from the buffer
    found = PARSED().get(content) if small else None
    if found is not None:
        return found
    meta = check_array(load_json(payload, where), where)
    return PARSED().setdefault(content, meta) if small else meta


def parse_node(payload: BytesLike, where: str) -> ArrayMeta | None:
    """:func:`parse_array` of a node's ``zarr.json``, ``None`` when it is a JSON object that
    is no array (a group). Cost: one more JSON decode."""
    content = bytes(payload)
    meta = load_json(content, where)
    if isinstance(meta, dict) and meta.get("node_type") != "array":
        return None
    return parse_array(content, where)


def check_array(meta: object, where: str) -> ArrayMeta:
    """A decoded ``zarr.json`` as a record: the fields read here have the JSON types they
    are read as, then zarr parses the whole document. Cost: zarr's parse of the document."""
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
    _checkcodec_chain(where, "codecs", meta.get("codecs"), rank)
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
    transformers = meta.get("storage_transformers", [])
    _expect(where, "storage_transformers", transformers, "empty (zarr applies none)",
            transformers == [])
    if grid["name"] != "regular":
        raise LeafSchemaError(f"{where}: needs a regular chunk grid")
    try:
        parsed = ArrayV3Metadata.from_dict(dict(meta))
        _check_pipelines(parsed.codecs, parsed.data_type.to_native_dtype().itemsize)
    except Exception as err:  # zarr's own checks: data_type, fill_value, codec configuration
        raise MalformedMetadataError(
            f"{where}: not valid zarr v3 array metadata ({type(err).__name__}: {err})"
        ) from None
    return declare(meta)


def declare(doc: dict[str, Json]) -> ArrayMeta:
    """The record of a document this package wrote or checked (no check: hive bytes come
    in through :func:`parse_array`)."""
    keys = doc.get("chunk_key_encoding") or {"name": "default"}
    return ArrayMeta(
        shape=tuple(doc["shape"]),
        data_type=doc.get("data_type"),
        fill_value=doc.get("fill_value"),
        chunk_shape=tuple(doc["chunk_grid"]["configuration"]["chunk_shape"]),
        codecs=codec_chain(doc.get("codecs") or []),
        dimension_names=tuple(doc.get("dimension_names") or ()),
        key_encoding=KeyEncoding(keys["name"], (keys.get("configuration") or {}).get("separator")),
        attributes=doc.get("attributes") or {},
        document=doc,
    )


def codec_chain(chain: Sequence[Mapping[str, Json]]) -> tuple[Codec, ...]:
    """The records of a checked (or this package's own) codec chain."""
    out: list[Codec] = []
    for codec in chain:
        conf = codec.get("configuration") or {}
        if codec["name"] != "sharding_indexed":
            out.append(Codec(codec["name"], conf, codec))
            continue
        out.append(Sharding(
            codec["name"], conf, codec, tuple(conf["chunk_shape"]),
            codec_chain(conf.get("codecs") or []), codec_chain(conf.get("index_codecs") or []),
            conf.get("index_location", "end") == "end",
        ))
    return tuple(out)


def _check_pipelines(codecs: Any, itemsize: int) -> None:
    """What zarr checks only when it decodes, checked now: a sharding codec's inner and
    index chains each have exactly one array-to-bytes codec, and a ``bytes`` codec states
    its byte order for values of more than one byte (``itemsize``; the index's are 8)."""
    for codec in codecs:
        if isinstance(codec, BytesCodec) and codec.endian is None and itemsize > 1:
            raise ValueError(f"a bytes codec without endian, for {itemsize}-byte values")
        if isinstance(codec, ShardingCodec):
            for chain, size in ((codec.codecs, itemsize), (codec.index_codecs, 8)):
                codecs_from_list(chain)
                _check_pipelines(chain, size)


def _expect(where: str, field: str, value: object, want: str, ok: bool) -> None:
    if not ok:
        raise MalformedMetadataError(f"{where}: field {field!r} {short(value)} is not {want}")


def _check_conf(where: str, field: str, named: dict[str, Json]) -> None:
    conf = named.get("configuration")
    _expect(where, f"{field}.configuration", conf, "an object",
            conf is None or isinstance(conf, dict))


def _check_chunk_shape(where: str, field: str, chunks: object, rank: int) -> None:
    _expect(where, field, chunks, f"a list of {rank} ints >= 1",
            isinstance(chunks, list) and len(chunks) == rank
            and all(is_int(n) and n >= 1 for n in chunks))


def _checkcodec_chain(where: str, field: str, codecs: Any, rank: int) -> None:
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
        _checkcodec_chain(where, f"{here}.configuration.codecs", conf.get("codecs", []), rank)
        _checkcodec_chain(where, f"{here}.configuration.index_codecs", conf.get("index_codecs", []),
                      1)
        location = conf.get("index_location", "end")
        _expect(where, f"{here}.configuration.index_location", location, "'start' or 'end'",
                location in ("start", "end"))
