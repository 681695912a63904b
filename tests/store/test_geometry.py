"""geometry="sphere": every array at order o spans the 12 * 4**o cells of the sphere in
NESTED order; uncovered nodes read as the fill value without a request; covered cells
hold moczarr's values."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest
import zarr
from support.hives import FIXTURES, fixture_roots
from support.hostile import pristine, pristine_references

from moczarr_store import MocHiveStore, SphereTooLarge
from moczarr_store.verify import verify_hive
from moczarr_store.view import arrays

FIXTURE_NAMES = [root.name for root in fixture_roots()]
GROUPS = [(name, g) for name in FIXTURE_NAMES for g in pristine(name).groups]


def _nested(words: np.ndarray, order: int) -> np.ndarray:
    """NESTED ids of packed words (first principles: ``(word >> shift) - 4**order``)."""
    return (words >> np.uint64(6 + 2 * (27 - order))) - np.uint64(4**order)


@pytest.mark.parametrize(("name", "group"), GROUPS, ids=[f"{n}-{g.path}" for n, g in GROUPS])
def test_sphere_spans_the_sphere_and_covered_cells_are_moczarr_s(name, group):
    store = MocHiveStore(FIXTURES / name, geometry="sphere")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported elsewhere
        level = zarr.open_group(store, path=group.path, mode="r")
    cells = 12 * 4**group.order
    sample = np.random.default_rng(0).choice(cells, size=min(cells, 200), replace=False)
    for position, window in enumerate(group.windows or (None,)):
        ref = pristine_references(name)[(group.path, window)]
        rows = _nested(ref.morton, group.order).astype(np.int64)
        uncovered = np.setdiff1d(sample, rows)
        assert level["cell_ids"].shape == (cells,)
        np.testing.assert_array_equal(level["cell_ids"].get_coordinate_selection(rows), rows)
        np.testing.assert_array_equal(level["morton"].get_coordinate_selection(rows), ref.morton)
        for field, want in ref.values.items():
            array = level[field]
            assert array.shape[-1] == cells
            where = (position, rows) if group.windows else rows
            gone = (position, uncovered) if group.windows else uncovered
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = array.get_orthogonal_selection(where).reshape(-1)
                fill = array.get_orthogonal_selection(gone).reshape(-1)
            if want.dtype.kind == "O":
                assert list(got) == list(want)
                assert all(v == array.fill_value for v in fill)
                continue
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(fill, np.full(fill.size, array.fill_value, fill.dtype))


def test_uncovered_nodes_read_as_fill_without_a_request():
    store = MocHiveStore(FIXTURES / "sharded", geometry="sphere", chunking="leaf")
    count = zarr.open_array(store, path="atl06/o7/count", mode="r")
    ref = pristine_references("sharded")[("atl06/o7", None)]
    covered = set(_nested(ref.morton, 7).tolist())
    uncovered = [i for i in range(0, 12 * 4**7, 64) if i not in covered][:50]
    store.request_stats.reset()
    values = count.get_coordinate_selection(np.array(uncovered))
    assert store.request_stats.total == 0
    assert (values == count.fill_value).all()
    first = int(_nested(ref.morton[:1], 7)[0])
    assert count[first] == ref.values["count"][0] and store.request_stats.total > 0


def test_default_geometry_is_the_covered_domain():
    store = MocHiveStore(FIXTURES / "sharded")
    assert zarr.open_array(store, path="atl06/o7/count", mode="r").shape == (192,)
    sphere = MocHiveStore(FIXTURES / "sharded", geometry="sphere")
    root = zarr.open_group(sphere, mode="r")
    assert root.attrs["morton_hive_store"]["geometry"] == "sphere"
    assert sphere != store  # different recipes


def test_a_sphere_of_too_many_chunks_is_refused(monkeypatch):
    # order 7 of sharded: 12 * 4**4 nodes of 64 cells, one chunk each
    monkeypatch.setattr(arrays, "SPHERE_MAX_CHUNKS", 12 * 4**4 - 1)
    store = MocHiveStore(FIXTURES / "sharded", geometry="sphere", chunking="leaf")
    with pytest.raises(SphereTooLarge, match=r"atl06/o7: geometry='sphere' would span 3,072 "
                       r"nodes of order 4 in 3,072 chunks .*geometry='covered'"):
        zarr.open_group(store, mode="r")


def test_the_bound_refuses_fine_orders_on_first_principles():
    assert 12 * 4**10 <= arrays.SPHERE_MAX_CHUNKS < 12 * 4**11  # one chunk per node: order <= 10


def test_an_unknown_geometry_is_refused():
    with pytest.raises(ValueError, match="geometry='globe': expected one of"):
        MocHiveStore(FIXTURES / "sharded", geometry="globe")


@pytest.mark.parametrize("name", ["sharded", "windowed", "pyramid2"])
def test_verify_reads_the_same_objects_on_the_sphere(name):
    def run(**options):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return asyncio.run(verify_hive(MocHiveStore(FIXTURES / name, **options)))

    covered, sphere = run(), run(geometry="sphere")
    assert sphere.ok and covered.ok
    assert (sphere.objects, sphere.clean, sphere.arrays, sphere.nbytes) == (
        covered.objects, covered.clean, covered.arrays, covered.nbytes)
