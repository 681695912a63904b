"""Chunk buffers taken again once nothing refers to them.

Reading into fresh memory costs a page fault per 4 KiB page, each zeroed by the kernel
first: a scan of 2,100 spans of 2 MiB met ~100,000 faults, which took longer than its
reads. A buffer handed out is referred to by whatever holds the chunk (zarr's buffer, a
memoryview, a slice of one); the pool takes it again only when its reference count is
that of a buffer nobody holds, read under the pool's lock by the same expression that
measured an idle one. Where reference counts cannot say so (a free-threaded build)
nothing is kept.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

POOLED_BYTES = 64 << 20  # memory a pool keeps for reuse


def _refs(kept: list[np.ndarray], at: int) -> int:
    return sys.getrefcount(kept[at])


_IDLE = _refs([np.empty(1, np.uint8)], 0)  # a kept buffer nothing else refers to
_COUNTS_TELL = getattr(sys, "_is_gil_enabled", lambda: True)()


class BufferPool:
    """Writable buffers of a size asked again and again (a field's spans)."""

    def __init__(self, limit: int = POOLED_BYTES) -> None:
        self._kept: list[np.ndarray] = []
        self._limit = limit
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> memoryview:
        """``nbytes`` writable bytes, contents undefined: a kept buffer of that size that
        nothing refers to, else new memory (kept if the pool stays within its limit,
        idle buffers of other sizes making room). Cost: a look at each
        kept buffer (a few dozen at most)."""
        if not _COUNTS_TELL:
            return np.empty(nbytes, np.uint8).data
        with self._lock:
            kept, others = self._kept, []
            for at in range(len(kept)):
                if _refs(kept, at) == _IDLE:
                    if kept[at].nbytes == nbytes:
                        return kept[at].data  # referred to from here on
                    others.append(at)
            fresh = np.empty(nbytes, np.uint8)
            total = sum(buffer.nbytes for buffer in kept) + nbytes
            while total > self._limit and others:
                total -= kept.pop(others.pop()).nbytes
            if total <= self._limit:
                kept.append(fresh)
            return fresh.data
