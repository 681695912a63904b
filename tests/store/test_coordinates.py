"""Fabricated coordinates: ``morton`` and ``cell_ids`` equal moczarr's under every chunking,
and chunks computed into pooled buffers keep their values while they are held.

Expected values come from moczarr (``morton``) and first principles (a NESTED id is
``(word >> shift) - 4**order``; on the sphere row ``r`` is NESTED id ``r``).
"""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest
import zarr
from support.hives import FIXTURES, fixture_roots
from support.hostile import pristine, pristine_references
from zarr.core.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore

FIXTURE_NAMES = [root.name for root in fixture_roots()]
GROUPS = [(name, g) for name in FIXTURE_NAMES for g in pristine(name).groups]
CHUNKINGS = ["auto", "leaf", "shard", "inner", "span", 3]


def _nested(words: np.ndarray, order: int) -> np.ndarray:
    return (words >> np.uint64(6 + 2 * (27 - order))) - np.uint64(4**order)


def _open(name: str, path: str, **options) -> zarr.Group:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported elsewhere
        return zarr.open_group(MocHiveStore(FIXTURES / name, verify="open", **options),
                               path=path, mode="r")


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize(("name", "group"), GROUPS, ids=[f"{n}-{g.path}" for n, g in GROUPS])
def test_coordinates_are_moczarr_s_under_every_chunking(name, group, chunking):
    level = _open(name, group.path, chunking=chunking)
    morton, cell_ids = level["morton"], level["cell_ids"]
    assert (morton.dtype, cell_ids.dtype) == (np.dtype("uint64"), np.dtype("uint64"))
    words = morton[:]
    np.testing.assert_array_equal(cell_ids[:], _nested(words, group.order))
    if morton.shape[0] > 2:  # a part in the middle: chunks read in part
        np.testing.assert_array_equal(morton[1:-1], words[1:-1])
        np.testing.assert_array_equal(cell_ids[1:-1], _nested(words[1:-1], group.order))
    # the rows are those of every window moczarr reads, each window's in its order
    refs = [pristine_references(name)[(group.path, w)] for w in group.windows or (None,)]
    assert len(set(words.tolist())) == words.size
    assert set(words.tolist()) == {int(w) for ref in refs for w in ref.morton}
    where = {int(w): i for i, w in enumerate(words)}
    for ref in refs:
        assert np.all(np.diff([where[int(w)] for w in ref.morton]) > 0)


def test_pooled_coordinate_chunks_keep_their_values_while_held():
    """Chunks of 64 leaves of 1,024 cells (512 KiB: pooled) of the whole sphere, read all at
    once three times: the first round's chunks are held while the second is computed (a
    held buffer is never taken again), then let go and the third reuses their memory."""
    store = MocHiveStore(FIXTURES / "paged", geometry="sphere", chunking=64)
    level = zarr.open_group(store, path="atl06/o8", mode="r")
    cells = 12 * 4**8
    proto = default_buffer_prototype()

    def read_all(name: str) -> list[np.ndarray]:
        keys = [f"atl06/o8/{name}/c/{i}" for i in range(level[name].nchunks)]
        got = asyncio.run(_gather(store, keys, proto))
        return [np.frombuffer(b.as_numpy_array(), "<u8") for b in got]

    def check(chunks: dict[str, list[np.ndarray]]) -> None:
        cell_ids = np.concatenate(chunks["cell_ids"])[:cells]
        morton = np.concatenate(chunks["morton"])[:cells]
        np.testing.assert_array_equal(cell_ids, np.arange(cells, dtype=np.uint64))
        np.testing.assert_array_equal(_nested(morton, 8), cell_ids)
        np.testing.assert_array_equal(morton & np.uint64(0x3F), np.full(cells, 8, np.uint64))

    first = {n: read_all(n) for n in ("morton", "cell_ids")}
    second = {n: read_all(n) for n in ("morton", "cell_ids")}
    check(first)
    check(second)
    assert store.session.coordinate_buffers._bytes > 0  # the chunks came from the pool
    del first
    check({n: read_all(n) for n in ("morton", "cell_ids")})
    check(second)


async def _gather(store: MocHiveStore, keys: list[str], proto) -> list:
    got = await asyncio.gather(*(store.get(k, proto) for k in keys))
    assert all(b is not None for b in got)
    return got
