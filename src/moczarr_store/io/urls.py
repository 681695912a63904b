"""Hive URLs: a local path or URL in its canonical form, and a URL's kind of storage."""

from __future__ import annotations

import os

from ..errors import OptionError
from .redact import redact

SUPPORTED = "s3://, gs://, az:// (or abfs://), http(s)://, file:// or a local path"


def normalize_url(url: str | os.PathLike[str]) -> str:
    """A canonical URL: local paths become absolute ``file://`` URLs, trailing slashes go
    (``file:///`` stays the file system's root). A URL with nothing to name, a NUL, or a
    scheme no store reads (``ftp://``) is refused."""
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
    if family(text) == "other":
        raise OptionError(f"{redact(text)[:200]}: the scheme {scheme[:20]!r} is not supported; "
                          f"a hive is read from {SUPPORTED}")
    if scheme == "file":
        return "file://" + (path.rstrip("/") or "/")
    return text.rstrip("/")


def family(url: str) -> str:
    """``"s3"``, ``"gs"``, ``"az"``, ``"http"``, ``"file"`` or ``"other"`` for a URL."""
    scheme = url.partition("://")[0].lower()
    if scheme in ("s3", "s3a"):
        return "s3"
    if scheme in ("gs", "gcs"):
        return "gs"
    if scheme in ("az", "adl", "azure", "abfs", "abfss"):
        return "az"
    return scheme if scheme in ("http", "https", "file") else "other"
