"""Hostile bytes: shard indexes that lie.

Every entry of a ``sharding_indexed`` object is absent (both words
``2**64 - 1``) or a non-empty span of the payload that does not overlap the index. Entries may
alias or overlap each other: the sharding spec does not forbid it and zarr decodes each as
the bytes it names, so the store serves them as zarr reads them. zarr's own codec checks
none of the rest (an entry into the index is decoded as those bytes, an empty or wrapping
one reads as fill), so whatever index the store serves or follows, in every chunking mode,
either gives the bytes the index names or raises ``TruncatedChunkError`` naming the object;
never another exception. The oracle is a plain Python-int reading of the sharding spec
(``Shard.valid``), not the code under test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import google_crc32c
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.hives import FIXTURES
from zarr.abc.store import RangeByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.storage import MemoryStore

from moczarr_store import MocHiveStore, TruncatedChunkError
from moczarr_store.cache import AsyncCache
from moczarr_store.chunkbytes import (
    ChunkCheck,
    check_chunk,
    index_range,
    inner_range,
    load_index,
    reframe,
    shard_passthrough,
)
from moczarr_store.io.ranges import slice_bytes

ABSENT = 2**64 - 1
FIXTURES_SHARDED = FIXTURES / "sharded"
KEY = "4/4/4/1/1/44411.zarr/7/count/c/0"
ITEM = np.dtype("<u4")
FILL = 7
PROTO = default_buffer_prototype()


# -- hostile shard objects -----------------------------------------------------------------


@dataclasses.dataclass
class Shard:
    data: bytes
    entries: list[tuple[int, int]]
    check: ChunkCheck

    @property
    def payload(self) -> tuple[int, int]:
        need, size = self.check.index_nbytes, len(self.data)
        return (0, size - need) if self.check.index_at_end else (need, size)

    def valid(self) -> bool:
        """The sharding spec read with Python ints: absent, or a non-empty span of the
        payload of the inner chunk's size (spans may overlap each other)."""
        low, high = self.payload
        for offset, nbytes in self.entries:
            if (offset, nbytes) == (ABSENT, ABSENT):
                continue
            if ABSENT in (offset, nbytes) or nbytes == 0 or offset < low:
                return False
            if offset + nbytes > high or nbytes != self.check.inner_nbytes:
                return False
        return True

    def inner(self, i: int) -> bytes | None:
        offset, nbytes = self.entries[i]
        return None if offset == ABSENT else self.data[offset : offset + nbytes]

    def expected(self) -> bytes | None:
        """The shard's values as one chunk (absent inner chunks as fill)."""
        if all(offset == ABSENT for offset, _ in self.entries):
            return None
        return b"".join(self.inner(i) or self.check.inner_fill for i in range(len(self.entries)))


def _pack(entries) -> bytes:
    return b"".join(o.to_bytes(8, "little") + n.to_bytes(8, "little") for o, n in entries)


def _hostile_entry(draw, kind: str, entries, low: int, high: int, need: int, nbytes: int,
                   at_end: bool) -> tuple[int, int]:
    any_offset = st.integers(low, high)
    if kind == "absent":
        return ABSENT, ABSENT
    if kind == "half":
        return draw(st.sampled_from([(ABSENT, nbytes), (draw(any_offset), ABSENT)]))
    if kind == "zero":
        return draw(any_offset), 0
    if kind == "wrap":  # offset + nbytes wraps past 2**64 to a small number
        return ABSENT - draw(st.integers(0, nbytes - 1)), nbytes
    if kind == "past":
        return max(0, high - draw(st.integers(0, nbytes - 1))), nbytes
    if kind == "index":
        index_start = high if at_end else 0
        return index_start + draw(st.integers(0, need - 1)), nbytes
    if kind == "overlap":
        offset = draw(st.sampled_from([o for o, _ in entries]))
        return min(ABSENT, offset + draw(st.integers(0, nbytes - 1))), nbytes
    if kind == "length":
        return draw(any_offset), draw(st.sampled_from([nbytes - 1, nbytes + 1, 2 * nbytes]))
    return draw(st.integers(0, ABSENT)), draw(st.integers(0, ABSENT))  # "huge"


KINDS = ["absent", "half", "zero", "wrap", "past", "index", "overlap", "length", "huge"]


@st.composite
def shards(draw, hostile: int = 2) -> Shard:
    """A shard of ``n`` inner chunks of ``k`` uint32 (some absent, any order, gaps), index at
    either end, with up to ``hostile`` entries replaced by hostile ones."""
    n, k = draw(st.integers(1, 8)), draw(st.integers(1, 4))
    nbytes, at_end, crc = k * ITEM.itemsize, draw(st.booleans()), draw(st.booleans())
    check = ChunkCheck(shard_chunks=n, index_at_end=at_end, index_crc=crc, inner_nbytes=nbytes,
                       inner_fill=np.full(k, FILL, ITEM).tobytes())
    need = check.index_nbytes
    base = 0 if at_end else need
    present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    payload, entries = bytearray(draw(st.binary(max_size=3))), [(ABSENT, ABSENT)] * n
    for i in draw(st.permutations(range(n))):
        if present[i]:
            entries[i] = (base + len(payload), nbytes)
            payload += draw(st.binary(min_size=nbytes, max_size=nbytes))
        payload += draw(st.binary(max_size=2))
    low, high = (0, len(payload)) if at_end else (need, need + len(payload))
    for _ in range(draw(st.integers(0, hostile))):
        i = draw(st.integers(0, n - 1))
        kind = draw(st.sampled_from(KINDS))
        entries[i] = _hostile_entry(draw, kind, entries, low, high, need, nbytes, at_end)
    body = _pack(entries)
    index = body + (google_crc32c.value(body).to_bytes(4, "little") if crc else b"")
    data = bytes(payload) + index if at_end else index + bytes(payload)
    return Shard(data, entries, check)


def _reader(data: bytes | None):
    """``read_sized`` over one in-memory object at ``KEY``, counting its calls."""
    calls = []

    async def read_sized(key, byte_range):
        calls.append(byte_range)
        if key != KEY or data is None:
            return None
        return slice_bytes(data, byte_range), len(data)

    read_sized.calls = calls
    return read_sized


def _refused(fn):
    """``fn()``'s value, or the ``TruncatedChunkError`` it raised (anything else fails)."""
    try:
        return fn()
    except TruncatedChunkError as err:
        assert KEY in str(err)
        return err


HOSTILE = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_ONE = ChunkCheck(shard_chunks=1, index_crc=False, inner_nbytes=4,
                  inner_fill=np.full(1, FILL, ITEM).tobytes())


def _one(entry: tuple[int, int], payload: bytes = b"abcdefgh") -> Shard:
    return Shard(payload + _pack([entry]), [entry], _ONE)


EXAMPLES = [
    _one((0, 0)),  # zarr: fill on a partial read, a reshape error on a whole one
    _one((ABSENT, ABSENT)),  # absent: fill
    _one((ABSENT, 4)),  # half absent
    _one((ABSENT - 1, 4)),  # offset + nbytes wraps to 2
    _one((8, 4)),  # the index's own bytes, which zarr would decode as values
    _one((6, 4)),  # past the payload into the index
    _one((4, 4)),  # a valid entry
]


def _with_examples(*extra):
    def decorate(test):
        for shard in EXAMPLES:
            test = example(shard, *extra)(test)
        return test

    return decorate


@HOSTILE
@given(shards())
@_with_examples()
def test_leaf_mode_reframes_the_named_bytes_or_refuses(shard):
    got = _refused(lambda: reframe(shard.data, shard.check, KEY))
    if shard.valid():
        assert (None if got is None else bytes(got)) == shard.expected()
    else:
        assert isinstance(got, TruncatedChunkError)


@HOSTILE
@given(shards())
@_with_examples()
def test_a_whole_shard_passes_through_only_with_an_index_that_holds(shard):
    cache = AsyncCache(4)
    got = _refused(lambda: asyncio.run(shard_passthrough(_reader(shard.data), cache, KEY,
                                                  shard.check, None)))
    if shard.valid():
        assert bytes(got) == shard.data
    else:
        assert isinstance(got, TruncatedChunkError)
        assert isinstance(_refused(lambda: check_chunk(shard.data, shard.check, None, KEY)),
                          TruncatedChunkError)


@HOSTILE
@given(shards(), st.integers(0, 8))
@_with_examples(3)
def test_shard_mode_serves_the_index_and_its_chunks_or_refuses(shard, cut):
    """zarr's partial read: the index alone, then each inner chunk by range."""
    cache = AsyncCache(4)
    read = _reader(shard.data)
    got = _refused(lambda: asyncio.run(shard_passthrough(read, cache, KEY, shard.check,
                                                  index_range(shard.check))))
    if not shard.valid():
        assert isinstance(got, TruncatedChunkError)
        return
    assert bytes(got) == bytes(slice_bytes(shard.data, index_range(shard.check)))
    calls = len(read.calls)
    for i, (offset, nbytes) in enumerate(shard.entries):
        if offset != ABSENT:
            span = RangeByteRequest(offset, offset + nbytes)
            data = asyncio.run(shard_passthrough(read, cache, KEY, shard.check, span))
            assert bytes(data) == shard.inner(i)
    assert len(read.calls) - calls == sum(o != ABSENT for o, _ in shard.entries)  # index kept
    if cut:  # the object is cut after its index was read: no chunk comes back short
        short = _reader(shard.data[: max(0, len(shard.data) - cut)])
        for offset, nbytes in shard.entries:
            if offset != ABSENT:
                span = RangeByteRequest(offset, offset + nbytes)
                data = _refused(lambda s=span: asyncio.run(shard_passthrough(short, cache, KEY,
                                                                      shard.check, s)))
                assert isinstance(data, TruncatedChunkError) or bytes(data) == bytes(
                    slice_bytes(shard.data, span))


@HOSTILE
@given(shards())
@_with_examples()
def test_a_forgotten_index_is_read_again_before_a_chunk_is_served(shard):
    cache, read = AsyncCache(4), _reader(shard.data)
    present = [(o, n) for o, n in shard.entries if o != ABSENT and n not in (0, ABSENT)]
    if not present or present[0][0] + present[0][1] > ABSENT:
        return
    offset, nbytes = present[0]
    span = RangeByteRequest(offset, offset + nbytes)
    got = _refused(lambda: asyncio.run(shard_passthrough(read, cache, KEY, shard.check, span)))
    assert read.calls[0] == index_range(shard.check)
    if shard.valid():
        assert bytes(got) == shard.data[offset : offset + nbytes]
    else:
        assert isinstance(got, TruncatedChunkError)


@HOSTILE
@given(shards())
@_with_examples()
def test_inner_mode_reads_each_inner_chunk_the_index_names_or_refuses(shard):
    entries = _refused(lambda: asyncio.run(load_index(_reader(shard.data), KEY, shard.check)))
    if not shard.valid():
        assert isinstance(entries, TruncatedChunkError)
        return
    for i in range(len(shard.entries)):
        inner = inner_range(entries, i)
        got = None if inner is None else bytes(slice_bytes(shard.data, inner))
        assert got == shard.inner(i)


def test_an_absent_object_has_no_index():
    assert asyncio.run(load_index(_reader(None), KEY, _ONE)) is None
    assert asyncio.run(shard_passthrough(_reader(None), AsyncCache(4), KEY, _ONE,
                                  RangeByteRequest(0, 4))) is None


# -- zarr's own sharding codec, fed through the store's checks ---------------------------------


class _Guarded(MemoryStore):
    """A memory store whose one shard object is served as the hive store serves it."""

    def __init__(self, check: ChunkCheck) -> None:
        super().__init__()
        self.check, self.indexes = check, AsyncCache(4)

    async def get(self, key, prototype, byte_range=None):
        if key != "c/0":
            return await super().get(key, prototype, byte_range)
        raw = self._store_dict["c/0"].to_bytes()

        async def read_sized(_key, request):
            return slice_bytes(raw, request), len(raw)

        data = await shard_passthrough(read_sized, self.indexes, KEY, self.check, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)


def _zarr_array(shard: Shard) -> zarr.Array:
    n = shard.check.shard_chunks
    k = shard.check.inner_nbytes // ITEM.itemsize
    index_codecs = [zarr.codecs.BytesCodec()]
    if shard.check.index_crc:
        index_codecs.append(zarr.codecs.Crc32cCodec())
    store = _Guarded(shard.check)
    array = zarr.create_array(
        store, shape=(n * k,), chunks=(n * k,), dtype=ITEM, fill_value=FILL,
        serializer=zarr.codecs.ShardingCodec(
            chunk_shape=(k,), codecs=[zarr.codecs.BytesCodec()], index_codecs=index_codecs,
            index_location="end" if shard.check.index_at_end else "start"),
        compressors=None, filters=None,
    )
    asyncio.run(store.set("c/0", PROTO.buffer.from_bytes(shard.data)))
    return array


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards())
@_with_examples()
def test_zarr_decodes_what_the_index_names_or_the_store_refuses(shard):
    array = _zarr_array(shard)
    k = shard.check.inner_nbytes // ITEM.itemsize
    expected = shard.expected() or shard.check.inner_fill * len(shard.entries)
    for selection in (slice(None), slice(0, k)):  # a whole shard; one inner chunk by range
        got = _refused(lambda s=selection: array[s])
        if shard.valid():
            want = np.frombuffer(expected, ITEM)[selection]
            np.testing.assert_array_equal(got, want)
        else:
            assert isinstance(got, TruncatedChunkError)


# -- the store, on a fixture shard whose index lies (crc32c recomputed) ---------------------


def _leaf_key(root, leaf: str, field: str) -> str:
    stamp = json.loads((root / leaf / "zarr.json").read_text())["attributes"]
    current = stamp["morton_hive_commit"].get("current")
    return f"{leaf}/{current}/7/{field}/c/0" if current else f"{leaf}/7/{field}/c/0"


def _lie(path, entry: int, value: tuple[int, int]) -> None:
    """Rewrite one entry of a shard object's index (at its end, crc32c recomputed)."""
    raw = bytearray(path.read_bytes())
    meta = json.loads((path.parent.parent / "zarr.json").read_text())
    n = meta["shape"][0] // meta["codecs"][0]["configuration"]["chunk_shape"][0]
    start = len(raw) - (16 * n + 4)
    entries = np.frombuffer(bytes(raw[start : start + 16 * n]), "<u8").reshape(-1, 2).tolist()
    entries[entry] = value
    body = _pack(entries)
    raw[start:] = body + google_crc32c.value(body).to_bytes(4, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner", 2])
@pytest.mark.parametrize(("lie", "value"), [
    ("into its own index", lambda payload: (payload, 32)),
    ("past the payload", lambda payload: (payload - 16, 32)),
    ("wrapping past 2**64", lambda payload: (ABSENT - 7, 32)),
    ("empty", lambda payload: (0, 0)),
])
def test_a_lying_shard_index_is_refused_naming_the_object(hive_copy, chunking, lie, value):
    root = hive_copy("sharded")
    key = _leaf_key(root, "4/4/4/1/1/44411.zarr", "count")
    size = (root / key).stat().st_size
    _lie(root / key, 0, value(size - (16 * 16 + 4)))
    ds = xr.open_zarr(MocHiveStore(root, chunking=chunking), group="atl06/o7")
    with pytest.raises(TruncatedChunkError, match=key):
        ds["count"].values  # noqa: B018
    with pytest.raises(TruncatedChunkError, match=key):
        ds["count"][:4].values  # noqa: B018 - the index alone, then a range
    assert ds["h_mean"].values.size  # the other fields still read


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner", 2])
@pytest.mark.parametrize(("lie", "value"), [
    ("aliasing entry 1", lambda entries: entries[1]),
    ("overlapping entries 1 and 2", lambda entries: (entries[1][0] + 16, entries[1][1])),
])
def test_entries_that_alias_or_overlap_read_as_zarr_reads_them(hive_copy, chunking, lie, value):
    """Not forbidden by the sharding spec, and no wrong byte: each entry names bytes of the
    payload, which zarr (moczarr, the oracle) decodes as the values it serves."""
    import moczarr

    root = hive_copy("sharded")
    key = _leaf_key(root, "4/4/4/1/1/44411.zarr", "count")
    raw = (root / key).read_bytes()
    entries = np.frombuffer(raw[-(16 * 16 + 4):-4], "<u8").reshape(-1, 2).tolist()
    assert entries[1][0] != ABSENT and entries[1][0] + 16 + entries[1][1] <= entries[2][0] + \
        entries[2][1] and entries[2][0] != ABSENT  # adjacent present chunks, to overlap
    _lie(root / key, 0, tuple(value(entries)))
    want = moczarr.open_hive(str(root), xr_kwargs={"chunks": None})["count"].values
    got = xr.open_zarr(MocHiveStore(root, chunking=chunking), group="atl06/o7")["count"].values
    np.testing.assert_array_equal(got, want, strict=True)
    assert not np.array_equal(want, xr.open_zarr(MocHiveStore(FIXTURES_SHARDED),
                                                 group="atl06/o7")["count"].values)
