"""A hive of one-cell leaves: ``morton`` read whole against the floor of its bytes.

    python -m benchmarks.onecell HIVE [GROUP]

``HIVE`` is what ``make_bench_hive.py --mode scale --shards N --scale-cell-order 10``
writes: ONE real zagg leaf and a root coverage listing N one-cell shards, the others absent
(zagg cannot write a million leaves in the time a benchmark has). The store opens it with
its default options, so every listed shard is a node of the domain: ``morton`` and
``cell_ids`` are computed from the coverage, and a field read whole would read N commit
stamps (not measured here: the coordinates are the rows).

Floor: the same bytes read raw from one page-cached file into one new array. A plain zarr
copy of the same values, chunked as the store presents them and in one chunk, is read in
the same run. Memory: the peak of Python's traced allocations during a read (numpy's
included) and the process's peak resident set over it (``VmHWM``, reset first). Values:
``morton`` equals the coverage's shards as moczarr expands them
(``moczarr.coverage.ranges_words``), ``cell_ids`` their NESTED ids.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from zarr.storage import LocalStore

from moczarr_store import MocHiveStore

ROUNDS = 5


def _vm_hwm() -> float | None:
    """The process's peak resident set in MB since the last reset (Linux), else ``None``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _vm_rss() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _memory(read) -> tuple[float, float | None]:
    """(traced peak MB, growth of the peak resident set MB) of one ``read()``."""
    gc.collect()
    before = _vm_rss()
    reset = _reset_hwm()
    tracemalloc.start()
    got = read()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    del got
    hwm = _vm_hwm() if reset else None
    return peak, None if hwm is None or before is None else hwm - before


def _best(fns: dict, rounds: int = ROUNDS) -> dict[str, float]:
    """The best seconds of each of ``fns``, timed in turn within each round."""
    took: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            took[name].append(time.perf_counter() - start)
    return {name: min(seconds) for name, seconds in took.items()}


def _raw_into_new(path: Path, nbytes: int) -> np.ndarray:
    out = np.empty(nbytes, dtype=np.uint8)
    with open(path, "rb") as f:
        if f.readinto(memoryview(out)) != nbytes:
            raise SystemExit(f"{path} changed while measured")
    return out


def _expected_words(hive: Path) -> np.ndarray:
    """The shards the root coverage lists, as moczarr expands them (sorted words)."""
    from moczarr.coverage import ranges_words
    from moczarr.store import load_root_coverage

    envelope = load_root_coverage(str(hive))
    if envelope is None:
        raise SystemExit(f"{hive}: no usable root coverage")
    return ranges_words(envelope)


def _check(hive: Path, group: str, words: np.ndarray, cell_ids: np.ndarray) -> None:
    """``words`` (the store's ``morton``) against moczarr's expansion of the coverage:
    every listed shard once; ``cell_ids`` the NESTED ids of the words (first principles).
    (``moczarr.open_hive`` reads every leaf's stamp, about 2 ms each here: half an hour
    for a million, and it keeps only the one stamped leaf.)"""
    expected = _expected_words(hive)
    np.testing.assert_array_equal(np.sort(words), expected, err_msg=f"{hive} morton")
    order = int(group.rsplit("/o", 1)[1])
    nested = (words >> np.uint64(6 + 2 * (27 - order))) - np.uint64(4**order)
    np.testing.assert_array_equal(cell_ids, nested, err_msg=f"{hive} cell_ids")


def measure_onecell(hive: Path, group: str = "atl06/o10") -> list[dict]:
    """The one-cell-leaf rows for ``hive``, as dicts ``{hive, row, ms, floor, floor_ms,
    ratio, target, met}`` (as ``benchmarks/targets.py``'s) plus ``traced_peak_mb`` and
    ``peak_rss_mb`` (the read's memory: Python's traced peak, and how far the process's peak
    resident set rose above its resident set before the read) where measured."""
    name = hive.name
    opened = time.perf_counter()
    store = MocHiveStore(hive)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        morton = zarr.open_array(store, path=f"{group}/morton", mode="r")
    open_s = time.perf_counter() - opened
    words = morton[:]
    _check(hive, group, words, zarr.open_array(store, path=f"{group}/cell_ids", mode="r")[:])
    nbytes = words.nbytes

    def xr_values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return xr.open_zarr(store, group=group)["morton"].values

    np.testing.assert_array_equal(xr_values(), words)
    with tempfile.TemporaryDirectory(prefix="onecell-") as tmp:
        raw = Path(tmp) / "morton.bin"
        raw.write_bytes(words.tobytes())
        plain = {}
        for label, chunks in (("same chunks", morton.chunks), ("one chunk", words.shape)):
            copy = zarr.create_array(LocalStore(Path(tmp) / label.replace(" ", "_")),
                                     shape=words.shape, chunks=chunks, dtype=words.dtype,
                                     compressors=None, fill_value=0)
            copy[:] = words
            plain[label] = zarr.open_array(copy.store, mode="r")
            np.testing.assert_array_equal(plain[label][:], words)
        _raw_into_new(raw, nbytes)  # into the page cache
        fns = {
            "floor": lambda: _raw_into_new(raw, nbytes),
            "zarr": lambda: morton[:],
            "xr": xr_values,
            "plain same": lambda: plain["same chunks"][:],
            "plain one": lambda: plain["one chunk"][:],
        }
        t = _best(fns)
        memory = {"zarr": _memory(lambda: morton[:]), "xr": _memory(xr_values)}
    tasks = _tasks(store, group)
    print(f"# {name}: {words.size:,} one-cell leaves; store opened in {open_s:.2f} s; "
          f"morton {nbytes / 1e6:.1f} MB in {morton.nchunks:,} chunks of {morton.chunks[0]:,} "
          f"rows; xarray: a lazy dask coordinate of {tasks} tasks", flush=True)
    rows: list[dict] = []

    def add(label: str, key: str, target: float, mem: tuple[float, float | None] | None) -> None:
        seconds, floor = t[key], t["floor"]
        ratio = seconds / floor
        row = {"hive": name, "row": label, "ms": round(seconds * 1e3, 2),
               "floor": "raw read of its bytes from one page-cached file",
               "floor_ms": round(floor * 1e3, 2), "ratio": round(ratio, 2), "target": target,
               "met": bool(ratio <= target)}
        if mem is not None:
            row["traced_peak_mb"] = round(mem[0], 1)
            row["peak_rss_mb"] = None if mem[1] is None else round(mem[1], 1)
        rows.append(row)
        extra = "" if mem is None else (f" | traced peak {mem[0]:.1f} MB, peak RSS +"
                                         f"{mem[1] or 0:.1f} MB")
        print(f"| {name} | {label} | {seconds * 1e3:,.1f} ms | floor {floor * 1e3:,.1f} ms | "
              f"{ratio:.2f}x | <= {target}x | {'met' if ratio <= target else 'MISSED'}{extra} |",
              flush=True)

    add("one-cell leaves: morton read whole, zarr [:]", "zarr", 3, memory["zarr"])
    add("one-cell leaves: morton read whole, xr.open_zarr(store, group=g)['morton'].values",
        "xr", 3, memory["xr"])
    add(f"one-cell leaves: plain zarr copy of morton, same chunks ({morton.chunks[0]:,}), [:]",
        "plain same", 3, None)
    add("one-cell leaves: plain zarr copy of morton, one chunk, [:]", "plain one", 3, None)
    return rows


def _tasks(store: MocHiveStore, group: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = xr.open_zarr(store, group=group)["morton"].variable.data
    return len(dict(data.__dask_graph__()))


if __name__ == "__main__":
    where = Path(sys.argv[1])
    measure_onecell(where, *(sys.argv[2:3] or ["atl06/o10"]))
