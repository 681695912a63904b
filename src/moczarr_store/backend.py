"""Kept for code written against the module the I/O layer had before :mod:`moczarr_store.io`:
its public names, from where they now live (nothing in the package imports this)."""

from .io.backend import Backend, RequestStats
from .io.local import LocalReader
from .io.ranges import ByteRequest, BytesLike, RangeOption, slice_bytes
from .io.reader import HiveIO, ObjectStat
from .io.redact import redact, scrub
from .io.remote import ObstoreReader
from .io.urls import normalize_url
from .options import DEFAULT_MAX_CONCURRENCY, flag

__all__ = [
    "DEFAULT_MAX_CONCURRENCY", "Backend", "ByteRequest", "BytesLike", "HiveIO", "LocalReader",
    "ObjectStat", "ObstoreReader", "RangeOption", "RequestStats", "flag", "normalize_url",
    "redact", "scrub", "slice_bytes",
]
