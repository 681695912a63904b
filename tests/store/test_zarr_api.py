"""The store through zarr's and xarray's own entry points."""

from __future__ import annotations

import asyncio
import pickle
import warnings

import dask
import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, assert_values, fixture_roots, grown_after_open, repoint
from support.hostile import pristine, pristine_references
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore
from moczarr_store.read.plan import plan_key

BARE = FIXTURES / "bare_versioned"
MULTI = FIXTURES / "multiproduct"


def test_open_group_default_mode_lists_the_hierarchy():
    root = zarr.open_group(MocHiveStore(BARE))
    assert list(root.group_keys()) == ["atl06"]
    order = root["atl06/o7"]
    assert {"morton", "cell_ids", "count", "h_mean"} <= set(order.array_keys())
    assert order["count"].shape == order["morton"].shape == (4 * 4**2,)


@pytest.mark.parametrize("mode", ["r", None])
def test_open_group_read_mode_and_zarr_open(mode):
    store = MocHiveStore(MULTI)
    group = zarr.open_group(store, mode="r") if mode else zarr.open(store)
    assert sorted(group.group_keys()) == ["atl06_a", "atl06_b"]
    assert group.attrs["morton_hive_store"]["bare"] is False


def test_open_zarr_is_warning_free_and_lists_nothing():
    store = MocHiveStore(BARE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(store, group="atl06/o7")
    assert set(ds.coords) == {"morton", "cell_ids", "healpix_index", "healpix"}
    assert ds["count"].dims == ("cells",)
    # the group's documents are built in memory: no listing of the hive
    assert store.request_stats.counts["list"] <= 1


def test_open_datatree_has_every_product_and_order():
    tree = xr.open_datatree(MocHiveStore(MULTI), engine="zarr")
    assert set(tree.children) == {"atl06_a", "atl06_b"}
    a = tree["atl06_a/o6"].to_dataset()
    assert a["morton"].size == a["count"].size > 0


def test_every_write_is_refused_and_nothing_is_written(hive_copy):
    root = hive_copy("legacy")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    store = MocHiveStore(root)
    group = zarr.open_group(store)
    with pytest.raises(ValueError, match="read-only"):
        group.create_array("new", shape=(4,), dtype="i4")
    with pytest.raises(ValueError, match="read-only"):
        group.attrs["x"] = 1
    proto = default_buffer_prototype()
    for call in (
        lambda: store.set("zarr.json", proto.buffer.from_bytes(b"{}")),
        lambda: store.delete("zarr.json"),
        lambda: store.delete_dir("atl06"),
        lambda: store.clear(),
    ):
        with pytest.raises(ValueError, match="read-only"):
            asyncio.run(call())
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_pickles_and_compares_by_recipe():
    """A pickled store is its recipe and the structure it presented (the opened levels:
    nodes as runs, declared encodings); warm caches (stamps, leaf metadata) do not
    travel, and the copy opens without a request."""
    store = MocHiveStore(BARE, verify="open")
    assert len(pickle.dumps(store)) < 1000  # not opened: the recipe alone
    xr.open_zarr(store, group="atl06/o7").load()
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store == MocHiveStore(BARE, verify="open")
    assert store != MocHiveStore(BARE)
    assert len(pickle.dumps(store)) < 16_384
    xr.open_zarr(clone, group="atl06/o7")
    assert clone.request_stats.total == 0
    assert len(store.session.leaves) > 0 and len(clone.session.leaves) == 0
    readonly = store.with_read_only(True)
    assert dask.base.tokenize(readonly) == dask.base.tokenize(readonly.with_read_only(True))
    assert dask.base.tokenize(store) != dask.base.tokenize(clone)  # its own stamps
    a = xr.open_zarr(store, group="atl06/o7")
    assert a["h_mean"].data.name == xr.open_zarr(store, group="atl06/o7")["h_mean"].data.name
    b = xr.open_zarr(MocHiveStore(BARE, verify="open"), group="atl06/o7")
    assert a["h_mean"].data.name != b["h_mean"].data.name


def test_a_store_pickled_by_an_earlier_release_presents_its_view():
    """Before the snapshot travelled pickled on its own, the state held the hive itself (a
    worker running another release may receive one): the copy adopts it all the same."""
    store = MocHiveStore(FIXTURES / "pyramid1")
    asyncio.run(store.session.ensure_levels(None))  # the source level only
    state = {**store.__getstate__(), "hive": store.session.snapshot()}
    del state["snapshot"]
    clone = MocHiveStore.__new__(MocHiveStore)
    clone.__setstate__(state)
    assert clone.session.view.has_node("atl06/o7") and clone.request_stats.total == 0
    assert not clone.session.view.has_node("atl06/o5")  # as presented, not opened afresh


def test_with_read_only():
    store = MocHiveStore(BARE)
    ro = store.with_read_only(True)
    assert ro.read_only and not store.read_only
    with pytest.raises(NotImplementedError):
        store.with_read_only(False)


def test_dask_distributed_local_cluster_two_processes():
    import distributed
    expected = xr.open_zarr(MocHiveStore(BARE), group="atl06/o7")["count"].values.sum()
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1) as cluster,
        distributed.Client(cluster),
    ):
        ds = xr.open_zarr(MocHiveStore(BARE), group="atl06/o7")
        got = ds["count"].sum().compute()
        morton = ds["morton"].max().compute()
    assert int(got) == int(expected) > 0
    assert int(morton) == int(np.max(ds["morton"].values))


def test_a_dask_worker_reads_what_the_client_opened_after_the_hive_grew(hive_copy, tmp_path):
    """A store sent to another process maps each key to the node the sender's view did:
    the leaf a writer adds meanwhile shifts the nodes after it by one chunk, which a view
    opened afresh there would serve in the next leaf's place."""
    import distributed

    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    want = moczarr.open_hive(str(root))
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                 dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        ds = xr.open_zarr(MocHiveStore(root), group="atl06/o7", chunks={"cells": 16})
        land()
        got = ds.compute()  # each chunk read on a worker, by a store unpickled there
    assert got.sizes["cells"] == want.sizes["cells"] == 32
    for name in [*want.data_vars, "morton"]:
        assert got[name].dtype == want[name].dtype, name
        assert_values(got[name].values, want[name].values, name)
    assert xr.open_zarr(MocHiveStore(root), group="atl06/o7").sizes["cells"] == 48  # landed


@pytest.mark.parametrize("chunking", ["leaf", 2])
@pytest.mark.parametrize("name", [root.name for root in fixture_roots()])
def test_an_unpickled_store_reads_every_group_as_moczarr(name, chunking):
    """The view an unpickled store adopts (every level of every product, windows, pyramids,
    columns, mixed writers) reads as moczarr reads the hive, values and dtypes, and opens
    with no request; so does a second copy, which starts from what the first learned of
    the versions (a dask worker's next compute)."""
    store = MocHiveStore(FIXTURES / name, chunking=chunking)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported elsewhere
        asyncio.run(store.view())
        shipped = pickle.dumps(store)
        requests = []
        for _ in range(2):
            clone = pickle.loads(shipped)
            root = zarr.open_group(clone, mode="r")
            assert len(list(root.members(max_depth=None))) > 0
            assert clone.request_stats.total == 0  # the hierarchy, with no request
            for group in pristine(name).groups:
                morton = root[f"{group.path}/morton"][...]
                for position, window in enumerate(group.windows or (None,)):
                    ref = pristine_references(name)[(group.path, window)]
                    rows = np.flatnonzero(np.isin(morton, ref.morton))
                    np.testing.assert_array_equal(morton[rows], ref.morton)
                    for field, want in ref.values.items():
                        got = root[f"{group.path}/{field}"][...]
                        assert got.dtype == want.dtype, field
                        got = got[position] if group.windows else got
                        assert_values(got[rows], want, field)
            requests.append(clone.request_stats.total)
        assert requests[1] <= requests[0]


def test_a_dataset_opened_again_after_a_rerun_never_shares_dask_names(hive_copy):
    """Comparing a leaf before and after a writer re-points it: the first store keeps the
    version its stamp named, a new store reads the new one. With one dask name for both
    (the recipe alone), a graph holding both computed one of them twice: the difference
    came out 0."""
    root = hive_copy("bare_versioned")
    old = xr.open_zarr(MocHiveStore(root), group="atl06/o7")
    before = old["h_mean"].values  # its stamps read, and kept
    fresh = MocHiveStore(root, chunking="leaf")  # plans one leaf per chunk
    asyncio.run(fresh.session.ensure_levels(None))
    repoint(root, asyncio.run(plan_key(fresh.session, "atl06/o7/h_mean/c/0")), 1.0)
    new = xr.open_zarr(MocHiveStore(root), group="atl06/o7")
    changed = int(np.sum(~np.isnan(new["h_mean"].values[:16])))
    assert changed > 0 and np.nansum(new["h_mean"].values - before) == changed
    assert float((new["h_mean"] - old["h_mean"]).sum()) == changed
