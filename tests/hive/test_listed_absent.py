"""A root coverage listing a million leaves of which a thousand exist, in every chunking.

zagg wrote the one-cell leaves of ``fixtures/_onecell``; its root ``coverage.moc`` is
replaced by one listing 1,000,000 consecutive nodes, and 1,000 of them (every 1,000th;
100 for the loopback S3 server) get a copy of its first leaf (``copy_leaf``: its stamp
names its node). A read of a field learns which of its leaves exist from listings of the
digit tree once the level's stamps read mostly absent, so its requests are bounded by the
leaves that exist, not by the million listed, whatever the chunking; it reads moczarr's
values there, the fill value elsewhere, with one warning saying how many listed leaves a
listing found missing. A leaf written later is found after ``refresh()``. The same holds
for ``verify="open"`` (which checks every listed leaf at open) and for a stored pyramid's
overview objects (``pyramid1``, its coverage listing the whole sphere).
"""

from __future__ import annotations

import asyncio
import json
import re
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
from moczarr_store.hive.walk import existing_nodes

LISTED, EVERY = 1_000_000, 1_000
ORDER = 10
FIRST = "11111111111"  # the first leaf zagg wrote, and the first node listed
GROUP = "atl06/o10"


def _hive(tmp_path_factory, every: int, listed: int = LISTED):
    """The hive (``listed`` nodes, a copy every ``every`` rows), by row the values moczarr
    reads from the leaves that exist, and how many exist."""
    root = tmp_path_factory.mktemp("listed") / "_onecell"
    shutil.copytree(FIXTURES / "_onecell", root)
    first = decimal_to_rank(FIRST)
    moc = json.loads((root / "coverage.moc").read_text())
    moc["ranges"] = [[FIRST, rank_to_decimal(first + listed - 1, ORDER)]]
    (root / "coverage.moc").write_text(json.dumps(moc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = moczarr.open_hive(str(FIXTURES / "_onecell")).load()
    ranks = [decimal_to_rank(moczarr.morton_decimal(int(w))) for w in clean["morton"].values]
    want = np.zeros(listed, dtype=clean["count"].dtype)  # count's fill value
    has = np.zeros(listed, dtype=bool)
    for rank, value in zip(ranks, clean["count"].values, strict=True):
        if first <= rank < first + listed:  # zagg's leaves listed (all but one)
            want[rank - first], has[rank - first] = value, True
    source = root / leaf_path(FIRST)
    for row in range(every, listed, every):
        copy_leaf(source, root / leaf_path(rank_to_decimal(first + row, ORDER)))
        want[row], has[row] = want[0], True
    return root, want, has


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    return _hive(tmp_path_factory, EVERY)


def _scan(store: MocHiveStore, rows: slice = slice(None)) -> tuple[np.ndarray, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = zarr.open_array(store, path=f"{GROUP}/count", mode="r")[rows]
    return got, [str(w.message) for w in caught if issubclass(w.category, HiveWarning)]


def _check(store: MocHiveStore, want: np.ndarray, has: np.ndarray,
           rows: slice = slice(None)) -> None:
    got, said = _scan(store, rows)
    np.testing.assert_array_equal(got, want[rows])
    # bounded by the leaves that exist (their stamps, metadata, chunks and the directories
    # on their way), never a request per listed leaf
    existing = int(has[rows].sum())
    assert store.request_stats.total < 40 * existing, store.request_stats.counts
    # one warning, saying how many of the level's listed leaves are missing, at least: what
    # one listing found, never more than are
    assert len(said) == 1 and "no commit stamp" in said[0], said
    found = re.search(rf"at least ([\d,]+) of the {has.size:,} leaves the level lists are "
                      r"missing \(one listing found them among the [\d,]+ around it\)", said[0])
    assert found, said
    assert 0 < int(found[1].replace(",", "")) <= has.size - has.sum()
    assert store.problems()[(GROUP, "absent")].count == has[rows].size - existing


def test_a_scan_of_a_million_listed_leaves_costs_what_exists(hive):
    root, want, has = hive
    _check(MocHiveStore(root), want, has)


WINDOW = slice(0, 4096)  # zarr asks for each chunk: a million one-cell chunks take minutes


@pytest.mark.parametrize("chunking", ["leaf", "shard", "inner", 2])
def test_a_read_one_leaf_a_chunk_costs_what_exists(hive, chunking):
    """Chunks of one leaf (or a few) learn absence from the same listings."""
    root, want, has = hive
    _check(MocHiveStore(root, chunking=chunking), want, has, WINDOW)


@pytest.mark.parametrize("chunking", ["auto", "leaf"])
def test_a_leaf_written_later_is_found_after_refresh(tmp_path_factory, chunking):
    """What listings said is kept as the stamps read are: a leaf written into a node
    they found absent is read after ``refresh()``, never as the fill value."""
    root, want, has = _hive(tmp_path_factory, EVERY, 4 * EVERY)
    store = MocHiveStore(root, chunking=chunking)
    _check(store, want, has)
    row = EVERY + EVERY // 2  # listed absent, in a run listed before
    copy_leaf(root / leaf_path(FIRST), root / leaf_path(rank_to_decimal(
        decimal_to_rank(FIRST) + row, ORDER)))
    store.refresh()
    got, _ = _scan(store)
    want = want.copy()
    want[row] = want[0]
    np.testing.assert_array_equal(got, want)


def test_the_same_scan_from_s3(tmp_path_factory, s3_server):  # noqa: F811
    """The same million listed leaves, 100 of them existing: moto answers each LIST by
    looking through every key it holds, so fewer copies keep the test short."""
    root, want, has = _hive(tmp_path_factory, 10 * EVERY)
    s3_server.upload_tree(root, "listed/_onecell")
    store = MocHiveStore("s3://hive/listed/_onecell", storage_options=s3_options(s3_server.url))
    _check(store, want, has)


def test_verify_open_costs_what_exists(tmp_path_factory):
    """``verify="open"`` reads every stamp the coverage lists at open, as moczarr does: the
    nodes without a directory are learned from the same listings, so its requests are
    bounded by the leaves that exist; the level's rows are those leaves, moczarr's values."""
    root, want, has = _hive(tmp_path_factory, EVERY, 100 * EVERY)
    store = MocHiveStore(root, verify="open")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first leaf zagg wrote is not listed: stale
        got = zarr.open_array(store, path=f"{GROUP}/count", mode="r")[:]
    np.testing.assert_array_equal(got, want[has])
    assert store.request_stats.total < 40 * int(has.sum()), store.request_stats.counts


FACES = ("-6", "-5", "-4", "-3", "-2", "-1", "1", "2", "3", "4", "5", "6")


@pytest.mark.parametrize("verify", ["lazy", "open"])
def test_an_overview_listing_many_absent_objects_costs_what_exists(tmp_path, verify):
    """zagg's ``pyramid1`` with its root coverage listing every order-5 shard of the sphere
    (12,288; 3 written): its order-3 overview objects (768 listed, 2 written) are learned
    absent from the same listings, so a scan of the overview asks what the clean fixture's
    asks plus a bounded number per object that exists; moczarr's values where it has rows,
    the fill value (with one warning) elsewhere."""
    root = tmp_path / "pyramid1"
    shutil.copytree(FIXTURES / "pyramid1", root)
    moc = json.loads((root / "coverage.moc").read_text())
    moc["ranges"] = [[face + "1" * 5, face + "4" * 5] for face in FACES]
    (root / "coverage.moc").write_text(json.dumps(moc))
    # the objects written are the clean fixture's (moczarr reads it faster)
    ref = moczarr.open_level(str(FIXTURES / "pyramid1"), 5, xr_kwargs={"chunks": None})

    def scan(at) -> tuple[MocHiveStore, np.ndarray, np.ndarray, list[str]]:
        store = MocHiveStore(at, verify=verify)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            count = zarr.open_array(store, path="atl06/o5/count", mode="r")[:]
            morton = zarr.open_array(store, path="atl06/o5/morton", mode="r")[:]
        return store, count, morton, [str(w.message) for w in caught]

    clean, _, _, _ = scan(FIXTURES / "pyramid1")
    store, count, morton, said = scan(root)
    want = dict(zip(ref["morton"].values.tolist(), ref["count"].values.tolist(), strict=True))
    has = np.isin(morton, ref["morton"].values)
    assert has.sum() == len(want)
    np.testing.assert_array_equal(count[has], [want[m] for m in morton[has].tolist()])
    assert (count[~has] == 0).all()  # count's fill value
    objects = sum(1 for _ in root.rglob("*.zarr"))  # leaves and overview objects
    assert store.request_stats.total <= clean.request_stats.total + 40 * objects, (
        store.request_stats.counts)
    if verify == "lazy":
        assert len(said) == 1 and "at least 766 of the 768 leaves the level lists" in said[0], said


def test_base_cells_are_learned_from_the_root_listing():
    """An order-0 overview's objects (``pyramid2``'s ``4/all.zarr``) sit in base-cell
    directories: their presence is learned from one listing of the root."""
    store = MocHiveStore(FIXTURES / "pyramid2")
    decimals = ["-6", "-4", "-1", "1", "4", "5"]  # zagg wrote under -4 and 4
    ranks = np.array([decimal_to_rank(d) for d in decimals], dtype=np.uint64)
    ranks.sort()
    backend = store.session.backend
    found = asyncio.run(existing_nodes(backend, "", ranks, 0, 1))
    assert {int(r) for r in ranks[found]} == {decimal_to_rank("-4"), decimal_to_rank("4")}
    one = np.array([decimal_to_rank("4")], dtype=np.uint64)  # a run of one base cell
    assert asyncio.run(existing_nodes(backend, "", one, 0, 1)).tolist() == [True]
    assert store.request_stats.counts["list"] == 2
