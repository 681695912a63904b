"""The default options against the disk: one row per target, each with its floor and ratio.

    python -m benchmarks.run --targets HIVE:GROUP [--targets HIVE:GROUP ...] [--json OUT]

Every row is measured as a user runs it: a new ``MocHiveStore(path)`` with default options,
page cache warm. Floors, measured in the same run: the field's chunk objects read raw
(**chunk floor**), and every object a first scan reads (each leaf's stamp, its version's
array ``zarr.json``, the chunk) read raw (**full floor**); both recorded at the store's
local reader. Rows are timed in turn within each round and the best of each is kept; every
read's values are checked equal to ``moczarr.open_hive``'s in the run.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from benchmarks.common import alternate, best, random_reads, raw_read, record_reads
from moczarr_store import MocHiveStore

COORDS = ("morton", "cell_ids")


def _open_xr(store: MocHiveStore | str, group: str | None = None) -> xr.Dataset:
    """``xr.open_zarr(store, group=group)`` with xarray's defaults (a dask chunk per zarr
    chunk): every xarray row reads through this one call, the plain copies' too
    (``plain_copies.py``), so both sides are read alike."""
    with warnings.catch_warnings(action="ignore"):
        return xr.open_zarr(store, group=group)


# the oracle's values per (hive, group), read once for every row of the run that checks them
# (the harness forgets them after each hive)
KEPT: dict[tuple[Path, str], dict[str, np.ndarray]] = {}


def _reference(hive: Path, group: str, names: list[str]) -> dict[str, np.ndarray]:
    """The oracle's values of ``names`` (``moczarr.open_hive`` without dask: with it, one
    task per 64-cell inner chunk takes minutes on a 2,000-leaf hive), kept in ``KEPT``."""
    import moczarr

    kept = KEPT.setdefault((hive, group), {})
    if missing := [n for n in names if n not in kept]:
        with warnings.catch_warnings(action="ignore"):
            ds = moczarr.open_hive(str(hive), xr_kwargs={"chunks": None})
        kept.update({n: np.asarray(ds[n].values) for n in missing})
        del ds
        gc.collect()
    return {n: kept[n] for n in names}


def floor_objects(hive: Path, group: str, field: str) -> tuple[list[str], list[str]]:
    """The objects a first scan reads (stamp, version metadata, chunk) and a second scan
    reads (the chunks), recorded at the local reader of a ``"leaf"`` store."""

    store = MocHiveStore(hive, chunking="leaf")
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    reads = record_reads(store)
    array[:]
    first = [f"{hive}/{path}" for path, _ in reads]
    reads.clear()
    array[:]
    return first, [f"{hive}/{path}" for path, _ in reads]


def _floors(hive: Path, group: str, field: str) -> tuple[float, float, int]:
    """(full floor, chunk floor) in seconds, best of 7, and the leaves of the level."""

    first, chunks = floor_objects(hive, group, field)
    took = alternate({"full": lambda: raw_read(first), "chunk": lambda: raw_read(chunks)}, 7)
    return took["full"], took["chunk"], len(chunks)


class _Fresh:
    """A timed read on a new store each time (the store made untimed, in ``prepare``)."""

    def __init__(self, hive: Path, group: str, read, **options) -> None:
        self.hive, self.group, self.read, self.options = hive, group, read, options
        self.store: MocHiveStore | None = None

    def prepare(self) -> None:
        self.store = MocHiveStore(self.hive, **self.options)
        gc.collect()

    def __call__(self):
        assert self.store is not None
        return self.read(self.store)


def measure_targets(hive: Path, group: str, field: str = "h_mean",
                    rounds: int = 5) -> list[dict]:
    """The issue's rows for one hive, as dicts ``{hive, row, ms, floor, floor_ms, ratio,
    target, met}`` (``target``: the ratio a row must not exceed; ``ratio_min``: must reach)."""

    name = hive.name
    store = MocHiveStore(hive)
    ds = _open_xr(store, group)
    fields = [n for n in ds.data_vars if n not in COORDS]
    want = _reference(hive, group, [field, *COORDS, *fields])
    full, chunk, leaves = _floors(hive, group, field)
    rows: list[dict] = []

    def add(label: str, seconds: float, floor: float | None, floor_name: str,
            target: float, anchor_ms: float | None = None) -> None:
        base = floor if floor is not None else anchor_ms
        ratio = seconds / base if base else float("nan")
        rows.append({"hive": name, "row": label, "ms": round(seconds * 1e3, 2),
                     "floor": floor_name, "floor_ms": round(base * 1e3, 2) if base else None,
                     "ratio": round(ratio, 2), "target": target, "met": bool(ratio <= target)})
        print(f"| {name} | {label} | {seconds * 1e3:,.1f} ms | {floor_name} "
              f"{(base or 0) * 1e3:,.1f} ms | {ratio:.2f}x | <= {target}x | "
              f"{'met' if ratio <= target else 'MISSED'} |", flush=True)

    def check(got, key: str) -> np.ndarray:
        np.testing.assert_array_equal(np.asarray(got), want[key], err_msg=f"{name} {key}")
        return got

    # first scans, on a new store each time
    def zarr_scan(s: MocHiveStore):
        return zarr.open_array(s, path=f"{group}/{field}", mode="r")[:]

    def xr_values(s: MocHiveStore):
        return _open_xr(s, group)[field].values

    first_zarr, first_xr = _Fresh(hive, group, zarr_scan), _Fresh(hive, group, xr_values)
    for fn, key in ((first_zarr, field), (first_xr, field)):
        fn.prepare()
        check(fn(), key)
    # second scans, on one store
    warm = MocHiveStore(hive)
    array = zarr.open_array(warm, path=f"{group}/{field}", mode="r")
    wds = _open_xr(warm, group)
    check(array[:], field)
    loaded = wds[field].load()
    check(loaded.values, field)
    for c in COORDS:
        check(loaded[c].values, c)
    all_loaded = _open_xr(warm, group).load()
    for n in fields:
        check(all_loaded[n].values, n)
    fns = {
        "second zarr": lambda: array[:],
        "second xr values": lambda: _open_xr(warm, group)[field].values,
        "field load": lambda: _open_xr(warm, group)[field].load(),
        "all values": lambda: [_open_xr(warm, group)[n].values for n in fields],
        "ds load": lambda: _open_xr(warm, group).load(),
    }
    took: dict[str, list[float]] = {k: [] for k in ("first zarr", "first xr", *fns)}
    for _ in range(rounds):
        took["first zarr"].append(best(first_zarr, 1)[0])
        took["first xr"].append(best(first_xr, 1)[0])
        for k, fn in fns.items():
            took[k].append(best(fn, 1)[0])
    t = {k: min(v) for k, v in took.items()}
    add("first scan (new store), zarr [:]", t["first zarr"], full, "full floor", 2)
    add("first scan (new store), xr.open_zarr(store, group=g)[field].values", t["first xr"],
        full, "full floor", 3)
    add("second scan (same store), zarr [:]", t["second zarr"], chunk, "chunk floor", 2)
    add("second scan (same store), xarray [field].values", t["second xr values"], chunk,
        "chunk floor", 3)
    add("[field].load() (coordinates included) vs [field].values", t["field load"], None,
        "[field].values", 2, t["second xr values"])
    add(f"ds.load() of all {len(fields)} fields vs their .values", t["ds load"], None,
        "fields' .values", 2, t["all values"])
    # random reads against the "leaf" mode
    cells = leaves and want[field].shape[0] // leaves
    arrays = {"default": array,
              "leaf": zarr.open_array(MocHiveStore(hive, chunking="leaf"),
                                      path=f"{group}/{field}", mode="r")}
    per = random_reads(want[field], cells, arrays)
    for kind in ("random single cell", "random leaf-sized slice"):
        add(f"{kind} vs chunking='leaf'", per[kind, "default"], None, "'leaf' mode", 2,
            per[kind, "leaf"])
    return rows
