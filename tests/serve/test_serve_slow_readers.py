"""Clients that pipeline requests for large chunks and never read the answers: they cannot
keep ordinary clients out, and what their unread answers hold is bounded (see
``moczarr_store.serve.guard``)."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from support.serving import FIXTURES, Served, fetch

from moczarr_store import config
from moczarr_store.serve import create_app, guard, streamed
from moczarr_store.serve.protocols import HTTPTOOLS, NoDelayH11Protocol, http_protocol

PROTOCOLS = {"h11": NoDelayH11Protocol, "httptools": http_protocol()} if HTTPTOOLS else {
    "h11": NoDelayH11Protocol
}
CELLS = "atl06/o7/cell_ids"  # with geometry="sphere": 65,536 uint64 cell ids a chunk (512 KiB)
PER_CHUNK = 65_536
ANSWERS = 16  # answers a connection asks for at once: 8 MiB


def cell_ids(chunk: int) -> np.ndarray:
    """The chunk's values: HEALPix nested ids are consecutive along the sphere's cells."""
    return np.arange(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK, dtype="<u8")


def stalled_readers(port: int, count: int, pipelined: int = 16) -> list[socket.socket]:
    """``count`` connections, each sending ``pipelined`` GETs of 512 KiB chunks at once and
    reading nothing: more than the kernel's buffers hold (on Linux up to 4 MiB per socket
    by default), so the rest stays with the server."""
    request = b"".join(f"GET /{CELLS}/c/{i % 3} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
                       for i in range(pipelined))
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(10)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(request)
        except OSError:  # closed by the server at once: counts as made
            sock.close()
            continue
        opened.append(sock)
    return opened


@contextlib.contextmanager
def sphere_served(protocol: type) -> Iterator[Served]:
    """The sharded fixture served with ``geometry="sphere"`` (512 KiB cell-id chunks)."""
    app = create_app(FIXTURES / "sharded", stamp_ttl=600, geometry="sphere")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(app, http=protocol) as server:
            yield server


def guard_of(server: Served) -> guard.Guard:
    """The server's guard (made when its first connection is)."""
    assert wait_for(lambda: server.server.server_state in guard.GUARDS())
    return guard.GUARDS()[server.server.server_state]


def wait_for(condition, seconds: float = 30.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (generous: a loaded machine is slow;
    it returns as soon as it holds)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def fill_with_stalled(server: Served, state: guard.Guard, opened: list[socket.socket]) -> bool:
    """Open stalled readers (into ``opened``) until the server's connection bound is full and
    all connections but one are stalled. Readers the server closed to make room for later
    ones before their answers were planned (on a loaded machine, most of a burst) do not
    count, so the bound is topped up until it holds."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        if len(state.open) >= state.bound and len(state.stalled) >= state.bound - 1:
            return True
        if (missing := state.bound - len(state.open)) > 0:
            opened += stalled_readers(server.port, missing)
        time.sleep(0.5)  # the server accepts and plans them meanwhile
    return False


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_stalled_pipelining_readers_do_not_keep_ordinary_clients_out(protocol, monkeypatch,
                                                                     caplog):
    """Four times the connection bound of stalled readers: ordinary GETs are answered, with
    the right bytes, by closing the connections whose answers have waited longest."""
    monkeypatch.setattr(guard, "MAX_CONNECTIONS", 20)
    monkeypatch.setattr(guard, "REPORT_EVERY", 0.2)
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    caplog.set_level(logging.WARNING, "moczarr_store.serve.access")
    with sphere_served(PROTOCOLS[protocol]) as server:
        stalled = stalled_readers(server.port, 80)
        state = guard_of(server)
        try:  # the bound full, every open connection's client stopped reading
            assert fill_with_stalled(server, state, stalled), (len(state.open), len(state.stalled))
            time.sleep(3 * guard.REPORT_EVERY)  # what the burst caused is logged before...
            caplog.clear()  # ...the ordinary GETs: each closes a stalled reader
            for chunk in range(3):
                status, _, body = fetch(server, f"/{CELLS}/c/{chunk}")
                assert status == 200
                np.testing.assert_array_equal(np.frombuffer(body, "<u8"), cell_ids(chunk))
            assert wait_for(lambda: "their answers not read" in caplog.text)
        finally:
            for sock in stalled:
                sock.close()
    lines = [r.getMessage() for r in caplog.records if "their answers not read" in r.getMessage()]
    assert lines and all(r.levelno == logging.WARNING for r in caplog.records
                         if "their answers not read" in r.getMessage())


def whole_answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset counts as a close)."""
    received = []
    with contextlib.suppress(ConnectionResetError):
        while piece := sock.recv(1 << 20):
            received.append(piece)
    return b"".join(received)


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_connections_arriving_together_do_not_close_one_another(protocol, monkeypatch):
    """The connection bound is full of stalled readers; 10 ordinary clients connect at
    once: each is answered, with the right bytes. A connection just accepted has not had
    its head read, but it must not be the first closed to make room (the stalled readers
    are), or each newcomer closes the one accepted before it."""
    monkeypatch.setattr(guard, "MAX_CONNECTIONS", 20)
    with sphere_served(PROTOCOLS[protocol]) as server:
        stalled = stalled_readers(server.port, 20)
        state = guard_of(server)
        try:
            assert fill_with_stalled(server, state, stalled), (len(state.open), len(state.stalled))
            ordinary = [socket.create_connection(("127.0.0.1", server.port), timeout=10)
                        for _ in range(10)]
            for i, sock in enumerate(ordinary):
                sock.sendall(f"GET /{CELLS}/c/{i % 3} HTTP/1.1\r\nHost: x\r\n"
                             "Connection: close\r\n\r\n".encode())
            answers = []
            for sock in ordinary:
                with sock:
                    answers.append(whole_answer(sock))
        finally:
            for sock in stalled:
                sock.close()
    assert [a[:13] for a in answers] == [b"HTTP/1.1 200 "] * 10
    for i, received in enumerate(answers):
        body = received.split(b"\r\n\r\n", 1)[1]
        np.testing.assert_array_equal(np.frombuffer(body, "<u8"), cell_ids(i % 3))


def test_a_pipelined_request_waits_until_the_answer_before_it_is_read(monkeypatch):
    """A connection whose client does not read holds one answer, not one per request it
    pipelined: the next request is planned once the answer before it is sent; then each
    answer arrives, in order, with the right bytes."""
    app = create_app(FIXTURES / "sharded", stamp_ttl=600, geometry="sphere")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(app) as server:
            (sock,) = stalled_readers(server.port, 1, pipelined=ANSWERS)
            with sock:
                time.sleep(1.0)  # time enough to plan (and pin) them all, were they run
                stalls = getattr(guard_of(server), "stalled", {})
                assert len(stalls) == 1
                (held,) = stalls.values()
                assert held <= PER_CHUNK * 8 + (64 << 10) + 4096  # one answer (and a rest)
                received = b""
                sock.settimeout(2.0)  # the answers are all sent once 2 s pass without a byte
                with contextlib.suppress(TimeoutError):
                    while piece := sock.recv(1 << 20):
                        received += piece
    for i in range(ANSWERS):
        head, received = received.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200 ")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        body, received = received[:length], received[length:]
        np.testing.assert_array_equal(np.frombuffer(body, "<u8"), cell_ids(i % 3))
    assert received == b""


def unsent(server: Served) -> int:
    """Bytes the server's open connections hold for their answers: what each one's write
    buffer holds, and what a streamed answer has still to write."""
    return sum(c.transport.get_write_buffer_size()
               + (c.cycle.scope.get(guard.UNWRITTEN, 0) if c.cycle is not None else 0)
               for c in list(server.server.server_state.connections)
               if not c.transport.is_closing())


def small_send_buffer(protocol: type) -> type:
    """``protocol`` with a 64 KiB kernel send buffer per connection: most of an answer its
    client does not read stays with the server (by default, the kernel's buffer grows to
    hold a 512 KiB answer whole)."""

    class Small(protocol):
        def connection_made(self, transport) -> None:
            transport.get_extra_info("socket").setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
            super().connection_made(transport)

    return Small


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_unsent_answers_are_bounded_in_bytes(protocol, monkeypatch, caplog):
    """40 stalled readers of 512 KiB answers against a server whose unsent answers may hold
    2 MiB: its connections never hold more (one or two answers each were they kept); the
    connections stalled longest are closed, and ordinary GETs answered."""
    monkeypatch.setattr(guard, "REPORT_EVERY", 0.2)
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    caplog.set_level(logging.WARNING, "moczarr_store.serve.access")
    bound = 2 << 20
    app = create_app(FIXTURES / "sharded", stamp_ttl=600, geometry="sphere")
    with warnings.catch_warnings(), config.set({"serve.unsent_bytes": bound}):
        warnings.simplefilter("ignore")
        with Served(app, http=small_send_buffer(PROTOCOLS[protocol])) as server:
            stalled = stalled_readers(server.port, 40)
            try:
                most = 0
                for _ in range(40):  # four seconds: every answer planned by then
                    most = max(most, unsent(server))
                    time.sleep(0.1)
                # a piece written past the bound (before it applies) and its rest
                assert most <= bound + streamed.PIECE + (64 << 10), most
                status, _, body = fetch(server, f"/{CELLS}/c/2")
                assert status == 200
                np.testing.assert_array_equal(np.frombuffer(body, "<u8"), cell_ids(2))
                assert wait_for(lambda: "unsent answers over the bound" in caplog.text)
            finally:
                for sock in stalled:
                    sock.close()


def test_a_connection_pipelining_thousands_of_requests_is_closed(monkeypatch, caplog):
    """20,000 small requests sent at once on one connection: the server queues at most
    ``serve.pipelined`` of them (and one piece of the bytes past it), closes the
    connection, says so in one line, and answers an ordinary client meanwhile. (httptools
    only: the h11 protocol parses one request at a time, the rest waits as bytes.)"""
    from moczarr_store.serve.protocols import PIECE, BoundedHttpToolsProtocol

    monkeypatch.setattr(guard, "REPORT_EVERY", 0.2)
    caplog.set_level(logging.INFO, "moczarr_store.serve")
    queued = [0]
    original = BoundedHttpToolsProtocol.on_headers_complete

    def counted(self) -> None:
        original(self)
        queued[0] = max(queued[0], len(self.pipeline))

    monkeypatch.setattr(BoundedHttpToolsProtocol, "on_headers_complete", counted)
    head = b"GET /zarr.json HTTP/1.1\r\nHost: x\r\n\r\n"
    with config.set({"serve.pipelined": 8}), sphere_served(BoundedHttpToolsProtocol) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            with contextlib.suppress(OSError):  # closed while the requests are sent
                sock.sendall(head * 20_000)
            received = whole_answer(sock)
            assert fetch(server, "/zarr.json")[0] == 200
        assert wait_for(lambda: "more requests pipelined" in caplog.text)
    assert received.count(b"HTTP/1.1 200 ") < 20
    assert 8 < queued[0] <= 8 + PIECE // len(head) + 1, queued


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_stalled_reader_costs_one_answer_whatever_the_kernel_takes(protocol):
    """The kernel's send buffer takes several 512 KiB answers whole (it grows to 4 MiB on
    Linux) while the client reads nothing: each stalled reader is still answered once,
    its next pipelined request waiting until that answer is read."""
    app = create_app(FIXTURES / "sharded", stamp_ttl=600, geometry="sphere")
    answered = [0]

    async def counted(scope, receive, send) -> None:
        answered[0] += scope["type"] == "http"
        await app(scope, receive, send)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Served(counted, http=PROTOCOLS[protocol]) as server:
            stalled = stalled_readers(server.port, 5)
            try:
                assert wait_for(lambda: answered[0] >= 5)
                time.sleep(2.0)  # time enough to plan their next answers, were they run
                assert answered[0] == 5
            finally:
                for sock in stalled:
                    sock.close()


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_stalled_reader_that_goes_away_frees_its_connection(protocol):
    """A connection waiting for its client to read the answer before the next pipelined
    one does not read from the socket, so it cannot hear the client close: it asks the
    kernel, and is closed within seconds (not at the 60 s send deadline)."""
    with sphere_served(PROTOCOLS[protocol]) as server:
        state = server.server.server_state
        stalled = stalled_readers(server.port, 5)
        assert wait_for(lambda: len(guard_of(server).stalled) == 5)
        for sock in stalled:
            sock.close()
        assert wait_for(lambda: not state.connections, 20.0), len(state.connections)
