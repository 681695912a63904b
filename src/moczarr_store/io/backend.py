"""``Backend``: what the package reads objects with, over one :class:`~.reader.Reader`.

It normalises byte ranges, counts requests, shares one process-wide cap on in-flight
requests (:mod:`.slots`), pickles as its recipe, and makes every failure an
error of this package whose message names the object and carries no credentials
(:mod:`.redact`). A local hive is read by :class:`~.local.LocalReader`, anything else by
:class:`~.remote.ObstoreReader`; the facade never asks which it holds.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from zarr.abc.store import RangeByteRequest

from ..diagnostics import logger
from ..errors import MocHiveError, ObjectReadError, OptionError
from ..options import DEFAULT_MAX_CONCURRENCY, flag
from ..options import positive as _count
from .buffers import BufferPool
from .local import LocalReader
from .ranges import ByteRequest, BytesLike, RangeOption, range_option, slice_bytes, unusual
from .reader import MISSING, ObjectStat, Reader
from .redact import first_paragraph, scrub
from .remote import RANGE_REFUSED, ObstoreReader
from .slots import request_slots
from .storage import check_options, obstore_options, unknown_keyword
from .urls import normalize_url

NOT_NOW = object()  # what ``Backend.get_now`` answers when it would have to wait


@dataclass
class RequestStats:
    """Backend requests by kind, and the most seen in flight at once."""

    counts: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def reset(self) -> None:
        self.counts.clear()
        self.max_in_flight = self.in_flight


class Backend:
    """Reads objects below one root; every path given is relative to that root.

    Implements :class:`HiveIO`. ``options`` are storage options (fsspec or obstore
    spellings, :mod:`.storage`), checked now by building the obstore store (no request);
    ``keywords`` are the caller's own, named when a key is neither. ``follow_links``
    (local hives) reads through links that leave the root instead of refusing them.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Any,
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
        self._reader: Reader = (
            LocalReader(self._local_root, self.follow_links) if self._local_root is not None
            else ObstoreReader(self.url, self.options,
                               built if self._instance is None else self._instance)
        )
        self.stats = RequestStats()
        self.progress: Callable[[int], object] | None = None  # told of each request done
        self.maps_spans = True  # local spans may be served through memory maps (io/mapped.py)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "options": self.options,
            "instance": self._instance,
            "max_concurrency": self.max_concurrency,
            "follow_links": self.follow_links,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        source = state["instance"] if state["instance"] is not None else state["url"]
        type(self).__init__(self, source, state["options"], state["max_concurrency"],
                            state.get("follow_links", False))

    def recipe(self) -> tuple[Any, ...]:
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
        return self._reader.whole

    def _read_ranges_whole(self) -> None:
        """From now on, read ranges from whole GETs (logged once)."""
        reader = self._reader
        if not reader.whole:
            reader.whole = True
            logger.warning("%s answers a ranged GET with the whole object (it ignores HTTP "
                           "Range requests): a range is now read from a GET of the whole "
                           "object, up to the range's end", self)

    @property
    def store(self) -> Any:
        """The obstore store (built on first use); ``None`` for a local hive read with file
        I/O."""
        return self._reader.store

    async def _call(self, kind: str, coro_fn: Callable[..., Awaitable[Any]], *args: Any,
                    **kwargs: Any) -> Any:
        """One counted request under the process-wide concurrency cap (:mod:`.slots`: a
        freed slot starts the next request at once)."""
        self.stats.counts[kind] += 1
        return await request_slots(self.max_concurrency).run(self._in_flight, coro_fn, args,
                                                             kwargs)

    async def _in_flight(self, coro_fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> Any:
        """``coro_fn(*args, **kwargs)`` awaited in a slot, counted in flight."""
        stats = self.stats
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            return await coro_fn(*args, **kwargs)
        finally:
            stats.in_flight -= 1
            if self.progress is not None:
                self.progress(1)

    def room(self, requests: int) -> Awaitable[None] | None:
        """What new work awaits before making ``requests`` while a cap's worth already
        waits for a slot (:meth:`.slots.RequestSlots.room`); ``None``: go now."""
        return request_slots(self.max_concurrency).room(requests)

    def _tally(self, kind: str, n: int = 1) -> None:
        """``n`` requests of ``kind`` made outside :meth:`_call`: counted and reported."""
        self.stats.counts[kind] += n
        if self.progress is not None:
            self.progress(n)

    def _now(self, kind: str, path: str, option: RangeOption, with_stat: bool) -> Any:
        """A local read the page cache can serve whole, done inline and counted as one
        request, without the concurrency cap (it never waits, so it is never in flight
        alongside another); ``None``: not local, or not all in the page cache. Saves the
        cap's semaphore and a coroutine per read."""
        try:
            got = self._reader.now(path, option, with_stat)
        except Exception:  # a missing object, a refused path: the request was made
            self._tally(kind)
            raise
        if got is not None:
            self._tally(kind)
        return got

    def get_now(self, path: str, byte_range: RangeByteRequest | None = None) -> Any:
        """What :meth:`get` answers (the bytes, or ``None``: absent), when the object (or
        the range, which must not be empty) is local and all in the page cache: read
        inline, no await, one request counted; else :data:`NOT_NOW`, nothing read or
        counted. Its errors are :meth:`get`'s."""
        if byte_range is not None and (unusual(byte_range) or byte_range.end <= byte_range.start):
            return NOT_NOW
        self._reader.ready()
        try:
            option = range_option(byte_range)
            kind = "get" if option is None or self.ignores_ranges else "get_range"
            got = self._now(kind, path, option, False)
        except MISSING:
            return None
        except Exception as err:
            failure = self._failure(err, path)
        else:
            return NOT_NOW if got is None else got[0]
        raise failure

    def documents_now(self, paths: list[str]) -> list[bytes | None]:
        """What :meth:`get_now` of each document (``jsonio.DOCUMENT_WINDOW``) answers, for
        the first of ``paths`` that a local hive's page cache holds whole and small, in one
        pass (:meth:`.local.LocalReader.documents_now`); one ranged GET counted each. The
        rest (none when the hive is not local): read them with :meth:`get_now`."""
        if not paths or self.ignores_ranges:
            return []
        got = self._reader.documents_now(paths)
        if got:
            self._tally("get_range", len(got))
        return got

    @property
    def buffers(self) -> BufferPool | None:
        """The pool local objects are read into (``None``: the hive is not local)."""
        return self._reader.buffers

    def read_cached_into(
        self, reads: list[tuple[str, list[memoryview]]]
    ) -> list[BytesLike | None] | None:
        """Whole local objects read in one pass from the page cache, each straight into its
        buffers (in turn) when its size is their total (``None`` in its place), else as its
        bytes; one GET counted each, no await. ``None`` when the hive is not local or any
        object is not all in the page cache, missing or unreadable (the buffers may then
        be partly written): read them as usual then (their errors name them). Cost: the
        file reads alone, without a task or the concurrency cap per object, and no copy."""
        got = self._reader.read_cached(reads)
        if got is not None:
            self._tally("get", len(reads))
        return got

    def mapped_span(self, parts: list[tuple[str, bytes]], step: int) -> memoryview | None:
        """:func:`.mapped.span` of local objects: ``None`` when the hive is not local, the
        store is an unpickled copy (``maps_spans`` off) or the span cannot be mapped;
        objects mapped now are counted as one GET each, a span kept mapped as none (it is
        read with no request)."""
        if not self.maps_spans:
            return None
        found = self._reader.mapped_span(parts, step)
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
        from ..hints import credentials, unreachable

        detail = scrub(first_paragraph(err), self._reader.options)
        detail = (credentials(detail) or unreachable(self.url, self._reader.options, detail)
                  or detail)
        return ObjectReadError(f"{what} {path} from {self}: {detail}")

    async def get(self, path: str, byte_range: ByteRequest | None = None) -> BytesLike | None:
        """The object's bytes (or the requested range), zero-copy; ``None`` if it is absent.

        Ranges follow zarr's slicing semantics: an end past the object clamps, and a
        start at or past its end gives ``b""`` (an empty range, without a request).
        One request (a GET).
        """
        if (isinstance(byte_range, RangeByteRequest) and not unusual(byte_range)
                and byte_range.end <= byte_range.start):
            return b""
        got = await self._fetch(path, byte_range, False)  # (get_sized's, a coroutine less)
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
        if byte_range is not None and unusual(byte_range):
            got = await self._fetch(path, None, with_stat)  # negative or huge: slice in memory
            return None if got is None else (slice_bytes(bytes(got[0]), byte_range), got[1])
        if isinstance(byte_range, RangeByteRequest) and byte_range.end <= byte_range.start:
            stat = await self.stat(path)
            return None if stat is None else (b"", stat if with_stat else stat.size)
        option = range_option(byte_range)
        self._reader.ready()  # a missing hive root raises here, not as a missing object
        try:
            kind = "get" if option is None or self.ignores_ranges else "get_range"
            got = self._now(kind, path, option, with_stat)
            if got is not None:
                return got
            read = self._reader.read_stat if with_stat else self._reader.read
            return await self._call(kind, read, path, option)
        except MISSING:
            return None
        except Exception as err:
            whole = kind == "get_range" and self._reader.answered_whole(err)
            failure = self._failure(err, path)
            refused = RANGE_REFUSED.search(str(err)) is not None
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
        except MISSING:
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
