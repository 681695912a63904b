"""xdggs decodes every group; label indexes without the coordinates; dask chunks line up.

Expected values come from moczarr (the groups' rows and values) and mortie (cell
centres), or from HEALPix arithmetic (NESTED parents are ``id >> 2 * (o - l)``).
"""

from __future__ import annotations

import warnings

import mortie
import numpy as np
import pytest
import xarray as xr
from support.hives import FIXTURES, fixture_roots
from support.hostile import pristine, pristine_references

from moczarr_store import HiveFormatError, MocHiveStore, cell_ranges, decode_cells, open_cells
from moczarr_store.cells import ComputedIds
from moczarr_store.hive.ids import word_to_decimal

xdggs = pytest.importorskip("xdggs", reason="xdggs is in the test extra (pinned per Python)")

FIXTURE_NAMES = [root.name for root in fixture_roots()]
GROUPS = [(name, g.path) for name in FIXTURE_NAMES for g in pristine(name).groups]


def _store(name: str, **options) -> MocHiveStore:
    return MocHiveStore(FIXTURES / name, **options)


def _open(name: str, path: str, **options) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported, not tested here
        return xr.open_zarr(_store(name, **options), group=path)


def _geodetic(words: np.ndarray, latitude: str = "authalic") -> tuple[np.ndarray, np.ndarray]:
    """mortie's cell centres: ``"authalic"`` (its default: cells on the authalic sphere,
    geodetic WGS84 degrees) or ``"geodetic-spherical"`` (latitudes used as spherical)."""
    lat, lon = mortie.mort2geo(words, latitude=latitude)
    return np.asarray(lat), (np.asarray(lon) + 180) % 360 - 180


@pytest.mark.parametrize(("name", "path"), GROUPS)
def test_xdggs_decodes_every_group_and_cell_centres_are_mortie_s(name, path):
    ds = _open(name, path)
    order = int(path.rsplit("/o", 1)[1])
    assert set(ds.cell_ids.attrs) <= {"grid_name", "level", "indexing_scheme", "ellipsoid"}
    decoded = xdggs.decode(ds)
    assert decoded.dggs.grid_info.level == order
    words = ds.morton.values
    centres = decoded.dggs.cell_centers().compute()
    # the group declares its latitudes (zagg 0.38 declared none: spherical, as mortie's legacy)
    authalic = ds.attrs["dggs"].get("latitude") == "authalic-wgs84"
    lat, lon = _geodetic(words, "authalic" if authalic else "geodetic-spherical")
    np.testing.assert_allclose(centres["latitude"].values, lat, atol=1e-7)
    np.testing.assert_allclose((centres["longitude"].values + 180) % 360 - 180, lon, atol=1e-7)


def test_sel_latlon_finds_the_cell_mortie_encodes():
    ds = xdggs.decode(_open("sharded", "atl06/o7"))
    ref = pristine_references("sharded")[("atl06/o7", None)]
    rows = [0, 70, 191]
    lat, lon = _geodetic(ref.morton[rows])
    assert (mortie.geo2mort(lat, lon, order=7) == ref.morton[rows]).all()  # the oracle's cells
    got = ds.dggs.sel_latlon(lat, lon)
    np.testing.assert_array_equal(got.morton.values, ref.morton[rows])
    np.testing.assert_array_equal(got["count"].values, ref.values["count"][rows])


@pytest.mark.parametrize("to", [0, 3, 6])
def test_zoom_to_gives_the_nested_parents(to):
    ds = xdggs.decode(_open("sharded", "atl06/o7"))
    ids = ds.cell_ids.values
    parents = np.asarray(ds.dggs.zoom_to(to))
    np.testing.assert_array_equal(parents, ids >> np.uint64(2 * (7 - to)))
    # mortie agrees: a cell's centre lies in its parent at order ``to``
    lat, lon = _geodetic(ds.morton.values)
    words = mortie.geo2mort(lat, lon, order=to)
    np.testing.assert_array_equal(
        parents, (words >> np.uint64(6 + 2 * (27 - to))) - np.uint64(4**to))


@pytest.mark.parametrize("chunking", ["leaf", 2])
@pytest.mark.parametrize(("name", "path"), GROUPS)
def test_coordinates_are_chunked_on_every_field_s_boundaries(name, path, chunking):
    ds = _open(name, path, chunking=chunking)
    cells = {n: v.chunks[v.dims.index("cells")] for n, v in ds.variables.items()
             if "cells" in v.dims and v.chunks}
    edges = {n: set(np.cumsum(c)) for n, c in cells.items()}
    for coord in ("morton", "cell_ids"):
        for field, field_edges in edges.items():
            assert field_edges <= edges[coord], (coord, field)
    ragged = any(ds[n].dtype == object for n in ds.data_vars)
    if chunking == "leaf" or not ragged:
        # one chunking for all: ragged digests (sharded, 4 inner chunks per leaf) are
        # re-encoded one chunk per leaf in "leaf" mode
        assert len(set(cells.values())) == 1
        assert ds.chunks["cells"] == cells["cell_ids"]
    else:  # a span joins fixed-size leaves only: the digests stay one leaf per chunk
        with pytest.raises(ValueError, match="inconsistent chunks"):
            _ = ds.chunks
    if "window" in ds.dims:
        assert all(ds[n].chunks[0] == (1,) * ds.sizes["window"]
                   for n in ("window_start", "window_end") if n in ds)


@pytest.mark.parametrize("geometry", ["covered", "sphere"])
def test_label_selection_by_cell_id_morton_word_and_decimal(geometry):
    ref = pristine_references("sharded")[("atl06/o7", None)]
    ds = open_cells(_store("sharded", geometry=geometry), "atl06/o7")
    assert ds.xindexes["cell_ids"].__class__.__name__ == "HealpixIndex"
    rows = np.array([0, 5, 64, 191])
    ids = (ref.morton[rows] >> np.uint64(6 + 2 * 20)) - np.uint64(4**7)
    for got in (ds.sel(cell_ids=ids), ds.sel(morton=ref.morton[rows]),
                ds.sel(morton=[word_to_decimal(w) for w in ref.morton[rows]])):
        np.testing.assert_array_equal(got.morton.values, ref.morton[rows])
        np.testing.assert_array_equal(got.cell_ids.values, ids)
        np.testing.assert_array_equal(got["count"].values, ref.values["count"][rows])
    one = ds.sel(morton=int(ref.morton[64]))
    assert one["count"].values == ref.values["count"][64] and one.morton.values == ref.morton[64]
    assert ds.sel(cell_ids=int(ids[1]))["count"].values == ref.values["count"][5]
    at = 64 if geometry == "covered" else int(ids[2])  # the row of ref row 64
    part = ds.isel(cells=slice(at - 4, at + 6))  # a slice keeps the index
    assert isinstance(part.xindexes["morton"], type(ds.xindexes["morton"]))
    assert part.sel(morton=ref.morton[64])["count"].values == ref.values["count"][64]
    if geometry == "covered":
        np.testing.assert_array_equal(part.morton.values, ref.morton[60:70])
    with pytest.raises(KeyError):
        part.sel(morton=ref.morton[5])
    with pytest.raises(KeyError):
        ds.sel(morton="12345")  # a decimal id of another order


COMPUTED = ("morton", "cell_ids", "healpix_index")


def test_runs_give_each_row_s_rank_by_slice_and_by_pick():
    from moczarr_store.cells import Runs

    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 40, 50)
    starts = np.cumsum(lengths + rng.integers(1, 9, 50)).astype(np.uint64) + np.uint64(4**7)
    runs = Runs(7, starts, np.concatenate([[0], np.cumsum(lengths)]))
    want = np.concatenate([np.arange(a, a + n, dtype=np.uint64)
                           for a, n in zip(starts, lengths, strict=True)])
    for start, stop in ((0, runs.size), (5, 6), (17, 300), (runs.size, runs.size), (9, 3)):
        np.testing.assert_array_equal(runs.ranks(start, stop), want[start:stop])
    rows = rng.integers(0, runs.size, 100)
    np.testing.assert_array_equal(runs.ranks_at(rows), want[rows])


def test_decoded_coordinates_equal_the_fabricated_ones_in_every_group():
    picks = (slice(None), slice(3, 40), slice(None, None, 5), 7, -1, [0, -2, 9, 9, 3])
    for name, path in GROUPS:
        store = _store(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = xr.open_zarr(store, group=path)
            decoded = decode_cells(plain, cell_ranges(store, path))
        for coord in (c for c in COMPUTED if c in plain.variables):
            assert isinstance(decoded[coord].variable._data, ComputedIds), coord
            want = plain[coord].values
            np.testing.assert_array_equal(decoded[coord].values, want)
            for pick in picks[: 1 if want.size < 10 else None]:
                got = decoded.isel(cells=pick)[coord].values
                np.testing.assert_array_equal(got, want[pick], err_msg=f"{name} {coord} {pick}")
        with pytest.raises(IndexError, match="out of"):
            decoded["morton"].variable._data[[decoded.sizes["cells"]]]


def test_load_reads_the_fields_and_leaves_the_computed_coordinates_unread(monkeypatch):
    """``.load()`` of ``open_cells`` asks the store for the fields' chunks and no
    coordinate chunk; the coordinates are still computed, equal to moczarr's, when asked
    for."""
    ref = pristine_references("sharded")[("atl06/o7", None)]
    ds = open_cells(_store("sharded"), "atl06/o7")
    keys: list[str] = []
    get = MocHiveStore.get

    async def recording(self, key, *args, **kwargs):
        keys.append(key)
        return await get(self, key, *args, **kwargs)

    monkeypatch.setattr(MocHiveStore, "get", recording)  # zarr reads through copies of it
    loaded = ds.load()
    assert keys and not [k for k in keys if k.split("/")[2] in COMPUTED], keys
    assert {k.split("/")[2] for k in keys} >= {"count", "h_mean"}
    for coord in COMPUTED:
        assert isinstance(loaded[coord].variable._data, ComputedIds), coord
    np.testing.assert_array_equal(loaded.morton.values, ref.morton)
    np.testing.assert_array_equal(loaded["count"].values, ref.values["count"])
    ids = (ref.morton >> np.uint64(6 + 2 * 20)) - np.uint64(4**7)
    np.testing.assert_array_equal(loaded.healpix_index.values, ids)
    np.testing.assert_array_equal(loaded.cell_ids.values + 0, ids)  # numpy given its values


def test_ranges_that_do_not_fit_the_dataset_are_refused():
    store = _store("sharded")
    ds = xr.open_zarr(store, group="atl06/o7")
    with pytest.raises(HiveFormatError, match="ranges hold"):
        decode_cells(ds, np.array([[0, 1 << 44]], dtype="u8"))  # one order-7 cell
    with pytest.raises(HiveFormatError, match="not ascending runs"):
        decode_cells(ds, np.array([[0, 1 << 40]], dtype="u8"))  # not a whole order-7 cell
    with pytest.raises(HiveFormatError, match="not a cell-order group"):
        cell_ranges(store, "atl06")


def test_arguments_of_the_wrong_kind_are_refused_saying_what_is_expected():
    """Float ranges cannot hold order-29 ids exactly (2**53 < 12 * 4**29): refused, not
    rounded."""
    store = _store("sharded")
    ds = xr.open_zarr(store, group="atl06/o7")
    ranges = cell_ranges(store, "atl06/o7")
    for bad in (ranges.astype(float), ranges[:, :1], None):
        with pytest.raises(TypeError, match=r"ranges are cell_ranges' \(n, 2\) integer array"):
            decode_cells(ds, bad)
    with pytest.raises(HiveFormatError, match="not negative"):
        decode_cells(ds, -ranges.astype(np.int64))
    with pytest.raises(TypeError, match="decode_cells takes a Dataset, got DataArray"):
        decode_cells(ds["count"], ranges)
    with pytest.raises(TypeError, match="cell_ranges reads a MocHiveStore, got str"):
        cell_ranges(str(FIXTURES / "sharded"), "atl06/o7")
    with pytest.raises(TypeError, match="group is a str"):
        cell_ranges(store, None)


def test_cell_id_selection_is_in_request_order_and_refuses_unknown_ids():
    ref = pristine_references("sharded")[("atl06/o7", None)]
    ds = open_cells(_store("sharded"), "atl06/o7")
    rows = np.array([100, 3, 64, 3])  # out of order, repeated
    ids = (ref.morton[rows] >> np.uint64(6 + 2 * 20)) - np.uint64(4**7)
    for got in (ds.sel(cell_ids=ids), ds.sel(cell_ids=ids.tolist()),
                ds.sel(morton=ref.morton[rows]), ds.sel(morton=ref.morton[rows].tolist())):
        np.testing.assert_array_equal(got.cell_ids.values, ids)
        np.testing.assert_array_equal(got.morton.values, ref.morton[rows])
        np.testing.assert_array_equal(got["count"].values, ref.values["count"][rows])
        assert "cell_ids" not in got.xindexes or (np.diff(rows) > 0).all()
    absent = int(ids.max()) + 10**6
    with pytest.raises(KeyError, match="1 of 2 cell ids are not in this domain"):
        ds.sel(cell_ids=[int(ids[0]), absent])
    with pytest.raises(KeyError, match="not in this domain"):
        ds.sel(cell_ids=absent)
    with pytest.raises(KeyError, match="non-negative integers"):
        ds.sel(cell_ids=[-1])
    sorted_pick = ds.sel(cell_ids=np.sort(np.unique(ids)))
    assert type(sorted_pick.xindexes["cell_ids"]).__name__ == "HealpixIndex"
    centres = sorted_pick.dggs.cell_centers().compute()
    lat, _ = _geodetic(np.sort(np.unique(ref.morton[rows])))
    np.testing.assert_allclose(centres["latitude"].values, lat, atol=1e-7)


def test_a_morton_index_can_be_set_from_the_words():
    from moczarr_store.cells import MortonIndex

    ref = pristine_references("sharded")[("atl06/o7", None)]
    ds = xr.open_zarr(_store("sharded"), group="atl06/o7").set_xindex("morton", MortonIndex)
    assert ds.xindexes["morton"]._repr_inline_(80) == "MortonIndex(order=7, runs=2)"
    got = ds.sel(morton=ref.morton[[7, 150]])
    np.testing.assert_array_equal(got["count"].values, ref.values["count"][[7, 150]])
    with pytest.raises(HiveFormatError, match="ascending"):
        ds.isel(cells=[3, 1]).set_xindex("morton", MortonIndex)  # a pick drops the index
