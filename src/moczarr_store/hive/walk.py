"""The discovery walk: list the digit tree level by level to find leaves.

Used only when a product has no usable root ``coverage.moc``; it costs one LIST per
digit node, so its cost grows with the tree.
"""

from __future__ import annotations

import asyncio

import numpy as np

from .ids import decimal_order, decimal_to_rank
from .paths import BASE_RE, split_leaf_name


def _is_node(name: str, at_root: bool, path_grouping: int) -> bool:
    if at_root:
        return bool(BASE_RE.match(name))
    return 1 <= len(name) <= path_grouping and set(name) <= set("1234")


async def walk_shards(
    backend, root: str, shard_order: int, path_grouping: int, window: str | None = None
) -> tuple[np.ndarray, list[str]]:
    """Ranks of the shards whose leaf (for ``window``) exists, and the leaf paths.

    Overview objects (``all.zarr``), columns (``*.pyramid.zarr``) and leaves of
    another window or order are skipped. Ranks come back ascending and unique.
    """
    found: dict[int, str] = {}
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
                    if label == window and decimal_order(decimal) == shard_order:
                        found.setdefault(decimal_to_rank(decimal), child)
                elif _is_node(name, prefix == root, path_grouping):
                    next_level.append(child)
        level = next_level
    ranks = np.array(sorted(found), dtype=np.uint64)
    return ranks, [found[int(r)] for r in ranks]
