"""Regressions of the hostile-hive generator's last red cases: arrays a stamp does not name,
arrays named like a computed coordinate, links refused in one object kind but not another,
dimension names, and warnings repeated by a re-open."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import warnings

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES

from moczarr_store import HiveWarning, LeafSchemaError, MocHiveStore
from moczarr_store.hive.leaves import LeafCache
from moczarr_store.io.backend import Backend
from moczarr_store.io.local import LocalReader

GROUP = "atl06/o7"
LEGACY_TEMPLATE = "4/4/4/1/1/1/444111.zarr"


def _leaves(root):
    """The stamped leaves of a legacy (unversioned, order 7) fixture copy."""
    return sorted(p.parent for p in root.glob("*/*/*/*/*/*/*.zarr/zarr.json")
                  if "morton_hive_commit" in p.read_text())


def _hashes(leaf) -> tuple[dict, dict]:
    doc = json.loads((leaf / "zarr.json").read_text())
    return doc, doc["attributes"]["morton_hive_commit"]["content_hashes"]["arrays"]


def _link_out(path, outside) -> None:
    """Move ``path`` beyond the hive root and leave a link to it in its place."""
    away = outside / f"{path.name}-{len(list(outside.iterdir()))}"
    shutil.move(path, away)
    path.symlink_to(away, target_is_directory=away.is_dir())


@pytest.fixture
def reads_outside(monkeypatch):
    """Every file the local reader opened whose real path is outside the hive root."""
    seen: list[str] = []
    original = LocalReader._open

    def spy(self, path, *args):
        fd = original(self, path, *args)
        real = os.readlink(f"/proc/self/fd/{fd}")  # the file the kernel opened
        if not real.startswith(os.path.realpath(self.root) + "/"):
            seen.append(path)
        return fd

    monkeypatch.setattr(LocalReader, "_open", spy)
    return seen


# -- arrays the stamp does not name, and names of computed coordinates ---------------------------


def test_an_array_the_stamps_content_hashes_omit_is_presented_with_a_warning(hive_copy):
    root = hive_copy("legacy")
    for leaf in _leaves(root):  # count's digest under morton's key, count's key gone
        doc, arrays = _hashes(leaf)
        arrays["7/morton"] = arrays.pop("7/count")
        (leaf / "zarr.json").write_text(json.dumps(doc))
    with pytest.warns(HiveWarning, match=f"leaf {re.escape(LEGACY_TEMPLATE)}: commit stamp "
                      "does not name arrays 'count' that it holds; the arrays are those the "
                      "listing names"):
        got = xr.open_zarr(MocHiveStore(root), group=GROUP).load()
    ref = moczarr.open_hive(str(root))
    assert "count" in ref.data_vars
    for name in ref.data_vars:
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


@pytest.mark.parametrize("name,field,value", [("morton", "data_type", "int64"),
                                              ("cell_ids", "data_type", "float32")])
def test_a_leaf_array_taking_a_coordinates_name_is_refused_naming_it(hive_copy, name, field,
                                                                      value):
    root = hive_copy("legacy")
    source = "count" if name == "morton" else "h_min"
    for leaf in _leaves(root):
        shutil.rmtree(leaf / "7" / name)
        (leaf / "7" / source).rename(leaf / "7" / name)
    with pytest.raises(LeafSchemaError, match=re.escape(
            f"{LEGACY_TEMPLATE}/7/{name}/zarr.json: field {field!r} {value!r} is not 'uint64': "
            f"a leaf array named {name!r} must be the cell coordinate the store computes")):
        zarr.open_group(MocHiveStore(root), path=GROUP, mode="r")


def test_an_overview_whose_morton_is_no_coordinate_is_omitted_and_the_source_stands(hive_copy):
    root = hive_copy("pyramid1")
    for obj in root.glob("*/*/all.zarr"):  # the o3 overview objects
        meta = obj / "3" / "morton" / "zarr.json"
        doc = json.loads(meta.read_text())
        meta.write_text(json.dumps({**doc, "dimension_names": ["x"]}))
    store = MocHiveStore(root)
    with pytest.warns(HiveWarning, match=r"atl06/o3: .*3/morton/zarr\.json: field "
                      r"'dimension_names' \['x'\] is not \['cells'\].*; omitted"):
        groups = set(zarr.open_group(store, path="atl06", mode="r").group_keys())
    assert "o3" not in groups and {"o7", "o5"} <= groups
    clean = xr.open_zarr(MocHiveStore(FIXTURES / "pyramid1"), group=GROUP).load()
    xr.testing.assert_identical(xr.open_zarr(store, group=GROUP).load(), clean)


# -- dimension names ---------------------------------------------------------------------------


def test_a_template_without_dimension_names_is_refused_naming_the_field(hive_copy):
    root = hive_copy("pyramid1")
    meta = root / "4/4/all.zarr/3/h_min/zarr.json"  # the o3 template's
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "dimension_names": None}))
    with pytest.raises(Exception):  # noqa: B017 - moczarr cannot read that order either
        moczarr.level.open_level(str(root), 3)
    store = MocHiveStore(root, verify="open")
    with pytest.warns(HiveWarning, match=r"atl06/o3: 4/4/all\.zarr/3/h_min/zarr\.json: field "
                      r"'dimension_names' None is not a list of 1 strings.*; omitted"):
        groups = set(zarr.open_group(store, path="atl06", mode="r").group_keys())
    assert "o3" not in groups and "o7" in groups


def test_a_leaf_whose_dimension_names_differ_is_refused_naming_it_and_the_field(hive_copy):
    root = hive_copy("legacy")
    meta = root / "-4/1/1/3/3/1/-411331.zarr/7/count/zarr.json"  # not the template
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "dimension_names": ["x"]}))
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)  # auto: fill, warned
    with pytest.raises(LeafSchemaError, match=re.escape(
            "-4/1/1/3/3/1/-411331.zarr/7/count/zarr.json: field 'dimension_names' ['x'] "
            "differs from ['cells'], the template's")):
        ds["count"].load()
    clean = xr.open_zarr(MocHiveStore(FIXTURES / "legacy"), group=GROUP)
    np.testing.assert_array_equal(ds["h_max"].values, clean["h_max"].values)


# -- links: refused where they are, never blamed where they are not ------------------------------


def test_a_link_in_a_windowed_overview_never_reaches_the_all_time_fold(hive_copy, tmp_path,
                                                                       reads_outside):
    root = hive_copy("windowed_explicit")
    (tmp_path / "outside").mkdir()
    _link_out(root / "4/late.zarr/2/count", tmp_path / "outside")
    store = MocHiveStore(root)
    with pytest.warns(HiveWarning, match=r"atl06/o2: 4/late\.zarr/2/count: a link leads out "
                      r"of the hive root .*; omitted"):  # the open's writer-run sample meets it
        assert "o2" not in zarr.open_group(store, path="atl06", mode="r").group_keys()
    fold = xr.open_zarr(store, group="atl06/all_time/o2", consolidated=False).load()
    clean = MocHiveStore(FIXTURES / "windowed_explicit")
    xr.testing.assert_identical(fold, xr.open_zarr(clean, group="atl06/all_time/o2").load())
    assert reads_outside == []


def test_a_link_in_a_leaf_column_never_reaches_the_overview_of_the_same_order(
        hive_copy, tmp_path, reads_outside):
    root = hive_copy("pyramid2")
    (tmp_path / "outside").mkdir()
    _link_out(root / "-4/1/1/all.pyramid.zarr/2/h_max", tmp_path / "outside")
    got = xr.open_zarr(MocHiveStore(root, verify="open", chunking="shard"),
                       group="atl06/o2").load()  # read from the all.zarr objects
    clean = xr.open_zarr(MocHiveStore(FIXTURES / "pyramid2", verify="open"),
                         group="atl06/o2").load()
    xr.testing.assert_identical(got, clean)
    assert reads_outside == []


def test_an_overview_behind_a_link_is_omitted_once_and_the_other_levels_stand(hive_copy,
                                                                             tmp_path):
    root = hive_copy("pyramid2")
    (tmp_path / "outside").mkdir()
    _link_out(root / "-4/all.zarr/1/h_max", tmp_path / "outside")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MocHiveStore(root, verify="open", chunking="shard")
        for _ in range(3):
            for group in ("atl06/o4", "atl06/o3", "atl06/o2"):
                xr.open_zarr(store, group=group).load()
    messages = [str(w.message) for w in caught if issubclass(w.category, HiveWarning)]
    assert messages == [m for m in messages if "atl06/o1: -4/all.zarr/1/h_max: a link leads out "
                        "of the hive root" in m] and len(messages) == 1, messages
    clean = MocHiveStore(FIXTURES / "pyramid2", verify="open")
    for group in ("atl06/o3", "atl06/o2"):
        xr.testing.assert_identical(xr.open_zarr(store, group=group).load(),
                                    xr.open_zarr(clean, group=group).load())


def test_a_refused_open_is_not_repeated_by_later_reads(hive_copy):
    root = hive_copy("legacy")
    for leaf in _leaves(root):  # the stored cell_ids replaced by h_min, hashes unchanged
        shutil.rmtree(leaf / "7" / "cell_ids")
        (leaf / "7" / "h_min").rename(leaf / "7" / "cell_ids")
    store = MocHiveStore(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with pytest.raises(LeafSchemaError, match="cell_ids/zarr.json"):
                zarr.open_group(store, path=GROUP, mode="r")
    assert len([w for w in caught if "does not hold" in str(w.message)]) == 1
    requests = store.request_stats.total
    with pytest.raises(LeafSchemaError):
        zarr.open_group(store, path=GROUP, mode="r")
    assert store.request_stats.total == requests


def test_a_template_read_from_a_cached_leaf_keeps_its_stamp():
    cache = LeafCache()
    backend = Backend(FIXTURES / "pyramid2")

    async def both():
        first = await cache.resolve("4/4/all.zarr", backend.get)
        return first, await cache.resolve("4/4/all.zarr", backend.get), await cache.resolve_full(
            "4/4/all.zarr", backend.get)

    first, cached, full = asyncio.run(both())
    assert first.attrs["role"] == "overview" and cached.attrs is None  # the cache is slim
    assert full.attrs == first.attrs


# -- bounded memory on long damaged scans (class 9) ------------------------------------------------


def test_what_is_remembered_about_problems_is_bounded(monkeypatch):
    from moczarr_store import diagnostics

    monkeypatch.setattr(diagnostics, "MAX_KEYS", 3)
    problems = diagnostics.Problems()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(20_000):  # one level, one kind: counted, five names kept
            problems.note("p/o7", "absent", f"leaf-{i}")
        for level in range(10):  # more (level, kind) pairs than remembered: only counted
            problems.note(f"p/o{level}x", "debris", "leaf")
    summary = problems.summary()
    assert summary[("p/o7", "absent")].count == 20_000
    assert summary[("p/o7", "absent")].first == [f"leaf-{i}" for i in range(5)]
    assert len(summary) == 3 and problems.overflow == 8
    assert len(caught) == 3  # one warning per remembered (level, kind)


def test_the_leaf_cache_is_bounded():
    cache = LeafCache(max_entries=100)

    async def fill():
        async def absent(key, byte_range=None):
            return None

        for i in range(1_000):
            await cache.resolve(f"{i}.zarr", absent)

    asyncio.run(fill())
    assert len(cache) == 100
