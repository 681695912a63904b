"""Hostile requests never read outside the virtual hierarchy and never take the server down.

Every request here goes over a raw socket (no client normalises it first). The backend's
reads are recorded object by object: a request outside the grammar reads nothing, and the
requests inside it read only objects of the hive's leaves.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import warnings

import pytest
from support.serving import CHUNK, FIXTURES, Served, fetch

from moczarr_store.serve import create_app
from moczarr_store.serve.protocols import HTTPTOOLS, NoDelayH11Protocol, http_protocol

PROTOCOLS = {"h11": NoDelayH11Protocol, "httptools": http_protocol()} if HTTPTOOLS else {
    "h11": NoDelayH11Protocol
}


@pytest.fixture(scope="module", params=sorted(PROTOCOLS))
def server(request):
    """The server with each HTTP protocol it may run (bounded httptools, else h11)."""
    app = create_app(FIXTURES / "sharded", chunking="shard", stamp_ttl=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(app, http=PROTOCOLS[request.param]) as s:
            yield s


@pytest.fixture
def reads(server):
    """Object keys the backend is asked for (GET, ranged GET, HEAD), from here on."""
    backend = server.store.backend
    seen: list[str] = []
    get, size = backend.get, backend.size

    async def recorded_get(path, byte_range=None):
        seen.append(path)
        return await get(path, byte_range)

    async def recorded_size(path):
        seen.append(path)
        return await size(path)

    fetch(server, f"/{CHUNK}")  # the hive is open, the chunk's stamp read
    backend.get, backend.size = recorded_get, recorded_size
    backend.stats.reset()
    yield seen
    del backend.get, backend.size


def raw(server: Served, request: bytes, timeout: float = 10) -> bytes:
    """The server's whole answer to ``request`` (sent as is), ``b""`` if it just closed."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def get(target: bytes, *headers: bytes) -> bytes:
    lines = [b"GET " + target + b" HTTP/1.1", b"Host: localhost", *headers, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"


OUTSIDE = [
    b"/../../../../etc/passwd",
    b"/atl06/../morton_hive.json",
    b"/%2e%2e/%2e%2e/etc/passwd",
    b"/atl06/o7/..%2F..%2Fmorton_hive.json",
    b"/atl06%2Fo7%2Fzarr.json",
    b"/atl06%2fo7/h_mean/c/0",
    b"/zarr.json%00",
    b"/atl06/o7/h_mean/c/0%00.json",
    b"/atl06%5Co7/zarr.json",
    b"/morton_hive.json",
    b"/coverage.moc",
    b"/icechunk/zarr.json",
    b"/4/4/4/1/2/44412.zarr/zarr.json",
    b"/atl06/o7/h_mean/c/-1",
    b"/atl06/o7/h_mean/c/1e3",
    b"/atl06/o7/h_mean/c/" + b"9" * 400,
    b"/" + b"a/" * 3000 + b"zarr.json",
    b"//etc/passwd",
]


@pytest.mark.parametrize("target", OUTSIDE, ids=lambda t: t[:40].decode(errors="replace"))
def test_outside_the_grammar_reads_nothing(server, reads, target):
    answer = raw(server, get(target))
    assert status_of(answer) in (400, 404), answer[:200]
    assert reads == [] and server.store.request_stats.total == 0
    assert b"root:" not in answer and b"morton-hive" not in answer


def test_request_line_bytes_h11_refuses(server, reads):
    for target in (b"/zarr.json\x00", b"/zar r.json", b"/\xff\xfe/zarr.json"):
        assert status_of(raw(server, get(target))) in (0, 400, 404), target
    assert reads == []


def test_huge_and_many_ranges(server, reads):
    _, _, whole = fetch(server, f"/{CHUNK}")
    n = len(whole)
    cases = {
        b"bytes=0-" + b"9" * 60: (206, whole),
        b"bytes=" + b"9" * 60 + b"-": (416, b""),
        b"bytes=-" + b"9" * 60: (206, whole),
        b"bytes=" + b",".join(b"%d-%d" % (i, i) for i in range(0, 2000, 2)): (200, whole),
        b"bytes=0-1,3-4": (200, whole),
        b"bytes=1-0": (200, whole),
        b"bytes=-0": (416, b""),
    }
    for header, (status, body) in cases.items():
        answer = raw(server, get(b"/" + CHUNK.encode(), b"Range: " + header))
        assert status_of(answer) == status, header[:40]
        assert answer.endswith(b"\r\n\r\n" + body), header[:40]
        if status == 416:
            assert f"content-range: bytes */{n}".encode() in answer.lower()
    assert reads and all(".zarr/run-" in r for r in reads), reads


def test_absurd_headers_are_refused_and_the_server_lives(server, reads):
    big = b"X-Junk: " + b"a" * (1 << 20)
    many = b"\r\n".join(b"X-H%d: v" % i for i in range(20_000))
    refused = (0, 400, 413, 431)
    for headers, allowed in (
        ((big,), refused),
        ((many,), refused),
        ((b"Range: bytes=0-" + b"1" * 100_000,), (*refused, 206)),  # a huge end: clamped
    ):
        try:
            answer = raw(server, get(b"/zarr.json", *headers))
        except (ConnectionResetError, BrokenPipeError):
            answer = b""
        assert status_of(answer) in allowed, answer[:100]
    assert reads == []
    assert fetch(server, "/zarr.json")[0] == 200


def test_slow_clients_do_not_block_others(server):
    """50 slowloris connections dribbling a header byte at a time while others are served."""
    stop = threading.Event()
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(50)]

    def dribble() -> None:
        deadline = time.monotonic() + 20  # bounded whatever happens
        for sock in socks:
            sock.sendall(b"GET /zarr.json HTTP/1.1\r\nHost: x\r\n")
        while not stop.is_set() and time.monotonic() < deadline:
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X")
            stop.wait(0.2)

    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    try:
        time.sleep(0.5)
        for _ in range(20):
            start = time.monotonic()
            assert fetch(server, f"/{CHUNK}")[0] == 200
            assert time.monotonic() - start < 5
    finally:
        stop.set()
        thread.join(5)
        for sock in socks:
            sock.close()
    assert fetch(server, "/zarr.json")[0] == 200


def test_many_connections_at_once(server):
    """300 connections opened and dropped mid-request; then ordinary service."""
    socks = []
    for _ in range(300):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(b"GET /" + CHUNK.encode() + b" HTTP/1.1\r\nHost: x\r\n")
        socks.append(sock)
    for sock in socks:
        sock.close()
    assert fetch(server, f"/{CHUNK}")[0] == 200


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_responses_leave_at_once(protocol):
    """On a socket bound without IPPROTO_TCP (uvicorn --workers, gunicorn) a response still
    leaves at once: without TCP_NODELAY each waited ~40 ms for a delayed ACK."""
    with Served(create_app(FIXTURES / "sharded"), http=PROTOCOLS[protocol]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        times = []
        for _ in range(21):
            start = time.perf_counter()
            conn.request("GET", f"/{CHUNK}")
            assert conn.getresponse().read()
            times.append(time.perf_counter() - start)
        conn.close()
    assert sorted(times)[10] < 0.02, sorted(times)
