"""The default options against the disk: one row per target, each with its floor and ratio.

    python -m benchmarks.run --targets HIVE:GROUP [--targets HIVE:GROUP ...] [--json OUT]

Every row is measured as a user runs it: a new ``MocHiveStore(path)`` with default options,
page cache warm. Floors, measured in the same run: the field's chunk objects read raw
(**chunk floor**), and every object a first scan reads (each leaf's stamp, its version's
array ``zarr.json``, the chunk) read raw (**full floor**); both recorded at the store's
local reader. Rows are timed in turn within each round and the best of each is kept; every
read's values are checked equal to ``moczarr.open_hive``'s in the run. Beside each row: the
plain copies' (``plain_copies.py``); over the wire: ``targets_wire.py``; then
``onecell.py``'s and ``computed.py``'s rows.
"""

from __future__ import annotations

import gc
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import zarr

from benchmarks import plain_copies, targets_wire
from benchmarks.common import (
    Fresh,
    alternate,
    checked,
    open_xr,
    random_reads,
    raw_read,
    scan_objects,
    target_cells,
    target_row,
)
from benchmarks.computed import measure_computed
from benchmarks.onecell import measure_onecell
from moczarr_store import MocHiveStore, open_cells

COORDS = ("morton", "cell_ids")
TARGET_COLUMNS = ["hive", "row", "ours", "floor", "ratio", "target", "met", "best plain copy"]


def reference(hive: Path, names: list[str], windows: list[str] | None = None
              ) -> dict[str, np.ndarray]:
    """The oracle's values of ``names`` (``moczarr.open_hive`` without dask: with it, one
    task per 64-cell inner chunk takes minutes on a 2,000-leaf hive); of a windowed hive,
    each window's (``windows``, the store's order) stacked, the coordinates its first's."""
    import moczarr

    got: dict[str, list[np.ndarray]] = {n: [] for n in names}  # a name once
    for window in windows or [None]:
        with warnings.catch_warnings(action="ignore"):
            ds = moczarr.open_hive(str(hive), xr_kwargs={"chunks": None},
                                   **({} if window is None else {"window": window}))
        for n in names:
            got[n].append(np.asarray(ds[n].values))
        del ds
        gc.collect()
    if any(not np.array_equal(got[c][0], v) for c in COORDS if c in got for v in got[c]):
        raise SystemExit(f"{hive}: its windows cover different cells (not measured here)")
    return {n: v[0] if windows is None or n in COORDS else np.stack(v) for n, v in got.items()}


def oracle(hive: Path, group: str, field: str) -> dict[str, np.ndarray]:
    """:func:`reference` of the field, the coordinates and every field of ``group``."""
    ds = open_xr(MocHiveStore(hive), group)
    names = [n for n in ds.data_vars if n not in COORDS]
    windows = [str(w) for w in ds["window"].values] if "window" in ds.dims else None
    return reference(hive, list(dict.fromkeys([field, *COORDS, *names])), windows)


def floors(hive: Path, group: str, field: str) -> tuple[float, float, int]:
    """(full floor, chunk floor) in seconds, best of 7, and the leaves of the level."""
    first, chunks, _ = scan_objects(hive, group, field)
    first, chunks = ([f"{hive}/{p}" for p in ps] for ps in (first, chunks))
    took = alternate({"full": lambda: raw_read(first), "chunk": lambda: raw_read(chunks)}, 7)
    return took["full"], took["chunk"], len(chunks)


def establishing(hive: Path, group: str, field: str, rounds: int) -> tuple[float, float]:
    """CPU seconds per leaf object of establishing its leaf (its stamp, its version, its
    array metadata: a first scan on a new store less a second scan on it), and of reading
    those documents raw; each the best of ``rounds``. Every object the first scan reads is
    read (untimed) at the start of each round: all are in the page cache for each measure
    (a machine short of memory may have let them go since the round before)."""
    first, chunks, _ = scan_objects(hive, group, field)
    docs = [f"{hive}/{p}" for p in set(first) - set(chunks)]
    read_first = [f"{hive}/{p}" for p in first]
    took: dict[str, list[float]] = {"first": [], "second": [], "raw": []}
    for _ in range(rounds):
        array = zarr.open_array(MocHiveStore(hive), path=f"{group}/{field}", mode="r")
        raw_read(read_first)
        for key, read in (("raw", lambda _: raw_read(docs)), ("first", array.__getitem__),
                          ("second", array.__getitem__)):
            gc.collect()
            start = time.process_time()
            read(Ellipsis)
            took[key].append(time.process_time() - start)
    n = len(chunks)
    return (min(took["first"]) - min(took["second"])) / n, min(took["raw"]) / n


class StoreCalls:
    """A new store whose ``_open`` (the hive's, at zarr's first use), ``get``, ``exists``
    and ``getsize`` add up the seconds they take; its ``get``s are counted, with the bytes
    they answer and the chunk keys among them (``chunks``)."""

    def __init__(self, hive: Path) -> None:
        self.store, self.seconds = MocHiveStore(hive), 0.0
        self.gets, self.nbytes, self.chunks = 0, 0, []
        for name in ("_open", "get", "exists", "getsize"):
            setattr(self.store, name, self._timed(getattr(self.store, name)))

    def _timed(self, call):
        async def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                got = await call(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
            if call.__name__ == "get":
                self._count(args[0], got)
            return got
        return timed

    def _count(self, key: str, got) -> None:
        self.gets += 1
        self.nbytes += 0 if got is None else len(got)
        if got is not None and "/c/" in key:
            self.chunks.append(key)


def open_cost(hive: Path, group: str, rounds: int) -> tuple[float, float, dict]:
    """Seconds of ``xr.open_zarr(store, group=g)`` on a new store, no field read, and of
    the store's calls in it (documents, consolidated metadata, coordinates read at open),
    the best of ``rounds``; and what it read: ``{"store_gets", "store_bytes",
    "chunks_read"}`` (the arrays whose chunks xarray reads at open: index coordinates)."""
    took: dict[str, list[float]] = {"open": [], "store": []}
    for _ in range(rounds):
        calls = StoreCalls(hive)
        gc.collect()
        start = time.perf_counter()
        open_xr(calls.store, group)
        took["open"].append(time.perf_counter() - start)
        took["store"].append(calls.seconds)
    read = {"store_gets": calls.gets, "store_bytes": calls.nbytes,
            "chunks_read": sorted({k.rsplit("/c/", 1)[0].rsplit("/", 1)[-1]
                                   for k in calls.chunks})}
    return min(took["open"]), min(took["store"]), read


def _timed(hive: Path, group: str, field: str, fields: list[str], want: dict,
           rounds: int) -> tuple[dict[str, float], zarr.Array]:
    """The in-process reads of :func:`measure_targets`, checked then timed in turn: first
    scans on a new store each time, the rest on one store."""
    path = f"{group}/{field}"
    warm = MocHiveStore(hive)
    array = zarr.open_array(warm, path=path, mode="r")
    reads = {
        "first zarr": Fresh(lambda: MocHiveStore(hive),
                            lambda s: zarr.open_array(s, path=path, mode="r")[:]),
        "first xr": Fresh(lambda: MocHiveStore(hive), lambda s: open_xr(s, group)[field].values),
        "second zarr": lambda: array[:],
        "second xr values": lambda: open_xr(warm, group)[field].values,
        "field load": lambda: open_xr(warm, group)[field].load(),
        "all values": lambda: [open_xr(warm, group)[n].values for n in fields],
        "ds load": lambda: open_xr(warm, group).load(),
        "cells field load": lambda: open_cells(warm, group)[field].load(),
        "cells ds load": lambda: open_cells(warm, group).load(),
    }
    checked({k: reads[k] for k in ("first zarr", "first xr", "second zarr",
                                   "second xr values")}, want[field])
    for opened in (open_xr, open_cells):
        loaded = opened(warm, group)[field].load()
        everything = opened(warm, group).load()
        for n, got in [*((c, loaded[c]) for c in COORDS), *((n, everything[n]) for n in fields)]:
            np.testing.assert_array_equal(got.values, want[n], err_msg=f"{hive.name} {n}")
    return alternate(reads, rounds), array


def measure_targets(hive: Path, group: str, field: str = "h_mean", rounds: int = 5,
                    want: dict | None = None) -> list[dict]:
    """The target rows of one hive (``target``: the ratio a row must not exceed);
    ``want``: the oracle's values, read here if not given."""
    name = hive.name
    if want is None:
        want = oracle(hive, group, field)
    fields = [n for n in want if n not in COORDS]
    full, chunk, leaves = floors(hive, group, field)
    t, array = _timed(hive, group, field, fields, want, rounds)
    per_leaf, raw_per_leaf = establishing(hive, group, field, rounds)
    opened, store_part, read_at_open = open_cost(hive, group, rounds)
    rows = [target_row(name, label, t[key], floor, base, limit)
            for label, key, floor, base, limit in (
        ("first scan (new store), zarr [:]", "first zarr", "full floor", full, 2),
        ("first scan (new store), xr.open_zarr(store, group=g)[field].values", "first xr",
         "full floor", full, 3),
        ("second scan (same store), zarr [:]", "second zarr", "chunk floor", chunk, 2),
        ("second scan (same store), xarray [field].values", "second xr values", "chunk floor",
         chunk, 3),
        ("[field].load() (coordinates included) vs [field].values", "field load",
         "[field].values", t["second xr values"], 2),
        (f"ds.load() of all {len(fields)} fields vs their .values", "ds load",
         "fields' .values", t["all values"], 2),
        ("open_cells(store, g)[field].load() (coordinates computed) vs [field].values",
         "cells field load", "[field].values", t["second xr values"], 2),
        (f"open_cells(store, g).load() of all {len(fields)} fields vs their .values",
         "cells ds load", "fields' .values", t["all values"], 2))]
    rows.append(target_row(
        name, "establishing a leaf (stamp, version, array metadata), CPU per leaf: first "
        "scan less second", per_leaf, "raw read of those documents", raw_per_leaf, 1.5))
    rows.append(target_row(
        name, "xr.open_zarr(store, group=g), new store, no field read", opened,
        "the store's calls in it", store_part, None, **read_at_open))
    # random reads against the "leaf" mode
    leaf = zarr.open_array(MocHiveStore(hive, chunking="leaf"), path=f"{group}/{field}", mode="r")
    per = random_reads(want[field], leaves and want[field].size // leaves,
                       {"default": array, "leaf": leaf})
    for kind in ("random single cell", "random leaf-sized slice"):
        rows.append(target_row(name, f"{kind} vs chunking='leaf'", per[kind, "default"],
                               "'leaf' mode", per[kind, "leaf"], 2))
    return rows


def _one_hive(hive: Path, group: str, field: str, rounds: int | None) -> list[dict]:
    """:func:`measure_targets`, the plain copies beside, and the rows over the wire."""
    started, took = time.perf_counter(), {}

    def lap(what: str) -> None:
        took[what] = time.perf_counter() - started - sum(took.values())

    want = oracle(hive, group, field)
    fields = [n for n in want if n not in COORDS]
    rows = measure_targets(hive, group, field, rounds or 5, want)
    lap("in process")
    with tempfile.TemporaryDirectory(prefix="moczarr-targets-") as tmp:
        copies = plain_copies.make_copies(hive, group, field, Path(tmp))
        lap("plain copies made")
        leaves = zarr.open_array(str(copies["zagg's layout"] / field), mode="r").nchunks
        plain_copies.attach(rows, plain_copies.time_plain(
            copies, field, fields, want, want[field].size // leaves, rounds or 3))
        lap("plain copies timed")
        rows += targets_wire.measure_wire(hive, group, field, want[field], copies, rounds or 3)
        lap("over the wire")
    print(f"# {hive.name}: seconds " + ", ".join(f"{k} {v:.0f}" for k, v in took.items()))
    return rows


def measure_all_targets(hives: list[tuple[Path, str]], field: str,
                        onecell: list[tuple[Path, str]] = (), rounds: int | None = None,
                        computed: list[tuple[Path, str]] = ()) -> list[dict]:
    """The default options' rows against their floors on each of ``hives``, then
    ``onecell.py``'s rows, then ``computed.py``'s (``computed``: ``(hive, product)``); then
    the whole table again, the copies' best beside each row. ``rounds``: each row the best
    of that many (None: each module's own default)."""
    print("| hive | row | ms | floor | ratio | target | met |\n|---|---|---|---|---|---|---|")
    rows = []
    for hive, group in hives:
        rows += _one_hive(hive, group, field, rounds)
        gc.collect()
    for hive, group in onecell:
        rows += measure_onecell(hive, group)
    for hive, product in computed:
        rows += measure_computed(hive, product, **({} if rounds is None else {"rounds": rounds}))
    print("\n# the default options' targets, the best plain zarr copy beside each row\n")
    print("| " + " | ".join(TARGET_COLUMNS) + " |\n|" + "---|" * len(TARGET_COLUMNS))
    for r in rows:
        print("| " + " | ".join(target_cells(r)) + " |")
    return rows
