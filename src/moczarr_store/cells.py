"""Label indexes over the ``cells`` dimension that never materialise its coordinates.

A level's rows are a few contiguous runs of HEALPix NESTED ids (the covered nodes'
subtrees, or the whole sphere); ``cell_ranges`` gives them as ``[start, stop)`` at
order 29 (xdggs's ``"ranges"`` layout) from the open store, without a request, and
``decode_cells`` (or ``open_cells``) turns them into

- an xdggs ``HealpixIndex`` of kind ``"moc"`` on ``cell_ids`` (``ds.sel(cell_ids=...)``,
  ``ds.dggs.sel_latlon``, ``cell_centers``, ``zoom_to``), and
- a ``MortonIndex`` on ``morton`` (``ds.sel(morton=...)`` by packed word or by
  decimal id),

both O(runs) in memory and time; the coordinate values are computed per dask chunk, on
the fields' chunk boundaries, only when read.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.core.indexes import IndexSelResult

from .errors import HiveFormatError
from .hive.ids import DECIMAL_RE, decimal_to_word, shift

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
        """Global ranks of rows ``[start, stop)``. Cost: O(stop - start)."""
        rows = np.arange(start, stop, dtype=np.int64)
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


DEFAULT_ROWS = 65_536  # rows per chunk of a coordinate whose dataset has no dask chunks


def _chunked(size: int, chunks: tuple[int, ...] | None, values) -> Any:
    """A dask array of ``size`` rows, ``values(start, stop)`` per chunk (``DEFAULT_ROWS``
    rows each if ``chunks`` is None): nothing is computed until read."""
    import dask.array as da

    def block(block_info=None) -> np.ndarray:
        start, stop = block_info[None]["array-location"][0]
        return values(start, stop)

    if chunks is None or sum(chunks) != size:
        chunks = (DEFAULT_ROWS,) * (size // DEFAULT_ROWS) + ((size % DEFAULT_ROWS,) if size %
                                                              DEFAULT_ROWS else ())
    name = f"moczarr-cells-{uuid.uuid4().hex}"  # dask would hash the index in the closure
    return da.map_blocks(block, chunks=(chunks,), dtype=_U64, meta=np.array((), dtype=_U64),
                         name=name)


def _sub_chunks(chunks: tuple[int, ...] | None, start: int, stop: int) -> tuple[int, ...] | None:
    """The chunk sizes of rows ``[start, stop)`` of an array chunked by ``chunks``."""
    if chunks is None:
        return None
    edges = np.concatenate([[0], np.cumsum(chunks)])
    cut = np.unique(np.clip(edges, start, stop)) - start
    return tuple(int(n) for n in np.diff(cut) if n > 0)


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
    Memory: 16 bytes per run; the coordinate is computed per chunk when read."""

    def __init__(self, runs: Runs, dim: Hashable, name: Hashable,
                 chunks: tuple[int, ...] | None = None) -> None:
        self.runs, self.dim, self.name, self.chunks = runs, dim, name, chunks

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
        chunks = var.chunks[0] if var.chunks else None
        return cls(Runs(order, ranks[starts], offsets), var.dims[0], name, chunks)

    def create_variables(self, variables: Mapping[Any, xr.Variable] | None = None) -> dict:
        runs, order = self.runs, self.runs.order
        old = (variables or {}).get(self.name)

        def words(start: int, stop: int) -> np.ndarray:
            return (runs.ranks(start, stop) << _U64(shift(order))) | _U64(order)

        data = _chunked(runs.size, self.chunks, words)
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
        return MortonIndex(self.runs.slice(start, stop), self.dim, self.name,
                           _sub_chunks(self.chunks, start, stop))

    def equals(self, other: object, **_: Any) -> bool:
        return (isinstance(other, MortonIndex) and self.runs.order == other.runs.order
                and np.array_equal(self.runs.starts, other.runs.starts)
                and np.array_equal(self.runs.offsets, other.runs.offsets))

    def _repr_inline_(self, max_width: int) -> str:
        return f"MortonIndex(order={self.runs.order}, runs={self.runs.starts.size})"


def _healpix_index(ranges: np.ndarray, var: xr.Variable, chunks: tuple[int, ...] | None):
    """xdggs's ``HealpixIndex`` of kind ``"moc"`` built from the ranges (no cell array)."""
    import xdggs  # type: ignore[import-untyped]
    from healpix_geo.nested import RangeMOCIndex  # type: ignore[import-untyped]

    try:  # xdggs >= 0.7
        from xdggs.healpix.moc_index import HealpixMocIndex  # type: ignore[import-untyped]
    except ImportError:  # xdggs 0.6
        from xdggs.healpix import HealpixMocIndex  # type: ignore[import-untyped]

    (dim,) = var.dims
    grid = xdggs.HealpixInfo.from_dict(dict(var.attrs))
    ellipsoid = grid.ellipsoid if grid.ellipsoid is not None else "sphere"
    index = RangeMOCIndex.from_ranges(grid.level, np.asarray(ranges, dtype=_U64), ellipsoid)

    class LazyMocIndex(HealpixMocIndex):
        """xdggs's MOC index whose coordinate is computed per dask chunk when read."""

        def create_variables(self, variables=None):
            old = (variables or {}).get(self._name)
            moc = self._index

            def ids(start: int, stop: int) -> np.ndarray:
                return moc.isel(slice(start, stop)).cell_ids()

            data = _chunked(moc.size, self._chunksizes.get(self._dim), ids)
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
    coordinate: they stay lazy, chunked as ``cell_ids`` was."""
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
        coords = xr.Coordinates.from_xindex(MortonIndex(runs, dim, "morton", chunks))
        out = out.drop_vars("morton").assign_coords(coords)
        out["morton"].attrs.update(old.attrs)
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
