"""Leaves: the commit stamp, the versioned ``current`` pointer, debris.

A leaf is complete iff its root ``zarr.json`` carries a ``morton_hive_commit``
mapping. Its data lives under ``{leaf}/{current}/`` when the stamp names a version,
else under ``{leaf}/``. Stamps are read lazily and cached in a bounded LRU.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from .paths import validate_current

STAMP_KEY = "morton_hive_commit"
LeafState = Literal["stamped", "debris", "absent"]


@dataclass(frozen=True)
class Leaf:
    """What a leaf's root ``zarr.json`` said when it was read.

    ``attrs`` (the whole root attributes) is kept only on a freshly read leaf; the
    cache keeps the slim form.
    """

    path: str
    state: LeafState
    current: str | None = None
    attrs: dict | None = None

    @property
    def data_prefix(self) -> str | None:
        """Where the leaf's arrays live, or ``None`` when it has no committed data."""
        if self.state != "stamped":
            return None
        return self.path if self.current is None else f"{self.path}/{self.current}"

    @property
    def stamp(self) -> dict:
        return (self.attrs or {}).get(STAMP_KEY) or {}

    @property
    def run(self) -> str:
        """Leaves sharing this key were written by one writer run (one encoding)."""
        if self.current:
            run_id, _, _attempt = self.current.rpartition("-")
            return run_id
        return self.path

    def slim(self) -> Leaf:
        return Leaf(self.path, self.state, self.current)


def parse_leaf(path: str, payload: bytes | None) -> Leaf:
    """A leaf from its root ``zarr.json`` bytes (``None``: no such object)."""
    if payload is None:
        return Leaf(path, "absent")
    try:
        meta = json.loads(bytes(payload))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"leaf {path}: root zarr.json is not valid JSON ({err})") from None
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    stamp = attrs.get(STAMP_KEY) if isinstance(attrs, dict) else None
    if not isinstance(stamp, dict):
        return Leaf(path, "debris")
    current = stamp.get("current")
    if current is not None:
        validate_current(current, path)
    return Leaf(path, "stamped", current, attrs)


class LeafCache:
    """Bounded LRU of resolved leaves, with one in-flight read per leaf and loop."""

    def __init__(self, max_entries: int = 262_144) -> None:
        self.max_entries = max_entries
        self._done: OrderedDict[str, Leaf] = OrderedDict()
        self._pending: dict[tuple[int, str], asyncio.Future] = {}

    def __len__(self) -> int:
        return len(self._done)

    def put(self, leaf: Leaf) -> None:
        self._done[leaf.path] = leaf.slim()
        self._done.move_to_end(leaf.path)
        while len(self._done) > self.max_entries:
            self._done.popitem(last=False)

    def clear(self) -> None:
        self._done.clear()

    async def resolve(self, path: str, read) -> Leaf:
        """The cached leaf at ``path``, else ``parse_leaf(path, await read(...))``."""
        leaf = self._done.get(path)
        if leaf is not None:
            self._done.move_to_end(path)
            return leaf
        key = (id(asyncio.get_running_loop()), path)
        pending = self._pending.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            leaf = parse_leaf(path, await read(f"{path}/zarr.json"))
            self.put(leaf)
            future.set_result(leaf)
            return leaf
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._pending[key]
