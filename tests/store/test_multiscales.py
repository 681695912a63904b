"""Product groups with overview orders carry the zarr ``multiscales`` convention.

The layout names the ``o{order}`` level groups finest first, each with its cell order and
coarsening factor (cells of the finest level per cell of its own). Expected levels and
cell orders come from moczarr's ``open_pyramid``; the attributes are validated against a
JSON schema written here from the convention's published schema
(zarr-conventions/multiscales, v1).
"""

from __future__ import annotations

import warnings

import jsonschema
import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES

from moczarr_store import MocHiveStore

CONVENTION = {
    "schema_url": "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json",
    "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v1/README.md",
    "uuid": "d35379db-88df-4056-af3a-620245f8e347",
    "name": "multiscales",
    "description": "Multiscale layout of zarr datasets",
}
_PATH = r"^(?!/)(?!.*(\.\.))([^/]+(/[^/]+)*)$"  # relative, no "..": the convention's rule
SCHEMA = {  # a group's zarr.json that follows the convention (draft 7)
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["zarr_format", "node_type", "attributes"],
    "properties": {
        "node_type": {"enum": ["group"]},
        "attributes": {
            "type": "object",
            "required": ["zarr_conventions", "multiscales"],
            "properties": {
                "zarr_conventions": {"type": "array", "contains": {"$ref": "#/$defs/entry"}},
                "multiscales": {
                    "type": "object",
                    "required": ["layout"],
                    "properties": {
                        "layout": {"type": "array", "minItems": 1,
                                   "items": {"$ref": "#/$defs/level"}},
                        "resampling_method": {"type": "string"},
                    },
                },
            },
        },
    },
    "$defs": {
        "entry": {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: {"type": "string", "const": value}
                           for key, value in CONVENTION.items()},
            "anyOf": [{"required": ["schema_url"]}, {"required": ["spec_url"]},
                      {"required": ["uuid"]}],
        },
        "level": {
            "type": "object",
            "required": ["asset"],
            "properties": {
                "asset": {"type": "string", "pattern": _PATH},
                "derived_from": {"type": "string", "pattern": _PATH},
                "transform": {
                    "type": "object",
                    "properties": {
                        "scale": {"type": "array", "items": {"type": "number"}},
                        "translation": {"type": "array", "items": {"type": "number"}},
                    },
                },
                "resampling_method": {"type": "string"},
            },
            "if": {"required": ["derived_from"]},
            "then": {"required": ["transform"]},
        },
    },
}
PYRAMIDS = [("pyramid1", "atl06", {}), ("pyramid1_resweep", "atl06", {}),
            ("pyramid2", "atl06", {}), ("windowed_explicit", "atl06", {"window": "early"})]
# products of one order: nothing declares a fold (mixed_writers), or computed orders off
SINGLE = [("mixed_writers", "atl06", "missing"), ("bare_versioned", "atl06", "none"),
          ("windowed", "atl06", "none"), ("multiproduct", "atl06_a", "none")]


def _group(fixture: str, path: str, computed_orders: str = "missing") -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(MocHiveStore(FIXTURES / fixture, computed_orders=computed_orders),
                               mode="r")
        return root[path].metadata.to_dict()


def test_the_schema_check_can_fail():
    """The schema refuses what the convention refuses (so passing it means something)."""
    validator = jsonschema.Draft7Validator(SCHEMA)
    good = {"zarr_format": 3, "node_type": "group", "attributes": {
        "zarr_conventions": [CONVENTION],
        "multiscales": {"layout": [{"asset": "o7"}, {"asset": "o5", "derived_from": "o7",
                                                      "transform": {"scale": [16.0]}}]}}}
    assert validator.is_valid(good)
    for bad in ({"asset": "o5", "derived_from": "o7"}, {"asset": "/o5"}, {"asset": "../o5"},
                {"asset": "o5", "derived_from": "o7", "transform": {"scale": ["16"]}}):
        doc = {**good, "attributes": {**good["attributes"],
                                      "multiscales": {"layout": [bad]}}}
        assert not validator.is_valid(doc), bad
    wrong = {**good, "attributes": {**good["attributes"],
                                    "zarr_conventions": [{**CONVENTION, "uuid": "x"}]}}
    assert not validator.is_valid(wrong)


@pytest.mark.parametrize(("fixture", "product", "select"), PYRAMIDS)
def test_product_groups_with_overviews_carry_multiscales(fixture, product, select):
    meta = _group(fixture, product)
    jsonschema.validate(meta, SCHEMA, cls=jsonschema.Draft7Validator)
    attrs = meta["attributes"]
    assert attrs["zarr_conventions"].count(CONVENTION) == 1
    pyramid = moczarr.open_pyramid(str(FIXTURES / fixture), **select)
    orders = {name: pyramid[name].attrs["morton_hive"]["cell_order"] for name in pyramid}
    stored = sorted(orders, key=lambda name: -orders[name])
    # every order of the product: the stored ones (moczarr's), the others computed
    want = [f"o{k}" for k in range(orders[stored[0]], -1, -1)]
    layout = attrs["multiscales"]["layout"]
    assert [level["asset"] for level in layout] == want and set(stored) <= set(want)
    finest = want[0]
    assert "derived_from" not in layout[0]
    for level in layout:
        order = int(level["asset"][1:])
        factor = 4 ** (orders[finest] - order)
        assert level["cell_order"] == order
        assert level["coarsening_factor"] == factor
        assert level["transform"] == {"scale": [float(factor)]}
        assert level.get("derived_from", finest) == finest
        if level["asset"] not in orders:
            continue
        # each coarse cell aggregates `factor` cells of the finest: their NESTED parents
        fine = pyramid[finest]["cell_ids"].values
        coarse = pyramid[level["asset"]]["cell_ids"].values
        parents = np.unique(fine.astype(np.uint64) // np.uint64(factor))
        assert np.isin(parents, coarse).all(), level


@pytest.mark.parametrize(("fixture", "path", "computed_orders"), SINGLE)
def test_groups_of_one_order_have_no_multiscales(fixture, path, computed_orders):
    attrs = _group(fixture, path, computed_orders)["attributes"]
    assert "multiscales" not in attrs
    assert CONVENTION not in attrs.get("zarr_conventions", [])


def test_open_datatree_picks_a_level_from_the_layout():
    """The layout names a level ``xr.open_datatree`` opens: the coarsest order's cells and
    counts are moczarr's."""
    tree = xr.open_datatree(MocHiveStore(FIXTURES / "pyramid1", computed_orders="none"),
                            engine="zarr")
    coarsest = tree["atl06"].attrs["multiscales"]["layout"][-1]["asset"]
    level = tree["atl06"][coarsest].to_dataset()
    reference = moczarr.open_pyramid(str(FIXTURES / "pyramid1"))[coarsest]
    np.testing.assert_array_equal(level["cell_ids"].values, reference["cell_ids"].values)
    np.testing.assert_array_equal(level["count"].values, reference["count"].values)


def test_consolidated_metadata_is_deterministic():
    """Two opens give the same root document byte for byte (the layout is derived from
    the levels, in order)."""
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    async def root_document() -> bytes:
        buffer = await MocHiveStore(FIXTURES / "pyramid2").get(
            "zarr.json", default_buffer_prototype())
        assert buffer is not None
        return buffer.to_bytes()

    first, second = asyncio.run(root_document()), asyncio.run(root_document())
    assert first == second and b'"multiscales"' in first


def test_the_all_time_folds_list_every_order():
    """A windowed product's all-time folds: the stored one (o2) and every other order
    computed, from the source's own (o4, folded across windows) down to 0."""
    meta = _group("windowed_explicit", "atl06/all_time")
    jsonschema.validate(meta, SCHEMA, cls=jsonschema.Draft7Validator)
    layout = meta["attributes"]["multiscales"]["layout"]
    assert [level["asset"] for level in layout] == ["o4", "o3", "o2", "o1", "o0"]
