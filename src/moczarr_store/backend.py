"""Object access below one hive root: the ``Backend`` facade over two small readers.

- :class:`LocalReader` reads a local hive (a path or ``file://`` URL) with plain file I/O
  and refuses objects whose real path leaves the hive root (unless links are allowed).
- :class:`ObstoreReader` reads every other URL, or an obstore store instance, with obstore.
- :class:`Backend` is what the package uses: it normalises byte ranges, counts requests,
  shares one process-wide cap on in-flight requests, pickles as its recipe, and makes
  every failure an error of this package whose message names the object and carries no
  credentials (:func:`redact`).

:class:`HiveIO` states what reading a hive needs from I/O.
"""

from __future__ import annotations

import asyncio
import errno
import numbers
import os
import re
import stat
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np
import obstore
from obstore.exceptions import NotFoundError
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from . import mapped
from .buffers import BufferPool, uninitialised
from .diagnostics import logger
from .errors import HiveReadError, MocHiveError, ObjectReadError, OptionError, OutsideRootError
from .hive.paths import short
from .slots import request_slots
from .storage import check_options, obstore_options, unknown_keyword

BytesLike = bytes | bytearray | memoryview | obstore.Bytes
ByteRequest = RangeByteRequest | OffsetByteRequest | SuffixByteRequest
RangeOption = tuple[int, int] | dict[str, int] | None  # obstore's form of a byte range
DEFAULT_MAX_CONCURRENCY = 64
DIR_CACHE = 65_536  # real paths of local directories a reader remembers
_STREAM_PIECE = 64 << 10  # bytes a streamed body is read in (a range of a whole GET)
_RANGE_REFUSED = re.compile(r"\b416\b|range (was invalid|not satisfiable)|InvalidRange", re.I)
# obstore refusing a 200 (the whole object) to a ranged GET: HTTPStore, and S3/GCS/Azure
_WHOLE_ANSWER = re.compile(r"range request not supported|non-partial response when range "
                           r"requested", re.I)
_MISSING = (FileNotFoundError, NotFoundError, IsADirectoryError, NotADirectoryError)


@dataclass(frozen=True)
class ObjectStat:
    """An object's size and version markers, as the storage reports them (a local file has
    no ETag; its ``mtime`` is the file's)."""

    size: int
    etag: str | None = None
    mtime: datetime | None = None


class HiveIO(Protocol):
    """What reading a hive needs from I/O; paths are relative to the hive root."""

    async def get(self, path: str, byte_range: ByteRequest | None = None) -> BytesLike | None:
        """The object's bytes (or a zarr byte range of them); ``None`` if it is absent."""
        ...

    async def size(self, path: str) -> int | None:
        """The object's size in bytes; ``None`` if it is absent."""
        ...

    async def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """``(child prefixes, objects)`` directly below ``prefix``, as names."""
        ...


# -- credentials never leave in a message -----------------------------------------------------

_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]*")  # what redact() finds
_URL_BODY_RE = re.compile(r"[^\s\"'<>`]*")
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_PARAM_RE = re.compile(r"([^&;=#]*)(=?)[^&;#]*")


def _redact_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    cut = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    tail, hash_, fragment = tail.partition("#")  # a fragment may hold a token, query or not
    path, question, query = tail.partition("?")
    if question:
        query = _PARAM_RE.sub(lambda m: m[1] + "=***" if m[2] else ("***" if m[1] else ""), query)
        tail = f"{path}?{query}"
    return f"{scheme}://{authority}{tail}{hash_}{'***' if fragment else ''}"


def redact(text: str) -> str:
    """``text`` with every URL's user-info, query values and fragment replaced by ``***``.
    Cost: linear in ``len(text)``.

    ``s3://key:secret@bucket/hive?X-Amz-Signature=abc`` becomes
    ``s3://***@bucket/hive?X-Amz-Signature=***``; text outside URLs is unchanged.
    """
    # The matches of _URL_RE, found in linear time: the regex itself retries every letter
    # of a long run of scheme characters (quadratic); each "://" is looked for once, and
    # its scheme is the run before it from its first letter (runs end at ":").
    out, done, at = [], 0, text.find("://")
    while at >= 0:
        start = at
        while start > done and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < at and not ("A" <= text[start] <= "Z" or "a" <= text[start] <= "z"):
            start += 1
        if start == at:  # no scheme: not a URL
            at = text.find("://", at + 3)
            continue
        end = _URL_BODY_RE.match(text, at + 3).end()  # type: ignore[union-attr]
        out += [text[done:start], _redact_url(text[start:end])]
        done = end
        at = text.find("://", end)
    return "".join(out) + text[done:]


_SECRET_KEY_RE = re.compile(r"secret|token|password|passwd|credential|signature|sas|auth|key",
                            re.IGNORECASE)
_PLAIN = frozenset({"true", "false", "none", "null"})  # flags, not secrets


def _secret_values(options: Any, secret: bool = False) -> set[str]:
    """String values of storage options under a key that names a secret (at any depth)."""
    if isinstance(options, dict):
        return set().union(*(_secret_values(v, secret or bool(_SECRET_KEY_RE.search(str(k))))
                             for k, v in options.items()))
    if isinstance(options, (list, tuple)):
        return set().union(*(_secret_values(v, secret) for v in options))
    plain = not isinstance(options, str) or len(options) < 4 or options.lower() in _PLAIN
    return set() if not secret or plain else {options}


def scrub(text: str, options: dict[str, Any] | None = None) -> str:
    """:func:`redact`, and every secret-keyed storage option value replaced by ``***``."""
    text = redact(text)
    for value in sorted(_secret_values(options or {}), key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def _first_paragraph(err: BaseException) -> str:
    """An exception's message without obstore's multi-line ``Debug source`` dump."""
    text = str(err).split("\n\nDebug source:", 1)[0].strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


# -- requests and byte ranges ----------------------------------------------------------------


@dataclass
class RequestStats:
    """Backend requests by kind, and the most seen in flight at once."""

    counts: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def reset(self) -> None:
        self.counts.clear()
        self.max_in_flight = self.in_flight


def normalize_url(url: str | os.PathLike) -> str:
    """A canonical URL: local paths become absolute ``file://`` URLs, trailing slashes go
    (``file:///`` stays the file system's root). A URL with nothing to name, or a NUL, is
    refused."""
    text = os.fspath(url)
    if not isinstance(text, str):
        raise OptionError(f"expected a URL or a path as text, got {type(text).__name__}")
    if "\0" in text:  # not shown: a URL may hold credentials
        raise OptionError("the URL or path holds a NUL character")
    if "://" not in text:
        return "file://" + os.path.abspath(os.path.expanduser(text))
    scheme, _, path = text.partition("://")
    if not path:
        raise OptionError(f"{text!r} names no hive: the URL has nothing after '://'")
    if scheme == "file":
        return "file://" + (path.rstrip("/") or "/")
    return text.rstrip("/")


def flag(name: str, value: object) -> bool:
    """``value`` if it is a bool (numpy's too), else an :class:`OptionError` naming the
    option: ``bool("no")`` is ``True``."""
    if not isinstance(value, bool | np.bool_):
        raise OptionError(f"{name}={short(value)}: expected True or False")
    return bool(value)


def _count(name: str, value: object) -> int:
    """``value`` if it is an int >= 1 (not a bool), else an :class:`OptionError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError(f"{name}={short(value)}: expected an int >= 1")
    count = int(value)
    if count < 1:
        raise OptionError(f"{name}={count}: expected an int >= 1")
    return count


def slice_bytes(data: BytesLike, byte_range: ByteRequest | None) -> BytesLike:
    """``data`` cut to a zarr ``ByteRequest`` (end-exclusive; suffix clamps at 0)."""
    if byte_range is None:
        return data
    view = memoryview(data)
    if isinstance(byte_range, RangeByteRequest):
        return view[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return view[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return view[max(0, len(data) - byte_range.suffix) :]
    raise TypeError(f"Unexpected byte_range, got {byte_range}.")


_USUAL = 2**62


def _unusual(byte_range: ByteRequest) -> bool:
    """Bounds an object store cannot take as they are: negative, or beyond 2**62."""
    if isinstance(byte_range, RangeByteRequest):
        return not (0 <= byte_range.start < _USUAL and 0 <= byte_range.end < _USUAL)
    if isinstance(byte_range, OffsetByteRequest):
        return not 0 <= byte_range.offset < _USUAL
    return not 0 <= byte_range.suffix < _USUAL


def _range_option(byte_range: ByteRequest | None) -> RangeOption:
    """obstore's form of a (usual, non-empty) zarr byte range."""
    if byte_range is None:
        return None
    if isinstance(byte_range, RangeByteRequest):
        return (byte_range.start, byte_range.end)
    if isinstance(byte_range, OffsetByteRequest):
        return {"offset": byte_range.offset}
    return {"suffix": byte_range.suffix}


def _span(option: RangeOption, size: int) -> tuple[int, int]:
    """The ``[start, end)`` an obstore-style range option names in a ``size``-byte object."""
    if isinstance(option, tuple):
        start = min(option[0], size)
        return start, max(start, min(option[1], size))
    if isinstance(option, dict) and "offset" in option:
        return min(option["offset"], size), size
    if isinstance(option, dict):
        return max(0, size - option["suffix"]), size
    return 0, size


# -- local files --------------------------------------------------------------------------

_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: fail instead of waiting on the disk
_NO_NOWAIT = (errno.EAGAIN, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# an open never waits on a FIFO or becomes a terminal's controlling one
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_FD_PATHS = "/proc/self/fd"  # Linux: the kernel's real path of every open descriptor
_HAS_FD_PATHS = os.path.isdir(_FD_PATHS)


def _read_open(fd: int, option: RangeOption, wait: bool = True,
               into: list[memoryview] | None = None,
               take: Callable[[int], memoryview] = uninitialised,
               ) -> tuple[memoryview, os.stat_result] | None:
    """An open local object's bytes (or the part ``option`` names) and its ``fstat``; a
    file that shrank while read gives the bytes it still had (callers check sizes).
    ``wait=False`` returns ``None`` unless the page cache holds them all, so the event loop
    never waits on a disk. ``into``: when the object's size is their total, it is read
    into these buffers in turn and the first is returned (``None`` unless one read fills
    them); else it is read whole as usual. Memory: one uninitialised buffer of the span
    from ``take`` (none when read ``into``)."""
    if not wait and _NOWAIT is None:
        return None
    info = os.fstat(fd)
    size = info.st_size
    if into is not None and size == sum(len(buffer) for buffer in into):
        got = _pread(fd, into, 0, wait)
        return None if got != size else (into[0], info)
    start, end = _span(option, size)
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
    (``preadv`` with ``RWF_NOWAIT``, ~7 us), else on a worker thread.

    Unless ``follow_links``, an object or directory whose real path leaves the root is
    refused with :class:`OutsideRootError`. The real paths of directories found inside are
    remembered (up to ``DIR_CACHE``). An object in a directory not yet known is opened
    under the root and its real path, as the kernel resolved it (``/proc/self/fd``), is
    checked before a byte is read: one ``readlink`` per new directory instead of one
    ``lstat`` per path component (without ``/proc``: the ``lstat`` per component, before the
    open). Objects are opened with ``O_NOFOLLOW`` (a final link is resolved and checked
    apart). A tree changed while it is read may be seen as resolved before.
    """

    options: dict[str, Any] = {}

    def __init__(self, root: str, follow_links: bool = False) -> None:
        self.buffers = BufferPool()  # what objects are read into
        self.root = root.rstrip("/") or "/"
        self.name = "file://" + root
        self.follow_links = follow_links
        self._real_root = os.path.realpath(self.root)
        self._flags = 0 if follow_links else _NOFOLLOW
        self._dirs: dict[str, str] = {}  # hive-relative directory -> its real path, inside
        self._ready = False

    def ready(self) -> None:
        if not self._ready:
            if not os.path.isdir(self.root):
                from .hints import missing_root

                raise missing_root(self.root)
            self._ready = True

    def _inside(self, real: str) -> bool:
        root = self._real_root
        return real == root or real.startswith(root.rstrip("/") + "/")

    def _remember(self, rel: str, real: str) -> None:
        if len(self._dirs) >= DIR_CACHE:
            self._dirs.clear()
        self._dirs[rel] = real

    def _dir(self, rel: str) -> str:
        """The real path of directory ``rel`` ('' is the root), checked: links resolved one
        component at a time (one ``lstat`` per directory not yet known)."""
        if self.follow_links:
            return f"{self.root}/{rel}" if rel else self.root
        if not rel:
            return self._real_root
        real = self._dirs.get(rel)
        if real is None:
            parent, _, name = rel.rpartition("/")
            full = f"{self._dir(parent)}/{name}"
            real = os.path.realpath(full) if os.path.islink(full) else full
            if not self._inside(real):
                raise OutsideRootError(f"{rel}: a link leads out of the hive root (refused; "
                                       "pass follow_links=True to read through links)")
            self._remember(rel, real)
        return real

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
            self._remember(parent, real.rpartition("/")[0])

    def _through_link(self, path: str, full: str) -> str:
        """The real path of an object that is itself a link, if it stays inside the root."""
        real = os.path.realpath(full)
        if not self._inside(real):
            raise OutsideRootError(f"{path}: the object is a link out of the hive root "
                                   "(refused; pass follow_links=True to read through links)")
        return real

    def _open(self, path: str) -> int:
        """Object ``path`` opened for reading: through its directory's checked real path,
        or, while that is not known, under the root with the open file's real path vetted;
        a final link resolved and checked (``O_NOFOLLOW`` refuses to open one)."""
        _check_relative(path)
        full, vet = None if self.follow_links else self._known(path), False
        if full is None and (self.follow_links or not _HAS_FD_PATHS):
            full = self._where(path)
        elif full is None:
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

    def _open_read(self, path: str, option: RangeOption, wait: bool,
                   into: list[memoryview] | None = None):
        """:func:`_read_open` of object ``path``, opened by :meth:`_open`."""
        fd = self._open(path)
        try:
            return _read_open(fd, option, wait, into, self.buffers.take)
        finally:
            os.close(fd)

    def mapped_span(self, parts: list[tuple[str, bytes]],
                    step: int) -> tuple[memoryview, int] | None:
        """:func:`.mapped.span` of these objects, each opened by :meth:`_open`."""
        key = (self._real_root, self.follow_links, tuple(path for path, _ in parts))
        return mapped.span(key, parts, step, self._open, self._identity)

    def _identity(self, path: str) -> tuple[int, ...] | None:
        """:func:`.mapped.identity` of object ``path`` through its directory's checked
        real path; ``None`` while that is not known, or the object is not there."""
        full = f"{self.root}/{path}" if self.follow_links else self._known(path)
        try:
            return None if full is None else mapped.identity(
                os.stat(full, follow_symlinks=self.follow_links))
        except OSError:
            return None

    def now(self, path: str, option: RangeOption) -> tuple[BytesLike, os.stat_result] | None:
        """The object's bytes (or the part ``option`` names) and its ``fstat`` if the page
        cache holds them all, else ``None``: never waits (~10 us)."""
        return self._open_read(path, option, False)

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
        return got

    async def read(self, path: str, option: RangeOption) -> tuple[BytesLike, int]:
        data, info = await self._read_info(path, option)
        return data, info.st_size

    async def read_stat(self, path: str, option: RangeOption) -> tuple[BytesLike, ObjectStat]:
        data, info = await self._read_info(path, option)
        return data, _local_stat(info)

    async def stat(self, path: str) -> ObjectStat:
        _check_relative(path)
        full = self._where(path)
        info = os.stat(full, follow_symlinks=self.follow_links)
        if stat.S_ISLNK(info.st_mode):
            info = os.stat(self._through_link(path, full))
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        return _local_stat(info)

    async def list(self, prefix: str) -> tuple[list[str], list[str]]:
        if prefix:
            _check_relative(prefix)
        directory = self._dir(prefix)
        return await asyncio.get_running_loop().run_in_executor(None, _scan, directory)


def _local_stat(info: os.stat_result) -> ObjectStat:
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


# -- obstore ---------------------------------------------------------------------------------


class ObstoreReader:
    """Any other URL (``s3://``, ``gs://``, ``http(s)://``, a ``file://`` URL with options),
    or an obstore store instance, read with obstore.

    ``whole``: the server ignores ``Range`` (``python -m http.server``, or a proxy that
    drops the header, answers a ranged GET with ``200`` and the whole object, which obstore
    refuses); ranges are then read from a GET of the whole object, streamed only up to the
    range's end."""

    def __init__(self, url: str | None, options: dict[str, Any], instance: Any = None) -> None:
        self.url, self.options, self._store = url, options, instance
        self.name = redact(url if url is not None else repr(instance))
        self.whole = False
        self._lister: Any = None

    def ready(self) -> None:
        """Build the store; a missing local root raises here, not as a missing object."""
        if self._store is not None:
            return
        try:
            _ = self.store
        except FileNotFoundError:
            raise
        except Exception as err:
            failure = HiveReadError(f"{self.name}: cannot open the store with these options "
                                    f"({scrub(_first_paragraph(err), self.options)})")
        else:
            return
        raise failure

    @property
    def store(self) -> Any:
        if self._store is None:
            assert self.url is not None
            if self.url.startswith("file://"):
                path = self.url[len("file://") :]
                if not os.path.isdir(path):
                    from .hints import missing_root

                    raise missing_root(path)
                self._store = obstore.store.LocalStore(path, **self.options)
            else:
                self._store = obstore.store.from_url(self.url, **self.options)
        return self._store

    async def read(self, path: str, option: RangeOption) -> tuple[BytesLike, int]:
        data, meta = await self._get(path, option)
        return data, meta["size"]

    async def read_stat(self, path: str, option: RangeOption) -> tuple[BytesLike, ObjectStat]:
        data, meta = await self._get(path, option)
        return data, _obstore_stat(meta)

    async def _get(self, path: str, option: RangeOption) -> tuple[BytesLike, Any]:
        """GET and read the body: the body is part of the request (the caller holds the
        concurrency cap across both). A range of a server that ignores ``Range``: a GET of
        the whole object, read up to the range's end (:attr:`whole`)."""
        whole = option is not None and self.whole
        options: Any = None if option is None or whole else {"range": option}
        result = await obstore.get_async(self.store, path, options=options)
        try:
            if whole:
                return await self._range_of_whole(result, path, option), result.meta
            return await result.bytes_async(), result.meta
        except (*_MISSING, ObjectReadError):
            raise
        except Exception as err:  # obstore's body errors do not name the object
            failure = ObjectReadError(
                f"reading {path} from {self.name}: the response body failed after obstore's "
                f"retries ({scrub(_first_paragraph(err), self.options)})"
            )
        raise failure

    async def _range_of_whole(self, result: Any, path: str, option: RangeOption) -> bytes:
        """The bytes ``option`` names from the body of a GET of the whole object, read
        only up to their end (a suffix or an offset reads the body to its end)."""
        size = result.meta["size"]
        start, end = _span(option, size)
        kept, at = [], 0
        async for piece in result.stream(min_chunk_size=_STREAM_PIECE):
            if at + len(piece) > start:
                kept.append(memoryview(piece)[max(0, start - at) : end - at])
            at += len(piece)
            if at >= end:
                break
        data = b"".join(kept)
        if len(data) != end - start:
            raise ObjectReadError(f"reading {path} from {self.name}: the response body ended "
                                  f"after {at:,} of its {size:,} bytes")
        return data

    async def stat(self, path: str) -> ObjectStat:
        return _obstore_stat(await obstore.head_async(self.store, path))

    @property
    def lister(self) -> Any:
        """The store listings go to: for an ``http(s)://`` URL, its twin without retries
        (a static server refuses WebDAV's ``PROPFIND``, ``python -m http.server`` with a
        ``501`` that obstore would retry for seconds; the store then reads without one)."""
        if self._lister is None:
            self._lister = self.store
            if self.url is not None and self.url.startswith(("http://", "https://")):
                retry = {**(self.options.get("retry_config") or {}), "max_retries": 0}
                self._lister = obstore.store.from_url(
                    self.url, **{**self.options, "retry_config": retry})
        return self._lister

    async def list(self, prefix: str) -> tuple[list[str], list[str]]:
        listing = await obstore.list_with_delimiter_async(self.lister, prefix or None)
        cut = len(prefix) + 1 if prefix else 0
        dirs = [p.rstrip("/")[cut:] for p in listing["common_prefixes"]]
        return dirs, [meta["path"][cut:] for meta in listing["objects"]]


def _obstore_stat(meta: Any) -> ObjectStat:
    """An object's stat from obstore's metadata (of a GET or a HEAD)."""
    return ObjectStat(meta["size"], meta.get("e_tag"), meta.get("last_modified"))


# -- the facade -------------------------------------------------------------------------------


class Backend:
    """Reads objects below one root; every path given is relative to that root.

    Implements :class:`HiveIO`. ``options`` are storage options (fsspec or obstore
    spellings, :mod:`.storage`), checked now by building the obstore store (no request);
    ``keywords`` are the caller's own, named when a key is neither. ``follow_links``
    (local hives) reads through links that leave the root instead of refusing them.
    """

    def __init__(
        self,
        source: str | os.PathLike | Any,
        options: dict[str, Any] | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        follow_links: bool = False,
        keywords: tuple[str, ...] = (),
    ) -> None:
        self.options = dict(options or {})
        self.max_concurrency = _count("max_concurrency", max_concurrency)
        self.follow_links = flag("follow_links", follow_links)
        built = None
        if isinstance(source, (str, os.PathLike)):
            self.url: str | None = normalize_url(source)
            self._instance = None
            self.options = obstore_options(self.url, self.options)
            built = check_options(self.url, self.options, keywords)
        elif type(source).__module__.startswith("obstore"):
            if self.options:
                raise unknown_keyword(None, next(iter(self.options)), keywords)
            self.url, self._instance = None, source
        else:
            raise OptionError(f"expected a URL, a path or an obstore store, got {type(source)!r}")
        local = self.url is not None and self.url.startswith("file://") and not self.options
        self._local_root = self.url[len("file://") :] if local and self.url else None
        self._reader: LocalReader | ObstoreReader = (
            LocalReader(self._local_root, self.follow_links) if self._local_root is not None
            else ObstoreReader(self.url, self.options,
                               built if self._instance is None else self._instance)
        )
        self.stats = RequestStats()
        self.progress: Callable[[int], object] | None = None  # told of each request done
        self.maps_spans = True  # local spans may be served through memory maps (mapped.py)

    def __getstate__(self) -> dict:
        return {
            "url": self.url,
            "options": self.options,
            "instance": self._instance,
            "max_concurrency": self.max_concurrency,
            "follow_links": self.follow_links,
        }

    def __setstate__(self, state: dict) -> None:
        source = state["instance"] if state["instance"] is not None else state["url"]
        type(self).__init__(self, source, state["options"], state["max_concurrency"],
                            state.get("follow_links", False))

    def recipe(self) -> tuple:
        """What identifies this backend: equal recipes read the same objects."""
        return (self.url, tuple(sorted((k, repr(v)) for k, v in self.options.items())),
                self._instance, self.max_concurrency, self.follow_links)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Backend) and self.recipe() == other.recipe()

    def __repr__(self) -> str:
        return self._reader.name

    @property
    def ignores_ranges(self) -> bool:
        """Whether the server has answered a ranged GET with the whole object (ranges are
        then read from whole GETs)."""
        return isinstance(self._reader, ObstoreReader) and self._reader.whole

    def _read_ranges_whole(self) -> None:
        """From now on, read ranges from whole GETs (logged once)."""
        reader = self._reader
        if isinstance(reader, ObstoreReader) and not reader.whole:
            reader.whole = True
            logger.warning("%s answers a ranged GET with the whole object (it ignores HTTP "
                           "Range requests): a range is now read from a GET of the whole "
                           "object, up to the range's end", self)

    @property
    def store(self) -> Any:
        """The obstore store (built on first use); ``None`` for a local hive read with file
        I/O."""
        return self._reader.store if isinstance(self._reader, ObstoreReader) else None

    async def _call(self, kind: str, coro_fn: Callable[..., Awaitable], *args, **kwargs):
        """One counted request under the process-wide concurrency cap (:mod:`.slots`: a
        freed slot starts the next request at once)."""
        self.stats.counts[kind] += 1

        async def in_flight() -> Any:
            stats = self.stats
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            try:
                return await coro_fn(*args, **kwargs)
            finally:
                stats.in_flight -= 1
                if self.progress is not None:
                    self.progress(1)

        return await request_slots(self.max_concurrency).run(in_flight)

    def _tally(self, kind: str, n: int = 1) -> None:
        """``n`` requests of ``kind`` made outside :meth:`_call`: counted and reported."""
        self.stats.counts[kind] += n
        if self.progress is not None:
            self.progress(n)

    def _now(self, kind: str, path: str, option: RangeOption, with_stat: bool) -> Any:
        """A local read the page cache can serve whole, done inline and counted as one
        request, without the concurrency cap (it never waits, so it is never in flight
        alongside another); ``None``: not local, or not all in the page cache. Saves the
        cap's semaphore and a coroutine per read (~5 us)."""
        reader = self._reader
        if not isinstance(reader, LocalReader):
            return None
        try:
            got = reader.now(path, option)
        except Exception:  # a missing object, a refused path: the request was made
            self._tally(kind)
            raise
        if got is None:
            return None
        self._tally(kind)
        data, info = got
        return data, (_local_stat(info) if with_stat else info.st_size)

    @property
    def buffers(self) -> BufferPool | None:
        """The pool local objects are read into (``None``: the hive is not local)."""
        reader = self._reader
        return reader.buffers if isinstance(reader, LocalReader) else None

    def read_cached_into(
        self, reads: list[tuple[str, list[memoryview]]]
    ) -> list[BytesLike | None] | None:
        """Whole local objects read in one pass from the page cache, each straight into its
        buffers (in turn) when its size is their total (``None`` in its place), else as its
        bytes; one GET counted each, no await. ``None`` when the hive is not local or any
        object is not all in the page cache, missing or unreadable (the buffers may then
        be partly written): read them as usual then (their errors name them). Cost: the
        file reads alone, without a task or the concurrency cap per object, and no copy."""
        reader = self._reader
        if not isinstance(reader, LocalReader):
            return None
        reader.ready()
        got: list[BytesLike | None] = []
        try:
            for path, into in reads:
                data = reader.cached_into(path, into)
                if data is None:
                    return None
                got.append(None if data is into[0] else data)
        except Exception:  # read again one by one, where the error is reported
            return None
        self._tally("get", len(reads))
        return got

    def mapped_span(self, parts: list[tuple[str, bytes]], step: int) -> memoryview | None:
        """:func:`.mapped.span` of local objects: ``None`` when the hive is not local, the
        store is an unpickled copy (``maps_spans`` off) or the span cannot be mapped;
        objects mapped now are counted as one GET each, a span kept mapped as none (it is
        read with no request)."""
        reader = self._reader
        if not isinstance(reader, LocalReader) or not self.maps_spans:
            return None
        reader.ready()
        found = reader.mapped_span(parts, step)
        if found is None:
            return None
        if found[1]:
            self._tally("get", found[1])
        return found[0]

    def _failure(self, err: Exception, path: str, what: str = "reading") -> Exception:
        """An error of this package for a failed request: the reader's own errors as they
        are, anything else as an :class:`ObjectReadError` naming the object, redacted."""
        if isinstance(err, MocHiveError):
            return err
        if type(err) is ValueError:  # a path that is not below the root
            return ValueError(scrub(str(err), self._reader.options))
        from .hints import credentials

        detail = scrub(_first_paragraph(err), self._reader.options)
        detail = credentials(detail) or detail
        return ObjectReadError(f"{what} {path} from {self}: {detail}")

    async def get(self, path: str, byte_range: ByteRequest | None = None) -> BytesLike | None:
        """The object's bytes (or the requested range), zero-copy; ``None`` if it is absent.

        Ranges follow zarr's slicing semantics: an end past the object clamps, and a
        start at or past its end gives ``b""`` (an empty range, without a request).
        One request (a GET).
        """
        if (isinstance(byte_range, RangeByteRequest) and not _unusual(byte_range)
                and byte_range.end <= byte_range.start):
            return b""
        got = await self.get_sized(path, byte_range)
        return None if got is None else got[0]

    async def get_sized(
        self, path: str, byte_range: ByteRequest | None = None
    ) -> tuple[BytesLike, int] | None:
        """Like :meth:`get`, with the whole object's size, learned from the same request
        (an empty range costs a HEAD instead)."""
        return await self._fetch(path, byte_range, False)

    async def get_stat(
        self, path: str, byte_range: ByteRequest | None = None
    ) -> tuple[BytesLike, ObjectStat] | None:
        """Like :meth:`get_sized`, with the object's :class:`ObjectStat` from the same
        request: the bytes and the stat describe one version of the object."""
        return await self._fetch(path, byte_range, True)

    async def _fetch(self, path: str, byte_range: ByteRequest | None, with_stat: bool) -> Any:
        if byte_range is not None and not isinstance(byte_range, ByteRequest):
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}")
        if byte_range is not None and _unusual(byte_range):
            got = await self._fetch(path, None, with_stat)  # negative or huge: slice in memory
            return None if got is None else (slice_bytes(bytes(got[0]), byte_range), got[1])
        if isinstance(byte_range, RangeByteRequest) and byte_range.end <= byte_range.start:
            stat = await self.stat(path)
            return None if stat is None else (b"", stat if with_stat else stat.size)
        option = _range_option(byte_range)
        self._reader.ready()  # a missing hive root raises here, not as a missing object
        try:
            kind = "get" if option is None or self.ignores_ranges else "get_range"
            got = self._now(kind, path, option, with_stat)
            if got is not None:
                return got
            read = self._reader.read_stat if with_stat else self._reader.read
            return await self._call(kind, read, path, option)
        except _MISSING:
            return None
        except Exception as err:
            whole = (kind == "get_range" and isinstance(self._reader, ObstoreReader)
                     and _WHOLE_ANSWER.search(str(err)) is not None)
            failure = self._failure(err, path)
            refused = _RANGE_REFUSED.search(str(err)) is not None
        if whole:
            self._read_ranges_whole()
            return await self._fetch(path, byte_range, with_stat)  # sent without a range
        if refused and (isinstance(option, tuple) or (isinstance(option, dict)
                                                      and "offset" in option)):
            start = option[0] if isinstance(option, tuple) else option["offset"]
            stat = await self.stat(path)  # obstore refuses a range starting past the end
            if stat is None:
                return None
            if start >= stat.size:
                return b"", stat if with_stat else stat.size
        raise failure

    async def size(self, path: str) -> int | None:
        """The object's size in bytes, or ``None`` when it does not exist (one HEAD)."""
        stat = await self.stat(path)
        return None if stat is None else stat.size

    async def stat(self, path: str) -> ObjectStat | None:
        """The object's size, ETag and modification time, or ``None`` when it does not
        exist (one HEAD)."""
        self._reader.ready()
        try:
            return await self._call("head", self._reader.stat, path)
        except _MISSING:
            return None
        except Exception as err:
            failure = self._failure(err, path, "sizing")
        raise failure

    async def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Child prefix names and object names directly below ``prefix`` (one LIST)."""
        prefix = prefix.strip("/")
        self._reader.ready()
        try:
            return await self._call("list", self._reader.list, prefix)
        except Exception as err:
            failure = self._failure(err, prefix or ".", "listing")
        raise failure
