"""Names and paths inside a hive: leaf paths, product names, window labels, pointers.

Every name that comes from the hive is validated here before it becomes part of a
path, so no key built by the store can leave the hive root.
"""

from __future__ import annotations

import re
from typing import cast

from ..errors import HiveFormatError, MalformedMetadataError
from .ids import DECIMAL_RE

PRODUCT_RE = re.compile(r"^[a-z0-9_-]{1,192}\Z")
BASE_RE = re.compile(r"^-?[1-6]\Z")
WINDOW_RE = re.compile(r"^[0-9A-Za-z-]{1,32}\Z")
CURRENT_RE = re.compile(r"^run-[0-9A-Za-z._-]{1,200}\Z")
RESERVED_PRODUCTS = frozenset({"multiscales", "icechunk"})
NODE_NAME_MAX_BYTES = 255


def is_product_name(name: str) -> bool:
    return (
        isinstance(name, str)
        and bool(PRODUCT_RE.match(name))
        and not BASE_RE.match(name)
        and name not in RESERVED_PRODUCTS
    )


def validate_window(label: object, where: str | None = None) -> str:
    """A window label; ``where`` names the hive object it came from (else it is the
    caller's argument, and a plain ``ValueError``)."""
    if not isinstance(label, str) or not WINDOW_RE.match(label) or label == "all":
        message = f"window label {short(label)} is not a valid window label"
        if where is None:
            raise ValueError(message)
        raise MalformedMetadataError(f"{where}: {message}")
    return label


def validate_current(current: object, leaf: str) -> str:
    """A versioned leaf's ``current`` pointer, checked to stay inside the leaf."""
    if not isinstance(current, str) or not CURRENT_RE.match(current) or ".." in current:
        raise MalformedMetadataError(
            f"leaf {leaf}: commit stamp 'current' pointer {short(current)} is malformed"
        )
    return current


def node_name_problem(name: object) -> str | None:
    """Why ``name`` is not a zarr v3 node name this store can present (``None``: it is)."""
    if not isinstance(name, str):
        return "not a string"
    if not name:
        return "empty"
    if "/" in name:
        return "contains '/'"
    if name in (".", ".."):
        return "a dot segment"
    if name == "zarr.json":
        return "the name of its group's metadata document: its keys would be ambiguous"
    if name.startswith("__"):
        return "starts with '__', reserved by zarr"
    if not name.isprintable():
        return "not printable"
    if len(name.encode("utf-8")) > NODE_NAME_MAX_BYTES:
        return f"longer than {NODE_NAME_MAX_BYTES} bytes"
    return None


def requestable(name: object) -> bool:
    """Whether ``{group}/{name}/zarr.json`` is a key below the group (even if ``name``
    is not a valid node name): no separator, no dot segment, no NUL, a sane length."""
    return (
        isinstance(name, str)
        and node_name_problem(name) in (None, "starts with '__', reserved by zarr",
                                        "not printable")
        and "\x00" not in name
    )


def validate_node_name(name: object, where: str) -> str:
    """An array name from the hive (content hashes, a listing) before it becomes a path:
    a zarr v3 node name, else :class:`HiveFormatError` naming ``where`` and the name."""
    problem = node_name_problem(name)
    if problem is not None:
        raise HiveFormatError(
            f"{where}: array name {short(name)} is not a valid zarr node name ({problem})"
        )
    return cast(str, name)


def short(value: object, limit: int = 80) -> str:
    """A hive-supplied value for a message: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def group_digits(tail: str, path_grouping: int) -> list[str]:
    """Digit tail split into components of ``path_grouping`` digits (remainder last)."""
    return [tail[i : i + path_grouping] for i in range(0, len(tail), path_grouping)]


def leaf_path(decimal: str, window: str | None = None, path_grouping: int = 1) -> str:
    """Store-relative path of the leaf of node ``decimal`` (and ``window``)."""
    match = DECIMAL_RE.match(decimal)
    if match is None:
        raise ValueError(f"{decimal!r} is not a morton decimal id")
    base, tail = match.groups()
    name = f"{decimal}_{window}.zarr" if window is not None else f"{decimal}.zarr"
    if not tail:
        return f"{base}/{name}"
    # one digit a directory (zagg's default): joined at C speed
    digits = "/".join(tail) if path_grouping == 1 else "/".join(group_digits(tail, path_grouping))
    return f"{base}/{digits}/{name}"


def node_path(decimal: str) -> str:
    """Path of a digit node, one component per digit (where zagg writes overviews)."""
    match = DECIMAL_RE.match(decimal)
    if match is None:
        raise ValueError(f"{decimal!r} is not a morton decimal id")
    base, tail = match.groups()
    return "/".join([base, *tail])


def split_leaf_name(name: str) -> tuple[str, str | None] | None:
    """``(decimal, window)`` for a leaf basename, ``None`` when it is not a leaf."""
    if not name.endswith(".zarr") or name.endswith(".pyramid.zarr"):
        return None
    stem = name[: -len(".zarr")]
    decimal, sep, window = stem.partition("_")
    if not DECIMAL_RE.match(decimal) or (sep and not WINDOW_RE.match(window)):
        return None
    return decimal, (window if sep else None)
