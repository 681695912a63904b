"""What every part of the harness shares: timing (best of, in turn), the reads a store's
local reader makes and their raw floor, random reads, the latency-bound cold scan, and a
target row's printed cells. Imports nothing else of ``benchmarks``."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np
import zarr
from zarr.core.buffer import NDBuffer

from moczarr_store import MocHiveStore
from moczarr_store.io.backend import Backend

DEFAULT = "leaf"


def best(fn, repeat: int = 3, clock=time.perf_counter) -> tuple[float, object]:
    """The fastest of ``repeat`` runs of ``fn()`` (seconds of ``clock``; no repeat after a
    run over 10 s) and its last result; ``fn.prepare()``, if it has one, runs untimed before
    each."""
    times, out = [], None
    for _ in range(repeat):
        if hasattr(fn, "prepare"):
            fn.prepare()
        start = clock()
        out = fn()
        times.append(clock() - start)
        if times[-1] > 10:
            break
    return min(times), out


def record_reads(store: MocHiveStore) -> list[tuple[str, object]]:
    """Every object (and range) the store's local reader reads from now on: the one place
    each read passes, inline (page-cached), waited or straight into a span's buffer."""
    from moczarr_store.io.local import LocalReader

    reader = store.session.backend._reader
    if not isinstance(reader, LocalReader):
        raise SystemExit("the read floor needs a local hive")
    reads: list[tuple[str, object]] = []
    original = reader._open_read

    def read(path, option, *rest):
        got = original(path, option, *rest)
        if got is not None:
            reads.append((path, option))
        return got

    reader._open_read = read  # type: ignore[method-assign]
    return reads


def nbytes(paths: list[str]) -> int:
    """The objects' total size (one ``stat`` each; nothing read)."""
    return sum(os.path.getsize(path) for path in paths)


def raw_read(paths: list[str]) -> int:
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            total += len(f.read())
    return total


class OneField:
    """A store whose ``group``'s consolidated metadata lists ``field`` alone (so the copy
    writes that array only)."""

    def __init__(self, store: MocHiveStore, group: str, field: str) -> None:
        self.store, self.group, self.field = store, group, field

    async def get(self, key, prototype, byte_range=None):
        buf = await self.store.get(key, prototype, byte_range)
        if key != f"{self.group}/zarr.json" or buf is None:
            return buf
        doc = json.loads(buf.to_bytes())
        meta = doc["consolidated_metadata"]["metadata"]
        doc["consolidated_metadata"]["metadata"] = {self.field: meta[self.field]}
        return prototype.buffer.from_bytes(json.dumps(doc).encode())


def alternate(fns: dict, rounds: int, clock=time.perf_counter) -> dict:
    """The best of ``rounds`` seconds (of ``clock``) for each of ``fns``, timed in turn
    within each round (so a noisy neighbour slows all of them alike rather than one)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(best(fn, 1, clock)[0])
    return {name: min(seconds) for name, seconds in times.items()}


def random_reads(want: np.ndarray, cells: int, arrays: dict[str, zarr.Array],
                  rounds: int = 3, clock=time.perf_counter) -> dict[tuple[str, str], float]:
    """Seconds per read of 300 random single cells and 100 random leaf-sized slices
    (``cells`` rows at a leaf boundary) from each of ``arrays`` (stamps warm: one pass
    first, its values checked against ``want``), the best of ``rounds`` timed in turn."""
    rng = np.random.default_rng(0)
    points = [int(i) for i in rng.integers(0, want.shape[0], 300)]
    starts = [int(s) * cells for s in rng.integers(0, want.shape[0] // cells, 100)]
    kinds = {"random single cell": (points, 1), "random leaf-sized slice": (starts, cells)}
    fns, counts = {}, {}
    for kind, (at, size) in kinds.items():
        for name, array in arrays.items():
            def read(array=array, at=at, size=size):
                return [array[i : i + size] for i in at]
            for i, got in zip(at, read(), strict=True):
                np.testing.assert_array_equal(got, want[i : i + size], err_msg=name)
            fns[kind, name], counts[kind, name] = read, len(at)
    took = alternate(fns, rounds, clock)
    return {key: seconds / counts[key] for key, seconds in took.items()}


def read_into(array: zarr.Array, out: NDBuffer) -> np.ndarray:
    """``array`` read whole into ``out`` (zarr's ``out=``), as numpy."""
    array.get_basic_selection(Ellipsis, out=out)
    return out.as_numpy_array()


class SlowBackend(Backend):
    """Adds a fixed latency to every request, inside the concurrency cap."""

    delay = 0.05  # seconds per request

    def _now(self, *args):
        return None  # no inline page-cache reads: every request pays the latency

    async def _call(self, kind, coro_fn, *args, **kwargs):
        async def slow(*a, **k):
            await asyncio.sleep(self.delay)
            return await coro_fn(*a, **k)

        return await super()._call(kind, slow, *args, **kwargs)


def scan_settings(cap: int) -> dict:
    """zarr's settings for a scan with at most ``cap`` requests in flight (the store's or
    the plain copy's cap): twice ``cap`` chunk reads started at once (a cold leaf chunk has
    one request in flight, its stamp, then two), as the README advises; more waiting chunk
    tasks only add event-loop work. Both sides of the latency row scan with these."""
    return {"async.concurrency": 2 * cap}


def cold_scan(hive: Path, group: str, field: str, cap: int, delay: float,
               out: NDBuffer | None = None, chunking: str | None = DEFAULT,
               ) -> tuple[float, int, np.ndarray]:
    """Seconds, requests and values of a full scan of ``field`` through a fresh store
    (``chunking``, None: the store's default), into a new array (``[:]``) or into ``out``;
    zarr with :func:`scan_settings`."""
    options = {} if chunking is None else {"chunking": chunking}
    store = MocHiveStore(hive, max_concurrency=cap, **options)
    store.backend.__class__ = SlowBackend
    store.backend.delay = delay
    with zarr.config.set(scan_settings(cap)):
        array = zarr.open_group(store, mode="r")[f"{group}/{field}"]
        store.request_stats.reset()
        start = time.perf_counter()
        got = array[:] if out is None else read_into(array, out)
        took = time.perf_counter() - start
    return took, store.request_stats.total, got


def target_cells(r: dict) -> list[str]:
    """A target row's cells as printed (and rendered in the docs): ours, its floor, ratio,
    target, met, and the plain copy with the lowest ratio."""
    ms = "-" if r.get("ms") is None else f"{r['ms']:,.1f} ms"
    floor = str(r.get("floor", "-"))
    if r.get("floor_ms") is not None:
        floor += f" {r['floor_ms']:,.1f} ms"
    x = "" if r.get("ms") is None and r.get("floor_ms") is None else "x"  # a count: no "x"
    plain = min(r.get("plain") or [], key=lambda p: p["ratio"], default=None)
    beside = "-" if plain is None else (
        f"{plain['ratio']:.2f}{x} ({plain['copy']}"
        + ("" if plain.get("ms") is None else f", {plain['ms']:,.1f} ms") + ")")
    target = (f">= {r['ratio_min']}{x}" if r.get("ratio_min") is not None
              else f"<= {r.get('target')}{x}")
    return [str(r.get("hive")), str(r.get("row")), ms, floor, f"{r.get('ratio')}{x}", target,
            "met" if r.get("met") else "MISSED", beside]
