"""One product of a hive: its manifest, row domain and template leaf schema.

Opening a product costs a constant number of requests: the manifest, the root
``coverage.moc``, the stamp of the first stamped leaf, one listing of its cell-order
group and one ``zarr.json`` per array. Other leaves are not touched unless
``verify="open"`` asks for moczarr's exact debris semantics.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from dataclasses import dataclass, field

import numpy as np

from .coverage import COVERAGE_NAME, parse_root_coverage
from .ids import rank_to_decimal
from .leaves import Leaf, LeafCache
from .manifest import Manifest
from .paths import leaf_path
from .walk import walk_shards

COORDINATE_NAMES = ("morton", "cell_ids")
TEMPLATE_BATCH = 8
VERIFY_BATCH = 4096


class HiveWarning(UserWarning):
    """Something in the hive was damaged or stale, and how it was read."""


class NoCoverageError(ValueError):
    """A product has no committed leaf anywhere, so it has no schema."""


@dataclass
class Product:
    """A product at its source cell order, as the store presents it."""

    name: str
    root: str
    manifest: Manifest
    shard_ranks: np.ndarray
    coverage_source: str
    group_attrs: dict
    arrays: dict[str, dict]
    template: str
    dropped: list[str] = field(default_factory=list)

    @property
    def n_shards(self) -> int:
        return int(self.shard_ranks.size)

    @property
    def cells_per_shard(self) -> int:
        return 4**self.manifest.depth

    def leaf_path(self, index: int) -> str:
        """Hive-relative path of the leaf of the ``index``-th shard of the domain."""
        decimal = rank_to_decimal(int(self.shard_ranks[index]), self.manifest.shard_order)
        rel = leaf_path(decimal, None, self.manifest.path_grouping)
        return f"{self.root}/{rel}" if self.root else rel


def _join(root: str, rel: str) -> str:
    return f"{root}/{rel}" if root else rel


async def _domain(backend, root: str, manifest: Manifest) -> tuple[np.ndarray, str]:
    where = _join(root, COVERAGE_NAME)
    payload = await backend.get(where)
    if payload is not None:
        try:
            return parse_root_coverage(bytes(payload), manifest.shard_order, where), "moc"
        except ValueError as err:  # UnusableCoverage included
            reason = f"is unusable ({err})"
    else:
        reason = "is missing"
    warnings.warn(
        f"root coverage {where} {reason}; discovering shards with the digit-tree walk",
        HiveWarning,
        stacklevel=2,
    )
    ranks, _paths = await walk_shards(backend, root, manifest.shard_order, manifest.path_grouping)
    return ranks, "walk"


async def _read_json(backend, key: str) -> dict | None:
    payload = await backend.get(key)
    if payload is None:
        return None
    try:
        return json.loads(bytes(payload))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{key} is not valid JSON ({err})") from None


async def _array_names(backend, leaf: Leaf, group: str) -> list[str]:
    """Array names in a leaf's cell-order group: a listing, else the stamp's hashes."""
    try:
        dirs, _ = await backend.list_dir(group)
        return sorted(dirs)
    except NotImplementedError:
        pass
    except Exception as err:  # backends that cannot list (plain HTTP)
        hashes = (leaf.stamp or {}).get("content_hashes", {}).get("arrays")
        if not isinstance(hashes, dict):
            raise ValueError(
                f"cannot list {group} ({err}) and its stamp has no content_hashes to name "
                "its arrays"
            ) from err
        prefix = group.rsplit("/", 1)[-1] + "/"
        return sorted(k[len(prefix) :] for k in hashes if k.startswith(prefix))
    return []


async def _template(
    backend, leaves: LeafCache, paths: list[str], cell_order: int
) -> tuple[Leaf, dict, dict[str, dict]] | None:
    """The first stamped leaf (in domain order) whose cell-order group exists."""
    start = 0
    while start < len(paths):
        # one stamp first (a clean hive's first leaf is stamped), then batches
        batch = paths[start : start + (TEMPLATE_BATCH if start else 1)]
        start += len(batch)
        resolved = await asyncio.gather(*(leaves.resolve(p, backend.get) for p in batch))
        for leaf in resolved:
            if leaf.state != "stamped":
                continue
            group = f"{leaf.data_prefix}/{cell_order}"
            group_meta = await _read_json(backend, f"{group}/zarr.json")
            if group_meta is None:
                warn_dangling(leaf, group)
                continue
            names = await _array_names(backend, leaf, group)
            names = [n for n in names if n not in COORDINATE_NAMES]
            metas = await asyncio.gather(
                *(_read_json(backend, f"{group}/{n}/zarr.json") for n in names)
            )
            arrays = {n: m for n, m in zip(names, metas, strict=True) if m is not None}
            return leaf, group_meta.get("attributes", {}), arrays
    return None


def warn_dangling(leaf: Leaf, group: str) -> None:
    what = (
        f"points at version {leaf.current!r}, which is missing"
        if leaf.current
        else f"has no group {group}"
    )
    warnings.warn(
        f"leaf {leaf.path} {what}: read as missing (fill value)", HiveWarning, stacklevel=3
    )


async def _verify_all(
    backend, leaves: LeafCache, paths: list[str], cell_order: int
) -> tuple[np.ndarray, list[str]]:
    """Keep-mask over ``paths`` (stamped, version present) and the dropped leaf paths."""
    keep = np.zeros(len(paths), dtype=bool)
    dropped: list[str] = []

    async def check(i: int, path: str) -> None:
        leaf = await leaves.resolve(path, backend.get)
        if leaf.state != "stamped":
            dropped.append(path)
            return
        if leaf.current is not None:
            group = f"{leaf.data_prefix}/{cell_order}"
            if await backend.get(f"{group}/zarr.json") is None:
                warn_dangling(leaf, group)
                dropped.append(path)
                return
        keep[i] = True

    for start in range(0, len(paths), VERIFY_BATCH):
        await asyncio.gather(
            *(check(i, p) for i, p in enumerate(paths[start : start + VERIFY_BATCH], start))
        )
    return keep, sorted(dropped)


async def open_product(
    backend, leaves: LeafCache, name: str, root: str, manifest: Manifest, verify: str
) -> Product:
    ranks, source = await _domain(backend, root, manifest)
    product = Product(name, root, manifest, ranks, source, {}, {}, "")
    paths = [product.leaf_path(i) for i in range(product.n_shards)]
    found = await _template(backend, leaves, paths, manifest.cell_order)
    if found is None:
        raise NoCoverageError(
            f"product {name!r} at {root or '/'}: no committed leaf among {len(paths)} "
            f"{source}-listed shards, so the product has no schema"
        )
    leaf, product.group_attrs, product.arrays = found
    product.template = leaf.path
    if verify == "open":
        keep, product.dropped = await _verify_all(backend, leaves, paths, manifest.cell_order)
        product.shard_ranks = product.shard_ranks[keep]
    return product
