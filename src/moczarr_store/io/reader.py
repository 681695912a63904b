"""The one interface both readers implement (:class:`Reader`), what reading a hive needs
from the facade (:class:`HiveIO`), and what they report of an object (:class:`ObjectStat`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from obstore.exceptions import NotFoundError

from .buffers import BufferPool
from .ranges import ByteRequest, BytesLike, RangeOption

MISSING = (FileNotFoundError, NotFoundError, IsADirectoryError, NotADirectoryError)
"""What a reader raises for an object that is not there."""


@dataclass(frozen=True)
class ObjectStat:
    """An object's size and version markers, as the storage reports them (a local file has
    no ETag; its ``mtime`` is the file's)."""

    size: int
    etag: str | None = None
    mtime: datetime | None = None


class Reader(Protocol):
    """Reads objects below one root, for :class:`~moczarr_store.io.backend.Backend`.

    ``name``: the root, redacted. ``options``: its storage options (scrubbed from
    messages). ``whole``: ranges are read from whole GETs (a server that ignores
    ``Range``). ``store``: the obstore store (``None``: not read with obstore).
    ``buffers``: the pool objects are read into (``None``: none). The synchronous reads
    (``now``, ``documents_now``, ``read_cached``, ``mapped_span``) never wait: ``None``
    (or fewer documents) when they cannot answer without waiting, or the reader has no
    such path (the caller reads as usual).
    """

    name: str
    options: dict[str, Any]
    whole: bool

    @property
    def store(self) -> Any: ...

    @property
    def buffers(self) -> BufferPool | None: ...

    def ready(self) -> None:
        """Raise now when the root cannot be read at all (not as a missing object)."""

    def answered_whole(self, err: Exception) -> bool:
        """Whether ``err`` says a ranged GET was answered with the whole object."""
        ...

    def now(self, path: str, option: RangeOption,
            with_stat: bool) -> tuple[BytesLike, ObjectStat | int] | None:
        """The object's bytes and its stat (or size) if they can be read without waiting."""
        ...

    def documents_now(self, paths: list[str]) -> list[bytes | None]:
        """Small documents read whole without waiting (``None``: not there), up to the
        first that cannot be read so."""
        ...

    def read_cached(self, reads: list[tuple[str, list[memoryview]]]
                    ) -> list[BytesLike | None] | None:
        """Whole objects read without waiting, each into its buffers where it fits them."""
        ...

    def mapped_span(self, parts: list[tuple[str, bytes]],
                    step: int) -> tuple[memoryview, int] | None:
        """:func:`.mapped.span` of these objects, and how many were opened."""
        ...

    async def read(self, path: str, option: RangeOption) -> tuple[BytesLike, int]:
        """The object's bytes (or the range ``option`` names) and its whole size."""
        ...

    async def read_stat(self, path: str, option: RangeOption) -> tuple[BytesLike, ObjectStat]:
        """Like :meth:`read`, with the object's stat from the same request."""
        ...

    async def stat(self, path: str) -> ObjectStat:
        """The object's stat (one HEAD)."""
        ...

    async def list(self, prefix: str) -> tuple[list[str], list[str]]:
        """``(child prefixes, objects)`` directly below ``prefix``."""
        ...


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

    def documents_now(self, paths: list[str]) -> list[bytes | None]:
        """The first of ``paths``' small documents, read whole without waiting (``None``:
        absent); none when the hive is not local. One ranged GET counted each."""
        ...
