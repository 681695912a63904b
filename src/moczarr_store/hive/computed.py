"""Computed levels: every cell order of a product the hive does not store, folded from its
source leaves by the fields' declared folds (``folds.py``).

A computed level at cell order ``k`` keeps the layout zagg's overviews have: nodes at order
``max(0, k - depth)`` (``depth``: the source's cell order below its shard order), each the
ancestor of source leaves, holding ``4**(k - node order)`` cells. Levels are declared from
the source level already read: no request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .aggregation import read_writer_folds
from .coverage import expand_bounds, merge_bounds
from .folds import PASS, Fold, declared_folds
from .ids import ancestor_ranks
from .level import Level
from .manifest import Manifest

if TYPE_CHECKING:
    from ..io.reader import HiveIO

MODES = ("missing", "all", "none")
"""``computed_orders``: the orders the hive does not store (the default), every order
below the source's (stored overviews are not read: a check of a sweep), or none."""


def computed_levels(source: Level, stored: list[Level], mode: str,
                    declared: tuple[dict[str, Fold], bool],
                    regions: tuple[Level, ...] = ()) -> list[Level]:
    """The computed levels of the product whose source level is ``source`` and whose
    declared stored levels are ``stored``: per window (or the scoped one) every order from
    0 to the source's own that ``mode`` computes and ``stored`` does not hold; where
    ``declared`` (``(folds, all_time)``: :func:`product_folds`) has the all-time fold of a
    windowed product, ``all_time/`` levels down from the source's order too. Fields
    without an exact fold are absent; a product with none has no computed levels.

    ``regions``: the source levels at coarser cell orders of a product whose leaves sit at
    several (D24). A level at order ``k`` composes every source level at ``k`` or finer:
    those finer folded, the one at ``k`` passed through (a fold of one cell); a region
    coarser than ``k`` is absent from it, never upsampled. A field without an exact fold
    that the regions at ``k`` hold is read there as stored (``folds.PASS``). No I/O; each
    order's nodes come from the next finer order's and those of the regions at that order
    (one pass over the source's node ranks, then over ever fewer)."""
    folds, all_time = declared
    fields = {name: fold for name, fold in folds.items() if _foldable(source, name)}
    if mode == "none" or not fields or source.artifact != "source":
        return []
    kept = set() if mode == "all" else {(lv.fold, lv.cell_order) for lv in stored}
    variants = [False]
    if all_time and source.windows and source.window is None:
        variants.append(True)
    levels = []
    for fold in variants:
        top = source.cell_order + 1 if fold else source.cell_order
        ranks: np.ndarray | None = source.node_ranks
        node_order, bounds = source.node_order, _bounds(source)
        for order in range(top - 1, -1, -1):  # each order's nodes from the finer one's
            coarser = max(0, order - source.depth)
            joining = [r for r in regions if r.cell_order == order]  # a region joins at its own
            if coarser != node_order or joining:
                bounds = merge_bounds(np.concatenate([
                    ancestor_ranks(bounds, node_order - coarser),
                    *(ancestor_ranks(_bounds(r), r.node_order - coarser)
                      for r in joining)]))
                ranks, node_order = None, coarser
            if (fold, order) not in kept:
                if ranks is None:  # expanded only for a level made, once a node order
                    ranks = expand_bounds(bounds)
                sources = (source, *(r for r in regions if r.cell_order >= order))
                levels.append(_level(sources, order, ranks,
                                     {**fields, **_passed(joining, fields)}, fold))
    return levels


async def product_folds(backend: HiveIO, root: str, manifest: Manifest,
                        mode: str) -> tuple[dict[str, Fold], bool]:
    """``(folds, all_time)`` of the product's computed orders: the manifest's declaration,
    else (no fields declared) the one zagg would make from the product's
    ``aggregation.yaml``; none when ``mode`` is ``"none"``. Cost: that document's GET, only
    where the manifest declares no fields."""
    if mode == "none":
        return {}, False
    declared = declared_folds(manifest.raw, manifest.where)
    if declared is not None:
        return declared
    return await read_writer_folds(backend, root, manifest)


def _foldable(source: Level, name: str) -> bool:
    """Whether field ``name`` of the source is one value per cell (a numeric 1-D array)."""
    meta = source.arrays.get(name)
    return (meta is not None and meta.shape == (source.cells_per_node,)
            and meta.dtype is not None)


def _passed(regions: list[Level], folded: dict[str, Fold]) -> dict[str, Fold]:
    """The fields without an exact fold (not in ``folded``) that ``regions`` (at a computed
    level's own order) hold one value per cell: read there as stored, in the dtype and
    fill value of the first region's template array."""
    passed: dict[str, Fold] = {}
    for region in regions:
        for name, meta in region.arrays.items():
            if name not in folded and name not in passed and _foldable(region, name):
                assert meta.dtype is not None
                where = f"{region.template_data}/{region.cell_order}/{name}/zarr.json"
                passed[name] = Fold(name, PASS, meta.dtype, meta.fill_value,
                                    declared_in=where.lstrip("/"))
    return passed


def _bounds(level: Level) -> np.ndarray:
    """``level``'s nodes as inclusive ``[first, last]`` rows of consecutive ranks: a run's
    ancestors are the run of its ends' ancestors, so coarser orders cost their runs, not
    their nodes."""
    starts, lengths = level.runs()
    return np.stack([starts, starts + (lengths - 1).astype(starts.dtype)], axis=1)


def _level(sources: tuple[Level, ...], order: int, ranks: np.ndarray,
           folds: dict[str, Fold], fold: bool) -> Level:
    """The computed level at cell ``order`` composing ``sources`` (the source level, then
    the regions it reads too) whose nodes are ``ranks`` (distinct, ascending, at node order
    ``max(0, order - source.depth)``)."""
    source = sources[0]
    return Level(
        source.product, source.root, source.manifest, order, max(0, order - source.depth), ranks,
        source.coverage_source, artifact="computed", fold=fold,
        windows=() if fold else source.windows, window=source.window,
        group_attrs={k: v for k, v in source.group_attrs.items() if k != "zagg_objects"},
        arrays={name: next(s.arrays[name] for s in sources if name in s.arrays)
                for name in folds},
        template=source.template, template_run=source.template_run,
        template_data=source.template_data, source=source, folds=folds,
        regions=sources[1:],
    )
