"""A response whose bytes are sent a piece at a time, so that an answer its client does not
read waits in the bytes it came from (a mapped span's pages, the chunk read) rather than
in a copy the size of the answer in the connection's write buffer. Between two pieces the
server waits for the client to read (uvicorn's flow control); the request's scope tells
:mod:`.guard` how many bytes are still to send (:data:`.guard.UNWRITTEN`), which it counts
against the bound on unsent answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from .guard import UNWRITTEN

PIECE = 256 << 10  # bytes handed to the connection at once


class Streamed(Response):
    """``payload`` as the body, :data:`PIECE` bytes per ASGI message. Cost: one message
    (and one wait for the client to read) per piece; no copy of the payload."""

    def __init__(self, payload: memoryview, status_code: int,
                 headers: Mapping[str, str], media_type: str) -> None:
        super().__init__(None, status_code, headers=headers, media_type=media_type)
        self.payload = payload

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        payload, size = self.payload, len(self.payload)
        at = 0
        while True:
            end = min(size, at + PIECE)
            scope[UNWRITTEN] = size - end  # what waits here once this piece is written
            await send({"type": "http.response.body", "body": payload[at:end],
                        "more_body": end < size})
            at = end
            if at >= size:
                break
        scope[UNWRITTEN] = 0
