"""Leaves written with another encoding than the virtual array declares.

A hive written by several writer runs can hold one field under different dtypes,
codecs or chunkings. Passing such a leaf's bytes through would decode them under the
wrong metadata, so the store learns each leaf's encoding and, where it differs,
decodes the leaf's values and re-encodes them as the virtual array declares. Only
safe casts are made; anything else is an error naming the leaf array.

Cost: leaves of one versioned writer run share their encoding, so one ``zarr.json``
read per (run, field) covers them all; an unversioned leaf names no run, so its
field's ``zarr.json`` is read once per leaf.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import numpy as np
from zarr.api.asynchronous import open_array
from zarr.core.buffer import default_buffer_prototype
from zarr.storage import MemoryStore, ObjectStore

from .hive.leaves import Leaf
from .view.arrays import FieldArray

ENCODING_KEYS = ("shape", "data_type", "fill_value", "codecs", "chunk_grid", "chunk_key_encoding")


class EncodingError(ValueError):
    """A leaf's values cannot be presented under the virtual array's encoding."""


def encoding(meta: dict) -> tuple:
    return tuple(json.dumps(meta.get(k), sort_keys=True) for k in ENCODING_KEYS)


class Encodings:
    """What encoding each (level, field, writer run) was written with; bounded."""

    def __init__(self, max_entries: int = 262_144) -> None:
        self.max_entries = max_entries
        self._known: OrderedDict[tuple, dict | None] = OrderedDict()

    def seed(self, array: FieldArray) -> None:
        """The template leaf's run: its encoding is the declared one."""
        self._put((array.level.path, array.name, array.level.template_run), None)

    def _put(self, key: tuple, value: dict | None) -> None:
        self._known[key] = value
        while len(self._known) > self.max_entries:
            self._known.popitem(last=False)

    async def differing_meta(self, backend, leaf: Leaf, array: FieldArray) -> dict | None:
        """The leaf array's metadata when its encoding differs from the template's."""
        key = (array.level.path, array.name, leaf.run)
        if key in self._known:
            return self._known[key]
        where = f"{leaf.data_prefix}/{array.group}/zarr.json"
        payload = await backend.get(where)
        if payload is None:
            meta = None  # the field is absent from this leaf: its chunks read as missing
        else:
            meta = json.loads(bytes(payload))
            if encoding(meta) == encoding(array.level.arrays[array.name]):
                meta = None
        self._put(key, meta)
        return meta


async def transcode(
    backend, leaf: Leaf, array: FieldArray, leaf_meta: dict, coords: tuple[int, ...]
) -> bytes | None:
    """One virtual chunk's bytes, re-encoded from a leaf with another encoding."""
    where = f"{leaf.data_prefix}/{array.group}"
    source_dtype = np.dtype(leaf_meta["data_type"])
    target = array.meta
    target_dtype = np.dtype(target["data_type"])
    if not np.can_cast(source_dtype, target_dtype, "safe"):
        raise EncodingError(
            f"{where}: stored as {source_dtype}, which cannot be cast safely to the "
            f"{target_dtype} the virtual array declares"
        )
    if leaf_meta.get("shape") != array.level.arrays[array.name].get("shape"):
        raise EncodingError(f"{where}: shape {leaf_meta.get('shape')} differs from the template")
    source = await open_array(
        store=ObjectStore(backend.store, read_only=True), path=where, zarr_format=3
    )
    region = array.leaf_region(coords)
    values = np.asarray(await source.getitem(region)).astype(target_dtype, casting="safe")
    chunk_shape = target["chunk_grid"]["configuration"]["chunk_shape"]
    scratch, proto = MemoryStore(), default_buffer_prototype()
    meta = {**target, "shape": chunk_shape, "attributes": {}}
    await scratch.set("zarr.json", proto.buffer.from_bytes(json.dumps(meta).encode()))
    encoder = await open_array(store=scratch, zarr_format=3)
    await encoder.setitem(tuple(slice(None) for _ in chunk_shape), values.reshape(chunk_shape))
    buffer = await scratch.get("c/" + "/".join("0" for _ in chunk_shape), proto)
    return None if buffer is None else buffer.to_bytes()  # all fill: not written
