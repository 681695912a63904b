"""At interpreter exit, obstore's runtime threads hand over their last answers first.

obstore answers on its Rust (tokio) threads, which take the GIL to hand each answer to the
asyncio loop (``call_soon_threadsafe``, which releases and takes the GIL again around its
write). On CPython 3.12, a thread that asks for the GIL once the interpreter is finalizing
is ended with ``pthread_exit``, whose unwinding through those Rust frames aborts the
process: a command that printed its error exited with SIGABRT a few times in a hundred
(``inspect`` of a closed port), from the thread still finishing the hand-off of the answer
that error came from. :func:`tracked` counts the requests whose answers have not reached
Python; an exit handler waits for them (at most :data:`WAIT` seconds), then for every
thread Python did not start to leave Python code (a hand-off under way), and lets the GIL
go once more, before finalization begins. Cost at exit: nothing when no request is in
flight and no hand-off under way; at most ``2 * WAIT`` seconds.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

WAIT = 2.0  # seconds: the most the exit handler waits for each of its two conditions
POLL = 0.002  # seconds between its checks (each lets the GIL go)

_lock = threading.Lock()
_in_flight = 0
_registered = False


async def tracked(answer: Awaitable[T]) -> T:
    """``await answer`` (an obstore call), counted in flight until it has reached Python."""
    global _in_flight, _registered
    with _lock:
        _in_flight += 1
        if not _registered:
            atexit.register(settle)
            _registered = True
    try:
        return await answer
    finally:
        with _lock:
            _in_flight -= 1


def _handing_over() -> bool:
    """Whether a thread Python did not start (obstore's) is running Python code."""
    ours = {thread.ident for thread in threading.enumerate()}
    return any(ident not in ours for ident in sys._current_frames())


def settle() -> None:
    """Wait (bounded) until no obstore answer is in flight or being handed over."""
    deadline = time.monotonic() + WAIT
    while _in_flight and time.monotonic() < deadline:
        time.sleep(POLL)
    deadline = time.monotonic() + WAIT
    while _handing_over() and time.monotonic() < deadline:
        time.sleep(POLL)
    time.sleep(POLL)  # a thread waiting for the GIL to finish its hand-off takes it now
