"""Leaves per chunk against every read the default must serve well: the curve that
chooses ``chunking="auto"``'s rule (``leaves_per_chunk`` in ``view/arrays.py``).

    python -m benchmarks.chunk_curve HIVE:GROUP [HIVE:GROUP ...] [--field F] [--counts 1,4,...]
        [--rounds 5] [--clock wall|cpu] [--json OUT]

For each count ``k`` of leaves per chunk (``chunking=k``) and ``"auto"``,
in its own block (spans kept mapped from earlier blocks let go first), each round times in
turn: the full floor and the chunk floor (raw reads of the objects a first and a second
scan read, as ``targets.py`` defines them), a first scan on a new store (zarr ``[:]`` and
``xr.open_zarr(store, group=g)[field].values``), a second scan on one store (the same two),
and random single cells and leaf-sized slices against ``"leaf"``'s (as ``run._random_reads``).
Each figure is the best of ``rounds``; ratios are to the floors and ``"leaf"`` of the same
block. ``--clock cpu`` times in this process's CPU seconds: on a machine shared with other
work the ratios then move less with its load. Every configuration's values are checked
equal to ``moczarr.open_hive``'s first (on 2,100 leaves that takes minutes).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from moczarr_store import MocHiveStore, mapped


def _open_xr(store: MocHiveStore, group: str) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(store, group=group)


def _reference(hive: Path, field: str) -> np.ndarray:
    """The oracle's values of ``field`` (``moczarr.open_hive``)."""
    import moczarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = moczarr.open_hive(str(hive))
    out = np.asarray(ds[field].values)
    del ds
    gc.collect()
    return out


def _floor_objects(hive: Path, group: str, field: str) -> tuple[list[str], list[str]]:
    """The objects a first scan reads (stamp, version metadata, chunk) and a second scan
    reads (the chunks), recorded at the local reader of a ``"leaf"`` store."""
    from benchmarks.run import _record_reads

    store = MocHiveStore(hive, chunking="leaf")
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    reads = _record_reads(store)
    array[:]
    first = [f"{hive}/{path}" for path, _ in reads]
    reads.clear()
    array[:]
    return first, [f"{hive}/{path}" for path, _ in reads]


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""``cpu``: this process's CPU time (every thread): on a machine shared with other work it
counts our cost, not the others' (a read's waits and its use of a second core not counted)."""


def _alternate(fns: dict, rounds: int, clock) -> dict[str, float]:
    """The best of ``rounds`` times of each of ``fns`` (``prepare()`` untimed first), timed
    in turn within each round."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            if hasattr(fn, "prepare"):
                fn.prepare()
            start = clock()
            fn()
            times[name].append(clock() - start)
    return {name: min(seconds) for name, seconds in times.items()}


def _random(want: np.ndarray, cells: int, arrays: dict[str, zarr.Array], rounds: int,
            clock) -> dict[tuple[str, str], float]:
    """Seconds per read of 300 random single cells and 100 random leaf-sized slices (as
    ``run._random_reads``: the same seed, values checked first), with ``clock``."""
    rng = np.random.default_rng(0)
    points = [int(i) for i in rng.integers(0, want.shape[0], 300)]
    starts = [int(s) * cells for s in rng.integers(0, want.shape[0] // cells, 100)]
    fns, counts = {}, {}
    for kind, (at, size) in {"random single cell": (points, 1),
                             "random leaf-sized slice": (starts, cells)}.items():
        for name, array in arrays.items():
            def read(array=array, at=at, size=size):
                return [array[i : i + size] for i in at]
            for i, got in zip(at, read(), strict=True):
                np.testing.assert_array_equal(got, want[i : i + size], err_msg=name)
            fns[kind, name], counts[kind, name] = read, len(at)
    took = _alternate(fns, rounds, clock)
    return {key: seconds / counts[key] for key, seconds in took.items()}


class _Fresh:
    """A timed read on a new store each time (the store made untimed, in ``prepare``)."""

    def __init__(self, hive: Path, chunking: str | int, read) -> None:
        self.hive, self.chunking, self.read = hive, chunking, read
        self.store: MocHiveStore | None = None

    def prepare(self) -> None:
        self.store = MocHiveStore(self.hive, chunking=self.chunking)
        gc.collect()

    def __call__(self):
        assert self.store is not None
        return self.read(self.store)


def curve_block(hive: Path, group: str, field: str, chunking: str | int, want: np.ndarray,
                floors: tuple[list[str], list[str]], rounds: int, clock) -> dict:
    """One point of the curve: ``chunking``'s reads and the floors, timed in turn."""
    from benchmarks.run import _raw

    mapped.release()
    gc.collect()
    first_paths, chunk_paths = floors

    def zarr_scan(s: MocHiveStore):
        return zarr.open_array(s, path=f"{group}/{field}", mode="r")[:]

    def xr_values(s: MocHiveStore):
        return _open_xr(s, group)[field].values

    first_zarr, first_xr = _Fresh(hive, chunking, zarr_scan), _Fresh(hive, chunking, xr_values)
    warm = MocHiveStore(hive, chunking=chunking)
    array = zarr.open_array(warm, path=f"{group}/{field}", mode="r")
    for fn in (first_zarr, first_xr):
        fn.prepare()
        np.testing.assert_array_equal(fn(), want, err_msg=f"{chunking} first")
    np.testing.assert_array_equal(array[:], want, err_msg=f"{chunking} zarr")
    np.testing.assert_array_equal(xr_values(warm), want, err_msg=f"{chunking} xarray")
    took = _alternate({
        "full floor": lambda: _raw(first_paths),
        "chunk floor": lambda: _raw(chunk_paths),
        "first zarr": first_zarr,
        "first xr": first_xr,
        "second zarr": lambda: array[:],
        "second xr": lambda: xr_values(warm),
    }, rounds, clock)
    cells = want.shape[0] // len(chunk_paths)
    leaf = zarr.open_array(MocHiveStore(hive, chunking="leaf"), path=f"{group}/{field}",
                           mode="r")
    leaf[:]  # stamps warm, as the store under test's
    per = _random(want, cells, {"leaf": leaf, "k": array}, rounds, clock)
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
        want = _reference(hive, args.field)
        floors = _floor_objects(hive, group, args.field)
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
