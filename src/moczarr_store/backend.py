"""Object access through obstore: one backend per hive root.

A :class:`Backend` is built from a recipe (URL or local path plus options, or an
obstore store instance), pickles as that recipe, counts its requests, and shares
one process-wide cap on in-flight requests with every other backend.
"""

from __future__ import annotations

import asyncio
import errno
import os
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import obstore
from obstore.exceptions import NotFoundError
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from .errors import ObjectReadError

BytesLike = bytes | obstore.Bytes
ByteRequest = RangeByteRequest | OffsetByteRequest | SuffixByteRequest
DEFAULT_MAX_CONCURRENCY = 64
_MISSING = (FileNotFoundError, NotFoundError, IsADirectoryError, NotADirectoryError)
_limiters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()



def _limiter(cap: int) -> asyncio.Semaphore:
    """The process-wide semaphore for ``cap`` on the running event loop."""
    per_loop = _limiters.setdefault(asyncio.get_running_loop(), {})
    if cap not in per_loop:
        per_loop[cap] = asyncio.Semaphore(cap)
    return per_loop[cap]


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
    """A canonical URL: local paths become absolute ``file://`` URLs."""
    text = os.fspath(url)
    if "://" not in text:
        return "file://" + os.path.abspath(os.path.expanduser(text))
    return text.rstrip("/") if not text.startswith("file://") else text.rstrip("/") or text


def slice_bytes(data: bytes, byte_range) -> bytes | memoryview:
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



def _unusual(byte_range: ByteRequest) -> bool:
    """Bounds an object store cannot take as they are: negative, or beyond 2**62."""
    if isinstance(byte_range, RangeByteRequest):
        values = (byte_range.start, byte_range.end)
    else:
        values = (byte_range.offset if isinstance(byte_range, OffsetByteRequest)
                  else byte_range.suffix,)
    return any(not 0 <= v < 2**62 for v in values)


_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: fail instead of waiting on the disk
_NO_NOWAIT = (errno.EAGAIN, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)


def _span(option, size: int) -> tuple[int, int]:
    """The ``[start, end)`` an obstore-style range option names in a ``size``-byte object."""
    if isinstance(option, tuple):
        start = min(option[0], size)
        return start, max(start, min(option[1], size))
    if isinstance(option, dict) and "offset" in option:
        return min(option["offset"], size), size
    if isinstance(option, dict):
        return max(0, size - option["suffix"]), size
    return 0, size


def _read(path: str, option, wait: bool = True) -> bytearray | None:
    """A local object's bytes (or the part ``option`` names). ``wait=False`` returns
    ``None`` unless the page cache holds them all, so the event loop never waits on a disk."""
    if not wait and _NOWAIT is None:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        start, end = _span(option, os.fstat(fd).st_size)
        buffer, done = bytearray(end - start), 0
        while done < len(buffer):
            try:
                got = os.preadv(fd, [memoryview(buffer)[done:]], start + done,
                                0 if wait else _NOWAIT)
            except OSError as err:
                if wait or err.errno not in _NO_NOWAIT:
                    raise
                return None
            if got == 0:  # the file shrank under us: what is there
                return buffer[:done]
            done += got
            if not wait and done < len(buffer):
                return None
        return buffer
    finally:
        os.close(fd)


class Backend:
    """Reads objects below one root; every path given is relative to that root."""

    def __init__(
        self,
        source: str | os.PathLike | Any,
        options: dict[str, Any] | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        self.options = dict(options or {})
        self.max_concurrency = int(max_concurrency)
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if isinstance(source, (str, os.PathLike)):
            self.url: str | None = normalize_url(source)
            self._instance = None
        elif type(source).__module__.startswith("obstore"):
            if self.options:
                raise ValueError("options apply to URLs; configure the obstore store instead")
            self.url, self._instance = None, source
        else:
            raise TypeError(f"expected a URL, a path or an obstore store, got {type(source)!r}")
        self._store: Any = self._instance
        local = self.url is not None and self.url.startswith("file://") and not self.options
        self._local_root = self.url[len("file://") :] if local else None
        self.stats = RequestStats()

    def __getstate__(self) -> dict:
        return {
            "url": self.url,
            "options": self.options,
            "instance": self._instance,
            "max_concurrency": self.max_concurrency,
        }

    def __setstate__(self, state: dict) -> None:
        source = state["instance"] if state["instance"] is not None else state["url"]
        self.__init__(source, state["options"], state["max_concurrency"])

    def recipe(self) -> tuple:
        """What identifies this backend: equal recipes read the same objects."""
        return (self.url, tuple(sorted((k, repr(v)) for k, v in self.options.items())),
                self._instance, self.max_concurrency)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Backend) and self.recipe() == other.recipe()

    def __repr__(self) -> str:
        return self.url or repr(self._instance)

    @property
    def store(self) -> Any:
        if self._store is None:
            url = self.url
            if url.startswith("file://"):
                path = url[len("file://") :]
                if not os.path.isdir(path):
                    raise FileNotFoundError(f"hive root {path} does not exist")
                self._store = obstore.store.LocalStore(path, **self.options)
            else:
                self._store = obstore.store.from_url(url, **self.options)
        return self._store

    async def _call(self, kind: str, coro_fn, *args, **kwargs):
        self.stats.counts[kind] += 1
        async with _limiter(self.max_concurrency):
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            try:
                return await coro_fn(*args, **kwargs)
            finally:
                self.stats.in_flight -= 1

    async def get(self, path: str, byte_range: ByteRequest | None = None) -> BytesLike | None:
        """The object's bytes (or the requested range), zero-copy; ``None`` if it is absent.

        Ranges follow zarr's slicing semantics: an end past the object clamps, and a
        start at or past its end gives ``b""``.
        """
        if byte_range is not None and not isinstance(byte_range, ByteRequest):
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}")
        if byte_range is None:
            option = None
        elif _unusual(byte_range):
            data = await self.get(path)  # negative or huge bounds: slice in memory
            return None if data is None else slice_bytes(bytes(data), byte_range)
        elif isinstance(byte_range, RangeByteRequest):
            if byte_range.end <= byte_range.start:
                return b""
            option = (byte_range.start, byte_range.end)
        elif isinstance(byte_range, OffsetByteRequest):
            option = {"offset": byte_range.offset}
        else:
            option = {"suffix": byte_range.suffix}
        kind = "get" if option is None else "get_range"
        options = {} if option is None else {"options": {"range": option}}
        _ = self.store  # a missing hive root raises here, not as a missing object
        try:
            if self._local_root is not None:
                return await self._call(kind, self._read_file, path, option)
            return await self._call(kind, self._fetch, path, options)
        except _MISSING:
            return None
        except Exception:
            if option is None or isinstance(byte_range, SuffixByteRequest):
                raise
            start = option[0] if isinstance(option, tuple) else option["offset"]
            size = await self.size(path)
            if size is None:
                return None
            if start >= size:
                return b""
            raise

    async def _read_file(self, path: str, option) -> bytearray:
        """A local object read with plain file I/O: inline when the page cache holds it,
        else on a worker thread (obstore's LocalStore costs ~0.3 ms per small GET)."""
        if path.startswith("/") or not set(path.split("/")).isdisjoint(("", ".", "..")):
            raise ValueError(f"{path!r} is not a path below the hive root")
        full = os.path.join(self._local_root, path)
        data = _read(full, option, wait=False)  # page-cached: read inline (~7 us)
        if data is None:
            data = await asyncio.get_running_loop().run_in_executor(None, _read, full, option)
        return data

    async def _fetch(self, path: str, options: dict) -> BytesLike:
        """GET and read the body: both under the cap (a body still streaming is a
        request in flight)."""
        result = await obstore.get_async(self.store, path, **options)
        try:
            return await result.bytes_async()
        except _MISSING:
            raise
        except Exception as err:  # obstore's body errors do not name the object
            raise ObjectReadError(
                f"reading {path} from {self}: the response body failed after obstore's "
                f"retries ({err})"
            ) from err

    async def size(self, path: str) -> int | None:
        """The object's size in bytes, or ``None`` when it does not exist."""
        try:
            return (await self._call("head", obstore.head_async, self.store, path))["size"]
        except _MISSING:
            return None

    async def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Child prefix names and object names directly below ``prefix``."""
        prefix = prefix.strip("/")
        listing = await self._call(
            "list", obstore.list_with_delimiter_async, self.store, prefix or None
        )
        cut = len(prefix) + 1 if prefix else 0
        dirs = [p.rstrip("/")[cut:] for p in listing["common_prefixes"]]
        objects = [meta["path"][cut:] for meta in listing["objects"]]
        return dirs, objects
