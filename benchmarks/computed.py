"""Computed orders against the raw reads of what they fold.

    python -m benchmarks.run --computed HIVE:PRODUCT [--computed ...] [--json OUT]

Rows, on a new ``MocHiveStore(HIVE, computed_orders="all")`` (every order below the
source's computed, stored overviews unread) with the page cache warm:

- the first read of the computed chunk of the most leaves at the order one above the
  source's (between the shard and the source order: one chunk folds a few leaves), against
  the raw read of every object that read touches (each leaf's stamp, its version's array
  ``zarr.json``, its chunks): target 2x;
- the same at the order one below the shard order (one chunk folds many leaves): 3x;
- a second read of that computed chunk (kept) against a second read of a stored chunk of
  the source order on one store: 2x.

Values are checked against ``moczarr.parent_cells`` and the fold over ``moczarr.open_hive``
before anything is timed.
"""

from __future__ import annotations

import functools
import gc
import json
import warnings
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import Fresh, alternate, raw_read, record_reads, target_row
from moczarr_store import MocHiveStore


def _store(hive: Path) -> MocHiveStore:
    return MocHiveStore(hive, computed_orders="all")


def _open(hive: Path, path: str) -> zarr.Array:
    """``path`` on a new store, its metadata read: a first read then folds its chunk (stamps,
    leaf array metadata and chunks, all read for the first time)."""
    with warnings.catch_warnings(action="ignore"):
        return zarr.open_array(_store(hive), path=path, mode="r")


def _busiest(group: zarr.Group) -> int:
    """The chunk of the level whose node holds the most cells with a value."""
    count = group["count"][:]
    rows = group["count"].chunks[-1]
    per = np.add.reduceat(count != 0, np.arange(0, count.size, rows))
    return int(np.argmax(per))


def _declared(hive: Path, field: str) -> dict:
    """The field's fold: the manifest's declaration, else (zagg's pyramid off) what the
    writer's ``aggregation.yaml`` gives by the rules docs/guide/computed-orders.md states
    (read here, not through the store)."""
    import yaml

    manifest = json.loads((hive / "morton_hive.json").read_text())
    fields = manifest.get("pyramid", {}).get("overview", {}).get("fields")
    if fields:
        return fields[field]
    spec = yaml.safe_load((hive / "aggregation.yaml").read_text())["aggregation"]["variables"][
        field]
    method = {"len": "sum", "count": "sum", "sum": "sum", "nansum": "sum", "min": "min",
              "nanmin": "min", "max": "max", "nanmax": "max"}[
        spec["function"].removeprefix("np.").removeprefix("numpy.")]
    return {"method": method, "dtype": spec.get("dtype", "float32"),
            "fill_value": spec.get("fill_value", float("nan"))}


@functools.lru_cache(maxsize=1)
def _source(hive: Path, field: str) -> tuple[np.ndarray, np.ndarray]:
    """``moczarr.open_hive``'s values of ``field`` and their morton words (read once for
    every row: most of the harness's time on a large hive)."""
    import moczarr

    with warnings.catch_warnings(action="ignore"):
        ds = moczarr.open_hive(str(hive), xr_kwargs={"chunks": None})
    return ds[field].values, ds["morton"].values


def _expected(hive: Path, field: str, order: int, words: np.ndarray) -> np.ndarray:
    """The oracle: moczarr's source rows folded (sum / min / max, NaN and fill skipped)."""
    import moczarr

    fold = _declared(hive, field)
    dtype = np.dtype(fold["dtype"])
    fill = np.asarray(fold["fill_value"], dtype=dtype)
    source, morton = _source(hive, field)
    values = source.astype(dtype)
    parents = np.asarray(moczarr.parent_cells(morton, order))
    present = ~(np.isnan(values) if dtype.kind == "f" else np.zeros(values.shape, bool))
    present &= values != fill
    out = np.full(words.size, fill, dtype)
    at = np.searchsorted(words, parents[present])
    law = {"sum": np.add, "min": np.minimum, "max": np.maximum}[fold["method"]]
    seen = np.zeros(words.size, bool)
    seen[at] = True
    start = {"sum": 0, "min": np.inf, "max": -np.inf}[fold["method"]]
    acc = np.full(words.size, start if dtype.kind == "f" else
                  {"sum": 0, "min": np.iinfo(dtype).max, "max": np.iinfo(dtype).min}[
                      fold["method"]], dtype)
    law.at(acc, at, values[present])
    out[seen] = acc[seen]
    return out


def measure_computed(hive: Path, product: str, field: str = "count",
                     rounds: int = 5) -> list[dict]:
    """The rows above for one hive, as ``targets.py``'s row dicts."""
    manifest = json.loads((hive / "morton_hive.json").read_text())
    source, shard = manifest["cell_order"], manifest["shard_order"]
    rows: list[dict] = []

    def add(label: str, seconds: float, floor: float, floor_name: str, target: float) -> None:
        rows.append(target_row(hive.name, label, seconds, floor_name, floor, target))

    with warnings.catch_warnings(action="ignore"):
        root = zarr.open_group(_store(hive), mode="r")
    for order, what, target in ((source - 1, "between shard and source order", 2),
                                (shard - 1, "one coarser than the shard order", 3)):
        group = root[f"{product}/o{order}"]
        chunk = _busiest(group)
        rows_per = group[field].chunks[-1]
        region = slice(chunk * rows_per, (chunk + 1) * rows_per)
        words = group["morton"][:]
        want = _expected(hive, field, order, words)[region]
        first = Fresh(lambda p=f"{product}/o{order}/{field}": _open(hive, p),
                      lambda array, region=region: array[region])
        first.prepare()
        reads = record_reads(first.made.store)
        np.testing.assert_array_equal(first(), want)
        touched = sorted({f"{hive}/{path}" for path, _ in reads})
        took = alternate({"ours": first, "floor": lambda t=touched: raw_read(t)}, rounds)
        leaves = sum(1 for p in touched if p.endswith(".zarr/zarr.json"))
        metas = sum(1 for p in touched if p.endswith("/zarr.json")) - leaves
        if not leaves or metas != leaves:  # a read the recording missed: no floor
            raise SystemExit(f"o{order}: {leaves} stamps and {metas} leaf array documents "
                             "recorded: the floor would leave reads out")
        add(f"o{order} ({what}): first read of one computed chunk ({leaves} leaves), new "
            "store", took["ours"], took["floor"], "raw read of the objects it touches", target)
        gc.collect()
    # a kept computed chunk against a stored chunk, both read again on one store
    warm = _store(hive)
    order = shard - 1
    computed = zarr.open_array(warm, path=f"{product}/o{order}/{field}", mode="r")
    chunk = _busiest(root[f"{product}/o{order}"])
    rows_per = computed.chunks[-1]
    region = slice(chunk * rows_per, (chunk + 1) * rows_per)
    stored = zarr.open_array(warm, path=f"{product}/o{source}/{field}", mode="r")
    computed[region], stored[: stored.chunks[-1]]
    took = alternate({"kept": lambda: computed[region],
                      "stored": lambda: stored[: stored.chunks[-1]]}, max(rounds, 7))
    add(f"o{order}: second read of a computed chunk (kept) vs a stored chunk's",
        took["kept"], took["stored"], f"second read of one o{source} chunk", 2)
    return rows
