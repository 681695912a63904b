"""The cells a map tile draws, and the zooms whose tiles stay within
``config["tiles.cells"]``: a tile beyond it is refused (413), and the tile metadata
(TileJSON's ``minzoom``, a tileset's ``tileMatrixSetLimits`` and layers'
``minTileMatrix``) starts at the coarsest zoom from which no tile is.

A tile draws the cells of the order xpublish-tiles picks for its zoom that lie in its
longitude/latitude bounding box (the box xpublish-tiles selects cells by), at most that
order's cells.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import morecantile
import xarray as xr
from morecantile.errors import PointOutsideTMSBounds
from pyproj import CRS, Transformer
from starlette.exceptions import HTTPException
from xpublish_tiles.multiscale import get_resolution_level

from ..tunables import setting

# a zoom with at most this many tiles is judged by each of them; a finer one by the
# tiles under the points where a tile's box is largest (see _probes)
EVERY_TILE = 64


def tile_cells(tree: xr.DataTree, tms: morecantile.TileMatrixSet,
               tile: morecantile.Tile) -> tuple[int, int] | None:
    """``(cells, order)``: about how many cells of ``tree`` tile draws, and their order
    (``None`` if ``tree`` has no order). Cost: the order's choice, a densified box
    transform."""
    drawn = _drawn_order(tree, tms, tile.z)
    return None if drawn is None else (_cells(tms, tile, *drawn), drawn[0])


def _drawn_order(tree: xr.DataTree, tms: morecantile.TileMatrixSet,
                 z: int) -> tuple[int, int] | None:
    """The order xpublish-tiles draws ``tree`` from at zoom ``z``, and its cells."""
    level = get_resolution_level(tree, zoom=z, tms=tms)
    if level is None or level.path is None:
        return None
    return int(level.path.rsplit("o", 1)[1]), level.dataset.sizes["cells"]


def _cells(tms: morecantile.TileMatrixSet, tile: morecantile.Tile, order: int,
           most: int) -> int:
    """The cells of ``order`` in ``tile``'s longitude/latitude box, at most ``most``."""
    west, south, east, north = _to_lonlat(tms.id).transform_bounds(*tms.xy_bounds(tile))
    if west > east:  # across the antimeridian
        west -= 360.0
    area = math.radians(min(east - west, 360.0)) * (
        math.sin(math.radians(north)) - math.sin(math.radians(south)))
    return min(most, math.ceil(area / (math.pi / 3 / 4**order)))


def check_cells(tree: xr.DataTree, tms_id: str, z: int, y: int, x: int) -> None:
    """Refuse (413) tile ``z/y/x`` of ``tms_id`` if it would draw more cells than
    ``config["tiles.cells"]``. Cost: :func:`tile_cells`."""
    if tms_id not in morecantile.tms.list():
        return  # xpublish-tiles answers 404
    drawn = tile_cells(tree, morecantile.tms.get(tms_id), morecantile.Tile(x, y, z))
    most = setting("tiles.cells")
    if drawn is not None and drawn[0] > most:
        cells, order = drawn
        raise HTTPException(413, f"Tile {tms_id}/{z}/{y}/{x} would draw about {cells:,} "
                                 f"cells of order {order}, more than tiles.cells ({most:,}): "
                                 "choose a higher zoom level.")


def min_zoom(tree: xr.DataTree, tms: morecantile.TileMatrixSet) -> int:
    """The coarsest zoom of ``tms`` from which no tile of ``tree`` draws more than
    ``config["tiles.cells"]`` cells. Cost: per zoom, a box transform per tile of a zoom
    of at most :data:`EVERY_TILE` tiles, or a dozen for a finer one; the order's choice
    only where the finest order would draw too many."""
    most = setting("tiles.cells")
    finest = max(tree.children, key=lambda name: int(name[1:]))  # holds the most cells
    bound = (int(finest[1:]), tree[finest].dataset.sizes["cells"])
    for z in range(tms.maxzoom, tms.minzoom - 1, -1):
        judged = _judged(tms, z)
        if bound[1] <= most or all(_cells(tms, tile, *bound) <= most for tile in judged):
            continue
        drawn = _drawn_order(tree, tms, z)
        if drawn is not None and any(_cells(tms, tile, *drawn) > most for tile in judged):
            return min(z + 1, tms.maxzoom)
    return tms.minzoom


def _judged(tms: morecantile.TileMatrixSet, z: int) -> set[morecantile.Tile]:
    """The tiles of zoom ``z`` whose cells decide it."""
    matrix = tms.matrix(z)
    if matrix.matrixWidth * matrix.matrixHeight <= EVERY_TILE:
        return {morecantile.Tile(x, y, z) for x in range(matrix.matrixWidth)
                for y in range(matrix.matrixHeight)}
    with warnings.catch_warnings():  # a corner of the set may be just outside it
        warnings.simplefilter("ignore", PointOutsideTMSBounds)
        return {tms.tile(lon, lat, z) for lon, lat in _probes(tms)}


def _probes(tms: morecantile.TileMatrixSet) -> tuple[tuple[float, float], ...]:
    """Points under the tiles with the largest boxes: either side of the equator (where
    a Mercator or plate carrée tile is largest), the poles (where a polar one is), and
    the centre and corners of the tile matrix set."""
    west, south, east, north = tms.bbox
    inside = [(0.0, 1e-9), (0.0, -1e-9), (90.0, 1e-9), (-90.0, -1e-9), (180.0 - 1e-9, 0.0),
              (0.0, 90.0), (0.0, -90.0), ((west + east) / 2, (south + north) / 2),
              (west, south), (west, north), (east, south), (east, north)]
    return tuple((min(max(lon, west), east), min(max(lat, south), north))
                 for lon, lat in inside)


@functools.cache
def _to_lonlat(tms_id: str) -> Transformer:
    crs = CRS.from_wkt(morecantile.tms.get(tms_id).crs.to_wkt())
    return Transformer.from_crs(crs, "EPSG:4326", always_xy=True)


def honest_tilejson(body: dict[str, Any], tms_id: str,
                   zoom: Callable[[morecantile.TileMatrixSet], int]) -> dict[str, Any]:
    """A TileJSON whose ``minzoom`` is no coarser than ``zoom(tms)`` (its fields'
    :func:`min_zoom`)."""
    if tms_id in morecantile.tms.list() and isinstance(body.get("minzoom"), int):
        body["minzoom"] = max(body["minzoom"], zoom(morecantile.tms.get(tms_id)))
    return body


def honest_tilesets(body: dict[str, Any],
                    zoom: Callable[[str, morecantile.TileMatrixSet], int]) -> dict[str, Any]:
    """A tileset list whose layers' ``minTileMatrix`` are no coarser than
    ``zoom(field, tms)`` (the field's :func:`min_zoom`), and whose
    ``tileMatrixSetLimits`` start at the finest of them."""
    for tileset in body.get("tilesets") or []:
        tms_id = next((link["href"][2:] for link in tileset.get("links", ())
                       if link.get("rel") == "self"), None)
        layers = tileset.get("layers") or []
        if tms_id not in morecantile.tms.list() or not layers:
            continue
        tms = morecantile.tms.get(tms_id)
        for layer in layers:
            layer["minTileMatrix"] = str(max(int(layer["minTileMatrix"]),
                                             zoom(layer["id"], tms)))
        start = max(int(layer["minTileMatrix"]) for layer in layers)
        tileset["tileMatrixSetLimits"] = [
            limit for limit in tileset.get("tileMatrixSetLimits") or []
            if int(limit["tileMatrix"]) >= start]
    return body
