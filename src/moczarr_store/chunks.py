"""Byte-level helpers of the data path: range slicing and passthrough chunk checks."""

from __future__ import annotations

import google_crc32c
import numpy as np
from zarr.abc.store import RangeByteRequest, SuffixByteRequest

from .errors import TruncatedChunkError
from .view.arrays import ChunkCheck

_ABSENT = np.uint64(2**64 - 1)



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


def shard_entries(data, check: ChunkCheck, key: str) -> np.ndarray:
    """The ``(offset, nbytes)`` rows of a whole shard object's verified index."""
    check_chunk(data, check, None, key)
    view, need = memoryview(data), check.index_nbytes
    index = view[len(view) - need :] if check.index_at_end else view[:need]
    return np.frombuffer(index[: 16 * check.shard_chunks], dtype="<u8").reshape(-1, 2)


def index_entries(index, check: ChunkCheck, key: str) -> np.ndarray:
    """The ``(offset, nbytes)`` rows of a shard index read on its own (verified)."""
    check_chunk(index, check, SuffixByteRequest(check.index_nbytes), key)
    return np.frombuffer(memoryview(index)[: 16 * check.shard_chunks], dtype="<u8").reshape(-1, 2)


def index_range(check: ChunkCheck):
    """The byte request that reads a shard object's index alone."""
    if check.index_at_end:
        return SuffixByteRequest(check.index_nbytes)
    return RangeByteRequest(0, check.index_nbytes)


def reframe(data, check: ChunkCheck, key: str) -> bytes | memoryview | None:
    """A whole shard's inner chunks as one contiguous chunk (absent ones as fill).

    Only for fixed-size inner chunks split along the first axis; ``None`` when every
    inner chunk is absent.
    """
    entries = shard_entries(data, check, key)
    offsets, sizes = entries[:, 0], entries[:, 1]
    if (offsets == _ABSENT).all():
        return None
    view, step = memoryview(data), check.inner_nbytes
    first = int(offsets[0])
    if (sizes == step).all() and (np.diff(offsets) == step).all() and first != int(_ABSENT):
        return view[first : first + step * len(offsets)]  # written in order: already one chunk
    parts = []
    for offset, nbytes in entries.tolist():
        if offset == int(_ABSENT):
            parts.append(check.inner_fill)
        elif nbytes != check.inner_nbytes:
            raise TruncatedChunkError(
                f"{key}: an inner chunk of {nbytes} bytes, {check.inner_nbytes} expected"
            )
        else:
            parts.append(view[offset : offset + nbytes])
    return b"".join(parts)


def inner_span(entries: np.ndarray, part: int) -> RangeByteRequest | None:
    """The byte range of inner chunk ``part``, or ``None`` when it is absent."""
    offset, nbytes = (int(v) for v in entries[part])
    return None if offset == int(_ABSENT) else RangeByteRequest(offset, offset + nbytes)
