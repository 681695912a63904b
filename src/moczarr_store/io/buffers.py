"""Read buffers taken again once nothing refers to them.

Reading into fresh memory costs a page fault per 4 KiB page, each zeroed by the kernel
first: a zarr scan of 2,100 leaves of 262 KB met ~70,000 faults, which took longer than
its reads. A buffer handed out is referred to by whatever holds the bytes (zarr's buffer,
a memoryview, a slice of one); the pool takes it again only when its reference count is
that of a buffer nobody holds, read under the pool's lock by the same expression that
measured an idle one. Buffers under ``POOLED_MIN`` bytes are left to the allocator (it
reuses such memory without faults), and where reference counts cannot tell (a
free-threaded build) nothing is kept.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from ..tunables import setting

POOLED_MIN = 128 << 10  # smaller buffers come from the allocator's reused memory
POOLED_STEP = 64 << 10  # kept sizes are multiples of it: objects of near sizes share


def uninitialised(nbytes: int) -> memoryview:
    """``nbytes`` writable, uninitialised bytes: ``bytearray(nbytes)`` zero-fills first:
    one more pass over the bytes before they are read."""
    return np.empty(nbytes, np.uint8).data


def _refs(kept: list[np.ndarray], at: int) -> int:
    return sys.getrefcount(kept[at])


_IDLE = _refs([np.empty(1, np.uint8)], 0)  # a kept buffer nothing else refers to
_COUNTS_TELL = getattr(sys, "_is_gil_enabled", lambda: True)()


class BufferPool:
    """Writable buffers of the sizes a store reads again and again (its leaf objects, its
    spans), up to ``limit`` bytes kept (``config["buffers.pooled_bytes"]`` when the pool is
    made)."""

    def __init__(self, limit: int | None = None) -> None:
        self._kept: dict[int, list[np.ndarray]] = {}
        self._next: dict[int, int] = {}  # per size, where the look for an idle buffer starts
        self._bytes = 0
        self._limit = setting("buffers.pooled_bytes") if limit is None else limit
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> memoryview:
        """``nbytes`` writable bytes, contents undefined: the start of a kept buffer of
        ``nbytes`` rounded up to ``POOLED_STEP`` that nothing refers to, else of new
        memory (kept if the pool stays within its limit, idle buffers of other sizes
        making room). Cost: a look at kept buffers of that size, from the one after the
        last handed out, until an idle one: buffers freed in the order they were taken
        (a scan) are found at the first look."""
        if nbytes < POOLED_MIN or not _COUNTS_TELL:
            return uninitialised(nbytes)
        size = -(-nbytes // POOLED_STEP) * POOLED_STEP
        with self._lock:
            same = self._kept.setdefault(size, [])
            first = self._next.get(size, 0)
            for step in range(len(same)):
                at = (first + step) % len(same)
                if _refs(same, at) == _IDLE:
                    self._next[size] = at + 1
                    return same[at].data[:nbytes]  # referred to from here on
            fresh = np.empty(size, np.uint8)
            if self._bytes + size > self._limit:
                self._make_room(size)
            if self._bytes + size <= self._limit:
                same.append(fresh)
                self._bytes += size
                self._next[size] = 0  # after the newest: the oldest
            return fresh.data[:nbytes]

    def _make_room(self, size: int) -> None:
        """Drop idle buffers of other sizes until ``size`` more bytes fit (or none is
        left), and the sizes left with none."""
        for other, kept in list(self._kept.items()):
            if other == size:
                continue
            for at in reversed(range(len(kept))):
                if self._bytes + size <= self._limit:
                    break
                if _refs(kept, at) == _IDLE:
                    del kept[at]
                    self._bytes -= other
            if not kept:
                del self._kept[other]
                self._next.pop(other, None)
