"""The read plan: what a key maps to, as plain values, asserted without reading chunks;
and the executor's batched entry point."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.hives import FIXTURES
from zarr.abc.store import RangeByteRequest

from moczarr_store import MocHiveStore
from moczarr_store.errors import MalformedMetadataError, TruncatedChunkError
from moczarr_store.hive.leaves import Leaf
from moczarr_store.read.execute import execute, read_leaf_chunks
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
from moczarr_store.view.arrays import FieldArray

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


def _leaf_plans(store: MocHiveStore, leaf_path: str) -> list:
    """The plans of every field chunk of one leaf of ``sharded``'s order-7 level."""
    view = asyncio.run(store.view("atl06/o7"))
    level = view.arrays["atl06/o7/h_mean"].level
    index = next(i for i in range(level.n_nodes) if level.object_path(i, None) == leaf_path)
    session = store.session

    async def plans():
        leaf = await session.leaves.resolve(leaf_path, session.backend.get)
        fields = [a for a in view.arrays.values() if isinstance(a, FieldArray)
                  and a.level is level]
        per = fields[0].chunks_per_leaf
        return [plan_chunk(a, (c,), leaf) for a in fields
                for c in range(index * per, (index + 1) * per)]

    return asyncio.run(plans())


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
def test_read_leaf_chunks_is_execute_with_the_metadata_and_failures_in_place(
    hive_copy, chunking
):
    root = hive_copy("sharded")
    leaf_path = "4/4/4/1/1/44411.zarr"
    store = MocHiveStore(root, chunking=chunking)
    plans = _leaf_plans(store, leaf_path)
    want = [asyncio.run(execute(store.session, p)) for p in plans]
    fresh = MocHiveStore(root, chunking=chunking)
    got = asyncio.run(read_leaf_chunks(fresh.session, _leaf_plans(fresh, leaf_path)))
    assert [bytes(data) if data is not None else None for data, _ in got] == [
        bytes(d) if d is not None else None for d in want
    ]
    for plan, (_, meta) in zip(plans, got, strict=True):  # the leaf array's own document
        assert meta.to_json() == json.loads((root / plan.meta).read_text())
    victim = plans[0].object
    (root / victim).write_bytes((root / victim).read_bytes()[:-3])
    broken = MocHiveStore(root, chunking=chunking)
    got = asyncio.run(read_leaf_chunks(broken.session, _leaf_plans(broken, leaf_path)))
    failed = [r for r in got if isinstance(r, Exception)]
    assert failed and all(isinstance(r, TruncatedChunkError) and victim in str(r)
                          for r in failed)
    assert all(not isinstance(r, Exception) for p, r in zip(plans, got, strict=True)
               if p.object != victim)


def test_identical_malformed_leaf_metadata_is_refused_for_each_leaf(hive_copy):
    """Leaf array documents are remembered by content once checked; a malformed one is
    never remembered: every leaf holding it is refused, each named."""
    root = hive_copy("sharded")
    leaves = ["4/4/4/1/2/44412.zarr", "-4/1/1/3/3/-41133.zarr"]  # not the template
    store = MocHiveStore(root)
    plans = {leaf: _leaf_plans(store, leaf)[0] for leaf in leaves}
    for plan in plans.values():
        doc = json.loads((root / plan.meta).read_text())
        (root / plan.meta).write_text(json.dumps({**doc, "data_type": "float99"}))
    for plan in plans.values():
        with pytest.raises(MalformedMetadataError, match=plan.meta):
            asyncio.run(execute(store.session, plan))


@pytest.mark.parametrize("chunking", ["leaf", "auto"])
def test_the_frames_benchmark_follows_a_warm_read_from_get_to_the_system_call(chunking):
    """``tests/support/frames.py`` (the chunk path's depth) finds the chain it counts."""
    from support.frames import measure

    store = MocHiveStore(FIXTURES / "pyramid1", chunking=chunking)
    found = asyncio.run(measure(store, "atl06/o7/h_mean/c/0"))
    assert found is not None
    call, frames = found
    assert call == "preadv"
    assert frames[0][1] == "get" and frames[0][0].endswith("store.py")
    assert frames[-1][0].endswith("local.py") and len(frames) > 4
