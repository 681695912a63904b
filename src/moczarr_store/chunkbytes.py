"""Byte-level helpers of the data path: what a leaf array's metadata says its chunk objects'
bytes must be (``chunk_check``), shard index checks, passthrough chunk checks and the
re-framing of a shard into one chunk.

A shard index entry is ``(offset, nbytes)``, two little-endian uint64 words. An entry is
absent when both words are ``2**64 - 1``; any other entry must be a non-empty span of the
object's payload (not of its index). Entries may alias or overlap each other: the sharding
specification does not forbid it, and every reader decodes such an entry as the bytes it
names, so it serves no wrong bytes. zarr's own sharding codec checks none of this (an entry
that wraps past ``2**64`` or points into the index is read as whatever bytes lie there, an
empty one as the fill value), so every index this store serves or follows is checked
first; one that fails is a :class:`TruncatedChunkError` naming the object. All arithmetic
is on uint64 words compared before they are added: nothing wraps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import google_crc32c
import numpy as np
from zarr.abc.store import RangeByteRequest, SuffixByteRequest

from .errors import TruncatedChunkError
from .hive.arraymeta import ArrayMeta, Codec, fill_number, named_dtype

if TYPE_CHECKING:
    from .cache import AsyncCache
    from .io.ranges import ByteRequest, BytesLike

ABSENT = 2**64 - 1
_ABSENT = np.uint64(ABSENT)

ReadSized = Callable[[str, "ByteRequest | None"], Awaitable["tuple[BytesLike, int] | None"]]


@dataclass(frozen=True)
class ChunkCheck:
    """What the store knows about a leaf chunk object's bytes, to verify or re-frame them."""

    nbytes: int | None = None  # exact size of an uncompressed plain chunk
    shard_chunks: int | None = None  # inner chunks of a sharding_indexed object
    index_at_end: bool = True
    index_crc: bool = False
    inner_nbytes: int | None = None  # size of an uncompressed inner chunk
    inner_fill: bytes = b""  # the bytes of an inner chunk of fill values
    compressor: str = ""  # a plain chunk compressed by this codec alone: "zstd" or "blosc"
    decoded_nbytes: int | None = None  # its size decoded

    @property
    def index_nbytes(self) -> int:
        return 16 * (self.shard_chunks or 0) + (4 if self.index_crc else 0)


def _itemsize(data_type: object) -> int | None:
    dtype = named_dtype(data_type)
    return None if dtype is None else dtype.itemsize


def chunk_check(meta: ArrayMeta) -> ChunkCheck:
    """What a leaf array's metadata says its chunk objects' bytes must be."""
    codecs, chunk_shape = meta.codecs, meta.chunk_shape
    names = [c.name for c in codecs]
    if names == ["bytes"]:
        size = _itemsize(meta.data_type)
        return ChunkCheck(nbytes=None if size is None else size * math.prod(chunk_shape))
    if names in (["bytes", "zstd"], ["bytes", "blosc"]):
        size = _itemsize(meta.data_type)
        if size is not None:
            return ChunkCheck(compressor=names[1], decoded_nbytes=size * math.prod(chunk_shape))
    shard = meta.sharding
    if shard is None or [c.name for c in shard.index_codecs] not in (["bytes"],
                                                                    ["bytes", "crc32c"]):
        return ChunkCheck()
    inner = shard.chunk_shape
    plain = plain_bytes(shard.codecs, meta.data_type)
    return ChunkCheck(
        shard_chunks=math.prod(o // i for o, i in zip(chunk_shape, inner, strict=True)),
        index_at_end=shard.index_at_end,
        index_crc=shard.index_codecs[-1].name == "crc32c",
        inner_nbytes=None if plain is None else plain.itemsize * math.prod(inner),
        inner_fill=b"" if plain is None else np.full(
            math.prod(inner), fill_number(meta.fill_value, plain), dtype=plain).tobytes(),
    )


def plain_bytes(codecs: Sequence[Codec], data_type: object) -> np.dtype | None:
    """The on-disk dtype when ``codecs`` is a lone fixed-size ``bytes`` codec."""
    if len(codecs) != 1 or codecs[0].name != "bytes":
        return None
    dtype = named_dtype(data_type)
    if dtype is None or dtype.kind not in "biuf" or dtype.itemsize == 0:
        return None
    return dtype.newbyteorder("<" if codecs[0].endian == "little" else ">")


def _bad(key: str, what: str) -> TruncatedChunkError:
    return TruncatedChunkError(f"{key}: {what}: the object is truncated or corrupt")


def _rows(index: BytesLike, check: ChunkCheck) -> np.ndarray:
    """A shard index's ``(offset, nbytes)`` rows (over its bytes, not a copy)."""
    body = memoryview(index)[: 16 * (check.shard_chunks or 0)]
    return np.frombuffer(body, dtype="<u8").reshape(-1, 2)


def _parse_index(index: memoryview, check: ChunkCheck, key: str) -> np.ndarray:
    """The index's ``(offset, nbytes)`` rows, its crc32c checked."""
    body = index[: 16 * (check.shard_chunks or 0)]
    if check.index_crc:
        stored = int.from_bytes(index[-4:], "little")
        if google_crc32c.value(bytes(body)) != stored:
            raise TruncatedChunkError(
                f"{key}: the shard index does not check (crc32c mismatch): the object is "
                "truncated or corrupt"
            )
    return _rows(body, check)


def _payload(check: ChunkCheck, size: int | None) -> tuple[int, int]:
    """``[start, end)`` of the bytes entries may point at in a ``size``-byte object
    (the whole uint64 range when the size is unknown)."""
    need = check.index_nbytes
    if size is None:
        return (0 if check.index_at_end else need), ABSENT
    return (0, size - need) if check.index_at_end else (need, size)


def verify_entries(entries: np.ndarray, check: ChunkCheck, key: str,
                   size: int | None) -> None:
    """Raise unless every entry is absent or a non-empty span of the payload of a
    ``size``-byte object (``None``: unknown) (and, for uncompressed inner chunks, is exactly
    one inner chunk long). Entries that alias or overlap each other pass (see the module).

    Cost: O(n) in the number of inner chunks, in a few vector operations, no copy of the
    object; for the layout zarr writes, one comparison of bytes (see :func:`in_order`).
    """
    if not in_order(entries, check, size):
        check_each_entry(entries, check, key, size)


def check_each_entry(entries: np.ndarray, check: ChunkCheck, key: str,
                     size: int | None) -> None:
    """:func:`verify_entries` without the fast path for zarr's own layout."""
    offsets, lengths = entries[:, 0], entries[:, 1]
    absent = (offsets == _ABSENT) & (lengths == _ABSENT)
    half = (offsets == _ABSENT) != (lengths == _ABSENT)
    if half.any():
        i = int(np.flatnonzero(half)[0])
        raise _bad(key, f"shard index entry {i} ({offsets[i]}, {lengths[i]}) is half absent")
    present = np.flatnonzero(~absent)
    if present.size == 0:
        return
    offsets, lengths = offsets[present], lengths[present]
    if (lengths == 0).any():
        i = int(present[np.flatnonzero(lengths == 0)[0]])
        raise _bad(key, f"shard index entry {i} is empty (0 bytes at {entries[i, 0]})")
    step = check.inner_nbytes
    if step is not None and (lengths != np.uint64(step)).any():
        i = int(present[np.flatnonzero(lengths != np.uint64(step))[0]])
        raise TruncatedChunkError(
            f"{key}: an inner chunk of {entries[i, 1]} bytes (shard index entry {i}), "
            f"{step} expected"
        )
    start, end = (np.uint64(v) for v in _payload(check, size))
    if (offsets < start).any():
        i = int(present[np.flatnonzero(offsets < start)[0]])
        raise _bad(key, f"shard index entry {i} points into the shard index")
    outside = (offsets > end) | (lengths > end - np.minimum(offsets, end))
    if outside.any():
        i = int(present[np.flatnonzero(outside)[0]])
        what = (f"the {end} payload bytes of the object" if size is not None
                else "the end of any object (2**64 bytes)")
        raise TruncatedChunkError(
            f"{key}: the shard index points past {what} (entry {i}: {entries[i, 1]} bytes at "
            f"{entries[i, 0]})"
        )


def in_order(entries: np.ndarray, check: ChunkCheck, size: int | None) -> bool:
    """Whether every inner chunk is present, exactly one (uncompressed) inner chunk long,
    and back to back in index order inside the payload: then no entry is absent, empty,
    outside or overlapping another. Python-int bounds: nothing wraps."""
    step, n = check.inner_nbytes, len(entries)
    if not step or not n:
        return False
    start, end = _payload(check, size)
    first = int(entries[0, 0])
    return start <= first <= end - step * n and entries.tobytes() == _layout(first, step, n)


@functools.lru_cache(maxsize=64)
def _layout(first: int, step: int, n: int) -> bytes:
    """The index rows of ``n`` inner chunks of ``step`` bytes back to back from ``first``."""
    rows = np.full((n, 2), step, dtype="<u8")
    rows[:, 0] = first + step * np.arange(n, dtype="<u8")
    return rows.tobytes()


@functools.lru_cache(maxsize=64)
def _full_shard(step: int, n: int, index_at_end: bool, crc: bool) -> tuple[int, bytes] | None:
    """``(object size, index bytes)`` of a shard of ``n`` inner chunks of ``step`` bytes, all
    present and stored back to back in index order (as zarr writes a full shard)."""
    if not step or not n:
        return None
    need = 16 * n + (4 if crc else 0)
    index = _layout(0 if index_at_end else need, step, n)
    if crc:
        index += google_crc32c.value(index).to_bytes(4, "little")
    return step * n + need, index


def full_shard(check: ChunkCheck) -> tuple[int, bytes] | None:
    """``(object size, index bytes)`` of a shard object of ``check`` written whole and in
    order (:func:`reframe`'s fast case), or ``None`` when its inner chunks have no fixed size."""
    return _full_shard(check.inner_nbytes or 0, check.shard_chunks or 0, check.index_at_end,
                       check.index_crc)


def full_shard_index(step: int, n: int) -> bytes:
    """The index (at the end, crc32c'd) of a shard of ``n`` inner chunks of ``step`` bytes,
    all present and back to back in order."""
    layout = _full_shard(step, n, True, True)
    assert layout is not None, "a shard has inner chunks of some bytes"
    return layout[1]


def _is_index_range(byte_range: ByteRequest | None, check: ChunkCheck) -> bool:
    return bool(byte_range == index_range(check))


def check_chunk(data: BytesLike, check: ChunkCheck, byte_range: ByteRequest | None, key: str,
                size: int | None = None) -> None:
    """Raise :class:`TruncatedChunkError` naming ``key`` if ``data`` cannot be right.

    ``size`` is the whole object's size when ``data`` is a range of it (a shard index
    read on its own is then checked against the payload too).
    """
    size_read = len(memoryview(data))
    if check.shard_chunks:
        need = check.index_nbytes
        buf = memoryview(data)
        if byte_range is None:
            if size_read < need:
                raise TruncatedChunkError(
                    f"{key}: {size_read} bytes cannot hold a {need}-byte index")
            index = buf[size_read - need :] if check.index_at_end else buf[:need]
            verify_entries(_parse_index(index, check, key), check, key, size_read)
        elif _is_index_range(byte_range, check):
            if size_read != need:
                raise TruncatedChunkError(
                    f"{key}: {size_read} bytes cannot hold a {need}-byte index")
            verify_entries(_parse_index(buf, check, key), check, key, size)
        return
    if byte_range is None and check.nbytes is not None and size_read != check.nbytes:
        raise TruncatedChunkError(
            f"{key}: an uncompressed chunk of {check.nbytes} bytes was expected, the object "
            f"has {size_read}"
        )
    if byte_range is None and check.compressor:
        try:
            held = _decoded_size(memoryview(data).cast("B"), check.compressor)
        except ValueError as err:
            raise TruncatedChunkError(f"{key}: not a whole {check.compressor} stream ({err})"
                                      ) from None
        if held is not None and held != check.decoded_nbytes:
            raise TruncatedChunkError(f"{key}: its {check.compressor} stream holds {held} "
                                      f"bytes, a chunk {check.decoded_nbytes}")


def _decoded_size(data: memoryview, compressor: str) -> int | None:
    """The decoded size a compressed chunk records, after checking that it ends where the
    object does (``None``: not recorded); ``ValueError`` saying why not. Cost: a blosc
    header (16 bytes); zstd, :func:`zstd_frames`."""
    if compressor == "blosc":
        if len(data) < 16:
            raise ValueError(f"{len(data)} bytes cannot hold its 16-byte header")
        nbytes, cbytes = (int.from_bytes(data[a : a + 4], "little") for a in (4, 12))
        if cbytes != len(data):
            raise ValueError(f"its header says {cbytes} bytes, the object has {len(data)}")
        return nbytes
    sizes = zstd_frames(data)
    known = [n for n in sizes if n is not None]
    return sum(known) if len(known) == len(sizes) else None


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd_frames(data: memoryview) -> list[int | None]:
    """The decoded size each zstd frame of ``data`` records (``None``: not recorded),
    walking the frame headers and block headers (RFC 8878) without decoding: ``data`` must
    end where its last frame does. ``ValueError`` saying why not (cut short, extra bytes, a
    reserved block type). Skippable frames are stepped over. Cost: O(blocks)."""
    sizes: list[int | None] = []
    at, end = 0, len(data)

    def take(n: int) -> int:
        nonlocal at
        if at + n > end:
            raise ValueError(f"cut short at byte {end}, {at + n} needed")
        value = int.from_bytes(data[at : at + n], "little")
        at += n
        return value

    while at < end:
        magic = take(4)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            at += take(4)
            if at > end:
                raise ValueError(f"a skippable frame runs past byte {end}")
            continue
        if magic.to_bytes(4, "little") != _ZSTD_MAGIC:
            raise ValueError(f"no frame starts at byte {at - 4}")
        descriptor = take(1)
        fcs_flag, single = descriptor >> 6, (descriptor >> 5) & 1
        if descriptor & 0x08:
            raise ValueError("a reserved frame header bit is set")
        at += (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3]
        fcs_bytes = (1 if single else 0, 2, 4, 8)[fcs_flag]
        size = take(fcs_bytes) if fcs_bytes else None
        sizes.append(size + 256 if size is not None and fcs_bytes == 2 else size)
        last = False
        while not last:
            header = take(3)
            last, kind, length = bool(header & 1), (header >> 1) & 3, header >> 3
            if kind == 3:
                raise ValueError("a block of the reserved type")
            at += 1 if kind == 1 else length
            if at > end:
                raise ValueError(f"a block runs past byte {end}")
        at += 4 if descriptor & 0x04 else 0  # the content checksum
        if at > end:
            raise ValueError(f"cut short at byte {end}")
    return sizes


def shard_entries(data: BytesLike, check: ChunkCheck, key: str) -> np.ndarray:
    """The ``(offset, nbytes)`` rows of a whole shard object's verified index."""
    check_chunk(data, check, None, key)
    buf, need = memoryview(data), check.index_nbytes
    return _rows(buf[len(buf) - need :] if check.index_at_end else buf[:need], check)


def index_entries(index: BytesLike, check: ChunkCheck, key: str,
                  size: int | None = None) -> np.ndarray:
    """The ``(offset, nbytes)`` rows of a shard index read on its own, verified (against
    the payload of a ``size``-byte object when the size is known)."""
    check_chunk(index, check, index_range(check), key, size)
    return _rows(index, check)


def index_range(check: ChunkCheck) -> RangeByteRequest | SuffixByteRequest:
    """The byte request that reads a shard object's index alone."""
    if check.index_at_end:
        return SuffixByteRequest(check.index_nbytes)
    return RangeByteRequest(0, check.index_nbytes)


async def load_index(read_sized: ReadSized, key: str, check: ChunkCheck) -> np.ndarray | None:
    """A shard object's verified index entries (one ranged GET), ``None`` if it is absent."""
    got = await read_sized(key, index_range(check))
    return None if got is None else index_entries(got[0], check, key, got[1])


def check_ranged(entries: np.ndarray | None, byte_range: RangeByteRequest,
                 data: BytesLike | None, key: str) -> None:
    """A ranged read of a shard object whose verified index is ``entries``: a range inside
    the bytes its inner chunks span (one chunk, or several coalesced) must come back whole."""
    start, end = byte_range.start, byte_range.end
    present = None if entries is None else entries[entries[:, 0] != _ABSENT]
    if present is None or present.size == 0 or not 0 <= start < end:
        return
    low, high = int(present[:, 0].min()), int((present[:, 0] + present[:, 1]).max())
    if low <= start and end <= high and (data is None or len(memoryview(data)) != end - start):
        got = "nothing" if data is None else f"{len(memoryview(data))} bytes"
        raise TruncatedChunkError(
            f"{key}: its index promised {end - start} bytes at {start}, the read gave {got}"
        )


async def shard_passthrough(read_sized: ReadSized, indexes: AsyncCache[np.ndarray | None],
                            key: str, check: ChunkCheck,
                            byte_range: ByteRequest | None) -> BytesLike | None:
    """A leaf chunk object (or a range of it) passed through as it is, checked.

    A whole object: its index (or its size, unsharded). A shard's index alone: against the
    object's size (learned with it, no extra request), then remembered in ``indexes`` (an
    ``AsyncCache``). Any other range of a shard: against that index (re-read if forgotten:
    one more ranged GET), so zarr's sharding codec never decodes bytes a lying index points
    at, nor a chunk cut short.
    """
    if check.shard_chunks and isinstance(byte_range, RangeByteRequest) and not _is_index_range(
        byte_range, check
    ):
        entries = await indexes.get(key, lambda: load_index(read_sized, key, check))
        got = await read_sized(key, byte_range)
        data = None if got is None else got[0]
        check_ranged(entries, byte_range, data, key)
        return data
    got = await read_sized(key, byte_range)
    if got is None:
        return None
    if check.shard_chunks and _is_index_range(byte_range, check):
        indexes.put(key, index_entries(got[0], check, key, got[1]))
    else:
        check_chunk(got[0], check, byte_range, key, got[1])
    return got[0]


def reframe(data: BytesLike, check: ChunkCheck, key: str) -> bytes | memoryview | None:
    """A whole shard's inner chunks as one contiguous chunk (absent ones as fill).

    Only for fixed-size inner chunks split along the first axis; ``None`` when every
    inner chunk is absent. Cost: one comparison for a full shard written in order (its
    index is compared with that layout's bytes, crc32c included), else the index is
    checked entry by entry.
    """
    buf, step = memoryview(data), check.inner_nbytes or 0
    full = full_shard(check)
    if full is not None and len(buf) == full[0]:
        need = check.index_nbytes
        index = buf[len(buf) - need :] if check.index_at_end else buf[:need]
        if bytes(index) == full[1]:  # exactly that layout: every entry is in bounds
            start = 0 if check.index_at_end else need
            return buf[start : start + step * (check.shard_chunks or 0)]
    entries = shard_entries(data, check, key)
    if in_order(entries, check, len(buf)):  # written in order: already one chunk
        first = int(entries[0, 0])
        return buf[first : first + step * len(entries)]
    if (entries[:, 0] == _ABSENT).all():
        return None
    return b"".join(  # every present entry is one inner chunk long (verified)
        check.inner_fill if offset == ABSENT else buf[offset : offset + nbytes]
        for offset, nbytes in entries.tolist()
    )


def inner_range(entries: np.ndarray, part: int) -> RangeByteRequest | None:
    """The byte range of inner chunk ``part`` of a verified index, ``None`` if absent."""
    offset, nbytes = (int(v) for v in entries[part])
    return None if offset == ABSENT else RangeByteRequest(offset, offset + nbytes)
