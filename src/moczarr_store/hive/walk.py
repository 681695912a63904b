"""The discovery walk: list the digit tree level by level to find leaves.

Used only when a product has no usable root ``coverage.moc`` (or a windowed one whose
window labels nothing else names); it costs one LIST per digit node.
"""

from __future__ import annotations

import asyncio

from .ids import decimal_order, decimal_to_rank
from .paths import BASE_RE, split_leaf_name


def _is_node(name: str, at_root: bool, path_grouping: int) -> bool:
    if at_root:
        return bool(BASE_RE.match(name))
    return 1 <= len(name) <= path_grouping and set(name) <= set("1234")


async def walk_leaves(
    backend, root: str, shard_order: int, path_grouping: int
) -> dict[int, set[str | None]]:
    """Shard rank -> window labels (``None``: unwindowed) of every leaf found.

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
