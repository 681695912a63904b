"""A field at a computed order: its ``zarr.json``, and which source leaves a chunk folds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..hive.arraymeta import ArrayMeta, declare
from ..hive.folds import Fold
from ..hive.level import Level
from .arrays import _BYTES_LE_JSON, _DEFAULT_KEYS, FieldArray, covered_index, domain_nodes


class ComputedArray:
    """Field ``fold.name`` of a computed level: one chunk per node of the level (on an
    unscoped windowed product, per window too), each the fold of the source leaves beneath
    that node (every window's, on an all-time level). Values are little-endian, unencoded;
    an all-missing chunk is absent (the fill value).

    ``sources``: the field of each source level the level composes (``level.source``, then
    its ``regions`` that hold the field), presented one chunk per leaf: what a chunk's
    leaves are read as."""

    def __init__(self, level: Level, fold: Fold, sources: tuple[FieldArray, ...],
                 cell_attrs: dict[str, Any], sphere: bool = False) -> None:
        assert level.source is not None
        self.level, self.fold, self.sources, self.sphere = level, fold, sources, sphere
        self.name = fold.name
        self.path = f"{level.path}/{fold.name}"
        cells = level.cells_per_node
        self.windowed = bool(level.windows)
        shape, chunks = [domain_nodes(level, sphere) * cells], [cells]
        dims = ["cells"]
        if self.windowed:
            shape, chunks, dims = [len(level.windows), *shape], [1, *chunks], ["window", *dims]
        attrs = dict(sources[0].source_meta.attributes)
        attrs.update(cell_attrs)  # its coordinates and grid mapping, as a field's
        attrs["morton_hive_store"] = {"computed": {
            "role": "computed",
            "source_orders": [s.level.cell_order for s in sources],
            "all_time": level.fold,
            "fold": fold.declaration(),
            "declared_in": fold.declared_in,
        }}
        self.meta: ArrayMeta = declare({
            "shape": shape,
            "data_type": fold.dtype.name,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": _DEFAULT_KEYS,
            "fill_value": fold.fill_value,
            "codecs": [_BYTES_LE_JSON],
            "attributes": attrs,
            "dimension_names": dims,
            "zarr_format": 3,
            "node_type": "array",
            "storage_transformers": [],
        })
        self.grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunks, strict=True))
        self.chunk_rows = cells
        self.shard_rows = None
        self.axis = 0

    @property
    def chunk_nbytes(self) -> int:
        return self.level.cells_per_node * self.fold.dtype.itemsize

    @property
    def leaves_folded(self) -> int:
        """The leaf reads that folding every chunk makes, at most: each leaf of every
        source level once per window folded."""
        windowed = self.level.fold or self.windowed
        return sum(s.level.n_nodes * (max(1, len(s.level.windows)) if windowed else 1)
                   for s in self.sources)

    def beneath(self, coords: tuple[int, ...],
                base: Level) -> tuple[list[str | None], int, int, np.ndarray]:
        """What chunk ``coords`` folds from source level ``base``: ``(windows, first, stop,
        offsets)``: its leaves ``[first, stop)`` (indices of ``base``) in each of
        ``windows`` (``[None]``: the source's own), and each leaf's position among
        ``base``'s nodes beneath the chunk's node. ``first == stop``: none (an uncovered
        sphere node). Cost: two binary searches."""
        level = self.level
        node = coords[-1]
        if self.sphere:
            node = covered_index(level, node)  # type: ignore[assignment]
            if node is None:
                return [None], 0, 0, np.zeros(0, np.int64)
        if level.fold:
            windows: list[str | None] = list(base.windows)
        elif self.windowed:
            windows = [level.windows[coords[0]]]
        else:
            windows = [None]
        shift = 2 * (base.node_order - level.node_order)
        rank = int(level.node_ranks[node])
        ranks = base.node_ranks
        first, stop = (int(i) for i in np.searchsorted(
            ranks, np.array([rank << shift, (rank + 1) << shift], dtype=ranks.dtype)))
        offsets = ranks[first:stop].astype(np.int64) - np.int64(rank << shift)
        return windows, first, stop, offsets


def computed_attrs(level: Level) -> dict[str, Any]:
    """What a computed level's group says of itself (its ``morton_hive_store.computed``):
    its role, the orders it is composed from (finer: folded; its own: passed through),
    whether it folds every window, each field's fold (fields the hive declares no exact
    fold for are absent) and the document that declares them (the manifest, or the
    writer's ``aggregation.yaml``)."""
    assert level.source is not None
    return {"role": "computed",
            "source_orders": [s.cell_order for s in (level.source, *level.regions)],
            "all_time": level.fold,
            "fields": {name: fold.declaration() for name, fold in sorted(level.folds.items())},
            "declared_in": next(iter(level.folds.values())).declared_in}


def region_reads(level: Level) -> dict[str, str]:
    """On a product whose leaves sit at several cell orders (D24), how ``level`` (its source
    level or a computed one) reads the region of each source order, by ``o{order}``: ``as
    stored`` (its own source), ``folded`` (finer), ``passed through`` (a computed level's
    own order) or ``absent`` (coarser: never upsampled); ``{}`` on any other product."""
    orders = [order for order, _ in level.manifest.source_orders]
    if level.artifact not in ("source", "computed") or len(orders) < 2:
        return {}
    own = "as stored" if level.artifact == "source" else "passed through"
    return {f"o{order}": ("folded" if order > level.cell_order else own
                          if order == level.cell_order else "absent")
            for order in orders}
