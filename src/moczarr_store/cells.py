"""Label indexes over the ``cells`` dimension that never materialise its coordinates.

A level's rows are a few contiguous runs of HEALPix NESTED ids (the covered nodes'
subtrees, or the whole sphere); ``cell_ranges`` gives them as ``[start, stop)`` at
order 29 (xdggs's ``"ranges"`` layout) from the open store, without a request, and
``decode_cells`` (or ``open_cells``) turns them into

- an xdggs ``HealpixIndex`` of kind ``"moc"`` on ``cell_ids`` (``ds.sel(cell_ids=...)``,
  ``ds.dggs.sel_latlon``, ``cell_centers``, ``zoom_to``), and
- a ``MortonIndex`` on ``morton`` (``ds.sel(morton=...)`` by packed word or by
  decimal id),

both O(runs) in memory and time. Their coordinates, and the CF ``healpix_index``, are
``ComputedIds``, and the CF centres ``lon`` / ``lat`` (``centres=True``)
``ComputedCentres``: computed from the runs whenever their values are asked for, never
held, so ``.load()`` and ``.compute()`` read the fields alone.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.core.indexes import IndexSelResult

from .errors import HiveFormatError
from .hive.ids import DECIMAL_RE, decimal_to_word, shift
from .view.arrays import cell_centres

if TYPE_CHECKING:
    from .store import MocHiveStore

_U64 = np.uint64


class Runs:
    """Runs of consecutive cells: ``starts`` (first global rank ``K`` of each run, at the
    cell order), ``offsets`` (the row of each run's first cell, then the total)."""

    def __init__(self, order: int, starts: np.ndarray, offsets: np.ndarray) -> None:
        self.order, self.starts, self.offsets = order, starts, offsets

    @classmethod
    def from_ranges(cls, ranges: np.ndarray, order: int) -> Runs:
        """From ``[start, stop)`` NESTED ranges at order 29, ascending and disjoint."""
        ranges = np.asarray(ranges, dtype=_U64).reshape(-1, 2)
        unit = _U64(2 * (29 - order))
        first, stop = ranges[:, 0] >> unit, ranges[:, 1] >> unit
        if np.any((ranges[:, 0] | ranges[:, 1]) & ((_U64(1) << unit) - _U64(1))) or np.any(
            stop <= first
        ) or np.any(first[1:] < stop[:-1]):
            raise HiveFormatError(f"cell_ranges are not ascending runs of order-{order} cells")
        offsets = np.concatenate([[0], np.cumsum((stop - first).astype(np.int64))])
        return cls(order, first + _U64(4**order), offsets)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def ranks(self, start: int, stop: int) -> np.ndarray:
        """Global ranks of rows ``[start, stop)`` (a new array). Cost: O(stop - start +
        runs), two passes over the rows."""
        if stop <= start:
            return np.zeros(0, dtype=_U64)
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop, side="left"))
        bounds = np.clip(self.offsets[first : last + 1], start, stop)
        # rank = row + (start of its run - first row of its run), modulo 2**64
        shifts = self.starts[first:last] - self.offsets[first:last].astype(_U64)
        out = np.arange(start, stop, dtype=_U64)
        out += np.repeat(shifts, np.diff(bounds))
        return out

    def ranks_at(self, rows: np.ndarray) -> np.ndarray:
        """Global ranks of ``rows`` (each in ``[0, size)``). Cost: O(n log runs)."""
        rows = np.asarray(rows, dtype=np.int64)
        run = np.searchsorted(self.offsets, rows, side="right") - 1
        return self.starts[run] + (rows - self.offsets[run]).astype(_U64)

    def positions(self, ranks: np.ndarray) -> np.ndarray:
        """Rows of global ranks (``-1`` where a rank is not in the runs). O(n log runs)."""
        ranks = np.asarray(ranks, dtype=_U64)
        run = np.searchsorted(self.starts, ranks, side="right") - 1
        safe = np.maximum(run, 0)
        inside = (run >= 0) & (ranks - self.starts[safe] < (
            self.offsets[safe + 1] - self.offsets[safe]).astype(_U64))
        rows = self.offsets[safe] + (ranks - self.starts[safe]).astype(np.int64)
        return np.where(inside, rows, -1)

    def slice(self, start: int, stop: int) -> Runs:
        """The runs of rows ``[start, stop)``. Cost: O(runs)."""
        if stop <= start:
            return Runs(self.order, self.starts[:0], np.zeros(1, dtype=np.int64))
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop, side="left"))
        offsets = np.clip(self.offsets[first : last + 1], start, stop) - start
        starts = self.starts[first:last] + np.maximum(
            0, start - self.offsets[first:last]).astype(_U64)
        return Runs(self.order, starts, offsets)


class ComputedIds(np.lib.mixins.NDArrayOperatorsMixin):
    """A level's ``morton`` words (``nested=False``) or NESTED cell ids (``nested=True``),
    computed from its ``Runs`` whenever values are asked for (``np.asarray``, an
    index) and never held: xarray keeps it as it is through ``.load()`` and
    ``.compute()``, which then read the fields alone. Operators and any other numpy
    function are given its values. Memory: the runs (16 bytes each); cost: one pass per
    row asked for."""

    ndim = 1
    dtype: np.dtype[Any] = np.dtype(_U64)

    def __init__(self, runs: Runs, nested: bool) -> None:
        self.runs, self.nested = runs, nested
        self.shape = (runs.size,)

    @property
    def size(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        """What its values take once asked for."""
        return 8 * self.size

    def __len__(self) -> int:
        return self.size

    def _from_ranks(self, ranks: np.ndarray) -> np.ndarray:
        order = self.runs.order
        if self.nested:  # a NESTED id is its rank less the order's leading one
            ranks -= _U64(4**order)
        else:
            ranks <<= _U64(shift(order))
            ranks |= _U64(order)
        return ranks

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = self._from_ranks(self.runs.ranks(0, self.size))
        return values if dtype is None else values.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if isinstance(key, slice) and key.indices(self.size)[2] == 1:
            start, stop, _ = key.indices(self.size)
            return self._from_ranks(self.runs.ranks(start, max(start, stop)))
        rows = np.asarray(key) if not isinstance(key, slice) else None
        if rows is None or rows.dtype.kind not in "iu" or rows.ndim > 1:
            return np.asarray(self)[key]  # a stepped slice, a mask, anything else
        if rows.size and (rows.min() < -self.size or rows.max() >= self.size):
            raise IndexError(f"row {int(rows.max())} is out of {self.size} rows")
        picked = self._from_ranks(self.runs.ranks_at(np.where(rows < 0, rows + self.size, rows)))
        return picked[()] if rows.ndim == 0 else picked

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return func(*_values(args), **_values(kwargs))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return getattr(ufunc, method)(*_values(inputs), **_values(kwargs))

    def __dask_tokenize__(self) -> object:
        runs = self.runs
        return ("ComputedIds", self.nested, runs.order, runs.starts.tobytes(),
                runs.offsets.tobytes())

    def _repr_inline_(self, max_width: int) -> str:
        what = "cell ids" if self.nested else "morton words"
        return f"{what} computed from {self.runs.starts.size} runs"[:max_width]

    def __repr__(self) -> str:
        return f"ComputedIds({self._repr_inline_(80)}, size={self.size})"


class ComputedCentres(ComputedIds):
    """A level's cell centres, ``lon`` or ``lat`` (``axis``) in degrees, computed from its
    ``Runs`` whenever values are asked for and never held, as ``ComputedIds``;
    ``latitude``: mortie's convention (``view.arrays.cell_centres``). Cost:
    ``cell_centres`` per row asked for (both halves of a pair asked: twice)."""

    dtype: np.dtype[Any] = np.dtype(np.float64)

    def __init__(self, runs: Runs, axis: str, latitude: str) -> None:
        super().__init__(runs, nested=True)
        self.axis, self.latitude = axis, latitude

    def _from_ranks(self, ranks: np.ndarray) -> np.ndarray:
        ids = super()._from_ranks(ranks)
        return cell_centres(self.runs.order, ids, self.latitude)[self.axis == "lat"]

    def __dask_tokenize__(self) -> object:
        return ("ComputedCentres", self.axis, self.latitude, super().__dask_tokenize__())

    def _repr_inline_(self, max_width: int) -> str:
        what = "longitudes" if self.axis == "lon" else "latitudes"
        return f"cell {what} computed from {self.runs.starts.size} runs"[:max_width]

    def __repr__(self) -> str:
        return f"ComputedCentres({self._repr_inline_(80)}, size={self.size})"


def _values(value: Any) -> Any:
    """``value`` with every ``ComputedIds`` in it (in a tuple, list or dict) made its
    values: what numpy is given in its place."""
    if isinstance(value, ComputedIds):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_values(v) for v in value)
    if isinstance(value, dict):
        return {k: _values(v) for k, v in value.items()}
    return value


def _words_from_labels(labels: Any, order: int) -> tuple[np.ndarray, bool]:
    """Packed words from words or decimal ids (scalar or array); whether it was scalar."""
    if isinstance(labels, (list, tuple)):  # element by element: numpy would make a mix text
        labels = np.array([_word(v) for v in labels], dtype=_U64)
    array = np.asarray(labels)
    scalar = array.ndim == 0
    flat = array.reshape(-1)
    if flat.dtype.kind in "US" or flat.dtype == object:
        words = np.array([_word(v) for v in flat], dtype=_U64)
    elif flat.dtype.kind in "iu":
        if flat.dtype.kind == "i" and np.any(flat < 0):
            raise KeyError("morton words are not negative")
        words = flat.astype(_U64)
    else:
        raise KeyError(f"morton labels must be packed words or decimal ids, not {flat.dtype}")
    return words, scalar


def _cell_ids_from_labels(labels: Any) -> tuple[np.ndarray, bool]:
    """NESTED ids from integer labels (scalar or array); whether it was scalar."""
    array = np.asarray(labels)
    if array.dtype.kind not in "iu" or (array.dtype.kind == "i" and np.any(array < 0)):
        raise KeyError(f"cell ids are non-negative integers, not {short_repr(labels)}")
    return array.reshape(-1).astype(_U64), array.ndim == 0


def short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _word(value: object) -> int:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        if DECIMAL_RE.match(value) is None:
            raise KeyError(f"{value!r} is not a morton decimal id")
        return decimal_to_word(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise KeyError(f"{value!r} is not a morton word or decimal id")


class MortonIndex(xr.Index):
    """An index on ``morton`` held as runs: ``sel`` by packed words or decimal ids (of
    the level's order) is a binary search per label; a slice ``isel`` keeps the index.
    Memory: 16 bytes per run; the coordinate is ``ComputedIds``."""

    def __init__(self, runs: Runs, dim: Hashable, name: Hashable) -> None:
        self.runs, self.dim, self.name = runs, dim, name

    @classmethod
    def from_variables(cls, variables: Mapping[Any, xr.Variable], *, options: Mapping[str, Any]
                       ) -> MortonIndex:
        """``ds.set_xindex("morton", MortonIndex)``: from the words themselves (reads the
        coordinate once, O(cells); ``decode_cells`` needs only the runs)."""
        (name, var), = variables.items()
        words = np.asarray(var.values, dtype=_U64).reshape(-1)
        orders = np.unique(words & _U64(0x3F))
        if var.ndim != 1 or orders.size > 1:
            raise HiveFormatError(f"{name}: a MortonIndex needs 1-d words of one order")
        order = int(orders[0]) if orders.size else 0
        ranks = words >> _U64(shift(order))
        if np.any(np.diff(ranks.astype(np.int64)) <= 0):
            raise HiveFormatError(f"{name}: a MortonIndex needs ascending words")
        breaks = np.flatnonzero(np.diff(ranks.astype(np.int64)) != 1) + 1
        starts = np.r_[0, breaks] if ranks.size else np.zeros(0, dtype=np.int64)
        offsets = np.r_[starts, ranks.size].astype(np.int64)
        return cls(Runs(order, ranks[starts], offsets), var.dims[0], name)

    def create_variables(
        self, variables: Mapping[Any, xr.Variable] | None = None
    ) -> dict[Any, xr.Variable]:
        old = (variables or {}).get(self.name)
        data = ComputedIds(self.runs, nested=False)
        attrs = None if old is None else old.attrs
        encoding = None if old is None else old.encoding
        return {self.name: xr.Variable(self.dim, data, attrs=attrs, encoding=encoding)}

    def sel(self, labels: dict[Any, Any], method: Any = None, tolerance: Any = None
            ) -> IndexSelResult:
        label = labels[self.name]
        if method is not None:
            raise ValueError("a MortonIndex selects exact labels only (method=None)")
        if isinstance(label, slice):
            raise KeyError("select morton words by value or list, not by slice")
        words, scalar = _words_from_labels(label, self.runs.order)
        order = self.runs.order
        wrong = (words & _U64(0x3F)) != _U64(order)
        rows = self.runs.positions(words >> _U64(shift(order)))
        missing = wrong | (rows < 0)
        if missing.any():
            first = words[missing][0]
            raise KeyError(f"{int(missing.sum())} of {words.size} morton labels are not "
                           f"cells of this order-{order} domain (first: {int(first)})")
        return IndexSelResult({self.dim: int(rows[0]) if scalar else rows})

    def isel(self, indexers: Mapping[Any, Any]) -> MortonIndex | None:
        indexer = indexers[self.dim]
        if not isinstance(indexer, slice):
            return None  # an int or a pick: the coordinate's chunk values are kept
        start, stop, step = indexer.indices(self.runs.size)
        if step != 1:
            return None
        return MortonIndex(self.runs.slice(start, stop), self.dim, self.name)

    def equals(self, other: object, **_: Any) -> bool:
        return (isinstance(other, MortonIndex) and self.runs.order == other.runs.order
                and np.array_equal(self.runs.starts, other.runs.starts)
                and np.array_equal(self.runs.offsets, other.runs.offsets))

    def _repr_inline_(self, max_width: int) -> str:
        return f"MortonIndex(order={self.runs.order}, runs={self.runs.starts.size})"


def _healpix_index(ranges: np.ndarray, var: xr.Variable, chunks: tuple[int, ...] | None):
    """xdggs's ``HealpixIndex`` of kind ``"moc"`` built from the ranges (no cell array)."""
    import xdggs
    from healpix_geo.nested import RangeMOCIndex

    try:  # xdggs >= 0.7
        from xdggs.healpix.moc_index import HealpixMocIndex
    except ImportError:  # xdggs 0.6
        from xdggs.healpix import HealpixMocIndex

    (dim,) = var.dims
    grid = xdggs.HealpixInfo.from_dict(dict(var.attrs))
    ellipsoid = grid.ellipsoid if grid.ellipsoid is not None else "sphere"
    index = RangeMOCIndex.from_ranges(grid.level, np.asarray(ranges, dtype=_U64), ellipsoid)

    class LazyMocIndex(HealpixMocIndex):
        """xdggs's MOC index whose coordinate is ``ComputedIds``."""

        def create_variables(self, variables=None):
            old = (variables or {}).get(self._name)
            runs = Runs.from_ranges(self._index.ranges(), self._grid_info.level)
            data = ComputedIds(runs, nested=True)
            attrs = None if old is None else old.attrs
            return {self._name: xr.Variable(self._dim, data, attrs=attrs)}

        def isel(self, indexers):
            indexer = indexers[self._dim]
            if np.ndim(indexer) == 0:  # one row: no index left (xdggs refuses ints)
                return None
            if not isinstance(indexer, slice) and np.any(np.diff(np.asarray(indexer)) <= 0):
                return None  # a pick out of order or repeated: no MOC holds it, values stay
            return super().isel(indexers)

        def sel(self, labels, method=None):
            label = labels[self._name]
            if isinstance(label, slice):
                return super().sel(labels, method)
            if method is not None:
                raise ValueError("cell ids are selected exactly (method=None)")
            ids, scalar = _cell_ids_from_labels(label)
            runs = Runs.from_ranges(self._index.ranges(), self._grid_info.level)
            rows = runs.positions(ids + _U64(4**self._grid_info.level))
            if (rows < 0).any():
                first = int(ids[rows < 0][0])
                raise KeyError(f"{int((rows < 0).sum())} of {ids.size} cell ids are not in "
                               f"this domain (first: {first})")
            return IndexSelResult({self._dim: int(rows[0]) if scalar else rows})

    moc = LazyMocIndex(index, dim=dim, name="cell_ids", grid_info=grid,
                       chunksizes={dim: chunks})
    return xdggs.HealpixIndex(moc, dim=dim, name="cell_ids", grid_info=grid, index_kind="moc")


def cell_ranges(store: MocHiveStore, group: str) -> np.ndarray:
    """Level ``group``'s rows as ``[start, stop)`` NESTED ranges at order 29, an
    ``(n_runs, 2)`` uint64 array (xdggs's ``"ranges"`` layout). Cost: opening the group
    through zarr if not yet open, then O(nodes) with no request."""
    import zarr

    from .store import MocHiveStore

    if not isinstance(store, MocHiveStore):
        raise TypeError(f"cell_ranges reads a MocHiveStore, got {type(store).__name__}")
    if not isinstance(group, str):
        raise TypeError(f"group is a str (a level's path), got {type(group).__name__}")
    group = group.strip("/")
    zarr.open_group(store, path=group, mode="r")  # reads the hive and the level if needed
    ranges = store.session.view.cell_ranges(group)
    if ranges is None:
        raise HiveFormatError(f"group={group!r} is not a cell-order group of the hive")
    return ranges


def decode_cells(ds: xr.Dataset, ranges: np.ndarray,
                 *, indexes: Iterable[str] = ("cell_ids", "morton")) -> xr.Dataset:
    """``ds`` (a level group of a ``MocHiveStore``) with O(runs)
    indexes built from ``ranges`` (``cell_ranges``): ``cell_ids`` gets xdggs's
    healpix MOC index (needs ``xdggs``) and ``morton`` a ``MortonIndex``. Reads no
    coordinate: theirs, and the CF ``healpix_index`` (the same ids), become
    ``ComputedIds``, and the CF ``lon`` / ``lat`` where present ``ComputedCentres``,
    which ``.load()`` leaves unread."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"decode_cells takes a Dataset, got {type(ds).__name__}")
    if "cell_ids" not in ds.variables:
        raise HiveFormatError("decode_cells needs a cell-order group: it has no cell_ids")
    ranges = np.asarray(ranges)
    if ranges.dtype.kind not in "iu" or ranges.size % 2 or ranges.ndim not in (1, 2) or (
            ranges.ndim == 2 and ranges.shape[1] != 2):  # floats lose order-29 ids
        raise TypeError("ranges are cell_ranges' (n, 2) integer array, got "
                        f"{ranges.dtype} of shape {ranges.shape}")
    if ranges.dtype.kind == "i" and np.any(ranges < 0):
        raise HiveFormatError("cell_ranges are not negative")
    ranges = ranges.astype(_U64).reshape(-1, 2)
    cell_ids = ds["cell_ids"].variable
    (dim,) = cell_ids.dims
    chunks = cell_ids.chunks[0] if cell_ids.chunks else None
    runs = Runs.from_ranges(ranges, int(cell_ids.attrs["level"]))
    if runs.size != cell_ids.shape[0]:
        raise HiveFormatError(
            f"the ranges hold {runs.size} cells, the dataset {cell_ids.shape[0]}")
    out = ds
    wanted = set(indexes)
    if "cell_ids" in wanted:
        index = _healpix_index(ranges, cell_ids, chunks)
        out = out.drop_vars("cell_ids").assign_coords(xr.Coordinates.from_xindex(index))
        out["cell_ids"].attrs.update(cell_ids.attrs)
    if "morton" in wanted and "morton" in ds.variables:
        old = ds["morton"].variable
        coords = xr.Coordinates.from_xindex(MortonIndex(runs, dim, "morton"))
        out = out.drop_vars("morton").assign_coords(coords)
        out["morton"].attrs.update(old.attrs)
    computed: dict[str, ComputedIds] = {}
    if "healpix_index" in ds.variables:  # CF's name for the cell ids, no index of its own
        computed["healpix_index"] = ComputedIds(runs, nested=True)
    wgs84 = cell_ids.attrs.get("ellipsoid") == "WGS84"  # as the store's centres
    for axis in ("lon", "lat"):
        if axis in ds.coords:  # the CF centres (centres=True): a field is never a coordinate
            computed[axis] = ComputedCentres(runs, axis,
                                             "authalic" if wgs84 else "geodetic-spherical")
    for name, data in computed.items():
        old = ds[name].variable
        out = out.assign_coords(
            {name: xr.Variable(dim, data, attrs=old.attrs, encoding=old.encoding)})
    return out


def open_cells(store: MocHiveStore, group: str, **open_zarr: Any) -> xr.Dataset:
    """``xr.open_zarr(store, group=group, **open_zarr)`` with ``decode_cells``'s
    indexes: label selection on ``cell_ids`` / ``morton`` without their coordinates in
    memory. Cost: the open, then O(nodes) with no request.

    Raises
    ------
    ImportError
        Without the ``xdggs`` extra.

    Examples
    --------
    ``open_cells(MocHiveStore(sample_hive()), "atl06/o4").sel(cell_ids=...)``
    """
    ds = xr.open_zarr(store, group=group, **open_zarr)
    return decode_cells(ds, cell_ranges(store, group))
