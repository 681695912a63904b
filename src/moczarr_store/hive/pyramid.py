"""Pyramid levels of a product: the coarser cell orders beside the source.

``zagg-pyramid/1`` declares ancestor orders ``k``; each stores cells at ``c - (s - k)``
in ``all.zarr`` (or ``{window}.zarr``) objects at the order-``k`` ancestors of the root
MOC's nodes. ``zagg-pyramid/2`` declares a fixed ladder ``[{node, cells}]``: ladder
rungs are the same ancestor objects holding group ``{r}/``, and the leaf entry's cells
are served by the §4.6 leaf columns (``all.pyramid.zarr`` beside each leaf).

Overviews are regenerable caches: anything that stops a level from being named
exactly omits that level with a warning, and the source level stands. Declaring the levels
reads nothing; a level's schema is read when it is first needed (``resolve_level``).
"""

from __future__ import annotations

import itertools
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ..diagnostics import FIRST_NAMES, first_names
from ..errors import HiveWarning
from .aoi import Cells
from .ids import ancestor_ranks, distinct_sorted
from .jsonio import is_int
from .leaves import LeafCache
from .level import Level
from .load import drop_outside_aoi, drop_unstamped, fill_schema
from .paths import short
from .windows import schedule

if TYPE_CHECKING:
    from ..io.reader import HiveIO

PYRAMID_V1 = "zagg-pyramid/1"
PYRAMID_V2 = "zagg-pyramid/2"
ROLES = {"overview": ("overview", "zagg_overview"), "column": ("column", "zagg_column")}


def _omit(where: str, reason: str) -> None:
    warnings.warn(f"{where}: {reason}; omitted", HiveWarning, stacklevel=3)


def declared_levels(source: Level) -> tuple[list[tuple[int, int, str]], bool]:
    """``[(node order, cell order, artifact)]`` finest first, and the all_time flag.

    A malformed declaration omits what it declares, with a warning naming it.
    """
    raw = source.manifest.raw
    where = f"{source.manifest.where}: product {source.product!r} pyramid"
    # zagg writes no block (older manifests) or a mapping (declared off: overview orders
    # []): a key holding anything else, null included, is damage, warned
    if not isinstance(block := raw.get("pyramid"), dict):
        if "pyramid" in raw:
            _omit(where, f"the manifest's 'pyramid' {short(block)} is not a JSON object")
        return [], False
    if not isinstance(overview := block.get("overview"), dict):
        if "overview" in block:
            _omit(where, f"'overview' {short(overview)} is not a JSON object")
        overview = {}
    all_time = overview.get("all_time", False)
    if not isinstance(all_time, bool):
        _omit(f"{where} all-time folds", f"'all_time' {short(all_time)} is not a boolean")
        all_time = False
    s, c = source.node_order, source.cell_order
    spec = block.get("spec")
    if spec == PYRAMID_V2 and isinstance(block.get("overviews"), list):
        found = []
        for entry in block["overviews"]:
            node, cells = (entry.get("node"), entry.get("cells")) if isinstance(entry, dict) else (
                None, None)
            if not (is_int(node) and 0 <= node <= s and isinstance(cells, list)):
                _omit(where, f"ladder entry {short(entry)} is malformed")
                return [], False
            artifact = "column" if node == s else "overview"
            for r in cells:
                if is_int(r) and node < r < c:
                    found.append((node, r, artifact))
                else:
                    _omit(f"{where} ladder entry node {node}",
                          f"cells {short(r)} is not an order between {node} and {c}")
    elif overview.get("orders"):
        if spec != PYRAMID_V1:
            _omit(where, f"spec {short(spec)} is not {PYRAMID_V1!r} or {PYRAMID_V2!r}")
            return [], False
        orders = overview["orders"]
        if not (isinstance(orders, list) and all(is_int(k) and 0 <= k < s for k in orders)):
            _omit(where, f"orders {short(orders)} are not ancestor orders of shard order {s}")
            return [], False
        found = [(k, c - (s - k), "overview") for k in set(orders)]
    else:
        return [], False
    return sorted(set(found), key=lambda level: -level[1]), all_time


def _admissible(level: Level) -> bool:
    """The template object is the artifact its level expects (role and provenance)."""
    role, block_name = ROLES[level.artifact]
    block = level.group_attrs.get(block_name)
    if level.group_attrs.get("role") != role or not isinstance(block, dict):
        _omit(level.path, f"object {level.template} carries no role {role!r} / {block_name}")
        return False
    stored = block.get("cell_order")
    if level.artifact == "overview" and stored is not None and (
        not is_int(stored) or stored != level.cell_order
    ):
        _omit(level.path, f"object {level.template} stores cells at order {short(stored)}")
        return False
    return True


def declare_pyramid(source: Level, moc_ranks: np.ndarray | None) -> list[Level]:
    """The product's declared overview levels, finest first, their schemas still unread."""
    declared, all_time = declared_levels(source)
    if not declared:
        return []
    manifest = source.manifest
    if moc_ranks is None:
        _omit(f"{source.product} pyramid", "its objects are named from the root coverage.moc")
        return []
    windowed = schedule(manifest) is not None
    levels = []
    for node_order, cell_order, artifact in declared:
        if artifact == "overview" and manifest.path_grouping != 1:
            _omit(f"{source.product}/o{cell_order}", "ancestor paths of a grouped tree are "
                  "unsettled")
            continue
        ranks = distinct_sorted(ancestor_ranks(moc_ranks, source.node_order - node_order))
        variants: list[dict[str, Any]] = [{"windows": source.windows, "window": source.window}]
        if artifact == "overview" and windowed and all_time and source.window is None:
            variants.append({"fold": True})
        levels += [
            Level(source.product, source.root, manifest, cell_order, node_order, ranks, "moc",
                  artifact=artifact, **variant)
            for variant in variants
        ]
    return levels


async def resolve_level(
    backend: HiveIO, leaves: LeafCache, level: Level, verify: str, aoi: Cells | None = None
) -> bool:
    """Read a declared level's schema from its first stamped object; ``False``: omitted."""
    if not await fill_schema(backend, leaves, level, aoi):
        objects = [path for _, _, path in itertools.islice(level.object_pairs(), FIRST_NAMES + 1)]
        _omit(level.path, f"declared, but no stamped {level.artifact} object exists "
                          f"(unstamped or absent: {first_names(objects)})")
        return False
    if not _admissible(level):
        return False
    drop_outside_aoi(level, aoi)
    if verify == "open" or level.window is not None:
        await drop_unstamped(backend, leaves, level)
    return True
