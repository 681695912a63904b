"""The target rows over the wire, each beside the plain zarr copies' best: one field
through ``moczarr-store serve``, from S3 (moto on loopback), and with 50 ms added to every
request; values checked equal to the oracle's. Servers run in processes of their own
(``serve``, ``loopback_server.py``): the timed client shares no interpreter lock with them.
A throughput target (at least ``x`` times the anchor's) is the time target ``1/x``."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import (
    Fresh,
    alternate,
    cold_scan,
    plain_entry,
    raw_gets,
    scan_objects,
    scan_settings,
    target_row,
)
from benchmarks.plain_copies import slow
from moczarr_store import MocHiveStore

REPO = Path(__file__).resolve().parents[1]
DELAY, CAP = 0.05, 128  # the latency-bound row: seconds added per request, requests in flight
S3_ENV = {"AWS_EC2_METADATA_DISABLED": "true"}


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **S3_ENV, "PYTHONPATH": path}


@contextlib.contextmanager
def loopback(kind: str, *args: str) -> Iterator[str]:
    """``benchmarks/loopback_server.py`` ``kind`` in a subprocess: its URL, once ready."""
    from tests.support.processes import free_port, running

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ready = f"{url}/hive/ready" if kind == "s3" else url
    command = [sys.executable, "-m", "benchmarks.loopback_server", kind, "--port", str(port),
               *args]
    with running(command, ready, env=_env(), timeout=600):
        yield url


def served_count(url: str) -> int:
    """Requests a :func:`loopback` server has served so far (its own count)."""
    with urllib.request.urlopen(f"{url}/_requests", timeout=30) as response:
        return int(response.read())


def _chunk_keys(path: Path, field: str) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in (path / field / "c").rglob("*")
                  if p.is_file())


class _Slow(zarr.storage.WrapperStore):
    """A plain zarr store with ``DELAY`` added to every read, counted, at most ``CAP`` in
    flight (the delay inside the cap, as the store's latency backend has it)."""

    requests = 0
    _cap: asyncio.Semaphore | None = None

    async def get(self, key, prototype, byte_range=None):
        self.requests += 1
        if self._cap is None:  # made in the scan's event loop
            self._cap = asyncio.Semaphore(CAP)
        async with self._cap:
            await asyncio.sleep(DELAY)
            return await self._store.get(key, prototype, byte_range)


def measure_wire(hive: Path, group: str, field: str, want: np.ndarray,
                 copies: dict[str, Path], rounds: int = 3) -> list[dict]:
    """The serve, S3 and latency rows of one hive (``want``: the oracle's ``field``;
    ``copies``: the plain copies, :func:`benchmarks.plain_copies.make_copies`, all but
    zagg's layout timed here)."""
    os.environ.update(S3_ENV)
    copies = {name: path for name, path in copies.items() if not slow(name)}
    first, chunks, _ = scan_objects(hive, group, field)
    rows = measure_serve(hive, group, field, want, copies, len(chunks), rounds)
    rows += measure_s3(hive, group, field, want, copies, first, chunks, rounds)
    rows += measure_latency(hive, group, field, want, copies)
    return rows


def measure_serve(hive: Path, group: str, field: str, want: np.ndarray,
                  copies: dict[str, Path], leaves: int, rounds: int) -> list[dict]:
    """One field through ``moczarr-store serve`` with its defaults, by zarr over obstore's
    HTTPStore, against zarr in process on a store with default options (both warm; the
    HTTP requests of a first remote scan are counted by a server with ``--access-log``); the
    plain copies through a static file server against zarr on them in process."""
    import tempfile

    from tests.support.processes import http_store, served

    name, path = hive.name, f"{group}/{field}"
    local = zarr.open_array(MocHiveStore(hive), path=path, mode="r")
    np.testing.assert_array_equal(local[:], want, err_msg=f"{name} in process")
    with tempfile.TemporaryDirectory() as tmp:  # the cold scan's requests: from its log
        log = Path(tmp) / "serve.log"
        with served(hive, "--access-log", log=log) as (url, _pid):
            remote = zarr.open_array(http_store(url), path=path, mode="r")
            before = log.read_text().count("serve.access")
            np.testing.assert_array_equal(remote[:], want, err_msg=f"{name} serve")
            http_cold = log.read_text().count("serve.access") - before
    with served(hive) as (url, _pid):
        remote = zarr.open_array(http_store(url), path=path, mode="r")
        np.testing.assert_array_equal(remote[:], want, err_msg=f"{name} serve")
        took = alternate({"local": lambda: local[:], "serve": lambda: remote[:]}, rounds)
    plain, plain_counts = [], []
    for copy, where in copies.items():
        with loopback("static", str(where)) as url:
            ours = zarr.open_array(str(where / field), mode="r")
            theirs = zarr.open_array(http_store(url), path=field, mode="r")
            before = served_count(url)
            np.testing.assert_array_equal(theirs[:], want, err_msg=f"{name} {copy} static")
            plain_counts.append(plain_entry(copy, None, (served_count(url) - before) / leaves))
            t = alternate({"local": lambda a=ours: a[:], "http": lambda a=theirs: a[:]},
                          rounds)
        plain.append(plain_entry(f"{copy}, static HTTP server", t["http"],
                                 t["http"] / t["local"]))
    return [
        target_row(name, "serve (defaults): one field by zarr over obstore HTTPStore vs in "
                   "process (target: >= 0.5x its throughput)", took["serve"], "in process",
                   took["local"], 2, plain=plain),
        target_row(name, "serve (defaults): cold scan, HTTP requests per leaf (serve's access "
                   "log)", None, f"{leaves:,} leaves", None, 3, http_cold / leaves,
                   plain=plain_counts),
    ]


def measure_s3(hive: Path, group: str, field: str, want: np.ndarray,
               copies: dict[str, Path], first: list[str], chunks: list[str],
               rounds: int) -> list[dict]:
    """One field from moto's S3 on loopback (unsigned): the store's first scan (a new
    store) against raw concurrent GETs of every object it reads, and its second scan
    against raw GETs of the chunks, at the store's cap on requests in flight; ``serve``
    in front of that S3, its cold scan's requests counted at the S3 server; each plain
    copy by zarr over obstore's S3Store against raw GETs of its chunks."""
    from tests.support.processes import http_store, served

    from moczarr_store.options import DEFAULT_MAX_CONCURRENCY

    sys.path.insert(0, str(REPO / "tests"))
    from support.servers import BUCKET, REGION, s3_options

    name, path, leaves = hive.name, f"{group}/{field}", len(chunks)
    others = _other_fields(hive, group, field)
    trees = [f"{hive}=pre/hive", *(f"{p}=pre/copy{i}" for i, p in enumerate(copies.values()))]
    skip = [a for n in others for a in ("--skip", n)]
    with loopback("s3", *trees, *skip) as endpoint:
        options = {"storage_options": s3_options(endpoint, anonymous=True)}
        url = f"s3://{BUCKET}/pre/hive"

        def new_store() -> zarr.Array:
            return zarr.open_array(MocHiveStore(url, **options), path=path, mode="r")

        warm = new_store()
        np.testing.assert_array_equal(warm[:], want, err_msg=f"{name} S3")
        objects = MocHiveStore(url, **options).backend.store
        cap = DEFAULT_MAX_CONCURRENCY
        fresh = Fresh(new_store)
        reads = {"first": fresh, "raw first": lambda: raw_gets(objects, first, cap),
                 "second": lambda: warm[:], "raw second": lambda: raw_gets(objects, chunks, cap)}
        took = alternate(reads, rounds)
        # serve in front of the S3 server: the storage requests of its cold scan
        args = ("--endpoint", endpoint, "--region", REGION, "--anon")
        with served(url, *args) as (served_url, _pid):  # type: ignore[arg-type]
            remote = zarr.open_array(http_store(served_url), path=path, mode="r")
            before = served_count(endpoint)
            np.testing.assert_array_equal(remote[:], want, err_msg=f"{name} serve over S3")
            storage = (served_count(endpoint) - before) / leaves
        plain = _plain_s3(copies, endpoint, field, want, rounds)
    target = "target: >= 0.8x raw GETs' throughput"
    return [
        target_row(name, f"S3 (moto, loopback): first scan (new store) vs raw concurrent GETs "
                   f"of its objects ({target})", took["first"], "raw GETs", took["raw first"],
                   1.25, plain=plain),
        target_row(name, f"S3 (moto, loopback): second scan (same store) vs raw concurrent "
                   f"GETs of the chunks ({target})", took["second"], "raw GETs",
                   took["raw second"], 1.25, plain=plain),
        target_row(name, "serve (defaults) reading S3: cold scan, storage requests per leaf "
                   "(counted at the S3 server)", None, f"{leaves:,} leaves", None, 3, storage),
    ]


def _plain_s3(copies: dict[str, Path], endpoint: str, field: str, want: np.ndarray,
              rounds: int) -> list[dict]:
    """Each plain copy (uploaded as ``pre/copy{i}``) by zarr over obstore's S3Store against
    raw concurrent GETs of its chunks."""
    import obstore.store
    from support.servers import BUCKET, REGION
    from zarr.storage import ObjectStore

    from moczarr_store.options import DEFAULT_MAX_CONCURRENCY

    plain = []
    for i, (copy, where) in enumerate(copies.items()):
        s3 = obstore.store.S3Store(BUCKET, prefix=f"pre/copy{i}", endpoint=endpoint,
                                   region=REGION, skip_signature=True,
                                   client_options={"allow_http": True})
        array = zarr.open_array(ObjectStore(s3, read_only=True), path=field, mode="r")
        np.testing.assert_array_equal(array[:], want, err_msg=f"{copy} S3")
        keys = _chunk_keys(where, field)
        t = alternate({"zarr": lambda a=array: a[:],
                       "raw": lambda k=keys, s=s3: raw_gets(s, k, DEFAULT_MAX_CONCURRENCY)},
                      rounds)
        plain.append(plain_entry(f"{copy}, zarr over obstore S3Store", t["zarr"],
                                 t["zarr"] / t["raw"]))
    return plain


def _other_fields(hive: Path, group: str, field: str) -> list[str]:
    """The group's arrays other than ``field`` (their chunks left out of the S3 upload)."""
    root = zarr.open_group(MocHiveStore(hive), path=group, mode="r")
    return [n for n in root.array_keys() if n != field]


def measure_latency(hive: Path, group: str, field: str, want: np.ndarray,
                    copies: dict[str, Path], repeat: int = 2) -> list[dict]:
    """A cold scan with ``DELAY`` added to every request, ``CAP`` in flight, against the
    ideal (its requests in rounds of ``CAP``, ``DELAY`` each): the store with its default
    chunking (``common.cold_scan``), and each plain copy through a zarr
    store adding the same delay with the same cap, zarr with the same settings
    (:func:`benchmarks.common.scan_settings`). Best of ``repeat``."""
    name = hive.name
    ours = []
    for _ in range(repeat):
        took, requests, got = cold_scan(hive, group, field, CAP, DELAY, chunking=None)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} latency")
        ours.append((took, requests))
    took, requests = min(ours)
    plain = []
    for copy, where in copies.items():
        runs = []
        for _ in range(repeat):
            delayed = _Slow(zarr.storage.LocalStore(str(where), read_only=True))
            with zarr.config.set(scan_settings(CAP)):
                array = zarr.open_array(delayed, path=field, mode="r")
                delayed.requests = 0  # the scan's, as the store's (opened before)
                start = time.perf_counter()
                got = array[:]
                runs.append((time.perf_counter() - start, delayed.requests))
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {copy} latency")
        seconds, made = min(runs)
        plain.append(plain_entry(f"{copy} ({made:,} requests)", seconds,
                                 seconds / (math.ceil(made / CAP) * DELAY)))
    ideal = math.ceil(requests / CAP) * DELAY
    return [target_row(name, f"latency-bound: cold scan, {DELAY * 1e3:.0f} ms per request, "
                       f"{CAP} in flight ({requests:,} requests) vs ideal", took, "ideal",
                       ideal, 1.1, plain=plain)]
