"""One level of a hive as cell polygons with their values: a GeoParquet 1.1 file (or a
FlatGeobuf one, through pyogrio, for OGR-family tools without a Parquet driver).

``export_cells(source, out, group)`` reads the level through the store one chunk of cells
at a time (as any Zarr client does), keeps the cells where some field holds a value (not
its fill value), draws each cell's polygon (``polygons.cell_polygons``) and appends the
rows to the file, so memory holds one chunk of every field whatever the level's size.
Columns: ``cell_ids`` (NESTED ids at the level's order), ``window`` (windowed levels),
one column per field, ``geometry`` (WKB, longitude/latitude on WGS84, OGC:CRS84). A
ragged field (``zagg-ragged/1``: a t-digest's centroids, say) is a list column: each
cell's elements as fixed-size lists (a digest's ``[mean, weight]`` pairs), so readers
without Python read them. Other variable-length fields have no column. Needs the
``[cells]`` extra (pyarrow, shapely, healpix-geo).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import MocHiveError, OptionError
from .extras import require
from .polygons import cell_polygons, ellipsoid
from .view.arrays import window_names

GEOPARQUET_VERSION = "1.1.0"
PER_BATCH = 65_536  # rows written at most per row group
FLATGEOBUF_SUFFIX = ".fgb"  # an output named so is FlatGeobuf (through pyogrio), else GeoParquet


@dataclass
class CellsReport:
    """What an export wrote."""

    out: str
    group: str
    order: int
    fields: list[str]
    windows: list[str]
    rows: int = 0
    cells_read: int = 0
    skipped_fields: list[str] = field(default_factory=list)  # variable-length, not ragged
    bbox: list[float] | None = None
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {**self.__dict__, "seconds": round(self.seconds, 3)}


def _pyarrow():
    return require("cells", "pyarrow", "pyarrow.parquet")


def export_cells(source: str, out: str | os.PathLike, group: str,
                 fields: Sequence[str] | None = None, **store_options) -> CellsReport:
    """Write the level ``group`` (``"atl06/o7"``) of the hive at ``source`` to the new
    GeoParquet file ``out`` (FlatGeobuf if it ends in ``.fgb``, without ragged fields): a
    row per cell and window where a field holds a value, the ``fields`` named (default:
    every field). The store option ``window``
    exports one window (its level has no window axis then). Cost: every
    field chunk of the level read once, one polygon per row kept; memory: one chunk of
    cells (and at most :data:`PER_BATCH` rows of polygons) at a time."""
    import zarr

    from .store import MocHiveStore

    pa, pq = _pyarrow()
    started = time.perf_counter()
    out = os.fspath(out)
    if os.path.lexists(out):
        raise FileExistsError(f"{out} exists: the cells export writes a new file")
    store = MocHiveStore(source, **store_options)
    root = zarr.open_group(store, mode="r")
    try:
        node = root[group.strip("/")]
    except (KeyError, ValueError):  # ValueError: zarr refuses a path with '..' in it
        raise OptionError(f"no group {group!r} in the hive (see moczarr-store inspect)") from None
    if not isinstance(node, zarr.Group) or "cell_ids" not in node:
        raise OptionError(f"{group!r} is not a level (a group with cell_ids, e.g. atl06/o7)")
    level: Any = node  # zarr types a group's members as a union of every node kind
    order = int(level["cell_ids"].attrs["level"])
    on = ellipsoid(dict(level.attrs))
    chosen, skipped = _fields(level, fields)
    labels = window_names(level["window"]) if "window" in level else []
    report = CellsReport(out, group.strip("/"), order, chosen, labels, skipped_fields=skipped)
    arrays = {name: level[name] for name in chosen}
    fgb = out.lower().endswith(FLATGEOBUF_SUFFIX)
    if fgb:  # OGR has no list fields: a ragged field has no column there
        report.skipped_fields += [name for name, a in arrays.items() if _ragged(a)]
        arrays = {name: a for name, a in arrays.items() if not _ragged(a)}
        report.fields = list(arrays)
    schema = _schema(pa, arrays, bool(labels))
    bounds = np.array([np.inf, np.inf, -np.inf, -np.inf])

    def tables():
        """The rows kept, a table at a time (at most PER_BATCH rows)."""
        nonlocal bounds
        n = int(level["cell_ids"].shape[0])
        step = int(next(iter(arrays.values())).chunks[-1]) if arrays else n
        for start in range(0, n, step):
            stop = min(n, start + step)
            ids = np.asarray(level["cell_ids"][start:stop])
            report.cells_read += ids.size
            for w in range(len(labels)) if labels else [-1]:
                values = {name: np.asarray(a[start:stop] if w < 0 else a[w, start:stop])
                          for name, a in arrays.items()}
                keep = _holding(values, arrays)
                for first in range(0, int(keep.size), PER_BATCH):
                    rows = keep[first:first + PER_BATCH]
                    shapes = cell_polygons(ids[rows], order, on)
                    bounds = _grown(bounds, shapes)
                    columns = {"cell_ids": pa.array(ids[rows])}
                    if labels:
                        columns["window"] = pa.array([labels[w]] * rows.size, pa.string())
                    for name, vals in values.items():
                        columns[name] = _column(pa, arrays[name], vals[rows], schema, name)
                    columns["geometry"] = pa.array(_wkb(shapes), pa.binary())
                    report.rows += int(rows.size)
                    yield pa.table(columns, schema=schema)

    if fgb:
        _write_flatgeobuf(pa, out, schema, tables())
    else:
        writer = pq.ParquetWriter(out, schema, compression="zstd")
        try:
            for table in tables():
                writer.write_table(table)
            writer.add_key_value_metadata({"geo": json.dumps(_geo(
                bounds.tolist() if report.rows else None))})
        finally:
            writer.close()
    report.bbox = bounds.tolist() if report.rows else None
    report.seconds = time.perf_counter() - started
    return report


def _write_flatgeobuf(pa, out: str, schema, tables) -> None:
    """The tables as one FlatGeobuf layer, streamed to GDAL's OGR through pyogrio (cell
    ids as signed 64-bit integers: OGR has no unsigned ones, and every NESTED id fits)."""
    (pyogrio,) = require("cells", "pyogrio")
    fields = [pa.field("cell_ids", pa.int64(), nullable=False),
              *[schema.field(i) for i in range(1, len(schema))]]
    target = pa.schema(fields)
    batches = (batch for table in tables for batch in table.cast(target).to_batches())
    pyogrio.write_arrow(pa.RecordBatchReader.from_batches(target, batches), out,
                        driver="FlatGeobuf", geometry_name="geometry",
                        geometry_type="Unknown", crs="OGC:CRS84")


def _fields(level, wanted: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The fields to write and the variable-length ones left out: a field is an array
    whose last dimension is ``cells`` and whose attributes name the grid mapping; a
    variable-length one is written only if it is ragged (:func:`_ragged`)."""
    fields: list[str] = []
    skipped: list[str] = []
    for name, array in level.arrays():
        dims = array.metadata.dimension_names or ()
        if not dims or dims[-1] != "cells" or "grid_mapping" not in array.attrs:
            continue
        fixed = array.dtype.kind not in "OSUT"
        (fields if fixed or _ragged(array) else skipped).append(name)
    if wanted:
        unknown = [f for f in wanted if f not in fields]
        if unknown:
            raise OptionError(f"no field {unknown[0]!r} to export in this level; its fields: "
                              f"{', '.join(fields) or 'none'}")
        return list(wanted), skipped
    if not fields:
        raise OptionError("this level has no field to export")
    return fields, skipped


RAGGED_SPECS = ("zagg-ragged/1",)


def _ragged(array) -> tuple[np.dtype, int] | None:
    """``(element dtype, values per element)`` of a ragged field (``zagg-ragged/1``: each
    cell's bytes are elements of the declared dtype and shape ``[-1, *inner]``, little
    endian); ``None`` for any other array."""
    declared = array.attrs.get("ragged")
    if array.dtype.kind != "O" or not isinstance(declared, dict) or declared.get(
            "spec") not in RAGGED_SPECS:
        return None
    element = declared.get("element") or {}
    shape = element.get("shape")
    try:
        dtype = np.dtype(element.get("dtype")).newbyteorder("<")
    except TypeError:
        return None
    if (dtype.kind not in "biuf" or not isinstance(shape, list) or not shape
            or shape[0] != -1 or not all(isinstance(n, int) and n > 0 for n in shape[1:])):
        return None
    return dtype, int(np.prod(shape[1:], dtype=np.int64))


def _schema(pa, arrays: dict, windowed: bool):
    columns = [pa.field("cell_ids", pa.uint64(), nullable=False)]
    if windowed:
        columns.append(pa.field("window", pa.string(), nullable=False))
    for name, a in arrays.items():
        ragged = _ragged(a)
        if ragged is None:
            columns.append(pa.field(name, pa.from_numpy_dtype(a.dtype)))
        else:
            kind = pa.from_numpy_dtype(ragged[0].newbyteorder("="))
            columns.append(pa.field(name, pa.list_(pa.list_(kind, ragged[1]))))
    columns.append(pa.field("geometry", pa.binary(), nullable=False))
    return pa.schema(columns)


def _column(pa, array, values: np.ndarray, schema, name: str):
    """A field's values of the rows kept as an Arrow column: as they are, or a ragged
    field's cells decoded into lists of fixed-size lists. A cell whose bytes are not a
    whole number of elements is refused, naming the field."""
    ragged = _ragged(array)
    if ragged is None:
        return pa.array(values)
    dtype, per = ragged
    size = dtype.itemsize * per
    raws = [b"" if v is None else bytes(v) for v in values]
    if any(len(r) % size for r in raws):
        raise MocHiveError(f"field {name!r}: a cell's bytes are not whole elements of "
                           f"{per} x {dtype.name} ({size} bytes)")
    offsets = np.cumsum([0] + [len(r) // size for r in raws], dtype=np.int32)
    flat = np.frombuffer(b"".join(raws), dtype).astype(dtype.newbyteorder("="))
    elements = pa.FixedSizeListArray.from_arrays(pa.array(flat), per)
    return pa.ListArray.from_arrays(pa.array(offsets), elements).cast(
        schema.field(name).type)


def _holding(values: dict[str, np.ndarray], arrays: dict) -> np.ndarray:
    """Row positions where some field differs from its fill value (NaN counts as fill
    where the fill is NaN)."""
    held = None
    for name, vals in values.items():
        fill = arrays[name].metadata.fill_value
        if vals.dtype.kind == "O":  # a ragged cell holds a value where it has bytes
            empty = np.array([v is None or len(v) == 0 for v in vals], bool)
        elif vals.dtype.kind == "f" and np.isnan(fill):
            empty = np.isnan(vals)
        else:
            empty = vals == fill
        held = ~empty if held is None else held | ~empty
    assert held is not None
    return np.flatnonzero(held)


def _wkb(shapes: np.ndarray) -> list[bytes]:
    import shapely

    return list(shapely.to_wkb(shapes, output_dimension=2))


def _grown(bounds: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    import shapely

    box = shapely.bounds(shapes)
    return np.array([min(bounds[0], box[:, 0].min()), min(bounds[1], box[:, 1].min()),
                     max(bounds[2], box[:, 2].max()), max(bounds[3], box[:, 3].max())])


def _geo(bbox: list[float] | None) -> dict:
    """GeoParquet's ``geo`` file metadata: one WKB column, longitude/latitude (the default
    CRS, OGC:CRS84), planar edges between the vertices."""
    column: dict = {"encoding": "WKB", "geometry_types": ["Polygon", "MultiPolygon"],
                    "orientation": "counterclockwise"}
    if bbox is not None:
        column["bbox"] = bbox
    return {"version": GEOPARQUET_VERSION, "primary_column": "geometry",
            "columns": {"geometry": column}}
