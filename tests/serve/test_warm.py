"""serve's warm-up: the coarse computed orders folded at start (``serve/warm.py``)."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
import zarr
from support.serving import FIXTURES, Served, fetch
from zarr.core.sync import sync

from moczarr_store import MocHiveStore
from moczarr_store.serve import create_app
from moczarr_store.serve.generations import Generations
from moczarr_store.serve.warm import warm

COARSE = [f"atl06/o{k}/{f}" for k in (0, 1, 2) for f in ("count", "h_max")]


@pytest.mark.parametrize(("warm_leaves", "warmed"), [(1000, True), (2, False)])
def test_the_warm_up_folds_the_coarse_orders_within_its_leaf_reads(warm_leaves, warmed):
    """pyramid1: 3 leaves; o0-o2 keep their nodes at order 0, and are all folded again
    from o2's chunk. 2 leaf reads are fewer than one field needs: nothing is warmed."""
    generations = Generations(lambda: MocHiveStore(FIXTURES / "pyramid1"), 600)
    sync(warm(generations, warm_leaves))
    store = generations.current().store
    arrays = [zarr.open_array(store, path=p, mode="r") for p in COARSE]
    before = store.request_stats.total
    got = [a[:] for a in arrays]
    assert (store.request_stats.total == before) is warmed
    fresh = MocHiveStore(FIXTURES / "pyramid1")
    for path, values in zip(COARSE, got, strict=True):
        np.testing.assert_array_equal(values, zarr.open_array(fresh, path=path, mode="r")[:])


def test_serve_warms_up_in_the_background_at_start(caplog):
    app = create_app(FIXTURES / "pyramid1", warm_leaves=1000)
    with caplog.at_level(logging.INFO, logger="moczarr_store.serve"), \
            Served(app, lifespan="on") as server:
        deadline = time.monotonic() + 120  # a loaded machine: the outcome, not its speed
        while "computed orders warmed" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.05)
        store = server.store
        before = store.request_stats.total
        status, _, body = fetch(server, "/atl06/o0/count/c/0")
        assert status == 200 and store.request_stats.total == before
    assert "atl06/o2/count, atl06/o2/h_max" in caplog.text
    want = zarr.open_array(MocHiveStore(FIXTURES / "pyramid1"), path="atl06/o0/count")[:]
    chunk = np.frombuffer(body, dtype=want.dtype.newbyteorder("<"))
    np.testing.assert_array_equal(chunk, want[: chunk.size])
