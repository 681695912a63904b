"""Which watched local files changed: Linux inotify watches held for owners (the spans
:mod:`.mapped` keeps), so that a kept span learns of a change from one
non-blocking read of the event queue instead of one ``stat`` per file.

A file is watched for writes, truncation, a change of its metadata (times, mode, link
count: unlinked or renamed over) and for being moved or deleted; each directory from its
own up to the hive root is watched for being moved or deleted. Only files on a local file
system every change of which goes through this kernel are watched (:data:`LOCAL`: not
NFS, FUSE, overlayfs, CIFS or anything unknown), at most ``config["mapped.watches"]``
watches (and a quarter of the system's ``max_user_watches``) per process; past that, or
on any error, an owner is not watched and its files are checked with ``stat`` as before.
One inotify instance per process, opened at the first watch, and the tables of what it
watches: this module's part of the process state (:mod:`moczarr_store.state`); a forked
child starts with none (it closes its copy of the parent's descriptor, never removing the
parent's watches). Linux only.
Writes through another process's shared memory map of a file are not reported by the
kernel (``run-*`` versions are written with ``write`` and never rewritten).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Hashable, Sequence
from typing import Any

from .. import state
from ..tunables import setting

# the file systems whose every change is made by this kernel (and so reported)
LOCAL = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs"})

KINDS_KEPT = 4096  # devices whose file system type is remembered (a machine has a few)


class Watches:
    """This process's inotify instance (``None`` until the first watch) and what it
    watches for whom."""

    def __init__(self) -> None:
        self.inotify: Any = None
        self.system: int | None = None  # a quarter of max_user_watches, once read
        self.owned: dict[Hashable, tuple[int, ...]] = {}  # owner -> the watches it holds
        self.owners: dict[int, set[Hashable]] = {}  # watch -> the owners holding it
        self.paths: dict[str, int] = {}  # directory -> its watch (added once, shared)
        self.names: dict[int, set[str]] = {}  # watch -> the directories remembered under it
        self.kinds: dict[int, str | None] = {}  # device -> its file system type (or None)

    def close(self) -> None:
        """Close the instance (with every watch it holds): at :func:`state.reset`, and in
        a forked child, where it is the parent's instance's descriptor only."""
        if self.inotify is not None:
            self.inotify.close()

    def start_over(self) -> None:
        """Close the instance and forget every watch (the next watch opens another)."""
        self.close()
        self.inotify = None
        for table in (self.owned, self.owners, self.paths, self.names):
            table.clear()


WATCHES = state.Part("inotify watches", Watches, Watches.close, forked=Watches.close)


def available() -> bool:
    """Whether files can be watched here (Linux, with ``inotify_simple``)."""
    if sys.platform != "linux":
        return False
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        return False
    return True


def _inotify(held: Watches) -> Any:
    """This process's inotify instance (non-blocking), opened now if need be; ``None``
    when it cannot be."""
    if held.inotify is None and available():
        from inotify_simple import INotify

        try:
            held.inotify = INotify(nonblocking=True)
        except OSError:
            return None
    return held.inotify


def _bound(held: Watches) -> int:
    """``config["mapped.watches"]``, at most a quarter of the system's limit per user."""
    if held.system is None:
        try:
            with open("/proc/sys/fs/inotify/max_user_watches") as limit:
                held.system = int(limit.read()) // 4
        except (OSError, ValueError):
            held.system = 0
    return min(setting("mapped.watches"), held.system)


def _kind(device: int) -> str | None:
    """The type of the file system on ``device`` (``/proc/self/mountinfo``), or ``None``."""
    kinds = WATCHES().kinds
    if device not in kinds:
        if len(kinds) > KINDS_KEPT:
            kinds.clear()
        number = f"{os.major(device)}:{os.minor(device)}"
        kinds[device] = None
        try:
            with open("/proc/self/mountinfo") as mounts:
                for line in mounts:
                    fields = line.split()
                    if fields[2] == number and " - " in line:
                        kinds[device] = line.split(" - ", 1)[1].split()[0]
        except (OSError, IndexError):
            pass
    return kinds[device]


def watch(owner: Hashable, files: Sequence[str], devices: Sequence[int], root: str) -> bool:
    """Watch ``files`` (real paths below the real path ``root``, on ``devices``) and each
    directory up to ``root`` for ``owner``; ``False`` (nothing held) when any of them
    cannot be watched. The caller then checks each file is still the one it opened.
    Cost: an ``inotify_add_watch`` per file and per directory not yet watched."""
    held = WATCHES()
    if owner in held.owned:
        return True
    if any(_kind(device) not in LOCAL for device in devices):
        return False
    inotify = _inotify(held)
    if inotify is None:
        return False
    from inotify_simple import flags

    # a file: written, truncated, its metadata (link count: unlinked, renamed over), moved,
    # deleted; a directory: moved or deleted (no link followed)
    file_mask = (flags.MODIFY | flags.ATTRIB | flags.MOVE_SELF | flags.DELETE_SELF
                 | flags.DONT_FOLLOW)
    dir_mask = flags.MOVE_SELF | flags.DELETE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW
    top = root.rstrip("/") or "/"
    prefix, most = top.rstrip("/") + "/", _bound(held)
    added: list[int] = []
    try:
        for path in files:
            if not path.startswith(prefix) or len(held.owners) + len(added) >= most:
                raise OSError(errno.ENOSPC, "not watched")
            added.append(inotify.add_watch(path, file_mask))
            folder = path.rpartition("/")[0] or "/"
            while True:
                wd = held.paths.get(folder)
                if wd is None:
                    wd = inotify.add_watch(folder, dir_mask)
                    held.paths[folder] = wd
                    held.names.setdefault(wd, set()).add(folder)
                added.append(wd)
                if folder in (top, "/"):
                    break
                folder = folder.rpartition("/")[0] or "/"
    except OSError:
        for wd in added:  # the directories added stay until no owner holds them
            if wd not in held.owners:
                _remove(held, wd)
        return False
    held.owned[owner] = tuple(set(added))
    for wd in held.owned[owner]:
        held.owners.setdefault(wd, set()).add(owner)
    return True


def watched(owner: Hashable) -> bool:
    return owner in WATCHES().owned


def unwatch(owner: Hashable) -> None:
    """Let ``owner``'s watches go (each removed once no owner holds it)."""
    held = WATCHES()
    for wd in held.owned.pop(owner, ()):
        owners = held.owners.get(wd)
        if owners is not None:
            owners.discard(owner)
            if not owners:
                del held.owners[wd]
                _remove(held, wd)


def _remove(held: Watches, wd: int) -> None:
    for folder in held.names.pop(wd, ()):
        if held.paths.get(folder) == wd:
            del held.paths[folder]
    if held.inotify is not None:
        with contextlib.suppress(OSError):  # already gone with its file (IN_IGNORED)
            held.inotify.rm_watch(wd)


def changed() -> set[Hashable] | None:
    """The owners a watch of which fired since the last call (their watches let go), or
    ``None``: any owner may have changed (the event queue overflowed, or the instance
    failed: every watch is then forgotten). Cost: one non-blocking ``read`` (~1 µs when
    nothing happened)."""
    held = WATCHES()
    if held.inotify is None:
        return set()
    from inotify_simple import flags

    try:
        events = list(held.inotify.read(timeout=0))  # what is queued, never waiting
    except OSError:  # the instance is unusable: trust no watch, start over
        held.start_over()
        return None
    if not events:
        return set()
    if any(event.mask & flags.Q_OVERFLOW for event in events):
        return None
    fired = {event.wd for event in events}
    owners: set[Hashable] = set()
    for wd in fired:
        for folder in held.names.pop(wd, ()):  # a directory moved away is watched anew
            if held.paths.get(folder) == wd:
                del held.paths[folder]
        owners |= held.owners.get(wd, set())
    for owner in owners:
        unwatch(owner)
    return owners
