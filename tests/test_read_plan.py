"""The read plan: what a key maps to, as plain values, asserted without reading chunks."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import FIXTURES
from zarr.abc.store import RangeByteRequest

from moczarr_store import MocHiveStore
from moczarr_store.hive.leaves import Leaf
from moczarr_store.read.plan import (
    Absent,
    Document,
    Fabricate,
    InnerRange,
    Passthrough,
    Reframe,
    plan_chunk,
    plan_key,
)

LEAF = "4/4/4/1/1/1/444111.zarr"


def _current(root, leaf: str) -> str:
    stamp = json.loads((root / leaf / "zarr.json").read_text())
    return stamp["attributes"]["morton_hive_commit"]["current"]


def test_a_field_chunk_maps_to_its_leaf_object_without_io():
    store = MocHiveStore(FIXTURES / "bare_versioned")
    view = asyncio.run(store.view("atl06/o7"))
    array = view.arrays["atl06/o7/h_mean"]
    before = store.request_stats.total
    version = _current(FIXTURES / "bare_versioned", LEAF)
    leaf = Leaf(LEAF, "stamped", version)
    plan = plan_chunk(array, (0,), leaf, RangeByteRequest(4, 8))
    assert plan == Passthrough(
        array="atl06/o7/h_mean",
        coords=(0,),
        leaf=LEAF,
        object=f"{LEAF}/{version}/7/h_mean/c/0",
        meta=f"{LEAF}/{version}/7/h_mean/zarr.json",
        immutable=True,
        check=array.check,
        byte_range=RangeByteRequest(4, 8),
    )
    assert store.request_stats.total == before  # planning read nothing


def test_an_unversioned_leaf_is_not_immutable():
    store = MocHiveStore(FIXTURES / "legacy")
    array = asyncio.run(store.view("atl06/o7")).arrays["atl06/o7/count"]
    plan = plan_chunk(array, (0,), Leaf(LEAF, "stamped", None))
    assert plan.object == f"{LEAF}/7/count/c/0" and plan.immutable is False


@pytest.mark.parametrize(("chunking", "kind"), [("shard", Passthrough), ("leaf", Reframe),
                                                ("inner", InnerRange)])
def test_the_chunking_mode_chooses_the_plan_kind(chunking, kind):
    store = MocHiveStore(FIXTURES / "sharded", chunking=chunking)
    plan = asyncio.run(plan_key(store.session, "atl06/o7/h_mean/c/0"))
    assert type(plan) is kind
    assert plan.object.startswith("4/4/4/1/1/44411.zarr/run-")
    assert plan.object.endswith("/7/h_mean/c/0")
    if chunking == "inner":
        assert plan.part == 0


def test_unstamped_leaves_plan_as_absent_with_the_problem():
    store = MocHiveStore(FIXTURES / "bare_versioned")
    array = asyncio.run(store.view("atl06/o7")).arrays["atl06/o7/count"]
    plan = plan_chunk(array, (0,), Leaf(LEAF, "debris"))
    assert plan == Absent(f"leaf {LEAF}: debris", "debris", "atl06/o7", LEAF, "moc")


def test_documents_coordinates_and_foreign_keys():
    store = MocHiveStore(FIXTURES / "bare_versioned")
    session = store.session
    assert asyncio.run(plan_key(session, "atl06/o7/zarr.json")) == Document("atl06/o7")
    morton = asyncio.run(plan_key(session, "atl06/o7/morton/c/0"))
    assert morton == Fabricate("atl06/o7/morton", (0,))
    for key in ("atl06/o7/h_mean/c/99", "atl06/o7/.zarray", "nope/zarr.json", "atl06/o7/c/0"):
        assert isinstance(asyncio.run(plan_key(session, key)), Absent), key
