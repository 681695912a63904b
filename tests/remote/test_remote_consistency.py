"""A leaf replaced (new ``current`` pointer) or deleted while a dataset is open.

Stamps are read once per store object and cached (``LeafCache``: an LRU of 262,144
leaves, shared by the store's read-only copies, never pickled). So an open store keeps
reading the version its stamp named when it was read; a new store (or an unpickled
copy, e.g. on a dask worker) reads the stamps afresh. One chunk is one GET of one
version's object, so a chunk is never a mix of two versions.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import pickle
import shutil
import threading
import warnings

import numpy as np
import pytest
import xarray as xr
from support.servers import FIXTURES, PREFIX, s3_options
from zarr.buffer import default_buffer_prototype

from moczarr_store import HiveWarning, MocHiveStore, session

pytest_plugins = ["support.servers"]

LEAF = "4/4/4/1/1/2/444112.zarr"
NEW = "run-baf8816779f64e76bf65534fbb24470f-d06b6ae2"  # `current` in the fixture
OLD = "run-ead6688f2fc0493fb9a8235e9b8ba3a9-2572ab37"  # the version it replaced
GROUP = "atl06/o7"
_copies = itertools.count()


def _stamp(current: str) -> bytes:
    meta = json.loads((FIXTURES / "bare_versioned" / LEAF / "zarr.json").read_bytes())
    meta["attributes"]["morton_hive_commit"]["current"] = current
    return json.dumps(meta).encode()


@pytest.fixture
def hive(s3_server):
    """A private copy of ``bare_versioned`` on the S3 server: ``(key prefix, store factory)``."""
    prefix = f"{PREFIX}/mutable-{next(_copies)}/bare_versioned"
    s3_server.upload_tree(FIXTURES / "bare_versioned", prefix)

    def open_store(**kwargs):
        return MocHiveStore(f"s3://hive/{prefix}", storage_options=s3_options(s3_server.url),
                            **kwargs)

    return prefix, open_store


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """Local reads of the fixture as it is (``NEW``) and with the pointer flipped (``OLD``)."""
    root = tmp_path_factory.mktemp("flipped") / "bare_versioned"
    shutil.copytree(FIXTURES / "bare_versioned", root)
    (root / LEAF / "zarr.json").write_bytes(_stamp(OLD))
    new, old = MocHiveStore(FIXTURES / "bare_versioned"), MocHiveStore(root)
    return {
        NEW: xr.open_zarr(new, group=GROUP).load(),
        OLD: xr.open_zarr(old, group=GROUP).load(),
        "stores": {NEW: new, OLD: old},
    }


def _load(store):
    return xr.open_zarr(store, group=GROUP).load()


def _assert_values(got, want):
    for name in [*want.data_vars, "morton", "cell_ids"]:
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_the_two_versions_differ(versions):
    assert not np.array_equal(versions[NEW]["count"].values, versions[OLD]["count"].values)


def test_pointer_flip_while_open_keeps_the_version_the_stamp_named(s3_server, hive, versions):
    prefix, open_store = hive
    store = open_store()
    _assert_values(_load(store), versions[NEW])
    s3_server.put(f"{prefix}/{LEAF}/zarr.json", _stamp(OLD))  # a writer swaps the pointer
    before = len(s3_server.log)
    _assert_values(_load(store), versions[NEW])  # cached stamp: still the version it named
    assert not any(e.path.endswith(f"{LEAF}/zarr.json") for e in s3_server.log[before:])
    _assert_values(_load(open_store()), versions[OLD])  # a new store reads the new stamp
    _assert_values(_load(pickle.loads(pickle.dumps(store))), versions[OLD])  # so does a copy


def test_pointer_flip_then_cleanup_while_open_reads_the_new_version(s3_server, hive, versions):
    """The version the cached stamp names is removed after the swap (a writer's cleanup):
    the store reads the stamp again, once, and serves the version it names now."""
    prefix, open_store = hive
    store = open_store()
    _assert_values(_load(store), versions[NEW])
    s3_server.put(f"{prefix}/{LEAF}/zarr.json", _stamp(OLD))  # the swap
    for key in s3_server.keys(f"{prefix}/{LEAF}/{NEW}/"):  # the cleanup
        s3_server.delete(key)
    before = len(s3_server.log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)
        _assert_values(_load(store), versions[OLD])
    assert _stamp_reads(s3_server.log[before:]) == 1


def _stamp_reads(log) -> int:
    return sum(e.path.endswith(f"{LEAF}/zarr.json") for e in log)


def _metadata_reads(log, version: str) -> int:
    return sum(f"{LEAF}/{version}/" in e.path and e.path.endswith("/zarr.json") for e in log)


def test_each_unpickled_copy_reads_the_stamps_afresh_and_no_metadata_learned_before(
    s3_server, hive, versions
):
    """A dask worker unpickles a copy of the store for each array of each compute: each copy
    reads the stamps afresh (a pointer a writer swapped is seen by the next copy, as by a new
    store), but the metadata of a version's arrays (immutable) only the first time a copy
    of that store in the process met the version."""
    prefix, open_store = hive
    store = open_store()
    _load(store)
    shipped = pickle.dumps(store)  # the dask graph
    first = pickle.loads(shipped)
    _assert_values(_load(first), versions[NEW])
    s3_server.put(f"{prefix}/{LEAF}/zarr.json", _stamp(OLD))  # a writer swaps the pointer
    for seen_before in (False, True):
        before = len(s3_server.log)
        _assert_values(_load(pickle.loads(shipped)), versions[OLD])
        log = s3_server.log[before:]
        assert _stamp_reads(log) == 1
        assert (_metadata_reads(log, OLD) == 0) is seen_before
    _assert_values(_load(first), versions[NEW])  # the first copy keeps the stamp it read


def test_a_process_keeps_what_it_learned_for_the_stores_unpickled_last(monkeypatch):
    """What a process read of immutable versions (their arrays' metadata) outlives the copies
    of a store, for the ``LEARNED_KEPT`` stores unpickled last."""
    monkeypatch.setattr(session, "LEARNED_KEPT", 1)
    shipped = []
    for _ in range(2):
        store = MocHiveStore(FIXTURES / "bare_versioned")
        _load(store)
        shipped.append(pickle.dumps(store))

    def requests(pickled: bytes) -> int:
        gc.collect()  # the copies before are gone
        copy = pickle.loads(pickled)
        _load(copy)
        return copy.request_stats.total

    cold = requests(shipped[0])
    warm = requests(shipped[0])
    assert warm < cold
    assert requests(shipped[1]) == cold  # the other store, which takes the one place
    assert requests(shipped[0]) == cold


def test_a_store_pickled_after_it_read_more_levels_is_another_snapshot():
    """What copies learn is shared by the copies of one view, also when pickled again on
    the way (dask's scheduler): a store or copy pickled after it read more levels presents
    another."""
    store = MocHiveStore(FIXTURES / "pyramid1")
    asyncio.run(store.session.ensure_levels(None))  # opened: the source level only
    source_only = pickle.dumps(store)
    asyncio.run(store.view())  # every level
    every_level = pickle.dumps(store)
    a, b, c = (pickle.loads(s).session for s in (source_only, source_only, every_level))
    assert a is not b and a.leaves is not b.leaves and a.leaf_metas is b.leaf_metas
    assert c.leaf_metas is not a.leaf_metas
    assert not a.view.has_node("atl06/o5") and c.view.has_node("atl06/o5")
    hop = pickle.loads(pickle.dumps(pickle.loads(source_only)))  # through dask's scheduler
    assert hop.session.leaf_metas is a.leaf_metas
    wider = pickle.loads(source_only)
    asyncio.run(wider.view())  # a copy that read more levels itself
    assert pickle.loads(pickle.dumps(wider)).session.leaf_metas is not a.leaf_metas


def test_current_version_deleted_while_open_reads_as_missing_with_a_warning(
    s3_server, hive, versions
):
    prefix, open_store = hive
    store = open_store()
    _assert_values(_load(store), versions[NEW])
    for key in s3_server.keys(f"{prefix}/{LEAF}/{NEW}/"):
        s3_server.delete(key)
    with pytest.warns(HiveWarning, match=f"leaf .*{LEAF} points at version '{NEW}', which is "
                                         "missing: read as missing"):
        got = _load(store)
    rows = versions[NEW]["count"].values != got["count"].values
    assert rows.any() and (got["count"].values[rows] == 0).all()
    assert np.isnan(got["h_mean"].values[rows]).all()
    same = ~np.isnan(versions[NEW]["h_mean"].values) & ~np.isnan(got["h_mean"].values)
    np.testing.assert_array_equal(got["h_mean"].values[same], versions[NEW]["h_mean"].values[same])


def test_leaf_deleted_before_its_stamp_was_read_reads_as_missing(s3_server, hive, versions):
    prefix, open_store = hive
    store = open_store()
    xr.open_zarr(store, group=GROUP)  # opens: reads the template leaf's stamp only
    for key in s3_server.keys(f"{prefix}/{LEAF}/"):
        s3_server.delete(key)
    with pytest.warns(HiveWarning, match=f"leaf .*{LEAF} has no commit stamp"):
        got = _load(store)
    changed = got["count"].values != versions[NEW]["count"].values
    assert changed.any() and (got["count"].values[changed] == 0).all()


def test_no_chunk_or_dataset_mixes_two_versions_under_concurrent_flips(s3_server, hive, versions):
    prefix, open_store = hive
    proto = default_buffer_prototype()
    local = versions["stores"]
    keys = [f"{GROUP}/{name}/c/{i}" for name in ("count", "h_mean", "h_max") for i in range(4)]

    def chunk(store, key):
        buf = asyncio.run(store.get(key, proto))
        return None if buf is None else buf.to_bytes()

    expected = {v: {k: chunk(local[v], k) for k in keys} for v in (NEW, OLD)}
    moving = [k for k in keys if expected[NEW][k] != expected[OLD][k]]
    assert len(moving) >= 3  # the leaf's chunk of each field differs between versions

    stop = threading.Event()

    def writer():
        for flips in range(400):  # bounded
            if stop.is_set():
                return
            s3_server.put(f"{prefix}/{LEAF}/zarr.json", _stamp((OLD, NEW)[flips % 2]))

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen = set()
    try:
        for _ in range(15):
            store = open_store()
            got = {k: chunk(store, k) for k in moving}
            version = next(v for v in (NEW, OLD) if got[moving[0]] == expected[v][moving[0]])
            assert got == {k: expected[version][k] for k in moving}  # one stamp, one version
            seen.add(version)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert seen  # usually both; which one each store saw depends on timing
