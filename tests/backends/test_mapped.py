"""Spans mapped from the page cache (:mod:`moczarr_store.io.mapped`): the data of their files
side by side, served again only while each file is the one mapped, unmapped once nothing
refers to them, and never a span that cannot be mapped exactly."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from pathlib import Path

import numpy as np
import pytest
import zarr
from support.hives import FIXTURES, reversed_shard
from zarr.core.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore, OutsideRootError, config, mapped

pytestmark = pytest.mark.skipif(not mapped.available(),
                                reason="spans are mapped on Linux only (mmap, mincore, "
                                "RWF_NOWAIT); elsewhere they are read")

PAGE = mapped.PAGE
INDEX = b"index of the shard"


@pytest.fixture
def tuned():
    """``tuned({key: value})`` sets ``moczarr_store.config`` keys for the test's duration."""
    with contextlib.ExitStack() as stack:
        yield lambda keys: stack.enter_context(config.set(keys))


def _files(root: Path, n: int, pages: int = 2, index: bytes = INDEX) -> list[bytes]:
    """``n`` objects of ``pages`` pages of data followed by ``index``; their data."""
    rng = np.random.default_rng(n)
    data = [rng.integers(0, 256, pages * PAGE, dtype=np.uint8).tobytes() for _ in range(n)]
    for at, payload in enumerate(data):
        (root / f"o{at}").write_bytes(payload + index)
    return data


def _span(root: Path, n: int, pages: int = 2, index: bytes = INDEX, names=None):
    names = names or [f"o{at}" for at in range(n)]
    parts = [(name, index) for name in names]
    return mapped.span(tuple(names), parts, pages * PAGE,
                       lambda path: os.open(root / path, os.O_RDONLY),
                       lambda path: mapped.identity(os.stat(root / path)))


def _mapped_files() -> str:
    return Path("/proc/self/maps").read_text()


def test_files_are_mapped_side_by_side_read_only_and_kept(tmp_path):
    data = _files(tmp_path, 3)
    view, opened = _span(tmp_path, 3)
    assert bytes(view) == b"".join(data) and view.readonly and opened == 3
    assert all(str(tmp_path / f"o{at}") in _mapped_files() for at in range(3))
    again, opened = _span(tmp_path, 3)
    assert opened == 0 and bytes(again) == b"".join(data)  # kept: nothing opened


def test_mapping_is_turned_off_by_a_configuration_key(tmp_path, tuned):
    """``moczarr_store.config.set({"mapped.bytes": 0})``: spans are read, not mapped."""
    _files(tmp_path, 2)
    tuned({"mapped.bytes": 0})
    assert _span(tmp_path, 2) is None and not mapped.KEPT().spans


def test_a_file_changed_after_it_was_mapped_is_mapped_and_checked_again(tmp_path):
    data = _files(tmp_path, 3)
    _span(tmp_path, 3)
    new = bytes(reversed(data[1]))
    (tmp_path / "o1").write_bytes(new + INDEX)  # same size, other bytes
    view, opened = _span(tmp_path, 3)
    assert opened == 3 and bytes(view) == data[0] + new + data[2]
    (tmp_path / "o2").write_bytes(data[2] + INDEX.upper())  # its index is not the layout's
    assert _span(tmp_path, 3) is None
    assert not mapped.KEPT().spans


@pytest.mark.parametrize("defect", ["index", "size", "unpaged", "refused"])
def test_a_span_that_cannot_be_mapped_exactly_is_not(tmp_path, defect):
    _files(tmp_path, 3, index=INDEX.upper() if defect == "index" else INDEX)
    if defect == "size":
        with open(tmp_path / "o2", "ab") as grown:
            grown.write(b"!")
    parts = [(f"o{at}", INDEX) for at in range(3)]
    step = 2 * PAGE - 8 if defect == "unpaged" else 2 * PAGE

    def refuse(path: str) -> int:
        raise OutsideRootError(f"{path}: refused")

    def open_object(path: str) -> int:
        return os.open(tmp_path / path, os.O_RDONLY)

    got = mapped.span("key", parts, step, refuse if defect == "refused" else open_object,
                      lambda path: None)
    assert got is None and not mapped.KEPT().spans


def test_a_span_let_go_stays_readable_while_held_and_is_unmapped_once_released(tmp_path,
                                                                               tuned):
    tuned({"mapped.bytes": 2 * 4 * PAGE})  # two spans of 2 x 2 pages
    data = _files(tmp_path, 6)
    held, _ = _span(tmp_path, 2, names=["o0", "o1"])
    _span(tmp_path, 2, names=["o2", "o3"])
    _span(tmp_path, 2, names=["o4", "o5"])  # the least recently used span is let go
    assert ("o0", "o1") not in mapped.KEPT().spans and len(mapped.KEPT().spans) == 2
    assert bytes(held) == data[0] + data[1] and str(tmp_path / "o0") in _mapped_files()
    del held
    gc.collect()
    assert str(tmp_path / "o0") not in _mapped_files()
    assert str(tmp_path / "o4") in _mapped_files()


def _resident_kb(path: Path) -> int:
    """The resident memory of the process's mapping of ``path`` (kB, from smaps)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for at, line in enumerate(lines):
        if line.endswith(str(path)):
            return next(int(row.split()[1]) for row in lines[at + 1 :]
                        if row.startswith("Rss:"))
    raise AssertionError(f"{path} is not mapped")


def test_pages_of_spans_served_before_the_last_are_handed_back_their_mappings_kept(
        tmp_path, tuned):
    tuned({"mapped.touched_bytes": 4 * PAGE})  # one span of 2 x 2 pages
    data = _files(tmp_path, 4)
    first, _ = _span(tmp_path, 2, names=["o0", "o1"])
    assert bytes(first) == data[0] + data[1] and _resident_kb(tmp_path / "o0") > 0
    second, _ = _span(tmp_path, 2, names=["o2", "o3"])
    assert bytes(second) == data[2] + data[3]
    assert _resident_kb(tmp_path / "o0") == 0 and _resident_kb(tmp_path / "o2") > 0
    again, opened = _span(tmp_path, 2, names=["o0", "o1"])  # still mapped: no open
    assert opened == 0 and bytes(again) == bytes(first) == data[0] + data[1]
    assert _resident_kb(tmp_path / "o0") > 0 and _resident_kb(tmp_path / "o2") == 0


def test_no_more_files_are_kept_mapped_than_the_limit(tmp_path, tuned):
    tuned({"mapped.objects": 4})
    _files(tmp_path, 6)
    for names in (["o0", "o1", "o2"], ["o3", "o4", "o5"]):
        assert _span(tmp_path, 3, names=names) is not None
    assert list(mapped.KEPT().spans) == [("o3", "o4", "o5")] and mapped.KEPT().files == 3


def test_pages_not_in_the_page_cache_are_read_not_mapped(tmp_path):
    _files(tmp_path, 2)
    for at in range(2):
        fd = os.open(tmp_path / f"o{at}", os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 2 * PAGE, os.POSIX_FADV_DONTNEED)  # its data, not its index
        os.close(fd)
    assert _span(tmp_path, 2) is None  # the event loop would wait on the disk
    assert not mapped.KEPT().spans


# -- through the store: ``paged`` (leaves of 1,024 cells in 16 inner chunks; 4 dense, 1 not) ---

ARRAY = "atl06/o8/h_mean"
MAPPED_CHUNK = 1  # chunking=2: (4411, 4441), (4442, 4443), (4444, past the end); 4411 is sparse


def _warm(root) -> tuple[MocHiveStore, zarr.Array, np.ndarray]:
    store = MocHiveStore(root, chunking=2)
    array = zarr.open_array(store, path=ARRAY, mode="r")
    want = zarr.open_array(MocHiveStore(FIXTURES / "paged"), path=ARRAY, mode="r")[:]
    np.testing.assert_array_equal(array[:], want)  # cold: leaf metadata read with each leaf
    return store, array, want


def test_a_warm_span_of_whole_page_sized_shards_is_mapped_and_read_again_with_no_request():
    store, array, want = _warm(FIXTURES / "paged")
    np.testing.assert_array_equal(array[:], want)  # warm: mapped
    assert len(mapped.KEPT().spans) == 1
    store.request_stats.reset()
    got = asyncio.run(store.get(f"{ARRAY}/c/{MAPPED_CHUNK}", default_buffer_prototype()))
    assert store.request_stats.total == 0
    rows = array.chunks[0]
    np.testing.assert_array_equal(got.as_numpy_array().view("<f4"),
                                  want[rows * MAPPED_CHUNK : rows * (MAPPED_CHUNK + 1)])


def test_a_new_store_serves_a_span_another_store_of_the_process_mapped():
    """A span kept mapped is the process's: a new store's first read of it checks each
    file (one ``stat``) and maps, or opens, none of its objects again."""
    _warm(FIXTURES / "paged")
    assert len(mapped.KEPT().spans) == 1
    store = MocHiveStore(FIXTURES / "paged", chunking=2)
    array = zarr.open_array(store, path=ARRAY, mode="r")
    store.request_stats.reset()
    got = asyncio.run(store.get(f"{ARRAY}/c/{MAPPED_CHUNK}", default_buffer_prototype()))
    assert dict(store.request_stats.counts) == {"get_range": 4}  # 2 stamps, 2 array docs
    assert len(mapped.KEPT().spans) == 1
    rows = array.chunks[0]
    want = zarr.open_array(MocHiveStore(FIXTURES / "paged"), path=ARRAY, mode="r")[:]
    np.testing.assert_array_equal(got.as_numpy_array().view("<f4"),
                                  want[rows * MAPPED_CHUNK : rows * (MAPPED_CHUNK + 1)])


def test_an_unpickled_copy_reads_spans_into_buffers_and_serve_maps_as_its_store():
    """A copy is read where it was sent, often a dask worker whose memory monitor counts a
    mapped span's pages and pauses the worker at its limit (a worker limited to 1 GiB
    paused at 839 MiB on its second compute of 1.6 GB): copies never map, however warm.
    ``serve``'s later generations, copies made in the serving process, map as its store."""
    import pickle

    from moczarr_store.serve.generations import store_factory

    store, array, want = _warm(FIXTURES / "paged")
    mapped.release()  # the store's own first read mapped (its leaves' metadata is page-cached)
    shipped = pickle.dumps(store)
    for _ in range(2):  # the second copy knows every version's metadata: warm
        copy = pickle.loads(shipped)
        copied = zarr.open_array(copy, path=ARRAY, mode="r")
        np.testing.assert_array_equal(copied[:], want)
        np.testing.assert_array_equal(copied[:], want)
    assert len(mapped.KEPT().spans) == 0
    np.testing.assert_array_equal(array[:], want)  # the store itself: warm, mapped
    assert len(mapped.KEPT().spans) == 1
    mapped.release()
    again, _ = store_factory(store, {})
    served = zarr.open_array(again(), path=ARRAY, mode="r")
    for _ in range(2):  # cold, then warm: mapped
        np.testing.assert_array_equal(served[:], want)
    assert len(mapped.KEPT().spans) == 1


def _leaf_shard(root: Path, leaf: str) -> Path:
    return next(root.glob(f"4/4/4/*/{leaf}.zarr/run-*/8/h_mean/c/0"))


def test_a_mapped_shard_rewritten_out_of_order_is_read_as_its_index_says(hive_copy):
    """The same size, its inner chunks stored the other way round: a span kept mapped
    would serve them in the wrong order; the changed file is checked again."""
    root = hive_copy("paged")
    _store, array, want = _warm(root)
    array[:]  # mapped
    shard = _leaf_shard(root, "4443")
    raw = shard.read_bytes()
    shard.write_bytes(reversed_shard(raw))
    assert shard.read_bytes() != raw
    np.testing.assert_array_equal(array[:], want)


def test_a_span_a_local_reader_mapped_or_checked_is_checked_again_with_a_stat_each(
        tmp_path, monkeypatch):
    """A local reader checks a kept span's files through the directories it knows: once
    it has mapped the span, or checked it once (a span another reader mapped), each file
    costs one ``stat`` and no open."""
    from moczarr_store.io import local

    (tmp_path / "a" / "b").mkdir(parents=True)
    data = _files(tmp_path / "a" / "b", 3)
    parts = [(f"a/b/o{at}", INDEX) for at in range(3)]
    opens: list[bytes] = []
    real = local._OPEN_NO_LINKS
    if real is not None:
        def counted(full: bytes, path_only: bool = False) -> int:
            opens.append(full)
            return real(full, path_only)

        monkeypatch.setattr(local, "_OPEN_NO_LINKS", counted)
    for first_opens in (3, 0):  # this reader maps the span; the next finds it kept
        reader = local.LocalReader(str(tmp_path))
        view, opened = reader.mapped_span(parts, 2 * PAGE)
        assert bytes(view) == b"".join(data) and opened == first_opens
        opens.clear()
        view, opened = reader.mapped_span(parts, 2 * PAGE)
        assert bytes(view) == b"".join(data) and opened == 0 and opens == []
