"""Property tests of the leaf-mode re-framing of a shard object into one chunk."""

from __future__ import annotations

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moczarr_store.chunks import ChunkCheck, TruncatedChunkError, reframe

ABSENT = 2**64 - 1


@st.composite
def shards(draw):
    """A shard object: inner chunks stored in any order (some absent), index at the end."""
    n = draw(st.integers(1, 16))
    itemsize = draw(st.sampled_from([1, 4, 8]))
    cells = draw(st.integers(1, 8))
    nbytes = itemsize * cells
    fill = draw(st.binary(min_size=nbytes, max_size=nbytes))
    chunks = [draw(st.binary(min_size=nbytes, max_size=nbytes)) for _ in range(n)]
    present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    gap = draw(st.integers(0, 3))  # bytes a writer may leave before the first chunk
    payload, index = bytearray(b"\0" * gap), np.full((n, 2), ABSENT, dtype="<u8")
    for i in order:
        if present[i]:
            index[i] = (len(payload), nbytes)
            payload += chunks[i]
    body = index.tobytes()
    data = bytes(payload) + body + google_crc32c.value(body).to_bytes(4, "little")
    check = ChunkCheck(shard_chunks=n, index_crc=True, inner_nbytes=nbytes, inner_fill=fill)
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
    data, check, _ = case
    with pytest.raises(TruncatedChunkError, match="leaf/c/0"):
        reframe(data[: max(0, len(data) - cut)], check, "leaf/c/0")
