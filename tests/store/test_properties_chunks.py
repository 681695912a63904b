"""Property tests of the leaf-mode re-framing of a shard object into one chunk, and of the
shard index checks."""

from __future__ import annotations

import google_crc32c
import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from moczarr_store.chunkbytes import (
    ChunkCheck,
    TruncatedChunkError,
    check_chunk,
    check_each_entry,
    in_order,
    reframe,
    zstd_frames,
)

ABSENT = 2**64 - 1
KEY = "4/4/4/1/1/1/444111.zarr/7/h_mean/c/0"


@st.composite
def shards(draw):
    """A shard object: inner chunks stored in any order (some absent), the index at the end
    or the start; half of them full and in order, as zarr writes them (the fast path)."""
    n = draw(st.integers(1, 16))
    itemsize = draw(st.sampled_from([1, 4, 8]))
    cells = draw(st.integers(1, 8))
    nbytes = itemsize * cells
    fill = draw(st.binary(min_size=nbytes, max_size=nbytes))
    chunks = [draw(st.binary(min_size=nbytes, max_size=nbytes)) for _ in range(n)]
    at_end, written_by_zarr = draw(st.booleans()), draw(st.booleans())
    if written_by_zarr:
        present, order, gap = [True] * n, list(range(n)), 0
    else:
        present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        order = draw(st.permutations(range(n)))
        gap = draw(st.integers(0, 3))  # bytes a writer may leave before the first chunk
    check = ChunkCheck(shard_chunks=n, index_at_end=at_end, index_crc=True, inner_nbytes=nbytes,
                       inner_fill=fill)
    start = 0 if at_end else check.index_nbytes
    payload, index = bytearray(b"\0" * gap), np.full((n, 2), ABSENT, dtype="<u8")
    for i in order:
        if present[i]:
            index[i] = (start + len(payload), nbytes)
            payload += chunks[i]
    body = index.tobytes()
    index_bytes = body + google_crc32c.value(body).to_bytes(4, "little")
    data = bytes(payload) + index_bytes if at_end else index_bytes + bytes(payload)
    expected = b"".join(c if p else fill for c, p in zip(chunks, present, strict=True))
    return data, check, expected if any(present) else None


@settings(max_examples=300, deadline=None)
@given(shards())
def test_reframe_is_the_inner_chunks_in_index_order_with_fill(case):
    data, check, expected = case
    got = reframe(data, check, "leaf/c/0")
    assert (None if got is None else bytes(got)) == expected


@given(shards(), st.integers(1, 64))
def test_a_cut_shard_is_refused_naming_the_object(case, cut):
    """A cut into the index or a stored chunk is refused; with the index at the start, a
    cut of unused bytes after the last chunk leaves a valid shard, read as before."""
    data, check, expected = case
    cut_data = data[: max(0, len(data) - cut)]
    need = len(data)
    if not check.index_at_end:
        rows = np.frombuffer(data[: 16 * (check.shard_chunks or 0)], dtype="<u8").reshape(-1, 2)
        ends = [int(o + n) for o, n in rows if o != ABSENT]
        need = max(ends, default=check.index_nbytes)
    if len(cut_data) < need:
        with pytest.raises(TruncatedChunkError, match="leaf/c/0"):
            reframe(cut_data, check, "leaf/c/0")
    else:
        got = reframe(cut_data, check, "leaf/c/0")
        assert (None if got is None else bytes(got)) == expected


@given(shards(), st.data())
def test_a_changed_index_byte_is_refused_even_in_zarr_s_layout(case, data):
    """The fast path compares the whole index (crc32c included) with the in-order layout's
    bytes: any other index goes through the checks, and a flipped byte fails them."""
    shard, check, _ = case
    need = check.index_nbytes
    at = data.draw(st.integers(0, need - 1)) + (len(shard) - need if check.index_at_end else 0)
    flipped = bytearray(shard)
    flipped[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(TruncatedChunkError, match="leaf/c/0"):
        reframe(bytes(flipped), check, "leaf/c/0")


@st.composite
def indexes(draw):
    """Index rows in zarr's layout (inner chunks back to back from some offset), perhaps
    perturbed once, with an object size that may or may not hold them."""
    n, step, at_end = draw(st.integers(1, 16)), draw(st.integers(1, 64)), draw(st.booleans())
    check = ChunkCheck(shard_chunks=n, index_at_end=at_end, index_crc=True, inner_nbytes=step)
    payload_start = 0 if at_end else check.index_nbytes
    first = max(0, payload_start + draw(st.integers(-8, 64)))
    rows = np.array([(first + i * step, step) for i in range(n)], dtype="<u8")
    perturb = draw(st.sampled_from(["none", "offset", "length", "absent", "swap"]))
    i = draw(st.integers(0, n - 1))
    if perturb == "offset":
        rows[i, 0] = draw(st.sampled_from([0, first + i * step + 1, ABSENT - 1, ABSENT]))
    elif perturb == "length":
        rows[i, 1] = draw(st.sampled_from([0, step - 1, step + 1, ABSENT]))
    elif perturb == "absent":
        rows[i] = ABSENT
    elif perturb == "swap" and n > 1:
        rows[[0, i]] = rows[[i, 0]]
    need = first + n * step + (check.index_nbytes if at_end else 0)
    low = max(check.index_nbytes, need - 8)  # callers check that the object holds its index
    size = draw(st.one_of(st.none(), st.integers(low, need + 8)))
    layout = perturb == "none" or (perturb == "swap" and i == 0) or n == 1 and perturb == "swap"
    return rows, check, size, layout


@settings(max_examples=500, deadline=None)
@given(indexes())
def test_the_fast_index_check_agrees_with_the_entry_by_entry_one(case):
    """``in_order`` accepts zarr's layout whenever it lies inside the payload, and
    nothing the entry-by-entry check would refuse."""
    rows, check, size, layout = case
    start = 0 if check.index_at_end else check.index_nbytes
    end = 2**64 - 1 if size is None else size - (check.index_nbytes if check.index_at_end else 0)
    first, n, step = int(rows[0, 0]), len(rows), check.inner_nbytes
    inside = start <= first and first + n * step <= end
    if layout:
        assert in_order(rows, check, size) == inside
    if in_order(rows, check, size):
        check_each_entry(rows, check, "leaf/c/0", size)  # must not raise
    else:
        try:
            check_each_entry(rows, check, "leaf/c/0", size)
        except TruncatedChunkError:
            return
        assert not (layout and inside)



@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=70_000), st.integers(1, 9), st.booleans(),
       st.booleans(), st.integers(1, 3), st.data())
def test_a_zstd_chunk_is_whole_frames_or_refused_naming_it(raw, level, checksum, size_known,
                                                           frames, data):
    """A plain chunk compressed with zstd passes as written (one frame or several, with or
    without its content size and checksum) and is refused, naming it, when cut short or
    followed by other bytes: zarr would otherwise fail inside its codec, naming nothing.
    Not told apart: whole frames of unrecorded size cut at a frame's end, and skippable
    frames appended (which decoders skip)."""
    frame = zstandard.ZstdCompressor(level=level, write_checksum=checksum,
                                     write_content_size=size_known).compress(raw)
    stored = frame * frames
    check = ChunkCheck(compressor="zstd", decoded_nbytes=len(raw) * frames)
    check_chunk(stored, check, None, KEY)  # as written: passes
    assert zstandard.ZstdDecompressor().decompressobj().decompress(stored)[: len(raw)] == raw
    cut = stored[: -data.draw(st.integers(1, len(stored)))]
    extra = data.draw(st.binary(min_size=1, max_size=8))
    if size_known or len(cut) % len(frame):
        with pytest.raises(TruncatedChunkError, match=KEY):
            check_chunk(cut, check, None, KEY)
    try:
        zstd_frames(memoryview(extra))
    except ValueError:
        with pytest.raises(TruncatedChunkError, match=KEY):
            check_chunk(stored + extra, check, None, KEY)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=70_000), st.sampled_from(["zstd", "lz4", "blosclz"]),
       st.integers(0, 2), st.data())
def test_a_blosc_chunk_is_its_header_s_size_or_refused_naming_it(raw, cname, shuffle, data):
    """A plain chunk compressed with blosc: its header's compressed size must be the
    object's, its decoded size the chunk's."""
    from numcodecs import Blosc

    stored = bytes(Blosc(cname=cname, shuffle=shuffle).encode(raw))
    check = ChunkCheck(compressor="blosc", decoded_nbytes=len(raw))
    check_chunk(stored, check, None, KEY)
    cut = stored[: -data.draw(st.integers(1, len(stored)))]
    extra = data.draw(st.binary(min_size=1, max_size=8))
    for damaged in (cut, stored + extra):
        with pytest.raises(TruncatedChunkError, match=KEY):
            check_chunk(damaged, check, None, KEY)
    with pytest.raises(TruncatedChunkError, match=f"{KEY}: its blosc stream holds"):
        check_chunk(stored, ChunkCheck(compressor="blosc", decoded_nbytes=len(raw) + 1),
                    None, KEY)
