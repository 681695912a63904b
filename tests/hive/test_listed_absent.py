"""A root coverage listing a million leaves of which a thousand exist.

zagg wrote the one-cell leaves of ``fixtures/_onecell``; its root ``coverage.moc`` is
replaced by one listing 1,000,000 consecutive nodes, and 1,000 of them (every 1,000th;
100 for the loopback S3 server) get a copy of its first leaf (``copy_leaf``: its stamp
names its node). A scan of a field learns which leaves of each chunk exist from listings
of the digit tree, so its requests are bounded by the leaves that exist, not by the
million listed; it reads moczarr's values there, the fill value elsewhere, with one
warning saying how many are missing.
"""

from __future__ import annotations

import json
import shutil
import warnings

import moczarr
import numpy as np
import pytest
import zarr
from support.hives import FIXTURES, copy_leaf
from support.servers import s3_options, s3_server  # noqa: F401, F811  (a fixture)

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal
from moczarr_store.hive.paths import leaf_path

LISTED, EVERY = 1_000_000, 1_000
ORDER = 10
FIRST = "11111111111"  # the first leaf zagg wrote, and the first node listed
GROUP = "atl06/o10"


def _hive(tmp_path_factory, every: int):
    """The hive (a copy every ``every`` rows), by row the values moczarr reads from the
    leaves that exist, and how many exist."""
    root = tmp_path_factory.mktemp("listed") / "_onecell"
    shutil.copytree(FIXTURES / "_onecell", root)
    first = decimal_to_rank(FIRST)
    moc = json.loads((root / "coverage.moc").read_text())
    moc["ranges"] = [[FIRST, rank_to_decimal(first + LISTED - 1, ORDER)]]
    (root / "coverage.moc").write_text(json.dumps(moc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = moczarr.open_hive(str(FIXTURES / "_onecell")).load()
    ranks = [decimal_to_rank(moczarr.morton_decimal(int(w))) for w in clean["morton"].values]
    want = np.zeros(LISTED, dtype=clean["count"].dtype)  # count's fill value
    has = np.zeros(LISTED, dtype=bool)
    for rank, value in zip(ranks, clean["count"].values, strict=True):
        if first <= rank < first + LISTED:  # zagg's leaves listed (all but one)
            want[rank - first], has[rank - first] = value, True
    source = root / leaf_path(FIRST)
    for row in range(every, LISTED, every):
        copy_leaf(source, root / leaf_path(rank_to_decimal(first + row, ORDER)))
        want[row], has[row] = want[0], True
    return root, want, int(has.sum())


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    return _hive(tmp_path_factory, EVERY)


def _scan(store: MocHiveStore) -> tuple[np.ndarray, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = zarr.open_array(store, path=f"{GROUP}/count", mode="r")[:]
    return got, [str(w.message) for w in caught if issubclass(w.category, HiveWarning)]


def _check(store: MocHiveStore, want: np.ndarray, existing: int) -> None:
    got, said = _scan(store)
    np.testing.assert_array_equal(got, want)
    assert len(said) == 1 and "no commit stamp" in said[0], said
    missing = store.problems()[(GROUP, "absent")].count
    assert missing == LISTED - existing
    # bounded by the leaves that exist (their stamps, metadata, chunks and the directories
    # on their way), never a request per listed leaf
    assert store.request_stats.total < 40 * existing, store.request_stats.counts


def test_a_scan_of_a_million_listed_leaves_costs_what_exists(hive):
    root, want, existing = hive
    _check(MocHiveStore(root), want, existing)


def test_the_same_scan_from_s3(tmp_path_factory, s3_server):  # noqa: F811
    """The same million listed leaves, 100 of them existing: moto answers each LIST by
    looking through every key it holds, so fewer copies keep the test short."""
    root, want, existing = _hive(tmp_path_factory, 10 * EVERY)
    s3_server.upload_tree(root, "listed/_onecell")
    store = MocHiveStore("s3://hive/listed/_onecell", storage_options=s3_options(s3_server.url))
    _check(store, want, existing)
