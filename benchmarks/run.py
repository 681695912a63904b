"""The performance harness: every measure as a ratio against its anchors, in one run.

    python -m benchmarks.run --quick                     # committed fixture, < 1 minute
    python -m benchmarks.run --hive H --plain P [--scale100k S --scale1m S] [--group G]

Anchors are ``moczarr.open_hive`` (the reference reader) and a plain zarr v3 copy of the
same data (``benchmarks/make_plain_copy.py``: same chunks and codecs, no virtualisation).
Absolute times are printed, never asserted: the machines are shared and noisy, so each
figure is taken as the best of a few repeats and compared within the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from moczarr_store import MocHiveStore
from moczarr_store.backend import Backend

REPO = Path(__file__).resolve().parents[1]
MODES = ("shard", "leaf", "inner")
ROWS: list[tuple[str, str, str, str]] = []


def row(measure: str, ours: str, anchor: str, ratio: str) -> None:
    ROWS.append((measure, ours, anchor, ratio))
    print(f"| {measure} | {ours} | {anchor} | {ratio} |", flush=True)


def best(fn, repeat: int = 3) -> tuple[float, object]:
    """The fastest of ``repeat`` runs of ``fn()`` (seconds) and its last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def moczarr_open(hive: Path):
    import moczarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return moczarr.open_hive(str(hive))


def open_ours(hive: Path, group: str, **options) -> tuple[xr.Dataset, MocHiveStore]:
    store = MocHiveStore(hive, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(store, group=group), store


# -- 1. open ---------------------------------------------------------------------------


def measure_open(hive: Path, plain: Path, group: str) -> None:
    ours, (_ds, store) = best(lambda: open_ours(hive, group))
    ref, _ = best(lambda: moczarr_open(hive), repeat=1)
    flat, _ = best(lambda: xr.open_zarr(plain))
    row(
        "open: wall time",
        f"{ours * 1e3:.1f} ms",
        f"moczarr {ref * 1e3:.0f} ms",
        f"{ref / ours:.0f}x faster",
    )
    row(
        "open: vs plain zarr",
        f"{ours * 1e3:.1f} ms",
        f"plain {flat * 1e3:.1f} ms",
        f"{ours / flat:.2f}x the plain open",
    )
    row("open: backend requests", f"{store.request_stats.total}", "-", "constant in leaves")


# -- 2. full reads ---------------------------------------------------------------------


def _nbytes(ds: xr.Dataset, names: list[str]) -> int:
    return sum(ds[n].nbytes for n in names)


def measure_full_reads(hive: Path, plain: Path, group: str, field: str) -> None:
    """One field in every chunking mode; all fields in the default mode (the other modes
    read the sharded layout as slowly as the plain copy does, so one field shows it)."""
    flat = xr.open_zarr(plain)
    fields = [n for n in flat.data_vars if n not in ("morton", "cell_ids")]
    for label, names, modes in ((f"one field ({field})", [field], MODES),
                                ("all fields", fields, (DEFAULT,))):
        size = _nbytes(flat, names) / 1e6
        t_plain, _ = best(lambda names=names: [flat[n].values for n in names], repeat=1)
        for mode in modes:
            ds, _store = open_ours(hive, group, chunking=mode)
            t_ours, _ = best(lambda ds=ds, names=names: [ds[n].values for n in names],
                             repeat=3 if mode == DEFAULT else 1)
            row(f"full read, {label}, chunking={mode}", f"{size / t_ours:.3g} MB/s",
                f"plain {size / t_plain:.3g} MB/s", f"{t_plain / t_ours:.2f}x plain")
        ref = moczarr_open(hive)
        t_ref, _ = best(lambda names=names, ref=ref: [ref[n].values for n in names], repeat=1)
        ds, _store = open_ours(hive, group, chunking=DEFAULT)
        t_ours, _ = best(lambda ds=ds, names=names: [ds[n].values for n in names])
        row(f"full read, {label}, vs moczarr", f"{size / t_ours:.3g} MB/s",
            f"moczarr {size / t_ref:.3g} MB/s", f"{t_ref / t_ours:.0f}x moczarr")


# -- 3. random access ------------------------------------------------------------------


def measure_random(hive: Path, plain: Path, group: str, field: str, cells: int) -> None:
    rng = np.random.default_rng(0)
    flat = zarr.open_group(plain, mode="r")[field]
    n = flat.shape[0]
    points = rng.integers(0, n, 1000)
    starts = rng.integers(0, max(1, n // cells), 100) * cells
    t_plain_pt, _ = best(lambda: [flat[int(i)] for i in points], repeat=1)
    t_plain_sl, _ = best(lambda: [flat[int(s) : int(s) + cells] for s in starts], repeat=1)
    for mode in MODES:
        array = zarr.open_group(MocHiveStore(hive, chunking=mode), mode="r")[f"{group}/{field}"]
        [array[int(i)] for i in points[:50]]  # warm the stamp cache for a fair comparison
        t_pt, _ = best(lambda array=array: [array[int(i)] for i in points], repeat=1)
        t_sl, _ = best(
            lambda array=array: [array[int(s) : int(s) + cells] for s in starts], repeat=1
        )
        row(
            f"random: 1,000 single cells, chunking={mode}",
            f"{t_pt * 1e3 / 1000:.2f} ms/read",
            f"plain {t_plain_pt * 1e3 / 1000:.2f} ms/read",
            f"{t_plain_pt / t_pt:.2f}x plain",
        )
        row(
            f"random: 100 leaf slices, chunking={mode}",
            f"{t_sl * 1e3 / 100:.2f} ms/read",
            f"plain {t_plain_sl * 1e3 / 100:.2f} ms/read",
            f"{t_plain_sl / t_sl:.2f}x plain",
        )


# -- 4. requests -----------------------------------------------------------------------


def measure_requests(hive: Path, group: str, field: str) -> None:
    for mode in MODES:
        store = MocHiveStore(hive, chunking=mode)
        array = zarr.open_group(store, mode="r")[f"{group}/{field}"]
        leaves = store._shared.hive.products[0].levels[0].n_shards
        store.request_stats.reset()
        array[:]
        cold = store.request_stats.total
        store.request_stats.reset()
        array[:]
        warm = store.request_stats.total
        row(
            f"requests per leaf, full scan of {field}, chunking={mode}",
            f"cold {cold / leaves:.2f}, warm {warm / leaves:.2f}",
            f"{leaves} leaves",
            "1 stamp GET per leaf on the cold scan",
        )


# -- 5. fabrication --------------------------------------------------------------------


def _drain(array) -> None:
    """Fabricate every chunk, dropping each as zarr does once it is decoded."""
    for i in range(array.grid[0]):
        array.fabricate((i,))


def measure_fabrication(hive: Path, group: str) -> None:
    import mortie

    store = MocHiveStore(hive)
    view = asyncio.run(store.view())
    for name in ("morton", "cell_ids"):
        array = view.arrays[f"{group}/{name}"]
        cells = array.meta["shape"][0]
        t, _ = best(lambda array=array: _drain(array), 5)
        words = np.frombuffer(view.arrays[f"{group}/morton"].fabricate((0,)), dtype="<u8")
        words = words[words != 0]
        t_ref, _ = best(lambda words=words: mortie.mort2healpix(words), 5)
        row(
            f"fabrication: {name}",
            f"{t * 1e9 / cells:.2f} ns/cell",
            f"mortie.mort2healpix {t_ref * 1e9 / words.size:.2f} ns/cell",
            f"{(t_ref / words.size) / (t / cells):.1f}x mortie",
        )


# -- 6. latency ------------------------------------------------------------------------


class SlowBackend(Backend):
    """Adds a fixed latency to every request, inside the concurrency cap."""

    delay = 0.05

    async def _call(self, kind, coro_fn, *args, **kwargs):
        async def slow(*a, **k):
            await asyncio.sleep(self.delay)
            return await coro_fn(*a, **k)

        return await super()._call(kind, slow, *args, **kwargs)


def measure_latency(hive: Path, group: str, field: str) -> None:
    for cap in (8, 32, 128):
        store = MocHiveStore(hive, chunking=DEFAULT, max_concurrency=cap)
        store.backend.__class__ = SlowBackend
        with zarr.config.set({"async.concurrency": 1024}):
            array = zarr.open_group(store, mode="r")[f"{group}/{field}"]
            store.request_stats.reset()
            start = time.perf_counter()
            array[:]
            took = time.perf_counter() - start
        requests = store.request_stats.total
        ideal = math.ceil(requests / cap) * SlowBackend.delay
        row(
            f"latency 50 ms/request, concurrency {cap}",
            f"{took:.2f} s ({requests} requests)",
            f"ideal {ideal:.2f} s",
            f"{took / ideal:.2f}x ideal",
        )


# -- 7. scale --------------------------------------------------------------------------


def measure_scale(hive: Path, label: str) -> None:
    code = (
        "import resource, time, warnings, zarr; from moczarr_store import MocHiveStore\n"
        "warnings.simplefilter('ignore'); t = time.perf_counter()\n"
        f"s = MocHiveStore({str(hive)!r}); g = zarr.open_group(s, mode='r')\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
        " s.request_stats.total)"
    )
    base = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, zarr, moczarr_store;"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    seconds, rss, requests = float(out[0]), int(out[1]) / 1024, out[2]
    row(
        f"scale: open {label}",
        f"{seconds * 1e3:.0f} ms, peak RSS {rss:.0f} MB",
        f"import alone {int(base.stdout) / 1024:.0f} MB",
        f"{requests} requests",
    )


# -- 8. dask ---------------------------------------------------------------------------


def measure_dask(hive: Path, plain: Path, group: str, field: str) -> None:
    import distributed

    ds, _ = open_ours(hive, group, chunking=DEFAULT)
    flat = xr.open_zarr(plain)
    t_ours, total = best(lambda: float(ds[field].sum().compute()))
    t_plain, expected = best(lambda: float(flat[field].sum().compute()))
    assert total == expected, (total, expected)
    row(
        f"dask threads: {field}.sum()",
        f"{t_ours * 1e3:.0f} ms",
        f"plain {t_plain * 1e3:.0f} ms",
        f"{t_plain / t_ours:.2f}x plain",
    )
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster),
    ):
        t_ours, total = best(lambda: float(ds[field].sum().compute()))
        t_plain, _ = best(lambda: float(flat[field].sum().compute()))
    assert total == expected
    row(
        f"dask.distributed 2 processes: {field}.sum()",
        f"{t_ours * 1e3:.0f} ms",
        f"plain {t_plain * 1e3:.0f} ms",
        f"{t_plain / t_ours:.2f}x plain",
    )


DEFAULT = "leaf"


def run(hive: Path, plain: Path, group: str, field: str, scales: dict[str, Path]) -> None:
    level = asyncio.run(MocHiveStore(hive).hive()).products[0].levels[0]
    print(
        f"# hive {hive}: {level.n_shards} leaves x {level.cells_per_shard} cells, "
        f"group {group}, field {field}, {os.cpu_count()} cores\n"
    )
    print("| measure | ours | anchor | ratio |\n|---|---|---|---|")
    measure_open(hive, plain, group)
    measure_full_reads(hive, plain, group, field)
    measure_random(hive, plain, group, field, level.cells_per_shard)
    measure_requests(hive, group, field)
    measure_fabrication(hive, group)
    measure_latency(hive, group, field)
    for label, path in scales.items():
        measure_scale(path, label)
    measure_dask(hive, plain, group, field)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the committed sharded fixture")
    parser.add_argument("--hive", type=Path)
    parser.add_argument("--plain", type=Path)
    parser.add_argument("--group")
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--scale100k", type=Path)
    parser.add_argument("--scale1m", type=Path)
    args = parser.parse_args(argv)
    scales = {
        k: v
        for k, v in (("100,000 shards", args.scale100k), ("1,000,000 shards", args.scale1m))
        if v
    }
    if args.quick:
        hive = REPO / "fixtures" / "sharded"
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain"
            subprocess.run(
                [
                    sys.executable,
                    str(REPO / "benchmarks" / "make_plain_copy.py"),
                    str(hive),
                    str(plain),
                    "--group",
                    "atl06/o7",
                ],
                check=True,
            )
            run(hive, plain, "atl06/o7", args.field, scales)
            shutil.rmtree(plain)
        return 0
    if not (args.hive and args.plain and args.group):
        parser.error("--hive, --plain and --group are needed without --quick")
    run(args.hive, args.plain, args.group, args.field, scales)
    return 0


if __name__ == "__main__":
    sys.exit(main())
