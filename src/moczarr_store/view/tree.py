"""The virtual hierarchy: groups, arrays, their metadata documents, and key lookup."""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass

from ..errors import HiveFormatError, HiveWarning
from ..hive.level import Level, Product
from ..hive.roster import Hive
from .arrays import FabricatedArray, FieldArray, cell_coordinate, window_instants, window_labels

Array = FieldArray | FabricatedArray
INDEX_RE = re.compile(r"^(0|[1-9][0-9]{0,18})\Z")


@dataclass
class Group:
    attrs: dict
    children: list[str]


def _group_meta(attrs: dict) -> dict:
    return {"attributes": attrs, "zarr_format": 3, "node_type": "group"}


def _encode(doc: dict) -> bytes:
    return json.dumps(doc, indent=1, allow_nan=False).encode()


def cell_ids_attrs(cell_order: int) -> dict:
    """Attributes that let xdggs decode ``cell_ids`` as HEALPix nested ids."""
    return {
        "grid_name": "healpix",
        "level": cell_order,
        "refinement_level": cell_order,
        "indexing_scheme": "nested",
        "standard_name": "healpix_nested_cell_id",
    }


def _coordinates(level: Level) -> dict[str, FabricatedArray]:
    """The fabricated coordinate arrays of one level, by name."""
    arrays = {
        "morton": cell_coordinate(level, "morton", {}),
        "cell_ids": cell_coordinate(level, "cell_ids", cell_ids_attrs(level.cell_order)),
    }
    if level.windows:
        arrays["window"] = window_labels(level.windows)
        spans = level.window_bounds()
        if all(spans):
            arrays["window_start"] = window_instants([s for s, _ in spans])
            arrays["window_end"] = window_instants([e for _, e in spans])
    return arrays


class View:
    """Every node of the virtual hierarchy, keyed by its path ('' is the root)."""

    def __init__(self, hive: Hive, options: dict, chunking: str = "leaf") -> None:
        """The hierarchy of every level read so far; ``options`` is recorded in the root's
        ``morton_hive_store`` attribute."""
        self.chunking = chunking
        self.groups: dict[str, Group] = {}
        self.arrays: dict[str, Array] = {}
        names = [p.name for p in hive.products]
        root_attrs = {"morton_hive_store": {"products": names, "bare": hive.bare, **options}}
        if hive.skipped:
            root_attrs["morton_hive_store"]["skipped"] = hive.skipped
        self.groups[""] = Group(root_attrs, [])
        self._documents: dict[str, bytes] = {}
        for product in hive.products:
            manifest = product.manifest
            product_attrs = {"morton_hive": manifest.summary()}
            if "semantic_hash" in manifest.raw:
                product_attrs["semantic_hash"] = manifest.raw["semantic_hash"]
            self._add_group(product.name, product_attrs)
            for level in list(product.levels):
                self._place(product, level)

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

    def _add_group(self, path: str, attrs: dict) -> None:
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
        fields = sorted(level.arrays)
        coordinates = _coordinates(level)
        cell_attrs = " ".join(c for c in coordinates if c != "window")
        arrays: dict[str, Array] = {**coordinates, **{
            name: FieldArray(level, name, level.arrays[name], cell_attrs, self.chunking)
            for name in fields}}
        self._add_group(
            level.path,
            {
                **level.group_attrs,
                "morton_hive": level.summary(),
                "morton_hive_store": {
                    "coverage": level.coverage_source,
                    "objects": level.artifact,
                    "shards": level.n_shards,
                    "cells_per_shard": level.cells_per_shard,
                },
            },
        )
        self.groups[level.path].children.extend(arrays)
        for name, array in arrays.items():
            array.path = f"{level.path}/{name}"
            self.arrays[array.path] = array

    def _metadata(self, path: str) -> dict:
        if path in self.arrays:
            return self.arrays[path].meta
        return _group_meta(self.groups[path].attrs)

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
