"""The HTTP endpoint's protocol: statuses, ranges, entity tags, caching, CORS, errors and
the stamp lifetime, against uvicorn on loopback."""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import time
import warnings
from asyncio import run as sync

import moczarr
import numpy as np
import pytest
import zarr
from support.hives import assert_values, grown_after_open, rebound, repoint
from support.serving import CHUNK, FIXTURES, Served, fetch, obstore_client

from moczarr_store import MocHiveStore, OptionError
from moczarr_store.read.plan import Absent, LeafRead, plan_key
from moczarr_store.serve import create_app
from moczarr_store.serve.env import OPENED_HIVE, app_from_env, to_env
from moczarr_store.serve.generations import Generations
from moczarr_store.serve.representation import UNSATISFIABLE, ByteRange, byte_range
from moczarr_store.serve.run import opened_hive


def plan_of(store: MocHiveStore, key: str) -> LeafRead:
    plan = sync(plan_key(store.session, key))
    assert isinstance(plan, LeafRead), plan
    return plan


@pytest.fixture(scope="module")
def sharded():
    """The sharded fixture in shard mode (chunks pass through: sizes come from a HEAD)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(create_app(FIXTURES / "sharded", chunking="shard", stamp_ttl=600)) as s:
            yield s


# -- ranges (pure) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "want"),
    [
        (None, None),
        ("bytes=0-9", ByteRange(0, 10)),
        ("bytes=10-", ByteRange(10, 100)),
        ("bytes=-10", ByteRange(90, 100)),
        ("bytes=-1000", ByteRange(0, 100)),
        ("bytes=90-1000", ByteRange(90, 100)),
        ("bytes=0-" + "9" * 40, ByteRange(0, 100)),
        ("BYTES = 5 - 6", ByteRange(5, 7)),
        ("bytes=100-", UNSATISFIABLE),
        ("bytes=" + "9" * 40 + "-", UNSATISFIABLE),
        ("bytes=-0", UNSATISFIABLE),
        ("bytes=0-1,3-4", None),  # several ranges: the whole representation
        ("bytes=5-4", None),  # last < first: invalid, ignored
        ("items=0-1", None),
        ("bytes=-", None),
        ("bytes=a-b", None),
    ],
)
def test_byte_range(header, want):
    assert byte_range(header, 100) == want


# -- statuses --------------------------------------------------------------------------------


def test_get_and_head_agree_and_head_reads_no_chunk(sharded):
    status, headers, body = fetch(sharded, f"/{CHUNK}")
    assert status == 200 and int(headers["content-length"]) == len(body) > 0
    assert headers["accept-ranges"] == "bytes" and headers["content-type"] == (
        "application/octet-stream"
    )
    store = sharded.store
    store.request_stats.reset()
    status, head_headers, head_body = fetch(sharded, f"/{CHUNK}", "HEAD")
    assert (status, head_body) == (200, b"")
    assert head_headers["content-length"] == str(len(body))
    assert head_headers["etag"] == headers["etag"]
    assert dict(store.request_stats.counts) == {"head": 1}  # a HEAD, no chunk read
    store.request_stats.reset()
    fetch(sharded, f"/{CHUNK}", "HEAD")
    assert store.request_stats.total == 0  # the size of an immutable object is kept


def test_ranges(sharded):
    _, _, whole = fetch(sharded, f"/{CHUNK}")
    n = len(whole)
    for header, lo, hi in (("bytes=3-9", 3, 10), (f"bytes={n - 5}-", n - 5, n),
                           ("bytes=-7", n - 7, n), (f"bytes=2-{10 * n}", 2, n)):
        status, headers, body = fetch(sharded, f"/{CHUNK}", Range=header)
        assert status == 206, header
        assert headers["content-range"] == f"bytes {lo}-{hi - 1}/{n}", header
        assert body == whole[lo:hi] and headers["content-length"] == str(hi - lo), header
    status, headers, body = fetch(sharded, f"/{CHUNK}", Range=f"bytes={n}-")
    assert (status, headers["content-range"], body) == (416, f"bytes */{n}", b"")
    status, _, body = fetch(sharded, f"/{CHUNK}", Range="bytes=0-1,3-4")
    assert (status, body) == (200, whole)
    status, headers, body = fetch(sharded, f"/{CHUNK}", "HEAD", Range="bytes=1-2")
    assert (status, headers["content-range"], headers["content-length"], body) == (
        206, f"bytes 1-2/{n}", "2", b""
    )


def test_ranges_of_documents(sharded):
    _, _, whole = fetch(sharded, "/zarr.json")
    status, headers, body = fetch(sharded, "/zarr.json", Range="bytes=-20")
    assert (status, body) == (206, whole[-20:])
    assert headers["content-range"] == f"bytes {len(whole) - 20}-{len(whole) - 1}/{len(whole)}"
    assert headers["content-type"] == "application/json"


def test_unknown_keys_are_404_without_backend_requests(sharded):
    fetch(sharded, f"/{CHUNK}")  # the hive is open
    store = sharded.store
    store.request_stats.reset()
    for path in ("/nope/zarr.json", "/atl06/o7/nope/c/0", "/atl06/o7/h_mean/c/999999",
                 "/atl06/o7/h_mean/c/0/0", "/atl06/o7/h_mean/c/00", "/morton_hive.json",
                 "/coverage.moc", "/atl06/o7/h_mean/.zarray", "/atl06/o7/h_mean/", "/atl06",
                 "/-4/1/1/3/3/1/-411331.zarr/zarr.json", "/atl06//o7/zarr.json"):
        status, headers, _ = fetch(sharded, path)
        assert status == 404, path
        assert headers["cache-control"] == "public, no-cache", path
    assert store.request_stats.total == 0


def test_writes_are_405(sharded):
    for method in ("PUT", "POST", "DELETE", "PATCH"):
        status, headers, _ = fetch(sharded, "/zarr.json", method)
        assert status == 405, method
        assert set(headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}


def test_index_page_is_the_viewer_for_browsers(sharded):
    """``GET /`` asking for HTML (a browser) is the viewer page (it reads the hierarchy
    itself), or without one a line naming the root metadata; any other client gets the
    root's directory index (see test_gdal_discovery)."""
    html = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    status, headers, body = fetch(sharded, "/", **html)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"viewer.js" in body and b"atl06" not in body
    with Served(create_app(FIXTURES / "sharded", static_dir=None)) as bare:
        status, _, body = fetch(bare, "/", **html)
        assert status == 200 and b"zarr.json" in body and b"atl06" not in body
        status, _, body = fetch(bare, "/", Accept="*/*")
        assert status == 200 and b'<a href="atl06/">atl06/</a>' in body


def test_absent_chunk_is_404():
    """A window with no leaf for a node reads as the fill value: 404 (never 500)."""
    store = MocHiveStore(FIXTURES / "windowed", chunking="leaf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = zarr.open_group(store, path="atl06/o7", mode="r")["count"].cdata_shape
    keys = [f"atl06/o7/count/c/{w}/{k}" for w in range(grid[0]) for k in range(grid[1])]
    absent = [k for k in keys if isinstance(sync(plan_key(store.session, k)), Absent)]
    assert absent, "the windowed fixture has (node, window) pairs without a leaf"
    with Served(create_app(FIXTURES / "windowed", chunking="leaf")) as server:
        for key in absent:
            assert fetch(server, f"/{key}")[0] == 404, key
            assert fetch(server, f"/{key}", "HEAD")[0] == 404, key


# -- entity tags and caching ----------------------------------------------------------------


def test_content_tags_and_revalidation(sharded):
    for key in ("zarr.json", "atl06/o7/zarr.json", "atl06/o7/morton/c/0"):
        status, headers, body = fetch(sharded, f"/{key}")
        want = f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'
        assert status == 200 and headers["etag"] == want, key
        status, again, body = fetch(sharded, f"/{key}", If_None_Match=f'"x", W/{want}')
        assert (status, body, again["etag"]) == (304, b"", want), key
        assert fetch(sharded, f"/{key}", If_None_Match='"other"')[0] == 200, key


def test_immutable_chunk_revalidates_without_reading(sharded):
    _, headers, _ = fetch(sharded, f"/{CHUNK}")
    store = sharded.store
    store.request_stats.reset()
    status, again, body = fetch(sharded, f"/{CHUNK}", If_None_Match=headers["etag"])
    assert (status, body, again["etag"]) == (304, b"", headers["etag"])
    assert store.request_stats.total == 0  # the stamp names the version: nothing to read


def test_a_span_of_immutable_leaves_is_tagged_by_its_plan_and_revalidates_without_reading():
    with Served(create_app(FIXTURES / "sharded", chunking=2, stamp_ttl=600)) as server:
        status, headers, body = fetch(server, f"/{CHUNK}")
        assert status == 200 and len(body) == 2 * 64 * 4  # two leaves of 64 float32 h_mean
        assert headers["etag"] != f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'
        server.store.request_stats.reset()
        status, again, body = fetch(server, f"/{CHUNK}", If_None_Match=headers["etag"])
        assert (status, body, again["etag"]) == (304, b"", headers["etag"])
        assert server.store.request_stats.total == 0
    with Served(create_app(FIXTURES / "sharded", chunking=3, stamp_ttl=600)) as server:
        assert fetch(server, f"/{CHUNK}")[1]["etag"] != headers["etag"]  # other leaves


def test_if_range(sharded):
    _, headers, whole = fetch(sharded, f"/{CHUNK}")
    status, _, body = fetch(sharded, f"/{CHUNK}", Range="bytes=0-3", If_Range=headers["etag"])
    assert (status, body) == (206, whole[:4])
    status, _, body = fetch(sharded, f"/{CHUNK}", Range="bytes=0-3", If_Range='"stale"')
    assert (status, body) == (200, whole)


def test_unversioned_leaf_chunks_are_tagged_by_content():
    with Served(create_app(FIXTURES / "legacy", chunking="leaf")) as server:
        store = MocHiveStore(FIXTURES / "legacy", chunking="leaf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not plan_of(store, CHUNK).immutable
        status, headers, body = fetch(server, f"/{CHUNK}")
        assert status == 200
        assert headers["etag"] == f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'


def test_max_age_never_exceeds_the_stamp_lifetime():
    with Served(create_app(FIXTURES / "sharded", stamp_ttl=5, geometry="sphere")) as server:
        for key in ("/zarr.json", f"/{CHUNK}", "/nope/zarr.json"):
            cache = fetch(server, key)[1]["cache-control"]
            age = int(cache.split("public, max-age=")[1])
            assert 0 <= age <= 5, (key, cache)


@pytest.mark.parametrize(("fixture", "options", "reused"), [
    ("sharded", {}, False),
    ("sharded", {"geometry": "sphere"}, True),
    ("windowed", {"geometry": "sphere"}, False),  # a window added first moves that axis
    ("windowed", {"geometry": "sphere", "window": "2019"}, True),
])
def test_answers_are_reused_unasked_only_where_keys_keep_their_cells(fixture, options, reused):
    with Served(create_app(FIXTURES / fixture, **options)) as server:
        assert fetch(server, "/.zgroup")[0] == 404  # before the hive is open (was a 500)
        for key in ("/zarr.json", "/atl06/o7/count/zarr.json", "/atl06/o7/count/c/0",
                    "/atl06/o7/morton/c/0", "/atl06/o7/count/c/999999"):
            cache = fetch(server, key)[1]["cache-control"]
            assert cache.startswith("public, max-age=" if reused else "public, no-cache"), key


def test_a_client_revalidating_after_a_restart_on_a_grown_hive_gets_the_new_answers(
    hive_copy, tmp_path
):
    """A restart on a grown hive moves the chunks after the added leaf: a client's
    cache may not reuse them unasked (``no-cache``), and asking again with their tags
    answers each key as the restarted server does (a 304 only for the same bytes)."""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    keys = ["/zarr.json", "/atl06/o7/count/zarr.json",
            *(f"/atl06/o7/{name}/c/{i}" for name in ("count", "h_max", "morton") for i in (0, 1))]
    with Served(create_app(root, chunking="leaf")) as server:
        cached = {key: fetch(server, key) for key in keys}
    land()
    with Served(create_app(root, chunking="leaf")) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        changed = 0
        for key, (status, headers, body) in cached.items():
            assert (status, headers["cache-control"]) == (200, "public, no-cache"), key
            now = fetch(server, key)
            again = fetch(server, key, **{"If-None-Match": headers["etag"]})
            seen = body if again[0] == 304 else again[2]
            assert seen == now[2], key
            changed += body != now[2]
    assert changed >= 3  # the count array's shape, and chunk 1 of each field: another node


def test_generations_expire_on_the_clock():
    now = [0.0]
    made = []

    def make():
        made.append(MocHiveStore(FIXTURES / "sharded"))
        return made[-1]

    generations = Generations(make, 10, clock=lambda: now[0])
    first = generations.current()
    assert first.max_age(now[0]) == 10
    now[0] = 9.5
    assert generations.current() is first and first.max_age(now[0]) == 0
    now[0] = 10.0
    second = generations.current()
    assert second is not first and second.store is made[-1] and len(made) == 2
    assert second.max_age(now[0]) == 10


def test_a_new_generation_uses_the_computed_chunks_its_predecessor_kept():
    """pyramid1's o6 computes: the next generation reads each leaf's stamp again, and
    nothing else, to serve the chunks the first one folded."""
    now = [0.0]
    generations = Generations(lambda: MocHiveStore(FIXTURES / "pyramid1"), 10,
                              clock=lambda: now[0])
    first = generations.current().store
    values = zarr.open_array(first, path="atl06/o6/count", mode="r")[:]
    now[0] = 10.0
    second = generations.current().store
    assert second is not first
    array = zarr.open_array(second, path="atl06/o6/count", mode="r")
    before = second.request_stats.total
    np.testing.assert_array_equal(array[:], values)
    leaves = np.unique(moczarr.parent_cells(moczarr.open_hive(
        str(FIXTURES / "pyramid1"))["morton"].values, 5)).size  # its shard order
    assert second.request_stats.total - before == leaves


@pytest.mark.parametrize("ttl", [0, -1, float("inf"), float("nan"), "soon"])
def test_bad_stamp_ttl(ttl):
    with pytest.raises(ValueError, match="stamp_ttl"):
        create_app(FIXTURES / "sharded", stamp_ttl=ttl)


# -- a leaf re-pointed while the server runs ------------------------------------------------------


def test_repointed_leaf_is_seen_within_the_stamp_lifetime(hive_copy):
    root = hive_copy("bare_versioned")
    ttl = 2.0
    app = create_app(root, stamp_ttl=ttl, chunking="leaf")
    with Served(app) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        remote = zarr.open_group(obstore_client(server.url), mode="r")["atl06/o7/h_mean"]
        chunk = remote.chunks[0]
        before = remote[:chunk]
        _, headers, _ = fetch(server, f"/{CHUNK}")
        generation = app.state.generations.current()
        plan = plan_of(generation.store, CHUNK)
        repoint(root, plan, 1.0)
        if generation.expires - time.monotonic() > 0.5:  # same generation: old version
            np.testing.assert_array_equal(remote[:chunk], before)
            assert fetch(server, f"/{CHUNK}")[1]["etag"] == headers["etag"]
        time.sleep(max(0.0, generation.expires - time.monotonic()) + 0.05)
        np.testing.assert_array_equal(remote[:chunk], before + 1.0)
        _, after, _ = fetch(server, f"/{CHUNK}")
        assert after["etag"] != headers["etag"]
        assert plan_of(app.state.generations.current().store, CHUNK).object.startswith(
            f"{plan.leaf}/run-repointed-1/"
        )


def test_a_span_whose_leaf_moved_gets_a_new_tag_within_a_generation(hive_copy):
    """A span's tag is kept while its plan holds; a leaf committed anew, its old version
    removed, is planned again at once and so tagged again, within one generation."""
    import shutil

    root = hive_copy("bare_versioned")
    with Served(create_app(root, chunking=2, stamp_ttl=600)) as server:
        _, first, body = fetch(server, f"/{CHUNK}")
        assert fetch(server, f"/{CHUNK}")[1]["etag"] == first["etag"]  # kept
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_of(MocHiveStore(root, chunking="leaf"), CHUNK)
        old = plan.object.removeprefix(f"{plan.leaf}/").split("/")[0]
        repoint(root, plan, 1.0)
        shutil.rmtree(root / plan.leaf / old)
        status, after, moved = fetch(server, f"/{CHUNK}")
        assert status == 200 and after["etag"] != first["etag"]
        part = len(body) // 8  # float32 cells of the first of the span's two leaves
        before, now = np.frombuffer(body, "<f4"), np.frombuffer(moved, "<f4")
        np.testing.assert_array_equal(now[:part], before[:part] + 1.0)
        np.testing.assert_array_equal(now[part:], before[part:])


def test_each_generation_of_a_served_store_reads_the_stamps_afresh(hive_copy):
    """Served from a store (not a path), every later generation is a copy of it: each reads
    the stamps again."""
    root = hive_copy("bare_versioned")
    store = MocHiveStore(root, chunking="leaf")
    zarr.open_group(store, mode="r")  # opened: what it presents is known
    app = create_app(store, stamp_ttl=600)
    with Served(app):
        generations = app.state.generations
        generations.expire()
        plan = plan_of(generations.current().store, CHUNK)  # the second generation
        repoint(root, plan, 1.0)
        generations.expire()
        third = plan_of(generations.current().store, CHUNK)
        assert third.object.startswith(f"{plan.leaf}/run-repointed-1/"), third.object


def test_a_client_reads_the_nodes_it_was_shown_after_the_hive_grew(hive_copy, tmp_path):
    """Every generation keeps the structure the first one opened: a leaf added between two
    others would otherwise move the chunks after it one node on, under the array metadata
    a client already holds."""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    want = moczarr.open_hive(str(root))
    app = create_app(root)
    with Served(app) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        remote = zarr.open_group(obstore_client(server.url), mode="r")["atl06/o7"]
        land()
        app.state.generations.expire()
        for name in [*want.data_vars, "morton"]:
            assert_values(remote[name][:], want[name].values, name)
        assert app.state.generations.count == 2
    assert zarr.open_group(MocHiveStore(root), mode="r")["atl06/o7/count"].shape == (48,)


def test_workers_present_the_view_the_command_opened(hive_copy, tmp_path):
    """``serve --workers N`` opens the hive once and hands every worker that view (a file
    named in the environment); a worker opening the hive at its own first request, after
    a writer added a leaf, would move the chunks after it one node on."""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    want = moczarr.open_hive(str(root))
    opened = tmp_path / "hive.pickle"
    opened.write_bytes(pickle.dumps(opened_hive(str(root), {})))
    land()
    env = to_env(str(root))
    with Served(app_from_env({**env, OPENED_HIVE: str(opened)})) as server, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        remote = zarr.open_group(obstore_client(server.url), mode="r")["atl06/o7"]
        for name in [*want.data_vars, "morton"]:
            assert_values(remote[name][:], want[name].values, name)
    with Served(app_from_env(env)) as server:  # no view: the hive as it is now
        assert zarr.open_group(obstore_client(server.url), mode="r")["atl06/o7/count"].shape == (
            48,)


def test_a_sphere_server_restarted_on_a_grown_hive_keeps_its_clients_right(hive_copy, tmp_path):
    """With ``geometry="sphere"`` a chunk names one node of the sphere whatever the hive
    covers: a client holding an array's metadata from before a restart on a grown hive
    reads every node where it was, the added leaf's node now with its values. (With the
    default geometry the restart moves the chunks after the added leaf one node on.)"""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    with Served(create_app(root, geometry="sphere")) as server:
        group = zarr.open_group(obstore_client(server.url), mode="r")["atl06/o7"]
        held = {name: group[name] for name in ("count", "h_max", "morton")}
    land()
    want = moczarr.open_hive(str(root))
    # NESTED ids: the row of each cell in a sphere array (int64: zarr 3.1 turns uint64
    # index arrays into floats)
    rows = want["cell_ids"].values.astype(np.int64)
    with Served(create_app(root, geometry="sphere")) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = obstore_client(server.url)  # the client's URL, now a restarted server
        for name, array in held.items():
            got = rebound(array, client).oindex[rows]
            assert got.dtype == want[name].dtype, name
            assert_values(got, want[name].values, name)
    assert want.sizes["cells"] == 48


def test_an_opened_hive_file_that_cannot_be_read_is_an_error_naming_the_variable(tmp_path):
    env = to_env(str(FIXTURES / "sharded"))
    for opened, why in ((tmp_path / "gone.pickle", "FileNotFoundError"),
                        (tmp_path / "empty.pickle", "EOFError")):
        if why == "EOFError":
            opened.write_bytes(b"")
        with pytest.raises(OptionError, match=f"MOCZARR_STORE_OPENED_HIVE='{opened}' cannot be "
                                              f"read \\({why}"):
            app_from_env({**env, OPENED_HIVE: str(opened)})


def test_unchanged_leaf_keeps_its_tag_across_generations():
    app = create_app(FIXTURES / "sharded")
    with Served(app) as server:
        first = fetch(server, f"/{CHUNK}")[1]["etag"]
        app.state.generations.expire()
        assert fetch(server, f"/{CHUNK}")[1]["etag"] == first
        assert app.state.generations.count == 2


# -- errors -----------------------------------------------------------------------------------


def test_damaged_leaf_is_502_naming_the_object_and_logged_once(hive_copy, caplog):
    root = hive_copy("sharded")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_of(MocHiveStore(root, chunking="leaf"), CHUNK)  # the shard is re-framed
    path = root / plan.object
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the index's crc32c no longer matches
    path.write_bytes(bytes(data))
    caplog.set_level(logging.ERROR, logger="moczarr_store.serve")
    with Served(create_app(root, chunking="leaf")) as server:
        for _ in range(3):
            status, headers, body = fetch(server, f"/{CHUNK}")
            assert status == 502
            assert plan.object in body.decode() and body.count(b"\n") == 1
            assert headers["cache-control"] == "no-store"
        assert fetch(server, "/zarr.json")[0] == 200  # the server lives on
    logged = [r for r in caplog.records if r.name == "moczarr_store.serve"]
    assert len(logged) == 1 and plan.object in logged[0].getMessage()


def test_debris_leaf_is_404_with_a_warning(hive_copy):
    root = hive_copy("bare_versioned")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_of(MocHiveStore(root, chunking="leaf"), CHUNK)
    stamp = root / plan.leaf / "zarr.json"
    doc = json.loads(stamp.read_text())
    del doc["attributes"]["morton_hive_commit"]
    stamp.write_text(json.dumps(doc))
    with Served(create_app(root, chunking="leaf")) as server, \
            pytest.warns(Warning, match="unstamped debris"):
        assert fetch(server, f"/{CHUNK}")[0] == 404


def test_unreadable_hive_is_502(tmp_path):
    with Served(create_app(tmp_path / "gone")) as server:
        status, _, body = fetch(server, "/zarr.json")
        assert status == 502 and body.count(b"\n") == 1
        assert body.startswith(b"FileNotFoundError: hive root <hive> does not exist")


# -- CORS -----------------------------------------------------------------------------------------


def test_cors():
    origin = "http://viewer.example"
    with Served(create_app(FIXTURES / "sharded", cors=[origin])) as server:
        _, headers, _ = fetch(server, f"/{CHUNK}", Origin=origin, Range="bytes=0-1")
        assert headers["access-control-allow-origin"] == origin
        exposed = {h.strip().lower() for h in headers["access-control-expose-headers"].split(",")}
        assert {"content-range", "content-length", "etag", "accept-ranges"} <= exposed
        status, headers, _ = fetch(
            server, f"/{CHUNK}", "OPTIONS", Origin=origin,
            Access_Control_Request_Method="GET", Access_Control_Request_Headers="range",
        )
        assert status == 200 and "range" in headers["access-control-allow-headers"].lower()
        assert "access-control-allow-origin" not in fetch(
            server, f"/{CHUNK}", Origin="http://elsewhere.example")[1]
    with Served(create_app(FIXTURES / "sharded")) as server:  # no CORS unless asked
        assert "access-control-allow-origin" not in fetch(server, "/zarr.json", Origin=origin)[1]


# -- deployment hooks ---------------------------------------------------------------------------


def test_app_from_env():
    """The factory a worker process imports builds the app the variables describe."""
    from moczarr_store.serve import app_from_env
    from moczarr_store.serve.env import to_env

    env = to_env(str(FIXTURES / "sharded"), cors=["*"], stamp_ttl=7, chunking="inner",
                 geometry="sphere", max_concurrency=3)
    app = app_from_env(env)
    store = app.state.generations.current().store
    assert (store.chunking, app.state.generations.stamp_ttl) == ("inner", 7.0)
    assert store.options.geometry == "sphere"
    assert store.backend.max_concurrency == 3
    with pytest.raises(ValueError, match="MOCZARR_STORE_MAX_CONCURRENCY='3.5': expected an int"):
        app_from_env({**env, "MOCZARR_STORE_MAX_CONCURRENCY": "3.5"})
    with Served(app) as server:
        assert fetch(server, "/zarr.json", Origin="http://x")[1][
            "access-control-allow-origin"] == "*"
    with pytest.raises(ValueError, match="MOCZARR_STORE_SOURCE"):
        app_from_env({})


def test_static_viewer_hook(tmp_path):
    """A viewer page at ``/`` and its files under ``/.static/`` (no listing)."""
    (tmp_path / "index.html").write_text("<html>viewer</html>")
    (tmp_path / "app.js").write_text("console.log(1)")
    with Served(create_app(FIXTURES / "sharded", static_dir=tmp_path)) as server:
        status, headers, body = fetch(server, "/", Accept="text/html")
        assert (status, body) == (200, b"<html>viewer</html>")
        assert headers["content-type"].startswith("text/html")
        assert fetch(server, "/.static/app.js")[2] == b"console.log(1)"
        assert fetch(server, "/.static/")[0] == 404
        assert fetch(server, "/.static/../zarr.json")[0] in (400, 404)
        assert fetch(server, "/zarr.json")[0] == 200
