"""Sources the store takes: a path, a file:// URL, an obstore store instance."""

from __future__ import annotations

import asyncio
import os
import pickle

import numpy as np
import obstore
import pytest
import xarray as xr
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.hives import FIXTURES
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from moczarr_store import MocHiveStore
from moczarr_store.errors import OutsideRootError
from moczarr_store.io import local as local_module
from moczarr_store.io.backend import Backend

HIVE = FIXTURES / "bare_versioned"
GROUP = "atl06/o7"


def _values(store: MocHiveStore) -> dict:
    ds = xr.open_zarr(store, group=GROUP)
    return {name: ds[name].values for name in [*ds.data_vars, "morton", "cell_ids"]}


@pytest.mark.parametrize(
    "source",
    [f"file://{HIVE}", obstore.store.LocalStore(str(HIVE)), HIVE.relative_to(HIVE.parents[1])],
    ids=["file-url", "obstore-instance", "relative-path"],
)
def test_every_source_reads_the_same_values(source, monkeypatch):
    monkeypatch.chdir(HIVE.parents[1])
    expected = _values(MocHiveStore(HIVE))
    store = MocHiveStore(source)
    got = _values(store)
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store
    np.testing.assert_array_equal(_values(clone)["h_mean"], expected["h_mean"])


def test_a_path_and_its_file_url_are_the_same_store():
    assert MocHiveStore(HIVE) == MocHiveStore(f"file://{HIVE}")


def test_options_reach_obstore_and_the_recipe():
    store = MocHiveStore("s3://bucket/hive", storage_options={"region": "us-west-2",
                                                             "skip_signature": True})
    assert store.backend.options == {"region": "us-west-2", "skip_signature": True}
    assert store != MocHiveStore("s3://bucket/hive", storage_options={
        "region": "eu-west-1", "skip_signature": True})
    assert pickle.loads(pickle.dumps(store)) == store
    assert store.backend.store.config["region"] == "us-west-2"


def test_a_missing_root_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        xr.open_zarr(MocHiveStore(tmp_path / "nowhere"), group=GROUP)


def test_a_directory_that_is_not_a_hive_is_a_clear_error(tmp_path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(ValueError, match="not a morton-hive"):
        xr.open_zarr(MocHiveStore(tmp_path), group=GROUP)


LEAF_OBJECTS = sorted(
    str(p.relative_to(HIVE)) for p in HIVE.rglob("*") if p.is_file() and "/c/" in str(p)
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(LEAF_OBJECTS),
    st.one_of(
        st.none(),
        st.builds(RangeByteRequest, st.integers(0, 600), st.integers(0, 600)),
        st.builds(OffsetByteRequest, st.integers(0, 600)),
        st.builds(SuffixByteRequest, st.integers(0, 600)),
    ),
)
@example(LEAF_OBJECTS[0], RangeByteRequest(5, 3))
@example(LEAF_OBJECTS[0], OffsetByteRequest(10**6))
def test_local_file_reads_equal_obstore_reads(path, byte_range):
    """A local root is read with file I/O (inline from the page cache, else on a worker
    thread); an obstore instance with obstore: the same bytes either way."""
    via_obstore = Backend(obstore.store.LocalStore(str(HIVE)))
    want = asyncio.run(via_obstore.get(path, byte_range))
    for nowait in (local_module._NOWAIT, None):  # None: every read waits on a thread
        local = Backend(HIVE)
        assert local._local_root is not None
        saved, local_module._NOWAIT = local_module._NOWAIT, nowait
        try:
            got = asyncio.run(local.get(path, byte_range))
        finally:
            local_module._NOWAIT = saved
        assert bytes(got) == bytes(want)
        assert local.stats.total <= min(1, via_obstore.stats.total)  # past the end: no HEAD


@pytest.mark.parametrize("byte_range", [None, RangeByteRequest(0, 16), SuffixByteRequest(20),
                                        RangeByteRequest(8, 8)])
@pytest.mark.parametrize("local", [True, False], ids=["file-io", "obstore"])
def test_get_stat_gives_the_bytes_and_the_stat_of_one_request(local, byte_range):
    """``get_stat``: the bytes ``get`` gives and the stat ``stat`` gives (size, ETag,
    mtime), from one GET (an empty range: one HEAD)."""
    path = LEAF_OBJECTS[0]
    backend = Backend(HIVE if local else obstore.store.LocalStore(str(HIVE)))
    want_bytes = asyncio.run(backend.get(path, byte_range))
    want_stat = asyncio.run(backend.stat(path))
    backend.stats.reset()
    got = asyncio.run(backend.get_stat(path, byte_range))
    assert got is not None
    assert bytes(got[0]) == bytes(want_bytes) and got[1] == want_stat
    empty = isinstance(byte_range, RangeByteRequest) and byte_range.end <= byte_range.start
    assert dict(backend.stats.counts) == ({"head": 1} if empty else
                                          {"get" if byte_range is None else "get_range": 1})
    assert asyncio.run(backend.get_stat("no/such/object")) is None


@pytest.mark.parametrize("nowait", [local_module._NOWAIT, None], ids=["page-cache", "no-nowait"])
def test_a_page_cached_local_read_skips_the_cap_and_counts_once(monkeypatch, nowait):
    """A local object the page cache holds is read inline: one request counted, the
    progress told once, no slot of the concurrency cap taken; a missing one is counted
    too; where the inline read is impossible (no ``RWF_NOWAIT``), the read goes through
    the cap as before."""
    path = LEAF_OBJECTS[0]
    want = (HIVE / path).read_bytes()  # now in the page cache
    capped: list[str] = []
    real_call = Backend._call

    async def call(self, kind, *args, **kwargs):
        capped.append(kind)
        return await real_call(self, kind, *args, **kwargs)

    monkeypatch.setattr(Backend, "_call", call)
    monkeypatch.setattr(local_module, "_NOWAIT", nowait)
    backend = Backend(HIVE)
    ticks: list[int] = []
    backend.progress = ticks.append
    assert bytes(asyncio.run(backend.get(path))) == want
    data, stat = asyncio.run(backend.get_stat(path, SuffixByteRequest(4)))
    assert bytes(data) == want[-4:] and stat.size == len(want)
    assert dict(backend.stats.counts) == {"get": 1, "get_range": 1} and ticks == [1, 1]
    assert capped == ([] if nowait is not None else ["get", "get_range"])
    assert asyncio.run(backend.get("no/such/object")) is None  # a request made all the same
    assert dict(backend.stats.counts) == {"get": 2, "get_range": 1} and ticks == [1, 1, 1]


@pytest.mark.parametrize("path", ["../bare_versioned/morton_hive.json", "/etc/hostname",
                                  "a//b", "./morton_hive.json", "4/../morton_hive.json"])
def test_local_reads_refuse_paths_that_leave_the_root(path):
    with pytest.raises(ValueError, match="not a path below the hive root"):
        asyncio.run(Backend(HIVE).get(path))


@pytest.mark.parametrize("wait", [True, False])
def test_local_read_of_a_file_that_shrank_returns_only_its_bytes(tmp_path, monkeypatch, wait):
    """The local read fills an uninitialised buffer: when the file holds fewer bytes than its
    size said (it shrank between ``fstat`` and the read), only the bytes read come back,
    never the buffer's unwritten tail; the size stays the one stated, so callers see the
    shortfall."""
    path = tmp_path / "object"
    path.write_bytes(b"abc")
    real_fstat = local_module.os.fstat

    class Grown:
        def __init__(self, fd):
            self.st_size = real_fstat(fd).st_size + 4096

    monkeypatch.setattr(local_module.os, "fstat", Grown)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = local_module._read_open(fd, None, wait=wait)
    finally:
        os.close(fd)
    if not wait:  # the inline read gives up on a short read: the caller retries waiting
        assert got is None
        return
    assert got is not None
    data, info = got
    assert bytes(data) == b"abc"
    assert info.st_size == 4099


SIZES = [0, 1, 1737, local_module.mapped.PAGE - 1, local_module.mapped.PAGE,
         local_module.mapped.PAGE + 1, local_module.GUESS - 1, local_module.GUESS,
         local_module.GUESS + 1, 3 * local_module.GUESS + 5]


@pytest.mark.parametrize("nowait", [local_module._NOWAIT, None], ids=["page-cache", "no-nowait"])
def test_a_document_read_from_its_start_is_whole_at_every_size(tmp_path, monkeypatch, nowait):
    """A read from the start capped past the object's size (as documents are read) gives
    the whole object and its size; one that stops short of a page boundary, inside
    ``GUESS`` bytes, met the end of the file and needs no ``fstat``."""
    monkeypatch.setattr(local_module, "_NOWAIT", nowait)
    fstats: list[int] = []
    real_fstat = local_module.os.fstat

    def fstat(fd):
        fstats.append(fd)
        return real_fstat(fd)

    monkeypatch.setattr(local_module.os, "fstat", fstat)
    rng = np.random.default_rng(5)
    for size in SIZES:
        want = rng.integers(0, 256, size, np.uint8).tobytes()
        (tmp_path / f"doc{size}").write_bytes(want)
    backend = Backend(tmp_path)
    for size in SIZES:
        want = (tmp_path / f"doc{size}").read_bytes()
        fstats.clear()
        got = asyncio.run(backend.get_sized(f"doc{size}", RangeByteRequest(0, 10**9)))
        assert got is not None and bytes(got[0]) == want and got[1] == size
        guessed = size < local_module.GUESS and size % local_module.mapped.PAGE != 0
        assert (not fstats) == (guessed and nowait is not None), size
        got = asyncio.run(backend.get_sized(f"doc{size}", RangeByteRequest(0, size + 1)))
        assert got is not None and bytes(got[0]) == want and got[1] == size


def test_a_document_cut_short_at_a_page_boundary_is_not_taken_whole(tmp_path, monkeypatch):
    """An inline read that stops at a page boundary (the rest not in the page cache) says
    nothing of the file's end: the object is read whole all the same, never cut."""
    size = local_module.mapped.PAGE + 100
    want = bytes(range(256)) * (size // 256) + bytes(size % 256)
    (tmp_path / "doc").write_bytes(want)
    real_preadv = local_module.os.preadv

    def partly_cached(fd, buffers, offset, flags=0):
        if flags and offset == 0:  # inline: only the first page is in the page cache
            return real_preadv(fd, [buffers[0][:local_module.mapped.PAGE]], offset, flags)
        return real_preadv(fd, buffers, offset, flags)

    monkeypatch.setattr(local_module.os, "preadv", partly_cached)
    got = asyncio.run(Backend(tmp_path).get_sized("doc", RangeByteRequest(0, 10**9)))
    assert got is not None and bytes(got[0]) == want and got[1] == size


@pytest.mark.skipif(local_module._OPEN_NO_LINKS is None or local_module._NOWAIT is None,
                    reason="the one-pass read needs Linux's openat2 and RWF_NOWAIT")
def test_documents_read_in_one_pass_are_what_get_now_answers(tmp_path):
    """``documents_now`` answers for each document what ``get_now`` of its window does
    (bytes, ``None`` when missing), one ranged GET counted each, and stops at the first
    it cannot read so simply (a page-sized one, a link on its way, a directory): those
    are left to ``get_now``, which refuses a link out of the root or a path not below
    it."""
    from moczarr_store.hive.jsonio import DOCUMENT_WINDOW

    rng = np.random.default_rng(7)
    for size in (1, 1737, local_module.mapped.PAGE - 1, local_module.mapped.PAGE):
        (tmp_path / f"doc{size}").write_bytes(rng.integers(0, 256, size, np.uint8).tobytes())
    (tmp_path / "dir").mkdir()
    (tmp_path / "inside").symlink_to(tmp_path / "dir")
    (tmp_path / "dir" / "doc").write_bytes(b"{}")
    (tmp_path / "out").symlink_to("/etc")
    backend = Backend(tmp_path)
    simple = ["doc1", "missing", "doc1737", "dir/missing", f"doc{local_module.mapped.PAGE - 1}"]
    for stop in (f"doc{local_module.mapped.PAGE}", "inside/doc", "dir", "out/hostname"):
        backend.stats.reset()
        got = backend.documents_now([*simple, stop, "doc1"])
        assert dict(backend.stats.counts) == {"get_range": len(simple)}
        want = [backend.get_now(path, DOCUMENT_WINDOW) for path in simple]
        assert got == [None if w is None else bytes(w) for w in want], stop
        assert want[1] is None and want[3] is None
    assert bytes(backend.get_now("inside/doc", DOCUMENT_WINDOW)) == b"{}"
    with pytest.raises(OutsideRootError):
        backend.get_now("out/hostname", DOCUMENT_WINDOW)
    assert len(backend.documents_now(["doc1", "../doc1", "doc1"])) == 1
