"""chunking="span" (or a count k): k consecutive leaves per chunk along ``cells``, read
concurrently and joined; values equal moczarr's and the one-leaf-per-chunk view's."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import warnings

import google_crc32c
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, assert_values, fixture_roots, repoint
from support.hostile import pristine, pristine_references
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from moczarr_store import (
    ChunkReadError,
    HiveWarning,
    MocHiveStore,
    OptionError,
    OutsideRootError,
    TruncatedChunkError,
)
from moczarr_store.cli import build_parser, main
from moczarr_store.hive.leaves import LeafCache
from moczarr_store.io import buffers
from moczarr_store.io.backend import Backend
from moczarr_store.read import execute, plan
from moczarr_store.refs import export_refs
from moczarr_store.view import arrays

FIXTURE_NAMES = [root.name for root in fixture_roots()]
GROUPS = [(name, g) for name in FIXTURE_NAMES for g in pristine(name).groups]


def _quiet_group(store: MocHiveStore, path: str) -> zarr.Group:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported elsewhere
        return zarr.open_group(store, path=path, mode="r")


def _values(array: zarr.Array) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return array[...]


@pytest.mark.parametrize("chunking", [2, 3, "span"])
@pytest.mark.parametrize(("name", "group"), GROUPS, ids=[f"{n}-{g.path}" for n, g in GROUPS])
def test_span_values_are_moczarr_s_and_the_leaf_view_s(name, group, chunking):
    spanned = _quiet_group(MocHiveStore(FIXTURES / name, chunking=chunking), group.path)
    plain = _quiet_group(MocHiveStore(FIXTURES / name), group.path)
    morton = spanned["morton"][...]
    np.testing.assert_array_equal(morton, plain["morton"][...])
    np.testing.assert_array_equal(spanned["cell_ids"][...], plain["cell_ids"][...])
    for position, window in enumerate(group.windows or (None,)):
        ref = pristine_references(name)[(group.path, window)]
        rows = np.flatnonzero(np.isin(morton, ref.morton))
        np.testing.assert_array_equal(morton[rows], ref.morton)
        for field, want in ref.values.items():
            got = _values(spanned[field])
            assert got.dtype == want.dtype, field
            # warm, whole leaves of immutable versions are read straight into one buffer
            np.testing.assert_array_equal(_values(spanned[field]), got, err_msg=field)
            np.testing.assert_array_equal(got, _values(plain[field]), err_msg=field)
            got = got[position] if group.windows else got
            assert_values(got[rows], want, field)


@pytest.mark.parametrize("sphere", [False, True], ids=["covered", "sphere"])
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_a_span_locates_its_parts_as_each_part_alone_is_located(name, sphere):
    """``span_objects`` (one ``locate`` per span, its paths read in one pass) names for
    every part of every span chunk the place and the object ``located_object`` of that
    part alone names: every fixture, window and axis, past the domain's end included."""
    store = MocHiveStore(FIXTURES / name, chunking=3,
                         geometry="sphere" if sphere else "covered")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.open_group(store, mode="r")  # every level read
    spanned = [a for a in store.session.view.arrays.values()
               if isinstance(a, arrays.FieldArray) and a.span > 1]
    assert spanned or sphere  # a sphere of few nodes may leave a span nothing to join
    for array in spanned:
        for coords in itertools.islice(itertools.product(*map(range, array.grid)), 64):
            alone = [None if p is None else (p, *array.located_object(p))
                     for p in array.span_parts(coords)]
            assert array.span_objects(coords) == alone


def test_a_count_sets_the_leaves_per_chunk_and_the_coordinates_follow():
    store = MocHiveStore(FIXTURES / "sharded", chunking=2)
    level = zarr.open_group(store, path="atl06/o7", mode="r")
    cells = level.attrs.asdict()["morton_hive_store"]["cells_per_node"]
    for name in ("count", "h_mean", "morton", "cell_ids"):
        assert level[name].chunks == (2 * cells,), name
    ds = xr.open_zarr(store, group="atl06/o7")
    assert set(ds.chunks) == {"cells"}  # every variable on the same boundaries
    nodes = level.attrs.asdict()["morton_hive_store"]["nodes"]
    assert nodes == 3 and ds["count"].shape == (nodes * cells,)  # the last chunk is partial
    assert level["count"].nchunks == 2


def test_span_is_chosen_from_the_leaf_size(monkeypatch):
    store = MocHiveStore(FIXTURES / "bare_versioned", chunking="span")
    level = zarr.open_group(store, path="atl06/o7", mode="r")
    nodes = level.attrs.asdict()["morton_hive_store"]["nodes"]
    cells = level.attrs.asdict()["morton_hive_store"]["cells_per_node"]
    assert level["h_mean"].chunks == (nodes * cells,)  # tiny leaves: one chunk holds all
    leaf_bytes = cells * 8  # the largest leaf array (float64 or int64)
    monkeypatch.setattr(arrays, "SPAN_BYTES", 3 * leaf_bytes + 1)
    level = zarr.open_group(MocHiveStore(FIXTURES / "bare_versioned", chunking="span"),
                            path="atl06/o7", mode="r")
    assert level["h_mean"].chunks == (3 * cells,)


@pytest.mark.parametrize(("largest", "k"), [
    (0, 1),  # no numeric field: one leaf
    (4096 * 8, 16),  # zagg's grid: 16 leaves hold 512 KiB
    (4096 * 4, 32),  # 16 would hold 256 KiB: 32 reach 512 KiB
    (1024 * 8, 64),  # 512 KiB of 8 KiB leaves
    (65536 * 8, 16),  # 8 MiB of 512 KiB leaves
    (1 << 20, 8),  # 16 would hold 16 MiB: 8 MiB
    (3 << 20, 2),
    (9 << 20, 1),  # a leaf past 8 MiB: one
    (8, 4096),  # one-cell leaves: 65,536 for 512 KiB, at most 4,096
])
def test_auto_joins_16_leaves_more_under_512_kib_fewer_over_8_mib(largest, k):
    assert arrays.auto_leaves(largest) == k


def test_auto_s_leaf_count_sets_the_chunks_and_inspect_shows_it(monkeypatch, capsys):
    """Leaves of 64 cells (512 B of count): the leaf count, lowered to 2 with no byte
    floor, makes chunks of 2 leaves, values unchanged; inspect names the choice."""
    monkeypatch.setattr(arrays, "AUTO_LEAVES", 2)
    monkeypatch.setattr(arrays, "AUTO_MIN_BYTES", 1)
    store = MocHiveStore(FIXTURES / "sharded")
    level = zarr.open_group(store, path="atl06/o7", mode="r")
    assert level["count"].chunks == level["morton"].chunks == (2 * 64,)
    want = zarr.open_group(MocHiveStore(FIXTURES / "sharded", chunking="leaf"),
                           path="atl06/o7", mode="r")
    for name in ("count", "h_mean", "morton"):
        np.testing.assert_array_equal(level[name][:], want[name][:], err_msg=name)
    assert main(["inspect", str(FIXTURES / "sharded")]) == 0
    assert "chunking='auto': 2 leaves per chunk" in capsys.readouterr().out


def test_a_span_reads_each_leaf_once_as_the_leaf_view_does():
    """Requests on a cold and a warm full read: the same objects, however chunked."""
    counts = {}
    for chunking in ("leaf", 3):
        store = MocHiveStore(FIXTURES / "sharded", chunking=chunking)
        array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
        store.request_stats.reset()
        array[:]
        cold = store.request_stats.total
        store.request_stats.reset()
        array[:]  # warm: the parts are read from the page cache in one pass
        counts[chunking] = (cold, dict(store.request_stats.counts))
    assert counts[3] == counts["leaf"]
    assert counts[3][1] == {"get": 3}  # one GET per leaf


class _Queued(Backend):
    """Every read through the cap on requests in flight (none inline from the page cache),
    each in flight for a moment; the objects asked for, in the order asked, in ``made``."""

    made: list[str]

    def _now(self, *args):
        return None

    def documents_now(self, paths):
        return []

    async def _call(self, kind, coro_fn, *args, **kwargs):
        self.made.append(args[0])

        async def in_flight(*a, **k):
            await asyncio.sleep(0.001)  # the requests overlap
            return await coro_fn(*a, **k)

        return await super()._call(kind, in_flight, *args, **kwargs)


def test_a_span_asks_for_its_stamps_only_once_the_cap_has_room():
    """One request in flight at most, 3 spans planned at once: the first span's stamps
    fill the cap, so the last span asks for its stamp after the first span's chunks (it
    waited for room), not before every chunk as when all spans queue their stamps at once."""
    store = MocHiveStore(FIXTURES / "paged", chunking=2, max_concurrency=1)
    store.backend.__class__ = _Queued
    store.backend.made = made = []
    with zarr.config.set({"async.concurrency": 8}):
        array = zarr.open_array(store, path="atl06/o8/h_mean", mode="r")
        made.clear()
        got = array[:]
    want = zarr.open_array(MocHiveStore(FIXTURES / "paged"), path="atl06/o8/h_mean")[:]
    np.testing.assert_array_equal(got, want)
    stamps = [at for at, path in enumerate(made) if path.endswith(".zarr/zarr.json")]
    chunks = [at for at, path in enumerate(made) if "/h_mean/c/" in path]
    assert len(chunks) == 5 and len(stamps) >= 3  # (the opening read one stamp)
    assert stamps[-1] > chunks[0]


def test_a_span_planned_before_is_not_planned_again(monkeypatch):
    """A span planned with its stamps cached is kept by the session: read again, no part
    is planned again."""
    store = MocHiveStore(FIXTURES / "bare_versioned", chunking=3)
    key = "atl06/o7/h_mean/c/1"
    asyncio.run(plan.plan_key(store.session, key))  # reads the stamps
    first = asyncio.run(plan.plan_key(store.session, key))  # planned from cached stamps
    assert isinstance(first, plan.Span) and len(first.parts) == 3
    planned = []
    real = plan.plan_chunk
    monkeypatch.setattr(plan, "plan_chunk", lambda *a, **k: planned.append(a) or real(*a, **k))
    assert asyncio.run(plan.plan_key(store.session, key)) == first and planned == []


def test_kept_span_plans_are_let_go_when_one_more_would_pass_the_limit():
    kept = plan.SpanPlans(limit=5)

    def span(parts: int):
        return plan._KeptSpan(None, (None,) * parts, ())

    kept.put(("a", (0,)), span(3))
    kept.put(("a", (0,)), span(3))  # planned again: counted once
    kept.put(("a", (1,)), span(2))
    assert kept.get(("a", (0,))) is not None and kept.get(("a", (1,))) is not None
    kept.put(("a", (2,)), span(1))  # 6 parts would not fit: the others go
    assert kept.get(("a", (0,))) is None and kept.get(("a", (1,))) is None
    assert kept.get(("a", (2,))) is not None


def test_a_span_is_planned_again_once_a_leaf_s_stamp_is_read_again(hive_copy):
    """A writer re-points one leaf of a span after it was read; once the session reads
    that leaf's stamp again (here: every stamp let go), the span serves the new version,
    as a new store does, not the plan it made under the old stamp."""
    root = hive_copy("bare_versioned")
    store = MocHiveStore(root, chunking=3)
    array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
    before = array[:]
    span = asyncio.run(plan.plan_key(store.session, "atl06/o7/h_mean/c/0"))
    repoint(root, span.parts[1], 1.0)
    store.session.leaves.clear()
    after = array[:]
    want = zarr.open_array(MocHiveStore(root, chunking=3), path="atl06/o7/h_mean", mode="r")[:]
    assert not np.array_equal(after, before, equal_nan=True)
    assert_values(after, want, "h_mean")


@pytest.mark.parametrize(("name", "chunking", "path", "at"), [
    ("sharded", 3, "atl06/o7/h_mean", 1),  # its warm span read straight into one buffer
    ("paged", 2, "atl06/o8/h_mean", 2),  # leaves 4442 and 4443: mapped from the page cache
])
def test_a_link_out_of_the_root_in_a_warm_span_is_refused_naming_it(hive_copy, tmp_path,
                                                                     name, chunking, path, at):
    root = hive_copy(name)
    store = MocHiveStore(root, chunking=chunking)
    array = zarr.open_array(store, path=path, mode="r")
    array[:]  # stamps and leaf metadata known: the next read takes the one-pass path
    array[:]  # (and maps the spans it can)
    shard = sorted(root.rglob("h_mean/c/0"))[at]
    outside = tmp_path / "outside"
    outside.write_bytes(shard.read_bytes())
    shard.unlink()
    shard.symlink_to(outside)
    with pytest.raises(OutsideRootError, match=re.escape(shard.relative_to(root).as_posix())):
        array[:]


def test_a_missing_leaf_in_a_span_reads_as_fill_with_one_warning(hive_copy):
    root = hive_copy("sharded")
    gone_leaf = root / "4/4/4/1/2/44412.zarr"  # nodes: 44411, 44412, -41133
    shutil.rmtree(gone_leaf)  # the middle leaf of the one span is gone
    store = MocHiveStore(root, chunking=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        count = zarr.open_array(store, path="atl06/o7/count", mode="r")[:]
    hive_warnings = [w for w in caught if issubclass(w.category, HiveWarning)]
    assert len(hive_warnings) == 1
    assert "44412.zarr" in str(hive_warnings[0].message)
    ref = zarr.open_array(MocHiveStore(FIXTURES / "sharded"), path="atl06/o7/count", mode="r")[:]
    cells = len(ref) // 3
    gone = slice(cells, 2 * cells)
    assert (count[gone] == 0).all() and ref[gone].any()
    np.testing.assert_array_equal(np.delete(count, np.r_[gone]), np.delete(ref, np.r_[gone]))


@pytest.mark.parametrize("warm", [False, True])
def test_a_damaged_leaf_in_a_span_fails_naming_it(hive_copy, warm):
    root = hive_copy("sharded")
    store = MocHiveStore(root, chunking=3)
    array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
    if warm:  # stamps and leaf metadata known: the next read goes straight to one buffer
        array[:]
    shard = sorted(root.rglob("h_mean/c/0"))[2]
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises((TruncatedChunkError, ChunkReadError),
                       match=re.escape(shard.relative_to(root).as_posix())):
        array[:]


LEAVES = ("4/4/4/1/1/44411.zarr", "4/4/4/1/2/44412.zarr", "-4/1/1/3/3/-41133.zarr")  # in order


def _write_shard(path, values: np.ndarray, order=range(16), dtype="<f4") -> None:
    """A shard object of 16 inner chunks of 4 float32 values (index at its end, crc32c),
    the inner chunks stored in ``order``, the index naming where each one is."""
    inner = [values[4 * i : 4 * i + 4].astype(dtype).tobytes() for i in range(16)]
    rows, payload = np.zeros((16, 2), "<u8"), b""
    for i in order:
        rows[i] = (len(payload), len(inner[i]))
        payload += inner[i]
    index = rows.tobytes()
    path.write_bytes(payload + index + google_crc32c.value(index).to_bytes(4, "little"))


@pytest.fixture
def full_span(hive_copy):
    """``sharded`` with every ``h_mean`` shard rewritten whole and in order (as zarr writes
    a full shard), so that a warm span of its 3 leaves is read straight into one buffer;
    returns the root, the array and the values written, in the leaves' order."""
    root = hive_copy("sharded")
    want = np.arange(3 * 64, dtype="<f4") + 0.5
    for at, leaf in enumerate(LEAVES):
        (shard,) = (root / leaf).glob("run-*/7/h_mean/c/0")
        _write_shard(shard, want[64 * at : 64 * (at + 1)])
    array = zarr.open_array(MocHiveStore(root, chunking=3), path="atl06/o7/h_mean", mode="r")
    np.testing.assert_array_equal(array[:], want)  # cold: leaf metadata read with each leaf
    return root, array, want


def _shard(root, at: int):
    return next((root / LEAVES[at]).glob("run-*/7/h_mean/c/0"))


def test_a_warm_span_of_whole_shards_is_read_straight_into_one_buffer(full_span, monkeypatch):
    _root, array, want = full_span
    joined = []
    read_cached_span = execute.read_cached_span
    monkeypatch.setattr(execute, "read_cached_span",
                        lambda *args: joined.append(read_cached_span(*args)) or joined[-1])
    np.testing.assert_array_equal(array[:], want)
    assert len(joined) == 1 and joined[0] is not None


def _span_plan(store: MocHiveStore, key: str):
    """The plan of span chunk ``key`` and its parts' fill bytes."""
    found = asyncio.run(plan.plan_key(store.session, key))
    assert isinstance(found, plan.Span)
    return found, store.session.view.arrays[found.array].part_fill


def test_a_warm_span_takes_the_fast_path_only_while_each_leaf_s_encoding_is_known(full_span):
    """What a span's plans decide is kept per plan; whether each leaf's encoding is
    established is looked up on every read: a leaf whose metadata the session let go is
    read the general way (where its encoding is established again)."""
    root, _array, want = full_span
    store = MocHiveStore(root, chunking=3)
    array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
    np.testing.assert_array_equal(array[:], want)
    span, fill = _span_plan(store, "atl06/o7/h_mean/c/0")
    assert execute.read_cached_span(store.session, span.parts, fill) is not None
    again, _ = _span_plan(store, "atl06/o7/h_mean/c/0")
    assert again.parts is span.parts  # planned once: its layout is kept
    metas = store.session.leaf_metas
    kept = {key: metas.peek(key) for key in (part.meta for part in span.parts)}
    metas.clear()
    assert execute.read_cached_span(store.session, span.parts, fill) is None
    for key, value in kept.items():
        metas.put(key, value)
    assert execute.read_cached_span(store.session, span.parts, fill) is not None
    np.testing.assert_array_equal(array[:], want)


def test_kept_span_layouts_are_let_go_past_the_span_parts_limit(full_span):
    from moczarr_store import config, state
    from moczarr_store.read import fastpath

    state.reset()  # none kept from the fixture's reads
    root, _array, want = full_span
    with config.set({"cache.span_parts": 4}):  # one span of 3 parts at a time
        for chunking in (3, 2):
            array = zarr.open_array(MocHiveStore(root, chunking=chunking),
                                    path="atl06/o7/h_mean", mode="r")
            np.testing.assert_array_equal(array[:], want)
            np.testing.assert_array_equal(array[:], want)
            kept = fastpath.LAYOUTS()
            assert 0 < kept.parts <= 4
            assert sum(len(parts) for parts, _ in kept.kept.values()) == kept.parts


def test_a_new_store_s_first_read_of_a_span_is_served_in_one_pass(full_span, monkeypatch):
    """A new store's first read of a local span: its leaves' stamps and array metadata are
    read from the page cache while it is planned and served, without a task per leaf, and
    its chunks in one pass; each object is read once, as a read leaf by leaf reads it."""
    root, _array, want = full_span
    general, resolved = [], []
    established, resolve = execute.read_leaf, LeafCache.resolve
    monkeypatch.setattr(execute, "read_leaf",
                        lambda *args: general.append(args) or established(*args))
    monkeypatch.setattr(LeafCache, "resolve",
                        lambda *args: resolved.append(args) or resolve(*args))
    counts = {}
    for chunking in (3, "leaf"):
        store = MocHiveStore(root, chunking=chunking)
        array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
        store.request_stats.reset()
        general.clear(), resolved.clear()  # the open resolves the template leaf's stamp
        np.testing.assert_array_equal(array[:], want)
        counts[chunking] = dict(store.request_stats.counts)
        if chunking == 3:
            assert general == [] and resolved == []
    # 3 chunks; the stamp and array document of the 2 leaves the open did not read
    assert counts[3] == counts["leaf"] == {"get_range": 4, "get": 3}


def test_a_leaf_array_s_absent_metadata_is_read_once_in_a_first_read(full_span):
    """A leaf whose stamp hashes an array its version no longer holds (the array removed):
    a new store's first read of the span reads the absent document once and no chunk of
    it, warns naming the leaf, and serves it as the fill value; leaf by leaf, the read
    learns the same with one request more (the absent chunk)."""
    root, _array, want = full_span
    shutil.rmtree(_shard(root, 1).parents[1])  # the middle leaf's h_mean
    want = want.copy()
    want[64:128] = np.nan
    counts = {}
    for chunking in (3, "leaf"):
        store = MocHiveStore(root, chunking=chunking)
        array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
        store.request_stats.reset()
        with pytest.warns(HiveWarning, match=f"{LEAVES[1]}.* has no metadata for it"):
            np.testing.assert_array_equal(array[:], want)
        counts[chunking] = dict(store.request_stats.counts)
    # 2 stamps, 2 array documents, the middle leaf's stamp and its group read again
    # (did it move?), and the 2 chunks that exist
    assert counts[3] == {"get_range": 6, "get": 2}
    assert counts["leaf"] == {"get_range": 6, "get": 3}


@pytest.mark.parametrize("chunking", ["leaf", 2])
def test_a_chunk_a_caller_holds_is_not_overwritten_by_the_next_read(full_span, monkeypatch,
                                                                    chunking):
    """Warm local objects are read into buffers taken again once nothing refers to them
    (a whole shard in order is served as a view of its read, a warm span as its one
    buffer): chunks a caller still holds keep their bytes however many reads follow; let
    go, their memory serves the next reads (these objects are small: pooled all the same)."""
    monkeypatch.setattr(buffers, "POOLED_MIN", 1)
    root, _array, want = full_span
    store = MocHiveStore(root, chunking=chunking)
    array = zarr.open_array(store, path="atl06/o7/h_mean", mode="r")
    np.testing.assert_array_equal(array[:], want)  # warm
    proto = default_buffer_prototype()
    keys = [f"atl06/o7/h_mean/c/{i}" for i in range(array.nchunks)]
    rows = array.chunks[0]

    def chunk(key: str):
        return asyncio.run(store.get(key, proto))

    def address(buf) -> int:
        return buf.as_numpy_array().__array_interface__["data"][0]

    held = [chunk(key) for key in keys + keys]
    assert len({address(b) for b in held}) == len(held)  # every chunk held: its own memory
    for _ in range(2):
        for key in keys:
            chunk(key)
    for at, buf in enumerate(held):
        part = want[rows * (at % len(keys)) :][:rows]
        np.testing.assert_array_equal(buf.as_numpy_array().view("<f4")[: len(part)], part)
    pool = store.backend.buffers
    kept = {b.__array_interface__["data"][0] for same in pool._kept.values() for b in same}
    del held
    assert {address(chunk(key)) for key in keys} <= kept  # no new memory


def test_a_new_store_reads_each_leaf_of_a_span_under_its_own_array_document(full_span):
    """A first read judges the leaves' array documents in turn (one byte-identical to the
    one before is judged as it was): a leaf between two others, big-endian where they are
    little-endian, is read under its own document, not its neighbour's."""
    root, _array, want = full_span
    _write_shard(_shard(root, 1), want[64:128], dtype=">f4")
    doc = _shard(root, 1).parents[1] / "zarr.json"
    meta = json.loads(doc.read_text())
    meta["codecs"][0]["configuration"]["codecs"][0]["configuration"]["endian"] = "big"
    doc.write_text(json.dumps(meta, indent=2))
    for chunking in (3, "leaf"):
        array = zarr.open_array(MocHiveStore(root, chunking=chunking), path="atl06/o7/h_mean",
                                mode="r")
        np.testing.assert_array_equal(array[:], want, err_msg=str(chunking))


def test_a_warm_span_serves_a_shard_stored_out_of_order_as_its_index_says(full_span):
    """The same size, the inner chunks in reverse order: read straight into the span's
    buffer, the payload would be the wrong way round; its index is not the in-order
    layout's, so the shard is read as its index says."""
    root, array, want = full_span
    _write_shard(_shard(root, 1), want[64:128], order=reversed(range(16)))
    np.testing.assert_array_equal(array[:], want)


def test_a_warm_span_refuses_a_shard_whose_index_lies_naming_it(full_span):
    root, array, want = full_span
    shard = _shard(root, 0)
    raw = bytearray(shard.read_bytes())
    length = int.from_bytes(raw[264:272], "little")  # inner chunk 0 claims one byte more
    raw[264:272] = (length + 1).to_bytes(8, "little")  # (aliasing entries are valid)
    raw[-4:] = google_crc32c.value(bytes(raw[256:-4])).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))
    with pytest.raises(TruncatedChunkError, match=re.escape(shard.relative_to(root).as_posix())):
        array[:]


def test_a_warm_span_refuses_a_cut_shard_naming_it(full_span):
    root, array, _want = full_span
    shard = _shard(root, 2)
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises((TruncatedChunkError, ChunkReadError),
                       match=re.escape(shard.relative_to(root).as_posix())):
        array[:]


@pytest.mark.parametrize("geometry", ["covered", "sphere"])
def test_a_byte_range_of_a_span_is_the_same_range_of_its_bytes(geometry):
    store = MocHiveStore(FIXTURES / "sharded", chunking=3, geometry=geometry)
    proto = default_buffer_prototype()
    count = zarr.open_array(store, path="atl06/o7/count", mode="r")
    first = int(np.flatnonzero(count[:])[0]) // count.chunks[0]  # a chunk holding a leaf
    key = f"atl06/o7/h_mean/c/{first}"
    whole = asyncio.run(store.get(key, proto))
    assert whole is not None
    whole_bytes = whole.to_bytes()
    part = asyncio.run(store.get(key, proto, RangeByteRequest(100, 700)))
    assert part is not None and part.to_bytes() == whole_bytes[100:700]
    assert asyncio.run(store.getsize(key)) == len(whole_bytes)


def test_span_on_the_sphere_matches_the_sphere_view():
    spanned = MocHiveStore(FIXTURES / "sharded", chunking=4, geometry="sphere")
    plain = MocHiveStore(FIXTURES / "sharded", geometry="sphere")
    a = zarr.open_array(spanned, path="atl06/o7/count", mode="r")
    b = zarr.open_array(plain, path="atl06/o7/count", mode="r")
    rows = np.flatnonzero(b[:] != b.fill_value)
    window = slice(max(rows[0] - 100, 0), rows[-1] + 100)
    np.testing.assert_array_equal(a[window], b[window])
    np.testing.assert_array_equal(
        zarr.open_array(spanned, path="atl06/o7/cell_ids", mode="r")[window],
        zarr.open_array(plain, path="atl06/o7/cell_ids", mode="r")[window],
    )


@pytest.mark.parametrize("bad", [0, -2, True, "spans", 1.5])
def test_a_bad_chunking_is_refused_naming_the_choices(bad):
    with pytest.raises(OptionError, match="chunking"):
        MocHiveStore(FIXTURES / "sharded", chunking=bad)


def test_references_refuse_a_span_with_the_reason(tmp_path):
    with pytest.raises(OptionError, match="one object"):
        export_refs(str(FIXTURES / "sharded"), "mdim-refs", str(tmp_path / "refs.sqlite"),
                    chunking="span")
    assert not (tmp_path / "refs.sqlite").exists()


@pytest.mark.parametrize(("given", "chunking"), [("4", 4), ("span", "span"), ("inner", "inner")])
def test_serve_takes_a_chunking_or_a_count_of_leaves(given, chunking):
    args = build_parser().parse_args(["serve", str(FIXTURES / "sharded"), "--chunking", given])
    assert args.chunking == chunking


@pytest.mark.parametrize("given", ["0", "-3", "leafs"])
def test_serve_refuses_a_bad_chunking_naming_the_choices(given, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", str(FIXTURES / "sharded"), "--chunking", given])
    assert "expected one of auto, shard, leaf, inner, span" in capsys.readouterr().err
