"""Each leaf's own array metadata is the authority for its bytes; unversioned leaves are
never read through a cache of what they were; damage is warned about once per kind."""

from __future__ import annotations

import json
import re
import warnings

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from test_open_cost import _synthetic_10k

from moczarr_store import EncodingError, HiveWarning, MocHiveStore

GROUP = "atl06/o7"
SIBLING = "-4/1/1/3/3/1/-411331.zarr"  # written by the template leaf's writer run


def _version_dir(root, leaf: str):
    stamp = json.loads((root / leaf / "zarr.json").read_text())
    current = stamp["attributes"]["morton_hive_commit"].get("current")
    return root / leaf / current if current else root / leaf


def _rewrite(array_dir, **changes) -> np.ndarray:
    """Re-encode one single-chunk leaf array under changed metadata; its decoded values."""
    values = zarr.open_array(str(array_dir), mode="r")[:]
    meta = json.loads((array_dir / "zarr.json").read_text())
    meta.update(changes)
    dtype = np.dtype(meta["data_type"])
    endian = meta["codecs"][0]["configuration"]["endian"]
    stored = values.astype(dtype.newbyteorder("<" if endian == "little" else ">"))
    (array_dir / "zarr.json").write_text(json.dumps(meta))
    (array_dir / "c" / "0").write_bytes(stored.tobytes())
    return values


def _assert_like_moczarr(root, store: MocHiveStore) -> None:
    ref = moczarr.open_hive(str(root))
    got = xr.open_zarr(store, group=GROUP).load()
    for name in ref.data_vars:
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


def test_a_leaf_whose_metadata_drifted_inside_its_writer_run_is_read_by_its_own(hive_copy):
    root = hive_copy("bare_versioned")
    field = _version_dir(root, SIBLING) / "7" / "h_mean"
    meta = json.loads((field / "zarr.json").read_text())
    big = [{"name": "bytes", "configuration": {"endian": "big"}}]
    before = _rewrite(field, codecs=big)
    assert meta["codecs"] != big
    store = MocHiveStore(root)
    _assert_like_moczarr(root, store)
    got = xr.open_zarr(store, group=GROUP)["h_mean"].values
    np.testing.assert_array_equal(got[-32:-16], before)  # -411331 is the third of 4 leaves


def test_a_drifted_dtype_that_cannot_be_cast_safely_is_an_error_naming_the_leaf(hive_copy):
    root = hive_copy("bare_versioned")
    _rewrite(_version_dir(root, SIBLING) / "7" / "h_mean", data_type="float64")
    with pytest.raises(EncodingError, match="-411331.zarr/run-[^ ]*/7/h_mean"):
        xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)["h_mean"].load()
    # joined with other leaves (auto): that leaf's rows alone read as fill, warned
    with pytest.warns(HiveWarning, match="-411331.zarr/run-[^ ]*/7/h_mean"):
        got = xr.open_zarr(MocHiveStore(root), group=GROUP)["h_mean"].load()
    assert not np.isnan(got.values).all()


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner", 2])
def test_an_unversioned_leaf_rewritten_in_place_is_read_as_it_is_now(hive_copy, chunking):
    root = hive_copy("multiproduct")
    store = MocHiveStore(root, chunking=chunking)
    group = "atl06_b/o7"
    first = xr.open_zarr(store, group=group)["h_mean"].values
    leaf = zarr.open_array(str(root / "atl06_b/4/4/4/1/1/1/444111.zarr/7/h_mean"), mode="r+")
    leaf[:] = np.arange(leaf.shape[0], dtype=leaf.dtype) + 1000
    again = xr.open_zarr(store, group=group)["h_mean"].values  # the same store object
    ref = moczarr.open_hive(str(root / "atl06_b"))["h_mean"].values
    np.testing.assert_array_equal(again, ref)
    assert not np.array_equal(np.nan_to_num(first), np.nan_to_num(again))


def test_missing_leaves_are_warned_about_once_and_counted(hive_copy):
    root = hive_copy("bare_versioned")
    _synthetic_10k(root)
    store = MocHiveStore(root, chunking="leaf")  # a read of some leaves meets only those
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        count = xr.open_zarr(store, group=GROUP)["count"][: 16 * 2000].values
    hive_warnings = [w for w in caught if issubclass(w.category, HiveWarning)]
    assert len(hive_warnings) == 1
    assert re.search(r"atl06/o7: leaf 1/[1-4/]+/1[1-4]{5}\.zarr has no commit stamp",
                     str(hive_warnings[0].message))
    problem = store.problems()[(GROUP, "absent")]
    assert problem.count == 1999 and len(problem.first) == 5
    assert (count[16:] == 0).all() and count[:16].sum() > 0
