"""Opening reads a constant number of objects, whatever the number of leaves."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, copy_leaf

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal

SHARD_ORDER = 5


def _coverage_of(n_nodes: int, first: str) -> dict:
    """A root MOC listing ``n_nodes`` consecutive order-5 nodes from ``first`` on."""
    ranks = np.arange(decimal_to_rank(first), decimal_to_rank(first) + n_nodes)
    ranges, start = [], ranks[0]
    for prev, rank in zip(ranks[:-1], ranks[1:], strict=True):
        if rank >> 10 != prev >> 10:  # a new base cell starts a new range
            ranges.append([rank_to_decimal(int(start), 5), rank_to_decimal(int(prev), 5)])
            start = rank
    ranges.append([rank_to_decimal(int(start), 5), rank_to_decimal(int(ranks[-1]), 5)])
    return {"spec": "morton-moc/1", "encoding": "ranges", "order": SHARD_ORDER, "ranges": ranges}


def _synthetic_10k(root) -> None:
    """10,000 listed nodes whose first is a copy of a real leaf; the rest do not exist."""
    (root / "coverage.moc").write_text(json.dumps(_coverage_of(10_000, "111111")))
    copy_leaf(root / "4/4/4/1/1/1/444111.zarr", root / "1/1/1/1/1/1/111111.zarr")


def _stored_coordinates(root, level) -> int:
    """How many of ``morton`` / ``cell_ids`` the level's template object stores (their
    metadata is read at open, to check they are the coordinates the store computes)."""
    group = root / level.template_data / str(level.cell_order)
    return sum((group / name / "zarr.json").is_file() for name in ("morton", "cell_ids"))


def _open_requests(root, **options) -> tuple[int, MocHiveStore]:
    store = MocHiveStore(root, **options)
    xr.open_zarr(store, group="atl06/o7")
    return store.request_stats.total, store


def test_open_requests_do_not_grow_with_the_number_of_leaves(hive_copy):
    root = hive_copy("bare_versioned")
    few, _ = _open_requests(root)
    _synthetic_10k(root)
    many, store = _open_requests(root)
    product = asyncio.run(store.hive()).products[0].levels[0]
    assert product.n_nodes == 10_000
    n, coords = len(product.arrays), _stored_coordinates(root, product)
    assert coords == 1  # bare_versioned's leaves store morton, not cell_ids
    # manifest + aggregation.yaml (the manifest declares no folds: the writer's config
    # does) + coverage + one stamp + group zarr.json + one per array and stored coordinate
    # (named by the stamp's content hashes) and one listing of the group (concurrent with
    # them: the authority on which arrays exist), then the writer-run sample: the 3 other
    # stamps of the 4 leaves, and the arrays of 444112's second run (run 2)
    assert few == 5 + n + coords + 1 + 3 + n
    # 10,000 nodes: the sample is 7 more stamps (all absent), never more
    assert many == 5 + n + coords + 1 + 7
    assert store.request_stats.counts["list"] == 1


def test_a_stamp_without_content_hashes_costs_one_listing(hive_copy):
    root = hive_copy("bare_versioned")
    stamp = root / "4/4/4/1/1/1/444111.zarr/zarr.json"
    doc = json.loads(stamp.read_text())
    del doc["attributes"]["morton_hive_commit"]["content_hashes"]
    stamp.write_text(json.dumps(doc))
    total, store = _open_requests(root)
    level = asyncio.run(store.hive()).products[0].levels[0]
    n = len(level.arrays) + _stored_coordinates(root, level)
    assert total == 6 + n + 3 + len(level.arrays)  # as above
    assert store.request_stats.counts["list"] == 1
    expected = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group="atl06/o7")
    xr.testing.assert_identical(xr.open_zarr(store, group="atl06/o7").load(), expected.load())


def _writer_runs(level) -> tuple[int, int]:
    """``(objects, writer runs)`` of a level of at most 8 objects, read from the fixture on
    disk: a versioned object's run is its ``current`` run id, an unversioned one its own."""
    objects = [path for _, _, path in level.object_pairs()]
    assert len(objects) <= 8  # every object is in the open's writer-run sample
    runs = set()
    for path in objects:
        stamp = json.loads((FIXTURES / "pyramid2" / path / "zarr.json").read_text())
        current = stamp["attributes"]["morton_hive_commit"].get("current")
        runs.add(current.rsplit("-", 1)[0] if current else path)
    return len(objects), len(runs)


def _schema_requests(level) -> int:
    """One stamp, the group's zarr.json, one zarr.json per array and stored coordinate, one
    listing of the group, then every other object's stamp and one zarr.json per array of
    each further run."""
    objects, runs = _writer_runs(level)
    first = 2 + len(level.arrays) + _stored_coordinates(FIXTURES / "pyramid2", level) + 1
    return first + (objects - 1) + (runs - 1) * len(level.arrays)


def test_overview_levels_are_read_only_when_a_path_needs_them():
    store = MocHiveStore(FIXTURES / "pyramid2", computed_orders="none")
    zarr.open_group(store, path="atl06/o2", mode="r")
    opened = store.request_stats.total
    source, *overviews = asyncio.run(store.hive()).products[0].levels
    o2 = next(level for level in overviews if level.cell_order == 2)
    # manifest + coverage, the source level's schema, then only o2's
    assert opened == 2 + _schema_requests(source) + _schema_requests(o2)
    # the root document consolidates every level: all of them are read for it
    assert store.request_stats.total == 2 + sum(_schema_requests(lv) for lv in (source, *overviews))
    # read out of order, the levels still stand in declared order
    eager = MocHiveStore(FIXTURES / "pyramid2", verify="open", computed_orders="none")
    assert [lv.path for lv in asyncio.run(eager.hive()).products[0].levels] == [
        lv.path for lv in (source, *overviews)
    ]
    children = [asyncio.run(s.view()).children("atl06") for s in (store, eager)]
    assert children[0] == children[1]


def test_xarray_default_open_reads_every_level_once_and_values_do_not_change():
    lazy = MocHiveStore(FIXTURES / "pyramid2", computed_orders="none")
    ds = xr.open_zarr(lazy, group="atl06/o3")
    levels = asyncio.run(lazy.hive()).products[0].levels
    assert lazy.request_stats.total == 2 + sum(_schema_requests(lv) for lv in levels)
    eager = MocHiveStore(FIXTURES / "pyramid2", verify="open", computed_orders="none")
    xr.testing.assert_equal(ds.load(), xr.open_zarr(eager, group="atl06/o3").load())


@pytest.mark.parametrize("key", ["atl06/o3/count/c/0", "atl06/o3/count/zarr.json"])
def test_a_key_inside_an_unread_level_reads_that_level_first(key):
    from zarr.buffer import default_buffer_prototype

    cold = MocHiveStore(FIXTURES / "pyramid2")
    warm = MocHiveStore(FIXTURES / "pyramid2")
    asyncio.run(warm.hive())
    prototype = default_buffer_prototype()
    got, want = (asyncio.run(s.get(key, prototype)) for s in (cold, warm))
    assert want is not None
    assert got.to_bytes() == want.to_bytes()


def test_reads_beyond_open_touch_only_the_leaves_they_need(hive_copy):
    root = hive_copy("bare_versioned")
    _synthetic_10k(root)
    _, store = _open_requests(root, chunking="leaf")  # a lookup: one leaf per chunk
    opened = store.request_stats.counts.copy()
    ds = xr.open_zarr(store, group="atl06/o7")
    with pytest.warns(HiveWarning, match="111112.zarr has no commit stamp"):
        assert int(ds["count"][:32].sum()) > 0  # rows of the first two nodes
    read = store.request_stats.counts - opened
    # one chunk GET for the template leaf (its stamp is cached), one stamp GET for the
    # absent second leaf; the level's first absent leaf has the directories of the run of
    # nodes from it listed once (its warning says how many are missing there): a few
    # LISTs, never a request per leaf of the 10,000
    assert read["get"] + read["get_range"] == 2, read
    assert read["list"] <= 8, read


def test_an_open_parses_each_array_document_of_its_writer_runs_once(monkeypatch):
    """The template is one object of a writer run, the runs sampled at open often hold
    the same array documents: each distinct one is parsed by zarr once (fields of one
    data type share theirs), and every run's
    chunks are then read without a look at their array metadata."""
    from moczarr_store import state
    from moczarr_store.hive import arraymeta

    state.reset()  # nothing parsed before
    parsed = []
    check = arraymeta.check_array
    monkeypatch.setattr(arraymeta, "check_array",
                        lambda meta, where: parsed.append(where) or check(meta, where))
    root = FIXTURES / "bare_versioned"
    store = MocHiveStore(root, computed_orders="none")
    (level,) = asyncio.run(store.hive()).products[0].levels
    runs = [run for run in level.encodings if run.immutable]
    assert len(runs) == 2 and runs[0].arrays == runs[1].arrays  # what the test is about
    # the template's distinct documents (its stored coordinates' too), none of the other
    # run's: documents are kept by their bytes
    group = root / level.template_data / str(level.cell_order)
    distinct = {doc.read_bytes() for doc in group.glob("*/zarr.json")}
    assert len(parsed) == len(distinct) < len(runs[0].arrays)
    assert all(key.startswith(level.template_data) for key in parsed)
    for run in runs:
        for name in run.arrays:
            key = f"{run.prefix}/{level.cell_order}/{name}/zarr.json"
            assert store.session.leaf_metas.peek(key) is not None, key


def _digits(rank: int) -> str:
    """The five digits of an order-5 node of rank ``rank`` within its base cell."""
    return rank_to_decimal(4**5 + rank, 5)[1:]


def _reference_moc(nodes: np.ndarray, order: int, limit: int) -> str:
    """A level's ``coverage_moc`` text computed the plain way (sort and dedupe at each
    order tried), independent of the store's one-pass runs."""
    nodes = np.unique(nodes)
    while True:
        cut = np.flatnonzero(np.diff(nodes) != 1)
        firsts, lasts = nodes[np.r_[0, cut + 1]], nodes[np.r_[cut, nodes.size - 1]]
        text = f"{order}/" + " ".join(f"{a}-{b}" if b > a else f"{a}"
                                      for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True))
        if order == 0 or len(text) <= limit:
            return text
        nodes, order = np.unique(nodes >> 2), order - 1


def test_opening_a_large_coverage_never_hashes_its_nodes(hive_copy, monkeypatch):
    """numpy 2.x's ``np.unique`` hashes: on 10 M listed nodes it took 17 s of a 27 s open.
    Ranks are ascending already, so the open path (the root coverage, the pyramid's
    ancestor nodes, each level group's ``coverage_moc``) must never call it; the
    attributes stay what sorting and deduplicating give. Every node of order 5 is listed
    (12,288, in 12 ranges), some of them in many one-node ranges, so the group's
    ``coverage_moc`` is cut to coarser orders."""
    from moczarr_store.view import tree

    root = hive_copy("pyramid1")
    ranges = [[f"{b}11111", f"{b}44444"] for b in (1, 2, 3, 5, 6, -1, -2, -3, -5, -6)]
    ranges += [[f"4{d}", f"4{d}"] for d in map(_digits, range(1024))]
    ranges += [[f"-4{d}", f"-4{d}"] for d in map(_digits, range(0, 1024, 2))]
    moc = json.loads((root / "coverage.moc").read_text())
    (root / "coverage.moc").write_text(json.dumps({**moc, "ranges": ranges}))
    monkeypatch.setattr(tree, "MAX_MOC_CHARS", 2048)  # the store cuts to coarser orders

    def refused(*args, **kwargs):
        raise AssertionError("np.unique on the open path")

    monkeypatch.setattr(np, "unique", refused)
    store = MocHiveStore(root)
    group = zarr.open_group(store, mode="r")  # every level, consolidated
    levels = asyncio.run(store.hive()).products[0].levels
    monkeypatch.undo()
    assert levels[0].n_nodes == 12 * 1024 - 512
    # the source, two overview levels and the other orders computed (made at open too)
    assert len([lv for lv in levels if lv.artifact != "computed"]) == 3
    source = levels[0]
    for level in levels:  # a computed level's nodes: the source nodes' distinct ancestors
        if level.artifact == "computed":
            up = np.uint64(2 * (source.node_order - level.node_order))
            np.testing.assert_array_equal(level.node_ranks, np.unique(source.node_ranks >> up))
    for level in levels:
        nodes = level.node_ranks.astype(np.int64) - 4**level.node_order
        want = _reference_moc(nodes, level.node_order, 2048)
        assert group[level.path].attrs["morton_hive_store"]["coverage_moc"] == want
