"""Overview levels of a ``zagg-pyramid/1`` product: sibling cell orders.

An overview at declared ancestor order ``k`` stores cells at ``c - (s - k)`` in
``all.zarr`` (or ``{window}.zarr``) objects at the order-``k`` ancestors of the root
MOC's shards. Overviews are regenerable caches: anything that stops a level from
being named exactly omits that level with a warning, and the source level stands.
"""

from __future__ import annotations

import warnings

import numpy as np

from .leaves import LeafCache
from .level import HiveWarning, Level, fill_schema, verify_all
from .windows import schedule

PYRAMID_V1 = "zagg-pyramid/1"


def _omit(level: str, reason: str) -> None:
    warnings.warn(f"{level}: {reason}; the order is omitted", HiveWarning, stacklevel=3)


def declared_orders(source: Level) -> tuple[list[int], bool]:
    """Declared ancestor orders (finest first) and the ``all_time`` flag."""
    block = source.manifest.raw.get("pyramid")
    overview = block.get("overview") if isinstance(block, dict) else None
    if not isinstance(overview, dict) or not overview.get("orders"):
        return [], False
    where = f"product {source.product!r}"
    if block.get("spec") != PYRAMID_V1:
        _omit(f"{where} pyramid", f"spec {block.get('spec')!r} is not {PYRAMID_V1!r}")
        return [], False
    orders = overview["orders"]
    if not all(isinstance(k, int) and 0 <= k < source.node_order for k in orders):
        _omit(f"{where} pyramid", f"orders {orders} are not ancestor orders")
        return [], False
    return sorted(set(orders), reverse=True), bool(overview.get("all_time"))


async def open_overviews(
    backend, leaves: LeafCache, source: Level, moc_ranks: np.ndarray | None, verify: str
) -> list[Level]:
    orders, all_time = declared_orders(source)
    if not orders:
        return []
    manifest = source.manifest
    if manifest.path_grouping != 1:
        _omit(f"{source.product} overviews", "ancestor paths of a grouped tree are unsettled")
        return []
    if moc_ranks is None:
        _omit(f"{source.product} overviews", "they are named from the root coverage.moc")
        return []
    windowed = schedule(manifest) is not None
    levels = []
    for k in orders:
        shift = np.uint64(2 * (source.node_order - k))
        ranks = np.unique(moc_ranks >> shift)
        cell_order = source.cell_order - (source.node_order - k)
        variants = [dict(windows=source.windows, window=source.window)]
        if windowed and all_time and source.window is None:
            variants.append(dict(fold=True))
        for variant in variants:
            level = Level(
                source.product, source.root, manifest, cell_order, k, ranks, "moc",
                overview=True, **variant,
            )
            if not await fill_schema(backend, leaves, level):
                _omit(f"{level.path}", "no stamped overview object (not swept yet?)")
                continue
            block = level.group_attrs.get("zagg_overview")
            if level.group_attrs.get("role") != "overview" or not isinstance(block, dict) or (
                block.get("cell_order") != cell_order
            ):
                _omit(f"{level.path}", f"object {level.template} is not an order-{cell_order} "
                      "overview (role / zagg_overview)")
                continue
            if verify == "open" or level.window is not None:
                await verify_all(backend, leaves, level)
            levels.append(level)
    return levels
