"""Every other hive (``s3://``, ``gs://``, ``http(s)://``, a ``file://`` URL with options,
an obstore store instance) read with obstore (:class:`ObstoreReader`)."""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

import obstore

from ..errors import HiveReadError, ObjectReadError
from ..tunables import setting
from .ranges import BytesLike, RangeOption, byte_bounds
from .reader import MISSING, ObjectStat
from .redact import first_paragraph, redact, scrub
from .settle import tracked

STREAM_PIECE = 64 << 10  # bytes a streamed body is read in (a range of a whole GET)
RANGE_REFUSED = re.compile(r"\b416\b|range (was invalid|not satisfiable)|InvalidRange", re.I)
# obstore refusing a 200 (the whole object) to a ranged GET: HTTPStore, and S3/GCS/Azure
WHOLE_ANSWER = re.compile(r"range request not supported|non-partial response when range "
                          r"requested", re.I)


class ObstoreReader:
    """Any other URL (``s3://``, ``gs://``, ``http(s)://``, a ``file://`` URL with options),
    or an obstore store instance, read with obstore.

    ``whole``: the server ignores ``Range`` (``python -m http.server``, or a proxy that
    drops the header, answers a ranged GET with ``200`` and the whole object, which obstore
    refuses); ranges are then read from a GET of the whole object, streamed only up to the
    range's end."""

    buffers = None  # obstore allocates what it reads

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
                                    f"({scrub(first_paragraph(err), self.options)})")
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
                    from ..hints import missing_root

                    raise missing_root(path)
                self._store = obstore.store.LocalStore(path, **self.options)
            else:
                self._store = obstore.store.from_url(self.url, **self.options)
        return self._store

    def answered_whole(self, err: Exception) -> bool:
        """obstore refusing a ``200`` (the whole object) to a ranged GET."""
        return WHOLE_ANSWER.search(str(err)) is not None

    def now(self, path: str, option: RangeOption,
            with_stat: bool) -> tuple[BytesLike, ObjectStat | int] | None:
        return None  # every request waits on the network

    def documents_now(self, paths: list[str]) -> list[bytes | None]:
        return []

    def read_cached(self, reads: list[tuple[str, list[memoryview]]]
                    ) -> list[BytesLike | None] | None:
        return None

    def mapped_span(self, parts: list[tuple[str, bytes]],
                    step: int) -> tuple[memoryview, int] | None:
        return None

    async def read(self, path: str, option: RangeOption) -> tuple[BytesLike, int]:
        data, meta = await tracked(self._get(path, option))
        return data, meta["size"]

    async def read_stat(self, path: str, option: RangeOption) -> tuple[BytesLike, ObjectStat]:
        data, meta = await tracked(self._get(path, option))
        return data, obstore_stat(meta)

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
        except (*MISSING, ObjectReadError):
            raise
        except Exception as err:  # obstore's body errors do not name the object
            failure = ObjectReadError(
                f"reading {path} from {self.name}: the response body failed after obstore's "
                f"retries ({scrub(first_paragraph(err), self.options)})"
            )
        raise failure

    async def _range_of_whole(self, result: Any, path: str, option: RangeOption) -> bytes:
        """The bytes ``option`` names from the body of a GET of the whole object, read
        only up to their end (a suffix or an offset reads the body to its end)."""
        size = result.meta["size"]
        start, end = byte_bounds(option, size)
        kept, at = [], 0
        async for piece in result.stream(min_chunk_size=STREAM_PIECE):
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
        return obstore_stat(await tracked(obstore.head_async(self.store, path)))

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

    @property
    def endpoint(self) -> str:
        """The root and, when an option names one, the endpoint it is read from (redacted)."""
        for key in ("endpoint", "base_url"):
            if self.options.get(key):
                return f"{self.name} at {redact(str(self.options[key]))}"
        return self.name

    async def list(self, prefix: str) -> tuple[list[str], list[str]]:
        """Cost: one LIST, whose pages obstore follows to the end: within
        ``config["listing.seconds"]`` and ``config["listing.keys"]`` names, else a
        :class:`HiveReadError` naming the endpoint and the cap (the requests are stopped)."""
        seconds, keys = setting("listing.seconds"), setting("listing.keys")
        where = f"listing {prefix or '.'} from {self.endpoint}"
        task = asyncio.ensure_future(
            tracked(obstore.list_with_delimiter_async(self.lister, prefix or None)))
        try:
            done, _ = await asyncio.wait([task], timeout=seconds)
        finally:
            if not task.done():
                task.cancel()  # obstore stops requesting pages
        if not done:
            raise HiveReadError(
                f"{where}: the listing did not end within {seconds:g} s (an endpoint whose "
                "listing never ends?); the cap is moczarr_store.config 'listing.seconds'")
        listing = task.result()
        if len(listing["common_prefixes"]) + len(listing["objects"]) > keys:
            raise HiveReadError(f"{where}: the listing holds more than {keys:,} names; the cap "
                                "is moczarr_store.config 'listing.keys'")
        cut = len(prefix) + 1 if prefix else 0
        dirs = [p.rstrip("/")[cut:] for p in listing["common_prefixes"]]
        return dirs, [meta["path"][cut:] for meta in listing["objects"]]


def obstore_stat(meta: Any) -> ObjectStat:
    """An object's stat from obstore's metadata (of a GET or a HEAD)."""
    return ObjectStat(meta["size"], meta.get("e_tag"), meta.get("last_modified"))
