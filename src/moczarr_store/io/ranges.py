"""Byte ranges: zarr's ``ByteRequest`` forms, obstore's form of them, and the
``[start, end)`` one names in an object of a known size."""

from __future__ import annotations

import obstore
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

BytesLike = bytes | bytearray | memoryview | obstore.Bytes
ByteRequest = RangeByteRequest | OffsetByteRequest | SuffixByteRequest
RangeOption = tuple[int, int] | dict[str, int] | None  # obstore's form of a byte range


def slice_bytes(data: BytesLike, byte_range: ByteRequest | None) -> BytesLike:
    """``data`` cut to a zarr ``ByteRequest`` (end-exclusive; suffix clamps at 0)."""
    if byte_range is None:
        return data
    buf = memoryview(data)
    if isinstance(byte_range, RangeByteRequest):
        return buf[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return buf[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return buf[max(0, len(data) - byte_range.suffix) :]
    raise TypeError(f"Unexpected byte_range, got {byte_range}.")


USUAL = 2**62


def unusual(byte_range: ByteRequest) -> bool:
    """Bounds an object store cannot take as they are: negative, or beyond 2**62."""
    if isinstance(byte_range, RangeByteRequest):
        return not (0 <= byte_range.start < USUAL and 0 <= byte_range.end < USUAL)
    if isinstance(byte_range, OffsetByteRequest):
        return not 0 <= byte_range.offset < USUAL
    return not 0 <= byte_range.suffix < USUAL


def range_option(byte_range: ByteRequest | None) -> RangeOption:
    """obstore's form of a (usual, non-empty) zarr byte range."""
    if byte_range is None:
        return None
    if isinstance(byte_range, RangeByteRequest):
        return (byte_range.start, byte_range.end)
    if isinstance(byte_range, OffsetByteRequest):
        return {"offset": byte_range.offset}
    return {"suffix": byte_range.suffix}


def byte_bounds(option: RangeOption, size: int) -> tuple[int, int]:
    """The ``[start, end)`` an obstore-style range option names in a ``size``-byte object."""
    if isinstance(option, tuple):
        start = min(option[0], size)
        return start, max(start, min(option[1], size))
    if isinstance(option, dict) and "offset" in option:
        return min(option["offset"], size), size
    if isinstance(option, dict):
        return max(0, size - option["suffix"]), size
    return 0, size
