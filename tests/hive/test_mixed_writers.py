"""Several writer runs, several encodings: the view declares what moczarr reports.

``mixed_writers`` was created by zagg 0.38 (``count`` int32, unversioned leaves 444111 and
-411331) and appended to by zagg 0.61 (``count`` int64, versioned leaves 444112 and
-411342); its template leaf (the first in domain order) is the old writer's.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, copy_leaf
from support.servers import http_options
from test_open_cost import _coverage_of
from zarr.buffer import default_buffer_prototype

from moczarr_store import EncodingError, HiveWarning, MocHiveStore, aoi_mask
from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal
from moczarr_store.hive.paths import leaf_path

GROUP = "atl06/o7"
OLD, NEW = ["444111", "-411331"], ["444112", "-411342"]
CHUNKINGS = ["shard", "leaf", "inner"]

pytest_plugins = ["support.servers"]


def _assert_like_moczarr(root, store: MocHiveStore, aoi=None) -> xr.Dataset:
    """Every field's dtype and values (and the cell coordinates) equal ``open_hive``'s."""
    ref = moczarr.open_hive(str(root), aoi=aoi)
    got = xr.open_zarr(store, group=GROUP)
    if aoi is not None:
        got = got.isel(cells=aoi_mask(got["morton"].values, aoi))
    assert set(got.data_vars) == set(ref.data_vars)
    for name in [*ref.data_vars, "morton", "cell_ids"]:
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)
    return got


def _data_type(root, leaf: str, field: str = "count") -> str:
    """A leaf array's data type, read from the fixture files."""
    prefix = root / leaf
    current = json.loads((prefix / "zarr.json").read_text())["attributes"][
        "morton_hive_commit"].get("current")
    meta = (prefix / current if current else prefix) / "7" / field / "zarr.json"
    return json.loads(meta.read_text())["data_type"]


def test_the_fixture_is_what_two_zagg_releases_wrote():
    root = FIXTURES / "mixed_writers"
    assert _data_type(root, "4/4/4/1/1/1/444111.zarr") == "int32"  # the template: zagg 0.38
    assert _data_type(root, "4/4/4/1/1/2/444112.zarr") == "int64"  # zagg 0.61
    assert "semantic_hash" not in json.loads((root / "morton_hive.json").read_text())


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("aoi", [None, OLD, NEW], ids=["whole", "old-writer", "new-writer"])
def test_every_field_has_moczarrs_dtype_and_values(chunking, aoi):
    root = FIXTURES / "mixed_writers"
    got = _assert_like_moczarr(root, MocHiveStore(root, aoi=aoi, chunking=chunking), aoi)
    assert got["count"].dtype == (np.int32 if aoi == OLD else np.int64)


def test_the_declared_metadata_is_the_templates_with_the_promoted_type():
    root = FIXTURES / "mixed_writers"
    template = json.loads((root / "4/4/4/1/1/1/444111.zarr/7/count/zarr.json").read_text())
    read = MocHiveStore(root).get(f"{GROUP}/count/zarr.json", default_buffer_prototype())
    document = asyncio.run(read)
    declared = json.loads(document.to_bytes())
    assert template["data_type"] == "int32" and declared["data_type"] == "int64"
    assert declared["fill_value"] == template["fill_value"] == 0
    assert declared["codecs"] == template["codecs"]


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize(
    "aoi", [None, ["444112"], ["444111", "444112"], ["444112", "-411331"], ["444113"]],
    ids=str,
)
def test_the_synthetic_mixed_hive_has_moczarrs_dtype_in_every_view(chunking, aoi):
    # mixed/: 444112's count was rewritten as int32 among int64 leaves
    root = FIXTURES / "mixed"
    got = _assert_like_moczarr(root, MocHiveStore(root, aoi=aoi, chunking=chunking), aoi)
    assert got["count"].dtype == (np.int32 if aoi == ["444112"] else np.int64)


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_over_plain_http_the_run_samples_stamps_name_the_arrays(http_server, chunking):
    """Plain HTTP cannot list the 0.38 template's group and its stamp records no content
    hashes: the 0.61 leaves' stamps (read by the writer-run sample) name the arrays, and the
    values and promoted dtypes are moczarr's."""
    store = MocHiveStore(f"{http_server.url}/mixed_writers", chunking=chunking,
                         storage_options=http_options())
    with pytest.warns(HiveWarning, match=r"leaf 4/4/4/1/1/1/444111\.zarr: its commit stamp "
                      r"names no arrays and 4/4/4/1/1/1/444111\.zarr/7 cannot be listed .*"
                      r"presenting the arrays leaf \S+ commit stamp names"):
        got = _assert_like_moczarr(FIXTURES / "mixed_writers", store)
    assert got["count"].dtype == np.int64  # the 0.38 template's int32, promoted


def test_opening_reads_one_leaf_per_writer_run():
    store = MocHiveStore(FIXTURES / "mixed_writers")
    zarr.open_group(store, mode="r")
    n = 4  # count, h_max, h_mean, h_min
    # manifest + aggregation.yaml (absent: the manifest declares no folds) + coverage + the
    # template's stamp, group, one listing (a 0.38 stamp has no content hashes to name the
    # arrays), arrays and its stored morton and cell_ids; the 3 other stamps; the arrays of
    # 444112 (the 0.61 run) and of -411331 (unversioned: its own run)
    assert store.request_stats.total == 5 + 1 + n + 2 + 3 + 2 * n


def test_a_leaf_rewritten_wider_after_open_is_an_error_naming_it(hive_copy):
    root = hive_copy("mixed_writers")
    # one leaf per chunk (joined with others, under auto, its rows alone read as fill)
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)  # h_mean float32
    leaf = zarr.open_array(str(root / "-4/1/1/3/3/1/-411331.zarr/7/h_mean"), mode="r")
    values = leaf[:]
    shutil.rmtree(root / "-4/1/1/3/3/1/-411331.zarr/7/h_mean")  # rewritten in place, wider
    zarr.create_array(str(root / "-4/1/1/3/3/1/-411331.zarr/7/h_mean"), data=values.astype(
        "float64"), chunks=values.shape, fill_value=np.nan, dimension_names=["cells"])
    with pytest.raises(EncodingError, match=r"-411331\.zarr/7/h_mean: stored as float64"):
        ds["h_mean"].values  # noqa: B018


def _hive_of(root, tmp_path, leaves: list[str]) -> None:
    """Make ``root`` (a copy of mixed_writers) list 12 consecutive nodes from 444111 on,
    the ``i``-th a copy of fixture leaf ``leaves[i]`` (stamp and arrays)."""
    sources = {name: tmp_path / name for name in set(leaves)}
    for name, stash in sources.items():
        shutil.copytree(root / leaf_path(name, None, 1), stash)
    first = decimal_to_rank("444111")
    for i, name in enumerate(leaves):
        target = root / leaf_path(rank_to_decimal(first + i, 5), None, 1)
        shutil.rmtree(target, ignore_errors=True)
        copy_leaf(sources[name], target)
    (root / "coverage.moc").write_text(json.dumps(_coverage_of(12, "444111")))


@pytest.mark.parametrize("new_at,sampled", [(1, False), (11, True)])
def test_a_writer_run_the_open_sample_misses_is_refused_not_misread(
    hive_copy, tmp_path, new_at, sampled
):
    # 12 objects; the open samples 8 spread evenly, the first and the last included
    # (indices 0, 2, 3, 5, 6, 8, 9, 11): one 0.61 (int64) leaf among 0.38 (int32) copies
    root = hive_copy("mixed_writers")
    leaves = ["444111"] * 12
    leaves[new_at] = "444112"
    _hive_of(root, tmp_path / "stash", leaves)
    store = MocHiveStore(root, chunking="leaf")  # auto: that leaf's rows alone as fill
    if sampled:
        assert _assert_like_moczarr(root, store)["count"].dtype == np.int64
        return
    ds = xr.open_zarr(store, group=GROUP)
    assert ds["count"].dtype == np.int32
    assert moczarr.open_hive(str(root))["count"].dtype == np.int64
    with pytest.raises(EncodingError, match=r"444112\.zarr/run-[^/]+/7/count: stored as int64"):
        ds["count"].values  # noqa: B018
