"""Byte-level helpers of the data path: range slicing and passthrough chunk checks."""

from __future__ import annotations

import google_crc32c
import numpy as np
from zarr.abc.store import SuffixByteRequest

from .view.arrays import ChunkCheck

_ABSENT = np.uint64(2**64 - 1)


class TruncatedChunkError(OSError):
    """A leaf chunk object is shorter than its metadata or shard index says."""


def _check_index(index: memoryview, check: ChunkCheck, key: str, payload: int | None) -> None:
    """Verify a shard index: its crc32c, and (given the payload size) its bounds."""
    body = index[: 16 * check.shard_chunks]
    if check.index_crc:
        stored = int.from_bytes(index[-4:], "little")
        if google_crc32c.value(bytes(body)) != stored:
            raise TruncatedChunkError(
                f"{key}: the shard index does not check (crc32c mismatch): the object is "
                "truncated or corrupt"
            )
    if payload is None:
        return
    entries = np.frombuffer(body, dtype="<u8").reshape(-1, 2)
    present = entries[entries[:, 0] != _ABSENT]
    if present.size and int((present[:, 0] + present[:, 1]).max()) > payload:
        raise TruncatedChunkError(
            f"{key}: the shard index points past the {payload} payload bytes of the object"
        )


def check_chunk(data, check: ChunkCheck, byte_range, key: str) -> None:
    """Raise :class:`TruncatedChunkError` naming ``key`` if ``data`` cannot be right."""
    size = len(memoryview(data))
    if check.shard_chunks:
        need = check.index_nbytes
        view = memoryview(data)
        if byte_range is None:
            if size < need:
                raise TruncatedChunkError(f"{key}: {size} bytes cannot hold a {need}-byte index")
            index = view[size - need :] if check.index_at_end else view[:need]
            _check_index(index, check, key, size - need if check.index_at_end else size)
        elif isinstance(byte_range, SuffixByteRequest) and byte_range.suffix == need:
            if size != need:
                raise TruncatedChunkError(f"{key}: {size} bytes cannot hold a {need}-byte index")
            _check_index(view, check, key, None)
        return
    if byte_range is None and check.nbytes is not None and size != check.nbytes:
        raise TruncatedChunkError(
            f"{key}: an uncompressed chunk of {check.nbytes} bytes was expected, the object "
            f"has {size}"
        )
