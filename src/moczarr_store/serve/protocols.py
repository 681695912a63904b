"""The HTTP/1.1 protocol under uvicorn: httptools (a C parser, about twice the requests per
second of h11 here) with the request head bounded as h11 bounds it, else h11.

uvicorn's httptools protocol buffers a request line and headers of any length; this one
answers 400 and closes the connection once more than ``MAX_HEAD`` bytes arrive before the
end of a request's headers (give or take one read from the socket).
"""

from __future__ import annotations

import importlib.util
from typing import Any

MAX_HEAD = 16 * 1024  # h11's default bound on an incomplete request head
HTTPTOOLS = importlib.util.find_spec("httptools") is not None

if HTTPTOOLS:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol, refusing request heads over ``MAX_HEAD`` bytes."""

        def connection_made(self, transport: Any) -> None:
            self._in_head, self._head_bytes = True, 0
            super().connection_made(transport)

        def on_message_begin(self) -> None:
            self._in_head, self._head_bytes = True, 0
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            if self._in_head:
                self._head_bytes += len(data)
                if self._head_bytes > MAX_HEAD:
                    self.send_400_response("Request head too large.")
                    return
            super().data_received(data)


def http_protocol() -> Any:
    """What to pass as uvicorn's ``http``: the bounded httptools protocol, or ``"h11"``."""
    return BoundedHttpToolsProtocol if HTTPTOOLS else "h11"

