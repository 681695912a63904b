"""The model of a product: its levels (cell orders) with their row domain, windows and
template leaf schema. Nothing here reads: ``load.py`` builds and settles levels,
``pyramid.py`` declares the overview levels.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..tunables import setting
from .ids import distinct_sorted, rank_to_decimal
from .jsonio import is_int
from .manifest import Manifest
from .paths import leaf_path, node_path, short
from .runs import RunEncoding
from .windows import bounds

if TYPE_CHECKING:
    from .arraymeta import ArrayMeta
    from .folds import Fold
    from .leaves import Leaf, Provenance

OVERVIEW_SPECS = ("zagg-overview/1", "zagg-overview/2")
COLUMN_SPEC = "zagg-column/1"

COORDINATE_NAMES = ("morton", "cell_ids")
WINDOW_COORDINATES = ("window", "window_start", "window_end")


_BLOCK = 1 << 18  # ranks a pass of ranks_to_runs takes at once (2 MiB of uint64)


def ranks_to_runs(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending ranks as runs of consecutive ones: ``(starts, lengths)``. A covered
    region is a few runs however many nodes it has. Cost: one pass, a block of ranks at a
    time (no temporary the size of ``ranks``)."""
    breaks = np.concatenate([np.zeros(0, dtype=np.intp), *(
        np.flatnonzero(np.diff(ranks[at:at + _BLOCK + 1]) != 1) + (at + 1)
        for at in range(0, ranks.size - 1, _BLOCK))])
    starts = ranks[np.concatenate([[0], breaks])] if ranks.size else ranks[:0]
    lengths = np.diff(np.concatenate([[0], breaks, [ranks.size]])) if ranks.size else ranks[:0]
    return starts, lengths.astype(np.int64)


def runs_to_ranks(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The ranks :func:`ranks_to_runs` was given, with their dtype."""
    offsets = np.cumsum(lengths) - lengths
    steps = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths)
    return np.repeat(starts, lengths) + steps.astype(starts.dtype)


@dataclass(eq=False)  # identity: a level is settled in place, and numpy fields do not compare
class Level:
    """One cell order of a product: rows are the subtrees of its objects' nodes.

    The source level's objects are the leaves (nodes at the shard order); an overview
    level's are ``all.zarr`` / ``{window}.zarr`` at ancestor nodes; a column level's are
    the ``all.pyramid.zarr`` / ``{window}.pyramid.zarr`` siblings of the leaves. A computed
    level has no objects: its nodes are ancestors of the ``source`` level's, each chunk
    the fold (``folds``) of the leaves beneath it.
    """

    product: str
    root: str
    manifest: Manifest
    cell_order: int
    node_order: int
    node_ranks: np.ndarray  # ranks of the objects' nodes at node_order, ascending
    coverage_source: str
    artifact: str = "source"  # "source" | "overview" | "column" | "computed"
    fold: bool = False  # the all-time folds (all.zarr) of a windowed product
    windows: tuple[str, ...] = ()  # the window axis (unscoped windowed products)
    window: str | None = None  # the one window every object is read from (scoped)
    group_attrs: dict[str, Any] = field(default_factory=dict[str, Any])
    arrays: dict[str, ArrayMeta] = field(default_factory=dict)  # the template's, by name
    template: str = ""
    template_run: str = ""
    template_data: str = ""  # where the template's arrays live (its data prefix)
    encodings: list[RunEncoding] = field(default_factory=list)  # the template's, then runs'
    dropped: list[str] = field(default_factory=list)  # debris, refused or dangling objects
    missing: int = 0  # listed objects with no stamp and no directory (verify="open")
    missing_names: list[str] = field(default_factory=list)  # the first few of them
    warned: set[str] = field(default_factory=set)  # objects a warning at open named
    uncut_ranks: np.ndarray | None = None  # node_ranks before an AOI cut them (None: uncut)
    # a computed level (artifact "computed"): the source level it folds, and each field's fold
    source: Level | None = None
    folds: dict[str, Fold] = field(default_factory=dict)
    # and, on a product whose leaves sit at several cell orders (D24), the source levels at
    # coarser orders it composes too (order <= theirs), finest first
    regions: tuple[Level, ...] = ()
    # object paths by (node rank, window), computed once: every field of a leaf, every scan
    _paths: dict[tuple[int, str | None], str] = field(
        default_factory=dict, init=False, repr=False)
    # the nodes as runs, and the node_ranks array they were made of (:meth:`runs`)
    _runs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, init=False, repr=False)

    @property
    def path(self) -> str:
        """The level's group in the virtual hierarchy."""
        return f"{self.product}/{'all_time/' if self.fold else ''}o{self.cell_order}"

    @property
    def n_nodes(self) -> int:
        return int(self.node_ranks.size)

    def runs(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct nodes as runs of consecutive ranks, ``(starts, lengths)``
        (:func:`ranks_to_runs`). Cost: one pass over the nodes, once per ``node_ranks``
        array (a level settled with other nodes makes them again)."""
        kept = self._runs
        if kept is None or kept[0] is not self.node_ranks:
            kept = self._runs = (self.node_ranks,
                                 *ranks_to_runs(distinct_sorted(self.node_ranks)))
        return kept[1], kept[2]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the kept paths and runs, node ranks as runs
        (:func:`ranks_to_runs`)."""
        state = {**self.__dict__, "_paths": {}, "_runs": None}
        for name in ("node_ranks", "uncut_ranks"):
            if state[name] is not None:
                state[name] = ranks_to_runs(state[name])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in ("node_ranks", "uncut_ranks"):
            if state[name] is not None:
                state[name] = runs_to_ranks(*state[name])
        self.__dict__.update(state)

    @property
    def depth(self) -> int:
        return self.cell_order - self.node_order

    @property
    def cells_per_node(self) -> int:
        return 4**self.depth

    def object_path(self, index: int, window: str | None = None) -> str:
        """Hive-relative path of the ``index``-th object (in ``window``). Cost: a dict
        lookup once computed (up to ``config["cache.object_paths"]`` paths kept per
        level, all let go when full)."""
        return self._kept_path(int(self.node_ranks[index]), window or self.window,
                               setting("cache.object_paths"))

    def object_paths(self, start: int, stop: int, window: str | None = None) -> list[str]:
        """``object_path(i, window)`` for ``i`` in ``[start, stop)``, the ranks read in one
        slice and the bound once (a span's leaves)."""
        window, bound = window or self.window, setting("cache.object_paths")
        return [self._kept_path(rank, window, bound)
                for rank in self.node_ranks[start:stop].tolist()]

    def _kept_path(self, rank: int, window: str | None, bound: int) -> str:
        path = self._paths.get((rank, window))
        if path is None:
            if len(self._paths) >= bound:
                self._paths.clear()
            path = self._paths[rank, window] = self._object_path(rank, window)
        return path

    def _object_path(self, rank: int, window: str | None) -> str:
        decimal = rank_to_decimal(rank, self.node_order)
        stem = "all" if self.fold or window is None else window
        if self.artifact == "overview":
            rel = f"{node_path(decimal)}/{stem}.zarr"
        elif self.artifact == "column":
            node = leaf_path(decimal, None, self.manifest.path_grouping).rpartition("/")[0]
            rel = f"{node}/{stem}.pyramid.zarr"
        else:
            rel = leaf_path(decimal, window, self.manifest.path_grouping)
        return f"{self.root}/{rel}" if self.root else rel

    def refusal(self, leaf: Leaf, index: int | None,
                window: str | None) -> tuple[str, str] | None:
        """``(kind, why)`` the stamped object ``leaf`` of node ``index`` (in ``window``;
        ``None`` or negative: no node) may not serve this level, ``None`` if it may: a
        :data:`~moczarr_store.diagnostics.KINDS` key, ``misplaced`` (:attr:`Leaf.misplaced`)
        or ``provenance``, and the reason. No I/O."""
        if leaf.misplaced is not None:
            return "misplaced", leaf.misplaced
        if self.artifact == "source" or index is None or index < 0:
            return None
        why = self._provenance_refusal(leaf.provenance, index, window)
        return None if why is None else ("provenance", why)

    def _provenance_refusal(self, provenance: Provenance | None, index: int,
                            window: str | None) -> str | None:
        """Why the object's role and provenance block do not fit this pyramid level, as
        moczarr drops or refuses it: on an overview level a role other than
        ``overview`` (no role reads as a source object, and is kept), or a ``zagg_overview``
        block missing, of an unknown spec, or storing another cell order, and (beyond
        moczarr, which would serve its cells at this node's) one whose block names another
        node or window; on a column level a role other than ``column``, or a
        ``zagg_column`` block missing, of an unknown spec, naming another node, order or
        window, or whose ``groups`` do not carry this cell order (moczarr skips such an
        object for the order). ``None``: they do. ``provenance``: :attr:`Leaf.provenance`."""
        role, overview, column = provenance or (None, None, None)
        if self.artifact == "overview":
            if role is None:
                return None
            if role != "overview":
                return f"declares role {short(role)}, not 'overview'"
            if overview is None:
                return "has no 'zagg_overview' provenance block"
            spec, cell_order, node, label = overview
            if spec not in OVERVIEW_SPECS:
                return f"declares overview spec {short(spec)}, not one of {OVERVIEW_SPECS}"
            if not is_int(cell_order) or cell_order != self.cell_order:
                return f"stores cells at order {short(cell_order)}, not {self.cell_order}"
            place = {"node": rank_to_decimal(int(self.node_ranks[index]), self.node_order),
                     "window": window or self.window or "all"}
            for what, said in (("node", node), ("window", label)):
                if said is not None and said != place[what]:
                    return (f"was written for another {what}: it declares {short(said)}, "
                            f"not {place[what]!r}")
            return None
        if role != "column":
            return f"declares role {short(role)}, not 'column'"
        if column is None:
            return "has no 'zagg_column' provenance block"
        spec, node, order, label, groups = column
        want = (rank_to_decimal(int(self.node_ranks[index]), self.node_order), self.node_order,
                window or self.window or "all")
        if spec != COLUMN_SPEC:
            return f"declares column spec {short(spec)}, not {COLUMN_SPEC!r}"
        if (node, order, label) != want or not is_int(order):
            return f"declares node/order/window {short((node, order, label), 160)}, not {want!r}"
        if not isinstance(groups, frozenset) or str(self.cell_order) not in groups:
            carried = sorted(groups) if isinstance(groups, frozenset) else groups
            return (f"declares column groups {short(carried)}, which do not carry cell "
                    f"order {self.cell_order}")
        return None

    def summary(self) -> dict[str, Any]:
        """``attrs["morton_hive"]`` as moczarr publishes it for this order."""
        return {**self.manifest.summary(), "cell_order": self.cell_order,
                "shard_order": self.node_order}

    def window_bounds(self) -> list[tuple[datetime, datetime] | None]:
        return [bounds(self.manifest, label) for label in self.windows]

    def object_pairs(self) -> Iterator[tuple[int, str | None, str]]:
        """``(node index, window, object path)`` of every object the view may read, in
        order."""
        for index in range(self.n_nodes):
            for window in self.windows or (None,):
                yield index, window, self.object_path(index, window)


def _declared_order(level: Level) -> tuple[bool, int]:
    return level.fold, -level.cell_order


@dataclass
class Product:
    """A product's levels: ``levels`` are read (the source first), ``pending`` are declared
    overviews whose schemas are read when first needed."""

    name: str
    root: str
    manifest: Manifest
    levels: list[Level]
    pending: list[Level] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Levels in declared order: the source's, then the coarser orders finest first
        (stored and computed alike), then the all-time folds."""
        self.levels.sort(key=_declared_order)
        declared = sorted((*self.levels, *self.pending), key=_declared_order)
        self._declared = [lv.path for lv in declared]

    def settle(self, level: Level, kept: bool) -> None:
        """A pending level was read: keep it (in declared order) or drop it."""
        self.pending.remove(level)
        if kept:
            rank = self._declared.index
            self.levels = sorted([*self.levels, level], key=lambda lv: rank(lv.path))
