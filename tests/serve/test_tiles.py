"""Map tiles under ``/.tiles/`` (``create_app(tiles=True)``, ``serve --tiles``): each
tile's pixels at known cells carry the colour of the value moczarr reads there, per
window, order and tile matrix set; hive keys still answer beside them.

The renderer compiles its kernels on the first tile of each value type (about 10 s a type
on two cores): ``warmed`` pays it once a session, for float32 (every field tiled here).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from support.jsclients import JS, chromium, run_node, version
from support.serving import FIXTURES, Served, fetch
from support.tiles import QUAD, cells_under, colour, pixels, spots
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import moczarr_store.serve
from moczarr_store import MocHiveStore
from moczarr_store.cli import EXIT_MISSING, main
from moczarr_store.serve import create_app
from moczarr_store.serve.app import tiles_module
from moczarr_store.serve.env import to_env

needs_tiles = pytest.mark.skipif(
    sys.version_info < (3, 12),
    reason="xpublish-tiles needs Python >= 3.12: the [tiles] extra is empty on 3.11")


@pytest.fixture(scope="module")
def warmed():
    tiles_module().warm_up(("float32",))


@pytest.fixture(scope="module")
def sharded(warmed):
    with Served(create_app(FIXTURES / "sharded", tiles=True)) as server:
        yield server


def tile_path(dataset: str, spot, quad: str = QUAD, **query) -> str:
    text = "&".join(f"{k}={v}" for k, v in query.items())
    return f"/.tiles/datasets/{dataset}/tiles/{quad}/{spot.z}/{spot.y}/{spot.x}?{text}"


def assert_coloured(server, dataset: str, found, lo: float, hi: float, quad: str = QUAD,
                    field: str = "h_mean", **query) -> None:
    """Each spot's pixel is the colour of its value of ``field`` (to one unit of
    rounding)."""
    for spot in found:
        status, headers, body = fetch(server, tile_path(
            dataset, spot, quad, variables=field, style="polygons/viridis",
            colorscalerange=f"{lo},{hi}", **query))
        assert status == 200 and headers["content-type"] == "image/png", body[:300]
        drawn = pixels(body)[spot.py, spot.px]
        assert drawn[3] == 255, (spot, drawn)
        assert np.abs(drawn[:3] - colour(spot.value, lo, hi)).max() <= 1, (spot, drawn)


def scale(found) -> tuple[float, float]:
    values = [s.value for s in found]
    return min(values), max(values)


@needs_tiles
def test_a_hive_key_and_a_tile_route_both_answer(sharded):
    """The fast path answers hive keys and leaves ``/.tiles/`` to the tile app, whose
    datasets name the hive's products and orders."""
    store = MocHiveStore(FIXTURES / "sharded")
    key = "atl06/o7/h_mean/c/0"
    status, _, body = fetch(sharded, "/" + key)
    assert status == 200
    assert body == sync(store.get(key, default_buffer_prototype())).to_bytes()
    status, _, body = fetch(sharded, "/.tiles/datasets")
    assert status == 200
    # the stored order and every order computed from it (from aggregation.yaml's folds)
    assert json.loads(body) == ["atl06", *(f"atl06.o{k}" for k in range(7, -1, -1))]
    (spot,) = spots(FIXTURES / "sharded", "h_mean", 7, 7, 1)
    path = tile_path("atl06", spot, variables="h_mean", colorscalerange="0,1")
    status, headers, _ = fetch(sharded, path)
    assert (status, headers["content-type"]) == (200, "image/png")
    assert fetch(sharded, path, "HEAD")[0] == 405  # tiles are GETs, not keys
    # under the prefix, a path shaped like a key is no key
    assert fetch(sharded, "/.tiles/" + key)[0] == 404


@needs_tiles
def test_tile_pixels_carry_the_colour_of_each_cells_value(sharded):
    """At the cells' centres (cdshealpix), the colour of moczarr's value on the colour
    scale asked; the TileJSON's URL template names the same tiles."""
    found = spots(FIXTURES / "sharded", "h_mean", 7, 7, 8)
    assert_coloured(sharded, "atl06", found, *scale(found))
    status, _, body = fetch(sharded, "/.tiles/datasets/atl06/tiles/WebMercatorQuad/"
                            "tilejson.json?variables=h_mean&colorscalerange=0,1")
    assert status == 200
    (template,) = json.loads(body)["tiles"]
    assert template.startswith(
        f"{sharded.url}/.tiles/datasets/atl06/tiles/WebMercatorQuad/{{z}}/{{y}}/{{x}}?")


@needs_tiles
@pytest.mark.parametrize("quad", ["UPSArcticWGS84Quad", "UPSAntarcticWGS84Quad"])
def test_polar_tiles_show_the_cells_near_their_pole(sharded, quad):
    """The polar stereographic tile matrix sets draw the Greenland and Antarctic cells."""
    north = quad == "UPSArcticWGS84Quad"
    found = spots(FIXTURES / "sharded", "h_mean", 7, 4, 4, quad=quad,
                  where=(lambda lat: lat > 60) if north else (lambda lat: lat < -60))
    assert_coloured(sharded, "atl06", found, *scale(found), quad=quad)


@needs_tiles
@pytest.mark.parametrize("quad", ["UPSArcticWGS84Quad", "UPSAntarcticWGS84Quad"])
def test_a_polar_tilejson_of_a_field_folded_to_order_0(sharded, quad):
    """``h_max`` is computed down to order 0, whose polar cells touch their pole from
    centres at 42 degrees of latitude: the polar tile matrix sets' TileJSON answers (it
    was a 404: "not defined where the data lies"), advertising the zoom the tileset list
    does, and the tiles draw the field."""
    north = quad == "UPSArcticWGS84Quad"
    minzoom = tilejson(sharded, "h_max", quad)["minzoom"]
    status, _, body = fetch(sharded, "/.tiles/datasets/atl06/tiles/")
    assert status == 200, body[:300]
    (tileset,) = (t for t in json.loads(body)["tilesets"]
                  if any(link["rel"] == "self" and link["href"] == f"./{quad}"
                         for link in t["links"]))
    assert {layer["id"]: int(layer["minTileMatrix"])
            for layer in tileset["layers"]}["h_max"] == minzoom
    found = spots(FIXTURES / "sharded", "h_max", 7, 4, 4, quad=quad,
                  where=(lambda lat: lat > 60) if north else (lambda lat: lat < -60))
    assert_coloured(sharded, "atl06", found, *scale(found), quad=quad, field="h_max")


@needs_tiles
def test_each_window_is_drawn_from_its_own_values(warmed):
    """``window=LABEL`` draws that window's values."""
    with Served(create_app(FIXTURES / "windowed", tiles=True)) as server:
        for window in ("2019", "2020"):
            found = spots(FIXTURES / "windowed", "h_mean", 7, 7, 4, window=window)
            assert_coloured(server, "atl06", found, *scale(found), window=window)
        status, _, body = fetch(server, tile_path("atl06", found[0], variables="h_mean",
                                                  colorscalerange="0,1", window="1999"))
        assert status == 422 and b"1999" in body


@needs_tiles
def test_the_order_drawn_suits_the_zoom(warmed):
    """A product's tiles are drawn from the order whose cells are nearest the tile's
    pixels in size (WebMercatorQuad: 156 km at zoom 0, halving each zoom; an order-N
    cell is about 6,500 km / 2**N wide); ``{product}.o{N}`` draws order N at any zoom."""
    with Served(create_app(FIXTURES / "pyramid1", tiles=True)) as server:
        (spot,) = spots(FIXTURES / "pyramid1", "h_max", 7, 7, 1)

        def level(dataset: str, z: int) -> str:
            at = type(spot)(**{**spot.__dict__, "z": z, "y": spot.y >> (7 - z),
                               "x": spot.x >> (7 - z)})
            status, headers, body = fetch(server, tile_path(
                dataset, at, variables="h_max", colorscalerange="0,1"))
            assert status == 200, body[:300]
            return headers["x-multiscale-level"]

        assert [level("atl06", z) for z in (0, 1, 2, 7)] == ["o5", "o6", "o7", "o7"]
        assert level("atl06.o3", 7) == "o3"


@needs_tiles
def test_a_field_without_a_fold_is_drawn_from_its_stored_order_at_every_zoom(sharded):
    """``h_mean`` (a mean: no exact fold) is absent from the computed orders, so at zoom 1,
    where ``h_max`` is drawn from computed order 6, it is drawn from stored order 7: each
    cell in the colour of its stored value. (2,048 pixels square, so that order-7 cells
    span pixels while the zoom still picks order 6.)"""
    found = spots(FIXTURES / "sharded", "h_mean", 7, 1, 4, size=2048)
    lo, hi = scale(found)
    for field, order in (("h_max", "o6"), ("h_mean", "o7")):
        status, headers, body = fetch(sharded, tile_path(
            "atl06", found[0], variables=field, colorscalerange=f"{lo},{hi}"))
        assert status == 200, body[:300]
        assert headers["x-multiscale-level"] == order
    assert_coloured(sharded, "atl06", found, lo, hi, width=2048, height=2048)


NEAR = [(0, 0), *((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)]


def drawn_and_expected(server, z: int, y: int, x: int, hive: str = "sharded",
                       order: int = 7):
    """WebMercatorQuad tile ``z/y/x`` of ``hive``'s ``h_mean`` on the scale of its values:
    its pixels, and ``expected(row, column)``: the colours of moczarr's values of the
    ``order`` cells under that pixel's centre and under the centres of the pixels around
    it (:data:`NEAR`; NaN where a cell has no value)."""
    import moczarr

    opened = moczarr.open_hive(str(FIXTURES / hive))
    values = dict(zip(np.asarray(opened["cell_ids"].values).tolist(),
                      np.asarray(opened["h_mean"].values, dtype="float64").tolist(),
                      strict=True))
    lo, hi = np.nanmin(list(values.values())), np.nanmax(list(values.values()))
    status, _, body = fetch(server, f"/.tiles/datasets/atl06/tiles/WebMercatorQuad/"
                                    f"{z}/{y}/{x}?variables=h_mean&colorscalerange={lo},{hi}")
    assert status == 200, body[:300]
    under = np.pad(cells_under(z, y, x, order), 1, mode="edge")
    blank = np.full(3, np.nan)
    palette = {cell: colour(v, lo, hi) for cell, v in values.items() if np.isfinite(v)}

    def expected(row: int, column: int) -> np.ndarray:
        return np.array([palette.get(int(under[row + 1 + dy, column + 1 + dx]), blank)
                         for dy, dx in NEAR])

    return pixels(body), expected


@needs_tiles
def test_where_cells_are_smaller_than_pixels_each_pixel_shows_a_stored_value(sharded):
    """At zoom 0 over Greenland (pixels about 50 km across, as order-7 cells are), each
    pixel drawn shows the value of the cell under its centre, never one made from its
    neighbours. (Where cells fit wholly inside pixels, some are averaged: the maps
    guide, 'Pixels that show a mean'.)"""
    drawn, expected = drawn_and_expected(sharded, 0, 0, 0)
    shown = np.argwhere(drawn[..., 3] > 0)
    assert len(shown) > 20
    for y, x in shown:
        assert np.abs(drawn[y, x, :3] - expected(y, x)[0]).max() <= 1, (y, x, drawn[y, x])


@needs_tiles
def test_inside_a_tile_each_pixel_shows_a_cell_at_its_centre(sharded):
    """At zoom 3 (20 km pixels, order-7 cells about 50 km), each pixel inside the two
    tiles either side of the -45° meridian shows the value of the cell under its centre,
    or of one under a neighbouring pixel's centre (the renderer draws a cell's edges
    straight between its corners), never a blend; most show their own cell's."""
    for column in (2, 3):
        drawn, expected = drawn_and_expected(sharded, 3, 1, column)
        shown = [(y, x) for y, x in np.argwhere(drawn[..., 3] > 0)
                 if 0 < y < drawn.shape[0] - 1 and 0 < x < drawn.shape[1] - 1]
        assert len(shown) > 500
        near = np.array([np.abs(expected(y, x) - drawn[y, x, :3]).max(axis=1) <= 1
                         for y, x in shown])
        assert near.any(axis=1).all(), [shown[i] for i in np.flatnonzero(~near.any(axis=1))]
        assert near[:, 0].mean() > 0.97


@needs_tiles
@pytest.mark.xfail(strict=True, reason=(
    "datashader 0.19 draws a polygon whose part inside the canvas is one pixel wide into "
    "every pixel of that column or row without testing the pixel centres, and "
    "xpublish-tiles 0.12 averages the polygons on a pixel: on a tile's outermost column "
    "or row, a cell just beyond the tile's edge is averaged with the cell under the "
    "pixel (docs/guide/maps.md, 'Pixels that show a mean')"))
def test_a_tiles_outermost_pixels_show_the_cell_under_their_centre(sharded):
    """Tile 3/1/2 ends at -45°, where order-7 cells of base cell 3 have a corner: its last
    column shows values no cell has (the mean of the cell under the pixel and the one
    east of the edge). Passes, and fails as unexpectedly passing, once the renderer
    tests pixel centres there."""
    drawn, expected = drawn_and_expected(sharded, 3, 1, 2)
    edge = drawn[:, -1]
    for y in np.flatnonzero(edge[:, 3] > 0):
        assert np.abs(edge[y, :3] - expected(y, len(edge) - 1)[0]).max() <= 1, (y, edge[y])


@needs_tiles
@pytest.mark.xfail(strict=True, reason=(
    "datashader 0.19 draws a polygon that fits in one pixel into that pixel without "
    "testing its centre, and xpublish-tiles 0.12 averages the polygons on a pixel: where "
    "cells fit wholly inside pixels, a pixel shows the mean of those and the cell under "
    "its centre (docs/guide/maps.md, 'Pixels that show a mean')"))
def test_where_cells_fit_inside_pixels_each_pixel_shows_the_cell_under_its_centre(warmed):
    """At zoom 0 (156 km pixels at the equator), paged's order-8 cells (about 25 km) fit
    inside pixels: about one pixel in ten shows a value of no cell. Passes, and fails as
    unexpectedly passing, once the renderer tests pixel centres there."""
    with Served(create_app(FIXTURES / "paged", tiles=True)) as server:
        drawn, expected = drawn_and_expected(server, 0, 0, 0, hive="paged", order=8)
    for y, x in np.argwhere(drawn[..., 3] > 0):
        assert np.abs(drawn[y, x, :3] - expected(y, x)[0]).max() <= 1, (y, x, drawn[y, x])


@needs_tiles
def test_a_tile_of_more_cells_than_tiles_cells_is_refused(sharded):
    """A tile that would draw more than ``tiles.cells`` cells is refused (413: zoom in):
    ``h_mean`` at zoom 0 draws all 192 cells of stored order 7; ``h_max`` there, from
    computed order 5, draws its 128 cells."""
    (spot,) = spots(FIXTURES / "sharded", "h_mean", 7, 0, 1)
    with moczarr_store.config.set({"tiles.cells": 150}):
        status, _, body = fetch(sharded, tile_path(
            "atl06", spot, variables="h_mean", colorscalerange="0,1"))
        assert status == 413, body[:300]
        assert b"192 cells of order 7" in body and b"choose a higher zoom level" in body
        status, headers, body = fetch(sharded, tile_path(
            "atl06", spot, variables="h_max", colorscalerange="0,1"))
        assert status == 200, body[:300]
        assert headers["x-multiscale-level"] == "o5"
    assert fetch(sharded, tile_path("atl06", spot, variables="h_mean",
                                    colorscalerange="0,1"))[0] == 200


def tilejson(server, field: str, quad: str = QUAD) -> dict:
    status, _, body = fetch(server, f"/.tiles/datasets/atl06/tiles/{quad}/tilejson.json?"
                                    f"variables={field}&colorscalerange=0,1")
    assert status == 200, body[:300]
    return json.loads(body)


def largest_tiles(quad: str, z: int) -> list[tuple[int, int]]:
    """``(y, x)`` of the tiles of zoom ``z`` whose longitude/latitude boxes are largest:
    beside the equator on Web Mercator, around the pole on a polar stereographic set."""
    half = 2 ** (z - 1)
    if quad == QUAD:
        return [(half - 1, 0), (half, half)]
    return [(y, x) for y in (half - 1, half) for x in (half - 1, half)]


@needs_tiles
@pytest.mark.parametrize("quad", [QUAD, "UPSArcticWGS84Quad"])
def test_the_advertised_zooms_start_where_no_tile_is_refused(sharded, quad):
    """TileJSON's ``minzoom`` is the coarsest zoom from which no tile is refused: with
    ``tiles.cells`` at 150, below the 192 cells of stored order 7, its largest tiles
    answer 200 and one at the zoom below 413; the tileset list's layers start there
    too. With the default, every zoom from 0 answers."""
    status = {}
    with moczarr_store.config.set({"tiles.cells": 150}):
        for field in ("h_mean", "h_max") if quad == QUAD else ("h_mean",):
            least = tilejson(sharded, field, quad)["minzoom"]
            assert least > 0
            for z in (least - 1, least):
                status[field, z] = {fetch(sharded, f"/.tiles/datasets/atl06/tiles/{quad}/"
                                           f"{z}/{y}/{x}?variables={field}&colorscalerange=0,1")[0]
                                    for y, x in largest_tiles(quad, z)}
            assert status[field, least] == {200} and 413 in status[field, least - 1], status
        # the whole sphere in one tile, of order 7: refused (a polar one passed before)
        assert fetch(sharded, f"/.tiles/datasets/atl06/tiles/{quad}/0/0/0?variables=h_mean&"
                              "colorscalerange=0,1")[0] == 413
        if quad == QUAD:
            status, _, body = fetch(sharded, "/.tiles/datasets/atl06/tiles/")
            assert status == 200, body[:300]
            (mercator,) = (t for t in json.loads(body)["tilesets"]
                           if any(link["rel"] == "self" and link["href"] == f"./{quad}"
                                  for link in t["links"]))
            layers = {layer["id"]: int(layer["minTileMatrix"]) for layer in mercator["layers"]}
            assert layers["h_mean"] == tilejson(sharded, "h_mean")["minzoom"]
            assert int(mercator["tileMatrixSetLimits"][0]["tileMatrix"]) == max(layers.values())
    assert tilejson(sharded, "h_mean", quad)["minzoom"] == 0
    assert fetch(sharded, f"/.tiles/datasets/atl06/tiles/{quad}/0/0/0?variables=h_mean&"
                          "colorscalerange=0,1")[0] == 200


@needs_tiles
def test_bad_requests_name_their_cause(sharded):
    (spot,) = spots(FIXTURES / "sharded", "h_mean", 7, 7, 1)
    cases = [
        (tile_path("nope", spot, variables="h_mean", colorscalerange="0,1"), 404, b"nope"),
        (tile_path("atl06", spot, variables="h_nope", colorscalerange="0,1"), 422, b"h_nope"),
        (tile_path("atl06", spot, variables="h_mean"), 422, b"colorscalerange"),
        (tile_path("atl06", spot, "NoSuchQuad", variables="h_mean", colorscalerange="0,1"),
         404, b"NoSuchQuad"),
        (tile_path("atl06.o9", spot, variables="h_mean", colorscalerange="0,1"), 404,
         b"atl06.o9"),
        ("/.tiles/datasets/..%2F..%2Fetc/tiles/", 404, b""),
    ]
    for path, status, named in cases:
        got, _, body = fetch(sharded, path)
        assert got == status and named in body, (path, got, body[:300])


def test_without_xpublish_tiles_the_error_names_the_extra(monkeypatch, capsys):
    """On Python 3.11 (or without the extra) ``tiles=True`` and ``serve --tiles`` say
    what to install, before any port is bound."""
    for name in ("xpublish", "xpublish_tiles"):  # None: ImportError, imported before or not
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "moczarr_store.serve.tiles", raising=False)
    monkeypatch.delattr(moczarr_store.serve, "tiles", raising=False)  # imported before
    with pytest.raises(ImportError, match=r"pip install 'moczarr-store\[tiles\]'"):
        create_app(FIXTURES / "sharded", tiles=True)
    code = main(["serve", str(FIXTURES / "sharded"), "--tiles", "--port", "0"])
    assert code == EXIT_MISSING
    assert "[tiles] extra" in capsys.readouterr().err


def test_the_tiles_option_reaches_worker_processes():
    assert to_env("hive", tiles=True)["MOCZARR_STORE_TILES"] == "1"
    assert "MOCZARR_STORE_TILES" not in to_env("hive", tiles=False)


@needs_tiles
def test_two_hives_in_one_process_draw_their_own_cells(sharded):
    """xpublish-tiles keeps each grid's cell ids in one cache for the process: two apps
    whose products and orders share names (sharded: 192 cells at order 7, legacy: 48)
    each draw their own cells."""
    with Served(create_app(FIXTURES / "legacy", tiles=True)) as legacy:
        for server, hive in ((sharded, "sharded"), (legacy, "legacy"), (sharded, "sharded")):
            found = spots(FIXTURES / hive, "h_mean", 7, 7, 3)
            assert_coloured(server, "atl06", found, *scale(found))


@needs_tiles
def test_each_generation_draws_the_cells_of_the_structure_first_opened(sharded):
    """A new generation (its stamps read afresh) gets a new tile store that presents what
    the last one did: xpublish-tiles' grids, kept across generations, still fit."""
    found = spots(FIXTURES / "sharded", "h_mean", 7, 7, 3)
    for _ in range(3):
        assert_coloured(sharded, "atl06", found, *scale(found))
        sharded.app.state.generations.expire()


MAPS = Path(__file__).resolve().parents[2] / "docs" / "guide" / "maps.md"


@needs_tiles
def test_the_guides_leaflet_page_shows_each_cell_in_its_values_colour(sharded, tmp_path):
    """The Leaflet page of the maps guide, from its tile URL template alone, in Chromium:
    every tile loads, and at each Greenland cell's centre (placed by Leaflet) the page
    shows the colour of moczarr's value on the template's colour scale."""
    (html,) = re.findall(r"```html\n(.*?)```", MAPS.read_text(), flags=re.S)
    cdn = "https://unpkg.com/leaflet@1.9.4/dist/"
    assert cdn in html and version("leaflet") == "1.9.4"
    page = tmp_path / "map.html"
    page.write_text(html.replace(cdn, (JS / "node_modules" / "leaflet" / "dist").as_uri() + "/")
                    .replace("http://127.0.0.1:8000", sharded.url))
    lo, hi = map(float, re.search(r"colorscalerange=([-\d.]+),([-\d.]+)", html).groups())
    found = spots(FIXTURES / "sharded", "h_mean", 7, 4, 12, where=lambda lat: lat > 60)
    png = tmp_path / "map.png"
    report = run_node("tile_map.mjs", chromium(), page.as_uri(), str(png),
                      json.dumps([[s.lat, s.lon] for s in found]))
    assert report["errors"] == [] and report["failed"] == []
    assert report["tiles"] and all("/.tiles/datasets/atl06/tiles/WebMercatorQuad/" in t
                                   for t in report["tiles"])
    shown = pixels(png.read_bytes())
    box = report["box"]
    inside = [(s, (round(x), round(y))) for s, (x, y) in zip(found, report["points"], strict=True)
              if 0 <= x - box["x"] < box["width"] and 0 <= y - box["y"] < box["height"]]
    assert len(inside) >= 6
    for spot, (x, y) in inside:
        drawn = shown[y, x]
        assert np.abs(drawn[:3] - colour(spot.value, lo, hi)).max() <= 1, (spot, drawn)
