"""A bounded load test of ``moczarr-store serve`` on loopback.

    python -m benchmarks.serve_load [--hive PATH] [--group G] [--clients 200] [--requests 50]

Starts the server (``moczarr-store serve``, a subprocess, its defaults) and runs
``--clients`` concurrent clients (aiohttp, one connection each) of ``--requests``
requests, a seeded mix: metadata documents, full chunks, byte ranges of chunks, HEADs and
404s (unknown keys). Every answer is checked against the in-process store (status, and
the bytes of documents, chunks and ranges), so "errors" counts wrong answers as well as
failed requests. Reports requests/s, latency p50/p99/max and the server's RSS (before,
peak, after); the run is bounded by its request count and a deadline.

    python -m benchmarks.serve_load --soak 600 [--clients 16]

is the soak instead: ``--clients`` clients send the workload's byte-range requests
(checked as above) over and over for ``--soak`` seconds (at most 3,600) while the server's
RSS is sampled every 5 s; it reports the RSS samples' least-squares slope (MB per minute)
after the first fifth of the run (warm-up), and the RSS at its start, end and peak.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import zarr
from tests.support.processes import served
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from moczarr_store import MocHiveStore

REPO = Path(__file__).resolve().parents[1]
KINDS = ("metadata", "chunk", "range", "head", "missing")
DEADLINE = 600.0  # seconds: the whole run stops by then whatever happens


@dataclass(frozen=True)
class Request:
    kind: str
    method: str
    key: str
    headers: dict
    status: int
    body: bytes | None  # expected bytes (None: not checked)


def _local(store: MocHiveStore, key: str, byte_range=None) -> bytes | None:
    buffer = sync(store.get(key, default_buffer_prototype(), byte_range))
    return None if buffer is None else buffer.to_bytes()


def workload(hive: Path, n: int, seed: int = 0) -> list[Request]:
    """``n`` requests, a seeded mix of the five kinds, with the answers the in-process store
    gives (a chunk with nothing stored is a 404)."""
    from zarr.abc.store import RangeByteRequest

    store = MocHiveStore(hive)
    rng = random.Random(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(store, mode="r")
        nodes = [p for p, _ in root.members(max_depth=None)]
        arrays = [p for p, a in root.members(max_depth=None) if isinstance(a, zarr.Array)]
        documents = {k: _local(store, k) for k in
                     ["zarr.json", *(f"{p}/zarr.json" for p in nodes)]}
        chunk_keys: list[str] = []
        for path in arrays:
            grid = root[path].cdata_shape
            chunk_keys += [f"{path}/c/" + "/".join(str(rng.randrange(g)) for g in grid)
                           for _ in range(8)]
        chunks = {k: _local(store, k) for k in chunk_keys}
    out = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        if kind == "metadata":
            key = rng.choice(sorted(documents))
            out.append(Request(kind, "GET", key, {}, 200, documents[key]))
        elif kind == "missing":
            key = rng.choice(["nope/zarr.json", f"{rng.choice(arrays)}/c/99999999",
                              "morton_hive.json", f"x{rng.randrange(10**6)}/c/0"])
            out.append(Request(kind, "GET", key, {}, 404, None))
        elif (whole := chunks[key := rng.choice(chunk_keys)]) is None:
            out.append(Request(kind, "HEAD" if kind == "head" else "GET", key, {}, 404, None))
        elif kind != "range":
            out.append(Request(kind, "HEAD" if kind == "head" else "GET", key, {}, 200,
                               b"" if kind == "head" else whole))
        else:
            start = rng.randrange(len(whole))
            end = rng.randrange(start, len(whole)) + 1
            want = _local(store, key, RangeByteRequest(start, end))
            out.append(Request(kind, "GET", key, {"Range": f"bytes={start}-{end - 1}"}, 206, want))
    rng.shuffle(out)
    return out


@dataclass
class Results:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu: float = 0.0  # the server's CPU seconds (user + system) during the load
    rss: dict[str, float] = field(default_factory=dict)

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _client(session, url: str, plan: list[Request], results: Results, stop: float):
    for request in plan:
        if time.monotonic() > stop:
            results.errors.append("deadline reached")
            return
        start = time.perf_counter()
        try:
            async with session.request(request.method, f"{url}/{request.key}",
                                       headers=request.headers) as response:
                body = await response.read()
                status = response.status
        except Exception as err:  # counted, never raised: the run goes on
            results.errors.append(f"{request.method} {request.key}: {err!r}")
            continue
        results.latencies.append(time.perf_counter() - start)
        results.statuses[status] += 1
        if status != request.status or (request.body is not None and body != request.body):
            results.errors.append(f"{request.method} {request.key} {request.headers}: "
                                  f"{status}, {len(body)} bytes (want {request.status})")


async def _load(url: str, plans: list[list[Request]], results: Results) -> None:
    import aiohttp

    stop = time.monotonic() + DEADLINE
    connector = aiohttp.TCPConnector(limit=len(plans), force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.perf_counter()
        await asyncio.gather(*(_client(session, url, plan, results, stop) for plan in plans))
        results.seconds = time.perf_counter() - start


@contextlib.contextmanager
def _sampled(pid: int, every: float, samples: list[tuple[float, float]]):
    """The server's RSS (MB) appended to ``samples`` as ``(seconds, MB)`` every ``every``
    seconds, on a thread, while the block runs."""
    server, done, start = psutil.Process(pid), threading.Event(), time.monotonic()

    def sample() -> None:
        while True:
            with contextlib.suppress(psutil.Error):
                samples.append((time.monotonic() - start, server.memory_info().rss / 2**20))
            if done.wait(every):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield server
    finally:
        done.set()
        sampler.join(10)


def run(hive: Path, clients: int = 200, requests: int = 50, seed: int = 0) -> Results:
    """The load test: ``clients`` concurrent clients x ``requests`` requests each."""
    work = workload(hive, clients * requests, seed)
    plans = [work[i::clients] for i in range(clients)]
    results, samples = Results(), []
    with served(hive, "--stamp-ttl", "600") as (url, pid), _sampled(pid, 0.05, samples) as server:
        cpu = sum(server.cpu_times()[:2])
        asyncio.run(_load(url, plans, results))
        results.cpu = sum(server.cpu_times()[:2]) - cpu
        results.rss["after"] = server.memory_info().rss / 2**20
    rss = [m for _, m in samples]
    results.rss.update(before=rss[0], peak=max(rss))
    return results


def soak(hive: Path, seconds: float, clients: int = 16, seed: int = 0) -> dict:
    """Range reads for ``seconds`` (bounded by 3,600): requests, errors, RSS samples
    ``[(t, MB)]`` and the slope (MB/min) after a warm-up of a fifth of the run."""
    import aiohttp

    seconds = min(seconds, 3600.0)
    ranges = [r for r in workload(hive, 2000, seed) if r.kind == "range" and r.status == 206]
    results, samples = Results(), []

    async def forever(url: str) -> None:
        stop = time.monotonic() + seconds
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:

            async def client(i: int) -> None:
                while time.monotonic() < stop:
                    await _client(session, url, ranges[i::clients], results, stop + 60)

            await asyncio.gather(*(client(i) for i in range(clients)))

    with served(hive, "--stamp-ttl", "600") as (url, pid), _sampled(pid, 5.0, samples):
        asyncio.run(forever(url))
    steady = [(t / 60, m) for t, m in samples if t >= seconds / 5]
    slope = float("nan")
    if len(steady) >= 2:
        import numpy as np

        slope = float(np.polyfit(*zip(*steady, strict=True), 1)[0])
    return {"seconds": seconds, "requests": len(results.latencies), "errors": results.errors,
            "samples": samples, "slope": slope, "p50": results.quantile(0.5),
            "p99": results.quantile(0.99)}


def soak_report(out: dict, clients: int) -> str:
    rss = [m for _, m in out["samples"]]
    return (
        f"| soak: {clients} clients, range reads for {out['seconds']:.0f} s | "
        f"{out['requests']} requests ({out['requests'] / out['seconds']:.0f}/s), "
        f"p50 {out['p50'] * 1e3:.1f} ms, p99 {out['p99'] * 1e3:.1f} ms, "
        f"{len(out['errors'])} errors | server RSS {rss[0]:.1f} MB at start, "
        f"{rss[-1]:.1f} MB at end, {max(rss):.1f} MB peak; slope after warm-up "
        f"{out['slope']:+.3f} MB/min ({len(rss)} samples) |"
    )


def report(results: Results, clients: int, requests: int) -> str:
    total = len(results.latencies)
    return (
        f"| load: {clients} clients x {requests} requests | "
        f"{total / results.seconds:.0f} requests/s, p50 {results.quantile(0.5) * 1e3:.1f} ms, "
        f"p99 {results.quantile(0.99) * 1e3:.1f} ms, max {max(results.latencies) * 1e3:.0f} ms; "
        f"server CPU {results.cpu / max(total, 1) * 1e3:.2f} ms/request | "
        f"{len(results.errors)} errors; statuses {dict(sorted(results.statuses.items()))} | "
        f"server RSS {results.rss['before']:.0f} MB before, {results.rss['peak']:.0f} MB peak, "
        f"{results.rss['after']:.0f} MB after |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_load", description=__doc__)
    parser.add_argument("--hive", type=Path, default=REPO / "fixtures" / "sharded")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--soak", type=float, default=0.0, metavar="SECONDS",
                        help="run the range-read soak for this long instead (clients: 16)")
    args = parser.parse_args(argv)
    if args.soak:
        clients = args.clients if "--clients" in (argv or sys.argv) else 16
        out = soak(args.hive, args.soak, clients, args.seed)
        print(soak_report(out, clients))
        errors = out["errors"]
    else:
        results = run(args.hive, args.clients, args.requests, args.seed)
        print(report(results, args.clients, args.requests))
        errors = results.errors
    for error in errors[:20]:
        print("error:", error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
