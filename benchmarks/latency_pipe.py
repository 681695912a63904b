"""The latency-bound row's pipe: requests in flight over a cold scan, where time goes.

    python -m benchmarks.latency_pipe HIVE GROUP [FIELD]

The scan of ``targets_wire.measure_latency`` (a new store, default chunking, 50 ms added
to every request inside a cap of 128), twice, each request logged at the fake-latency
backend: when it took its slot, when its delay ended, when it ended. Printed: when the
first request left; the mean time a slot is held (the delay, how late the event loop woke
the request, the read); the time the pipe was not full (at the start, after the last
request left); the garbage collector's passes by generation (a pass holds up the event
loop, so every request in flight wakes that much late); requests in flight per 100 ms.
"""

from __future__ import annotations

import asyncio
import gc
import math
import sys
import time
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import SlowBackend, scan_settings
from moczarr_store import MocHiveStore

CAP, DELAY = 128, 0.05


class _Logged(SlowBackend):
    """:class:`SlowBackend` logging ``(slot taken, delay ended, ended, object)`` of each
    request in ``log``."""

    log: list[tuple[float, float, float, str]] = []

    async def _call(self, kind, coro_fn, *args, **kwargs):
        async def slow(*a, **k):
            took = time.perf_counter()
            await asyncio.sleep(self.delay)
            woke = time.perf_counter()
            try:
                return await coro_fn(*a, **k)
            finally:
                self.log.append((took, woke, time.perf_counter(), str(a[0]) if a else kind))

        # the delay is ours: the base backend's call, inside the cap
        return await super(SlowBackend, self)._call(kind, slow, *args, **kwargs)


def _kind(path: str) -> str:
    return "stamp" if path.endswith(".zarr/zarr.json") else (
        "metadata" if path.endswith("zarr.json") else "chunk")


def scan(hive: Path, group: str, field: str) -> None:
    """One logged cold scan, printed."""
    store = MocHiveStore(hive, max_concurrency=CAP)
    store.backend.__class__ = _Logged
    store.backend.delay = DELAY
    with zarr.config.set(scan_settings(CAP)):
        array = zarr.open_group(store, mode="r")[f"{group}/{field}"]
        _Logged.log, passes, began = [], {}, [0.0]

        def collected(phase: str, info: dict) -> None:  # gc's passes and seconds
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                n, seconds = passes.get(info["generation"], (0, 0.0))
                passes[info["generation"]] = (n + 1, seconds + time.perf_counter() - began[0])

        gc.collect()
        gc.callbacks.append(collected)
        start = time.perf_counter()
        try:
            array[:]
        finally:
            took = time.perf_counter() - start
            gc.callbacks.remove(collected)
    collections = ", ".join(f"gen {g}: {n} in {t * 1e3:.0f} ms"
                            for g, (n, t) in sorted(passes.items()))
    log = _Logged.log
    took_at, woke, ended = (np.array([e[i] for e in log]) - start for i in range(3))
    hold = ended - took_at
    grid = np.arange(0, took, 0.001)
    flight = (np.searchsorted(np.sort(took_at), grid, side="right")
              - np.searchsorted(np.sort(ended), grid, side="right"))
    idle = (CAP - flight) * 0.001 / CAP  # full-pipe seconds lost per millisecond
    first, last = int(took_at.min() * 1000), int(took_at.max() * 1000)
    print(f"\n{len(log):,} requests in {took * 1e3:,.0f} ms (ideal "
          f"{math.ceil(len(log) / CAP) * DELAY * 1e3:,.0f} ms); first request "
          f"{took_at.min() * 1e3:.1f} ms after the scan began; slot held {hold.mean() * 1e3:.2f}"
          f" ms on average (woken {(woke - took_at - DELAY).mean() * 1e3:.2f} ms late: median "
          f"{np.median(woke - took_at - DELAY) * 1e3:.2f}, p90 "
          f"{np.percentile(woke - took_at - DELAY, 90) * 1e3:.1f}; read "
          f"{(ended - woke).mean() * 1e3:.3f}); requests x held / cap "
          f"{len(log) * hold.mean() / CAP * 1e3:,.0f} ms; pipe not full "
          f"{idle.sum() * 1e3:.0f} ms (before the first request {idle[:first].sum() * 1e3:.0f}"
          f", after the last left {idle[last:].sum() * 1e3:.0f}); {CAP} in flight "
          f"{(flight >= CAP).mean() * 100:.0f}% of the time; garbage collection: "
          f"{collections}", flush=True)
    for b in range(math.ceil(took / 0.1)):
        started: dict[str, int] = {}
        for (at, *_, path) in log:
            if b * 0.1 <= at - start < (b + 1) * 0.1:
                started[_kind(path)] = started.get(_kind(path), 0) + 1
        part = flight[b * 100 : (b + 1) * 100]
        print(f"  {b * 100:5,}-{(b + 1) * 100:5,} ms: in flight mean {part.mean():5.1f}, min "
              f"{part.min():3d}; started {started}")


if __name__ == "__main__":
    where, group_name = Path(sys.argv[1]), sys.argv[2]
    for _ in range(2):
        scan(where, group_name, sys.argv[3] if len(sys.argv) > 3 else "h_mean")
