"""Computed orders: every order a product does not store, folded from its source leaves.

Two oracles. zagg's own sweep: every overview order a fixture stores (written by zagg's
real write path) is computed again from the source (``computed_orders="all"`` reads no
stored overview) and must equal it cell for cell, with its dtype and fill value, per window
and for the all-time fold. And moczarr: ``moczarr.parent_cells`` of ``moczarr.open_hive``'s
source rows, each group folded here (sum / min / max skipping NaN and the fill value).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import warnings
from pathlib import Path

import moczarr
import numpy as np
import pytest
import zarr
from support.hives import FIXTURES
from support.writer import zagg_declarations

from moczarr_store import HiveWarning, MocHiveStore

PYRAMIDS = ["pyramid1", "pyramid1_resweep", "pyramid2", "windowed_explicit"]


def _group(root, mode: str) -> zarr.Group:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_group(MocHiveStore(root, computed_orders=mode), mode="r")


def _levels(group: zarr.Group) -> dict[str, zarr.Group]:
    """Every level group below the root, by path."""
    found = {}
    for path, node in group.members(max_depth=None):
        if isinstance(node, zarr.Group) and "morton_hive_store" in node.attrs and \
                "objects" in node.attrs["morton_hive_store"]:
            found[path] = node
    return found


def _by_cell(level: zarr.Group, name: str) -> dict[int, np.ndarray]:
    """``{cell id: values}`` (a value per window on a windowed level)."""
    cells = level["cell_ids"][:]
    values = level[name][:]
    rows = values.T if values.ndim == 2 else values[:, None]
    return dict(zip(cells.tolist(), rows, strict=True))


def _fill(array: zarr.Array) -> np.ndarray:
    return np.asarray(array.fill_value, dtype=array.dtype)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


@pytest.mark.parametrize("name", PYRAMIDS)
def test_computed_orders_equal_zaggs_stored_overviews(name):
    _assert_equal_to_stored(_group(FIXTURES / name, "missing"), _group(FIXTURES / name, "all"))


def _without_pyramid(hive_copy, name: str) -> Path:
    """A copy of fixture ``name`` whose manifest has no pyramid block (as zagg writes it with
    its pyramid off: its stored overviews are then objects the manifest does not declare)."""
    root = hive_copy(name)
    manifest = _manifest(root)
    del manifest["pyramid"]
    (root / "morton_hive.json").write_text(json.dumps(manifest, indent=1))
    return root


@pytest.mark.parametrize("key", ["pyramid", "overview", "fields"])
def test_a_pyramid_block_that_is_not_a_mapping_computes_nothing(hive_copy, key):
    """A damaged declaration (a block there but null) is not an absent one: the store does
    not fall back on ``aggregation.yaml`` (whose hash still matches) and says why."""
    root = hive_copy("windowed_explicit")
    manifest = _manifest(root)
    node = manifest
    for step in ("pyramid", "overview", "fields")[: ("pyramid", "overview", "fields").index(key)]:
        node = node[step]
    node[key] = None
    (root / "morton_hive.json").write_text(json.dumps(manifest, indent=1))
    with pytest.warns(HiveWarning, match=f"{key!r} is None, not a mapping"):
        damaged = _groups(zarr.open_group(MocHiveStore(root), mode="r"))
    assert damaged == _groups(_group(root, "none"))
    assert len(_groups(_group(FIXTURES / "windowed_explicit", "missing"))) > len(damaged)


def _groups(group: zarr.Group) -> set[str]:
    return {path for path, node in group.members(max_depth=None) if isinstance(node, zarr.Group)}


@pytest.mark.parametrize("name", PYRAMIDS)
def test_folds_from_aggregation_yaml_reproduce_zaggs_stored_overviews(name, hive_copy):
    """With the manifest's pyramid block hidden, the folds come from the writer's
    ``aggregation.yaml``: they are zagg's own declaration (its exact fields, asked of zagg),
    and every order computed from them equals the overview zagg stored."""
    hidden = _without_pyramid(hive_copy, name)
    computed = _group(hidden, "missing")
    _assert_equal_to_stored(_group(FIXTURES / name, "missing"), computed)
    zagg = _zagg(FIXTURES / name)
    exact = {f: d for f, d in zagg["fields"].items() if d["class"] == "exact"}
    assert exact == {f: d for f, d in _manifest(FIXTURES / name)["pyramid"]["overview"][
        "fields"].items() if d["class"] == "exact"}
    for path, level in _levels(computed).items():
        said = level.attrs["morton_hive_store"]
        if said["objects"] == "computed":
            assert said["computed"]["declared_in"] == "aggregation.yaml"
            assert said["computed"]["fields"] == exact, path
            assert said["computed"]["all_time"] == ("all_time/" in path)
    product = next(iter(computed.group_keys()))
    assert ("all_time" in computed[product]) == zagg["all_time"]


def _assert_equal_to_stored(stored: zarr.Group, computed: zarr.Group) -> None:
    """Every overview level ``stored`` reads from zagg's objects equals the level of the
    same path in ``computed`` (computed), field by field, with its dtype and fill."""
    clevels = _levels(computed)
    compared = 0
    for path, level in _levels(stored).items():
        if level.attrs["morton_hive_store"]["objects"] not in ("overview", "column"):
            continue
        twin = clevels[path]
        assert twin.attrs["morton_hive_store"]["objects"] == "computed"
        fields = [n for n, a in level.arrays() if n not in ("morton", "cell_ids", "healpix_index")
                  and a.ndim >= 1 and "cells" in (a.metadata.dimension_names or ())]
        assert fields
        for field in fields:
            want_array, got_array = level[field], twin[field]
            assert got_array.dtype == want_array.dtype, (path, field)
            assert _same(_fill(got_array), _fill(want_array)), (path, field)
            want, got = _by_cell(level, field), _by_cell(twin, field)
            assert set(want) <= set(got), (path, field)
            for cell, values in got.items():
                expect = want.get(cell, np.full_like(values, _fill(got_array)))
                assert _same(values, expect), (path, field, cell, values, expect)
            compared += 1
    assert compared


def _fold(values: np.ndarray, groups: np.ndarray, method: str, fill) -> dict[int, object]:
    """Each group's fold: ``method`` over its present values (not NaN, not ``fill``); the
    fill value where none is present."""
    out = {}
    for parent in np.unique(groups).tolist():
        chosen = values[groups == parent]
        gone = np.isnan(chosen) if chosen.dtype.kind == "f" else np.zeros(chosen.shape, bool)
        present = chosen[~gone & (chosen != fill)]
        if present.size == 0:
            out[parent] = fill
        else:
            out[parent] = {"sum": np.sum, "min": np.min, "max": np.max}[method](present)
    return out


def _manifest(root) -> dict:
    return json.loads((root / "morton_hive.json").read_text())


def _declaration(root) -> dict:
    """The product's pyramid declaration (``fields``, ``all_time``): its manifest's, else
    the one zagg makes from its ``aggregation.yaml``."""
    overview = _manifest(root).get("pyramid", {}).get("overview", {})
    if "fields" in overview:
        return overview
    return _zagg(root)


def _zagg(root: Path) -> dict:
    """zagg's declaration from ``root``'s ``aggregation.yaml`` (asked once for every
    fixture this file checks)."""
    configs = [FIXTURES / n / "aggregation.yaml" for n in [*PYRAMIDS, "windowed", "sharded"]]
    return zagg_declarations(*configs)[root / "aggregation.yaml"]


@pytest.mark.parametrize("name", [*PYRAMIDS, "windowed", "sharded"])
def test_computed_orders_equal_moczarrs_parent_cells_fold(name):
    """On the pyramid fixtures and on hives zagg wrote with its pyramid off (whose folds
    come from ``aggregation.yaml``)."""
    root = FIXTURES / name
    manifest = _manifest(root)
    declaration = _declaration(root)
    folds = {f: d for f, d in declaration["fields"].items() if d["class"] == "exact"}
    assert folds
    computed = _group(root, "all")
    product = next(iter(computed.group_keys()))
    source_order = manifest["cell_order"]
    windows = [str(w) for w in computed[f"{product}/o{source_order}"]["window"][:]] if (
        "window" in computed[f"{product}/o{source_order}"]) else []
    scopes: list[tuple[str | None, str]] = [(None, "")] if not windows else [
        (w, "") for w in windows]
    if windows and declaration.get("all_time"):
        scopes.append(("*", "all_time/"))
    checked = 0
    for window, prefix in scopes:
        opened = [moczarr.open_hive(str(root), window=w) for w in
                  (windows if window == "*" else [window])]
        for order in range(source_order):
            level = computed[f"{product}/{prefix}o{order}"]
            words = level["morton"][:]
            for field, fold in folds.items():
                dtype = np.dtype(fold["dtype"])
                fill = np.asarray(float(fold["fill_value"]) if isinstance(
                    fold["fill_value"], str) else fold["fill_value"], dtype=dtype)[()]
                values = np.concatenate([ds[field].values.astype(dtype) for ds in opened])
                parents = np.concatenate([np.asarray(moczarr.parent_cells(
                    ds["morton"].values, order)) for ds in opened])
                want = _fold(values, parents, fold["method"], fill)
                got = level[field][:]
                if got.ndim == 2:
                    got = got[list(level["window"][:]).index(window)]
                assert got.dtype == dtype
                assert set(want) <= set(words.tolist())
                for word, value in zip(words.tolist(), got, strict=True):
                    expect = np.asarray(want.get(word, fill), dtype=dtype)
                    assert _same(np.asarray(value), expect), (order, field, word, value, expect)
                checked += 1
    assert checked


def test_fields_without_an_exact_fold_are_absent_at_computed_orders():
    group = _group(FIXTURES / "pyramid1", "missing")
    assert "h_mean" in group["atl06/o7"]
    for order in range(7):
        level = group[f"atl06/o{order}"]
        assert "h_mean" not in level
        assert {"count", "h_min", "h_max"} <= set(level.array_keys())


def test_no_declared_folds_no_computed_orders():
    """``mixed_writers`` (created by zagg 0.38) has no pyramid block and no
    ``aggregation.yaml``: nothing declares a fold."""
    group = _group(FIXTURES / "mixed_writers", "missing")
    product = next(iter(group.group_keys()))
    assert list(group[product].group_keys()) == ["o7"]


def _documents(root, mode: str) -> dict[str, bytes]:
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    async def read() -> dict[str, bytes]:
        store = MocHiveStore(root, computed_orders=mode)
        keys = sorted([k async for k in store.list() if k.endswith("zarr.json")])
        return {k: (await store.get(k, default_buffer_prototype())).to_bytes() for k in keys}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(read())


@pytest.mark.parametrize("name", [*PYRAMIDS, "bare_versioned", "windowed", "sharded"])
def test_computed_orders_off_present_only_the_stored_levels(name):
    """Off, no computed level or attribute is presented, and every stored level's documents
    are those computed orders leave them (checked byte for byte against the code before
    computed orders existed when they were added: 191 documents over every fixture)."""
    off, on = _documents(FIXTURES / name, "none"), _documents(FIXTURES / name, "missing")
    assert not any(b"computed" in doc for doc in off.values())
    levels = {k.rsplit("/", 1)[0] for k in off if re.search(r"(^|/)o\d+/zarr.json$", k)}
    assert levels
    for key, doc in off.items():
        if key.rsplit("/", 1)[0] in levels or key.rsplit("/", 2)[0] in levels:
            assert on[key] == doc, key
    assert set(off) <= set(on)


def test_verify_checks_the_stored_objects_and_skips_computed_orders():
    """A computed order has no objects of its own: verify reads exactly the objects it
    reads with computed orders off, and a group naming only computed orders is an error
    naming it."""
    import asyncio

    from moczarr_store import OptionError
    from moczarr_store.verify import verify_hive

    root = FIXTURES / "pyramid1"
    on = asyncio.run(verify_hive(MocHiveStore(root)))
    off = asyncio.run(verify_hive(MocHiveStore(root, computed_orders="none")))
    assert on.objects == off.objects == on.clean > 0 and not on.failures
    with pytest.raises(OptionError, match="'atl06/o6' is a computed order"):
        asyncio.run(verify_hive(MocHiveStore(root), group="atl06/o6"))


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason="kerchunk-json needs the [export] extra, which needs Python >= 3.12")
def test_reference_exports_leave_computed_orders_out(tmp_path):
    """References name bytes in objects; a computed order has none: its groups and arrays
    are left out, the stored orders exported as with computed orders off."""
    from moczarr_store.refs import export_refs

    on, off = tmp_path / "on.json", tmp_path / "off.json"
    export_refs(MocHiveStore(FIXTURES / "pyramid1"), "kerchunk-json", on)
    export_refs(MocHiveStore(FIXTURES / "pyramid1", computed_orders="none"), "kerchunk-json",
                off)
    keys = set(json.loads(on.read_text())["refs"])
    assert keys == set(json.loads(off.read_text())["refs"])
    assert "atl06/o5/count/zarr.json" in keys and not any(k.startswith("atl06/o6") for k in keys)


def _moczarr_fold(root, order: int, field: str) -> dict[int, object]:
    """``{word at order: value}``: moczarr's source rows folded by the manifest's fold."""
    fold = _manifest(root)["pyramid"]["overview"]["fields"][field]
    dtype = np.dtype(fold["dtype"])
    fill = np.asarray(fold["fill_value"], dtype=dtype)[()]
    ds = moczarr.open_hive(str(root))
    parents = np.asarray(moczarr.parent_cells(ds["morton"].values, order))
    return _fold(ds[field].values.astype(dtype), parents, fold["method"], fill)


def test_a_kept_fold_costs_no_request_and_a_recommitted_leaf_folds_anew(hive_copy):
    from types import SimpleNamespace

    from support.hives import repoint

    root = hive_copy("pyramid1")
    store = MocHiveStore(root)
    array = zarr.open_array(store, path="atl06/o6/count", mode="r")
    words = zarr.open_array(store, path="atl06/o6/morton", mode="r")[:]
    first = array[:]
    before = store.request_stats.total
    np.testing.assert_array_equal(array[:], first)
    assert store.request_stats.total == before  # kept: not a request
    # a writer commits leaf 444111 again, every count one more
    rel = "4/4/4/1/1/1/444111.zarr"
    current = json.loads((root / rel / "zarr.json").read_text())[
        "attributes"]["morton_hive_commit"]["current"]
    repoint(root, SimpleNamespace(leaf=rel, meta=f"{rel}/{current}/7/count/zarr.json"), 1)
    store.refresh()
    again = array[:]
    want = _moczarr_fold(root, 6, "count")
    np.testing.assert_array_equal(again, [want.get(w, 0) for w in words.tolist()])
    assert (again != first).any()


def test_the_orders_above_the_shard_order_share_one_pass_over_the_leaves(hive_copy):
    """pyramid1 (shard order 5, cell order 7): o0, o1 and o2 keep their nodes at order 0,
    so o0 and o1 are folded from o2's chunk (count: an integer sum, fill 0; h_max: a max),
    and the leaves are read once for all three; a leaf committed again folds them anew."""
    from types import SimpleNamespace

    from support.hives import repoint

    root = hive_copy("pyramid1")
    store = MocHiveStore(root)
    arrays = {(k, f): zarr.open_array(store, path=f"atl06/o{k}/{f}", mode="r")
              for k in (0, 1, 2) for f in ("count", "h_max")}
    words = {k: zarr.open_array(store, path=f"atl06/o{k}/morton", mode="r")[:]
             for k in (0, 1, 2)}
    arrays[0, "count"][:]  # folds o2's chunk from the leaves, then o0's from it
    before = store.request_stats.total
    got = {(k, f): a[:] for (k, f), a in arrays.items() if f == "count"}
    assert store.request_stats.total == before  # o1 and o2 from o2's kept chunk
    arrays[1, "h_max"][:]
    between = store.request_stats.total
    assert between > before  # another field: its leaves are read once ...
    got.update({(k, "h_max"): arrays[k, "h_max"][:] for k in (0, 2)})
    assert store.request_stats.total == between  # ... for every coarse order
    for (k, f), values in got.items():
        want = _moczarr_fold(root, k, f)
        fill = _fill(arrays[k, f])
        np.testing.assert_array_equal(values, [want.get(w, fill) for w in words[k].tolist()])
    rel = "4/4/4/1/1/1/444111.zarr"
    current = json.loads((root / rel / "zarr.json").read_text())[
        "attributes"]["morton_hive_commit"]["current"]
    repoint(root, SimpleNamespace(leaf=rel, meta=f"{rel}/{current}/7/count/zarr.json"), 1)
    store.refresh()
    want = _moczarr_fold(root, 0, "count")
    again = arrays[0, "count"][:]
    np.testing.assert_array_equal(again, [want.get(w, 0) for w in words[0].tolist()])
    assert (again != got[0, "count"]).any()


def test_a_kept_fold_is_used_again_after_a_refresh_once_its_stamps_are_read_unchanged():
    store = MocHiveStore(FIXTURES / "pyramid1")
    array = zarr.open_array(store, path="atl06/o6/count", mode="r")
    before = store.request_stats.total
    first = array[:]
    folded = store.request_stats.total - before
    store.refresh()
    before = store.request_stats.total
    np.testing.assert_array_equal(array[:], first)
    # each leaf's stamp read again, nothing else: 5 is pyramid1's shard order
    leaves = np.unique(moczarr.parent_cells(moczarr.open_hive(
        str(FIXTURES / "pyramid1"))["morton"].values, 5)).size
    assert store.request_stats.total - before == leaves < folded


def test_requests_for_one_computed_chunk_met_while_it_is_folded_share_the_fold():
    from zarr.core.buffer import default_buffer_prototype

    async def read(store: MocHiveStore, times: int) -> list:
        return await asyncio.gather(*(store.get("atl06/o6/count/c/0",
                                                 default_buffer_prototype())
                                      for _ in range(times)))

    alone, shared = MocHiveStore(FIXTURES / "pyramid1"), MocHiveStore(FIXTURES / "pyramid1")
    for store in (alone, shared):  # opened: only the fold's requests are counted below
        zarr.open_array(store, path="atl06/o6/count", mode="r")
    before = alone.request_stats.total, shared.request_stats.total
    one = asyncio.run(read(alone, 1))
    three = asyncio.run(read(shared, 3))
    assert alone.request_stats.total - before[0] > 0
    assert shared.request_stats.total - before[1] == alone.request_stats.total - before[0]
    assert {bytes(b.to_bytes()) for b in three} == {bytes(one[0].to_bytes())}


def test_computed_orders_on_the_sphere_are_the_covered_ones_in_place():
    covered = _group(FIXTURES / "pyramid1", "missing")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sphere = zarr.open_group(MocHiveStore(FIXTURES / "pyramid1", geometry="sphere"),
                                 mode="r")
    for order in (6, 4, 0):
        level = covered[f"atl06/o{order}"]
        rows = level["cell_ids"][:].astype(np.int64)
        whole = sphere[f"atl06/o{order}/h_max"]
        assert whole.shape == (12 * 4**order,)
        np.testing.assert_array_equal(whole.get_coordinate_selection(rows), level["h_max"][:])
        others = np.setdiff1d(np.arange(min(whole.shape[0], 4096)), rows)
        assert np.isnan(whole.get_coordinate_selection(others)).all()


@pytest.mark.parametrize("method", ["sum", "min", "max"])
@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32", "float64"])
def test_rows_folded_in_one_pass_equal_them_folded_one_by_one(method, dtype):
    """``Accumulator.add_rows`` (a batch of leaves read in one buffer) against ``add`` of
    each row in turn: the same bits, with missing cells (NaN, the fill value), -0.0, rows
    that fold into one target together and rows met again (another window)."""
    from moczarr_store.hive.folds import Accumulator, Fold

    rng = np.random.default_rng(7)
    kind = np.dtype(dtype).kind
    fold = Fold("f", method, np.dtype(dtype), 0 if kind in "iu" else "NaN")
    for factor, starts in ((4, [0, 4, 8, 0]), (16, [0, 0, 1, 3]), (1, [2, 0])):
        rows = rng.integers(0, 5, (len(starts), 16)).astype(dtype)
        if kind == "f":
            rows[rows == 1] = np.nan
            rows[rows == 2] = -0.0
        one, each = Accumulator(fold, 20), Accumulator(fold, 20)
        one.add_rows(rows, factor, np.array(starts))
        for row, at in zip(rows, starts, strict=True):
            each.add(row, factor, at)
        got, want = one.result(), each.result()
        assert got.tobytes() == want.tobytes(), (factor, starts, got, want)


@pytest.mark.parametrize("name", ["sharded", "windowed", "pyramid1"])
def test_a_computed_chunk_folded_from_the_page_cache_equals_one_folded_leaf_by_leaf(
        name, monkeypatch):
    """Leaves whose stamps, metadata and chunks the page cache holds are folded a batch at
    a time from one buffer (no task per leaf); every computed field equals what the
    leaf-by-leaf read folds (at the orders next to the source and the shard order)."""
    from moczarr_store.read import compute

    root = FIXTURES / name
    manifest = _manifest(root)
    near = (f"o{manifest['cell_order'] - 1}", f"o{manifest['shard_order'] - 1}")
    computed = _levels(_group(root, "all"))
    paths = [f"{path}/{name}" for path, level in computed.items()
             if "computed" in level.attrs["morton_hive_store"]
             and path.rsplit("/", 1)[-1] in near
             for name, array in level.arrays() if name in _declaration(root)["fields"]
             and array.dtype.kind in "biuf" and "cells" in (array.metadata.dimension_names
                                                             or ())]
    assert paths
    fast = []
    folded_now = compute._folded_now
    monkeypatch.setattr(compute, "_folded_now", lambda *a: fast.append(folded_now(*a))
                        or fast[-1])
    with warnings.catch_warnings(action="ignore"):
        got = {p: zarr.open_array(MocHiveStore(root, computed_orders="all"), path=p,
                                  mode="r")[:] for p in paths}
    assert any(fast)
    monkeypatch.setattr(compute, "_folded_now", lambda *a: False)
    with warnings.catch_warnings(action="ignore"):
        for path in paths:
            want = zarr.open_array(MocHiveStore(root, computed_orders="all"), path=path,
                                   mode="r")[:]
            assert got[path].tobytes() == want.tobytes(), path
