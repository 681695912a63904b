"""A local hive read with plain file I/O (:class:`LocalReader`): objects the page cache
holds are read inline, others on a worker thread; nothing outside the hive root is read
unless links are allowed."""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from ..errors import OutsideRootError
from ..tunables import setting
from . import mapped
from .buffers import BufferPool, uninitialised
from .ranges import BytesLike, RangeOption, byte_bounds
from .reader import ObjectStat

GUESS = max(mapped.PAGE, 16 << 10)  # whole pages a document (size unknown) is first read into
_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: fail instead of waiting on the disk
_NO_NOWAIT = (errno.EAGAIN, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# an open never waits on a FIFO or becomes a terminal's controlling one
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_FD_PATHS = "/proc/self/fd"  # Linux: the kernel's real path of every open descriptor
_HAS_FD_PATHS = os.path.isdir(_FD_PATHS)
_FS_CODEC = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())  # os.fsencode's
_RESOLVE_NO_SYMLINKS = 0x04  # openat2: fail with ELOOP on a link in any component
_SYS_OPENAT2 = 437  # Linux 5.6 and later, on these architectures (others number it apart)
_OPENAT2_MACHINES = {"x86_64", "aarch64", "arm64", "i386", "i686", "armv6l", "armv7l",
                     "armv8l", "riscv64", "ppc64le", "ppc64", "s390x", "loongarch64"}
_AT_FDCWD = -100
# openat2 errors that say it cannot be used here (no such call, refused by a filter)
_NO_OPENAT2 = (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def _openat2() -> Callable[[bytes, bool], int] | None:
    """``open(path)`` that refuses a link in any component (Linux ``openat2`` with
    ``RESOLVE_NO_SYMLINKS``), for reading or (``True``) only to ``fstat`` it or know it is
    there (``O_PATH``): the descriptor, or ``-errno``; ``None`` off Linux or on an
    architecture that numbers the call apart. Its arguments are made once: a call costs
    about what :func:`os.open` does."""
    machine = os.uname().machine if hasattr(os, "uname") else ""
    if sys.platform != "linux" or machine not in _OPENAT2_MACHINES or (
            machine == "x86_64" and sys.maxsize < 2**32):  # x32 numbers calls apart
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    hows = (_OpenHow(_OPEN | _NOFOLLOW | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS),
            _OpenHow(getattr(os, "O_PATH", 0) | os.O_CLOEXEC, 0, _RESOLVE_NO_SYMLINKS))
    number, here = ctypes.c_long(_SYS_OPENAT2), ctypes.c_long(_AT_FDCWD)
    where = [ctypes.c_void_p(ctypes.addressof(how)) for how in hows]
    size = ctypes.c_size_t(ctypes.sizeof(_OpenHow))

    def open_no_links(full: bytes, path_only: bool = False) -> int:
        fd = call(number, here, full, where[path_only], size)
        return fd if fd >= 0 else -ctypes.get_errno()

    open_no_links.hows = hows  # type: ignore[attr-defined]  # alive as long as it is
    return open_no_links


_OPEN_NO_LINKS = _openat2()


def _read_open(fd: int, option: RangeOption, wait: bool = True,
               into: list[memoryview] | None = None,
               take: Callable[[int], memoryview] = uninitialised, stat: bool = True,
               ) -> tuple[memoryview, os.stat_result | None] | None:
    """An open local object's bytes (or the part ``option`` names) and its ``fstat``; a
    file that shrank while read gives the bytes it still had (callers check sizes).
    ``wait=False`` returns ``None`` unless the page cache holds them all, so the event loop
    never waits on a disk. ``into``: when the object's size is their total, it is read
    into these buffers in turn and the first is returned (``None`` unless one read fills
    them); else it is read whole as usual. ``stat=False``: a read from the start capped
    past ``GUESS`` bytes (a document's, its size unknown) is first made into ``GUESS``
    bytes, without the ``fstat``: one that stops short of a page boundary met the end of
    the file (the page cache hands out whole pages), and its stat is ``None``; else it is
    read as usual. Memory: one uninitialised buffer of the span from ``take`` (a document
    read without its ``fstat``: of ``GUESS`` bytes; none when read ``into``)."""
    if not wait and _NOWAIT is None:
        return None
    if not stat and isinstance(option, tuple) and option[0] == 0 and option[1] > GUESS:
        buffer = take(GUESS)
        got = _pread(fd, [buffer], 0, wait)
        if got is None:
            return None
        if got % mapped.PAGE:
            return buffer[:got], None
    info = os.fstat(fd)
    size = info.st_size
    if into is not None and size == sum(len(buffer) for buffer in into):
        got = _pread(fd, into, 0, wait)
        return None if got != size else (into[0], info)
    start, end = byte_bounds(option, size)
    buffer, done = take(end - start), 0
    while done < len(buffer):
        got = _pread(fd, [buffer[done:]], start + done, wait)
        if got is None:
            return None
        if got == 0:  # the file shrank under us: what is there
            return buffer[:done], info
        done += got
        if not wait and done < len(buffer):
            return None
    return buffer, info


def _pread(fd: int, buffers: list[memoryview], offset: int, wait: bool) -> int | None:
    """``preadv``; ``None`` when ``wait=False`` and the page cache lacks the bytes."""
    try:
        return os.preadv(fd, buffers, offset, 0 if wait else _NOWAIT or 0)
    except OSError as err:
        if wait or err.errno not in _NO_NOWAIT:
            raise
        return None


def _check_relative(path: str) -> None:
    padded = f"/{path}/"
    if "//" in padded or "/./" in padded or "/../" in padded:
        raise ValueError(f"{path!r} is not a path below the hive root")


class LocalReader:
    """A local hive read with plain file I/O: inline when the page cache holds an object
    (``preadv`` with ``RWF_NOWAIT``), else on a worker thread.

    Unless ``follow_links``, an object or directory whose real path leaves the root is
    refused with :class:`OutsideRootError`. On Linux 5.6 and later an object is opened in
    one call that fails on a link anywhere on its way (``openat2``): opened, its real path
    is the root's with its own appended, inside, and nothing more is checked. Where that
    fails (a link on the way: it may stay inside) or is not available, the real paths of
    directories found inside are remembered (up to ``config["cache.directories"]``); an object in a
    directory not yet known is opened under the root and its real path, as the kernel
    resolved it (``/proc/self/fd``), is checked before a byte is read: one ``readlink`` per
    new directory instead of one ``lstat`` per path component (without ``/proc``: the
    ``lstat`` per component, before the open). Objects are opened with ``O_NOFOLLOW`` (a
    final link is resolved and checked apart). A tree changed while it is read may be
    seen as resolved before.
    """

    options: dict[str, Any] = {}
    whole = False  # a file is read by range
    store = None  # not read with obstore

    def __init__(self, root: str, follow_links: bool = False) -> None:
        self.buffers = BufferPool()  # what objects are read into
        self.root = root.rstrip("/") or "/"
        self.name = "file://" + root
        self.follow_links = follow_links
        self._real_root = os.path.realpath(self.root)
        self._root_prefix = os.fsencode(self._real_root.rstrip("/") + "/")
        self._flags = 0 if follow_links else _NOFOLLOW
        self._dirs: dict[str, str] = {}  # hive-relative directory -> its real path, inside
        self._dirs_kept = setting("cache.directories")  # all let go when full
        self._ready = False

    def ready(self) -> None:
        if not self._ready:
            if not os.path.isdir(self.root):
                from ..hints import missing_root

                raise missing_root(self.root)
            self._ready = True

    def _inside(self, real: str) -> bool:
        root = self._real_root
        return real == root or real.startswith(root.rstrip("/") + "/")

    def _remember(self, rel: str, real: str) -> None:
        if len(self._dirs) >= self._dirs_kept:
            self._dirs.clear()
        self._dirs[rel] = real

    def _dir(self, rel: str) -> str:
        """The real path of directory ``rel`` ('' is the root), checked: in one call when
        no link lies on its way (``openat2``), else links resolved one component at a time
        (one ``lstat`` per directory not yet known)."""
        if self.follow_links:
            return f"{self.root}/{rel}" if rel else self.root
        if not rel:
            return self._real_root
        real = self._dirs.get(rel)
        if real is None and self._unlinked(rel):
            real = f"{self._real_root}/{rel}"
            self._remember(rel, real)
        elif real is None:
            parent, _, name = rel.rpartition("/")
            full = f"{self._dir(parent)}/{name}"
            real = os.path.realpath(full) if os.path.islink(full) else full
            if not self._inside(real):
                raise OutsideRootError(f"{rel}: a link leads out of the hive root (refused; "
                                       "pass follow_links=True to read through links)")
            self._remember(rel, real)
        return real

    def _unlinked(self, rel: str) -> bool:
        """Whether no link lies on the way to ``rel`` (one ``openat2``): its real path is
        then the root's with ``rel`` appended, there or not."""
        fd = self._no_links(rel, True)
        if fd < 0:
            return -fd in (errno.ENOENT, errno.ENOTDIR)
        os.close(fd)
        return True

    def _known(self, path: str) -> str | None:
        """The file system path of object ``path`` through its directory's checked real
        path, ``None`` while that directory is not known."""
        parent, _, name = path.rpartition("/")
        real = self._dirs.get(parent) if parent else self._real_root
        return None if real is None else f"{real}/{name}"

    def _where(self, path: str) -> str:
        """The file system path of object ``path`` (a relative path, checked by the caller),
        its directory checked."""
        if self.follow_links:
            return f"{self.root}/{path}"
        parent, _, name = path.rpartition("/")
        return f"{self._dir(parent)}/{name}"

    def _vet(self, path: str, fd: int) -> None:
        """Refuse open object ``path`` unless its real path is inside the root; remember its
        directory's real path (the object itself is no link: ``O_NOFOLLOW``)."""
        parent = path.rpartition("/")[0]
        try:
            real = os.readlink(f"{_FD_PATHS}/{fd}")
        except OSError:  # /proc not readable here: check the directories one by one
            self._dir(parent)
            return
        if not self._inside(real):
            self._dir(parent)  # names the directory that leads out
            raise OutsideRootError(f"{path}: a link leads out of the hive root (refused; "
                                   "pass follow_links=True to read through links)")
        if parent:
            real_parent = real.rpartition("/")[0]
            self._remember(parent, real_parent)
            if real_parent == f"{self._real_root}/{parent}":
                self._remember_ancestors(parent)

    def _remember_ancestors(self, parent: str) -> None:
        """Remember the directories above ``parent``, whose real path is the root's with
        ``parent`` appended: a real path holds no link, so each of them is where its name
        says (the next object below one of them costs one ``lstat``, not a vetted open)."""
        while "/" in parent:
            parent = parent.rpartition("/")[0]
            if parent in self._dirs:
                return
            self._remember(parent, f"{self._real_root}/{parent}")

    def _next_dir(self, path: str) -> str | None:
        """The file system path of object ``path`` when its directory is a plain directory
        (no link) in one already known, checked with one ``lstat`` and remembered; else
        ``None``."""
        parent, _, name = path.rpartition("/")
        grand, _, base = parent.rpartition("/")
        known = self._dirs.get(grand) if grand else self._real_root
        if known is None:
            return None
        real = f"{known}/{base}"
        try:
            if not stat.S_ISDIR(os.lstat(real).st_mode):
                return None
        except OSError:
            return None
        self._remember(parent, real)
        return f"{real}/{name}"

    def _through_link(self, path: str, full: str) -> str:
        """The real path of an object that is itself a link, if it stays inside the root."""
        real = os.path.realpath(full)
        if not self._inside(real):
            raise OutsideRootError(f"{path}: the object is a link out of the hive root "
                                   "(refused; pass follow_links=True to read through links)")
        return real

    def _open(self, path: str, remember: bool = False) -> int:
        """Object ``path`` opened for reading: in one call that refuses a link anywhere
        on its way (Linux 5.6: ``openat2``); where that fails, through its directory's
        checked real path, or, while that is not known, under the root with the open
        file's real path vetted; a final link resolved and checked (``O_NOFOLLOW`` refuses
        to open one). ``remember``: its directory is known from then on."""
        _check_relative(path)
        if _OPEN_NO_LINKS is not None and not self.follow_links:
            fd = self._no_links(path)
            if fd >= 0:
                parent = path.rpartition("/")[0] if remember else ""
                if parent and parent not in self._dirs:
                    self._remember(parent, f"{self._real_root}/{parent}")
                return fd
            if -fd in (errno.ENOENT, errno.ENOTDIR):  # missing, and no link before that
                raise OSError(-fd, os.strerror(-fd), os.fsdecode(self._root_prefix) + path)
        full, vet = None if self.follow_links else self._known(path), False
        if full is None and (self.follow_links or not _HAS_FD_PATHS):
            full = self._where(path)
        elif full is None:
            full = self._next_dir(path)
            if full is None:
                full, vet = f"{self._real_root}/{path}", True
        try:
            fd = os.open(full, _OPEN | self._flags)
        except OSError as err:
            if vet and err.errno in (errno.ENOENT, errno.ENOTDIR):
                self._dir(path.rpartition("/")[0])  # a link out of the root: refused, not
                raise  # missing (as when the directory is checked before the open)
            if err.errno != errno.ELOOP or self.follow_links:
                raise
            return os.open(self._through_link(path, full), _OPEN)
        if vet:
            try:
                self._vet(path, fd)
            except BaseException:
                os.close(fd)
                raise
        return fd

    def _no_links(self, path: str, path_only: bool = False) -> int:
        """``path`` opened through the root's real path in one call that fails on any link
        (``path_only``: ``O_PATH``, to ``fstat`` it or know it is there): opened, it is
        inside the root. The descriptor, or ``-errno``: ``ELOOP`` for a link on the way
        (it may stay inside: check it as before), ``ENOENT`` when a part is missing (no
        link lies before it); ``ENOSYS`` when ``openat2`` is unusable here (not tried
        again) or the path holds a NUL byte (:func:`os.open` refuses it)."""
        global _OPEN_NO_LINKS
        opener = _OPEN_NO_LINKS
        full = self._root_prefix + path.encode(*_FS_CODEC)
        if opener is None or b"\0" in full:
            return -errno.ENOSYS
        fd = opener(full, path_only)
        if -fd in _NO_OPENAT2:
            _OPEN_NO_LINKS = None
        return fd

    def _open_read(self, path: str, option: RangeOption, wait: bool,
                   into: list[memoryview] | None = None, stat: bool = True,
                   ) -> tuple[memoryview, os.stat_result | None] | None:
        """:func:`_read_open` of object ``path``, opened by :meth:`_open`."""
        fd = self._open(path)
        try:
            return _read_open(fd, option, wait, into, self.buffers.take, stat)
        finally:
            os.close(fd)

    def mapped_span(self, parts: list[tuple[str, bytes]],
                    step: int) -> tuple[memoryview, int] | None:
        """:func:`.mapped.span` of these objects, each opened by :meth:`_open`, its
        directory remembered (checking the span again then costs one ``stat`` each)."""
        self.ready()
        key = (self._real_root, self.follow_links, tuple(path for path, _ in parts))
        return mapped.span(key, parts, step, self._open_remembered, self._identity,
                           None if self.follow_links else self._real_root)

    def _open_remembered(self, path: str) -> int:
        return self._open(path, True)

    def _identity(self, path: str) -> tuple[int, ...] | None:
        """:func:`.mapped.identity` of object ``path`` through its directory's checked
        real path (one ``stat``), or while that is not known in one call that refuses
        links on its way (``openat2``, an ``fstat``; where a link lies on it, one ``lstat``
        per directory not yet known): a span another store of this process mapped is then
        served again, not mapped anew. ``None`` when the object is not there, or is
        refused."""
        try:
            full = None if self.follow_links else self._known(path)
            if full is None and not self.follow_links:  # one call, not one per directory
                fd = self._no_links(path, True)
                if fd >= 0:
                    try:
                        info = os.fstat(fd)
                    finally:
                        os.close(fd)
                    parent = path.rpartition("/")[0]
                    if parent:
                        self._remember(parent, f"{self._real_root}/{parent}")
                    return mapped.identity(info)
            return mapped.identity(os.stat(full or self._where(path),
                                           follow_symlinks=self.follow_links))
        except (OSError, OutsideRootError):
            return None

    def answered_whole(self, err: Exception) -> bool:
        return False

    def now(self, path: str, option: RangeOption,
            with_stat: bool) -> tuple[BytesLike, ObjectStat | int] | None:
        """The object's bytes (or the part ``option`` names) and its stat (or size) if the
        page cache holds them all, else ``None``: never waits."""
        got = self._open_read(path, option, False, None, with_stat)
        if got is None:
            return None
        data, info = got
        if info is None:  # read to its end: its size is what was read
            return data, len(data)
        return data, (local_stat(info) if with_stat else info.st_size)

    def documents_now(self, paths: list[str]) -> list[bytes | None]:
        """The small documents at ``paths`` (each under ``GUESS`` bytes) read whole from the
        page cache in one pass, ``None`` for one that is not there, up to the first that is
        not so simple (larger, a link on its way, not all in the page cache, unreadable, a
        path not below the root): the rest are read by :meth:`now`, which words any error.
        Cost: an ``openat2``, one ``preadv`` into one reused buffer and a ``close`` a
        document (no ``fstat``: one that stops short of a page boundary met its end);
        nothing where ``openat2`` or ``RWF_NOWAIT`` is missing, or links are followed."""
        opener = _OPEN_NO_LINKS
        if opener is None or _NOWAIT is None or self.follow_links or not paths:
            return []
        self.ready()
        buffer = memoryview(bytearray(GUESS))
        into, prefix = [buffer], self._root_prefix
        got: list[bytes | None] = []
        for path in paths:
            try:
                _check_relative(path)
            except ValueError:  # refused by :meth:`now`, naming it
                break
            full = prefix + path.encode(*_FS_CODEC)
            if b"\0" in full:
                break
            fd = opener(full, False)
            if fd < 0:
                if -fd not in (errno.ENOENT, errno.ENOTDIR):
                    break
                got.append(None)  # missing, and no link before that
                continue
            try:
                size = os.preadv(fd, into, 0, _NOWAIT)
            except OSError:
                break
            finally:
                os.close(fd)
            if size % mapped.PAGE == 0:  # perhaps larger (or not a regular file's end)
                break
            got.append(bytes(buffer[:size]))
        return got

    def read_cached(self, reads: list[tuple[str, list[memoryview]]]
                    ) -> list[BytesLike | None] | None:
        """Whole objects read in one pass from the page cache, each straight into its
        buffers (in turn) when its size is their total (``None`` in its place), else as
        its bytes. ``None`` when any object is not all in the page cache, missing or
        unreadable (the buffers may then be partly written)."""
        self.ready()
        got: list[BytesLike | None] = []
        try:
            for path, into in reads:
                data = self.cached_into(path, into)
                if data is None:
                    return None
                got.append(None if data is into[0] else data)
        except Exception:  # read again one by one, where the error is reported
            return None
        return got

    def cached_into(self, path: str, into: list[memoryview]) -> BytesLike | None:
        """The whole object if the page cache holds it all, else ``None`` (no wait): read
        straight into ``into`` in turn when its size is their total (``into[0]`` is then
        returned), else as its own bytes."""
        got = self._open_read(path, None, False, into)
        return None if got is None else got[0]

    async def _read_info(self, path: str, option: RangeOption) -> tuple[BytesLike, Any]:
        got = self._open_read(path, option, False)  # page-cached
        if got is None:  # not all in the page cache: wait for the disk on a thread
            loop = asyncio.get_running_loop()
            got = await loop.run_in_executor(None, self._open_read, path, option, True)
        return cast("tuple[BytesLike, Any]", got)  # a read that waits gives the bytes

    async def read(self, path: str, option: RangeOption) -> tuple[BytesLike, int]:
        data, info = await self._read_info(path, option)
        return data, info.st_size

    async def read_stat(self, path: str, option: RangeOption) -> tuple[BytesLike, ObjectStat]:
        data, info = await self._read_info(path, option)
        return data, local_stat(info)

    async def stat(self, path: str) -> ObjectStat:
        _check_relative(path)
        full = self._where(path)
        info = os.stat(full, follow_symlinks=self.follow_links)
        if stat.S_ISLNK(info.st_mode):
            info = os.stat(self._through_link(path, full))
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        return local_stat(info)

    async def list(self, prefix: str) -> tuple[list[str], list[str]]:
        if prefix:
            _check_relative(prefix)
        directory = self._dir(prefix)
        return await asyncio.get_running_loop().run_in_executor(None, _scan, directory)


def local_stat(info: os.stat_result) -> ObjectStat:
    return ObjectStat(info.st_size, None, datetime.fromtimestamp(info.st_mtime, UTC))


def _scan(directory: str) -> tuple[list[str], list[str]]:
    """Sorted ``(directories, files)`` in ``directory`` (links classified by their target;
    broken links and other kinds of entry are left out)."""
    dirs, files = [], []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if entry.is_dir():
                        dirs.append(entry.name)
                    elif entry.is_file():
                        files.append(entry.name)
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        pass
    return sorted(dirs), sorted(files)
