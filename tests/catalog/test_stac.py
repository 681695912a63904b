"""``moczarr-store stac``: a static STAC catalog of a hive, checked against the STAC 1.1.0
JSON schemas pystac installs (offline: the datacube extension's own schema is not
installed by any package, so its fields are read back through pystac's extension API),
read back by pystac, and its footprints compared with the cells moczarr reads."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import healpix_geo.nested
import moczarr
import numpy as np
import pystac
import pytest
import shapely
from jsonschema import Draft7Validator
from pystac.extensions.datacube import DatacubeExtension
from pystac.validation.local_validator import get_local_schema_cache
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from tests.support.hives import FIXTURES

from moczarr_store.cli import main
from moczarr_store.polygons import bbox, footprint

SCHEMAS = get_local_schema_cache()
STAC = "https://schemas.stacspec.org/v1.1.0"


def _offline(uri: str):
    raise NoSuchResource(ref=uri)  # a schema not installed is a failure, never a download


REGISTRY = Registry(retrieve=_offline).with_resources(  # type: ignore[call-arg]
    (uri, Resource.from_contents(doc)) for uri, doc in SCHEMAS.items())


def assert_valid(doc: dict, kind: str) -> None:
    schema = SCHEMAS[f"{STAC}/{kind}-spec/json-schema/{kind}.json"]
    errors = [e.message for e in Draft7Validator(schema, registry=REGISTRY).iter_errors(doc)]
    assert not errors, errors[:3]


def write(tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / f"stac-{name}"
    assert main(["stac", str(FIXTURES / name), str(out), *extra]) == 0
    return out / "collection.json"


def data_centres(root: Path, window: str | None = None) -> np.ndarray:
    """``(lon, lat)`` of every cell moczarr reads a count for (the oracle)."""
    ds = moczarr.open_hive(str(root), **({"window": window} if window else {}))
    ids = ds["cell_ids"].values[ds["count"].values > 0].astype(np.uint64)
    lon, lat = healpix_geo.nested.healpix_to_lonlat(ids, int(ds.attrs["dggs"][
        "refinement_level"]), ellipsoid="WGS84")
    return np.stack([(lon + 180) % 360 - 180, lat], axis=1)


def test_a_windowed_hive_is_a_collection_with_an_item_per_window(tmp_path):
    path = write(tmp_path, "windowed", "--serve-url", "http://127.0.0.1:8000/",
                 "--refs", "kerchunk-json=https://example.org/windowed.json")
    doc = json.loads(path.read_text())
    assert_valid(doc, "collection")
    collection = pystac.Collection.from_file(str(path))
    assert collection.extent.temporal.intervals == [[
        pystac.utils.str_to_datetime("2019-01-01T00:00:00Z"),
        pystac.utils.str_to_datetime("2021-01-01T00:00:00Z")]]
    assets = collection.assets
    assert assets["hive"].href == (FIXTURES / "windowed").as_uri()
    assert assets["zarr"].href == "http://127.0.0.1:8000"
    assert assets["refs-kerchunk-json"].roles == ["references"]
    cube = DatacubeExtension.ext(collection)
    assert set(cube.variables) == {f"atl06/o7/{f}" for f in ("count", "h_max", "h_mean",
                                                              "h_min")}
    assert cube.variables["atl06/o7/count"].dimensions == ["window", "cells"]
    assert cube.dimensions["window"].dim_type == "temporal"
    items = {item.id: item for item in collection.get_items()}
    assert set(items) == {"atl06-2019", "atl06-2020"}
    for label, item in items.items():
        assert_valid(item.to_dict(), "item")
        assert item.assets["zarr"].href == "http://127.0.0.1:8000/atl06/o7"
        year = int(label[-4:])
        assert item.common_metadata.start_datetime.year == year
        assert item.common_metadata.end_datetime.year == year + 1
        shape = shapely.geometry.shape(item.geometry)
        assert shape.is_valid
        # every cell with data in this window lies in the Item's footprint
        centres = data_centres(FIXTURES / "windowed", label[-4:])
        assert centres.size and shapely.contains_xy(shape, centres[:, 0],
                                                    centres[:, 1]).all()


def test_numbered_windows_keep_their_labels_in_the_items(tmp_path):
    """Opened with ``--window-labels index`` (``window`` holds positions), the Items are
    still named by the window labels."""
    path = write(tmp_path, "windowed", "--window-labels", "index")
    items = pystac.Collection.from_file(str(path)).get_items()
    assert {item.id for item in items} == {"atl06-2019", "atl06-2020"}


def test_pystac_client_opens_the_root_catalog(tmp_path):
    """pystac-client starts from a Catalog: ``catalog.json`` holds the collection."""
    import pystac_client

    path = write(tmp_path, "windowed_explicit")
    root = path.parent / "catalog.json"
    assert_valid(json.loads(root.read_text()), "catalog")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a static catalog conforms to no API
        client = pystac_client.Client.open(str(root))
        assert [c.id for c in client.get_collections()] == ["windowed_explicit"]
        assert sorted(i.id for i in client.get_items()) == ["atl06-early", "atl06-late"]


def test_every_product_is_described_with_its_own_cells(tmp_path):
    path = write(tmp_path, "multiproduct")
    assert_valid(json.loads(path.read_text()), "collection")
    collection = pystac.Collection.from_file(str(path))
    assert list(collection.get_items()) == []  # no windows: no time to give an Item
    cube = DatacubeExtension.ext(collection)
    assert set(cube.dimensions) == {"cells_o6", "cells_o7"}
    assert cube.variables["atl06_a/o6/h_mean"].dimensions == ["cells_o6"]
    assert cube.variables["atl06_b/o7/count"].to_dict()["data_type"] == "int64"
    boxes = collection.extent.spatial.bboxes
    assert len(boxes) == 3  # the overall box, then one per product
    for product, box in zip(("atl06_a", "atl06_b"), boxes[1:], strict=True):
        centres = data_centres(FIXTURES / "multiproduct" / product)
        assert (centres[:, 0] >= box[0]).all() and (centres[:, 0] <= box[2]).all()
        assert (centres[:, 1] >= box[1]).all() and (centres[:, 1] <= box[3]).all()


def test_a_footprint_across_the_antimeridian_is_cut_there():
    """Order-3 cells on both sides of 180 degrees: two parts, each within [-180, 180], and
    a box whose west edge is east of its east edge (it crosses the antimeridian)."""
    ids = healpix_geo.nested.lonlat_to_healpix(np.array([179.0, -179.0]),
                                               np.array([0.0, 0.0]), 3, ellipsoid="WGS84")
    moc = "3/" + " ".join(str(int(i)) for i in sorted(set(ids.tolist())))
    shape = footprint(moc)
    assert shape.is_valid and shape.geom_type == "MultiPolygon"
    assert shape.bounds[0] == -180 and shape.bounds[2] == 180
    west, _, east, _ = bbox(shape)
    assert 160 < west <= 180 and -180 <= east < -160


def test_a_footprint_over_a_pole_reaches_it():
    shape = footprint("0/0-3")  # the four northern base cells
    assert shape.is_valid
    assert shape.bounds == pytest.approx((-180, 0, 180, 90), abs=1e-9)


def test_bad_arguments_are_named(tmp_path, capsys):
    out = tmp_path / "stac"
    assert main(["stac", str(FIXTURES / "windowed"), str(out), "--refs", "zip=x"]) == 2
    assert "expected FORMAT=HREF" in capsys.readouterr().err
    out.mkdir()
    (out / "keep").write_text("")
    assert main(["stac", str(FIXTURES / "windowed"), str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err
