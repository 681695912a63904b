"""Which watched local files changed: Linux inotify watches held for owners (the spans
:mod:`moczarr_store.mapped` keeps), so that a kept span learns of a change from one
non-blocking read of the event queue instead of one ``stat`` per file.

A file is watched for writes, truncation, a change of its metadata (times, mode, link
count: unlinked or renamed over) and for being moved or deleted; each directory from its
own up to the hive root is watched for being moved or deleted. Only files on a local file
system every change of which goes through this kernel are watched (:data:`LOCAL`: not
NFS, FUSE, overlayfs, CIFS or anything unknown), at most ``config["mapped.watches"]``
watches (and a quarter of the system's ``max_user_watches``) per process; past that, or
on any error, an owner is not watched and its files are checked with ``stat`` as before.
One inotify instance per process, opened at the first watch; a forked child starts over
with none (its first :func:`changed` says every owner may have changed). Linux only.
Writes through another process's shared memory map of a file are not reported by the
kernel (``run-*`` versions are written with ``write`` and never rewritten).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import sys
from collections.abc import Hashable, Sequence
from typing import Any

from ..tunables import setting

# the file systems whose every change is made by this kernel (and so reported)
LOCAL = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs"})

_STATE: dict[str, Any] = {"inotify": None, "pid": None, "system": None}
_OWNED: dict[Hashable, tuple[int, ...]] = {}  # owner -> the watches it holds
_OWNERS: dict[int, set[Hashable]] = {}  # watch -> the owners holding it
_PATHS: dict[str, int] = {}  # directory -> its watch (added once, shared)
_NAMES: dict[int, set[str]] = {}  # watch -> the directories remembered under it
_KINDS: dict[int, str | None] = {}  # device -> its file system's type (None: unknown)


def available() -> bool:
    """Whether files can be watched here (Linux, with ``inotify_simple``)."""
    if sys.platform != "linux":
        return False
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        return False
    return True


def _inotify():
    """This process's inotify instance (non-blocking), opened now if need be; ``None``
    when it cannot be."""
    got = _STATE["inotify"]
    if got is None and available():
        from inotify_simple import INotify

        try:
            got = INotify(nonblocking=True)
        except OSError:
            return None
        _STATE["inotify"], _STATE["pid"] = got, os.getpid()
        atexit.register(_close, got)
    return got


def _bound() -> int:
    """``config["mapped.watches"]``, at most a quarter of the system's limit per user."""
    if _STATE["system"] is None:
        try:
            with open("/proc/sys/fs/inotify/max_user_watches") as limit:
                _STATE["system"] = int(limit.read()) // 4
        except (OSError, ValueError):
            _STATE["system"] = 0
    return min(setting("mapped.watches"), _STATE["system"])


def _kind(device: int) -> str | None:
    """The type of the file system on ``device`` (``/proc/self/mountinfo``), or ``None``."""
    if device not in _KINDS:
        if len(_KINDS) > 4096:
            _KINDS.clear()
        number = f"{os.major(device)}:{os.minor(device)}"
        _KINDS[device] = None
        try:
            with open("/proc/self/mountinfo") as mounts:
                for line in mounts:
                    fields = line.split()
                    if fields[2] == number and " - " in line:
                        _KINDS[device] = line.split(" - ", 1)[1].split()[0]
        except (OSError, IndexError):
            pass
    return _KINDS[device]


def watch(owner: Hashable, files: Sequence[str], devices: Sequence[int], root: str) -> bool:
    """Watch ``files`` (real paths below the real path ``root``, on ``devices``) and each
    directory up to ``root`` for ``owner``; ``False`` (nothing held) when any of them
    cannot be watched. The caller then checks each file is still the one it opened.
    Cost: an ``inotify_add_watch`` per file and per directory not yet watched."""
    if owner in _OWNED:
        return True
    if _STATE["pid"] not in (None, os.getpid()):
        _start_over()
    if any(_kind(device) not in LOCAL for device in devices):
        return False
    inotify = _inotify()
    if inotify is None:
        return False
    from inotify_simple import flags

    # a file: written, truncated, its metadata (link count: unlinked, renamed over), moved,
    # deleted; a directory: moved or deleted (no link followed)
    file_mask = (flags.MODIFY | flags.ATTRIB | flags.MOVE_SELF | flags.DELETE_SELF
                 | flags.DONT_FOLLOW)
    dir_mask = flags.MOVE_SELF | flags.DELETE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW
    held: list[int] = []
    top = root.rstrip("/") or "/"
    prefix, most = top.rstrip("/") + "/", _bound()
    try:
        for path in files:
            if not path.startswith(prefix) or len(_OWNERS) + len(held) >= most:
                raise OSError(errno.ENOSPC, "not watched")
            held.append(inotify.add_watch(path, file_mask))
            folder = path.rpartition("/")[0] or "/"
            while True:
                wd = _PATHS.get(folder)
                if wd is None:
                    wd = inotify.add_watch(folder, dir_mask)
                    _PATHS[folder] = wd
                    _NAMES.setdefault(wd, set()).add(folder)
                held.append(wd)
                if folder in (top, "/"):
                    break
                folder = folder.rpartition("/")[0] or "/"
    except OSError:
        for wd in held:  # the directories added stay until no owner holds them
            if wd not in _OWNERS:
                _remove(wd)
        return False
    _OWNED[owner] = tuple(set(held))
    for wd in _OWNED[owner]:
        _OWNERS.setdefault(wd, set()).add(owner)
    return True


def watched(owner: Hashable) -> bool:
    return owner in _OWNED


def unwatch(owner: Hashable) -> None:
    """Let ``owner``'s watches go (each removed once no owner holds it)."""
    for wd in _OWNED.pop(owner, ()):
        owners = _OWNERS.get(wd)
        if owners is not None:
            owners.discard(owner)
            if not owners:
                del _OWNERS[wd]
                _remove(wd)


def _remove(wd: int) -> None:
    for folder in _NAMES.pop(wd, ()):
        if _PATHS.get(folder) == wd:
            del _PATHS[folder]
    inotify = _STATE["inotify"]
    if inotify is not None:
        with contextlib.suppress(OSError):  # already gone with its file (IN_IGNORED)
            inotify.rm_watch(wd)


def changed() -> set[Hashable] | None:
    """The owners a watch of which fired since the last call (their watches let go), or
    ``None``: any owner may have changed (the event queue overflowed, or this is a forked
    child, which starts over with no watch). Cost: one non-blocking ``read`` (~1 µs when
    nothing happened)."""
    inotify = _STATE["inotify"]
    if inotify is None:
        return set()
    if _STATE["pid"] != os.getpid():
        _start_over()
        return None
    from inotify_simple import flags

    try:
        events = list(inotify.read(timeout=0))  # what is queued, never waiting
    except OSError:  # the instance is unusable: trust no watch
        _start_over()
        return None
    if not events:
        return set()
    if any(event.mask & flags.Q_OVERFLOW for event in events):
        return None
    fired = {event.wd for event in events}
    owners: set[Hashable] = set()
    for wd in fired:
        for folder in _NAMES.pop(wd, ()):  # a directory moved away is watched anew
            if _PATHS.get(folder) == wd:
                del _PATHS[folder]
        owners |= _OWNERS.get(wd, set())
    for owner in owners:
        unwatch(owner)
    return owners


def _close(inotify: Any) -> None:
    inotify.close()  # at exit, or once started over (a file object closes once)


def _start_over() -> None:
    """Forget every watch (in a forked child: the parent's instance is left to it)."""
    inotify = _STATE["inotify"]
    _STATE["inotify"] = _STATE["pid"] = None
    if inotify is not None:
        inotify.close()  # this process's descriptor only
    for table in (_OWNED, _OWNERS, _PATHS, _NAMES):
        table.clear()
