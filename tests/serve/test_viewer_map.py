"""The viewer's map in headless Chromium (``clients/js/viewer_steps.mjs``): land and sea
where the world has them at several zooms, pans and projections, the view kept across
field switches, what it says when there is nothing to draw, and the geographic context
of a small first view. Colours are read from the map's canvas: the land is drawn warm
(red above blue), the sea cool (blue above red), cells in viridis, coastlines grey.
"""

from __future__ import annotations

import json

import pytest
from support.jsclients import chromium, run_node
from support.serving import FIXTURES, Served

from moczarr_store.serve import create_app

# points off the graticule's lines (multiples of 5 degrees at these zooms)
AFRICA, EUROPE = (22.0, 12.0), (12.0, 52.0)  # Chad, Germany
CASPIAN, STEPPE = (51.0, 42.0), (44.0, 46.0)  # the middle Caspian, and land west of it


def _steps(fixture: str, steps: list, query: str = "", **options) -> list[dict]:
    """The page's state after loading and after each step (viewer_steps.mjs)."""
    with Served(create_app(FIXTURES / fixture, **options)) as server:
        got = run_node("viewer_steps.mjs", chromium(), f"{server.url}/{query}", json.dumps(steps))
    assert got["errors"] == [], got["errors"]
    assert all(s["page"] == "drawn" for s in got["steps"]), [s["status"] for s in got["steps"]]
    return got["steps"]


def _land(rgb) -> bool:
    return rgb is not None and rgb[0] > rgb[2] + 4


def _sea(rgb) -> bool:
    return rgb is not None and rgb[2] > rgb[0] + 4


def test_land_and_water_at_every_zoom_pan_and_projection():
    """Afro-Eurasia is stored as one ring at -377.6 ... -169.9 degrees of longitude: it is
    land in every view that shows it, whether the view's east edge is east or west of
    180 degrees, and the Caspian (a hole in that ring) is water. The Arctic and Antarctic
    projections show Greenland and Antarctica as land, the oceans around as water, and
    the product's cells over Greenland; back on the plate carrée from the south pole, the
    map is filled from pole to pole."""
    views = [  # lon, lat, pixels per degree: the east edge at 160, 246, 75, 66 and 260
        ([0, 20, 3], [AFRICA, EUROPE], [CASPIAN]),
        ([15, 30, 8], [AFRICA, EUROPE], [CASPIAN]),
        ([10, 48, 25], [EUROPE], []),
        ([-30, 20, 5], [AFRICA, EUROPE], [CASPIAN]),
        ([100, 20, 3], [AFRICA, EUROPE], [CASPIAN]),
        ([51, 42, 20], [STEPPE], [CASPIAN]),
    ]
    steps = [{"view": view, "sample": land + sea} for view, land, sea in views]
    steps += [
        {"view": [-40, 72, 8], "projection": "north", "sample": [(-41, 76), (-7, 68), (-15, 60)]},
        {"view": [0, -90, 5], "projection": "south", "sample": [(12, -84), (103, -60), (7, -57)]},
        {"projection": "plate"},  # the menu: from the south pole to a map filled pole to pole
    ]
    got = _steps("pyramid2", steps, "?product=atl06&field=count")
    for (view, land, sea), step in zip(views, got[1:], strict=False):  # the plate carrée
        assert step["view"]["lon"] == view[0] and step["view"]["projection"] == "plate"
        colours = step["sample"]
        assert all(map(_land, colours[: len(land)])), (view, land, colours)
        assert all(map(_sea, colours[len(land):])), (view, sea, colours)
    north, south, plate = got[-3:]
    assert plate["view"]["projection"] == "plate" and plate["view"]["scale"] == 5
    filled = sum(plate["pixels"][k] for k in ("cells", "coast", "land", "sea"))
    assert filled > 0.95 * plate["size"][0] * plate["size"][1]  # no blank beyond the pole
    assert north["view"]["projection"] == "north" and south["view"]["projection"] == "south"
    for step in (north, south):
        land, *sea = step["sample"]
        assert _land(land) and all(map(_sea, sea)), step["sample"]
        assert step["pixels"]["coast"] > 300
    assert north["drawn"] > 0 and north["pixels"]["cells"] > 100  # pyramid2's cells


def test_switching_field_keeps_the_view_and_a_field_not_drawn_clears_the_legend():
    """``ragged``: looking at the product's cells, choosing another field keeps the view
    and shows that field's legend; choosing the ragged field (t-digests, not numbers) keeps
    the view, hides the legend and says why nothing is drawn; choosing the first field
    again draws it as before."""
    view = [-43.0, 70.0, 30.0]
    got = _steps("ragged", [
        {"view": view},
        {"choose": "atl06/o6/h_mean"},
        {"choose": "atl06/o6/h_tdigest"},
        {"choose": "atl06/o6/count"},
    ], "?product=atl06&field=count")
    looked, h_mean, ragged, count = got[1:]
    for step in (h_mean, ragged, count):
        assert [step["view"][k] for k in ("lon", "lat", "scale")] == view, step["view"]
    assert looked["drawn"] > 0 and not looked["legend"]["hidden"]
    assert h_mean["field"] == "h_mean" and h_mean["drawn"] > 0
    assert not h_mean["legend"]["hidden"] and h_mean["legend"] != looked["legend"]
    assert ragged["legend"]["hidden"] and ragged["drawn"] == 0
    assert ragged["pixels"]["cells"] < looked["pixels"]["cells"] / 100  # the locator's edges
    assert "h_tdigest is not drawn" in ragged["status"] and "variable-length" in ragged["status"]
    assert count["legend"] == looked["legend"] and count["drawn"] == looked["drawn"]


def test_a_small_first_view_shows_coastlines_and_a_locator():
    """``windowed`` in window 2019 holds two neighbouring leaves inland on Greenland (10
    cells, under 10 degrees across): the first view spans enough of the map to show a
    coastline, and a locator (a small world map, its land and coastlines, the view's box
    in red) in its corner says where that is."""
    first, inset = _steps("windowed", [{"box": "locator"}], "?product=atl06&field=count&window=0")
    assert first["drawn"] == 10 and first["pixels"]["coast"] > 300
    assert first["locator"] and first["locator"]["width"] >= 100
    assert inset["pixels"]["land"] > 1000 and inset["pixels"]["sea"] > 1000
    assert inset["pixels"]["red"] > 10  # the view's box


@pytest.mark.parametrize(("fixture", "computed_orders"), [("windowed", "none"),
                                                        ("pyramid1", "missing")])
def test_a_level_whose_coverage_was_coarsened_says_to_serve_on_the_sphere(
    fixture, computed_orders, monkeypatch
):
    """A level with more nodes than its group's ``coverage_moc`` can list carries a coarser
    MOC, so the page cannot place its rows (100,000 nodes do not fit; here order 7, its
    nodes at order 5, with the MOC's limit lowered for that order alone). With that order
    alone (``windowed``, no computed orders) the page shows the coverage and says to serve
    with ``--geometry sphere``; with computed orders (``pyramid1``) it draws values at a
    computed order and, zoomed in on a leaf, at the finest order it can place, and says
    the same of order 7."""
    from moczarr_store.view import tree

    whole = tree.coverage_moc

    def coarsened(level):
        with monkeypatch.context() as patch:
            if level.node_order == 5:
                patch.setattr(tree, "MAX_MOC_CHARS", 12)
            return whole(level)

    monkeypatch.setattr(tree, "coverage_moc", coarsened)
    first, zoomed = _steps(fixture, [{"view": [-45.0, 67.9, 200.0]}],  # leaf -411331
                           "?product=atl06&field=count", computed_orders=computed_orders)
    assert "--geometry sphere" in zoomed["status"]
    if fixture == "windowed":
        assert first["order"] is None and zoomed["order"] is None
        assert "coverage of" in first["status"] and "--geometry sphere" in first["status"]
    else:
        assert first["order"] < 7 and first["drawn"] > 0
        assert zoomed["order"] == 6 and zoomed["drawn"] > 0  # the finest placed
