"""A static STAC catalog of a hive: ``OUT_DIR/collection.json``, its Items, and a root
``OUT_DIR/catalog.json`` holding the collection (where pystac-client starts).

``write_stac(source, out_dir)`` opens the hive through the store, as any Zarr client would,
and describes it with pystac (the ``[stac]`` extra; the footprints need the ``[cells]``
extra too):

- the **Collection**: the hive's spatial extent (one box per product after the overall
  one), its time span (the windows' bounds; open where the hive has no windows), the
  datacube extension over the fields of every product's finest level (dimensions,
  variables, units where the hive gives them), and assets for the hive root, the
  ``serve`` endpoint (``serve_url``) and any reference exports (``refs``);
- an **Item** per window of each windowed product (an unwindowed product has no time to
  give an Item, so only the Collection describes it): its footprint, the window's start
  and end, the datacube extension of its level, and the level's group on the server.

A footprint is the product's coverage (the finest level's ``coverage_moc``) drawn as
polygons (``polygons.footprint``): a superset of the cells with data, cut at the
antimeridian; a window's Item carries its product's footprint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .errors import OptionError
from .extras import require
from .io.redact import redact
from .view.arrays import window_names

ZARR_MEDIA_TYPE = "application/vnd+zarr"
HEALPIX_DGGRS = "https://www.opengis.net/def/dggrs/OGC/1.0/HEALPix"
REFS_MEDIA_TYPES = {"kerchunk-json": "application/json", "mdim-refs": "application/vnd.sqlite3",
                    "icechunk": None}


@dataclass
class Level:
    """What the catalog says of one product's finest level."""

    product: str
    path: str
    cells: int
    order: int
    moc: str
    ellipsoid: str
    fields: dict[str, dict] = field(default_factory=dict)  # name -> datacube variable
    windows: list[tuple[str, datetime, datetime]] = field(default_factory=list)


def _pystac():
    pystac, datacube = require("stac", "pystac", "pystac.extensions.datacube")
    return pystac, datacube.DatacubeExtension


def write_stac(source: str, out_dir: str | os.PathLike, serve_url: str | None = None,
               refs: Sequence[str] = (), collection_id: str | None = None,
               **store_options) -> str:
    """Write the catalog of the hive at ``source`` into the new or empty directory
    ``out_dir``; returns the path of ``collection.json``. ``serve_url``: where
    ``moczarr-store serve`` answers for this hive; ``refs``: ``FORMAT=HREF`` of reference
    exports (``kerchunk-json``, ``icechunk``, ``mdim-refs``). Cost: the hive opened, the
    window labels and bounds read (a few small chunks), a footprint drawn per product."""
    pystac, _ = _pystac()
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and os.listdir(out_dir):
        raise FileExistsError(f"{out_dir} is not empty: the catalog is written to a new "
                              "or empty directory")
    exports = [_ref(item) for item in refs]
    href, levels = _levels(source, store_options)
    if not levels:
        raise OptionError(f"{redact(source)}: the hive has no level to describe")
    from .polygons import bbox, footprint

    shapes = {lv.product: footprint(lv.moc, lv.ellipsoid) for lv in levels}
    boxes = [bbox(shapes[lv.product]) for lv in levels if shapes[lv.product] is not None]
    spatial = [_union_box(boxes), *boxes] if len(boxes) > 1 else boxes or [[-180, -90, 180, 90]]
    spans = [(start, end) for lv in levels for _, start, end in lv.windows]
    temporal = [[min(s for s, _ in spans), max(e for _, e in spans)]] if spans else [[None,
                                                                                      None]]
    name = collection_id or _identifier(source)
    collection = pystac.Collection(
        id=name,
        title=f"morton-hive {name}",
        description=(f"A morton-hive (HEALPix cells, {', '.join(lv.product for lv in levels)})"
                     " presented as one Zarr v3 hierarchy by moczarr-store."),
        extent=pystac.Extent(pystac.SpatialExtent(spatial), pystac.TemporalExtent(temporal)),
        license="other",
        keywords=["healpix", "zarr", "morton-hive"],
    )
    _cube(collection, levels)
    collection.add_asset("hive", pystac.Asset(
        href, title="morton-hive root", roles=["data"],
        description="The hive itself: open it with moczarr_store.MocHiveStore(href), or "
                    "serve it with `moczarr-store serve href`."))
    if serve_url:
        collection.add_asset("zarr", pystac.Asset(
            serve_url.rstrip("/"), title="Zarr v3 hierarchy (moczarr-store serve)",
            media_type=ZARR_MEDIA_TYPE, roles=["data"],
            description="Every product and level as Zarr v3 groups, with consolidated "
                        "metadata at the root."))
    for fmt, href in exports:
        collection.add_asset(f"refs-{fmt}", pystac.Asset(
            href, title=f"{fmt} references", media_type=REFS_MEDIA_TYPES[fmt],
            roles=["references"], description=f"moczarr-store refs --format {fmt}"))
    for lv in levels:
        for label, start, end in lv.windows:
            collection.add_item(_item(lv, label, start, end, shapes[lv.product], serve_url))
    collection.normalize_hrefs(out_dir)
    # a root catalog beside it, for clients that start from one (pystac-client)
    root = pystac.Catalog(id=f"{name}-catalog", title=f"morton-hive {name}",
                          description=f"The STAC collection of the morton-hive {name}.")
    root.set_self_href(os.path.join(out_dir, "catalog.json"))
    root.add_child(collection)
    collection.set_self_href(os.path.join(out_dir, "collection.json"))
    root.save(pystac.CatalogType.SELF_CONTAINED)
    return os.path.join(out_dir, "collection.json")


def _levels(source: str, store_options: dict) -> tuple[str, list[Level]]:
    """The hive's URL (no credentials) and each product's finest level with a coverage,
    read through the Zarr hierarchy."""
    import zarr

    from .polygons import ellipsoid
    from .store import MocHiveStore
    from .verify import public_source

    store = MocHiveStore(source, **store_options)
    root: Any = zarr.open_group(store, mode="r")  # zarr types its members as a union
    products = root.attrs.get("morton_hive_store", {}).get("products", [])
    levels = []
    for product in products:
        group = root[product]
        orders = sorted((int(name[1:]), name) for name, _ in group.groups()
                        if re.fullmatch(r"o\d+", name))
        for _, name in reversed(orders):  # the finest level that says what it covers
            level = group[name]
            facts = level.attrs.get("morton_hive_store", {})
            if "coverage_moc" in facts:
                levels.append(_level(product, level, facts, ellipsoid(dict(level.attrs))))
                break
    return public_source(store.backend.url or source), levels


def _level(product: str, group: Any, facts: dict, on: str) -> Level:
    ids = group["cell_ids"]
    level = Level(product, f"{product}/{group.basename}", int(ids.shape[0]),
                  int(ids.attrs["level"]), facts["coverage_moc"], on)
    for name, array in group.arrays():
        dims = list(array.metadata.dimension_names or ())
        if not dims or dims[-1] != "cells" or "grid_mapping" not in array.attrs:
            continue
        variable = {"dimensions": dims, "type": "data", "description": name}
        if array.dtype.kind in "biuf":
            variable["data_type"] = array.dtype.name
            fill = array.metadata.fill_value
            variable["nodata"] = "nan" if np.isnan(fill) else fill.item()
        unit = array.attrs.get("units")
        if isinstance(unit, str):
            variable["unit"] = unit
        level.fields[name] = variable
    if "window" in group:
        labels = window_names(group["window"])
        starts = np.asarray(group["window_start"][:])
        ends = np.asarray(group["window_end"][:])
        level.windows = [(label, _instant(s), _instant(e))
                         for label, s, e in zip(labels, starts, ends, strict=True)]
    return level


def _instant(seconds: np.integer) -> datetime:
    return datetime.fromtimestamp(int(seconds), tz=UTC)


def _cube(target, levels: list[Level], window: tuple[datetime, datetime] | None = None,
          ) -> None:
    """The datacube extension on a Collection (every product's finest level) or an Item
    (one level, one window). Levels of one cell order share the dimension ``cells``;
    several orders have one ``cells_o{N}`` each."""
    _, DatacubeExtension = _pystac()
    from pystac.extensions.datacube import Dimension, Variable

    from .polygons import parse_moc

    orders = sorted({lv.order for lv in levels})
    names = {o: "cells" if len(orders) == 1 else f"cells_o{o}" for o in orders}
    dimensions = {}
    for order in orders:
        firsts, lasts = [], []
        for lv in (lv for lv in levels if lv.order == order):
            moc_order, a, b = parse_moc(lv.moc)
            shift = 2 * (order - moc_order)
            firsts.append(int(a.min()) << shift)
            lasts.append(((int(b.max()) + 1) << shift) - 1)
        dimensions[names[order]] = Dimension({
            "type": "dggs", "reference_system": HEALPIX_DGGRS, "extent": [min(firsts),
                                                                        max(lasts)],
            "description": f"HEALPix cells at order {order} (NESTED ids, the cell_ids "
                           "coordinate; their centres are lon / lat with the store's "
                           "centres option)"})
    spans = [(s, e) for lv in levels for _, s, e in lv.windows]
    if window or spans:
        start, end = window or (min(s for s, _ in spans), max(e for _, e in spans))
        dimensions["window"] = Dimension({
            "type": "temporal", "extent": [_iso(start), _iso(end)],
            "description": "time windows; the window coordinate holds their labels, "
                           "window_start / window_end their bounds"})
    variables = {}
    for lv in levels:
        for name, v in lv.fields.items():
            dims = [names[lv.order] if d == "cells" else d for d in v["dimensions"]]
            variables[f"{lv.path}/{name}"] = Variable({**v, "dimensions": dims})
    DatacubeExtension.ext(target, add_if_missing=True).apply(dimensions, variables)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _item(level: Level, label: str, start: datetime, end: datetime, shape,
          serve_url: str | None):
    pystac, _ = _pystac()
    from .polygons import bbox

    geometry = shape.__geo_interface__ if shape is not None else None
    item = pystac.Item(
        id=f"{level.product}-{label}", geometry=geometry,
        bbox=bbox(shape) if shape is not None else None, datetime=None,
        start_datetime=start, end_datetime=end,
        properties={"title": f"{level.product}, window {label}"},
    )
    _cube(item, [level], (start, end))
    if serve_url:
        item.add_asset("zarr", pystac.Asset(
            f"{serve_url.rstrip('/')}/{level.path}", title=f"{level.path} (Zarr v3 group)",
            media_type=ZARR_MEDIA_TYPE, roles=["data"],
            description=f"the level's group: window {label!r} is the index "
                        "of that label in its window coordinate"))
    return item


def _union_box(boxes: list[list[float]]) -> list[float]:
    """One box holding ``boxes`` (the world's longitudes where one crosses the
    antimeridian)."""
    south, north = min(b[1] for b in boxes), max(b[3] for b in boxes)
    if any(b[0] > b[2] for b in boxes):
        return [-180.0, south, 180.0, north]
    return [min(b[0] for b in boxes), south, max(b[2] for b in boxes), north]


def _ref(item: str) -> tuple[str, str]:
    fmt, sep, href = item.partition("=")
    if not sep or fmt not in REFS_MEDIA_TYPES or not href:
        raise OptionError(f"refs {item!r}: expected FORMAT=HREF with FORMAT one of "
                          f"{', '.join(REFS_MEDIA_TYPES)}")
    return fmt, href


def _identifier(source: str) -> str:
    """A collection id from the hive's URL: its last path segment, made safe."""
    tail = source.rstrip("/").rsplit("/", 1)[-1] or "hive"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-") or "hive"
