"""Leaves written with another encoding than the virtual array declares.

A hive written by several writer runs can hold one field under different dtypes,
codecs or chunkings. Passing such a leaf's bytes through would decode them under the
wrong metadata, so the store learns each leaf's encoding and, where it differs,
decodes the leaf's values and re-encodes them as the virtual array declares. Only
safe casts are made; anything else is an error naming the leaf array.

Cost: the leaf array's values are read through zarr under the metadata already read (its
chunks, ranged where sharded; no second read of its ``zarr.json``) and one virtual chunk is
encoded in memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr import AsyncArray
from zarr.abc.store import Store
from zarr.api.asynchronous import open_array
from zarr.buffer import default_buffer_prototype
from zarr.core.metadata.v3 import ArrayV3Metadata  # internal: no public equivalent (3.1-3.4)
from zarr.storage import MemoryStore, StorePath

from .errors import EncodingError, TranscodeReadError
from .hive.arraymeta import ArrayMeta, named_dtype
from .hive.jsonio import check_size, read_document
from .view.arrays import FieldArray

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from .io.reader import HiveIO


class _BackendStore(Store):
    """The hive's ``Backend`` as a read-only zarr store: capped, counted, like every read."""

    supports_writes = supports_deletes = supports_listing = False

    def __init__(self, backend: HiveIO, missing: list[str] | None = None) -> None:
        super().__init__(read_only=True)
        self.backend = backend
        self.missing = missing  # where to note the keys found absent (read as fill)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BackendStore) and other.backend == self.backend

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        if byte_range is None and key.rpartition("/")[2] == "zarr.json":  # a document: bounded
            data = await read_document(self.backend, key)
            if data is not None:
                check_size(data, key)
        else:
            data = await self.backend.get(key, byte_range)
        if data is None and self.missing is not None:
            self.missing.append(key)
        return None if data is None else prototype.buffer.from_bytes(memoryview(data))

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        return await self.backend.size(key) is not None

    async def set(self, key: str, value: Buffer) -> None:
        raise ValueError("read-only")

    async def delete(self, key: str) -> None:
        raise ValueError("read-only")

    # never listed: the array is opened by path
    async def list(self) -> AsyncIterator[str]:
        raise NotImplementedError
        yield

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        raise NotImplementedError
        yield

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        raise NotImplementedError
        yield



async def transcode(
    backend: Any, where: str, array: FieldArray, leaf_meta: ArrayMeta, coords: tuple[int, ...],
    missing: list[str] | None = None,
) -> bytes | None:
    """One virtual chunk's bytes, re-encoded from the leaf array at ``where`` (whose metadata
    is ``leaf_meta``): decoded with its own metadata, cast safely, encoded as declared. The
    keys of chunk objects found absent (read as the fill value) are added to ``missing``."""
    target = array.meta
    target_dtype = None  # the same data type (variable-length types too): no cast
    if leaf_meta.data_type != target.data_type:
        source_dtype = named_dtype(leaf_meta.data_type)
        target_dtype = named_dtype(target.data_type)
        if (source_dtype is None or target_dtype is None
                or not np.can_cast(source_dtype, target_dtype, "safe")):
            raise EncodingError(
                f"{where}: stored as {leaf_meta.data_type}, which cannot be cast safely to "
                f"the {target.data_type} the virtual array declares"
            )
    if leaf_meta.shape != array.level.arrays[array.name].shape:
        raise EncodingError(f"{where}: shape {list(leaf_meta.shape)} differs from the template")
    try:
        # the leaf metadata is known (read with the chunk, or cached): zarr reads no zarr.json
        source = AsyncArray(metadata=ArrayV3Metadata.from_dict(leaf_meta.to_json()),
                            store_path=StorePath(_BackendStore(backend, missing), where))
        region = array.leaf_region(coords)
        values = np.asarray(await source.getitem(region))
    except Exception as err:
        raise TranscodeReadError(f"reading {where} from {backend} to re-encode it: {err}") from err
    if target_dtype is not None:
        values = values.astype(target_dtype, casting="safe")
    chunk_shape = list(array.part_chunks)  # one leaf chunk (a span joins several)
    scratch, proto = MemoryStore(), default_buffer_prototype()
    meta = target.derive(shape=chunk_shape, chunk_shape=chunk_shape, attributes={})
    await scratch.set("zarr.json", proto.buffer.from_bytes(json.dumps(meta.to_json()).encode()))
    encoder = await open_array(store=scratch, zarr_format=3)
    await encoder.setitem(tuple(slice(None) for _ in chunk_shape), values.reshape(chunk_shape))
    buffer = await scratch.get("c/" + "/".join("0" for _ in chunk_shape), proto)
    return None if buffer is None else buffer.to_bytes()  # all fill: not written


async def decode_chunk(meta: ArrayMeta, chunk_shape: list[int], data: bytes) -> np.ndarray:
    """The values of one chunk's bytes ``data`` encoded as array metadata ``meta`` says
    (any codec chain zarr knows), as an array of ``chunk_shape``. Cost: zarr's decode of
    one chunk from memory."""
    scratch, proto = MemoryStore(), default_buffer_prototype()
    grid = {"name": "regular", "configuration": {"chunk_shape": chunk_shape}}
    doc = {**meta.to_json(), "shape": chunk_shape, "chunk_grid": grid, "attributes": {}}
    await scratch.set("zarr.json", proto.buffer.from_bytes(json.dumps(doc).encode()))
    await scratch.set("c/" + "/".join("0" for _ in chunk_shape), proto.buffer.from_bytes(data))
    decoder = await open_array(store=scratch, zarr_format=3)
    return np.asarray(await decoder.getitem(tuple(slice(None) for _ in chunk_shape)))
