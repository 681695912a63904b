"""Kept spans told of a change by the kernel (:mod:`moczarr_store.io.watch`): a joined
chunk read warm, its files then changed by a writer, reads exactly what the hive holds
now (the values ``moczarr`` reads), as when each file is checked with ``stat``: unlinked,
replaced by a rename, its directory renamed away, rewritten in place, the event queue
overflowed, the bound of watches reached, and in a forked child."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import moczarr
import numpy as np
import pytest
import zarr
from support.hives import reversed_shard
from support.live import commit, current

from moczarr_store import MocHiveStore, config, mapped
from moczarr_store.io import watch

pytestmark = pytest.mark.skipif(not (mapped.available() and watch.available()),
                                reason="spans are mapped and watched on Linux only")

ARRAY = "atl06/o8/h_mean"


def _oracle(root: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return moczarr.open_hive(str(root))["h_mean"].values


def _leaves(root: Path) -> list[Path]:
    return sorted(root.glob("4/4/4/*/*.zarr"))


def _shard(leaf: Path) -> Path:
    return leaf / current(leaf) / "8" / "h_mean" / "c" / "0"


def _warm(root: Path, watched: bool = True) -> tuple[zarr.Array, np.ndarray]:
    """A joined chunk of ``root`` read warm (mapped, kept; ``watched``: and served again,
    so watched), and the values read."""
    if watch._kind(os.stat(root).st_dev) not in watch.LOCAL:
        pytest.skip("the hive copy is on a file system whose changes the kernel does not "
                    "report to this process (spans are checked with stat there)")
    array = zarr.open_array(MocHiveStore(root, chunking=2), path=ARRAY, mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = array[:]  # its leaves' metadata page-cached: mapped and kept at once
        if watched:
            np.testing.assert_array_equal(array[:], before)  # served again: watched
    np.testing.assert_array_equal(before, _oracle(root))
    return array, before


def _read(array: zarr.Array) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return array[:]


def _all_watched() -> bool:
    return bool(mapped.KEPT().spans) and all(watch.watched(key) for key in mapped.KEPT().spans)


def _changed_as(root: Path, array: zarr.Array, before: np.ndarray) -> None:
    """The next read gives what the hive holds now, which is not what it held."""
    want = _oracle(root)
    assert not np.array_equal(want, before, equal_nan=True)
    np.testing.assert_array_equal(_read(array), want)


def test_a_kept_span_on_a_local_file_system_is_watched_not_stat_checked(hive_copy):
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    calls = []
    stat = os.stat

    def counted(path, *args, **kwargs):
        calls.append(str(path))
        return stat(path, *args, **kwargs)

    os.stat = counted  # type: ignore[assignment]
    try:
        np.testing.assert_array_equal(_read(array), before)
    finally:
        os.stat = stat  # type: ignore[assignment]
    assert not [path for path in calls if path.endswith("/c/0")]  # no object stat'ed
    mapped.release()  # every watch let go with the spans
    assert not watch.WATCHES().owned and not watch.WATCHES().owners and not watch.WATCHES().paths


def test_a_change_before_the_watch_is_seen_by_the_check_after_it(hive_copy):
    """Mapped, then changed, then served again (when it is watched): the change made no
    event, the check of each file after its watch finds it."""
    root = hive_copy("paged")
    array, before = _warm(root, watched=False)
    assert mapped.KEPT().spans and not any(watch.watched(key) for key in mapped.KEPT().spans)
    _replace_old_shards(root)  # the same paths, other files: a watch of each is added
    _changed_as(root, array, before)


def test_the_old_version_unlinked(hive_copy):
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    for leaf in _leaves(root):
        commit(leaf, 1.0)  # the old version removed
    _changed_as(root, array, before)


def test_an_object_replaced_by_a_rename(hive_copy):
    """Each old version's shard replaced (an atomic rename) by the new version's."""
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    _replace_old_shards(root)
    _changed_as(root, array, before)


def _replace_old_shards(root: Path) -> None:
    """Each leaf committed again, its old version's shard replaced by the new one's."""
    for leaf in _leaves(root):
        old = _shard(leaf)
        commit(leaf, 1.0, remove_old=False)
        swap = old.with_name("0.swap")
        shutil.copyfile(_shard(leaf), swap)
        os.replace(swap, old)


def test_a_directory_renamed_away(hive_copy):
    """The old versions' directories renamed away: no file of the span changed."""
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    for leaf in _leaves(root):
        old = current(leaf)
        commit(leaf, 1.0, remove_old=False)
        os.rename(leaf / old, root / f"aside-{leaf.name}")
    _changed_as(root, array, before)


def test_an_object_truncated_and_rewritten_in_place(hive_copy):
    """The same file, truncated and written again: another version's inner chunks, in
    another order (a span kept mapped would read them where they were)."""
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    for leaf in _leaves(root):
        old = _shard(leaf)
        commit(leaf, 1.0, remove_old=False)
        inode = os.stat(old).st_ino
        old.write_bytes(reversed_shard(_shard(leaf).read_bytes()))  # O_TRUNC, then written
        assert os.stat(old).st_ino == inode
    _changed_as(root, array, before)


def test_an_overflowed_event_queue_lets_every_kept_span_go(hive_copy, tmp_path):
    """Events past the queue's length are lost, an overflow reported in their place."""
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    busy = [tmp_path / "busy0", tmp_path / "busy1"]
    for path in busy:
        path.write_bytes(b"x")
    assert watch.watch("busy", [str(path) for path in busy],
                       [os.stat(path).st_dev for path in busy], str(tmp_path))
    try:
        with open("/proc/sys/fs/inotify/max_queued_events") as limit:
            queued = int(limit.read())
        for at in range(queued + 2):  # two files in turn: no event merged with the last
            os.chmod(busy[at % 2], 0o600 | (at & 1) << 8)
        for leaf in _leaves(root):
            commit(leaf, 1.0)  # its events lost: the queue is full
        _changed_as(root, array, before)
    finally:
        watch.unwatch("busy")


def test_past_the_bound_of_watches_spans_are_checked_with_stat(hive_copy):
    root = hive_copy("paged")
    with config.set({"mapped.watches": 3}):  # fewer than one object and its directories
        array, before = _warm(root)
        assert mapped.KEPT().spans and not any(watch.watched(key) for key in mapped.KEPT().spans)
        assert not watch.WATCHES().owners
        for leaf in _leaves(root):
            commit(leaf, 1.0)
        _changed_as(root, array, before)


def test_objects_on_a_file_system_not_known_local_are_not_watched(tmp_path):
    path = tmp_path / "object"
    path.write_bytes(b"x")
    unknown = os.makedev(4095, 1048575)  # no such mount
    assert not watch.watch("elsewhere", [str(path)], [unknown], str(tmp_path))
    assert not watch.watched("elsewhere") and not watch.WATCHES().owners


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_a_forked_child_trusts_no_watch_of_its_parent(hive_copy):
    """The inotify instance a child inherits is its parent's: the child starts with a
    process state of its own (no span kept, no watch), closes its copy of the parent's
    descriptor and never reads the parent's events (the child only changes files and asks
    what changed: zarr's event loop thread is not forked)."""
    root = hive_copy("paged")
    array, before = _warm(root)
    assert _all_watched()
    old = []
    for leaf in _leaves(root):
        old.append(leaf / current(leaf))
        commit(leaf, 1.0, remove_old=False)  # the kept spans' files untouched
    inherited = watch.WATCHES().inotify
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for version in old:
                shutil.rmtree(version)
            gone = watch.changed()  # as the child's next read asks
            fresh = not mapped.KEPT().spans and not watch.WATCHES().owned
            code = 0 if gone == set() and inherited.closed and fresh else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _changed_as(root, array, before)  # the child's change, told to the parent
