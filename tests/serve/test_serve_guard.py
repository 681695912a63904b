"""The server's connection bounds: idle and slow clients cannot take it down, and what
the bounds close is logged as a few aggregated lines (see ``moczarr_store.serve.guard``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
import urllib.request
import warnings

import psutil
import pytest
from support.processes import limited_server
from support.serving import CHUNK, FIXTURES, Served, fetch

from moczarr_store.serve import create_app, guard
from moczarr_store.serve.protocols import HTTPTOOLS, NoDelayH11Protocol, http_protocol

PROTOCOLS = {"h11": NoDelayH11Protocol, "httptools": http_protocol()} if HTTPTOOLS else {
    "h11": NoDelayH11Protocol
}


@pytest.fixture(params=sorted(PROTOCOLS))
def protocol(request):
    return PROTOCOLS[request.param]


@contextlib.contextmanager
def serving(protocol):
    app = create_app(FIXTURES / "sharded", stamp_ttl=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(app, http=protocol) as server:
            yield server


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset counts as a close)."""
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_idle_connections_beyond_the_descriptor_limit(tmp_path):
    """Twice as many silent connections as the server has descriptors: ordinary GETs are
    still answered, and the log holds a few lines, not one traceback per failed accept."""
    limit, log = 256, tmp_path / "server.log"
    idle: list[socket.socket] = []
    try:
        with limited_server(FIXTURES / "sharded", limit, log) as (port, _):
            idle += [socket.create_connection(("127.0.0.1", port), timeout=10)
                     for _ in range(2 * limit)]
            for _ in range(5):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/{CHUNK}",
                                            timeout=10) as response:
                    assert response.status == 200
                    response.read()
    finally:  # closed after the server stopped: it reports what it closed as it stops
        for sock in idle:
            sock.close()
    lines = log.read_text().splitlines()
    others = [line for line in lines if "moczarr_store.serve.access" not in line]
    assert len(others) < 20, others[:40]
    assert sum("closed to make room" in line for line in others) == 1, others


def test_serve_raises_the_open_file_limit_and_says_so(tmp_path):
    log = tmp_path / "server.log"
    with limited_server(FIXTURES / "sharded", 1024, log, soft=512) as (_, pid):
        assert psutil.Process(pid).rlimit(psutil.RLIMIT_NOFILE) == (1024, 1024)
    assert log.read_text().count("open-file limit raised from 512 to 1024") == 1


@pytest.fixture
def quick(monkeypatch):
    """Bounds small enough for a test: heads within 0.5 s, reports every 0.2 s."""
    monkeypatch.setattr(guard, "HEAD_TIMEOUT", 0.5)
    monkeypatch.setattr(guard, "REPORT_EVERY", 0.2)


def test_an_unfinished_request_head_is_closed_after_the_deadline(protocol, quick, caplog):
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    with serving(protocol) as server:
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        slow.sendall(b"GET /zarr.json HTTP/1.1\r\nHost: x\r\nX-Slow: aaa")
        with silent, slow:
            assert answer(silent) == b""  # nothing heard: closed without a word
            assert answer(slow).startswith(b"HTTP/1.1 408 ")
        assert fetch(server, f"/{CHUNK}")[0] == 200  # a complete head is answered
        deadline = time.monotonic() + 10
        while "request head in time" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    late = [r for r in caplog.records if "request head in time" in r.getMessage()]
    assert len(late) == 1 and "2 closed without" in late[0].getMessage()


def test_a_keep_alive_connection_gets_a_new_deadline_per_request(protocol, quick):
    """After a response, the next head has its own deadline: the connection is not closed
    while requests keep coming, and is closed once a head is left unfinished."""
    with serving(protocol) as server, socket.create_connection(
        ("127.0.0.1", server.port), timeout=10
    ) as sock:
        for _ in range(3):
            sock.sendall(b"GET /zarr.json HTTP/1.1\r\nHost: x\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200 ")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += sock.recv(65536)
        sock.sendall(b"GET /zarr.json HTTP/1.1\r\n")
        assert answer(sock).startswith(b"HTTP/1.1 408 ")


def test_an_oversized_request_head_is_refused(protocol):
    big = b"GET /zarr.json HTTP/1.1\r\nHost: x\r\nX-Junk: " + b"a" * (1 << 20) + b"\r\n\r\n"
    with serving(protocol) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                sock.sendall(big)
            status = answer(sock)[:12]
        # httptools: 431 (Request Header Fields Too Large); h11 (uvicorn's): 400
        assert status == (b"HTTP/1.1 431" if protocol is not NoDelayH11Protocol
                          else b"HTTP/1.1 400")
        assert fetch(server, "/zarr.json")[0] == 200


BIG = 64 << 20  # more than any socket buffer holds


async def big_answer(scope, receive, send) -> None:
    """An ASGI app answering every request with ``BIG`` bytes, 1 MiB at a time."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(BIG).encode())]})
    piece = b"x" * (1 << 20)
    for _ in range(BIG // len(piece)):
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def test_an_answer_the_client_stops_reading_is_cut_short(protocol, quick, monkeypatch, caplog):
    """A client that stops reading holds its connection until the send deadline, then
    loses the rest of its answer."""
    monkeypatch.setattr(guard, "SEND_TIMEOUT", 0.5)
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    with Served(big_answer, http=protocol) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            deadline = time.monotonic() + 10
            while "stopped reading" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
            received = answer(sock)
        assert received.startswith(b"HTTP/1.1 200 ")
        assert len(received) < BIG
    lines = [r.getMessage() for r in caplog.records if "stopped reading" in r.getMessage()]
    assert len(lines) == 1 and "1 closed: the client stopped reading" in lines[0], lines


def test_the_longest_waiting_connections_make_room(protocol, quick, monkeypatch, caplog):
    """At the bound, a new connection closes the one that has waited longest for a
    request head; the closures are logged as one line."""
    monkeypatch.setattr(guard, "MAX_CONNECTIONS", 20)
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    with serving(protocol) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10)
                for _ in range(50)]
        try:
            assert fetch(server, f"/{CHUNK}")[0] == 200
            for sock in idle[:30]:  # the 30 oldest made room for the 30 newer ones
                assert answer(sock) == b""
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 10
        while "make room" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = [r.getMessage() for r in caplog.records if "make room" in r.getMessage()]
    assert len(lines) == 1 and "31 closed to make room" in lines[0], lines


def test_failed_accepts_and_repeated_loop_errors_are_one_line(quick, caplog):
    """asyncio reports a failed ``accept()`` once per pending connection: counted, one
    line per interval, no traceback. Another error of the event loop is logged once per
    interval, its repeats counted in that line."""
    caplog.set_level(logging.INFO)

    async def burst() -> None:
        loop = asyncio.get_running_loop()
        watched = guard.Guard(loop)
        for _ in range(2048):
            loop.call_exception_handler({
                "message": guard.ACCEPT_FAILED,
                "exception": OSError(errno.EMFILE, "Too many open files"),
            })
        for _ in range(100):
            loop.call_exception_handler({
                "message": "Exception in callback _start_serving()",
                "exception": ValueError("Invalid file descriptor: -1"),
            })
        await asyncio.sleep(0.5)
        assert not watched.counts

    asyncio.run(burst())
    ours = [r for r in caplog.records if r.name == "moczarr_store.serve"]
    assert len(ours) == 1 and ours[0].exc_info is None
    line = ours[0].getMessage()
    assert "2,048 accept() failed (EMFILE: Too many open files)" in line
    assert "99 event-loop errors logged before in this interval" in line
    shown = [r for r in caplog.records if "_start_serving" in r.getMessage()]
    assert len(shown) == 1 and shown[0].name == "asyncio"
