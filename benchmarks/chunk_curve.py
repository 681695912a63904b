"""Leaves per chunk against every read the default must serve well: the curve that
chooses ``chunking="auto"``'s rule (``leaves_per_chunk`` in ``view/arrays.py``).

    python -m benchmarks.chunk_curve HIVE:GROUP [HIVE:GROUP ...] [--field F] [--counts 1,4,...]
        [--rounds 5] [--clock wall|cpu] [--json OUT]

For each count ``k`` of leaves per chunk (``chunking=k``) and ``"auto"``,
in its own block (spans kept mapped from earlier blocks let go first), each round times in
turn: the full floor and the chunk floor (raw reads of the objects a first and a second
scan read, as ``targets.py`` defines them), a first scan on a new store (zarr ``[:]`` and
``xr.open_zarr(store, group=g)[field].values``), a second scan on one store (the same two),
and random single cells and leaf-sized slices against ``"leaf"``'s (``common.random_reads``).
Each figure is the best of ``rounds``; ratios are to the floors and ``"leaf"`` of the same
block. ``--clock cpu`` times in this process's CPU seconds: on a machine shared with other
work the ratios then move less with its load. Every configuration's values are checked
equal to ``moczarr.open_hive``'s first (``targets.reference``).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import Fresh, alternate, open_xr, random_reads, raw_read, scan_objects
from benchmarks.targets import reference
from moczarr_store import MocHiveStore, mapped

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""``cpu``: this process's CPU time (every thread): on a machine shared with other work it
counts our cost, not the others' (a read's waits and its use of a second core not counted)."""


def curve_block(hive: Path, group: str, field: str, chunking: str | int, want: np.ndarray,
                floors: tuple[list[str], list[str]], rounds: int, clock) -> dict:
    """One point of the curve: ``chunking``'s reads and the floors, timed in turn."""
    mapped.release()
    gc.collect()
    first_paths, chunk_paths = floors

    def xr_values(s: MocHiveStore):
        return open_xr(s, group)[field].values

    def new() -> MocHiveStore:
        return MocHiveStore(hive, chunking=chunking)

    first_zarr = Fresh(new, lambda s: zarr.open_array(s, path=f"{group}/{field}", mode="r")[:])
    first_xr = Fresh(new, xr_values)
    warm = new()
    array = zarr.open_array(warm, path=f"{group}/{field}", mode="r")
    for fn in (first_zarr, first_xr):
        fn.prepare()
        np.testing.assert_array_equal(fn(), want, err_msg=f"{chunking} first")
    np.testing.assert_array_equal(array[:], want, err_msg=f"{chunking} zarr")
    np.testing.assert_array_equal(xr_values(warm), want, err_msg=f"{chunking} xarray")
    took = alternate({
        "full floor": lambda: raw_read(first_paths),
        "chunk floor": lambda: raw_read(chunk_paths),
        "first zarr": first_zarr,
        "first xr": first_xr,
        "second zarr": lambda: array[:],
        "second xr": lambda: xr_values(warm),
    }, rounds, clock)
    cells = want.shape[0] // len(chunk_paths)
    leaf = zarr.open_array(MocHiveStore(hive, chunking="leaf"), path=f"{group}/{field}",
                           mode="r")
    leaf[:]  # stamps warm, as the store under test's
    per = random_reads(want, cells, {"leaf": leaf, "k": array}, rounds, clock)
    k = array.chunks[0] // cells
    return {
        "hive": hive.name, "chunking": chunking, "k": k,
        "chunk_mib": round(array.chunks[0] * want.itemsize / 2**20, 3),
        "chunks": array.nchunks,
        **{name: round(seconds * 1e3, 2) for name, seconds in took.items()},
        "first zarr x": round(took["first zarr"] / took["full floor"], 2),
        "first xr x": round(took["first xr"] / took["full floor"], 2),
        "second zarr x": round(took["second zarr"] / took["chunk floor"], 2),
        "second xr x": round(took["second xr"] / took["chunk floor"], 2),
        "cell ms": round(per["random single cell", "k"] * 1e3, 3),
        "cell x": round(per["random single cell", "k"] / per["random single cell", "leaf"], 2),
        "slice ms": round(per["random leaf-sized slice", "k"] * 1e3, 3),
        "slice x": round(per["random leaf-sized slice", "k"]
                         / per["random leaf-sized slice", "leaf"], 2),
    }


COLUMNS = ("hive", "chunking", "k", "chunk_mib", "chunks", "first zarr x", "first xr x",
           "second zarr x", "second xr x", "cell x", "slice x", "chunk floor", "second xr",
           "cell ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hives", nargs="+", metavar="HIVE:GROUP")
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--counts", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = []
    print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS), flush=True)
    for spec in args.hives:
        where, _, group = spec.rpartition(":")
        hive = Path(where)
        start = time.perf_counter()
        want = reference(hive, [args.field])[args.field]
        floors = tuple([f"{hive}/{p}" for p in ps]
                       for ps in scan_objects(hive, group, args.field)[:2])
        print(f"# {hive.name}: reference values and floor objects in "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        nodes = len(floors[1])
        counts = [int(c) for c in args.counts.split(",") if int(c) <= nodes]
        for chunking in (*counts, "auto"):
            got = curve_block(hive, group, args.field, chunking, want, floors, args.rounds,
                              CLOCKS[args.clock])
            rows.append(got)
            print("| " + " | ".join(str(got[c]) for c in COLUMNS) + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
