"""HEALPix cells as valid longitude/latitude polygons, and a level's coverage as one
footprint: what the ``cells`` export (``geoparquet.py``) and the STAC catalog
(``stac.py``) draw. Needs the ``[cells]`` extra (healpix-geo for the vertices, shapely).

A cell's vertices come from healpix-geo on the hive's ellipsoid (WGS84 with authalic
latitudes, or the sphere), the same centres the store's ``lon`` / ``lat`` carry. Two
kinds of cell need care in longitude/latitude:

- a cell that crosses the antimeridian is cut there into two polygons (a MultiPolygon),
  each within [-180, 180], as GeoJSON (RFC 7946) and GeoParquet readers expect;
- a cell with a vertex on a pole has that vertex replaced by two at the pole, at its
  neighbours' longitudes, so its ring follows the pole's edge of the map.

Every polygon is oriented counter-clockwise (RFC 7946's exterior rings).
"""

from __future__ import annotations

import re

import numpy as np

from .extras import require

MOC_MAX_CELLS = 3072
"""The most cells a footprint is drawn from: a coverage with more is coarsened to the
finest order that fits (a superset: the footprint holds every cell with data)."""

_POLE = 90.0 - 1e-9
_WORLD = (-180.0, -90.0, 180.0, 90.0)


def _modules():
    return require("cells", "healpix_geo.nested", "shapely")


def ellipsoid(group_attrs: dict) -> str:
    """healpix-geo's ellipsoid for a level group's attributes: ``"WGS84"`` where the
    hive declares authalic WGS84 latitudes (as the store's ``lon`` / ``lat`` do), else
    ``"sphere"``."""
    dggs = group_attrs.get("dggs")
    wgs84 = isinstance(dggs, dict) and dggs.get("latitude") == "authalic-wgs84"
    return "WGS84" if wgs84 else "sphere"


def cell_polygons(cell_ids: np.ndarray, order: int, on: str = "WGS84",
                  step: int = 1) -> np.ndarray:
    """A shapely geometry per NESTED cell id at ``order``: a Polygon, or a MultiPolygon for
    a cell cut at the antimeridian. ``step`` vertices per edge (more for large cells,
    whose edges curve on the map). Cost: vectorised for the common cell; a Python step
    only for the few that touch a pole or cross the antimeridian."""
    nested, shapely = _modules()
    ids = np.ascontiguousarray(cell_ids, dtype=np.uint64)
    if ids.size == 0:
        return np.empty(0, dtype=object)
    lon, lat = nested.vertices(ids, order, ellipsoid=on, step=step)
    centre, _ = nested.healpix_to_lonlat(ids, order, ellipsoid=on)
    centre = (np.asarray(centre) + 180.0) % 360.0 - 180.0
    # each ring continuous around its centre's longitude (no jump of 360 degrees)
    lon = centre[:, None] + (np.asarray(lon) - centre[:, None] + 180.0) % 360.0 - 180.0
    lat = np.asarray(lat)
    polar = (np.abs(lat) >= _POLE).any(axis=1)
    crossing = (lon.min(axis=1) < -180.0) | (lon.max(axis=1) > 180.0)
    plain = ~(polar | crossing)
    out = np.empty(ids.size, dtype=object)
    ring = np.stack([lon[plain], lat[plain]], axis=-1)
    out[plain] = shapely.polygons(np.concatenate([ring, ring[:, :1]], axis=1))
    for i in np.flatnonzero(~plain).tolist():
        out[i] = _odd_cell(shapely, lon[i], lat[i])
    return shapely.orient_polygons(out)


def _odd_cell(shapely, lon: np.ndarray, lat: np.ndarray):
    """One cell touching a pole or crossing the antimeridian, as valid geometry."""
    points: list[tuple[float, float]] = []
    n = lon.size
    for j in range(n):
        if abs(lat[j]) >= _POLE:  # a pole: follow the map's top or bottom edge
            pole = 90.0 if lat[j] > 0 else -90.0
            points += [(lon[j - 1], pole), (lon[(j + 1) % n], pole)]
        else:
            points.append((lon[j], lat[j]))
    cell = shapely.Polygon(points)
    if not cell.is_valid:
        cell = shapely.make_valid(cell)
    parts = []
    for shift in (-360.0, 0.0, 360.0):  # the part within each copy of the map, brought home
        box = shapely.box(_WORLD[0] - shift, -90.0, _WORLD[2] - shift, 90.0)
        part = shapely.intersection(cell, box)
        if not part.is_empty and part.area > 0:
            parts.extend(_polygons(shapely, shapely.affinity.translate(part, xoff=shift)))
    return parts[0] if len(parts) == 1 else shapely.MultiPolygon(parts)


def _polygons(shapely, geometry) -> list:
    if isinstance(geometry, shapely.Polygon):
        return [geometry]
    return [g for g in getattr(geometry, "geoms", []) if isinstance(g, shapely.Polygon)
            and g.area > 0]


_MOC_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_moc(text: str) -> tuple[int, np.ndarray, np.ndarray]:
    """``(order, firsts, lasts)`` of an IVOA MOC ASCII string of one order (``"5/4032-4033
    9256"``, as a level group's ``coverage_moc`` attribute carries), inclusive ranges of
    NESTED ids. A malformed string raises ``ValueError`` naming it."""
    head, sep, body = text.partition("/")
    if not sep or not head.isdigit() or int(head) > 29:
        raise ValueError(f"not a one-order MOC string: {text[:80]!r}")
    order = int(head)
    firsts, lasts = [], []
    for item in body.split():
        match = _MOC_RANGE.match(item)
        if match is None:
            raise ValueError(f"not a MOC range in coverage_moc: {item[:80]!r}")
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        if last < first or last >= 12 * 4**order:
            raise ValueError(f"MOC range {item[:80]!r} is out of order {order}'s cells")
        firsts.append(first)
        lasts.append(last)
    return order, np.array(firsts, np.uint64), np.array(lasts, np.uint64)


def footprint(moc: str, on: str = "WGS84", max_cells: int = MOC_MAX_CELLS):
    """The union of a one-order MOC's cells as one shapely (Multi)Polygon, drawn from at
    most ``max_cells`` cells (coarsened to the finest order that fits: a superset), each
    edge densified where cells are large. ``None`` for an empty MOC. Cost: O(ranges) per
    order tried, then the union of at most ``max_cells`` polygons."""
    _, shapely = _modules()
    order, firsts, lasts = parse_moc(moc)
    if firsts.size == 0:
        return None
    while order > 0 and int((lasts - firsts + 1).sum()) > max_cells:
        firsts, lasts, order = firsts >> np.uint64(2), lasts >> np.uint64(2), order - 1
    ids = np.unique(np.concatenate([
        np.arange(int(a), int(b) + 1, dtype=np.uint64) for a, b in zip(firsts, lasts,
                                                                        strict=True)]))
    step = max(1, 2 ** max(0, 5 - order))  # a vertex every ~2 degrees along an edge
    union = shapely.union_all(cell_polygons(ids, order, on, step=step))
    return shapely.orient_polygons(union)


def bbox(geometry) -> list[float]:
    """``[west, south, east, north]`` of a geometry cut at the antimeridian, as GeoJSON
    and STAC write it: where its parts leave their widest gap in longitude across the
    antimeridian, ``west > east`` (the box crosses it). Cost: O(parts log parts)."""
    _, shapely = _modules()
    parts = _polygons(shapely, geometry)
    boxes = np.array([p.bounds for p in parts])
    south, north = float(boxes[:, 1].min()), float(boxes[:, 3].max())
    spans = sorted((float(a), float(b)) for a, b in boxes[:, [0, 2]])
    merged = [list(spans[0])]
    for a, b in spans[1:]:
        if a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    # the widest gap between merged spans, the one across the antimeridian included
    gaps = [(merged[i + 1][0] - merged[i][1], i) for i in range(len(merged) - 1)]
    across = merged[0][0] + 360.0 - merged[-1][1]
    if not gaps or across >= max(gaps)[0]:
        return [merged[0][0], south, merged[-1][1], north]
    _, i = max(gaps)
    return [merged[i + 1][0], south, merged[i][1], north]
