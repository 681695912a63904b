"""The harness's measures but the warm local reads (``local_reads.py``): open, full and
random reads against a plain copy and moczarr, requests, fabrication, latency, scale, dask,
verify, serve and S3, one row each as ``| measure | ours | anchor | ratio |``."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import math
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from zarr.core.buffer import default_buffer_prototype

from benchmarks.common import (
    DEFAULT,
    SlowBackend,
    alternate,
    best,
    cold_scan,
    open_xr,
    raw_gets,
    raw_read,
    record_reads,
    scan_objects,
    unlike,
)
from moczarr_store import MocHiveStore

REPO = Path(__file__).resolve().parents[1]
MODES = ("shard", "leaf", "inner", "span")
COORDS = ("morton", "cell_ids")
ROWS: list[tuple[str, str, str, str]] = []


@dataclass(frozen=True)
class Run:
    """What every measure is given: the hive, its plain copy, the group and field read, the
    part the slow anchors read (``where`` says which), cells per leaf, the scale hives."""

    hive: Path
    plain: Path
    group: str
    field: str
    part: slice
    where: str
    cells: int
    scales: dict[str, Path]


def row(measure: str, ours: str, anchor: str, ratio: str) -> None:
    ROWS.append((measure, ours, anchor, ratio))
    print(f"| {measure} | {ours} | {anchor} | {ratio} |", flush=True)


def open_ours(hive: Path, group: str, **options) -> tuple[xr.Dataset, MocHiveStore]:
    store = MocHiveStore(hive, **options)
    return open_xr(store, group), store


def _read(ds, names: list[str], part: slice | None = None) -> list[np.ndarray]:
    return [(ds[n] if part is None else ds[n].isel(cells=part)).values for n in names]


def _same(got: list, want: list, what: str) -> None:
    for one, other in zip(got, want, strict=True):
        np.testing.assert_array_equal(one, other, err_msg=what)


def measure_open(r: Run) -> None:
    ours, (_ds, store) = best(lambda: open_ours(r.hive, r.group))
    flat, _ = best(lambda: xr.open_zarr(r.plain))
    row("open: vs plain zarr", f"{ours * 1e3:.1f} ms", f"plain {flat * 1e3:.1f} ms",
        f"{ours / flat:.2f}x the plain open")
    direct = MocHiveStore(r.hive)
    open_xr(direct, r.group, consolidated=False)
    levels = len(asyncio.run(direct.hive()).products[0].levels)
    row("open: backend requests", f"{store.request_stats.total} (xr.open_zarr); "
        f"{direct.request_stats.total} (consolidated=False)", "-",
        f"constant in leaves; the root document consolidates every level ({levels}), "
        "one group's needs only its own")


def measure_full_reads(r: Run) -> None:
    """Whole hive: ours in the default mode against the plain copy read by zarr directly (no
    dask). On ``r.part``: every mode against the plain copy through xarray (one dask task
    per inner chunk). All fields in the default mode only (the other modes read the
    sharded layout as slowly as the plain copy does, so one field shows it)."""
    flat, direct = xr.open_zarr(r.plain), zarr.open_group(r.plain, mode="r")
    fields = [n for n in flat.data_vars if n not in COORDS]
    for label, names, modes in ((f"one field ({r.field})", [r.field], MODES),
                                ("all fields", fields, (DEFAULT,))):
        width = sum(flat[n].dtype.itemsize for n in names) / 1e6  # MB per cell
        size = width * flat.sizes["cells"]
        ds, _store = open_ours(r.hive, r.group, chunking=DEFAULT)
        t_ours, got = best(lambda ds=ds, names=names: _read(ds, names))
        t_plain, want = best(lambda names=names: [direct[n][:] for n in names], repeat=1)
        _same(got, want, f"full read, {label}")
        row(f"full read, {label}, whole hive, chunking={DEFAULT}", f"{size / t_ours:.3g} MB/s",
            f"plain, zarr direct {size / t_plain:.3g} MB/s",
            f"{t_plain / t_ours:.2f}x plain, zarr direct")
        size = width * (r.part.stop - r.part.start)
        t_plain, want = best(lambda names=names: _read(flat, names, r.part), repeat=1)
        for mode in modes:
            ds, _store = open_ours(r.hive, r.group, chunking=mode)
            t_ours, got = best(lambda ds=ds, names=names: _read(ds, names, r.part),
                               repeat=3 if mode == DEFAULT else 1)
            _same(got, want, f"full read, {label}, chunking={mode}")
            row(f"full read, {label}, {r.where}, chunking={mode}", f"{size / t_ours:.3g} MB/s",
                f"plain {size / t_plain:.3g} MB/s", f"{t_plain / t_ours:.2f}x plain")


def measure_moczarr(r: Run) -> None:
    """Ours against ``moczarr.open_hive``: open, and reads of ``r.part``. moczarr runs last
    and is dropped after: its ~2 M Python objects (4,096 leaves) slow every measure taken
    while they live, as each full garbage-collection pass walks them."""
    import moczarr

    ours_open, (ds, _store) = best(lambda: open_ours(r.hive, r.group))
    fields = [n for n in ds.data_vars if n not in COORDS]
    cases = ((f"one field ({r.field})", [r.field]), ("all fields", fields))
    ours = {label: best(lambda names=names: _read(ds, names, r.part)) for label, names in cases}
    with warnings.catch_warnings(action="ignore"):
        ref_open, ref = best(lambda: moczarr.open_hive(str(r.hive)), repeat=1)
    row("open: wall time", f"{ours_open * 1e3:.1f} ms", f"moczarr {ref_open * 1e3:.0f} ms",
        f"{ref_open / ours_open:.0f}x faster")
    for label, names in cases:
        size = sum(ds[n].dtype.itemsize for n in names) / 1e6 * (r.part.stop - r.part.start)
        t_ref, want = best(lambda names=names, ref=ref: _read(ref, names, r.part), repeat=1)
        (t_ours, got) = ours[label]
        _same(got, want, f"full read, {label}, vs moczarr")
        row(f"full read, {label}, {r.where}, vs moczarr", f"{size / t_ours:.3g} MB/s",
            f"moczarr {size / t_ref:.3g} MB/s", f"{t_ref / t_ours:.0f}x moczarr")
    del ref
    gc.collect()


def measure_random(r: Run) -> None:
    """1,000 single cells and 100 leaf slices in each mode against the plain copy."""
    rng = np.random.default_rng(0)
    flat = zarr.open_group(r.plain, mode="r")[r.field]
    points = [int(i) for i in rng.integers(0, flat.shape[0], 1000)]
    starts = [int(s) * r.cells for s in rng.integers(0, max(1, flat.shape[0] // r.cells), 100)]
    kinds = {"1,000 single cells": points,
             "100 leaf slices": [slice(s, s + r.cells) for s in starts]}
    plain = {kind: best(lambda at=at: [flat[s] for s in at], repeat=1)[0]
             for kind, at in kinds.items()}
    for mode in MODES:
        array = zarr.open_group(MocHiveStore(r.hive, chunking=mode), mode="r")[
            f"{r.group}/{r.field}"]
        [array[i] for i in points[:50]]  # warm the stamp cache for a fair comparison
        for kind, at in kinds.items():
            t, _ = best(lambda at=at, array=array: [array[s] for s in at], repeat=1)
            row(f"random: {kind}, chunking={mode}", f"{t * 1e3 / len(at):.2f} ms/read",
                f"plain {plain[kind] * 1e3 / len(at):.2f} ms/read", f"{plain[kind] / t:.2f}x plain")


def measure_requests(r: Run) -> None:
    """A scan of the whole hive; in ``inner`` mode (a request per inner chunk) of ``r.part``."""
    for mode in MODES:
        store = MocHiveStore(r.hive, chunking=mode)
        array = zarr.open_group(store, mode="r")[f"{r.group}/{r.field}"]
        scan = r.part if mode == "inner" else slice(0, array.shape[0])
        leaves = (scan.stop - scan.start) // r.cells
        counts = []
        for _ in ("cold", "warm"):
            store.request_stats.reset()
            array[scan]
            counts.append(store.request_stats.total / leaves)
        row(f"requests per leaf, scan of {r.field} "
            f"({r.where if mode == 'inner' else 'whole hive'}), chunking={mode}",
            f"cold {counts[0]:.2f}, warm {counts[1]:.2f}", f"{leaves} leaves",
            "cold: 1 stamp GET + 1 leaf-metadata GET (concurrent with the chunk) per leaf")


def measure_fabrication(r: Run) -> None:
    """Every chunk of the coordinates fabricated (each dropped, as zarr does once decoded),
    against mortie's conversion of the same words."""
    import mortie

    view = asyncio.run(MocHiveStore(r.hive).view())
    words = np.frombuffer(view.arrays[f"{r.group}/morton"].fabricate((0,)), dtype="<u8")
    words = words[words != 0]
    t_ref, _ = best(lambda: mortie.mort2healpix(words), 5)
    for name in COORDS:
        array = view.arrays[f"{r.group}/{name}"]
        cells = array.meta.shape[0]
        t, _ = best(lambda array=array: [array.fabricate((i,)) for i in range(array.grid[0])], 5)
        row(f"fabrication: {name}", f"{t * 1e9 / cells:.2f} ns/cell",
            f"mortie.mort2healpix {t_ref * 1e9 / words.size:.2f} ns/cell",
            f"{(t_ref / words.size) / (t / cells):.1f}x mortie")


def measure_latency(r: Run) -> None:
    """A cold scan with 50 ms added per request, against ``ideal`` (the requests in waves of
    ``cap``) and against the same scan with no added latency (the CPU's share). At 128 in
    flight, also into an output array written before (zarr's ``out=``): the first writes to
    a new array's memory are page faults on zarr's side, whatever the store, and they hold
    up the event loop that ends the waits."""
    want = zarr.open_group(MocHiveStore(r.hive), mode="r")[f"{r.group}/{r.field}"][:]
    reused = default_buffer_prototype().nd_buffer.from_numpy_array(np.ones_like(want))
    for cap, out in ((8, None), (32, None), (128, None), (128, reused)):
        floor, _, _ = cold_scan(r.hive, r.group, r.field, cap, 0.0, out)
        if out is not None:
            unlike(out, want)
        took, requests, got = cold_scan(r.hive, r.group, r.field, cap, SlowBackend.delay, out)
        np.testing.assert_array_equal(got, want, err_msg=f"latency, {cap} in flight")
        ideal = math.ceil(requests / cap) * SlowBackend.delay
        row(f"latency 50 ms/request, concurrency {cap}"
            f"{'' if out is None else ', into a reused output array'}",
            f"{took:.2f} s ({requests} requests)",
            f"ideal {ideal:.2f} s, no added latency {floor:.2f} s",
            f"{took / ideal:.2f}x ideal, {took / max(ideal, floor):.2f}x max(ideal, floor)")


# Peak RSS in MB: VmHWM, as ru_maxrss on Linux keeps the parent's peak across fork/exec.
PEAK = """
import sys
def peak():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
    except OSError:
        import resource
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return rss / 2**20 if sys.platform == "darwin" else rss / 1024
"""


def _python(code: str) -> list[str]:
    args = [sys.executable, "-c", PEAK + code]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()


def measure_scale(r: Run) -> None:
    """Each scale hive opened in a new process: time, peak RSS and requests."""
    (base,) = _python("import zarr, moczarr_store; print(peak())") if r.scales else (0,)
    for label, hive in r.scales.items():
        seconds, rss, requests = _python(
            "import time, warnings, zarr; from moczarr_store import MocHiveStore\n"
            "warnings.simplefilter('ignore'); t = time.perf_counter()\n"
            f"s = MocHiveStore({str(hive)!r}); g = zarr.open_group(s, mode='r')\n"
            "print(time.perf_counter() - t, peak(), s.request_stats.total)")
        row(f"scale: open {label}", f"{float(seconds) * 1e3:.0f} ms, peak RSS {float(rss):.0f} MB",
            f"import alone {float(base):.0f} MB", f"{requests} requests")


def measure_dask(r: Run) -> None:
    """``sum()`` of one field; the plain copy with one dask chunk per shard (not per inner
    chunk), so both graphs have the same chunk boundaries and give the same float total."""
    import distributed
    from tests.support.workers import keep_backends, requests_made

    ds, _ = open_ours(r.hive, r.group, chunking=DEFAULT)
    flat = open_xr(r.plain, chunks={"cells": r.cells})

    def sums(label: str, repeat: int) -> None:
        t_ours, total = best(lambda: float(ds[r.field].sum().compute()))
        t_plain, expected = best(lambda: float(flat[r.field].sum().compute()), repeat)
        assert total == expected, (total, expected)
        row(f"{label}: {r.field}.sum()", f"{t_ours * 1e3:.0f} ms",
            f"plain, a dask chunk per shard {t_plain * 1e3:.0f} ms",
            f"{t_plain / t_ours:.2f}x plain")

    sums("dask threads", 3)
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
          distributed.Client(cluster) as client):
        client.run(keep_backends)
        want = float(ds[r.field].sum().compute(scheduler="threads"))
        fresh, _ = open_ours(r.hive, r.group, chunking=DEFAULT)  # a store no worker has seen
        first = None
        for compute in (1, 2, 3):  # a copy of the store unpickled on a worker for each
            before = sum(client.run(requests_made).values())
            took, total = best(lambda: float(fresh[r.field].sum().compute()), 1)
            assert total == want, (total, want)
            made = sum(client.run(requests_made).values()) - before
            first = first or made
            row(f"dask.distributed 2 processes: {r.field}.sum(), compute {compute}",
                f"{took * 1e3:.0f} ms", f"{made:,} requests at the workers",
                f"{made / first:.2f}x compute 1's requests")
        sums("dask.distributed 2 processes", 1)


def _bare_reads(root: Path, reads: list[tuple[str, object]]) -> int:
    """The objects read with bare syscalls (open, fstat, preadv, close), and the link check
    of the first object of each directory (the store checks each once: the open file's
    real path, one ``readlink``): bytes read."""
    from moczarr_store.io.ranges import byte_bounds

    seen, total = set(), 0
    for path, option in reads:
        fd = os.open(f"{root}/{path}", os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if (directory := path.rpartition("/")[0]) not in seen:
                seen.add(directory)
                os.readlink(f"/proc/self/fd/{fd}")
            start, end = byte_bounds(option, os.fstat(fd).st_size)
            total += os.preadv(fd, [bytearray(end - start)], start)
        finally:
            os.close(fd)
    return total


def measure_verify(r: Run, rounds: int = 5) -> None:
    """``verify_hive`` (every stamped object's content hashes recomputed through the store)
    against ``hashlib.sha256`` alone over as many bytes in as many calls (one per array),
    timed in turn ``rounds`` times, best of each; and the floor of its read path: the
    objects it read, read again with bare syscalls."""
    from moczarr_store.verify import verify_hive

    def run_verify(record: bool = False):
        store = MocHiveStore(r.hive)
        reads = record_reads(store) if record else []
        with warnings.catch_warnings(action="ignore"):
            return asyncio.run(verify_hive(store)), reads

    report, reads = run_verify(record=True)  # warms the page cache too
    if not report.ok:
        raise SystemExit(f"verify: {r.hive} does not verify: {report.failures[:3]}")
    payload = np.random.default_rng(0).bytes(report.nbytes // max(1, report.arrays))
    took = alternate({
        "verify": run_verify,
        "sha256": lambda: [hashlib.sha256(payload).hexdigest() for _ in range(report.arrays)],
        "floor": lambda: _bare_reads(r.hive, reads)}, rounds)
    seconds, anchor, floor = (took[k] for k in ("verify", "sha256", "floor"))
    mb = report.nbytes / 1e6
    row(f"verify: {report.objects:,} objects, {report.arrays:,} arrays, {mb:.1f} MB decoded",
        f"{mb / seconds:.1f} MB/s ({seconds:.2f} s)",
        f"hashlib.sha256 alone {mb / anchor:.1f} MB/s", f"{anchor / seconds:.2f}x sha256 alone")
    row(f"verify: the read path's syscalls alone ({len(reads):,} objects read bare)",
        f"{floor:.3f} s", f"sha256 alone {anchor:.3f} s", f"bound {anchor / (anchor + floor):.2f}x "
        f"serial, {min(1, anchor / floor):.2f}x with hashing overlapped")


def measure_serve(r: Run, rounds: int = 5) -> None:
    """A full read of one field through ``moczarr-store serve`` (a subprocess on loopback)
    by zarr-python over obstore's HTTPStore, against the same read in process (zarr
    directly, no dask). Both warm (stamps read), timed in turn ``rounds`` times, best of
    each; the server's CPU time per request is reported too."""
    import psutil
    from tests.support.processes import http_store, served

    in_process = 0.0
    for mode in (DEFAULT, "span"):
        local = zarr.open_group(MocHiveStore(r.hive, chunking=mode), mode="r")[
            f"{r.group}/{r.field}"]
        want = local[:]
        with served(r.hive, "--chunking", mode, "--stamp-ttl", "3600") as (url, pid):
            server = psutil.Process(pid)
            remote = zarr.open_array(http_store(url), path=f"{r.group}/{r.field}", mode="r")
            np.testing.assert_array_equal(remote[:], want)
            t_local, t_remote, cpu = [], [], []
            for _ in range(rounds):
                t_local.append(best(lambda local=local: local[:], 1)[0])
                before = sum(server.cpu_times()[:2])
                t_remote.append(best(lambda remote=remote: remote[:], 1)[0])
                cpu.append(sum(server.cpu_times()[:2]) - before)
        size, n = want.nbytes / 1e6, remote.nchunks
        in_process = in_process or min(t_local)
        row(f"serve --chunking {mode}: full read, one field ({r.field}), zarr over obstore "
            "HTTPStore", f"{size / min(t_remote):.3g} MB/s ({n} chunks; server CPU "
            f"{min(cpu) / n * 1e3:.2f} ms/request)",
            f"in-process (chunking={mode}) {size / min(t_local):.3g} MB/s",
            f"{min(t_local) / min(t_remote):.2f}x in-process, {in_process / min(t_remote):.2f}x "
            f"in-process chunking={DEFAULT}")


def measure_remote(r: Run, rounds: int = 3) -> None:
    """One field from moto's S3 server on loopback (the hive uploaded to it in this run):
    the store's warm zarr scan (stamps known, one GET per leaf) in each presented layout
    against raw concurrent obstore GETs of the same objects under the same cap on requests
    in flight, timed in turn; values checked equal to the local read."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.servers import PREFIX, S3Server, s3_options, s3_url  # the tests' loopback S3

    from moczarr_store.options import DEFAULT_MAX_CONCURRENCY

    keys = scan_objects(r.hive, r.group, r.field)[1]
    want = zarr.open_array(MocHiveStore(r.hive), path=f"{r.group}/{r.field}", mode="r")[:]
    server = S3Server()
    try:
        uploaded = server.upload_tree(r.hive, f"{PREFIX}/bench")
        options = {"storage_options": s3_options(server.url)}
        objects = MocHiveStore(s3_url("bench"), **options).backend.store
        reads = {"raw concurrent obstore GETs": lambda: raw_gets(objects, keys,
                                                                 DEFAULT_MAX_CONCURRENCY)}
        for mode in (DEFAULT, "span"):
            store = MocHiveStore(s3_url("bench"), chunking=mode, **options)
            array = zarr.open_array(store, path=f"{r.group}/{r.field}", mode="r")
            np.testing.assert_array_equal(array[:], want, err_msg=mode)  # stamps read
            reads[f"store chunking={mode!r}, zarr [:]"] = lambda a=array: a[:]
        took = alternate(reads, rounds)
    finally:
        server.stop()
    floor = took["raw concurrent obstore GETs"]
    mb = raw_read([f"{r.hive}/{k}" for k in keys]) / 1e6
    for name, seconds in took.items():
        row(f"remote (moto S3 on loopback, {uploaded:,} objects uploaded): {r.field}, "
            f"{len(keys)} leaves, {mb:.1f} MB: {name}", f"{mb / seconds:.3g} MB/s",
            f"raw GETs {mb / floor:.3g} MB/s", f"{floor / seconds:.2f}x raw")
