"""``config``: the package's tunables as one configuration object, as ``zarr.config`` is
(a donfig ``Config``; ``moczarr_store.config`` is this object).

Set with ``moczarr_store.config.set({"mapped.bytes": 0})`` (also a context manager), in
a YAML file donfig reads (``~/.config/moczarr_store/``, ``MOCZARR_STORE_CONFIG``) or in
the environment before the package is imported (``MOCZARR_STORE_MAPPED__BYTES=0``: ``__``
separates a key's levels). Each key is declared once, in :data:`SETTINGS` (its default
and the values allowed), and read through :func:`setting`, which checks it: a bad value
raises :class:`~moczarr_store.errors.SettingError` naming the key, the value and what is
allowed. The bounds of a session's caches are read when the session is created (a
store's construction); the process-wide ones (``mapped.*``) each time they are applied.
``ARCHITECTURE.md`` lists every cache with its bound.
"""

from __future__ import annotations

import math
import mmap
import os
import reprlib
from dataclasses import dataclass
from typing import Any

from donfig import Config

from .errors import SettingError

_SIZED = "SC_PHYS_PAGES" in getattr(os, "sysconf_names", {})  # the memory's size is known
_MEMORY = os.sysconf("SC_PHYS_PAGES") * mmap.PAGESIZE if _SIZED else 8 << 30

MOST_ENTRIES = 1 << 32  # more than any cache could hold in memory
MOST_BYTES = 1 << 47  # 128 TiB: the address space of a 64-bit process


@dataclass(frozen=True)
class Setting:
    """One key of ``config``: its default, the least and the most it may be, and what it
    bounds (the documentation's text). An ``int`` default takes integers only; a
    ``float`` one any finite number (seconds, say)."""

    default: int | float
    help: str
    most: int | float = MOST_ENTRIES
    least: int | float = 0

    def allowed(self) -> str:
        kind = "an integer" if type(self.default) is int else "a number"
        return f"{kind} from {self.least:,} to {self.most:,}"

    def admits(self, value: object) -> bool:
        """Whether ``value`` is of this key's kind (never a bool) and in its range."""
        kinds = (int,) if type(self.default) is int else (int, float)
        return (type(value) in kinds and math.isfinite(value)  # type: ignore[arg-type]
                and self.least <= value <= self.most)  # type: ignore[operator]


# every key, declared once: a new bound is one line here and a ``setting(key)`` where it
# is applied (the documentation's table and the checks follow)
SETTINGS: dict[str, Setting] = {
    # spans served through memory maps (io/mapped.py), per process
    "mapped.bytes": Setting(
        64 << 30, "Address space the memory-mapped spans may take, in bytes (0: never map).",
        most=MOST_BYTES),
    "mapped.objects": Setting(
        1 << 14, "Files kept memory-mapped (the kernel allows about 65,000 mappings)."),
    "mapped.watches": Setting(
        # io/watch.py
        1 << 15, "inotify watches of memory-mapped files and their directories (at most a "
        "quarter of the system's max_user_watches); past it, files are checked with stat."),
    "mapped.touched_bytes": Setting(
        # handed back, they cost a page fault per few pages when read again
        min(4 << 30, _MEMORY // 8), "Bytes of the spans served last whose pages stay "
        "resident (default: an eighth of the memory, at most 4 GiB).", most=MOST_BYTES),
    # a local reader's pool of read buffers (io/buffers.py), per backend: zarr holds
    # async.concurrency (10) chunks of a read at once; 10 of chunking="auto"'s largest
    # (8 MiB, the uint64 coordinates beside an int64 field) fit, with room for another size
    "buffers.pooled_bytes": Setting(
        128 << 20, "Bytes of read buffers a local reader keeps for reuse.", most=MOST_BYTES),
    # a session's caches, in entries
    "cache.stamps": Setting(262_144, "Leaf commit stamps a session keeps (slim)."),
    "cache.leaf_metas": Setting(
        262_144, "Leaf array metadata of immutable versions a session keeps."),
    "cache.shard_indexes": Setting(
        65_536, "Verified shard indexes of immutable objects a session keeps "
        "(chunking=\"inner\")."),
    "cache.version_groups": Setting(
        65_536, "Whether a leaf version's cell-order group exists, per version."),
    "cache.absences": Setting(65_536, "Keys a run-* version was confirmed not to hold."),
    "cache.span_parts": Setting(
        1 << 17, "Parts of the span plans kept (about 470 bytes each: about 60 MB)."),
    "cache.listed_runs": Setting(
        1 << 18, "Nodes' presence a session learned from listings of sparse levels: runs "
        "listed and the leaves found in them (about 8 bytes each)."),
    "cache.object_paths": Setting(
        1 << 16, "Object paths a level remembers (about 150 bytes each: about 10 MB)."),
    "cache.centre_bytes": Setting(
        64 << 20, "Bytes of cell centres (lon and lat, with centres=True) a level keeps: "
        "the chunks computed last.", most=MOST_BYTES),
    "cache.directories": Setting(
        65_536, "Real paths of a local hive's directories a reader remembers."),
    # moczarr-store serve, per generation (serve/generations.py)
    "serve.object_sizes": Setting(
        65_536, "Sizes of immutable objects serve learned by a HEAD request."),
    "serve.span_tags": Setting(
        4_096, "Entity tags of joined chunks (chunking=\"span\") serve keeps."),
    # moczarr-store serve, per worker process (serve/guard.py): past it, the connections
    # whose answers have waited longest are closed (32 of auto's largest chunks, 8 MiB)
    "serve.unsent_bytes": Setting(
        256 << 20, "Bytes of answers a serve worker holds while their clients do not read "
        "them; past it, the connections that waited longest are closed.", most=MOST_BYTES),
    # moczarr-store serve, per connection (serve/protocols.py): requests a client sends
    # ahead of the answers wait parsed, a few hundred bytes each; HTTP clients that
    # pipeline send a few
    "serve.pipelined": Setting(
        64, "Requests one connection may send ahead of the answers (pipelined); past it, "
        "the connection is closed.", most=1 << 16, least=1),
    # one listing of a remote directory (io/remote.py), read when it is made: obstore
    # follows a listing's pages to their end inside one call, so its pages are bounded by
    # time, and its requests are stopped when it is refused. A hive's directories hold a
    # few names (digits, leaves, versions): one page, rarely a few
    "listing.seconds": Setting(
        60.0, "Seconds one remote listing may take (an endpoint whose listing never ends "
        "is refused after it; 0: no remote listing).", most=86_400.0),
    "listing.keys": Setting(1_000_000, "Names one remote listing may hold."),
    "cache.computed_bytes": Setting(
        64 << 20, "Bytes of computed-order chunks a session keeps (read/compute.py).",
        most=MOST_BYTES),
    # serve --tiles (serve/tiles.py): a field with no fold is drawn from its stored order
    # at every zoom, where a zoom-0 tile of a 2,100-leaf hive holds 8.6 million cells
    # (20-40 s); a 256-pixel tile of the order nearest its zoom holds about 65,536
    "tiles.cells": Setting(
        1 << 20, "Cells one map tile may draw (the tile's area in cells of the order "
        "drawn, at most the order's cells); past it, the tile is refused (413: zoom in)."),
    # computed orders (read/compute.py): a chunk's memory is this many leaves' values
    "compute.leaves_at_once": Setting(
        64, "Source leaves one computed-order chunk reads at once (0: one at a time).",
        most=1 << 16),
}


def _nested(flat: dict[str, Setting]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, declared in flat.items():
        section, name = key.split(".")
        out.setdefault(section, {})[name] = declared.default
    return out


class _Config(Config):
    """donfig's ``Config``; a malformed YAML file is remembered (``malformed``) and refused
    by :func:`check_settings`, not raised at import: the files are then left out."""

    malformed: str | None = None

    def collect(self, paths: list[str] | None = None, env: Any = None) -> dict[str, Any]:
        self.malformed = None
        try:
            return dict(super().collect(paths, env))
        except ValueError as err:  # donfig: "A config file at '...' is malformed, ..."
            self.malformed = str(err).split(", original error", 1)[0].split("\n", 1)[0]
            return dict(super().collect([], env))


DEFAULTS = _nested(SETTINGS)
config = _Config("moczarr_store", defaults=[DEFAULTS])


def env_name(key: str) -> str:
    """The environment variable that sets ``key`` at import (``MOCZARR_STORE_CACHE__STAMPS``)."""
    return config.env_prefix + key.upper().replace(".", "__")


def _refused(key: str, value: object, allowed: str) -> SettingError:
    env = env_name(key)
    where = (f"the environment variable {env}" if env in os.environ
             else "moczarr_store.config.set or a config file")
    return SettingError(f"setting {key!r} is {reprlib.repr(value)} (from {where}): "
                        f"expected {allowed}")


def setting(key: str) -> Any:
    """``config``'s value of ``key`` (declared in :data:`SETTINGS`), checked: of the
    declared kind and in its range, else :class:`~moczarr_store.errors.SettingError`.
    Cost: a ``config.get`` and a few comparisons."""
    declared = SETTINGS[key]
    try:
        value = config.get(key)
    except (KeyError, TypeError, IndexError):  # the section was set to a non-mapping
        value = config.get(key.split(".")[0], None)
        raise _refused(key.split(".")[0], value, "a mapping of settings") from None
    if not declared.admits(value):
        raise _refused(key, value, declared.allowed())
    return value


def check_settings() -> dict[str, Any]:
    """Every declared setting, checked (:func:`setting`), no malformed config file, and
    no unknown key in their sections (a mistyped key would be ignored): ``{key: value}``.
    Cost: one :func:`setting` per key."""
    if config.malformed:
        raise SettingError(f"{config.malformed}: fix or remove it (settings are read from "
                           "the YAML files in ~/.config/moczarr_store/ and MOCZARR_STORE_CONFIG)")
    values = {key: setting(key) for key in SETTINGS}
    for section in {key.split(".")[0] for key in SETTINGS}:
        for name in config.get(section):
            key = f"{section}.{name.replace('-', '_')}"
            if key not in SETTINGS:
                known = ", ".join(k for k in SETTINGS if k.startswith(f"{section}."))
                raise SettingError(f"unknown setting {reprlib.repr(f'{section}.{name}')}"
                                   f" (known: {known})")
    return values
