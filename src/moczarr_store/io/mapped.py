"""Spans served from the page cache through memory maps.

A span joins ``k`` leaf objects. Read, each costs a copy from the page cache into the
span's buffer, and zarr copies that buffer once more into its output. Mapped side by side
into one stretch of address space (object ``i``'s data at ``i * step``), the span's bytes
are the page cache itself: zarr's copy is the only one, and a span mapped once costs no
system call when it is read again.

What is mapped, and when: only objects of versions that cannot change (the ``run-*``
versions, whose encoding is established and whose shard index is compared with the
layout it must have, read from the mapped file itself), only when each object's data is
a whole number of pages at the start of its file, and only while every page is in the
page cache (``mincore``): the event loop never waits on a disk. A span kept mapped is
served again only while each of its files is the one mapped (device, inode, size and
times unchanged: one ``stat`` each); a changed file is mapped and checked again. On a
local file system (:mod:`.watch`) the kernel reports a change instead: a span whose
files and directories up to the hive root are watched (inotify) costs one read of the
event queue a call, not a ``stat`` a file, and is let go when a watch of it fires.

What is kept: up to ``config["mapped.objects"]`` files stay mapped per process (the
kernel allows ~65,000 mappings), in at most ``config["mapped.bytes"]`` of address space,
the least recently used let go (unmapped once nothing refers to its bytes). Pages a read
touched count in the process's resident memory while they stay mapped in (they are the
page cache, not a copy): those of the spans served last, up to
``config["mapped.touched_bytes"]`` (an eighth of the machine's memory, at most 4 GiB),
stay; older spans' pages are handed back (``madvise``), their mappings kept, so that
reading them again costs page faults (on 262 KB objects about as much as reading them),
not system calls. Linux only; elsewhere
spans are read as before, and so are they by an unpickled store (``Backend.maps_spans``):
a copy is read where it was sent, often a dask worker, whose memory monitor counts these
pages and pauses the worker at its limit.

As with every memory-mapped reader, a file truncated in place while it is mapped ends the
process with ``SIGBUS`` when a lost page is touched; ``run-*`` versions are never
rewritten by their writer, and ``moczarr_store.config.set({"mapped.bytes": 0})`` turns
mapping off (:func:`release` lets go of every span kept).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .. import state
from ..tunables import setting
from . import watch

PAGE = mmap.PAGESIZE

_PROT_NONE = 0
_MAP_FIXED = 0x10  # Linux
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)
# Linux 5.14: page tables filled in one call (EINVAL before, and nothing done)
_MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)
_NOWAIT = getattr(os, "RWF_NOWAIT", None)


def _libc() -> Any:
    """The C library's ``mmap``, ``munmap``, ``mincore`` and ``madvise``, or ``None`` (not
    Linux)."""
    if sys.platform != "linux" or _NOWAIT is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int64]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_FAILED = ctypes.c_void_p(-1).value
# span key -> (its mapped bytes, the identity of each file mapped, in order, and each
# file's real path when it may be watched)
_Made = tuple[np.ndarray, list[tuple[int, ...]], list[str] | None]


class Kept:
    """The spans this process keeps mapped (least recently used first), their totals, and
    those served last whose pages stay resident: this module's part of the process state
    (:mod:`moczarr_store.state`)."""

    def __init__(self) -> None:
        self.spans: OrderedDict[Hashable, _Made] = OrderedDict()
        self.bytes = self.files = 0
        self.touched: OrderedDict[Hashable, np.ndarray] = OrderedDict()  # in order served
        self.touched_bytes = 0
        self.lock = threading.Lock()

    def release(self) -> None:
        """Let go of every span kept (each unmapped once nothing refers to it)."""
        with self.lock:
            while self.spans:
                _drop(self, next(iter(self.spans)))


KEPT = state.Part("mapped spans", Kept, Kept.release)


class _Region:
    """``nbytes`` of address space at ``base``, unmapped once nothing refers to it (numpy
    arrays made from it keep it as their base)."""

    def __init__(self, base: int, nbytes: int) -> None:
        self.base, self.nbytes = base, nbytes

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"data": (self.base, True), "shape": (self.nbytes,), "typestr": "|u1",
                "version": 3}

    def __del__(self) -> None:
        if _LIBC is not None:
            _LIBC.munmap(self.base, self.nbytes)


def available() -> bool:
    """Whether spans can be mapped here (Linux, with ``RWF_NOWAIT``)."""
    return _LIBC is not None


def identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is replaced or written: device, inode, size, times."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def span(
    key: Hashable,
    parts: Sequence[tuple[str, bytes]],
    step: int,
    open_object: Callable[[str], int],
    identify: Callable[[str], tuple[int, ...] | None],
    root: str | None = None,
) -> tuple[memoryview, int] | None:
    """The data of ``parts`` side by side, read-only, and how many objects were opened
    for it (0: kept from an earlier call): ``(path, index)`` each, an object whose first
    ``step`` bytes are its data and whose rest must equal ``index`` (``b""``: a plain
    chunk). Mapped now (``open_object(path)`` opens each, its path
    checked as for a read), or kept from an earlier call under ``key`` while
    ``identify(path)`` (:func:`identity` of the file there, or ``None``) says each file is
    the one mapped. ``root``: the real path of the hive root, when the objects' real paths
    are checked to be below it (no link followed): their files are then watched where
    :func:`.watch.watch` can, and ``identify`` is not asked again while no watch fired.
    ``None`` when it cannot be mapped, or not all its pages are in the
    page cache: read it then. Cost: kept, one read of the event queue, one ``mincore`` and
    one ``stat`` per object unless watched (the first time it is served again, a watch of
    each object and of each directory not yet watched, ~4 µs each, then its ``stat``);
    else an open, a ``fstat``, one read of the index and one ``mmap`` per object."""
    if _LIBC is None or step % PAGE or not parts or setting("mapped.bytes") <= 0:
        return None
    trusted, spans = False, KEPT()
    with spans.lock:
        _notice(spans)
        kept = spans.spans.get(key)
        if kept is not None:
            spans.spans.move_to_end(key)
            trusted = watch.watched(key)
    if kept is not None and not trusted and root is not None and kept[2] is not None:
        trusted = _watch(spans, key, kept, parts, identify, root)  # served again: watch it
    if kept is not None and not trusted and any(
            identify(path) != known for (path, _), known in zip(parts, kept[1], strict=True)):
        _forget(spans, key)  # a file changed, or was replaced: map it again, checked again
        kept = None
    made = _map(parts, step, open_object, root is not None) if kept is None else kept
    if made is None or not _resident(made[0]):
        return None
    if kept is None:
        _keep(spans, key, made)
    _touch(spans, key, made[0])
    return made[0].data, 0 if kept is not None else len(parts)


def _notice(spans: Kept) -> None:
    """Let go of the kept spans a watch of which fired (all when any may have); lock held."""
    changed = watch.changed()
    for key in list(spans.spans) if changed is None else changed:
        if key in spans.spans:
            _drop(spans, key)


def _watch(spans: Kept, key: Hashable, made: _Made, parts: Sequence[tuple[str, bytes]],
           identify: Callable[[str], tuple[int, ...] | None], root: str) -> bool:
    """Whether the files of the span kept under ``key`` are watched now and still the ones
    mapped (checked after the watch: a change before it is not reported). Asked when a
    span is served again (one served once costs no watch); one that cannot be watched is
    not asked again, and is checked with ``stat`` each call as before."""
    with spans.lock:
        if spans.spans.get(key) is not made or made[2] is None:
            return False  # let go meanwhile
        if not watch.watch(key, made[2], [known[0] for known in made[1]], root):
            spans.spans[key] = (made[0], made[1], None)  # not tried again
            return False
        if any(identify(path) != known or _identity_at(real) != known
               for (path, _), known, real in zip(parts, made[1], made[2], strict=True)):
            watch.unwatch(key)  # changed, or watched elsewhere: checked again as unwatched
            return False
        return True


def _identity_at(real: str) -> tuple[int, ...] | None:
    """:func:`identity` of the file at real path ``real`` (the one watched), or ``None``."""
    try:
        return identity(os.stat(real, follow_symlinks=False))
    except OSError:
        return None


def _map(parts: Sequence[tuple[str, bytes]], step: int, open_object: Callable[[str], int],
         located: bool = False) -> _Made | None:
    nbytes, files, reals = step * len(parts), [], []
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
    base = _LIBC.mmap(None, nbytes, _PROT_NONE, flags, -1, 0)  # reserved, not backed
    if base is None or base == _FAILED:
        return None
    region = _Region(base, nbytes)  # unmapped when given up
    try:
        for at, (path, index) in enumerate(parts):
            fd = open_object(path)
            try:
                if located:  # where the kernel opened it (for its watch)
                    try:
                        reals.append(os.readlink(f"/proc/self/fd/{fd}"))
                    except OSError:  # no /proc: checked with stat
                        located = False
                info = os.fstat(fd)
                files.append(identity(info))
                if info.st_size != step + len(index):
                    return None
                if index and not _index_is(fd, index, step):
                    return None
                where = base + at * step
                got = _LIBC.mmap(where, step, mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED,
                                 fd, 0)
                if got != where:
                    return None
            finally:
                os.close(fd)
    except Exception:  # unreadable, refused: read as usual, where the error is reported
        return None
    return np.asarray(region), files, reals if located else None


def _index_is(fd: int, index: bytes, at: int) -> bool:
    """Whether the file holds ``index`` at ``at``, read only from the page cache."""
    got = bytearray(len(index))
    try:
        return os.preadv(fd, [got], at, _NOWAIT or 0) == len(index) and got == index
    except BlockingIOError:
        return False


_ODD = bytes(range(1, 256, 2))  # a page ``mincore`` finds in the page cache: its low bit


def _resident(array: np.ndarray) -> bool:
    """Whether every page of the mapped ``array`` is in the page cache (one ``mincore``;
    its address kept by its region, not asked of numpy: about 1 µs a call)."""
    region = array.base
    base = region.base if isinstance(region, _Region) else array.ctypes.data
    pages = (ctypes.c_ubyte * (array.nbytes // PAGE))()
    if _LIBC.mincore(base, array.nbytes, pages) != 0:
        return False
    return not bytes(pages).translate(None, _ODD)


def release() -> None:
    """Let go of every span this process keeps mapped (each is unmapped once nothing
    refers to it)."""
    KEPT().release()


def _keep(spans: Kept, key: Hashable, made: _Made) -> None:
    """Keep a span under ``key``, letting the least recently used go past the limits."""
    most, files = setting("mapped.bytes"), setting("mapped.objects")
    with spans.lock:
        if key in spans.spans:
            return
        spans.spans[key] = made
        spans.bytes += made[0].nbytes
        spans.files += len(made[1])
        while spans.spans and (spans.bytes > most or spans.files > files):
            _drop(spans, next(iter(spans.spans)))


def _touch(spans: Kept, key: Hashable, array: np.ndarray) -> None:
    """``array`` served now: its pages stay; the pages of spans served before it past
    ``config["mapped.touched_bytes"]`` are handed back (their mappings stay; touched again,
    they fault in)."""
    touched = setting("mapped.touched_bytes")
    with spans.lock:
        if key not in spans.spans:  # let go at once (larger than the limits): none held
            return
        if key not in spans.touched:  # its pages mapped in at once, not a fault per few
            _LIBC.madvise(array.ctypes.data, array.nbytes, _MADV_POPULATE_READ)
            spans.touched_bytes += array.nbytes
        spans.touched[key] = array
        spans.touched.move_to_end(key)
        while spans.touched_bytes > touched and len(spans.touched) > 1:
            _, old = spans.touched.popitem(last=False)
            spans.touched_bytes -= old.nbytes
            _LIBC.madvise(old.ctypes.data, old.nbytes, _MADV_DONTNEED)


def _forget(spans: Kept, key: Hashable) -> None:
    with spans.lock:
        if key in spans.spans:
            _drop(spans, key)


def _drop(spans: Kept, key: Hashable) -> None:
    """Let the span under ``key`` go (unmapped once nothing refers to it); lock held."""
    array, files, _ = spans.spans.pop(key)
    watch.unwatch(key)
    spans.bytes -= array.nbytes
    spans.files -= len(files)
    if spans.touched.pop(key, None) is not None:
        spans.touched_bytes -= array.nbytes
