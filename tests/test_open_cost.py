"""Opening reads a constant number of objects, whatever the number of leaves."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import xarray as xr
from zarr.core.sync import sync

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal

SHARD_ORDER = 5


def _coverage_of(n_shards: int, first: str) -> dict:
    """A root MOC listing ``n_shards`` consecutive order-5 shards from ``first`` on."""
    ranks = np.arange(decimal_to_rank(first), decimal_to_rank(first) + n_shards)
    ranges, start = [], ranks[0]
    for prev, rank in zip(ranks[:-1], ranks[1:], strict=True):
        if rank >> 10 != prev >> 10:  # a new base cell starts a new range
            ranges.append([rank_to_decimal(int(start), 5), rank_to_decimal(int(prev), 5)])
            start = rank
    ranges.append([rank_to_decimal(int(start), 5), rank_to_decimal(int(ranks[-1]), 5)])
    return {"spec": "morton-moc/1", "encoding": "ranges", "order": SHARD_ORDER, "ranges": ranges}


def _synthetic_10k(root) -> None:
    """10,000 listed shards whose first is a copy of a real leaf; the rest do not exist."""
    (root / "coverage.moc").write_text(json.dumps(_coverage_of(10_000, "111111")))
    shutil.copytree(root / "4/4/4/1/1/1/444111.zarr", root / "1/1/1/1/1/1/111111.zarr")


def _open_requests(root) -> tuple[int, MocHiveStore]:
    store = MocHiveStore(root)
    xr.open_zarr(store, group="atl06/o7")
    return store.request_stats.total, store


def test_open_requests_do_not_grow_with_the_number_of_leaves(hive_copy):
    root = hive_copy("bare_versioned")
    few, _ = _open_requests(root)
    _synthetic_10k(root)
    many, store = _open_requests(root)
    product = sync(store.hive()).products[0].levels[0]
    assert product.n_shards == 10_000
    assert many == few
    # manifest + coverage + one stamp + group listing + group zarr.json + one per array
    assert few == 5 + len(product.arrays)


def test_reads_beyond_open_touch_only_the_leaves_they_need(hive_copy):
    root = hive_copy("bare_versioned")
    _synthetic_10k(root)
    total, store = _open_requests(root)
    ds = xr.open_zarr(store, group="atl06/o7")
    with pytest.warns(HiveWarning, match="111112.zarr has no commit stamp"):
        assert int(ds["count"][:32].sum()) > 0  # rows of the first two shards
    # one chunk GET for the template leaf (its stamp is cached), one stamp GET for the
    # absent second leaf, nothing else
    assert store.request_stats.total == total + 2
