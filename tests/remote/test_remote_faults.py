"""Transport faults between the store and S3, injected by a loopback proxy.

Retries are obstore's (``retry_config``, passed through as a storage option). What
each fault class does, measured here with ``max_retries=2``:

- ``503``, connection reset, slow response (past the client ``timeout``): retried;
  at most ``max_retries`` faults in a row read correctly, one more raises an error
  whose message names the object (URL) and says "after 2 retries".
- truncated body (``Content-Length`` larger than the body, then a close): obstore
  retries the body read as well; after the budget the error names the object
  (``ObjectReadError``, or ``ChunkReadError`` for a leaf chunk).
- a lying server (body cut, ``Content-Length`` matching): not a transport error;
  the store's chunk checks (uncompressed size, shard index crc32c) raise, naming
  the leaf object.
- a server answering a ranged GET with another range: obstore's response checks refuse
  it; the error names the object. One answering with the whole object (``200``, a proxy
  that drops ``Range``): ranges are read from whole GETs from then on, exactly.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from support.servers import FIXTURES, Fault, assert_same_read, s3_options, s3_url

from moczarr_store import ChunkReadError, HiveWarning, MocHiveStore

pytest_plugins = ["support.servers"]

MAX_RETRIES = 2  # servers.RETRY
CHUNK = "4/4/4/1/1/1/444111.zarr/run-ead6688f2fc0493fb9a8235e9b8ba3a9-1c9f5a5b/7/h_mean/c/0"
TRANSIENT = ["status", "reset", "slow", "truncate"]
FAST_TIMEOUT = {"client_options": {"timeout": "400ms", "connect_timeout": "400ms"}}
DELAY = 0.5  # a "slow" answer comes after the client timeout
METADATA = [(kind, key) for key in ("morton_hive.json", "coverage.moc", "444111.zarr/zarr.json")
            for kind in TRANSIENT if kind != "slow" or key == "coverage.moc"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


def _store(proxy, name="bare_versioned"):
    return MocHiveStore(s3_url(name), storage_options=s3_options(proxy.url, **FAST_TIMEOUT))


def _attempts(proxy, match):
    return [e for e in proxy.log if match in e.target and e.method == "GET"]


@pytest.mark.parametrize("kind", TRANSIENT)
def test_transient_chunk_faults_are_retried_to_the_right_values(fault_proxy, kind):
    store = _store(fault_proxy)
    ds = xr.open_zarr(store, group="atl06/o7")  # opening reads no data chunk
    fault_proxy.inject(Fault(kind, match=CHUNK, times=MAX_RETRIES, delay=DELAY))
    got = ds["h_mean"].load()
    want = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group="atl06/o7")["h_mean"]
    np.testing.assert_array_equal(got.values, want.values)
    attempts = _attempts(fault_proxy, CHUNK)
    assert [e.fault for e in attempts] == [kind] * MAX_RETRIES + [None]


@pytest.mark.parametrize("kind", TRANSIENT)
def test_persistent_chunk_faults_raise_naming_the_object(fault_proxy, kind):
    store = _store(fault_proxy)
    ds = xr.open_zarr(store, group="atl06/o7")
    fault_proxy.inject(Fault(kind, match=CHUNK, times=100, delay=DELAY))
    with pytest.raises(ChunkReadError, match=CHUNK.replace(".", r"\.")) as caught:
        ds["h_mean"].load()
    assert len(_attempts(fault_proxy, CHUNK)) == MAX_RETRIES + 1
    if kind != "truncate":
        assert f"after {MAX_RETRIES} retries" in str(caught.value)


@pytest.mark.parametrize(("kind", "key"), METADATA)
def test_persistent_faults_on_hive_metadata_raise_naming_the_object(fault_proxy, kind, key):
    store = _store(fault_proxy)
    fault_proxy.inject(Fault(kind, match=key, times=100, delay=DELAY))
    with pytest.raises(Exception, match=key.replace(".", r"\.")):
        xr.open_zarr(store, group="atl06/o7")
    assert len(_attempts(fault_proxy, key)) == MAX_RETRIES + 1


@pytest.mark.parametrize("kind", TRANSIENT)
def test_transient_faults_everywhere_still_read_identically(fault_proxy, kind):
    """One fault on every object (manifest, MOC, stamps, metadata, chunks)."""
    times = 4 if kind == "slow" else 1000  # slow answers cost 0.4 s each
    fault_proxy.inject(Fault(kind, times=times, delay=DELAY, per_target=True))
    store = _store(fault_proxy, "sharded")
    assert_same_read(store, MocHiveStore(FIXTURES / "sharded"), "atl06/o7")
    faulted = [e.target for e in fault_proxy.log if e.fault == kind]
    assert len(faulted) == len(set(faulted)) >= min(times, 10)
    assert all(e.fault is None for e in fault_proxy.log if e.target not in faulted)


@pytest.mark.parametrize(("name", "group", "var", "message"), [
    ("bare_versioned", "atl06/o7", "h_mean", "an uncompressed chunk of 64 bytes was expected"),
    # which chunk is cut first depends on scheduling (the leaves of a span are read
    # concurrently): a short one cannot hold the index, a longer one fails its checksum
    ("sharded", "atl06/o7", "count", "shard index does not check|cannot hold a 260-byte index"),
    ("ragged", "atl06/o6", "count", "shard index does not check|cannot hold a 68-byte index"),
])
def test_a_lying_server_cut_body_is_an_error_not_short_data(fault_proxy, name, group, var,
                                                            message):
    store = _store(fault_proxy, name)
    ds = xr.open_zarr(store, group=group)
    fault_proxy.inject(Fault("short", match=f"/{var}/c/", times=1))
    with pytest.raises(OSError, match=message) as caught:
        ds[var].load()
    cut = next(e for e in fault_proxy.log if e.fault == "short")
    leaf_key = cut.path.split(f"/{name}/", 1)[1]
    assert leaf_key in str(caught.value)


def test_a_server_answering_another_range_is_an_error_not_shifted_bytes(fault_proxy):
    """``chunking="inner"`` reads inner chunks by range: a server that answers another
    range (its ``Content-Range`` honest) is refused by obstore's response checks, naming
    the object."""
    message = r"Requested (\d+)\.\.(\d+), got (\d+)\.\.(\d+)"
    store = MocHiveStore(s3_url("sharded"), chunking="inner",
                         storage_options=s3_options(fault_proxy.url, **FAST_TIMEOUT))
    array = zarr.open_group(store, mode="r")["atl06/o7/h_mean"]
    fault_proxy.inject(Fault("later", match="/h_mean/c/", times=1000))
    with pytest.raises(ChunkReadError, match=message) as caught:
        array[:]
    text = str(caught.value)
    assert re.match(r"reading \S+\.zarr/run-[0-9a-f-]+/7/h_mean/c/0 from s3://\S+: \w", text)
    assert text.count(" from s3://") == 1  # the object named once
    start, end, got_start, got_end = map(int, re.search(message, text).groups())
    assert (got_start, got_end) == (start + 1, end + 1)


def test_a_proxy_that_drops_range_still_reads_exactly(fault_proxy, caplog):
    """A ranged GET answered ``200`` with the whole object (obstore's S3 store: "non-partial
    response when range requested"): from then on ranges are read from whole GETs, logged
    once; every inner chunk reads as from the local hive."""
    store = MocHiveStore(s3_url("sharded"), chunking="inner",
                         storage_options=s3_options(fault_proxy.url, **FAST_TIMEOUT))
    array = zarr.open_group(store, mode="r")["atl06/o7/h_mean"]
    fault_proxy.inject(Fault("whole", match="/h_mean/c/", times=1000))
    with caplog.at_level("WARNING", logger="moczarr_store"):
        got = array[:]
    want = zarr.open_group(MocHiveStore(FIXTURES / "sharded", chunking="inner"),
                           mode="r")["atl06/o7/h_mean"][:]
    np.testing.assert_array_equal(got, want)
    assert [r.getMessage().split(" answers ")[1][:40] for r in caplog.records] == [
        "a ranged GET with the whole object (it i"]
    assert store.request_stats.counts["get_range"] >= 1
