"""The process state (:mod:`moczarr_store.state`): one owner of what a process keeps
across stores, made on first use, let go at ``reset``, never shared with a forked child."""

from __future__ import annotations

import os

import pytest
import zarr
from support.hives import FIXTURES

from moczarr_store import MocHiveStore, mapped, state


def test_a_part_is_made_once_per_process_and_let_go_at_reset():
    closed = []
    part = state.Part("test part", list, closed.append)
    made = part()
    assert part() is made and "test part" in state.parts()
    state.reset()
    assert closed == [made] and "test part" not in state.parts()
    assert part() is not made


def test_reading_a_span_keeps_its_state_in_the_owner_and_reset_lets_it_go():
    array = zarr.open_array(MocHiveStore(FIXTURES / "paged", chunking=2),
                            path="atl06/o8/h_mean", mode="r")
    array[:]
    array[:]  # warm: mapped where spans can be
    if mapped.available():
        assert mapped.KEPT().spans
    state.reset()
    assert not mapped.KEPT().spans


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_a_forked_child_never_uses_its_parent_s_state():
    """A lock another thread of the parent held when it forked is never released in the
    child: the child's state is its own, so its first use does not wait forever."""
    kept = mapped.KEPT()
    with kept.lock:  # held across the fork, as a reading thread may hold it
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                mine = mapped.KEPT()
                code = 0 if mine is not kept and mine.lock.acquire(timeout=5) else 2
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert mapped.KEPT() is kept  # the parent's is untouched


def test_the_cache_table_names_every_part_and_lists_each_cache_once():
    import importlib
    import pkgutil
    from pathlib import Path

    import moczarr_store

    for module in pkgutil.walk_packages(moczarr_store.__path__, "moczarr_store."):
        if not module.name.startswith(("moczarr_store.serve", "moczarr_store.refs")):
            importlib.import_module(module.name)  # the extras' modules declare no part
    table = (Path(moczarr_store.__file__).parent / "ARCHITECTURE.md").read_text()
    table = table.split("## Caches and process state", 1)[1]
    rows = [line.split("|")[1:3] for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| Cache ")]
    for column in zip(*rows, strict=True):  # each cache, and where it lives, once
        assert len(column) == len(set(column)) > 20
    missing = [name for name in state.declared() if f'("{name}")' not in table]
    assert missing in ([], ["test part"])  # the one another test declares
