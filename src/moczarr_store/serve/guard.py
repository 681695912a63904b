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
  (from the moment the server's write buffer is full, again each time it fills up), and
  the connection's next request (pipelined) waits until that answer is sent: a stalled
  connection holds one answer at most. An answer the kernel took whole is not read yet
  either (a socket's send buffer grows to 4 MiB on Linux): a pipelined request waits
  until at most :data:`KERNEL_HELD` bytes of it are unacknowledged by the client,
  checked at growing intervals (:data:`DRAIN_CHECKS`), so a connection that reads
  nothing costs the server one answer, not one per answer its kernel buffers hold;
- the answers waiting for their clients to read them hold at most
  ``config["serve.unsent_bytes"]`` bytes in the process: past it, the connections
  stalled longest are closed;
- at most :func:`connection_bound` connections are open (:data:`MAX_CONNECTIONS`, fewer
  when the descriptor limit is low): a new connection beyond it closes the connection
  whose answer has waited longest for its client to read it, else the one that has
  waited longest for a request head; when every open connection has a request in
  progress, it is kept over the bound (by one accepted batch at most, from the room the
  bound keeps; further ones are closed), and the next connections to arrive close
  others until the count is back under it. Stalled readers go first: they hold
  memory and read nothing, while a connection waiting for its head may be one just
  accepted whose head the server has not read yet (under a burst, newcomers would close
  one another, and each reset client connects again at once);
- connections closed by these bounds and failed ``accept()`` calls are counted and
  logged as one line per :data:`REPORT_EVERY` seconds, at most; any other error of the
  event loop is logged once per interval (its repeats are counted in that line).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import resource
import socket
import sys
import termios
import weakref
from collections import Counter
from typing import Any

from .. import state
from ..tunables import setting

logger = logging.getLogger("moczarr_store.serve")

HEAD_TIMEOUT = 10.0  # seconds from waiting for a request head to having all of it
SEND_TIMEOUT = 60.0  # seconds an answer may wait for the client to read (nginx's default)
KERNEL_HELD = 64 << 10  # unacknowledged bytes of an answer before a pipelined request waits
DRAIN_CHECKS = (0.01, 1.0)  # first and longest seconds between two checks of those bytes
MAX_CONNECTIONS = 4096  # open connections per process, at most
BACKLOG = 2048  # connections waiting to be accepted, at most (uvicorn's default)
_LINUX = sys.platform.startswith("linux")
_ESTABLISHED = 1  # Linux's TCP_ESTABLISHED, the first byte of its TCP_INFO
UNLIMITED = 1 << 30  # stands for an unlimited count of open files
MAX_ERRORS = 1024  # distinct event-loop errors logged per interval, at most
REPORT_EVERY = 10.0  # seconds between two log lines about closed connections, at least
ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message
LATE = "closed without a complete request head in time"
STALLED = "closed: the client stopped reading its answer"
MADE_ROOM = "closed to make room"
STALLED_ROOM = "closed to make room (their answers not read)"
UNWRITTEN = "moczarr_store.unwritten"  # scope key: bytes of the answer not yet written
OVER_HELD = "closed: unsent answers over the bound (the longest unread first)"
PIPELINED = "closed: more requests pipelined than serve.pipelined allows"
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


def unacknowledged(transport: Any) -> int:
    """Bytes written to ``transport``'s socket that its peer has not acknowledged (taken
    into its own buffers): Linux's ``SIOCOUTQ``; 0 elsewhere, or for a socket that is
    gone. Cost: one system call."""
    sock = transport.get_extra_info("socket")
    if sock is None or not _LINUX:
        return 0
    try:
        held = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, bytes(4))  # SIOCOUTQ on Linux
    except (OSError, ValueError):
        return 0
    return int.from_bytes(held, sys.byteorder, signed=True)


def gone(transport: Any) -> bool:
    """Whether ``transport``'s TCP connection is no longer established (the client closed
    or reset it: a connection that does not read from it never hears of that). Linux's
    ``TCP_INFO``; ``False`` elsewhere. Cost: one system call."""
    sock = transport.get_extra_info("socket")
    if sock is None or not _LINUX:
        return False
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] != _ESTABLISHED
    except (OSError, ValueError):
        return True


def connection_bound(descriptors: int) -> int:
    """Connections to keep open under a limit of ``descriptors`` open files: room stays
    for four accepted batches not yet counted (see :func:`accept_batch`), and 64 more for
    the hive's files, the log and the event loop."""
    return max(1, min(MAX_CONNECTIONS, descriptors - 4 * accept_batch(descriptors) - 64))


class Guard:
    """The bounds of one uvicorn server (its ``ServerState``), shared by its connections:
    which are open, which wait for a request head (oldest first), which wait for their
    client to read an answer (longest first, with the bytes they hold), and the counts
    not yet logged. Cost: O(1) per connection event, and per connection it closes."""

    @classmethod
    def of(cls, server_state: Any, loop: asyncio.AbstractEventLoop, transport: Any) -> Guard:
        """The guard of ``server_state``, made at its first connection (``transport``)."""
        guards = GUARDS()
        guard = guards.get(server_state)
        if guard is None:
            guard = guards[server_state] = cls(loop)
            lengthen_queue(transport)
        return guard

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        limit = raise_descriptor_limit()[1]
        self.bound = connection_bound(limit)
        self.spare = accept_batch(limit)  # connections over the bound while all are busy
        self.open: set[Any] = set()
        self.waiting: dict[Any, None] = {}  # insertion order: longest waiting first
        self.stalled: dict[Any, int] = {}  # unsent bytes, longest stalled first
        self.held = 0  # bytes the stalled connections' answers hold, in all
        self.held_bound = setting("serve.unsent_bytes")
        self.counts: Counter[str] = Counter()
        self._report: asyncio.TimerHandle | None = None
        self._since = loop.time()  # when the interval began
        self._logged: set[str] = set()  # event-loop errors logged in this interval
        self._previous = loop.get_exception_handler()
        loop.set_exception_handler(self._exception)

    def admit(self, connection: Any) -> bool:
        """Count ``connection`` open, closing the longest stalled (else the longest
        waiting) ones while they are too many; ``False`` (and nothing counted) when none
        can go and the spare room is used: close ``connection``."""
        while len(self.open) >= self.bound:  # over it when every one was busy before
            victim = next(iter(self.waiting), None)
            if self.stalled:
                self.abort(next(iter(self.stalled)), STALLED_ROOM)
            elif victim is not None:
                self.forget(victim)
                victim.transport.close()
                self.note(MADE_ROOM)
            elif len(self.open) < self.bound + self.spare:
                self.note("kept over the bound (every open connection had a request in "
                          "progress)")
                break
            else:
                self.note("refused (every open connection has a request in progress)")
                return False
        self.open.add(connection)
        return True

    def forget(self, connection: Any) -> None:
        self.open.discard(connection)
        self.waiting.pop(connection, None)
        self.unstall(connection)

    def stall(self, connection: Any, unsent: int) -> None:
        """``connection``'s answer waits for its client to read ``unsent`` bytes: while
        the stalled answers hold more than the bound, close those stalled longest (never
        ``connection`` itself: an answer larger than the bound is sent alone)."""
        self.unstall(connection)
        self.stalled[connection] = unsent
        self.held += unsent
        while self.held > self.held_bound:
            victim = next(iter(self.stalled))
            if victim is connection:
                break
            self.abort(victim, OVER_HELD)

    def unstall(self, connection: Any) -> None:
        """``connection``'s client reads again (or it is gone)."""
        self.held -= self.stalled.pop(connection, 0)

    def abort(self, connection: Any, why: str) -> None:
        """Close ``connection`` at once, dropping what it holds (``why``: for the log)."""
        self.forget(connection)
        connection.transport.abort()  # what is buffered goes too
        self.note(why)

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


GUARDS: state.Part[weakref.WeakKeyDictionary[Any, Guard]] = state.Part(
    "connection guards of servers", weakref.WeakKeyDictionary)
"""Each uvicorn server's guard (by its ``ServerState``, weakly held)."""


class Guarded:
    """Mixin for uvicorn's HTTP protocols (before them in the bases): applies the
    connection's :class:`Guard`."""

    transport: Any
    cycle: Any
    flow: Any
    loop: asyncio.AbstractEventLoop
    server_state: Any

    def connection_made(self, transport: Any) -> None:
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._heard = False
        self._deferred = False  # the next request waits for the answer to be read
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
        if self._deferred:  # its client does not read: its next request is not answered
            self.transport.abort()
            return
        super().shutdown()  # type: ignore[misc]

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            if self._send_timer is None and self._pipelined() and (
                unacknowledged(self.transport) > KERNEL_HELD
            ):  # the kernel took the answer, the client has not read it
                self._send_timer = self.loop.call_later(SEND_TIMEOUT, self._send_late)
                self._guard.stall(self, self._unsent())
                self._check_drained(DRAIN_CHECKS[0])
            if self._send_timer is not None:
                self._deferred = True  # unread: the next request would pin one more answer
                self.flow.pause_reading()
                return
        super().on_response_complete()  # type: ignore[misc]
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing() and not getattr(self, "pipeline", None):
            self._await_head()  # (h11 has parsed what was pipelined by now)

    def _pipelined(self) -> bool:
        """Whether the client sent its next request before this answer ended
        (httptools: parsed and queued; the h11 protocol says it of its own)."""
        return bool(getattr(self, "pipeline", None))

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(SEND_TIMEOUT, self._send_late)
        self._guard.stall(self, self._unsent())

    def resume_writing(self) -> None:
        super().resume_writing()  # type: ignore[misc]
        self._resume()

    def _resume(self) -> None:
        """The client reads again: the next request (if one waits) is answered."""
        self._sent()
        self._guard.unstall(self)
        if self._deferred:
            self._deferred = False
            self.on_response_complete()

    def _check_drained(self, delay: float) -> None:
        self._drain_timer = self.loop.call_later(delay, self._drained, delay)

    def _drained(self, delay: float) -> None:
        """Resume once the client has read all but :data:`KERNEL_HELD` bytes, else check
        again in twice ``delay`` (at most ``DRAIN_CHECKS[1]``); close the connection once
        the client has gone."""
        self._drain_timer = None
        if self.transport.is_closing():
            return
        if gone(self.transport):  # reading is paused: asyncio cannot see it
            self.transport.abort()
        elif unacknowledged(self.transport) > KERNEL_HELD:
            self._check_drained(min(2 * delay, DRAIN_CHECKS[1]))
        else:
            self._resume()

    def _unsent(self) -> int:
        """Bytes of this connection's answer not yet sent: its write buffer, and what a
        streamed answer has not written yet (:mod:`.streamed`)."""
        unwritten: int = 0 if self.cycle is None else self.cycle.scope.get(UNWRITTEN, 0)
        return self.transport.get_write_buffer_size() + unwritten

    def _sent(self) -> None:
        for timer in (self._send_timer, self._drain_timer):
            if timer is not None:
                timer.cancel()
        self._send_timer = self._drain_timer = None

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
