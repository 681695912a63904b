"""``config``: the package's tunables as one configuration object, as ``zarr.config`` is
(a donfig ``Config``; ``moczarr_store.config`` is this object).

Set with ``moczarr_store.config.set({"mapped.bytes": 0})`` (also a context manager) or in
the environment before the package is imported (``MOCZARR_STORE_MAPPED__BYTES=0``: ``__``
separates a key's levels); read one with ``config.get("mapped.bytes")``. The bounds of a
session's caches are read when the session is created (a store's construction); the
process-wide ones (``mapped.*``) each time they are applied. ``ARCHITECTURE.md`` lists
every cache with its bound.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

from donfig import Config

_SIZED = "SC_PHYS_PAGES" in getattr(os, "sysconf_names", {})  # the memory's size is known
_MEMORY = os.sysconf("SC_PHYS_PAGES") * mmap.PAGESIZE if _SIZED else 8 << 30

DEFAULTS: dict[str, dict[str, Any]] = {
    "mapped": {  # spans served through memory maps (mapped.py), per process
        "bytes": 64 << 30,  # address space the mapped files may take (0: never map)
        "objects": 1 << 14,  # files kept mapped (the kernel allows ~65,000 mappings)
        # inotify watches of kept spans' files and directories (io/watch.py; at most a
        # quarter of the system's max_user_watches); past it, files are checked by stat
        "watches": 1 << 15,
        # pages of the spans served last that stay resident: an eighth of the memory, at
        # most 4 GiB (handed back, they cost a page fault per few pages when read again)
        "touched_bytes": min(4 << 30, _MEMORY // 8),
    },
    "buffers": {  # a local reader's pool of read buffers (buffers.py), per backend
        # zarr holds async.concurrency (10) chunks of a read at once: 10 of chunking="auto"'s
        # largest (8 MiB, the uint64 coordinates beside an int64 field) fit, with room for
        # another size; under it the rest of each read came from new memory (page faults)
        "pooled_bytes": 128 << 20,
    },
    "cache": {  # a session's caches, in entries
        "stamps": 262_144,  # leaf commit stamps, kept slim
        "leaf_metas": 262_144,  # leaf array metadata of immutable versions
        "shard_indexes": 65_536,  # verified shard indexes of immutable objects ("inner")
        "version_groups": 65_536,  # whether a leaf version's cell-order group exists
        "absences": 65_536,  # keys a run-* version was confirmed not to hold
        "span_parts": 1 << 17,  # parts of the span plans kept (~470 bytes each: ~60 MB)
    },
}

config = Config("moczarr_store", defaults=[DEFAULTS])
