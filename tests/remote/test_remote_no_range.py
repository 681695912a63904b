"""A static server that ignores ``Range`` (Python's own ``python -m http.server``) serves
every fixture exactly: after its first ``200`` to a ranged GET, ranges are read from GETs
of the whole object, streamed only up to the range's end."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import warnings
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import moczarr
import pytest
import xarray as xr
import zarr
from support.hives import assert_values
from support.servers import (
    FIXTURES,
    Fault,
    LoopbackServer,
    StaticFiles,
    array_groups,
    assert_same_read,
)
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from moczarr_store import ChunkReadError, HiveWarning, MocHiveStore
from moczarr_store.io.backend import Backend
from moczarr_store.refs import export_refs

pytest_plugins = ["support.servers"]

BARE = [p.name for p in sorted(FIXTURES.iterdir()) if (p / "morton_hive.json").exists()]
MODES = ("leaf", "shard", "inner", "span")
NOTICE = "ignores HTTP Range requests"


class _Stdlib(ThreadingHTTPServer):
    """``python -m http.server`` on loopback: GET and HEAD, no ``Range``, no listing.
    Records each GET's path and ``Range`` header, each refusal and the body bytes sent."""

    daemon_threads = True
    request_queue_size = 128  # the module's 5 drops connections under the store's 64 at once

    def __init__(self, root) -> None:
        self.gets: list[tuple[str, str | None]] = []
        self.refused: list[tuple[str, int]] = []
        self.sent = 0
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, format, *args):  # noqa: A002 - quiet
                pass

            def send_error(self, code, *args, **kwargs):
                server.refused.append((self.command, code))
                super().send_error(code, *args, **kwargs)

            def do_GET(self):
                server.gets.append((self.path, self.headers.get("Range")))
                super().do_GET()

            def copyfile(self, source, outputfile):
                while piece := source.read(64 << 10):
                    try:
                        outputfile.write(piece)
                    except OSError:  # the client stopped reading
                        return
                    server.sent += len(piece)

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@contextlib.contextmanager
def _serving(root):
    server = _Stdlib(root)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def stdlib_server():
    with _serving(FIXTURES) as server:
        yield server


def _notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if NOTICE in r.getMessage()]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", BARE)
def test_every_bare_fixture_reads_identically_from_a_server_without_ranges(
        stdlib_server, caplog, name, mode):
    local = MocHiveStore(FIXTURES / name, chunking=mode)
    remote = MocHiveStore(f"{stdlib_server.url}/{name}", chunking=mode)
    with caplog.at_level(logging.WARNING, logger="moczarr_store"), warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        for group in array_groups(local):
            assert_same_read(remote, local, group)
    assert _notices(caplog) == [f"{stdlib_server.url}/{name} answers a ranged GET with the "
                                "whole object (it ignores HTTP Range requests): a range is now "
                                "read from a GET of the whole object, up to the range's end"]
    assert remote.request_stats.counts["get_range"] == 1  # the one the server refused


def test_a_listing_refused_with_501_is_asked_once():
    """The store lists a leaf group at open to check its stamp's array names; this server
    refuses WebDAV's ``PROPFIND`` with ``501``, which obstore retries for seconds by
    default: asked once, the store opens on the stamp's names."""
    with _serving(FIXTURES) as server:
        store = MocHiveStore(f"{server.url}/sharded")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HiveWarning)
            assert "h_mean" in zarr.open_group(store, mode="r")["atl06/o7"]
        assert server.refused == [("PROPFIND", 501)]
        assert store.request_stats.counts["list"] == 1


def test_inner_chunks_from_a_server_without_ranges_are_moczarrs(stdlib_server):
    """The mode with the most ranged reads (a shard index, then each inner chunk by range)
    against the reference reader on the same fixture."""
    remote = MocHiveStore(f"{stdlib_server.url}/sharded", chunking="inner")
    got = xr.open_zarr(remote, group="atl06/o7")
    want = moczarr.open_hive(str(FIXTURES / "sharded"))
    assert set(got.data_vars) == set(want.data_vars)
    for name in [*want.data_vars, "morton", "cell_ids"]:
        assert got[name].dtype == want[name].dtype, name
        assert_values(got[name].values, want[name].values, name)


def test_ranges_of_a_whole_get_are_exact_and_read_only_up_to_their_end(tmp_path):
    """Once the server has ignored a range, a range is sliced from a whole GET: a short
    range at the start of a large object stops reading there (the rest is not sent), a
    suffix or an offset reads to the end; each is one GET without ``Range``."""
    big = bytes(range(256)) * (64 << 12)  # 64 MiB
    (tmp_path / "big.bin").write_bytes(big)
    with _serving(tmp_path) as server:
        backend = Backend(server.url)

        async def reads():
            return [await backend.get("big.bin", r) for r in (
                RangeByteRequest(0, 10), RangeByteRequest(1000, 70_000),
                RangeByteRequest(0, 10), SuffixByteRequest(7), OffsetByteRequest(len(big) - 3))]

        first, middle, again, suffix, offset = asyncio.run(reads())
        assert bytes(first) == bytes(again) == big[:10]
        assert bytes(middle) == big[1000:70_000]
        assert bytes(suffix) == big[-7:] and bytes(offset) == big[-3:]
        assert [r for _, r in server.gets] == ["bytes=0-9", None, None, None, None, None]
        assert backend.stats.counts == {"get_range": 1, "get": 5}
        # the two short ranges stopped early: far less than 3 whole objects before the two
        # reads to the end (socket buffers hold a few MiB)
        assert server.sent < 3 * len(big)


def test_ranged_reads_in_flight_when_the_server_first_ignores_range_are_read_again(
        stdlib_server, caplog):
    """Every ranged GET sent before the first refusal came back is refused too: each is
    read again from a whole GET, and the switch is logged once."""
    backend = Backend(f"{stdlib_server.url}/sharded")
    want = (FIXTURES / "sharded" / "morton_hive.json").read_bytes()

    async def reads():
        return await asyncio.gather(*(backend.get("morton_hive.json", RangeByteRequest(i, 40))
                                      for i in range(16)))

    with caplog.at_level(logging.WARNING, logger="moczarr_store"):
        got = asyncio.run(reads())
    assert [bytes(g) for g in got] == [want[i:40] for i in range(16)]
    assert len(_notices(caplog)) == 1
    assert backend.stats.counts["get_range"] > 1  # several were in flight at the refusal


def test_an_export_from_a_server_without_ranges_warns_unless_remapped(stdlib_server,
                                                                      tmp_path):
    """References name byte ranges: published against a server that ignores ``Range``,
    their readers would ask it for ranges. Warned once; not when remapped elsewhere."""
    source = f"{stdlib_server.url}/sharded"
    with pytest.warns(HiveWarning, match="ignores HTTP Range requests") as caught:
        export_refs(source, "mdim-refs", tmp_path / "a.mdim", group="atl06/o7")
    assert sum("ignores HTTP Range" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_refs(source, "mdim-refs", tmp_path / "b.mdim", group="atl06/o7",
                    remap={f"{source}/": (FIXTURES / "sharded").resolve().as_uri() + "/"})
    assert not [w for w in caught if "ignores HTTP Range" in str(w.message)]


def test_a_whole_get_cut_short_is_an_error_naming_the_object():
    """A body that ends before the ``Content-Length`` the server announced, on a range read
    from a whole GET, is an error naming the object, not short bytes."""
    proxy = LoopbackServer(StaticFiles(FIXTURES))
    try:
        proxy.inject(Fault("whole", match="zarr.json"),  # the first ranged read: 200, whole
                     Fault("truncate", match="/h_mean/c/", times=1000))
        store = MocHiveStore(f"{proxy.url}/sharded", chunking="inner")
        array = zarr.open_group(store, mode="r")["atl06/o7/h_mean"]
        with pytest.raises(ChunkReadError, match=r"reading \S+/7/h_mean/c/0 from http://"):
            array[:]
    finally:
        proxy.stop()
