"""Hostile keys and hostile names inside a hive never reach outside the hive root.

Every request the servers see is logged; each must touch an object below the hive
root (S3 listings: their ``prefix`` parameter).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import warnings

import pytest
import xarray as xr
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.servers import FIXTURES, PREFIX, http_options, s3_options, s3_url
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.buffer import default_buffer_prototype

from moczarr_store import HiveWarning, MocHiveStore

pytest_plugins = ["support.servers"]

PROTO = default_buffer_prototype()
_copies = itertools.count()


def assert_inside(log, root: str) -> None:
    """Every logged request touches ``root`` or an object below it; no ``..`` segment."""
    assert log
    for entry in log:
        path = entry.object_path
        assert path == root or path.startswith(root + "/"), entry
        assert ".." not in path[len(root):].split("/"), entry


# -- fuzzed virtual keys ---------------------------------------------------------------------

REAL = ["zarr.json", "atl06/zarr.json", "atl06/o7/zarr.json", "atl06/o7/count/c/0",
        "atl06/o7/h_mean/c/3", "atl06/o7/morton/c/1", "atl06/o7/count/c"]
HOSTILE = ["..", "../..", "%2e%2e", "%2E%2E%2F", "/", "//", "\\", "..\\..", "\x00", "/etc/passwd",
           "c", "0", "-1", "99999999999999999999", ".zarray", "zarr.json", "~", "?x=1", "#",
           "..%2f..%2f", "\udcff\udcfe", "%00", "./", "atl06", "o7", "run-x"]
segment = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(alphabet="./\\%2eEfF0c\x00~", max_size=12),
    st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape")),
)
keys = st.one_of(
    st.lists(segment, min_size=1, max_size=6).map("/".join),
    st.tuples(st.sampled_from(REAL), st.lists(segment, max_size=3), st.booleans()).map(
        lambda t: "/".join([*t[1], t[0]]) if t[2] else "/".join([t[0], *t[1]])
    ),
    st.sampled_from(REAL).map(lambda k: k.replace("/", "/../", 1)),
    st.integers(1, 20_000).map(lambda n: "a/" * n),
)
ranges = st.one_of(
    st.none(),
    st.builds(RangeByteRequest, st.integers(-10, 200), st.integers(-10, 200)),
    st.builds(OffsetByteRequest, st.integers(-10, 200)),
    st.builds(SuffixByteRequest, st.integers(0, 200)),
)


def _poke(store, key, byte_range) -> None:
    for call in (
        lambda: store.get(key, PROTO, byte_range),
        lambda: store.exists(key),
        lambda: _drain(store.list_dir(key)),
        lambda: store.get_partial_values(PROTO, [(key, byte_range)]),
    ):
        with contextlib.suppress(ValueError, TypeError, KeyError, OSError):
            asyncio.run(call())  # refusing is fine; reaching outside the root is not


async def _drain(iterator):
    return [item async for item in iterator]


FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _fuzz(store, server, root: str) -> None:
    @FUZZ
    @given(key=keys, byte_range=ranges)
    @example(key="atl06/o7/count/c/0", byte_range=None)  # always reach a real leaf chunk
    @example(key="atl06/o7/h_mean/c/3", byte_range=RangeByteRequest(-10, 200))
    def poke(key, byte_range):
        _poke(store, key, byte_range)
        assert_inside(server.log, root)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        asyncio.run(store.get("zarr.json", PROTO))
        poke()
    chunks = [e for e in server.log if "/c/" in e.target]
    assert chunks  # the fuzz reached real leaf chunks as well
    assert_inside(server.log, root)


def test_fuzzed_keys_stay_inside_the_hive_on_s3(fault_proxy):
    store = MocHiveStore(s3_url("bare_versioned"), storage_options=s3_options(fault_proxy.url))
    _fuzz(store, fault_proxy, f"/hive/{PREFIX}/bare_versioned")


def test_fuzzed_keys_stay_inside_the_hive_on_http(http_server):
    http_server.reset()
    store = MocHiveStore(f"{http_server.url}/bare_versioned", storage_options=http_options())
    _fuzz(store, http_server, "/bare_versioned")


# -- hostile names inside a hive ---------------------------------------------------------------


def _hive_copy(s3_server, fixture: str) -> tuple[str, str]:
    """A private S3 copy of ``fixture``: ``(key prefix, s3 URL)``."""
    prefix = f"{PREFIX}/hostile-{next(_copies)}/{fixture}"
    s3_server.upload_tree(FIXTURES / fixture, prefix)
    return prefix, f"s3://hive/{prefix}"


def _json(fixture: str, rel: str) -> dict:
    return json.loads((FIXTURES / fixture / rel).read_bytes())


NAMES = ["%2e%2e", "..%2f..", "a%2Fb", "a\\b", "x y", "UPPER", "caf\u00e9", "-4", "icechunk",
         "..x", "a..b"]


def test_hostile_product_directories_are_skipped(s3_server, fault_proxy):
    prefix, url = _hive_copy(s3_server, "multiproduct")
    manifest = (FIXTURES / "multiproduct/atl06_a/morton_hive.json").read_bytes()
    for name in NAMES:
        s3_server.put(f"{prefix}/{name}/morton_hive.json", manifest)
    store = MocHiveStore(url, storage_options=s3_options(fault_proxy.url))
    root = zarr.open_group(store, mode="r")
    assert sorted(root.group_keys()) == ["atl06_a", "atl06_b"]
    xr.open_zarr(store, group="atl06_a/o6").load()
    assert_inside(fault_proxy.log, f"/hive/{prefix}")
    touched = {e.object_path.split(f"{prefix}/", 1)[-1].split("/")[0] for e in fault_proxy.log}
    assert not touched & set(NAMES)


@pytest.mark.parametrize("name", ["..", "."])
def test_a_dot_segment_product_directory_is_refused(s3_server, fault_proxy, name):
    prefix, url = _hive_copy(s3_server, "multiproduct")
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    # botocore would normalise the dot segment away: put the key into moto directly
    s3_backends[DEFAULT_ACCOUNT_ID]["global"].put_object(
        "hive", f"{prefix}/{name}/morton_hive.json", b"{}"
    )
    store = MocHiveStore(url, storage_options=s3_options(fault_proxy.url))
    with pytest.raises(ValueError, match="cannot be listed to find products"):
        zarr.open_group(store, mode="r")
    assert_inside(fault_proxy.log, f"/hive/{prefix}")


LEAF = "4/4/4/1/1/2/444112.zarr"
POINTERS = ["run-../../x", "../../../../outside", "run-x/../../../..", "/abs/run-x",
            "run-%2e%2e", "run-a/b", "run-\\..\\..", "run-" + "a" * 300, "run-x\x00", 7, "",
            "run-..", "run-x/"]


@pytest.mark.parametrize("current", POINTERS, ids=repr)
def test_a_current_pointer_crafted_to_escape_is_refused(s3_server, fault_proxy, current):
    prefix, url = _hive_copy(s3_server, "bare_versioned")
    meta = _json("bare_versioned", f"{LEAF}/zarr.json")
    meta["attributes"]["morton_hive_commit"]["current"] = current
    s3_server.put(f"{prefix}/{LEAF}/zarr.json", json.dumps(meta).encode())
    # one leaf a chunk, where a bad stamp is an error (a joined chunk reads it as fill)
    store = MocHiveStore(url, chunking="leaf", storage_options=s3_options(fault_proxy.url))
    with pytest.raises(ValueError, match=f"{LEAF}: commit stamp 'current' pointer .* is "
                                         "malformed"):
        xr.open_zarr(store, group="atl06/o7").load()
    assert_inside(fault_proxy.log, f"/hive/{prefix}")
    assert not any(LEAF + "/" in e.object_path and not e.object_path.endswith(
        f"{LEAF}/zarr.json") for e in fault_proxy.log)  # nothing read through the pointer


@pytest.mark.parametrize("label", ["../../x", "..", "a/b", "%2e%2e", "x\x00", "all", ""])
def test_a_window_label_crafted_to_escape_is_refused(s3_server, fault_proxy, label):
    prefix, url = _hive_copy(s3_server, "windowed_explicit")
    manifest = _json("windowed_explicit", "morton_hive.json")
    manifest["temporal"]["windows"][0]["label"] = label
    s3_server.put(f"{prefix}/morton_hive.json", json.dumps(manifest).encode())
    store = MocHiveStore(url, storage_options=s3_options(fault_proxy.url))
    with pytest.raises(ValueError, match="is not a valid window label"):
        zarr.open_group(store, mode="r")
    with pytest.raises(ValueError, match="is not a valid window label"):
        zarr.open_group(MocHiveStore(s3_url("windowed_explicit"), window=label,
                                     storage_options=s3_options(fault_proxy.url)), mode="r")
    assert_inside(fault_proxy.log, f"/hive/{PREFIX}")


def test_walked_leaf_names_with_hostile_window_labels_are_ignored(s3_server, fault_proxy):
    prefix, url = _hive_copy(s3_server, "windowed")
    s3_server.delete(f"{prefix}/coverage.moc")  # discovery by the walk
    stamp = (FIXTURES / "windowed/4/4/4/1/1/1/444111_2019.zarr/zarr.json").read_bytes()
    evil = ["444111_..%2F..%2Fx.zarr", "444111_%2e%2e.zarr", "444111_a b.zarr", "444111_..zarr"]
    for name in evil:
        s3_server.put(f"{prefix}/4/4/4/1/1/1/{name}/zarr.json", stamp)
    store = MocHiveStore(url, storage_options=s3_options(fault_proxy.url))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        local = MocHiveStore(FIXTURES / "windowed")
        assert sorted(zarr.open_group(store, mode="r")["atl06/o7"].array_keys()) == sorted(
            zarr.open_group(local, mode="r")["atl06/o7"].array_keys())
        xr.open_zarr(store, group="atl06/o7").load()
    assert_inside(fault_proxy.log, f"/hive/{prefix}")
    assert not any(name in e.target for e in fault_proxy.log for name in evil)
