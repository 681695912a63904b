"""Every kind of hive zagg writes: windows, pyramids, ragged fields, mixed writers, AOI."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from datetime import datetime

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from moczarr.level import open_level
from support.hives import FIXTURES, assert_values

from moczarr_store import HiveWarning, MocHiveStore, aoi_mask
from moczarr_store.transcode import EncodingError


def _assert_same(ref: xr.Dataset, got: xr.Dataset) -> None:
    assert dict(ref.sizes) == dict(got.sizes)
    assert set(ref.data_vars) == set(got.data_vars)
    for name in [*ref.data_vars, "morton", "cell_ids"]:
        assert got[name].dtype == ref[name].dtype, name
        assert_values(got[name].values, ref[name].values, name)
    for name in ref.data_vars:  # moczarr's attributes, and CF's grid mapping beside them
        attrs = dict(got[name].attrs)
        assert attrs.pop("grid_mapping") == "healpix", name
        assert ref[name].attrs == attrs, name


def test_window_axis_labels_bounds_and_values():
    root = FIXTURES / "windowed"
    ds = xr.open_zarr(MocHiveStore(root), group="atl06/o7")
    assert list(ds["window"].values) == ["2019", "2020"]
    assert ds["count"].dims == ("window", "cells")
    starts = [str(v)[:10] for v in ds["window_start"].values]
    ends = [str(v)[:10] for v in ds["window_end"].values]
    assert (starts, ends) == (["2019-01-01", "2020-01-01"], ["2020-01-01", "2021-01-01"])
    for i, label in enumerate(ds["window"].values):
        ref = moczarr.open_hive(str(root), window=str(label))
        mine = ds.isel(window=i)
        inside = np.isin(mine["morton"].values, ref["morton"].values)
        np.testing.assert_array_equal(mine["count"].values[inside], ref["count"].values)
        assert (mine["count"].values[~inside] == 0).all()  # no leaf in this window: fill


@pytest.mark.parametrize("name,window", [("windowed", "2019"), ("windowed", "2020"),
                                         ("windowed_explicit", "early")])
def test_scoped_window_is_value_identical(name, window):
    root = FIXTURES / name
    store = MocHiveStore(root, window=window)
    order = json.loads((root / "morton_hive.json").read_text())["cell_order"]
    _assert_same(
        moczarr.open_hive(str(root), window=window),
        xr.open_zarr(store, group=f"atl06/o{order}"),
    )


def test_explicit_windows_take_the_manifest_bounds():
    ds = xr.open_zarr(MocHiveStore(FIXTURES / "windowed_explicit"), group="atl06/o4")
    manifest = json.loads((FIXTURES / "windowed_explicit/morton_hive.json").read_text())
    declared = {w["label"]: w for w in manifest["temporal"]["windows"]}
    for label, start in zip(ds["window"].values, ds["window_start"].values, strict=True):
        expected = datetime.fromisoformat(declared[str(label)]["start"])
        assert np.datetime64(expected.replace(tzinfo=None), "ns") == start


def test_levels_are_told_apart_by_identity_on_every_python():
    """Python 3.13 compares dataclass fields with ``==`` (no identity shortcut), so a value
    ``__eq__`` on levels raised on their numpy ranks: a windowed hive's window and
    all-time levels share a cell order, and opening it failed."""
    hive = asyncio.run(MocHiveStore(FIXTURES / "windowed_explicit").hive())
    level = hive.products[0].levels[0]
    assert level.node_ranks.size > 1
    twin = dataclasses.replace(level, node_ranks=level.node_ranks.copy())
    assert twin != level
    assert level in [twin, level] and twin not in [level]


@pytest.mark.parametrize("name", ["pyramid1", "pyramid2"])
def test_every_pyramid_level_is_value_identical(name):
    root = FIXTURES / name
    store = MocHiveStore(root, computed_orders="none")
    levels = sorted(int(k[1:]) for k in zarr.open_group(store, mode="r")["atl06"].group_keys())
    assert len(levels) >= 3
    for order in levels:
        ref = open_level(str(root), order)
        _assert_same(ref, xr.open_zarr(store, group=f"atl06/o{order}"))
        assert ref.attrs["morton_hive"] == zarr.open_group(store, mode="r")[
            f"atl06/o{order}"].attrs["morton_hive"]


def test_overview_levels_keep_their_provenance():
    group = zarr.open_group(MocHiveStore(FIXTURES / "pyramid1"), mode="r")["atl06/o5"]
    assert group.attrs["role"] == "overview"
    assert group.attrs["zagg_overview"]["cell_order"] == 5
    assert "h_mean" not in group  # a none-class field is absent at overview orders


def test_all_time_folds_are_reachable():
    root = FIXTURES / "windowed_explicit"
    store = MocHiveStore(root)
    ds = xr.open_zarr(store, group="atl06/all_time/o2")
    ref = open_level(str(root), 2, all_time=True)
    _assert_same(ref, ds)
    assert "window" not in ds.dims


def test_ragged_fields_pass_through_with_their_attrs():
    root = FIXTURES / "ragged"
    got = xr.open_zarr(MocHiveStore(root), group="atl06/o6")
    assert got["h_tdigest"].attrs["ragged"]["spec"] == "zagg-ragged/1"
    _assert_same(moczarr.open_hive(str(root)), got)


def test_mixed_writer_versions_are_re_encoded():
    root = FIXTURES / "mixed"
    store = MocHiveStore(root)
    _assert_same(moczarr.open_hive(str(root)), xr.open_zarr(store, group="atl06/o7"))


def _recast(array, dtype: str) -> None:
    """Rewrite a single-chunk ``[bytes]`` leaf array in place under another data type."""
    meta = json.loads((array / "zarr.json").read_text())
    values = np.frombuffer((array / "c/0").read_bytes(), dtype=np.dtype(meta["data_type"]))
    (array / "c/0").write_bytes(values.astype(np.dtype(dtype).newbyteorder("<")).tobytes())
    (array / "zarr.json").write_text(json.dumps({**meta, "data_type": dtype}))


def test_a_template_leaf_narrower_than_the_other_runs_is_cast_up(hive_copy):
    root = hive_copy("mixed")
    _recast(root / "4/4/4/1/1/1/444111.zarr/7/count", "int32")  # the template leaf
    ds = xr.open_zarr(MocHiveStore(root), group="atl06/o7")
    assert ds["count"].dtype == np.int64
    _assert_same(moczarr.open_hive(str(root)), ds)


def test_an_unsafe_cast_is_refused_naming_the_leaf(hive_copy):
    root = hive_copy("mixed")
    # one leaf per chunk (joined with others, under auto, its rows alone read as fill)
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group="atl06/o7")  # count int64
    _recast(root / "-4/1/1/3/3/1/-411331.zarr/7/count", "uint64")  # rewritten in place
    with pytest.raises(EncodingError, match=r"-411331\.zarr/7/count: stored as uint64"):
        ds["count"].values  # noqa: B018


@pytest.mark.parametrize("aoi", [["444112"], ["4441"], ["4441121", "-4113311"], ["44411213"]])
def test_aoi_keeps_whole_subtrees_and_aoi_mask_gives_moczarrs_cut(aoi):
    root = FIXTURES / "bare_versioned"
    got = xr.open_zarr(MocHiveStore(root, aoi=aoi), group="atl06/o7")
    ref = moczarr.open_hive(str(root), aoi=aoi)
    assert got.sizes["cells"] % 16 == 0 and got.sizes["cells"] >= ref.sizes["cells"]
    _assert_same(ref, got.isel(cells=aoi_mask(got["morton"].values, aoi)))


def test_aoi_mask_refuses_what_is_not_one_level_s_words():
    """Words are integers (an int64 view of them reads as the same bits), never cast from
    floats; words of two orders (whose ranks the first word's order would misread) are
    refused."""
    words = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"),
                         group="atl06/o7")["morton"].values
    for bad in (words.astype(float), words.reshape(-1, 2), None):
        with pytest.raises(TypeError, match="morton is a 1-D array of packed words"):
            aoi_mask(bad, ["4441"])
    parents = words >> np.uint64(2 * 22) << np.uint64(2 * 22) | np.uint64(6)  # order 6
    with pytest.raises(ValueError, match="words of more than one order .the first is of order 7"):
        aoi_mask(np.concatenate([words, parents]), ["4441"])
    assert aoi_mask(words.astype(np.int64), ["4441"]).tolist() == aoi_mask(
        words, ["4441"]).tolist()


def test_aoi_outside_the_coverage_gives_an_empty_schema_correct_view():
    with pytest.warns(HiveWarning, match="intersects no coverage"):
        ds = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned", aoi=["1111"]),
                          group="atl06/o7")
    assert ds.sizes["cells"] == 0 and ds["count"].dtype == np.int64


@pytest.mark.parametrize("name,companion", [("sharded", "icechunk"), ("pyramid2", "multiscales")])
def test_root_companions_are_never_listed(name, companion):
    assert (FIXTURES / name / companion).is_dir()
    store = MocHiveStore(FIXTURES / name)
    keys = asyncio.run(_all_keys(store))
    assert not any(companion in key for key in keys)


async def _all_keys(store):
    return [key async for key in store.list()]


def test_verify_open_keeps_every_overview_objects_provenance():
    group = zarr.open_group(MocHiveStore(FIXTURES / "pyramid1", verify="open"), mode="r")
    objects = group["atl06/o5"].attrs["zagg_objects"]
    nodes = [entry["zagg_overview"]["node"] for entry in objects]
    assert nodes == ["4441", "-4113"]  # word order: positive base cells first
    assert all(entry["role"] == "overview" for entry in objects)


def test_an_unmaterialised_order_is_omitted_with_a_warning(hive_copy):
    import shutil

    root = hive_copy("pyramid1")
    for node in ("4/4", "-4/1"):  # the order-1 overview objects: o3
        shutil.rmtree(root / node / "all.zarr")
    with pytest.warns(HiveWarning, match=re.escape(
            "atl06/o3: declared, but no stamped overview object exists (unstamped or absent: "
            "4/4/all.zarr, -4/1/all.zarr); omitted")):
        stored = MocHiveStore(root, computed_orders="none")
        orders = set(zarr.open_group(stored, mode="r")["atl06"].group_keys())
    assert orders == {"o7", "o5"}


@pytest.mark.parametrize("name,group", [("sharded", "atl06/o7"), ("windowed", "atl06/o7")])
def test_shard_mode_shards_the_coordinates_as_the_fields(name, group):
    """In ``"shard"`` mode ``morton`` and ``cell_ids`` are sharded as the fields that pass
    their shards through (one computed shard per leaf), with the values of ``"leaf"`` mode
    (checked against mortie in test_properties_keys), whole and in parts, and xarray
    chunks them as the fields."""
    shard = zarr.open_group(MocHiveStore(FIXTURES / name, chunking="shard"), mode="r",
                            path=group)
    leaf = zarr.open_group(MocHiveStore(FIXTURES / name), mode="r", path=group)
    fields = [shard[n] for n in ("count", "h_mean") if n in shard]
    sharded = [f for f in fields if f.shards is not None]
    for coordinate in ("morton", "cell_ids"):
        got, want = shard[coordinate], leaf[coordinate][:]
        if sharded:
            assert got.shards == (sharded[0].shards[-1],)
            assert got.chunks == (sharded[0].chunks[-1],)
        else:  # unsharded leaves: the coordinates are not sharded either
            assert got.shards is None
        np.testing.assert_array_equal(got[:], want)
        n = want.shape[0]
        for part in (slice(0, 1), slice(3, 70), slice(n - 5, n), slice(n // 2, n // 2 + 9)):
            np.testing.assert_array_equal(got[part], want[part])
    ds = xr.open_zarr(MocHiveStore(FIXTURES / name, chunking="shard"), group=group)
    assert ds["morton"].chunks[0] == ds.chunks["cells"]
