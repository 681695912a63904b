"""A leaf committed again while the hive is read and served, its old version removed.

A reader holds the stamps it read; a writer then commits a new ``run-*`` version of
every leaf (an atomic swap of the leaf's stamp) and removes the old one, as its cleanup
does. Every later read, in process and through ``serve``, gives the new version's values
exactly as moczarr reads the hive now: never the fill value, and under the new version's
own metadata where its encoding changed. Reads of a legitimately absent chunk read no
stamp again once confirmed.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.live import commit
from support.serving import Served, fetch, obstore_client

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.errors import LeafMovedError
from moczarr_store.serve import create_app

FIELDS = ("count", "h_max", "h_mean", "h_min", "h_q25", "h_q50", "h_q75", "h_sigma",
          "h_variance")


def _leaves(root: Path) -> list[Path]:
    """The stamped versioned source leaves of a fixture copy."""
    return sorted(p.parent for p in root.rglob("*.zarr/zarr.json")
                  if '"current"' in p.read_text() and "_" not in p.parent.name
                  and not p.parent.name.startswith(("all", "run-")))


def _group(root: Path) -> str:
    return {"paged": "atl06/o8"}.get(root.name, "atl06/o7")


def _read(store, group: str) -> dict[str, np.ndarray]:
    """Every array of ``group`` read through zarr (no listing: a served hive has none)."""
    node = zarr.open_group(store, path=group, mode="r", use_consolidated=False)
    return {name: node[name][...] for name in FIELDS if name in node}


def _equal(ref: xr.Dataset, got: dict[str, np.ndarray]) -> None:
    for name in ref.data_vars:
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name], ref[name].values, err_msg=name)


def _oracle(root: Path) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return moczarr.open_hive(str(root)).load()


CASES = [("bare_versioned", "leaf", None), ("bare_versioned", "leaf", "h_mean"),
         ("sharded", "leaf", None), ("sharded", "shard", None), ("sharded", "inner", None),
         ("sharded", "span", None), ("sharded", "inner", "h_mean"), ("paged", "span", None)]


@pytest.mark.parametrize(("name", "chunking", "recode"), CASES)
def test_a_store_reads_a_recommitted_leaf_from_its_new_version(hive_copy, name, chunking,
                                                               recode):
    root = hive_copy(name)
    store = MocHiveStore(root, chunking=chunking)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = _read(store, _group(root))  # every stamp read and cached
    _equal(_oracle(root), before)
    for leaf in _leaves(root):
        commit(leaf, 1.0, recode=recode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)  # no "dangling" version: it moved
        after = _read(store, _group(root))
    want = _oracle(root)
    _equal(want, after)
    assert not np.array_equal(want["h_mean"].values, before["h_mean"], equal_nan=True)


@pytest.mark.parametrize("chunking", ["leaf", "shard"])
def test_serve_answers_a_recommitted_leaf_from_its_new_version(hive_copy, chunking):
    root = hive_copy("sharded")
    app = create_app(root, chunking=chunking, stamp_ttl=600)
    key = "atl06/o7/h_mean/c/0"
    with Served(app) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = obstore_client(server.url)
        _equal(_oracle(root), _read(client, "atl06/o7"))
        status, old, _ = fetch(server, f"/{key}", Range="bytes=0-3")  # its size from a HEAD
        assert status == 206
        for leaf in _leaves(root):
            commit(leaf, 1.0)
        warnings.simplefilter("error", HiveWarning)
        _equal(_oracle(root), _read(client, "atl06/o7"))
        status, new, body = fetch(server, f"/{key}", Range="bytes=0-3")
        assert status == 206 and new["etag"] != old["etag"], (status, new)
        status, whole, data = fetch(server, f"/{key}")
        assert status == 200 and whole["etag"] == new["etag"] and data[:4] == body
    local = MocHiveStore(root, chunking=chunking)
    want = np.frombuffer(data, np.uint8)
    got = np.frombuffer(_get(local, key), np.uint8)
    np.testing.assert_array_equal(got, want)


def _get(store: MocHiveStore, key: str) -> bytes:
    from asyncio import run

    from zarr.core.buffer import default_buffer_prototype

    buffer = run(store.get(key, default_buffer_prototype()))
    assert buffer is not None, key
    return buffer.to_bytes()


def test_a_confirmed_absent_chunk_reads_no_stamp_again(hive_copy):
    """A version's legitimately absent chunk object costs one stamp re-read once, then
    none: a sparse leaf is not read at two requests a chunk."""
    root = hive_copy("bare_versioned")
    leaf = _leaves(root)[0]
    version = leaf / commit(leaf, 0.0, remove_old=False)
    stamp = f"{leaf.relative_to(root)}/zarr.json"
    whole = MocHiveStore(root)
    stamps = _count_stamp_reads(whole)
    _read(whole, "atl06/o7")
    reads = stamps.count(stamp)  # the stamp reads of a read with every chunk stored
    for chunk in version.glob("7/h_sigma/c/*"):
        chunk.unlink()  # an all-fill chunk zarr does not store
    store = MocHiveStore(root)
    stamps = _count_stamp_reads(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)
        _read(store, "atl06/o7")
        assert stamps.count(stamp) == reads + 1  # and the one re-read of the absence
        first = stamps.copy()
        _read(store, "atl06/o7")
    assert stamps == first
    want = _oracle(root)["h_sigma"].values
    np.testing.assert_array_equal(_read(store, "atl06/o7")["h_sigma"], want)
    assert np.isnan(want).any()


def _count_stamp_reads(store: MocHiveStore) -> list[str]:
    """The leaf stamps ``store`` reads from now on, in order."""
    seen: list[str] = []
    get = store.backend.get

    async def counted(key, byte_range=None):
        if key.endswith(".zarr/zarr.json"):
            seen.append(key)
        return await get(key, byte_range)

    store.backend.get = counted  # type: ignore[method-assign]
    return seen


def test_refresh_reads_a_leaf_committed_again_from_its_new_version(hive_copy):
    """A superseded version still there is a committed state: a store keeps reading it
    until ``refresh()`` has it read the stamps again (and dask names it anew)."""
    from dask.base import tokenize

    root = hive_copy("bare_versioned")
    store = MocHiveStore(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = _read(store, "atl06/o7")
        for leaf in _leaves(root):
            commit(leaf, 1.0, remove_old=False)
        np.testing.assert_array_equal(_read(store, "atl06/o7")["h_mean"], before["h_mean"])
        token = tokenize(store)
        store.refresh()
        assert tokenize(store) != token
        _equal(_oracle(root), _read(store, "atl06/o7"))


def test_an_unversioned_leaf_being_rewritten_is_an_error_naming_it_not_fill(hive_copy):
    """zagg rewrites an unversioned leaf in place: it clears it, writes an unstamped
    template, its arrays, then its stamp. A read in between is refused, naming the leaf;
    once the stamp is back the leaf reads again."""
    root = hive_copy("legacy")
    leaf = root / "4/4/4/1/1/3/444113.zarr"
    store = MocHiveStore(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = _read(store, "atl06/o7")
        kept = shutil.move(leaf, root / "kept.zarr")
        leaf.mkdir()
        (leaf / "zarr.json").write_text(json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": {}}))
        with pytest.raises(LeafMovedError, match="444113.zarr.*rewritten in place"):
            _read(store, "atl06/o7")
        shutil.rmtree(leaf)
        shutil.move(kept, leaf)
        np.testing.assert_array_equal(_read(store, "atl06/o7")["count"], before["count"])


def _cleared(leaf: Path, aside: Path, template: bool) -> Path:
    """``leaf`` as zagg leaves it mid-rewrite: cleared (``template``: its unstamped group
    written again); returns where the leaf's files were put aside."""
    kept = Path(shutil.move(leaf, aside))
    if template:
        leaf.mkdir()
        (leaf / "zarr.json").write_text(json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": {}}))
    return kept


@pytest.mark.parametrize("chunking", ["auto", "leaf"])
@pytest.mark.parametrize("template", [False, True])
def test_an_unversioned_leaf_seen_stamped_is_never_fill_while_rewritten(hive_copy, chunking,
                                                                       template):
    """A stamp this process has read is gone (zagg cleared the leaf to rewrite it): after
    ``refresh()``, in a new store, and in a new ``serve`` generation the read fails with
    ``LeafMovedError`` naming the leaf, never the fill value; once the stamp is back, the
    values are moczarr's."""
    root = hive_copy("legacy")
    leaf = root / "4/4/4/1/1/3/444113.zarr"
    group = "atl06/o7"
    store = MocHiveStore(root, chunking=chunking)
    app = create_app(root, chunking=chunking, stamp_ttl=600)
    with Served(app) as server, warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)  # no "no commit stamp" warning
        client = obstore_client(server.url)
        before = _read(store, group)
        _equal(_oracle(root), before)
        _read(client, group)
        kept = _cleared(leaf, root / "kept.zarr", template)
        store.refresh()
        app.state.generations.expire()
        for reader in (store, MocHiveStore(root, chunking=chunking)):
            with pytest.raises(LeafMovedError, match="444113.zarr.*rewritten in place"):
                _read(reader, group)
        chunk = 0 if chunking == "auto" else 1  # the chunk holding node 444113's rows
        status, _, body = fetch(server, f"/atl06/o7/count/c/{chunk}")
        assert status == 502 and b"444113.zarr" in body, (status, body[:300])
        shutil.rmtree(leaf, ignore_errors=True)
        shutil.move(kept, leaf)
        for reader in (store, MocHiveStore(root, chunking=chunking)):
            _equal(_oracle(root), _read(reader, group))


def test_getsize_and_exists_of_a_recommitted_leaf_follow_its_new_version(hive_copy):
    """A size learned by a HEAD of the old version's object (gone now) is read again."""
    from asyncio import run

    root = hive_copy("sharded")
    store = MocHiveStore(root, chunking="shard")
    key = "atl06/o7/count/c/0"
    _get(store, key)  # the leaf's encoding established: its size comes from a HEAD
    for leaf in _leaves(root):
        commit(leaf, 1.0)
    assert run(store.getsize(key)) == len(_get(MocHiveStore(root, chunking="shard"), key))
    assert run(store.exists(key))


def test_a_recoded_chunk_read_first_after_its_leaf_moved_follows_it(hive_copy):
    """A ragged field (decoded and encoded again, one chunk per leaf) read for the first
    time after its leaf was committed again: the old version's missing array metadata
    re-reads the stamp, and the chunk comes from the new version, neither warned as a
    dangling version nor read as the fill value."""
    root = hive_copy("ragged")
    keys = ["atl06/o6/h_tdigest/c/0", "atl06/o6/h_tdigest/c/1"]
    want = [_get(MocHiveStore(root, chunking="leaf"), key) for key in keys]
    store = MocHiveStore(root, chunking="leaf")
    _read(store, "atl06/o6")  # count, h_mean: every stamp cached, h_tdigest not read
    for leaf in _leaves(root):
        commit(leaf, 1.0)  # h_tdigest holds no floats: its values stay as they were
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)
        assert [_get(store, key) for key in keys] == want
