"""Read buffers are taken again only once nothing refers to them: bytes a caller still
holds are never overwritten by a later read."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import zarr

from moczarr_store.io import buffers
from moczarr_store.io.buffers import BufferPool
from moczarr_store.view.arrays import AUTO_MAX_BYTES


@pytest.fixture(autouse=True)
def pool_small_buffers(monkeypatch):
    """Pool buffers of any size, kept at their own size (the store leaves those under
    128 KiB to the allocator and rounds the others up to 64 KiB)."""
    monkeypatch.setattr(buffers, "POOLED_MIN", 1)
    monkeypatch.setattr(buffers, "POOLED_STEP", 1)


def _kept(pool: BufferPool) -> list[np.ndarray]:
    return [b for kept in pool._kept.values() for b in kept]


def _address(view: memoryview) -> int:
    return np.frombuffer(view, np.uint8).__array_interface__["data"][0]


def test_a_buffer_is_taken_again_once_nothing_holds_it():
    pool = BufferPool()
    first = pool.take(4096)
    where = _address(first)
    del first
    assert _address(pool.take(4096)) == where


@pytest.mark.parametrize("holder", [
    lambda view: view,
    lambda view: view[10:20],
    lambda view: np.frombuffer(view, np.float32),
    lambda view: memoryview(view).cast("B"),
], ids=["the-view", "a-slice", "an-array-over-it", "a-view-of-the-view"])
def test_a_buffer_something_still_refers_to_is_never_handed_out(holder):
    pool = BufferPool()
    first = pool.take(4096)
    first[:] = b"\1" * 4096
    held = holder(first)
    del first
    second = pool.take(4096)
    assert _address(second) != _address(memoryview(held).cast("B"))
    second[:] = b"\2" * 4096
    assert bytes(memoryview(held).cast("B")) == b"\1" * len(memoryview(held).cast("B"))


def test_the_pool_keeps_no_more_than_its_limit_and_makes_room_for_a_new_size():
    pool = BufferPool(limit=3 * 4096)
    views = [pool.take(4096) for _ in range(4)]  # the fourth is beyond the limit
    assert len(_kept(pool)) == 3
    larger = pool.take(8192)  # no idle buffer of another size to give way: not kept
    assert sorted(b.nbytes for b in _kept(pool)) == [4096] * 3
    del views, larger
    larger = pool.take(8192)  # idle buffers of another size give way
    assert sorted(b.nbytes for b in _kept(pool)) == [4096, 8192]
    del larger
    assert _address(pool.take(8192)) in {b.__array_interface__["data"][0] for b in _kept(pool)}


def test_nothing_is_kept_where_reference_counts_cannot_tell(monkeypatch):
    monkeypatch.setattr(buffers, "_COUNTS_TELL", False)
    pool = BufferPool()
    pool.take(4096)
    assert _kept(pool) == []


def test_small_buffers_are_left_to_the_allocator(monkeypatch):
    monkeypatch.setattr(buffers, "POOLED_MIN", 8192)
    pool = BufferPool()
    pool.take(4096)
    assert _kept(pool) == []
    pool.take(8192)
    assert len(_kept(pool)) == 1


def test_threads_taking_buffers_at_once_never_share_one():
    """8 threads each take a buffer, fill it with their own byte, hold it while the others
    run and check it still holds that byte, 100 times: a buffer handed to two holders at once
    would show another thread's byte."""
    pool, errors = BufferPool(limit=4 * 65536), []

    def work(mark: int) -> None:
        for _ in range(100):
            view = pool.take(65536)
            view[:] = bytes([mark]) * 65536
            time.sleep(0.0002)  # the others run while it is held
            if bytes(view) != bytes([mark]) * 65536:
                errors.append(mark)
            del view

    threads = [threading.Thread(target=work, args=(m,)) for m in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []



def test_near_sizes_share_a_buffer_rounded_up_and_get_exactly_what_they_ask(monkeypatch):
    monkeypatch.setattr(buffers, "POOLED_STEP", 65536)
    pool = BufferPool()
    first = pool.take(130_000)
    assert len(first) == 130_000
    where = _address(first)
    del first
    second = pool.take(131_000)
    assert len(second) == 131_000 and _address(second) == where
    assert [b.nbytes for b in _kept(pool)] == [131_072]


def test_sizes_left_without_buffers_are_forgotten():
    pool = BufferPool(limit=8192)
    pool.take(4096)
    pool.take(8192)  # the idle 4096 gives way, and its size with it
    assert list(pool._kept) == [8192]


def test_a_scan_finds_each_idle_buffer_at_the_first_look(monkeypatch):
    """A scan takes buffers and lets them go in the same order (zarr copies each chunk out
    and drops it): with 64 kept, each take looks at one buffer, not at every held one."""
    pool = BufferPool(limit=64 * 4096)
    held = [pool.take(4096) for _ in range(64)]
    looks = []
    real = buffers._refs
    monkeypatch.setattr(buffers, "_refs", lambda kept, at: looks.append(at) or real(kept, at))
    for _ in range(3 * 64):  # three more passes over the kept buffers
        held.pop(0)
        held.append(pool.take(4096))
    assert len(looks) == 3 * 64
    assert len({_address(view) for view in held}) == 64


def test_the_default_pool_keeps_every_chunk_a_zarr_read_holds_at_once():
    """zarr holds ``async.concurrency`` chunks of a read at once, each until it is copied
    out; of chunking="auto"'s largest (``AUTO_MAX_BYTES``, what the uint64 coordinates of
    65,536-cell leaves take beside an int64 field) the default pool must keep them all, or
    each warm read takes the rest from new memory (the 64 MiB default kept 8 of 10)."""
    in_flight = zarr.config.get("async.concurrency")
    pool = BufferPool()
    first = [pool.take(AUTO_MAX_BYTES) for _ in range(in_flight)]
    addresses = {_address(view) for view in first}
    del first
    again = [pool.take(AUTO_MAX_BYTES) for _ in range(in_flight)]
    assert {_address(view) for view in again} == addresses
