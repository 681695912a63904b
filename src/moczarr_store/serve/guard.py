"""Bounds on the connections of one server: a deadline for every request head, a cap on
open connections, and one log line per interval for what these bounds closed.

uvicorn arms its keep-alive timeout only after a response: a connection that never sends
a request head (or sends it a byte at a time) is kept forever, and every such connection
holds a file descriptor. Once the process runs out of descriptors, ``accept()`` fails and
asyncio logs the failure with its traceback up to ``backlog`` times per loop iteration,
while ordinary clients wait. Here:

- a connection must complete each request head within :data:`HEAD_TIMEOUT` seconds of
  the server starting to wait for it (on connecting, and after each response): it is
  then closed, with a ``408`` if part of a head had arrived;
- an answer the client stops reading is cut short after :data:`SEND_TIMEOUT` seconds
  (from the moment the server's write buffer is full, again each time it fills up);
- at most :func:`connection_bound` connections are open (:data:`MAX_CONNECTIONS`, fewer
  when the descriptor limit is low): a new connection beyond it closes the connection
  that has waited longest for a request head, or is itself closed when every open
  connection has a request in progress;
- connections closed by these bounds and failed ``accept()`` calls are counted and
  logged as one line per :data:`REPORT_EVERY` seconds, at most; any other error of the
  event loop is logged once per interval (its repeats are counted in that line).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
import socket
import weakref
from collections import Counter
from typing import Any

logger = logging.getLogger("moczarr_store.serve")

HEAD_TIMEOUT = 10.0  # seconds from waiting for a request head to having all of it
SEND_TIMEOUT = 60.0  # seconds an answer may wait for the client to read (nginx's default)
MAX_CONNECTIONS = 4096  # open connections per process, at most
BACKLOG = 2048  # connections waiting to be accepted, at most (uvicorn's default)
UNLIMITED = 1 << 30  # stands for an unlimited count of open files
MAX_ERRORS = 1024  # distinct event-loop errors logged per interval, at most
REPORT_EVERY = 10.0  # seconds between two log lines about closed connections, at least
ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message
LATE = "closed without a complete request head in time"
STALLED = "closed: the client stopped reading its answer"
TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
             b"connection: close\r\n\r\n")


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise this process's soft limit on open files to its hard limit (more connections
    fit): ``(before, after)``, an unlimited one as :data:`UNLIMITED`. Cost: two system
    calls."""
    soft, hard = (UNLIMITED if n == resource.RLIM_INFINITY else n
                  for n in resource.getrlimit(resource.RLIMIT_NOFILE))
    if soft >= hard or hard == UNLIMITED:  # Linux refuses an unlimited count of files
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        return soft, soft
    return soft, hard


def accept_batch(descriptors: int) -> int:
    """The ``backlog`` to give uvicorn under a limit of ``descriptors`` open files. asyncio
    accepts up to ``backlog`` connections per loop iteration before any of them reaches
    the protocol (and the bound), so a sixteenth of the descriptors at most; the queue of
    connections waiting to be accepted is then lengthened by :func:`lengthen_queue`."""
    return max(16, min(BACKLOG, descriptors // 16))


def lengthen_queue(transport: Any) -> None:
    """Let :data:`BACKLOG` connections wait to be accepted on the listening sockets of the
    asyncio server that accepted ``transport`` (uvicorn gives the same number to the
    kernel's queue and to asyncio's accept batch). A short queue drops connection
    attempts under a burst, and each dropped attempt costs its client a second or more.
    Nothing is done for a transport without its server (not asyncio's selector loop)."""
    server = getattr(transport, "_server", None)  # asyncio's selector transports keep it
    for listening in getattr(server, "sockets", None) or ():
        with contextlib.suppress(OSError, ValueError, AttributeError), socket.socket(
            fileno=os.dup(listening.fileno())
        ) as sock:
            sock.listen(BACKLOG)


def connection_bound(descriptors: int) -> int:
    """Connections to keep open under a limit of ``descriptors`` open files: room stays
    for four accepted batches not yet counted (see :func:`accept_batch`), and 64 more for
    the hive's files, the log and the event loop."""
    return max(1, min(MAX_CONNECTIONS, descriptors - 4 * accept_batch(descriptors) - 64))


class Guard:
    """The bounds of one uvicorn server (its ``ServerState``), shared by its connections:
    which are open, which wait for a request head (oldest first), and the counts not yet
    logged. Cost: O(1) per connection event."""

    _of: weakref.WeakKeyDictionary[Any, Guard] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, server_state: Any, loop: asyncio.AbstractEventLoop, transport: Any) -> Guard:
        """The guard of ``server_state``, made at its first connection (``transport``)."""
        guard = cls._of.get(server_state)
        if guard is None:
            guard = cls._of[server_state] = cls(loop)
            lengthen_queue(transport)
        return guard

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.bound = connection_bound(raise_descriptor_limit()[1])
        self.open: set[Any] = set()
        self.waiting: dict[Any, None] = {}  # insertion order: longest waiting first
        self.counts: Counter[str] = Counter()
        self._report: asyncio.TimerHandle | None = None
        self._since = loop.time()  # when the interval began
        self._logged: set[str] = set()  # event-loop errors logged in this interval
        self._previous = loop.get_exception_handler()
        loop.set_exception_handler(self._exception)

    def admit(self, connection: Any) -> bool:
        """Count ``connection`` open, closing the longest waiting one if it is one too
        many; ``False`` (and nothing counted) when none waits: close ``connection``."""
        if len(self.open) >= self.bound:
            victim = next(iter(self.waiting), None)
            if victim is None:
                self.note("refused (every open connection has a request in progress)")
                return False
            self.forget(victim)
            victim.transport.close()
            self.note("closed to make room")
        self.open.add(connection)
        return True

    def forget(self, connection: Any) -> None:
        self.open.discard(connection)
        self.waiting.pop(connection, None)

    def note(self, what: str) -> None:
        """Count one event for the next log line."""
        self.counts[what] += 1
        self._interval()

    def _interval(self) -> None:
        """Start an interval unless one runs: its counts are logged at its end."""
        if self._report is None:
            self._since = self.loop.time()
            self._report = self.loop.call_later(REPORT_EVERY, self.report)

    def report(self) -> None:
        """Log the counts as one line (now: the interval ends)."""
        if self._report is not None:
            self._report.cancel()
        self._report = None
        self._logged.clear()
        if not self.counts:
            return
        parts = ", ".join(f"{n:,} {what}" for what, n in sorted(self.counts.items()))
        late_only = set(self.counts) == {LATE}  # also what browsers' spare connections do
        self.counts.clear()
        level = logging.INFO if late_only else logging.WARNING
        logger.log(level, "connections in the last %.1f s (at most %d open, request heads "
                   "within %g s): %s", self.loop.time() - self._since, self.bound,
                   HEAD_TIMEOUT, parts)

    def _exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_FAILED:  # once per pending connection and loop
            err = context.get("exception")
            code = errno.errorcode.get(getattr(err, "errno", None) or 0, "?")
            self.note(f"accept() failed ({code}: {getattr(err, 'strerror', err)})")
            return
        message = f"{context.get('message')} {context.get('exception')!r}"[:500]
        if message in self._logged or len(self._logged) >= MAX_ERRORS:
            self.note("event-loop errors logged before in this interval")
            return
        self._logged.add(message)
        self._interval()
        if self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)


class Guarded:
    """Mixin for uvicorn's HTTP protocols (before them in the bases): applies the
    connection's :class:`Guard`."""

    transport: Any
    cycle: Any
    loop: asyncio.AbstractEventLoop
    server_state: Any

    def connection_made(self, transport: Any) -> None:
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._heard = False
        super().connection_made(transport)  # type: ignore[misc]
        self._guard = Guard.of(self.server_state, self.loop, transport)
        if not self._guard.admit(self):
            transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        self._sent()
        self._guard.forget(self)
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        if self._head_timer is not None:
            self._heard = True
        cycle = self.cycle
        super().data_received(data)  # type: ignore[misc]
        if self.cycle is not cycle:  # a request head was parsed
            self._head_arrived()

    def shutdown(self) -> None:
        self._guard.report()  # the server stops: what the bounds closed, before the end
        super().shutdown()  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing() and not getattr(self, "pipeline", None):
            self._await_head()

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(SEND_TIMEOUT, self._send_late)

    def resume_writing(self) -> None:
        self._sent()
        super().resume_writing()  # type: ignore[misc]

    def _sent(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _send_late(self) -> None:
        self._send_timer = None
        if not self.transport.is_closing():
            self.transport.abort()  # what is buffered goes too
            self._guard.note(STALLED)

    def _await_head(self) -> None:
        self._head_arrived()
        self._heard = False
        self._guard.waiting[self] = None
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._guard.waiting.pop(self, None)

    def _head_late(self) -> None:
        self._head_timer = None
        self._guard.waiting.pop(self, None)
        if self.transport.is_closing():
            return
        if self._heard:
            self.transport.write(TIMED_OUT)
        self.transport.close()
        self._guard.note(LATE)
