"""Concurrency, scale and pickling against the loopback S3 server."""

from __future__ import annotations

import asyncio
import logging
import pickle
import threading
import time
import warnings

import dask
import psutil
import pytest
import xarray as xr
import zarr
from support.servers import FIXTURES, S3Subprocess, s3_options, s3_url
from support.workers import keep_backends, requests_made
from zarr.buffer import default_buffer_prototype

from moczarr_store import HiveWarning, MocHiveStore

pytest_plugins = ["support.servers"]

READS = [("bare_versioned", "atl06/o7"), ("sharded", "atl06/o7"), ("pyramid1", "atl06/o7"),
         ("pyramid1", "atl06/o5"), ("legacy", "atl06/o7"), ("ragged", "atl06/o6")]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


def test_one_process_wide_cap_on_requests_in_flight(fault_proxy):
    """8 dask threads x zarr async.concurrency 64 would allow ~500 requests at once."""
    cap = 4
    stores = {name: MocHiveStore(s3_url(name), max_concurrency=cap,
                                 storage_options=s3_options(fault_proxy.url)) for name, _ in READS}
    with zarr.config.set({"async.concurrency": 64}):
        datasets = [xr.open_zarr(stores[name], group=group) for name, group in READS]
        fault_proxy.reset()  # count the data reads: stamps, leaf metadata, chunks
        with dask.config.set(scheduler="threads", num_workers=8):
            loaded = dask.compute(*datasets)
    requests = len(fault_proxy.log)
    assert requests >= 100
    peak = max(s.request_stats.max_in_flight for s in stores.values())
    assert peak <= cap
    assert fault_proxy.max_in_flight <= cap  # measured at the server side too
    assert fault_proxy.max_in_flight >= 2  # the read was concurrent at all
    for (name, group), ds in zip(READS, loaded, strict=True):
        want = xr.open_zarr(MocHiveStore(FIXTURES / name), group=group).load()
        xr.testing.assert_equal(ds, want)
    print(f"\n{requests} requests; max in flight: store {peak}, proxy "
          f"{fault_proxy.max_in_flight} (cap {cap})")


def test_the_cap_holds_for_leaves_read_through_the_transcoder(fault_proxy):
    cap = 2
    store = MocHiveStore(s3_url("mixed"), max_concurrency=cap,
                         storage_options=s3_options(fault_proxy.url))
    with zarr.config.set({"async.concurrency": 64}):
        ds = xr.open_zarr(store, group="atl06/o7")
        fault_proxy.reset()
        before = store.request_stats.total
        with dask.config.set(scheduler="threads", num_workers=8):
            ds.load()
    assert fault_proxy.max_in_flight <= cap
    assert store.request_stats.total - before == len(fault_proxy.log)  # every request counted


@pytest.fixture
def s3_child():
    server = S3Subprocess()
    try:
        yield server
    finally:
        server.stop()


def test_ten_thousand_concurrent_gets_are_correct_in_bounded_memory(s3_child):
    """asyncio.gather of 10,000 ``store.get`` on chunk keys (repeating) of one fixture."""
    n = 10_000
    store = MocHiveStore(s3_url("bare_versioned"), chunking="leaf",
                         storage_options=s3_options(s3_child.url))
    local = MocHiveStore(FIXTURES / "bare_versioned", chunking="leaf")
    proto = default_buffer_prototype()
    keys = [k for k in asyncio.run(_keys(local)) if "/c/" in k]
    expected = {k: _bytes(asyncio.run(local.get(k, proto))) for k in keys}
    assert sum(v is not None for v in expected.values()) >= 36
    for key in keys:  # open, and warm the stamp and encoding caches: measure the gets alone
        assert _bytes(asyncio.run(store.get(key, proto))) == expected[key]
    before = store.request_stats.total
    process = psutil.Process()
    peak, stop = [process.memory_info().rss], threading.Event()

    def sample():
        while not stop.wait(0.005):
            peak.append(process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        results = asyncio.run(_gather(store, [keys[i % len(keys)] for i in range(n)], proto))
    finally:
        stop.set()
        sampler.join(timeout=5)
    seconds = time.monotonic() - started
    for i, got in enumerate(results):
        assert got == expected[keys[i % len(keys)]]
    growth = (max(peak) - peak[0]) / 2**20
    report = s3_child.stop()
    print(f"\n{n} gets in {seconds:.1f} s ({store.request_stats.total - before} requests); "
          f"RSS growth {growth:.1f} MiB; max in flight: backend "
          f"{store.request_stats.max_in_flight}, server {report.get('max_in_flight')}")
    assert growth < 150
    assert store.request_stats.max_in_flight <= 64
    assert report["max_in_flight"] <= 64


async def _keys(store):
    return [k async for k in store.list()]


async def _gather(store, keys, proto):
    async def one(key):
        return _bytes(await store.get(key, proto))

    return await asyncio.gather(*(one(k) for k in keys))


def _bytes(buffer):
    return None if buffer is None else buffer.to_bytes()


def test_dask_distributed_two_worker_processes(s3_server):
    import distributed
    store = MocHiveStore(s3_url("pyramid1"), storage_options=s3_options(s3_server.url))
    size = len(pickle.dumps(store))
    print(f"\npickled store: {size} bytes")
    assert size < 2048
    local = MocHiveStore(FIXTURES / "pyramid1")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        client.run(keep_backends)
        for group in ("atl06/o7", "atl06/o5"):
            ds = xr.open_zarr(store, group=group)
            got = ds.compute()  # the chunk tasks run on the worker processes
            served = {w for w, n in client.run(requests_made).items() if n}
            xr.testing.assert_identical(got, xr.open_zarr(local, group=group).load())
            assert served, group  # the workers read from the S3 server themselves


def test_a_dask_worker_reads_the_leaf_metadata_once_across_computes(s3_server):
    """dask.distributed sends the graph, and a worker unpickles a copy of the store, for each
    array of each compute: every compute reads the leaf stamps afresh, the leaf arrays'
    metadata (immutable versions) only the first."""
    import distributed
    store = MocHiveStore(s3_url("pyramid1"), storage_options=s3_options(s3_server.url))
    ds = xr.open_zarr(store, group="atl06/o7")
    want = xr.open_zarr(MocHiveStore(FIXTURES / "pyramid1"), group="atl06/o7").load()

    def reads(since: int) -> dict[str, int]:
        """GETs at the S3 server since ``since``: leaf stamps, leaf array metadata, chunks."""
        paths = [e.path for e in s3_server.log[since:] if e.method == "GET"]
        stamps = sum(p.endswith(".zarr/zarr.json") for p in paths)
        documents = sum(p.endswith("/zarr.json") for p in paths)
        return {"stamps": stamps, "metadata": documents - stamps,
                "chunks": len(paths) - documents}

    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster, distributed.Client(cluster):
        counts = []
        for _ in range(2):
            before = len(s3_server.log)
            xr.testing.assert_identical(ds.compute(), want)
            counts.append(reads(before))
    first, second = counts
    assert first["stamps"] == second["stamps"] >= 3, counts  # 3 leaves, each array's copy
    assert first["chunks"] == second["chunks"] == 12, counts  # 3 leaves x 4 fields
    assert first["metadata"] > 0 and second["metadata"] == 0, counts
