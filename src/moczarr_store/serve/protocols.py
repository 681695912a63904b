"""The HTTP/1.1 protocol under uvicorn: httptools (a C parser, faster than h11) with the
request head bounded as h11 bounds it, else h11.

Both set ``TCP_NODELAY`` on every connection. asyncio sets it only on sockets created with
``IPPROTO_TCP``, which the sockets uvicorn binds for ``--workers`` (and those handed over by
gunicorn or ``--fd``) are not: there every response waits for a delayed ACK between its
head and its body. Behind uvicorn of your own, pass
``--http moczarr_store.serve.protocols:BoundedHttpToolsProtocol``.

uvicorn's httptools protocol buffers a request line and headers of any length, and
queues every request a client pipelines (a read from the socket holds up to 256 KiB:
thousands of small requests); this one answers 431 and closes the connection once more
than ``MAX_HEAD`` bytes arrive before the end of a request's headers (give or take one
read from the socket), and closes a connection that queues more than
``config["serve.pipelined"]`` requests. Both apply the bounds of :mod:`.guard` (a
deadline for each request head, a cap on open connections).
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..tunables import setting
from .guard import PIPELINED, Guarded

MAX_HEAD = 16 * 1024  # h11's default bound on an incomplete request head
PIECE = 4096  # bytes parsed at once: at most a few hundred requests past the bound queue
HTTPTOOLS = importlib.util.find_spec("httptools") is not None
TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
             b"content-type: text/plain; charset=utf-8\r\ncontent-length: 24\r\n"
             b"connection: close\r\n\r\nRequest head too large.\n")


def no_delay(transport: Any) -> None:
    """Send small writes at once on a TCP connection (no Nagle wait for an ACK)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError, AttributeError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayH11Protocol(Guarded, H11Protocol):
    """uvicorn's h11 protocol with ``TCP_NODELAY`` set and the :mod:`.guard` bounds. h11
    parses one request at a time: what a client pipelines waits as bytes, one read from
    the socket at most."""

    def connection_made(self, transport: Any) -> None:
        no_delay(transport)
        super().connection_made(transport)

    def _pipelined(self) -> bool:
        return bool(self.conn.trailing_data[0])


if HTTPTOOLS:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHttpToolsProtocol(Guarded, HttpToolsProtocol):
        """uvicorn's httptools protocol with ``TCP_NODELAY`` set and the :mod:`.guard`
        bounds, refusing request heads over ``MAX_HEAD`` bytes (431)."""

        def connection_made(self, transport: Any) -> None:
            no_delay(transport)
            self._in_head, self._head_bytes = True, 0
            self._pipelined_bound = setting("serve.pipelined")
            super().connection_made(transport)

        def on_message_begin(self) -> None:
            self._in_head, self._head_bytes = True, 0
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            for at in range(0, len(data), PIECE):  # the queue is checked between pieces
                piece = data[at : at + PIECE]
                if self._in_head:
                    self._head_bytes += len(piece)
                    if self._head_bytes > MAX_HEAD:
                        self.transport.write(TOO_LARGE)
                        self.transport.close()
                        return
                super().data_received(piece)
                if len(self.pipeline) > self._pipelined_bound:
                    self._guard.abort(self, PIPELINED)
                if self.transport.is_closing():
                    return


def http_protocol() -> type:
    """The protocol class to pass as uvicorn's ``http``: bounded httptools, else h11."""
    return BoundedHttpToolsProtocol if HTTPTOOLS else NoDelayH11Protocol
