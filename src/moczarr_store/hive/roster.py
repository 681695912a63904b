"""The hive root: a bare single-product store, or a directory of products."""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import (
    HiveFormatError,
    HiveWarning,
    NotAHiveError,
    OptionError,
    OutsideRootError,
    UnsupportedSpec,
)
from .aoi import Cells
from .computed import computed_levels, product_folds
from .ids import rank_to_decimal
from .jsonio import read_document
from .leaves import LeafCache
from .level import Level, Product
from .load import load_source, warn_if_stale
from .manifest import MANIFEST_NAME, Manifest, parse_manifest
from .paths import BASE_RE, is_product_name, validate_window
from .pyramid import declare_pyramid, resolve_level
from .windows import schedule

if TYPE_CHECKING:
    from ..io.reader import HiveIO


@dataclass
class Hive:
    bare: bool
    products: list[Product]
    skipped: dict[str, str]

    def product(self, name: str) -> Product | None:
        return next((p for p in self.products if p.name == name), None)

    def pending_for(self, path: str) -> list[tuple[Product, Level]]:
        """Unread levels a node path needs: its own level, or every level below it
        (a group's document consolidates, and its listing names, its descendants)."""
        return [
            (product, level)
            for product in self.products
            for level in product.pending
            if not path
            or path == level.path
            or path.startswith(level.path + "/")
            or level.path.startswith(path + "/")
        ]


async def settle(backend: HiveIO, leaves: LeafCache, product: Product, level: Level,
                 verify: str, aoi: Cells | None = None) -> None:
    """Read one pending level's schema and keep or omit it. Overview levels are regenerable
    caches: metadata that cannot be read as a level, or that a link out of a local hive's
    root refuses, omits that level (with a warning), and the source level and the other
    overviews stand."""
    try:
        kept = await resolve_level(backend, leaves, level, verify, aoi)
    except (HiveFormatError, OutsideRootError) as err:
        warnings.warn(f"{level.path}: {err}; omitted", HiveWarning, stacklevel=2)
        kept = False
    product.settle(level, kept)


async def _manifests(
    backend: HiveIO,
) -> tuple[bool, list[tuple[str, str, Manifest]], dict[str, str]]:
    """``(bare, [(name, root, manifest)], skipped)`` for the hive root."""
    payload = await read_document(backend, MANIFEST_NAME)
    if payload is not None:
        manifest = parse_manifest(payload, MANIFEST_NAME)
        return True, [(manifest.bare_product_name(), "", manifest)], {}
    try:
        dirs, _ = await backend.list_dir("")
    except Exception as err:
        raise NotAHiveError(
            f"{backend}: no {MANIFEST_NAME} at the root, and the root cannot be listed to "
            f"find products ({err})"
        ) from err
    names = sorted(d for d in dirs if is_product_name(d))
    payloads = await asyncio.gather(*(read_document(backend, f"{n}/{MANIFEST_NAME}")
                                      for n in names))
    found, skipped = [], {}
    for name, data in zip(names, payloads, strict=True):
        if data is None:
            if await _digit_tree(backend, name):
                skipped[name] = f"{name}/{MANIFEST_NAME} is missing, but {name}/ holds a digit tree"
                warnings.warn(f"product {name!r} skipped: {skipped[name]}", HiveWarning,
                              stacklevel=2)
            continue  # else a directory that is not a product
        try:
            found.append((name, name, parse_manifest(data, f"{name}/{MANIFEST_NAME}")))
        except UnsupportedSpec as err:
            skipped[name] = str(err)
            warnings.warn(f"product {name!r} skipped: {err}", HiveWarning, stacklevel=2)
    if not found and not skipped:
        if any(BASE_RE.match(d) for d in dirs):
            raise NotAHiveError(
                f"{backend}: a digit tree without {MANIFEST_NAME}: not a hive root"
            )
        raise NotAHiveError(f"{backend}: no {MANIFEST_NAME} and no products: not a morton-hive")
    return False, found, skipped


async def _digit_tree(backend: HiveIO, name: str) -> bool:
    """Whether directory ``name`` holds a digit tree (base-cell directories), as a product
    does. Cost: one LIST (a failed one says no)."""
    try:
        dirs, _ = await backend.list_dir(name)
    except Exception:
        return False
    return any(BASE_RE.match(d) for d in dirs)


async def load_hive(
    backend: HiveIO,
    leaves: LeafCache,
    verify: str = "lazy",
    window: str | None = None,
    aoi: Cells | None = None,
    computed: str = "missing",
) -> Hive:
    """Open every product; ``window`` scopes windowed products to that one window and
    ``aoi`` every level to the nodes whose subtrees overlap it; ``computed`` says which
    orders are computed (``computed.MODES``).

    Overview levels are only declared (no request) unless ``verify="open"``, which reads
    every level now, as moczarr does; otherwise ``settle`` reads one when it is needed.
    """
    bare, found, skipped = await _manifests(backend)
    if window is not None:
        validate_window(window)
        if not any(schedule(manifest) for _, _, manifest in found):
            raise OptionError(f"window={window!r}: {backend} has no windowed product")
    products = await asyncio.gather(
        *(_open_product(backend, leaves, n, r, m, verify, window, aoi, computed)
          for n, r, m in found)
    )
    return Hive(bare, list(products), skipped)


async def _open_product(backend: HiveIO, leaves: LeafCache, name: str, root: str,
                        manifest: Manifest, verify: str, window: str | None,
                        aoi: Cells | None, computed: str = "missing") -> Product:
    orders = manifest.source_orders or ((manifest.cell_order, None),)
    loaded, declared = await asyncio.gather(
        asyncio.gather(*(load_source(backend, leaves, name, root, manifest, verify, window, aoi,
                                     None if document is None else (order, document))
                         for order, document in orders)),
        product_folds(backend, root, manifest, computed),
    )
    (source, moc_ranks), regions = loaded[0], tuple(level for level, _ in loaded[1:])
    if manifest.source_orders:
        moc_ranks = _disjoint(manifest, [source, *regions])
        if verify == "open":
            await warn_if_stale(backend, leaves, source, moc_ranks)
    stored = [] if computed == "all" else declare_pyramid(source, moc_ranks)
    folded = computed_levels(source, stored, computed, declared, regions)
    product = Product(name, root, manifest, [source, *folded], stored)
    if verify == "open":
        for level in list(product.pending):
            await settle(backend, leaves, product, level, verify, aoi)
    return product


def _disjoint(manifest: Manifest, levels: list[Level]) -> np.ndarray:
    """Every node of a product whose leaves sit at several cell orders (``levels``: one
    per source order), ascending; a node two source orders list raises
    :class:`HiveFormatError` naming it (its leaf is at one order: which is not known). No
    I/O."""
    ranks: np.ndarray = np.sort(np.concatenate([level.node_ranks for level in levels]))
    twice = ranks[1:][ranks[1:] == ranks[:-1]]
    if twice.size:
        node = rank_to_decimal(int(twice[0]), manifest.shard_order)
        raise HiveFormatError(
            f"{manifest.where}: shard {node} is listed by the coverage of two source orders "
            f"({', '.join(doc for _, doc in manifest.source_orders)}); a leaf is at one order")
    return ranks
