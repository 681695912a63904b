"""One line that says what to do, for the first mistakes users make: a file given as the
hive root, S3 without credentials, a misspelt group, the root opened as a dataset."""

from __future__ import annotations

import difflib
import os
import re
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from . import state
from .diagnostics import logger
from .errors import NotAHiveError

# the instance-metadata service obstore asks for credentials when none are configured
# (IMDSv2's token path, IMDSv1's credentials path, or its well-known address)
_METADATA = re.compile(r"169\.254\.169\.254|/latest/api/token|/latest/meta-data/iam")

CREDENTIALS = (
    "no credentials found (the instance metadata service, asked for them, refused): for a "
    "public bucket use --anon (storage_options={'anon': True}); otherwise set "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or pass key/secret"
)

MARKERS = ("morton_hive.json", "zarr.json", "coverage.moc")


def credentials(detail: str) -> str | None:
    """The hint for an error ``detail`` that comes from looking for credentials on the
    instance-metadata service, else ``None``. No I/O."""
    return CREDENTIALS if _METADATA.search(detail) else None


SERVERS_KEPT = 64  # servers whose connect result a process keeps: past it, no more hints
# (host, port) -> what a connect found
REACHED: state.Part[dict[tuple[str, int], str | None]] = state.Part("servers reached", dict)


def unreachable(url: str | None, options: dict[str, Any], detail: str) -> str | None:
    """For a failure that says only "error sending request" (obstore's HTTP client names no
    cause), ``detail`` and what a connection to the server finds: nothing listening
    (connection refused), a host name that does not resolve, or no answer. The server is
    ``url``'s for http(s), else the ``endpoint`` option; ``None`` when neither, or when the
    connection succeeds. One TCP connect (at most 2 s) per server and process."""
    if "error sending request" not in detail:
        return None
    target = url if url and url.startswith(("http://", "https://")) else options.get("endpoint")
    parts = urlsplit(str(target or ""))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        where = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except ValueError:  # a port out of range
        return None
    reached = REACHED()
    if where not in reached and len(reached) < SERVERS_KEPT:
        reached[where] = _connect(*where)
    found = reached.get(where)
    return f"{detail}; {found}" if found else None


def _connect(host: str, port: int) -> str | None:
    address = f"{host}:{port}"
    try:
        socket.create_connection((host, port), timeout=2).close()
    except ConnectionRefusedError:
        return (f"nothing is listening at {address} (connection refused): is the server "
                "running, and are the host and port right?")
    except socket.gaierror:
        return f"the host name {host!r} does not resolve: is it spelt right?"
    except OSError as err:
        return f"{address} does not answer ({err.strerror or err})"
    return None


def missing_root(path: str) -> Exception:
    """The error for a local hive root that is not a directory: a file names what to give
    instead (the directory holding it, when that is where a hive's root objects live);
    anything else does not exist. One ``stat``."""
    if not os.path.exists(path):
        return FileNotFoundError(f"hive root {path} does not exist")
    parent = os.path.dirname(os.path.abspath(path))
    instead = (f"{parent}, the directory holding it" if os.path.basename(path) in MARKERS
               else "the directory that holds the hive's morton_hive.json (or its products)")
    return NotAHiveError(f"hive root {path} is a file, not a directory: give {instead}")


def missing_node(path: str, groups: Iterable[str], arrays: Iterable[str] = ()) -> str:
    """The line for a node the hierarchy does not have: the close matches among its groups
    and arrays, and the groups there are (the first 12)."""
    groups = sorted(g for g in groups if g)
    close = difflib.get_close_matches(path, [*groups, *arrays], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    shown = ", ".join(groups[:12]) + (f", ... ({len(groups)} in all)" if len(groups) > 12 else "")
    return f"no group or array {path!r} in this hive{hint}; its groups: {shown or 'none'}"


def missing_group(group: str, groups: Iterable[str]) -> str:
    """The line for a ``group=`` (``--group``) that names no group: the closest matches
    among ``groups`` and the groups there are (the first 12). No I/O."""
    groups = sorted(g for g in groups if g)
    close = difflib.get_close_matches(group.strip("/"), groups, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    shown = ", ".join(groups[:12]) + (f", ... ({len(groups)} in all)" if len(groups) > 12 else "")
    return f"group {group!r} names no group of the hive{hint}; its groups: {shown or 'none'}"


# the group attribute ``hint`` of the root and of each product (no arrays there): what
# ``xr.open_zarr(store)`` without ``group=`` shows; the group comes first, as xarray's
# repr cuts an attribute at its line's end
ROOT_HINT = ("open a group: group={group!r} (all: xr.open_datatree(store, engine='zarr')); "
             "no arrays here")


HINTS_KEPT = 256  # (store, node) pairs hinted in a process: past it, no more hints
HINTED: state.Part[set[tuple[str, str]]] = state.Part("missing nodes hinted", set)


def hint_missing(store, key: str) -> None:
    """``key`` is the ``zarr.json`` of a node the hierarchy lacks (a misspelt group in
    ``zarr.open_group(store, path=...)``): one WARNING line on the ``moczarr_store``
    logger with the close match and the groups there are, once per store and node, at most
    256 in a process (a server's clients may ask for anything). zarr raises its own error
    after it: a store cannot raise for an absent key. No I/O."""
    path = "" if key == "zarr.json" else key.removesuffix("/zarr.json")
    mark, hinted = (repr(store), path), HINTED()
    if mark in hinted or len(hinted) >= HINTS_KEPT:
        return
    hinted.add(mark)
    view, hive = store.session.view, store.session.snapshot()
    levels = [] if hive is None else [
        lv.path for product in hive.products for lv in (*product.levels, *product.pending)]
    logger.warning("%r: %s", store, missing_node(path, {*view.groups, *levels}, view.arrays))


# Icechunk's Rust logger prints two WARN records (with raw ANSI colours) on every export to
# a local directory: LocalFileSystem storage is unsafe for concurrent commits (the export is
# the new repository's only writer), and conditional-PUT recovery needs user metadata (a
# local file has no lost responses). Neither asks anything of the user: those two targets
# are kept to errors, unless ICECHUNK_LOG says what the user wants logged.
QUIET_ICECHUNK = "warn,icechunk_arrow_object_store=error,icechunk_storage::readback=error"


def quiet_icechunk_logs(icechunk) -> None:
    """Filter out Icechunk's two warnings about local storage (see above)."""
    if "ICECHUNK_LOG" not in os.environ:
        icechunk.set_logs_filter(QUIET_ICECHUNK)
