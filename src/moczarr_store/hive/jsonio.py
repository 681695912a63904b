"""The one reader of the hive's JSON documents: bounded, strict, and naming the object.

Every metadata document of a hive (manifest, root MOC, leaf stamps, group and array
``zarr.json``) is hostile input. :func:`load_json` refuses, with an error naming the
object, what ``json.loads`` would accept or choke on in surprising ways: bytes that
are not UTF-8, ``NaN``/``Infinity`` (and numbers that overflow to them), nesting too
deep to re-serialize, integers past Python's digit limit, and documents larger than a
cap. :func:`read_document` fetches at most the cap (plus one byte) in one request: every
document of a hive is read through it (or, for a leaf's stamp, with its window
:data:`DOCUMENT_WINDOW`), so a huge object is never downloaded whole.

Where msgspec is installed (zarr 3.4 on requires it), it decodes first, about four times
faster: it refuses everything the standard library's decoder refuses here (integers past
Python's digit limit too, and more: lone surrogates, a byte order mark), and what it
accepts it reads as that decoder does; whatever it refuses is decoded again by the standard
library, which accepts it or words the error. The result is the same either way.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, TypeGuard

from zarr.abc.store import RangeByteRequest

from ..errors import HiveFormatError, MalformedMetadataError
from ..io.ranges import BytesLike

if TYPE_CHECKING:
    from ..io.reader import HiveIO

DEFAULT_MAX_JSON_BYTES = 16 << 20
"""Largest metadata document read (manifest, stamp, ``zarr.json``): 16 MiB."""
MAX_DEPTH = 64
"""Deepest nesting accepted: documents pass into the view's ``zarr.json`` documents,
which are re-serialized under zarr's own call stack."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"the non-standard constant {name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} overflows a double")
    return value


# one decoder (``json.loads`` with options builds one per call)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]  # ``decode`` less its checks
_SPACE = " \t\n\r"  # JSON's whitespace (``str.isspace`` takes more)
try:  # the faster decoder, where installed (a dependency of zarr from 3.4)
    from msgspec import Raw as _Raw
    from msgspec.json import Decoder as _Decoder
except ImportError:  # pragma: no cover - zarr < 3.4 without msgspec
    _FAST = _MEMBERS = None
else:
    _FAST = _Decoder().decode
    _MEMBERS = _Decoder(dict[str, _Raw]).decode  # an object, its members left encoded
_MISS = object()


def _fast(payload: BytesLike) -> Any:
    """``payload``'s value by msgspec, or ``_MISS``: not installed, or refused (then the
    standard library decides)."""
    if _FAST is None:
        return _MISS
    try:
        return _FAST(payload)
    except Exception:  # msgspec's DecodeError, RecursionError: the standard library's call
        return _MISS


def _decode(text: str) -> Any:
    """``_DECODER.decode(text)``: a document that opens with ``{`` scanned at once (what
    ``decode`` does after skipping no whitespace), anything else, trailing bytes included,
    left to ``decode`` itself, so every error is its own."""
    if text[:1] == "{":
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:
            return _DECODER.decode(text)
        if end == len(text) or not text[end:].strip(_SPACE):
            return value
    return _DECODER.decode(text)


def load_json(
    payload: BytesLike,
    where: str,
    max_bytes: int = DEFAULT_MAX_JSON_BYTES,
    *,
    max_depth: int | None = MAX_DEPTH,
    error: type[HiveFormatError] = MalformedMetadataError,
) -> Any:
    """The JSON value of ``payload``, or ``error`` naming ``where`` and why not.

    Cost: the payload is decoded once; with ``max_depth`` one more pass over the
    containers of the result (skip it for documents whose containers are all checked
    by their parser, such as the root MOC's ranges).
    """
    check_size(payload, where, max_bytes, error)
    value: Any = _fast(payload)
    text: str | bytes
    if value is _MISS:
        try:
            text = str(payload, "utf-8")  # decoded from the buffer itself: no copy of the bytes
            value = _decode(text)
        except UnicodeDecodeError as err:
            raise error(f"{where}: not UTF-8 ({err})") from None
        except RecursionError:
            raise error(f"{where}: JSON nested too deeply to parse") from None
        except ValueError as err:  # JSONDecodeError, the int digit limit, NaN/Infinity
            raise error(f"{where}: not valid JSON ({err})") from None
    else:
        text = bytes(payload)  # the bytes themselves when they are ``bytes``
    if max_depth is not None and _may_exceed(text, max_depth) and _depth_exceeds(value, max_depth):
        raise error(f"{where}: JSON nested deeper than {max_depth} levels")
    return value


def load_members_but(payload: BytesLike, where: str, key: str, max_bytes: int,
                     error: type[HiveFormatError] = MalformedMetadataError,
                     ) -> tuple[dict[str, Any], memoryview | None] | None:
    """A JSON object's members but ``key``, each read by :func:`load_json`, and ``key``'s
    value still encoded (its bytes, checked to be JSON but not decoded: the caller parses
    them, refusing whatever it does not expect), or ``None`` where msgspec is not installed
    or the document is not a JSON object to it (:func:`load_json` then decides). Cost:
    one pass over the bytes without building ``key``'s value."""
    check_size(payload, where, max_bytes, error)
    if _FAST is None or _MEMBERS is None:
        return None
    try:
        members = _MEMBERS(payload)
    except Exception:  # msgspec's DecodeError, RecursionError: the standard library's call
        return None
    raw = members.pop(key, None)
    decoded = {name: load_json(memoryview(value), where, max_bytes, max_depth=None,
                               error=error) for name, value in members.items()}
    return decoded, None if raw is None else memoryview(raw)


def check_size(payload: BytesLike, where: str,
               max_bytes: int = DEFAULT_MAX_JSON_BYTES,
               error: type[HiveFormatError] = MalformedMetadataError) -> None:
    """Refuse a document (as read by :func:`read_document`: at most ``max_bytes + 1``
    bytes) larger than ``max_bytes``, naming ``where``."""
    if len(payload) > max_bytes:
        raise error(f"{where}: the document is larger than the {max_bytes:,}-byte limit")


def _may_exceed(text: str | bytes, limit: int) -> bool:
    """Whether the text (or its UTF-8 bytes) holds more opening brackets than ``limit`` (its
    nesting cannot be deeper than their number): a C-speed pass that spares most documents
    the walk."""
    if isinstance(text, bytes):
        return text.count(b"{") + text.count(b"[") > limit
    return text.count("{") + text.count("[") > limit


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


DOCUMENT_WINDOW = RangeByteRequest(0, DEFAULT_MAX_JSON_BYTES + 1)
"""The range a document is read in (made once: a leaf's stamp and array document are read
for every leaf)."""


def _window(max_bytes: int) -> RangeByteRequest:
    if max_bytes == DEFAULT_MAX_JSON_BYTES:
        return DOCUMENT_WINDOW
    return RangeByteRequest(0, max_bytes + 1)


async def read_document(backend: HiveIO, key: str,
                        max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> BytesLike | None:
    """The bytes of object ``key`` (``None``: absent), at most ``max_bytes + 1`` of them:
    one ranged GET, so a huge object is never downloaded whole."""
    return await backend.get(key, _window(max_bytes))


def read_document_now(backend: Any, key: str, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Any:
    """:func:`read_document` without an await (``backend.get_now``): its answer, or
    ``NOT_NOW`` (nothing read) when the object is not local and all in the page cache."""
    return backend.get_now(key, _window(max_bytes))


def load_object(payload: BytesLike, where: str,
                max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> dict[str, Any]:
    """A document that must be a JSON object."""
    value = load_json(payload, where, max_bytes)
    if not isinstance(value, dict):
        raise MalformedMetadataError(f"{where}: not a JSON object ({type(value).__name__})")
    return value


def object_field(doc: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """``doc[key]`` when it is a JSON object; ``{}`` when absent or null."""
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedMetadataError(
            f"{where}: field {key!r} is not a JSON object ({type(value).__name__})"
        )
    return value


def is_int(value: object) -> TypeGuard[int]:
    """A JSON integer (``7.0`` and ``true`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)
