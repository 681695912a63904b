"""The virtual hierarchy: groups, arrays, their metadata documents, and key lookup."""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HiveFormatError, HiveWarning
from ..hints import ROOT_HINT
from ..hive.folds import PASS
from ..hive.level import Level, Product
from ..hive.roster import Hive
from .arrays import (
    Centres,
    FabricatedArray,
    FieldArray,
    cell_coordinate,
    cell_ranges,
    check_sphere,
    grid_mapping,
    leaves_per_chunk,
    window_instants,
    window_positions,
    window_strings,
)
from .computed import ComputedArray, computed_attrs, region_reads

Array = FieldArray | FabricatedArray | ComputedArray
INDEX_RE = re.compile(r"^(0|[1-9][0-9]{0,18})\Z")


@dataclass
class Group:
    attrs: dict[str, Any]
    children: list[str]


# the zarr ``multiscales`` convention (zarr-conventions/multiscales, v1) as registered in
# a group's ``zarr_conventions``
MULTISCALES = {
    "schema_url": "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json",
    "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v1/README.md",
    "uuid": "d35379db-88df-4056-af3a-620245f8e347",
    "name": "multiscales",
    "description": "Multiscale layout of zarr datasets",
}


def multiscales(levels: dict[str, int]) -> dict[str, Any] | None:
    """The ``multiscales`` layout of a group whose child level groups have these cell
    orders (name: order), finest first; ``None`` for fewer than two. Each coarser level
    is derived from the finest: each of its cells aggregates ``coarsening_factor`` =
    4^(finest order - its order) of the finest's, which ``transform.scale`` states along
    the ``cells`` dimension."""
    if len(levels) < 2:
        return None
    ranked = sorted(levels.items(), key=lambda item: -item[1])
    finest, top = ranked[0]
    layout = []
    for name, order in ranked:
        factor = 4 ** (top - order)
        entry: dict[str, Any] = {"asset": name, "cell_order": order, "coarsening_factor": factor}
        if name != finest:
            entry["derived_from"] = finest
        entry["transform"] = {"scale": [float(factor)]}
        layout.append(entry)
    return {"layout": layout}


def _group_meta(attrs: dict[str, Any]) -> dict[str, Any]:
    return {"attributes": attrs, "zarr_format": 3, "node_type": "group"}


def _encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, allow_nan=False, separators=(",", ":")).encode()  # C encoder


def cell_ids_attrs(cell_order: int, group_attrs: dict[str, Any]) -> dict[str, Any]:
    """xdggs's healpix attributes for ``cell_ids`` (``xdggs.decode(ds)`` reads exactly
    these, and refuses any other): NESTED ids at ``cell_order``, on the WGS84 ellipsoid
    when the hive declares authalic WGS84 latitudes (mortie's default: cell centres are
    geodetic), else on the sphere (latitudes used as spherical, as mortie's
    ``"geodetic-spherical"``)."""
    attrs: dict[str, Any] = {"grid_name": "healpix", "level": cell_order,
                             "indexing_scheme": "nested"}
    if _wgs84(group_attrs):
        attrs["ellipsoid"] = "WGS84"
    return attrs


def _wgs84(group_attrs: dict[str, Any]) -> bool:
    """Whether the hive declares authalic WGS84 latitudes (its cells are on WGS84)."""
    dggs = group_attrs.get("dggs")
    return isinstance(dggs, dict) and dggs.get("latitude") == "authalic-wgs84"


CF_NAMES = ("healpix_index", "lon", "lat", "healpix")
"""The arrays of the CF HEALPix layer: the cells' NESTED ids (as ``cell_ids``, whose
attributes are xdggs's, which refuse CF's), their centres (with ``centres=True``) and the
grid mapping (a level with a field of one of these names goes without the layer)."""
_CENTRES = ("lon", "lat")
_CF_ATTRS = {
    "healpix_index": {"standard_name": "healpix_index", "units": "1"},
    "lon": {"standard_name": "longitude", "long_name": "longitude of the cell centre",
            "units": "degrees_east"},
    "lat": {"standard_name": "latitude", "long_name": "latitude of the cell centre",
            "units": "degrees_north"},
}


def grid_mapping_attrs(cell_order: int, group_attrs: dict[str, Any]) -> dict[str, Any]:
    """The CF HEALPix grid mapping of a level: NESTED ids at ``cell_order``; the WGS84
    ellipsoid's parameters when the hive's cells are on it (else a sphere, its radius
    not stated)."""
    attrs: dict[str, Any] = {"grid_mapping_name": "healpix", "refinement_level": cell_order,
                   "indexing_scheme": "nested"}
    if _wgs84(group_attrs):
        attrs.update(semi_major_axis=6378137.0, inverse_flattening=298.257223563)
    return attrs


MAX_MOC_CHARS = 65_536
"""The longest ``coverage_moc`` a level group carries (longer: omitted)."""


def coverage_moc(level: Level) -> dict[str, Any]:
    """``{"coverage_moc": "ORDER/A-B C ..."}``: the level's nodes as an IVOA MOC 2.0 ASCII
    string at the node order, so a client maps rows (node after node, ``cells_per_node``
    each) to cells without reading ``cell_ids``. Longer than ``MAX_MOC_CHARS``, the nodes'
    parents at the finest coarser order that fits (a superset: where the data may be, no
    longer how rows map to cells). Cost: one pass over the nodes (their runs of
    consecutive ones), then O(runs) per order tried."""
    order = level.node_order
    starts, lengths = level.runs()
    firsts = starts.astype(np.int64) - 4**order
    lasts = firsts + lengths - 1
    while True:
        if order == 0 or firsts.size < MAX_MOC_CHARS // 8:
            text = f"{order}/" + " ".join(
                f"{a}-{b}" if b > a else f"{a}"
                for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True))
            if len(text) <= MAX_MOC_CHARS or order == 0:
                return {"coverage_moc": text}
        firsts, lasts, order = *_joined_runs(firsts >> 2, lasts >> 2), order - 1


def _joined_runs(firsts: np.ndarray, lasts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending inclusive runs ``[first, last]`` whose neighbours may now touch or overlap
    (their parents' runs), joined into maximal ones. Cost: O(runs)."""
    if firsts.size < 2:
        return firsts, lasts
    breaks = np.flatnonzero(firsts[1:] > lasts[:-1] + 1) + 1
    return firsts[np.r_[0, breaks]], lasts[np.r_[breaks - 1, lasts.size - 1]]


class View:
    """Every node of the virtual hierarchy, keyed by its path ('' is the root)."""

    def __init__(
        self, hive: Hive, options: dict[str, Any], chunking: str | int = "leaf",
        geometry: str = "covered", centres: int | None = None, window_labels: str = "text",
    ) -> None:
        """The hierarchy of every level read so far; ``options`` is recorded in the root's
        ``morton_hive_store`` attribute. ``geometry="sphere"``: arrays span every node of
        the sphere at their order (uncovered ones read as the fill value); ``centres``:
        with the cells' centres (``lon``, ``lat``), keeping the pairs computed last up to
        this many bytes per level (``None``: without them); ``window_labels="index"``:
        a windowed level's ``window`` holds positions, its labels in an attribute."""
        self.chunking, self.centres, self.window_labels = chunking, centres, window_labels
        self.sphere = geometry == "sphere"
        self.levels: dict[str, Level] = {}
        self.groups: dict[str, Group] = {}
        self.arrays: dict[str, Array] = {}
        names = [p.name for p in hive.products]
        root_attrs: dict[str, Any] = {
            "morton_hive_store": {"products": names, "bare": hive.bare, **options}}
        if hive.skipped:
            root_attrs["morton_hive_store"]["skipped"] = hive.skipped
        self.groups[""] = Group(root_attrs, [])
        self._documents: dict[str, bytes] = {}
        self._leaf_source_arrays: dict[tuple[str, str], FieldArray] = {}
        for product in hive.products:
            manifest = product.manifest
            product_attrs: dict[str, Any] = {"morton_hive": manifest.summary()}
            if "semantic_hash" in manifest.raw:
                product_attrs["semantic_hash"] = manifest.raw["semantic_hash"]
            self._add_group(product.name, product_attrs)
            for level in list(product.levels):
                self._place(product, level)
            if product.levels:  # what xr.open_zarr(store, group=product) then says
                product_attrs["hint"] = ROOT_HINT.format(group=product.levels[0].path)
        if self.levels:  # what xr.open_zarr(store) without group= then says
            root_attrs["hint"] = ROOT_HINT.format(group=next(iter(self.levels)))

    def add_level(self, product: Product, level: Level) -> bool:
        """Add a level read after the view was built, in the product's declared order;
        only the documents of its ancestors are made anew. ``False``: it was omitted."""
        if not self._place(product, level):
            return False
        for group in (product.name, f"{product.name}/all_time"):
            if group in self.groups:
                order = [lv.path[len(group) + 1 :].split("/")[0] for lv in product.levels
                         if lv.path.startswith(group + "/")]
                self.groups[group].children.sort(key=order.index)
        parts = level.path.split("/")
        for i in range(len(parts)):
            self._documents.pop("/".join(parts[:i]), None)
        return True

    def _add_group(self, path: str, attrs: dict[str, Any]) -> None:
        parent, _, name = path.rpartition("/")
        if parent not in self.groups:
            self._add_group(parent, {})
        self.groups[parent].children.append(name)
        self.groups[path] = Group(attrs, [])

    def _place(self, product: Product, level: Level) -> bool:
        """Add ``level``; an overview level whose arrays cannot be presented is omitted
        from the product with a warning (overviews are regenerable caches), the source
        level's error is raised."""
        try:
            self._add_level(level)
        except HiveFormatError as err:
            if level.artifact == "source":
                raise
            warnings.warn(f"{level.path}: {err}; omitted", HiveWarning, stacklevel=2)
            product.levels.remove(level)
            return False
        return True

    def _add_level(self, level: Level) -> None:
        """Add one level's group and arrays; a field that cannot be presented raises before
        anything is added, so the view never holds part of a level."""
        coordinates = ["morton", "cell_ids"]
        if level.windows:
            coordinates.append("window")
            if all(level.window_bounds()):
                coordinates += ["window_start", "window_end"]
        cf = not set(CF_NAMES) & set(level.arrays)
        if cf:
            coordinates += [n for n in CF_NAMES
                            if self.centres is not None or n not in _CENTRES]
        named = " ".join(c for c in coordinates if c != "window")
        cell_attrs: dict[str, Any] = {"coordinates": named}
        if cf:
            cell_attrs["grid_mapping"] = "healpix"
        fields: dict[str, FieldArray | ComputedArray]
        if level.artifact == "computed":
            fields = {name: ComputedArray(level, level.folds[name], self._leaf_sources(
                level, name, cell_attrs), cell_attrs, self.sphere) for name in sorted(level.folds)}
        else:
            span = leaves_per_chunk(level, self.chunking)
            fields = {
                name: FieldArray(level, name, level.arrays[name], cell_attrs, self.chunking,
                                 self.sphere, span)
                for name in sorted(level.arrays)
            }
        # the coordinates are chunked on every field's boundaries (the finest field chunk);
        # "auto": on the joined fields' chunks when every other field's chunk divides them,
        # so a scan's coordinates cost as many chunks as its fields
        found = [f.chunk_rows for f in fields.values() if f.chunk_rows]
        rows = min(found, default=None) or level.cells_per_node
        if self.chunking == "auto" and found and all(max(found) % r == 0 for r in found):
            rows = max(found)
        if self.sphere:
            check_sphere(level, rows)
        # sharded as the fields when they all pass shards of one shape through
        shapes = {(f.shard_rows, f.chunk_rows) for f in fields.values() if f.axis is not None}
        shard_rows = next(iter(shapes))[0] if len(shapes) == 1 else None
        if shard_rows is not None and (shard_rows <= rows or shard_rows % rows):
            shard_rows = None
        arrays: dict[str, Array] = {**self._coordinates(level, rows, shard_rows, cf), **fields}
        described: dict[str, Any] = {
            "coverage": level.coverage_source,
            "objects": level.artifact,
            "nodes": level.n_nodes,
            "cells_per_node": level.cells_per_node,
            **coverage_moc(level),
        }
        if level.source is not None:
            described["computed"] = computed_attrs(level)
        if regions := region_reads(level):
            described["regions"] = regions
        self._add_group(level.path, {**level.group_attrs, "morton_hive": level.summary(),
                                     "morton_hive_store": described})
        self.groups[level.path].children.extend(arrays)
        for name, array in arrays.items():
            array.path = f"{level.path}/{name}"
            self.arrays[array.path] = array
        self.levels[level.path] = level

    def _leaf_sources(self, level: Level, name: str,
                      cell_attrs: dict[str, Any]) -> tuple[FieldArray, ...]:
        """Field ``name`` of each source level a computed level composes (its ``source``,
        then the ``regions`` whose leaves hold it), one chunk per leaf (how their leaves
        are read), each made once per view."""
        assert level.source is not None
        found = []
        passed = level.folds[name].method == PASS  # read only where at the level's order
        for source in (level.source, *level.regions):
            if passed and source.cell_order != level.cell_order:
                continue
            meta = source.arrays.get(name)
            if meta is None or meta.shape != (source.cells_per_node,):
                continue  # a region without the field (or not one value per cell): fill
            key = (source.path, name)
            if key not in self._leaf_source_arrays:
                self._leaf_source_arrays[key] = FieldArray(source, name, meta, cell_attrs,
                                                           "leaf")
            found.append(self._leaf_source_arrays[key])
        return tuple(found)

    def cell_ranges(self, path: str) -> np.ndarray | None:
        """Level ``path``'s rows as ``[start, stop)`` NESTED ranges at order 29 (``None``:
        no such level read). Cost: O(nodes)."""
        level = self.levels.get(path)
        return None if level is None else cell_ranges(level, self.sphere)

    def _coordinates(self, level: Level, rows: int, shard_rows: int | None,
                     cf: bool) -> dict[str, FabricatedArray]:
        """The fabricated coordinate arrays of one level, by name (``cf``: with the CF
        HEALPix layer, :data:`CF_NAMES`)."""
        sphere, attrs = self.sphere, level.group_attrs
        arrays = {
            "morton": cell_coordinate(level, "morton", {}, rows, sphere, shard_rows),
            "cell_ids": cell_coordinate(level, "cell_ids",
                                        cell_ids_attrs(level.cell_order, attrs), rows, sphere,
                                        shard_rows),
        }
        if cf:
            latitude = "authalic" if _wgs84(attrs) else "geodetic-spherical"
            centres = None if self.centres is None else Centres(level, sphere, latitude,
                                                                self.centres)
            for name, cf_attrs in _CF_ATTRS.items():
                if name in _CENTRES and centres is None:
                    continue
                kind = "cell_ids" if name == "healpix_index" else name
                arrays[name] = cell_coordinate(level, kind, cf_attrs, rows, sphere, shard_rows,
                                               None if kind == "cell_ids" else centres)
            arrays["healpix"] = grid_mapping(grid_mapping_attrs(level.cell_order, attrs))
        if level.windows:
            arrays["window"] = (window_positions(level.windows) if self.window_labels == "index"
                                else window_strings(level.windows))
            spans = level.window_bounds()
            known = [span for span in spans if span is not None]
            if len(known) == len(spans):
                arrays["window_start"] = window_instants([s for s, _ in known])
                arrays["window_end"] = window_instants([e for _, e in known])
        return arrays

    def _metadata(self, path: str) -> dict[str, Any]:
        if path in self.arrays:
            return self.arrays[path].meta.to_json()
        attrs = self.groups[path].attrs
        prefix = f"{path}/" if path else ""
        layout = multiscales({
            child: self.levels[prefix + child].cell_order
            for child in self.groups[path].children if prefix + child in self.levels
        })
        if layout is not None:
            conventions = [c for c in attrs.get("zarr_conventions", []) if c != MULTISCALES]
            attrs = {**attrs, "zarr_conventions": [*conventions, MULTISCALES],
                     "multiscales": layout}
        return _group_meta(attrs)

    def descendants(self, path: str) -> list[str]:
        """Paths below ``path``, depth first in child order."""
        out = []
        for child in self.groups[path].children if path in self.groups else []:
            full = f"{path}/{child}" if path else child
            out.append(full)
            out.extend(self.descendants(full))
        return out

    def document(self, path: str) -> bytes | None:
        """A node's ``zarr.json`` (built on first use); groups carry inline consolidated
        metadata."""
        if path not in self.groups and path not in self.arrays:
            return None
        if path not in self._documents:
            doc = dict(self._metadata(path))
            if path in self.groups:
                cut = len(path) + 1 if path else 0
                doc["consolidated_metadata"] = {
                    "kind": "inline",
                    "must_understand": False,
                    "metadata": {p[cut:]: self._metadata(p) for p in self.descendants(path)},
                }
            self._documents[path] = _encode(doc)
        return self._documents[path]

    def chunk(self, key: str) -> tuple[Array, tuple[int, ...]] | None:
        """The array and chunk coordinates a chunk key names, or ``None``.

        A key is ``{array path}/c/{i}/{j}...``; an array may be named ``c``, ``0`` or
        ``zarr.json``, so the split is at the *last* ``/c/``: every earlier one leaves a
        ``c`` component in the tail, which no coordinate tuple has (one lookup).
        """
        head, sep, tail = key.rpartition("/c/")
        array = self.arrays.get(head) if sep else None
        if array is None:
            return None
        parts = tail.split("/")
        if len(parts) != len(array.grid) or not all(INDEX_RE.match(p) for p in parts):
            return None
        coords = tuple(int(p) for p in parts)
        if any(c >= n for c, n in zip(coords, array.grid, strict=True)):
            return None
        return array, coords

    def has_node(self, path: str) -> bool:
        return path in self.groups or path in self.arrays

    def children(self, path: str) -> list[str] | None:
        group = self.groups.get(path)
        return None if group is None else list(group.children)
