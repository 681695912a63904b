"""Walks of the digit tree: one LIST per directory, never a request per absent node.

``walk_leaves`` lists the whole tree level by level to find the leaves, when a product
has no usable root ``coverage.moc`` (or a windowed one whose window labels nothing else
names). ``existing_objects`` lists, lazily and in domain order, only the directories
that hold listed nodes: the template search uses it to skip nodes that do not exist.
``existing_nodes`` lists, from the deepest directory common to a run of nodes, only the
directories that exist and hold some of them: a scan learns which leaves of a chunk exist
in bulk.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .ids import decimal_order, decimal_to_rank, rank_to_decimal
from .paths import BASE_RE, group_digits, split_leaf_name

if TYPE_CHECKING:
    from ..io.reader import HiveIO

Listing = tuple[list[str], list[str]]  # (child prefixes, objects), as HiveIO.list_dir


def _is_node(name: str, at_root: bool, path_grouping: int) -> bool:
    if at_root:
        return bool(BASE_RE.match(name))
    return 1 <= len(name) <= path_grouping and set(name) <= set("1234")


async def walk_leaves(
    backend: HiveIO, root: str, shard_order: int, path_grouping: int
) -> dict[int, set[str | None]]:
    """Node rank -> window labels (``None``: unwindowed) of every leaf found.

    Overview objects (``all.zarr``), columns (``*.pyramid.zarr``) and leaves of another
    order are skipped. Debris is found too: the caller decides what a stamp says.
    """
    found: dict[int, set[str | None]] = {}
    level = [root]
    while level:
        listings = await asyncio.gather(*(backend.list_dir(prefix) for prefix in level))
        next_level = []
        for prefix, (dirs, _objects) in zip(level, listings, strict=True):
            for name in dirs:
                child = f"{prefix}/{name}" if prefix else name
                leaf = split_leaf_name(name)
                if leaf is not None:
                    decimal, label = leaf
                    if decimal_order(decimal) == shard_order:
                        found.setdefault(decimal_to_rank(decimal), set()).add(label)
                elif _is_node(name, prefix == root, path_grouping):
                    next_level.append(child)
        level = next_level
    return found


@dataclass(frozen=True)
class _Node:
    path: str  # the node's directory, hive-relative
    decimal: str  # "" for the product root
    rank: int
    order: int


def _holds(ranks: np.ndarray, node: _Node, node_order: int) -> bool:
    """Whether some rank in ``ranks`` (ascending, at ``node_order``) lies below ``node``."""
    shift = 2 * (node_order - node.order)
    first = np.searchsorted(ranks, np.uint64(node.rank << shift))
    return bool(first < ranks.size and int(ranks[first]) < (node.rank + 1) << shift)


def _children(parent: _Node, dirs: list[str], node_order: int, grouping: int) -> list[_Node]:
    """The digit directories below ``parent`` on the way to ``node_order`` nodes."""
    out = []
    for name in dirs:
        if not parent.decimal:
            ok = bool(BASE_RE.match(name))
        else:
            want = min(grouping, node_order - parent.order)  # groups, remainder last
            ok = len(name) == want and set(name) <= set("1234")
        if ok:
            decimal = parent.decimal + name
            path = f"{parent.path}/{name}" if parent.path else name
            out.append(_Node(path, decimal, decimal_to_rank(decimal), decimal_order(decimal)))
    return sorted(out, key=lambda node: node.rank)


async def existing_objects(
    backend: HiveIO, root: str, ranks: np.ndarray, node_order: int, path_grouping: int,
    lookahead: int = 8,
) -> AsyncGenerator[tuple[int, set[str]], None]:
    """``(rank, names of the *.zarr objects in its directory)`` for every node of
    ``ranks`` (ascending, at ``node_order``) whose directory exists, in rank order.

    Lazy and depth first: a directory is listed only when it exists (a parent listed
    it) and holds some node of ``ranks``, so a consumer that stops early pays one LIST
    per directory on the way to what it took (plus up to ``lookahead`` siblings listed
    ahead, concurrently), never a request per absent node.
    """

    async def visit(node: _Node) -> AsyncGenerator[tuple[int, set[str]], None]:
        dirs, _ = await listings.pop(node.path)
        if node.order == node_order:
            names = {d for d in dirs if d.endswith(".zarr")}
            if names:
                yield node.rank, names
            return
        kids = [k for k in _children(node, dirs, node_order, path_grouping)
                if _holds(ranks, k, node_order)]
        for i, kid in enumerate(kids):
            for ahead in kids[i : i + lookahead]:
                if ahead.path not in listings:
                    listings[ahead.path] = asyncio.ensure_future(backend.list_dir(ahead.path))
            async for found in visit(kid):
                yield found

    start = _Node(root, "", 0, -1)
    listings: dict[str, asyncio.Future[Listing]] = {
        root: asyncio.ensure_future(backend.list_dir(root))}
    try:
        async for found in visit(start):
            yield found
    finally:  # stopped early: drop the listings made ahead
        for pending in listings.values():
            if pending.done() and not pending.cancelled():
                pending.exception()  # retrieved, so asyncio does not log it
            else:
                pending.cancel()


def _common(root: str, first: int, last: int, node_order: int, grouping: int) -> _Node:
    """The deepest directory of the digit tree holding nodes ``first`` to ``last``
    (ranks at ``node_order``) above the nodes' own: ``root`` when they lie in two base
    cells or are base cells."""
    a, b = rank_to_decimal(first, node_order), rank_to_decimal(last, node_order)
    cut = len(a) - node_order  # the base component: "4" or "-4"
    if a[:cut] != b[:cut] or node_order == 0:
        return _Node(root, "", 0, -1)
    digits = len(os.path.commonprefix([a[cut:], b[cut:]]))
    digits = min(digits, node_order - 1)
    digits -= digits % grouping
    decimal = a[: cut + digits]
    path = "/".join([a[:cut], *group_digits(a[cut : cut + digits], grouping)])
    return _Node(f"{root}/{path}" if root else path, decimal, decimal_to_rank(decimal), digits)


async def existing_nodes(backend: HiveIO, root: str, ranks: np.ndarray, node_order: int,
                         path_grouping: int) -> np.ndarray:
    """Which of ``ranks`` (ascending, at ``node_order``) have a directory of their own:
    a boolean per rank. One LIST of their deepest common directory, then one per
    existing directory below it that holds some of them, level by level (concurrently),
    down to the nodes' parents: the cost is bounded by the directories that exist, never
    a request per absent node. A listing's failure is raised."""
    found: set[int] = set()
    level = [_common(root, int(ranks[0]), int(ranks[-1]), node_order, path_grouping)]
    while level:
        listings = await asyncio.gather(*(backend.list_dir(node.path) for node in level))
        below = []
        for node, (dirs, _objects) in zip(level, listings, strict=True):
            for kid in _children(node, dirs, node_order, path_grouping):
                if kid.order == node_order:
                    found.add(kid.rank)
                elif _holds(ranks, kid, node_order):
                    below.append(kid)
        level = below
    return np.isin(ranks, np.fromiter(found, dtype=np.uint64, count=len(found)))
