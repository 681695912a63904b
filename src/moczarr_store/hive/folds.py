"""How a product's fields fold to coarser orders: the hive's own declarations, and the folds.

A zagg manifest declares, per field, how its cells combine into their parent cell
(``pyramid.overview.fields``, the D24 composability classes). The store computes a field
at an order the hive does not store only where that declaration is ``exact``: ``sum``,
``min`` or ``max`` over the cells beneath, skipping missing ones (NaN or the declared fill
value; ``nan_policy: skip``), an all-missing group reading as the fill value, in the
declared dtype. That is what zagg's overview sweep stores, so a computed order equals a
stored one bit for bit (integer sums, minima, maxima; a float sum may differ from a
writer's cascade of partial sums in its last bits).

Everything else is absent at computed orders, never guessed: class ``none``,
``approximate`` (t-digests: their merge is order-dependent) and ``packed``; an unknown
class, method or nan policy, or a dtype or fill value that is not a number of a numeric
type (with a warning naming the field). Where the manifest declares no fields (no
pyramid block, or zagg's declared-off ``{"orders": []}``), the folds are those zagg would
declare from the product's own ``aggregation.yaml`` (``aggregation.py``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HiveWarning
from .arraymeta import fill_number
from .paths import short

METHODS = {"sum": np.add, "min": np.minimum, "max": np.maximum}
PASS = "pass"
"""The method of a field with no exact fold at the order a region of a D24 product's leaves
sit at: that region's cells as stored, nothing from finer leaves (no fold reaches them)."""
NAN_POLICIES = ("skip",)
CLASSES = ("exact", "approximate", "packed", "none")


@dataclass(frozen=True)
class Fold:
    """One field's declared exact fold: ``method`` over the cells beneath, missing cells
    (NaN, or ``fill``) skipped, the result in ``dtype`` (``fill_value``: as declared, the
    JSON the computed array's metadata carries)."""

    name: str
    method: str
    dtype: np.dtype
    fill_value: object
    nan_policy: str = "skip"
    declared_in: str = "morton_hive.json"  # or the writer's aggregation.yaml

    @property
    def fill(self) -> np.ndarray:
        """The fill value, as a 0-d array of ``dtype``."""
        return np.asarray(fill_number(self.fill_value, self.dtype), dtype=self.dtype)

    @property
    def identity(self) -> np.generic:
        """The value a missing cell contributes (changes nothing under ``method``)."""
        if self.method == PASS:
            return self.dtype.type(self.fill)
        if self.method == "sum":
            return self.dtype.type(0)
        if self.dtype.kind == "f":
            return self.dtype.type(np.inf if self.method == "min" else -np.inf)
        info = np.iinfo(self.dtype) if self.dtype.kind in "iu" else None
        if info is None:  # bool: min is and, max is or
            return self.dtype.type(self.method == "min")
        return self.dtype.type(info.max if self.method == "min" else info.min)

    @property
    def any_order(self) -> bool:
        """Whether the fold gives the same bits whatever order its cells are met in:
        ``min``, ``max``, and a sum of integers (or booleans), not a float sum."""
        return self.method in ("min", "max") or (self.method == "sum"
                                                  and self.dtype.kind in "iub")

    def declaration(self) -> dict[str, Any]:
        """The field's fold as the manifest declares it (the computed arrays' metadata);
        :data:`PASS`: no class (the hive declares no exact fold)."""
        if self.method == PASS:
            return {"method": PASS, "dtype": self.dtype.name, "fill_value": self.fill_value}
        return {"class": "exact", "method": self.method, "nan_policy": self.nan_policy,
                "dtype": self.dtype.name, "fill_value": self.fill_value}


def declared_folds(raw: dict[str, Any], where: str) -> tuple[dict[str, Fold], bool] | None:
    """``({field: Fold}, all_time)``: the manifest's exact folds and whether it declares
    the all-time (cross-window) fold; ``None`` when it declares no fields (the
    ``pyramid``, ``overview`` or ``fields`` key is absent). A block that is there but not
    a mapping declares nothing, with a warning: a damaged manifest is never read as one
    that leaves its folds to the writer's config. A malformed entry is left out with a
    warning naming ``where`` and the field; a known class without an exact fold is left
    out silently. No I/O."""
    node: dict[str, Any] = raw
    for key in ("pyramid", "overview", "fields"):
        if key not in node:
            return None
        parent, value = node, node[key]
        if not isinstance(value, dict):
            _skip(f"{where}: pyramid", f"{key!r} is {short(value)}, not a mapping")
            return {}, False
        node = value
    fields, all_time = node, parent.get("all_time") is True
    folds = {}
    for name, entry in fields.items():
        fold = _fold(name, entry, f"{where}: pyramid field {name!r}")
        if fold is not None:
            folds[name] = fold
    return folds, all_time


def _fold(name: str, entry: object, where: str) -> Fold | None:
    cls = entry.get("class") if isinstance(entry, dict) else None
    if cls not in CLASSES:
        _skip(where, f"class {short(cls)} is not one of {CLASSES}")
        return None
    if cls != "exact":
        return None
    assert isinstance(entry, dict)
    method, policy = entry.get("method"), entry.get("nan_policy", "skip")
    if method not in METHODS:
        _skip(where, f"method {short(method)} is not one of {tuple(METHODS)}")
        return None
    if policy not in NAN_POLICIES:
        _skip(where, f"nan_policy {short(policy)} is not one of {NAN_POLICIES}")
        return None
    try:
        dtype = np.dtype(entry.get("dtype"))
        if dtype.kind not in "biuf":
            raise TypeError(dtype)
        fill_value = entry.get("fill_value")
        np.asarray(fill_number(fill_value, dtype), dtype=dtype)
        if isinstance(fill_value, bool) != (dtype.kind == "b") or fill_value is None:
            raise ValueError(fill_value)
    except (TypeError, ValueError, OverflowError):
        _skip(where, f"dtype {short(entry.get('dtype'))} / fill_value "
                     f"{short(entry.get('fill_value'))} is not a numeric type and its value")
        return None
    return Fold(name, method, dtype, fill_value, policy)


def _skip(where: str, why: str) -> None:
    warnings.warn(f"{where}: {why}; not computed at orders the hive does not store",
                  HiveWarning, stacklevel=4)


def missing(values: np.ndarray, fold: Fold) -> np.ndarray:
    """Which cells are missing: NaN (floats) or the fold's fill value."""
    fill = np.asarray(fill_number(fold.fill_value, values.dtype), dtype=values.dtype)[()]
    if values.dtype.kind == "f":
        return np.isnan(values) | (values == fill) if not np.isnan(fill) else np.isnan(values)
    return values == fill


class Accumulator:
    """The fold of cells into ``size`` target cells, built from parts in any order: each
    part's cells fold ``factor`` to one into consecutive targets from ``at``, or, with
    ``factor`` the part's size, into one target that other parts fold into too. Memory:
    ``size`` values and flags. Cost: one pass over each part in numpy."""

    def __init__(self, fold: Fold, size: int) -> None:
        self.fold = fold
        self.ufunc = METHODS.get(fold.method)  # None: PASS
        self.values = np.full(size, fold.identity, dtype=fold.dtype)
        self.seen = np.zeros(size, dtype=bool)

    def add(self, part: np.ndarray, factor: int, at: int) -> None:
        """Fold ``part`` (source values, cast safely to the fold's dtype) ``factor`` to one
        into the targets from ``at``."""
        fold = self.fold
        part = np.asarray(part)
        gone = missing(part, fold)
        part = part.astype(fold.dtype, casting="safe")
        if self.ufunc is None:  # PASS: one cell per target, as stored; nothing else meets it
            assert factor == 1
            self.values[at:at + part.size] = np.where(gone, fold.identity, part)
            self.seen[at:at + part.size] |= ~gone
            return
        groups = np.where(gone, fold.identity, part).reshape(-1, factor)
        # a float sum: numpy's own summation, whose order is part of its bits
        folded = _across(self.ufunc, groups) if fold.any_order else self.ufunc.reduce(
            groups, axis=1)
        present = ~_across(np.logical_and, gone.reshape(-1, factor))
        stop = at + folded.size
        seen = self.seen[at:stop]
        # a target's first value is taken as it is (a cell passed through keeps its bits:
        # 0 + -0.0 would not)
        self.values[at:stop] = np.where(seen, self.ufunc(self.values[at:stop], folded), folded)
        seen |= present

    def add_rows(self, rows: np.ndarray, factor: int, starts: np.ndarray) -> None:
        """:meth:`add` of each row of ``rows`` (2-d) at its entry of ``starts``, in one
        pass over them all where the fold is the same in any order
        (:attr:`Fold.any_order`), else row by row."""
        fold = self.fold
        if self.ufunc is None or not fold.any_order:
            for row, at in zip(rows, starts.tolist(), strict=True):
                self.add(row, factor, at)
            return
        n, size = rows.shape
        gone = missing(rows, fold).reshape(-1, factor)
        values = np.where(gone, fold.identity, rows.astype(fold.dtype, casting="safe",
                                                           copy=False).reshape(-1, factor))
        folded = _across(self.ufunc, values)
        present = ~_across(np.logical_and, gone)
        targets = (np.asarray(starts, np.int64)[:, None]
                   + np.arange(size // factor)).reshape(-1)[present]
        # the identity changes nothing under these folds: no first value to take apart
        self.ufunc.at(self.values, targets, folded[present])
        self.seen[targets] = True

    def result(self) -> np.ndarray:
        """The folded values; a target no present cell reached holds the fill value."""
        return np.where(self.seen, self.values, self.fold.fill).astype(self.fold.dtype)


def _across(ufunc: np.ufunc, groups: np.ndarray) -> np.ndarray:
    """``ufunc`` over each row of 2-d ``groups`` (a fold the same in any order): a few
    rows wide, column by column (numpy's reduce over a short last axis is several times
    slower); wider, numpy's reduce."""
    if groups.shape[1] > 16:
        return ufunc.reduce(groups, axis=1)
    out = groups[:, 0].copy()
    for column in range(1, groups.shape[1]):
        ufunc(out, groups[:, column], out=out)
    return out
