"""The CF HEALPix layer of every level: the grid mapping, the index coordinate, the cell
centres, and what the tools that read CF make of them.

Expected centres come from cdshealpix (spherical HEALPix) and healpix-geo (its WGS84
ellipsoid: authalic latitudes made geodetic), never from mortie, which the store uses.
"""

from __future__ import annotations

import warnings

import cdshealpix
import cf_xarray  # noqa: F401  (registers the .cf accessor)
import healpix_geo
import numpy as np
import pytest
import xarray as xr
import xdggs
from packaging.version import Version
from support.hives import FIXTURES, fixture_roots
from support.hostile import pristine

from moczarr_store import MocHiveStore
from moczarr_store.cells import ComputedCentres, open_cells

FIXTURE_NAMES = [root.name for root in fixture_roots()]
GROUPS = [(name, g.path) for name in FIXTURE_NAMES for g in pristine(name).groups]
CF_COORDS = ("healpix_index", "lon", "lat", "healpix")


def _open(name: str, path: str, centres: bool = True, **options) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported, not tested here
        return xr.open_zarr(MocHiveStore(FIXTURES / name, centres=centres, **options),
                            group=path)


def _centres(ids: np.ndarray, order: int, wgs84: bool) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's cell centres, longitudes in [-180, 180)."""
    if wgs84:
        lon, lat = healpix_geo.nested.healpix_to_lonlat(ids.astype("u8"), order,
                                                        ellipsoid="WGS84")
    else:
        lon, lat = cdshealpix.nested.healpix_to_lonlat(ids.astype("u8"), order)
        lon, lat = lon.to_value("deg"), lat.to_value("deg")
    return (np.asarray(lon) + 180) % 360 - 180, np.asarray(lat)


@pytest.mark.parametrize("chunking", ["auto", "shard", 2])
@pytest.mark.parametrize(("name", "path"), GROUPS)
def test_cell_centres_are_the_oracle_s_and_chunked_like_the_fields(name, path, chunking):
    ds = _open(name, path, chunking=chunking)
    order = int(path.rsplit("/o", 1)[1])
    wgs84 = ds.attrs.get("dggs", {}).get("latitude") == "authalic-wgs84"
    ids = ds.cell_ids.values
    np.testing.assert_array_equal(ds.healpix_index.values, ids)
    lon, lat = _centres(ids, order, wgs84)
    np.testing.assert_allclose(ds.lat.values, lat, rtol=0, atol=1e-7)
    gap = (ds.lon.values - lon + 180) % 360 - 180  # one longitude, either side of 180
    np.testing.assert_allclose(gap, 0, rtol=0, atol=1e-7)
    assert np.all((ds.lon.values >= -180) & (ds.lon.values < 180))
    for coord in ("lon", "lat", "healpix_index"):
        assert ds[coord].chunks == ds.cell_ids.chunks
    mapping = ds.healpix
    assert mapping.shape == () and int(mapping) == 0
    want = {"grid_mapping_name": "healpix", "refinement_level": order,
            "indexing_scheme": "nested"}
    if wgs84:
        want |= {"semi_major_axis": 6378137.0, "inverse_flattening": 298.257223563}
    assert mapping.attrs == want
    for field in ds.data_vars.values():
        if "cells" in field.dims:
            assert field.attrs["grid_mapping"] == "healpix"
            assert set(CF_COORDS) <= set(field.encoding["coordinates"].split())


def test_without_centres_every_level_has_the_grid_mapping_and_index():
    """By default (``centres=False``) a field's load computes no centre."""
    ds = _open("windowed", "atl06/o7", centres=False)
    assert not {"lon", "lat"} & set(ds.variables)
    np.testing.assert_array_equal(ds.healpix_index.values, ds.cell_ids.values)
    assert ds.healpix.attrs["refinement_level"] == 7
    for field in ds.data_vars.values():
        assert field.attrs["grid_mapping"] == "healpix"
        assert field.encoding["coordinates"].split()[-2:] == ["healpix_index", "healpix"]


def test_sphere_centres_cover_every_cell():
    """``geometry="sphere"``: row ``r`` is cell ``r`` of the whole sphere."""
    ds = _open("paged", "atl06/o8", geometry="sphere", chunking=64)
    wgs84 = ds.attrs.get("dggs", {}).get("latitude") == "authalic-wgs84"
    ids = np.arange(12 * 4**8, dtype="u8")
    lon, lat = _centres(ids, 8, wgs84)
    np.testing.assert_allclose(ds.lat.values, lat, rtol=0, atol=1e-7)
    np.testing.assert_allclose((ds.lon.values - lon + 180) % 360 - 180, 0, rtol=0, atol=1e-7)


@pytest.fixture
def kernel_calls(monkeypatch) -> list[int]:
    """The rows of each call of the centres' kernel (mortie's ``pix2ang``) from here on."""
    import mortie._healpix

    rows: list[int] = []
    real = mortie._healpix.pix2ang

    def counted(depth, pixels):
        rows.append(len(pixels))
        return real(depth, pixels)

    monkeypatch.setattr(mortie._healpix, "pix2ang", counted)
    return rows


def test_centres_are_computed_per_chunk_when_read(kernel_calls):
    """Opening computes no centre; reading one chunk computes that chunk's rows only."""
    rows = kernel_calls
    ds = _open("paged", "atl06/o8", geometry="sphere", chunking=64)
    assert rows == []
    first = ds.lat.chunks[0][0]
    assert ds.lat[:10].values.size == 10
    assert rows == [first]
    assert ds.lon[:10].values.size == 10  # the other half of the pair: kept
    assert rows == [first]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_open_cells_computes_the_centres_when_asked(name):
    """``open_cells`` of a ``centres=True`` store: ``lon`` / ``lat`` are the oracle's,
    computed from the runs, whole or picked."""
    path = pristine(name).groups[0].path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = open_cells(MocHiveStore(FIXTURES / name, centres=True), path)
    order = int(path.rsplit("/o", 1)[1])
    wgs84 = ds.attrs.get("dggs", {}).get("latitude") == "authalic-wgs84"
    lon, lat = _centres(ds.cell_ids.values, order, wgs84)
    for axis, want in (("lon", lon), ("lat", lat)):
        assert isinstance(ds[axis].variable._data, ComputedCentres), axis
        got = ds[axis].values
        np.testing.assert_allclose((got - want + 180) % 360 - 180, 0, rtol=0, atol=1e-7)
        rows = np.array([0, ds.sizes["cells"] - 1, ds.sizes["cells"] // 2])
        picked = ds.isel(cells=rows)[axis].values
        np.testing.assert_allclose((picked - want[rows] + 180) % 360 - 180, 0, atol=1e-7)
    assert ds.lon.attrs["standard_name"] == "longitude"


def test_open_cells_loads_a_field_without_computing_a_centre(kernel_calls):
    """``.load()`` of a field, or of the whole dataset, computes no centre; the centres
    stay computed and are still there when asked for."""
    calls = kernel_calls
    ds = open_cells(MocHiveStore(FIXTURES / "sharded", centres=True), "atl06/o7")
    field, loaded = ds["h_mean"].load(), ds.load()
    assert calls == []
    for axis in ("lon", "lat"):
        assert isinstance(field[axis].variable._data, ComputedCentres)
        assert isinstance(loaded[axis].variable._data, ComputedCentres)
    wgs84 = ds.attrs.get("dggs", {}).get("latitude") == "authalic-wgs84"
    _, want = _centres(ds.cell_ids.values, 7, wgs84)
    np.testing.assert_allclose(loaded.lat.values, want, rtol=0, atol=1e-7)
    assert calls == [want.size]  # asked for: computed, once


def test_cf_xarray_finds_the_grid_mapping_and_coordinates():
    assert cf_xarray
    ds = _open("sharded", "atl06/o7")
    assert ds.cf.standard_names["healpix_index"] == ["healpix_index"]
    assert ds.cf.standard_names["longitude"] == ["lon"]
    assert ds.cf.standard_names["latitude"] == ["lat"]
    (mapping,) = ds.cf.grid_mappings
    assert mapping.name == "healpix"
    assert mapping.crs.is_geographic
    assert ds["h_mean"].cf["longitude"].name == "lon"


def test_xdggs_decodes_with_its_cf_convention():
    if Version(xdggs.__version__) < Version("0.7"):
        pytest.skip("xdggs 0.6's CF decoder refuses the ellipsoid parameters CF defines "
                    "(semi_major_axis, inverse_flattening); 0.7 reads them")
    ds = _open("sharded", "atl06/o7")
    decoded = xdggs.decode(ds, convention="cf")
    assert decoded.dggs.grid_info.level == 7
    assert "healpix" not in decoded.variables
    centres = decoded.dggs.cell_centers().compute()
    np.testing.assert_allclose(centres["latitude"].values, ds.lat.values, atol=1e-7)
    np.testing.assert_allclose((centres["longitude"].values + 180) % 360 - 180, ds.lon.values,
                               atol=1e-7)
    # the xdggs convention (cell_ids' attributes) decodes as before, beside the CF one
    assert xdggs.decode(ds, convention="xdggs").dggs.grid_info.level == 7
