"""A leaf moved or copied to another node's (or window's) path is never served there.

``morton`` and ``cell_ids`` are computed from a leaf's path (by moczarr too), so a leaf
directory swapped with its neighbour would serve each node's values at the other's cells.
Its commit stamp says where it was written (the coverage ``box`` names cells of its own
node, ``window`` its own window): such a leaf reads as the fill value with one warning per
level, and ``verify="open"`` leaves it out of the domain.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import given
from hypothesis import strategies as st
from support.hives import FIXTURES, swap

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.hive.ids import decimal_to_rank, shift
from moczarr_store.hive.leaves import misplaced

# two neighbouring leaves of each fixture, and the level their rows are in
SWAPS = {
    "bare_versioned": ("4/4/4/1/1/1/444111.zarr", "4/4/4/1/1/2/444112.zarr", "atl06/o7"),
    "sharded": ("4/4/4/1/1/44411.zarr", "4/4/4/1/2/44412.zarr", "atl06/o7"),
}


def _node_rows(morton: np.ndarray, cell_order: int, decimal: str) -> np.ndarray:
    """Which rows (packed words at ``cell_order``) lie under node ``decimal``."""
    depth = cell_order - (len(decimal.lstrip("-")) - 1)
    ranks = morton.astype(np.uint64) >> np.uint64(shift(cell_order) + 2 * depth)
    return ranks == np.uint64(decimal_to_rank(decimal))


def _read(store: MocHiveStore, group: str) -> tuple[xr.Dataset, list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = xr.open_zarr(store, group=group).load()
    return ds, [str(w.message) for w in seen if issubclass(w.category, HiveWarning)]


@pytest.mark.parametrize("chunking", ["leaf", "shard", "inner", "span"])
@pytest.mark.parametrize("fixture", sorted(SWAPS))
def test_swapped_leaves_read_as_fill_with_one_warning(hive_copy, fixture, chunking):
    a, b, group = SWAPS[fixture]
    root = hive_copy(fixture)
    swap(root, a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = moczarr.open_hive(str(FIXTURES / fixture)).load()
    store = MocHiveStore(root, chunking=chunking)
    got, said = _read(store, group)
    misplaced_said = [m for m in said if "was written for another node" in m]
    assert len(misplaced_said) == 1 and (a in misplaced_said[0] or b in misplaced_said[0])
    assert "coverage box names cell" in misplaced_said[0]  # the reason, not just the kind
    assert store.problems()[(group, "misplaced")].count >= 2  # one per chunk read
    np.testing.assert_array_equal(got["morton"].values, want["morton"].values)
    cell_order = int(group.rsplit("o", 1)[1])
    swapped = np.zeros(got.sizes["cells"], dtype=bool)
    for rel in (a, b):
        swapped |= _node_rows(got["morton"].values, cell_order, Path(rel).stem)
    assert swapped.sum() == 2 * 4 ** (cell_order - (len(Path(a).stem) - 1))
    arrays = zarr.open_group(store, mode="r")[group]
    for name in want.data_vars:
        have, expected = got[name].values, want[name].values
        np.testing.assert_array_equal(have[~swapped], expected[~swapped], err_msg=name)
        fill = arrays[name].fill_value
        assert all(np.array_equal(v, fill, equal_nan=True) for v in have[swapped]), name
        # the swap is visible: each node's own values differ from the other's somewhere
        assert not np.array_equal(expected[swapped], have[swapped], equal_nan=True), name


def test_verify_open_leaves_swapped_leaves_out_of_the_domain(hive_copy):
    a, b, group = SWAPS["bare_versioned"]
    root = hive_copy("bare_versioned")
    swap(root, a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = moczarr.open_hive(str(FIXTURES / "bare_versioned")).load()
    got, said = _read(MocHiveStore(root, verify="open"), group)
    assert any(a in m and "another node" in m for m in said), said
    kept = np.ones(want.sizes["cells"], dtype=bool)
    for rel in (a, b):
        kept &= ~_node_rows(want["morton"].values, 7, Path(rel).stem)
    np.testing.assert_array_equal(got["morton"].values, want["morton"].values[kept])
    for name in want.data_vars:
        np.testing.assert_array_equal(got[name].values, want[name].values[kept], err_msg=name)


def test_a_leaf_renamed_into_another_window_is_not_served_there(hive_copy):
    """``444112_2019.zarr`` renamed ``444112_2020.zarr`` (the node has no 2020 leaf): its
    stamp says window 2019. Without the check its 2019 values would be served as 2020's."""
    root = hive_copy("windowed")
    moved = "4/4/4/1/1/2/444112_2020.zarr"
    (root / "4/4/4/1/1/2/444112_2019.zarr").rename(root / moved)
    ds, said = _read(MocHiveStore(root), "atl06/o7")
    assert any(moved in m and "another window" in m for m in said), said
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean_2020 = moczarr.open_hive(str(FIXTURES / "windowed"), window="2020")
    rows = _node_rows(ds["morton"].values, 7, "444112")
    late = ds.sel(window="2020")
    assert (late["count"].values[rows] == 0).all()  # the fill: no 2020 leaf of 444112
    inside = np.isin(late["morton"].values, clean_2020["morton"].values)
    np.testing.assert_array_equal(late["count"].values[inside], clean_2020["count"].values)
    scoped, said = _read(MocHiveStore(root, window="2020"), "atl06/o7")
    np.testing.assert_array_equal(scoped["morton"].values, clean_2020["morton"].values)
    np.testing.assert_array_equal(scoped["count"].values, clean_2020["count"].values)


def test_swapped_overview_objects_read_as_fill_with_one_warning(hive_copy):
    """Overview objects name their node and window in their ``zagg_overview`` block:
    swapped on disk, each is refused at the other's node (moczarr would serve it there)."""
    a, b, order = "4/4/all.zarr", "-4/1/all.zarr", 3
    root = hive_copy("pyramid1")
    swap(root, a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = moczarr.open_level(str(FIXTURES / "pyramid1"), order,
                                  xr_kwargs={"chunks": None}).load()
    store = MocHiveStore(root)
    got, said = _read(store, f"atl06/o{order}")
    assert any("written for another node" in m and (a in m or b in m) for m in said), said
    assert store.problems()[(f"atl06/o{order}", "provenance")].count >= 2
    np.testing.assert_array_equal(got["morton"].values, want["morton"].values)
    swapped = _node_rows(got["morton"].values, order, "44") | _node_rows(
        got["morton"].values, order, "-41")
    assert swapped.all()  # the level's only two objects
    arrays = zarr.open_group(store, mode="r")[f"atl06/o{order}"]
    for name in want.data_vars:
        fill = arrays[name].fill_value
        assert all(np.array_equal(v, fill, equal_nan=True) for v in got[name].values), name
        assert not all(np.array_equal(v, fill, equal_nan=True) for v in want[name].values), name


# -- the check itself ----------------------------------------------------------------------

PATH = "4/4/4/1/1/1/444111.zarr"


def _stamp(box: object, spec: object = "morton-moc/1", **more: object) -> dict:
    return {"complete": True, "coverage": {"spec": spec, "box": box}, **more}


@pytest.mark.parametrize("stamp", [
    {"complete": True},  # no coverage (older writers)
    _stamp(["4441111", "44411123", None, None]),
    _stamp(["444111"]),  # the whole node
    _stamp(["4441121"], spec="morton-moc/0"),  # another spec: not read, as moczarr
    _stamp("4441121"),  # not a list
    _stamp([4441121, "", "x", None, {"a": 1}]),  # members that are no decimal id
    _stamp(["4441111"], window="2019"),  # a window on an unwindowed path says nothing
], ids=["none", "inside", "node", "spec", "box-type", "no-ids", "window"])
def test_stamps_that_place_the_leaf_at_its_path_or_say_nothing(stamp):
    assert misplaced(PATH, stamp) is None
    assert misplaced("4/4/4/1/1/1/all.zarr", _stamp(["4441121"])) is None  # not a leaf


@pytest.mark.parametrize("path,stamp,words", [
    (PATH, _stamp(["4441121", None, None, None]), "cell 4441121, outside node 444111"),
    (PATH, _stamp(["4441111", "44411"]), "cell 44411, outside node 444111"),  # coarser
    (PATH, _stamp(["-4441111"]), "outside node 444111"),  # the other hemisphere
    ("4/4/4/1/1/1/444111_2020.zarr", {"window": "2019"}, "window '2019', its path '2020'"),
])
def test_stamps_naming_another_place(path, stamp, words):
    reason = misplaced(path, stamp)
    assert reason is not None and words in reason


@given(node=st.from_regex(r"\A-?[1-6][1-4]{0,8}\Z"), tail=st.from_regex(r"\A[1-4]{0,6}\Z"),
       other=st.from_regex(r"\A-?[1-6][1-4]{0,12}\Z"))
def test_a_box_member_is_inside_exactly_when_it_descends_from_the_node(node, tail, other):
    path = f"x/{node}.zarr"
    assert misplaced(path, _stamp([node + tail])) is None
    inside = other.startswith(node)
    assert (misplaced(path, _stamp([other])) is None) == inside
