"""Label selection on a large domain: O(runs) indexes against a materialised coordinate.

Builds a synthetic hive whose root ``coverage.moc`` lists ``--shards`` order-10 nodes of 16
cells (cell order 12) in fragmented runs, with one real leaf (the committed
``fixtures/bare_versioned`` template leaf, re-labelled): every other listed node has no
leaf, and the label indexes never read one. Then, each in a fresh process (tracemalloc
peaks and times of the open + index build + 100 selections):

- ``decode_cells``: ``moczarr_store.open_cells(store, group)`` (xdggs's MOC index on
  ``cell_ids`` from the ranges, a ``MortonIndex`` on ``morton``), then
  ``ds.sel(cell_ids=...)`` and ``ds.sel(morton=...)``;
- ``materialised``: ``xdggs.decode(xr.open_zarr(store, group, chunks=None))`` (xdggs's
  default pandas index: reads the whole ``cell_ids`` coordinate), then the same selections.

    python -m benchmarks.index_bench OUTDIR --shards 1000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "4/4/4/1/1/2/444112.zarr"  # the leaf of fixtures/bare_versioned copied
S, C = 10, 12  # node (shard) order and cell order: 16 cells per node, as the template leaf
GROUP = f"atl06/o{C}"


def _ranks(n: int, seed: int = 1) -> np.ndarray:
    """NESTED ids of ``n`` order-``S`` nodes: runs of 1..16 separated by gaps of 1..8."""
    rng = np.random.default_rng(seed)
    runs = rng.integers(1, 17, size=n // 4 + 16)
    gaps = rng.integers(1, 9, size=runs.size)
    gaps[0] = 0
    starts = np.cumsum(gaps + np.concatenate(([0], runs[:-1])))
    ids = np.concatenate([np.arange(a, a + r) for a, r in zip(starts, runs, strict=True)])[:n]
    assert ids[-1] < 12 * 4**S, "too many nodes for the sphere"
    return ids


def build(out: Path, shards: int) -> None:
    """The synthetic hive at ``out`` (replaced)."""
    from benchmarks.common import synthetic_hive
    from moczarr_store.hive.ids import rank_to_decimal
    from moczarr_store.hive.paths import leaf_path

    if out.exists():
        shutil.rmtree(out)
    ids = _ranks(shards)
    base = ids // 4**S  # a range of the MOC stays in one base cell
    breaks = np.flatnonzero((np.diff(ids) != 1) | (np.diff(base) != 0)) + 1
    firsts, lasts = ids[np.r_[0, breaks]], ids[np.r_[breaks - 1, ids.size - 1]]
    ranges = [[rank_to_decimal(int(a) + 4**S, S), rank_to_decimal(int(b) + 4**S, S)]
              for a, b in zip(firsts, lasts, strict=True)]
    leaf = out / leaf_path(rank_to_decimal(int(ids[0]) + 4**S, S), None, 1)
    synthetic_hive(out, C, S, ranges, TEMPLATE, leaf)
    print(f"{out}: {shards:,} nodes in {len(ranges):,} runs, {shards * 16:,} cells", flush=True)


def measure(hive: Path, how: str, trace: bool) -> dict:
    """Open, build the index and make 100 cell-id and 100 morton selections (the imports
    are made first; with ``trace``, under tracemalloc, which slows the run: its times are
    not reported). Peak: the larger of open + index and of the selections."""
    import warnings

    import dask.array  # noqa: F401  (imported before the clock starts)
    import healpix_geo.nested  # noqa: F401
    import xarray as xr
    import xdggs

    from moczarr_store import MocHiveStore, open_cells

    warnings.simplefilter("ignore")
    store = MocHiveStore(hive)
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    if how == "decode_cells":
        ds = open_cells(store, GROUP, chunks=None)
    elif how == "open":  # the baseline: the hive and the group opened, no index
        ds = xr.open_zarr(store, group=GROUP, chunks=None)
        _, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
        return {"how": how, "cells": int(ds.sizes["cells"]), "peak_mib": peak / 2**20,
                "open_and_index_s": time.perf_counter() - start, "select_s": float("nan")}
    else:
        ds = xdggs.decode(xr.open_zarr(store, group=GROUP, chunks=None))
    opened = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
    tracemalloc.stop()  # the labels to look up (100 values) are not measured
    rng = np.random.default_rng(2)
    rows = np.sort(rng.choice(ds.sizes["cells"], size=100, replace=False))
    ids = np.asarray(ds.cell_ids[rows].values)
    words = np.asarray(ds.morton[rows].values)
    if trace:
        tracemalloc.start()
    looked = time.perf_counter()
    by_id = ds.sel(cell_ids=ids)
    by_word = ds.sel(morton=words)
    done = time.perf_counter()
    peak = max(peak, tracemalloc.get_traced_memory()[1] if trace else 0)
    assert (by_id.cell_ids.values == ids).all() and (by_word.morton.values == words).all()
    return {"how": how, "cells": int(ds.sizes["cells"]), "open_and_index_s": opened - start,
            "select_s": done - looked, "peak_mib": peak / 2**20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("hive", type=Path)
    parser.add_argument("--shards", type=int, default=1_000_000)
    parser.add_argument("--measure", choices=("open", "decode_cells", "materialised"))
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--keep", action="store_true", help="reuse an existing hive")
    parser.add_argument("--only", choices=("open", "decode_cells", "materialised"))
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.hive, args.measure, args.trace)))
        return 0
    if not (args.keep and args.hive.exists()):
        build(args.hive, args.shards)
    for how in [args.only] if args.only else ("open", "decode_cells", "materialised"):
        timed, traced = (_run(args.hive, how, trace) for trace in (False, True))
        print(f"{how:>13}: {timed['cells']:,} cells | open + index "
              f"{timed['open_and_index_s']:.3f} s | 200 selections {timed['select_s'] * 1e3:.1f}"
              f" ms | tracemalloc peak {traced['peak_mib']:.1f} MiB", flush=True)
    return 0


def _run(hive: Path, how: str, trace: bool) -> dict:
    command = [sys.executable, "-m", "benchmarks.index_bench", str(hive), "--measure", how]
    result = subprocess.run(command + ["--trace"] * trace, check=True, capture_output=True,
                            text=True, cwd=ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    raise SystemExit(main())
