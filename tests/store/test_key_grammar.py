"""The key grammar: a leaf array may be named like a word of it.

An array named ``c``, ``zarr.json``, ``0``, ``12``, ``a.b``, ``o7`` (any legal zarr v3 node
name) has chunk keys and a document that resolve to it and to nothing else, and reads the
values of the array it renames (the oracle: ``moczarr.open_hive`` on the original fixture;
for the view, the keys generated from each array's own path and grid).
"""

from __future__ import annotations

import dataclasses
import json
from asyncio import run as sync

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.hives import FIXTURES, rename_count
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore
from moczarr_store.hive.paths import is_product_name
from moczarr_store.hive.roster import Hive
from moczarr_store.view.tree import View

PROTO = default_buffer_prototype()

FABRICATED = {"morton", "cell_ids", "window", "window_start", "window_end"}
TRICKY = ["c", "zarr.json", "0", "12", "a.b", "o7", "c.0", "0.0", ".zarray", "all_time", "c c",
          "\x1b[31m", "é", "...a"]
NAMES = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)),
            min_size=1, max_size=8),
).filter(lambda s: s.strip(".") != "" and not s.startswith("__") and s not in FABRICATED)
PRODUCTS = st.one_of(st.sampled_from(["c", "o7", "0", "12", "zarr", "all_time", "atl06"]),
                     st.from_regex(r"[a-z0-9_-]{1,6}", fullmatch=True)).filter(is_product_name)
HIVES = {name: sync(MocHiveStore(FIXTURES / name).hive())
         for name in ("bare_versioned", "windowed", "pyramid2")}


def _renamed(hive: Hive, product: str, names: list[str]) -> Hive:
    """The hive with its first product renamed and its fields renamed in order."""
    first = hive.products[0]
    levels = []
    for level in first.levels:
        mapping = dict(zip(sorted(level.arrays), names, strict=False))
        arrays = {mapping.get(k, k): v for k, v in level.arrays.items()}
        levels.append(dataclasses.replace(level, product=product, arrays=arrays))
    renamed = dataclasses.replace(first, name=product, levels=levels, pending=[])
    return Hive(hive.bare, [renamed], {})


def _chunk_keys(path: str, grid: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    corners = {tuple(0 for _ in grid), tuple(n - 1 for n in grid)}
    return [(f"{path}/c/" + "/".join(map(str, c)), c) for c in corners if all(i >= 0 for i in c)]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(HIVES)), PRODUCTS, st.lists(NAMES, min_size=12, max_size=12,
                                                            unique=True))
@example("bare_versioned", "atl06", ["c", "zarr.json", "0", "12", "a.b", "o7", "c.0", "x", "y",
                                     "z", "w", "v"])
@example("bare_versioned", "c", ["c"] + [f"f{i}" for i in range(11)])
def test_every_chunk_key_resolves_to_its_own_array(fixture, product, names):
    view = View(_renamed(HIVES[fixture], product, names), {"chunking": "leaf"})
    assert any(p.rsplit("/", 1)[1] == names[0] for p in view.arrays)
    for path, array in view.arrays.items():
        if not array.grid:  # a scalar (the grid mapping) has no chunk: its fill value
            assert view.chunk(f"{path}/c") is None and view.chunk(f"{path}/c/0") is None
            continue
        for key, coords in _chunk_keys(path, array.grid):
            assert view.chunk(key) == (array, coords), key
        assert view.chunk(f"{path}/c") is None
        assert view.chunk(f"{path}/c/{array.grid[0]}" + "/0" * (len(array.grid) - 1)) is None
    for group in view.groups:
        assert view.chunk(f"{group}/c/0") is None


@pytest.mark.parametrize("name", ["c", "0", "12", "a.b", "o7", "c.0"])
def test_a_leaf_array_named_like_the_key_grammar_reads_its_own_values(hive_copy, name):
    """(A leaf array named ``zarr.json`` cannot exist on a file system beside its group's
    ``zarr.json``; the view-level test above covers that name.)"""
    root = hive_copy("bare_versioned")
    rename_count(root, name)
    want = moczarr.open_hive(str(FIXTURES / "bare_versioned"))["count"].values
    store = MocHiveStore(root)
    np.testing.assert_array_equal(xr.open_zarr(store, group="atl06/o7")[name].values, want)
    direct = zarr.open_array(store, path=f"atl06/o7/{name}", mode="r")  # its own zarr.json
    assert direct.shape == want.shape
    np.testing.assert_array_equal(direct[:], want)
    group = json.loads(sync(store.get("atl06/o7/zarr.json", PROTO)).to_bytes())
    assert group["node_type"] == "group" and name in group["consolidated_metadata"]["metadata"]
