"""What every part of the harness shares: timing (best of, in turn), the objects a scan reads
and their raw floor, memory, random reads, the latency-bound cold scan, and the target rows.
Imports nothing else of ``benchmarks``."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from zarr.core.buffer import NDBuffer

from moczarr_store import MocHiveStore
from moczarr_store.io.backend import Backend

DEFAULT = "leaf"
TEMPLATE_HIVE = Path(__file__).resolve().parents[1] / "fixtures" / "bare_versioned"


def synthetic_hive(root: Path, cell_order: int, shard_order: int, ranges: list, leaf: str,
                   at: Path) -> None:
    """A hive at ``root`` (made): ``fixtures/bare_versioned``'s manifest at ``cell_order`` and
    ``shard_order``, a root coverage of ``ranges`` (pairs of decimal ids), and one real leaf
    at ``at``: that fixture's leaf ``leaf`` (a zagg 0.61 write), its current version alone,
    its group re-labelled to ``cell_order``, its coverage box (its own node) dropped."""
    root.mkdir(parents=True)
    manifest = json.loads((TEMPLATE_HIVE / "morton_hive.json").read_text())
    manifest.update(cell_order=cell_order, shard_order=shard_order,
                    split_schedule=[1] * shard_order)
    (root / "morton_hive.json").write_text(json.dumps(manifest))
    (root / "coverage.moc").write_text(json.dumps(
        {"spec": "morton-moc/1", "encoding": "ranges", "order": shard_order, "ranges": ranges}))
    stamp = json.loads((TEMPLATE_HIVE / leaf / "zarr.json").read_text())
    commit = stamp["attributes"]["morton_hive_commit"]
    shutil.copytree(TEMPLATE_HIVE / leaf / commit["current"], at / commit["current"])
    (at / commit["current"] / "7").rename(at / commit["current"] / str(cell_order))
    commit["content_hashes"]["arrays"] = {f"{cell_order}/{k.split('/', 1)[1]}": v
                                          for k, v in commit["content_hashes"]["arrays"].items()}
    commit.pop("coverage")
    (at / "zarr.json").write_text(json.dumps(stamp))


def best(fn, repeat: int = 3, clock=time.perf_counter,
         collect: bool = False) -> tuple[float, object]:
    """The fastest of ``repeat`` runs of ``fn()`` (seconds of ``clock``; no repeat after a
    run over 10 s) and its last result; ``fn.prepare()``, if it has one, and with
    ``collect`` a garbage collection run untimed before each."""
    times, out = [], None
    for _ in range(repeat):
        if hasattr(fn, "prepare"):
            fn.prepare()
        if collect:
            gc.collect()
        start = clock()
        out = fn()
        times.append(clock() - start)
        if times[-1] > 10:
            break
    return min(times), out


def alternate(fns: dict, rounds: int, clock=time.perf_counter, collect: bool = False) -> dict:
    """The best of ``rounds`` seconds (of ``clock``) for each of ``fns``, timed in turn
    within each round (so a noisy neighbour slows all of them alike rather than one)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(best(fn, 1, clock, collect)[0])
    return {name: min(seconds) for name, seconds in times.items()}


class Fresh:
    """A timed ``read(made)`` on a new ``make()`` each time (made untimed, in ``prepare``)."""

    def __init__(self, make, read=lambda made: made[:]) -> None:
        self.make, self.read, self.made = make, read, None

    def prepare(self) -> None:
        self.made = self.make()
        gc.collect()

    def __call__(self):
        return self.read(self.made)


def checked(fns: dict, want, skip: str = "raw") -> None:
    """Each of ``fns`` (but those named from ``skip``) run once, prepared, its values
    checked equal to ``want``."""
    for name, fn in fns.items():
        if not str(name).startswith(skip):
            if hasattr(fn, "prepare"):
                fn.prepare()
            np.testing.assert_array_equal(fn(), want, err_msg=str(name))


def open_xr(where, group: str | None = None, **kwargs) -> xr.Dataset:
    """``xr.open_zarr(where, group=group)`` with xarray's defaults (a dask chunk per zarr
    chunk), warnings silenced: every xarray row reads through it, the plain copies' too."""
    with warnings.catch_warnings(action="ignore"):
        return xr.open_zarr(where, group=group, **kwargs)


def record_reads(store: MocHiveStore, tried: bool = False) -> list[tuple[str, object]]:
    """Every object (and range) the store's local reader reads from now on (``tried``: every
    one it opens or looks for, an absent leaf's stamp too), in order, repeats included."""
    from moczarr_store.io.local import LocalReader

    reader = store.session.backend._reader
    if not isinstance(reader, LocalReader):
        raise SystemExit("the read floor needs a local hive")
    reads: list[tuple[str, object]] = []
    original = reader._open_read

    def read(path, option, *rest):
        if tried:  # before the open, which fails for an absent object
            reads.append((path, option))
        got = original(path, option, *rest)
        if got is not None and not tried:
            reads.append((path, option))
        return got

    documents = reader.documents_now

    def read_documents(paths):  # a span's small documents, read in one pass
        got = documents(paths)
        reads.extend((path, None) for path, data in zip(paths, got, strict=False)
                     if tried or data is not None)
        return got

    reader._open_read = read  # type: ignore[method-assign]
    reader.documents_now = read_documents  # type: ignore[method-assign]
    return reads


def scan_objects(hive: Path, group: str, field: str) -> tuple[list[str], list[str], float]:
    """The keys a first scan of ``field`` reads (each leaf's stamp, its version's array
    ``zarr.json``, the chunk) and a second scan reads (the chunks), recorded at the local
    reader of a ``"leaf"`` store, and the first scan's requests per chunk."""
    store = MocHiveStore(hive, chunking=DEFAULT)
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    reads = record_reads(store)
    store.request_stats.reset()
    array[:]
    first, cold = [path for path, _ in reads], store.request_stats.total / array.nchunks
    reads.clear()
    array[:]
    return first, [path for path, _ in reads], cold


def raw_gets(objects, keys: list[str], cap: int) -> int:
    """``keys`` fetched whole from the obstore store ``objects``, at most ``cap`` in flight:
    bytes read."""
    import obstore

    async def all_of() -> int:
        limit = asyncio.Semaphore(cap)

        async def one(key: str) -> int:
            async with limit:
                got = await obstore.get_async(objects, key)
                return len(await got.bytes_async())

        return sum(await asyncio.gather(*(one(k) for k in keys)))

    return asyncio.run(all_of())


def nbytes(paths: list[str]) -> int:
    """The objects' total size (one ``stat`` each; nothing read)."""
    return sum(os.path.getsize(path) for path in paths)


def raw_read(paths: list[str], missing_ok: bool = False) -> int:
    """Each object opened and read whole by plain Python (``missing_ok``: an absent one
    looked for, its open failing): bytes read."""
    total = 0
    for path in paths:
        try:
            with open(path, "rb") as f:
                total += len(f.read())
        except FileNotFoundError:
            if not missing_ok:
                raise
    return total


def raw_into_new(paths: list[str], size: int) -> np.ndarray:
    """The objects read one after another into one new array of their total ``size``: the
    floor of any read that hands back new memory (zarr's ``[:]``, dask's joined result)."""
    out = np.empty(size, dtype=np.uint8)
    view, at = memoryview(out), 0
    for path in paths:
        with open(path, "rb") as f:
            at += f.readinto(view[at:])
    if at != size:
        raise SystemExit(f"the objects changed while measured: {at} bytes, not {size}")
    return out


def _status(key: str) -> float | None:
    """``key``'s value in ``/proc/self/status`` in MB (Linux), else ``None``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def memory(read) -> tuple[float, float | None]:
    """(traced peak MB, growth of the peak resident set MB) of one ``read()``."""
    gc.collect()
    before = _status("VmRSS:")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the peak reset to the current
        reset = True
    except OSError:
        reset = False
    tracemalloc.start()
    got = read()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    del got
    hwm = _status("VmHWM:") if reset else None
    return peak, None if hwm is None or before is None else hwm - before


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


def random_reads(want: np.ndarray, cells: int, arrays: dict[str, zarr.Array],
                 rounds: int = 3, clock=time.perf_counter) -> dict[tuple[str, str], float]:
    """Seconds per read of 300 random single cells and 100 random leaf-sized slices
    (``cells`` rows at a leaf boundary, along the last axis) from each of ``arrays``
    (stamps warm: one pass first, its values checked against ``want``), the best of
    ``rounds`` timed in turn."""
    rng = np.random.default_rng(0)
    n = want.shape[-1]  # along the cells (every window of a windowed field at once)
    points = [int(i) for i in rng.integers(0, n, 300)]
    starts = [int(s) * cells for s in rng.integers(0, n // cells, 100)]
    kinds = {"random single cell": (points, 1), "random leaf-sized slice": (starts, cells)}
    fns, counts = {}, {}
    for kind, (at, size) in kinds.items():
        for name, array in arrays.items():
            def read(array=array, at=at, size=size):
                return [array[..., i : i + size] for i in at]
            for i, got in zip(at, read(), strict=True):
                np.testing.assert_array_equal(got, want[..., i : i + size], err_msg=name)
            fns[kind, name], counts[kind, name] = read, len(at)
    took = alternate(fns, rounds, clock)
    return {key: seconds / counts[key] for key, seconds in took.items()}


def read_into(array: zarr.Array, out: NDBuffer) -> np.ndarray:
    """``array`` read whole into ``out`` (zarr's ``out=``), as numpy."""
    array.get_basic_selection(Ellipsis, out=out)
    return out.as_numpy_array()


def unlike(out: NDBuffer, want: np.ndarray) -> None:
    """Make every byte of ``out`` differ from ``want``'s (a read into it is then checked)."""
    np.invert(want.view(np.uint8), out=out.as_numpy_array().view(np.uint8))


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
    (``chunking``, None: the store's default) adding ``delay`` to every request, into a new
    array (``[:]``) or into ``out``; zarr with :func:`scan_settings`."""
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


def target_row(hive: str, label: str, seconds: float | None, floor: str,
               floor_seconds: float | None, limit: float | None, ratio: float | None = None,
               plain: list[dict] | None = None, **extra) -> dict:
    """One target row ``{hive, row, ms, floor, floor_ms, ratio, target, met, plain}``
    (``target``: the ratio it must not exceed, None for a row measured without one; a
    request count has ``seconds`` None and the count as ``ratio``; ``plain``: the plain
    copies' ``{copy, ms, ratio}``), printed."""
    if ratio is None:
        ratio = seconds / floor_seconds if seconds and floor_seconds else float("nan")
    row = {"hive": hive, "row": label,
           "ms": None if seconds is None else round(seconds * 1e3, 2), "floor": floor,
           "floor_ms": None if floor_seconds is None else round(floor_seconds * 1e3, 2),
           "ratio": round(ratio, 2), "target": limit,
           "met": None if limit is None else bool(ratio <= limit),
           "plain": plain or [], **extra}
    print("| " + " | ".join([*target_cells(row)[:7], *map(str, extra.values())]) + " |",
          flush=True)
    return row


def plain_entry(copy: str, seconds: float | None, ratio: float) -> dict:
    """A plain copy's figures beside a target row."""
    return {"copy": copy, "ms": None if seconds is None else round(seconds * 1e3, 2),
            "ratio": round(ratio, 2)}


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
    target = "-" if r.get("target") is None else f"<= {r['target']}{x}"
    met = "-" if r.get("met") is None else "met" if r["met"] else "MISSED"
    return [str(r.get("hive")), str(r.get("row")), ms, floor, f"{r.get('ratio')}{x}", target,
            met, beside]
