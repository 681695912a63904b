"""HTTP details of serving one representation: byte ranges, entity tags, conditionals.

Pure functions, no I/O. Decisions (RFC 9110 allows each):

- One byte range per request (``a-b``, ``a-``, suffix ``-n``). A ``Range`` header that
  names several ranges, another unit, or is malformed is ignored: the answer is the whole
  representation (200). Zarr clients never ask for several ranges at once.
- A single range that starts at or past the end (or a suffix of 0 bytes) is unsatisfiable
  (416). An end past the last byte is clamped.
- ``If-None-Match`` compares weakly (``W/`` is ignored); ``If-Range`` strongly, and a
  date in it never matches (there is no ``Last-Modified``), so the whole representation
  is sent.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_RANGE_RE = re.compile(r"\A\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*\Z", re.IGNORECASE)
_HUGE = 10**30  # any bound with more digits than this is past every object


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, end)`` of a representation (``end`` exclusive)."""

    start: int
    end: int

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end - 1}/{size}"


class Unsatisfiable:
    """A single, well-formed range that selects no byte of the representation."""


UNSATISFIABLE = Unsatisfiable()


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 30 else _HUGE


def byte_range(header: str | None, size: int) -> ByteRange | Unsatisfiable | None:
    """The byte range a ``Range`` header selects in a ``size``-byte representation: ``None``
    for the whole representation (no header, or one that is ignored, see the module)."""
    if header is None:
        return None
    match = _RANGE_RE.match(header)
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # suffix: the last n bytes
        n = _number(last)
        if n == 0 or size == 0:
            return UNSATISFIABLE
        return ByteRange(max(0, size - n), size)
    start = _number(first)
    end = _number(last) + 1 if last else size
    if last and end <= start:
        return None  # last < first: an invalid range, ignored
    if start >= size:
        return UNSATISFIABLE
    return ByteRange(start, min(end, size))


def _tags(header: str) -> list[str]:
    return [t.strip().removeprefix("W/") for t in header.split(",") if t.strip()]


def none_match(header: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (or is ``*``): the client's copy is current."""
    if not header:
        return False
    tags = _tags(header)
    return "*" in tags or etag in tags


def names_tag(header: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` itself (``*`` aside)."""
    return bool(header) and etag in _tags(header or "")


def range_applies(if_range: str | None, etag: str) -> bool:
    """Whether a ``Range`` header is to be honoured under ``If-Range`` (strong match)."""
    return if_range is None or if_range.strip() == etag


def content_tag(data: bytes | memoryview) -> str:
    """A strong entity tag from the bytes themselves (BLAKE2b, 128 bits)."""
    return f'"{hashlib.blake2b(data, digest_size=16).hexdigest()}"'


def recipe_tag(text: str) -> str:
    """A strong entity tag from a description of what determines the bytes."""
    return f'"{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"'
