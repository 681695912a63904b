"""Damaged hives are read correctly or refused with an error naming the object."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import moczarr
import numpy as np
import pytest
import xarray as xr

from moczarr_store import ChunkReadError, HiveWarning, MocHiveStore
from moczarr_store.chunkbytes import TruncatedChunkError

GROUP = "atl06/o7"
DEBRIS = "4/4/4/1/1/4/444114.zarr"
REWRITTEN = "4/4/4/1/1/2/444112.zarr"


def _open(root, **kw) -> xr.Dataset:
    return xr.open_zarr(MocHiveStore(root, **kw), group=GROUP).load()


def _equal(ref: xr.Dataset, got: xr.Dataset) -> None:
    assert ref.sizes == got.sizes
    for name in [*ref.data_vars, "morton", "cell_ids"]:
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


def _list_in_moc(root, decimal: str) -> None:
    path = root / "coverage.moc"
    env = json.loads(path.read_text())
    env["ranges"].append([decimal, decimal])
    path.write_text(json.dumps(env))


def _rows_of(ds: xr.Dataset, leaf_decimal: str) -> np.ndarray:
    from moczarr_store.hive.ids import decimal_to_rank, words_to_ranks

    ranks = words_to_ranks(ds["morton"].values, 7) >> np.uint64(4)
    return ranks == decimal_to_rank(leaf_decimal)


def test_listed_debris_reads_as_fill_with_a_warning_naming_it(hive_copy):
    root = hive_copy("bare_versioned")
    _list_in_moc(root, "444114")
    with pytest.warns(HiveWarning, match="444114.zarr has no commit stamp.*read as missing"):
        got = _open(root)
    rows = _rows_of(got, "444114")
    assert rows.sum() == 16
    assert np.isnan(got["h_mean"].values[rows]).all() and (got["count"].values[rows] == 0).all()
    # verify="open" drops it from the domain: exactly moczarr's answer
    _equal(moczarr.open_hive(str(root)), _open(root, verify="open"))


def test_dangling_current_pointer_warns_and_reads_missing(hive_copy):
    root = hive_copy("bare_versioned")
    stamp = json.loads((root / REWRITTEN / "zarr.json").read_text())
    current = stamp["attributes"]["morton_hive_commit"]["current"]
    shutil.rmtree(root / REWRITTEN / current)
    with pytest.warns(HiveWarning, match=f"444112.zarr points at version '{current}'"):
        got = _open(root)
    assert (got["count"].values[_rows_of(got, "444112")] == 0).all()
    with pytest.warns(UserWarning, match="444112"):
        ref = moczarr.open_hive(str(root))
    with pytest.warns(HiveWarning, match="444112"):
        _equal(ref, _open(root, verify="open"))


def test_a_dangling_template_candidate_is_warned_once_with_verify_open(hive_copy):
    """The template search meets the leaf before the open-time check does: one warning."""
    root = hive_copy("sharded")
    leaf = "4/4/4/1/1/44411.zarr"  # the first listed leaf
    stamp = json.loads((root / leaf / "zarr.json").read_text())
    current = stamp["attributes"]["morton_hive_commit"]["current"]
    (root / leaf / current / "7" / "zarr.json").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _open(root, verify="open")
    said = [str(w.message) for w in caught if issubclass(w.category, HiveWarning)]
    assert len([m for m in said if "44411.zarr points at version" in m]) == 1, said
    assert not _rows_of(got, "44411").any()  # dropped from the domain, as moczarr does


@pytest.mark.parametrize("fixture,leaf", [("legacy", "-4/1/1/3/3/1/-411331.zarr"),
                                          ("bare_versioned", REWRITTEN)])
@pytest.mark.parametrize("gone", ["array", "metadata"])
def test_a_stamped_leaf_array_gone_reads_as_fill_with_a_warning(hive_copy, fixture, leaf, gone):
    """The stamp's content hashes say the leaf wrote ``count``: its absence is damage (where
    moczarr reads NaN and promotes ``count`` to float64)."""
    root = hive_copy(fixture)
    array = root / _leaf_chunk(root, leaf, "count").removesuffix("/c/0")
    if gone == "array":
        shutil.rmtree(array)
    else:
        (array / "zarr.json").unlink()
    with pytest.warns(HiveWarning, match=re.escape(f"leaf {leaf}") + r"\S* (hashes array "
                      "7/count in its commit stamp|holds chunk bytes) but"):
        got = _open(root)
    rows = _rows_of(got, leaf.rsplit("/", 1)[-1].removesuffix(".zarr"))
    assert rows.sum() == 16 and (got["count"].values[rows] == 0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = moczarr.open_hive(str(root))
    np.testing.assert_array_equal(got["morton"].values, ref["morton"].values)
    assert np.isnan(ref["count"].values[rows]).all()
    np.testing.assert_array_equal(got["count"].values[~rows], ref["count"].values[~rows])


@pytest.mark.parametrize("chunking", ["leaf", "inner", 2])
@pytest.mark.parametrize("gone", ["4/early.zarr", "4/early.zarr/zarr.json"])
def test_a_window_with_no_overview_object_is_warned(hive_copy, chunking, gone):
    """Node -4 has no ``early`` overview (nothing under it was observed then): that is
    read as the fill value silently. With node 4's deleted too, no object of window
    ``early`` is left at order 2: moczarr omits that level-window with a warning; the
    store reads its cells as the fill value, with one warning naming the object."""
    root = hive_copy("windowed_explicit")
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)
        clean = _open_windowed(root, chunking)
    path = root / gone
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    with pytest.warns(HiveWarning, match=re.escape(
            "atl06/o2: window 'early' has no stamped overview object (not yet swept, or "
            "deleted; absent: 4/early.zarr, -4/early.zarr): read as missing (fill value)")):
        got = _open_windowed(root, chunking)
    early = got["window"].values.tolist().index("early")
    assert (got["count"].values[early] == 0).all() and clean["count"].values[early].any()
    np.testing.assert_array_equal(got["count"].values[1 - early],
                                  clean["count"].values[1 - early])


def test_an_aoi_outside_a_windows_overviews_is_no_damage(hive_copy):
    """Node -4 has no ``early`` overview; an AOI of it sees no ``early`` object at order 2,
    but node 4 has one: the check looks past the AOI, so nothing is warned."""
    root = hive_copy("windowed_explicit")
    with warnings.catch_warnings():
        warnings.simplefilter("error", HiveWarning)
        got = xr.open_zarr(MocHiveStore(root, aoi=["-4"]), group="atl06/o2").load()
    early = got["window"].values.tolist().index("early")
    assert (got["count"].values[early] == 0).all() and got["count"].values[1 - early].any()


def _open_windowed(root, chunking) -> xr.Dataset:
    return xr.open_zarr(MocHiveStore(root, chunking=chunking), group="atl06/o2").load()


@pytest.mark.parametrize("damage", ["missing", "not json", "unknown spec", "bad range"])
def test_unusable_root_coverage_falls_back_to_the_walk(hive_copy, damage):
    root = hive_copy("bare_versioned")
    moc = root / "coverage.moc"
    env = json.loads(moc.read_text())
    if damage == "missing":
        moc.unlink()
    elif damage == "not json":
        moc.write_bytes(moc.read_bytes()[:25])
    elif damage == "unknown spec":
        moc.write_text(json.dumps({**env, "spec": "morton-moc/9"}))
    else:
        moc.write_text(json.dumps({**env, "ranges": [["444112", "444111"]]}))
    with pytest.warns(HiveWarning, match="coverage.moc is"):
        got = _open(root, verify="open")
    ref = moczarr.open_hive(str(root)) if damage != "bad range" else None
    reference = ref if ref is not None else moczarr.open_hive(str(hive_copy_clean(root)))
    _equal(reference, got)


def hive_copy_clean(root):
    """A sibling copy of ``root`` with the coverage removed (moczarr walks it)."""
    clean = root.with_name(root.name + "_walk")
    shutil.copytree(root, clean)
    (clean / "coverage.moc").unlink()
    return clean


def _leaf_chunk(root, leaf: str, field: str) -> str:
    stamp = json.loads((root / leaf / "zarr.json").read_text())["attributes"]
    current = stamp["morton_hive_commit"].get("current")
    prefix = f"{leaf}/{current}" if current else leaf
    return f"{prefix}/7/{field}/c/0"


def test_truncated_plain_chunk_is_an_error_naming_the_object(hive_copy):
    root = hive_copy("legacy")
    key = _leaf_chunk(root, "4/4/4/1/1/3/444113.zarr", "h_mean")
    path = root / key
    path.write_bytes(path.read_bytes()[:-4])
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)
    with pytest.raises(TruncatedChunkError, match=key):
        ds["h_mean"].values  # noqa: B018
    assert ds["count"].values.sum() > 0  # the other fields still read


def test_a_truncated_chunk_joined_with_others_costs_only_its_leaf_rows(hive_copy):
    """Under ``auto`` the leaf's chunk shares one chunk with its neighbours: its rows read
    as fill, with a warning naming the object; every other row is read."""
    root = hive_copy("legacy")
    clean = _open(root)
    key = _leaf_chunk(root, "4/4/4/1/1/3/444113.zarr", "h_mean")
    path = root / key
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.warns(HiveWarning, match=re.escape(key)):
        got = _open(root)
    rows = np.isin(got["morton"].values, clean["morton"].values[16:32])  # node 444113
    assert np.isnan(got["h_mean"].values[rows]).all()
    assert not np.isnan(clean["h_mean"].values[rows]).all()
    np.testing.assert_array_equal(got["h_mean"].values[~rows], clean["h_mean"].values[~rows])
    np.testing.assert_array_equal(got["count"].values, clean["count"].values)


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
@pytest.mark.parametrize("cut", [4, 100])
def test_truncated_shard_is_an_error_naming_the_object(hive_copy, cut, chunking):
    root = hive_copy("sharded")
    key = _leaf_chunk(root, "4/4/4/1/1/44411.zarr", "count")
    path = root / key
    path.write_bytes(path.read_bytes()[:-cut])
    ds = xr.open_zarr(MocHiveStore(root, chunking=chunking), group=GROUP)
    with pytest.raises((TruncatedChunkError, ChunkReadError), match=key):
        ds["count"].values  # noqa: B018
    with pytest.raises((TruncatedChunkError, ChunkReadError), match=key):
        ds["count"][:5].values  # noqa: B018 - a partial read fetches the index alone


def test_escaping_current_pointer_is_refused_naming_the_leaf(hive_copy):
    root = hive_copy("bare_versioned")
    stamp_path = root / REWRITTEN / "zarr.json"
    stamp = json.loads(stamp_path.read_text())
    stamp["attributes"]["morton_hive_commit"]["current"] = "run-x/../../../../etc"
    stamp_path.write_text(json.dumps(stamp))
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)
    with pytest.raises(ValueError, match="444112.zarr: commit stamp 'current' pointer"):
        ds["count"].values  # noqa: B018
    # joined with other leaves (auto): refused the same way, its rows alone as fill
    with pytest.warns(HiveWarning, match="444112.zarr: commit stamp 'current' pointer"):
        got = _open(root)
    assert got["count"].values.sum() > 0


def test_a_stale_root_moc_warns_under_verify_open(hive_copy):
    root = hive_copy("bare_versioned")
    moc = root / "coverage.moc"
    env = json.loads(moc.read_text())
    env["ranges"] = [["444111", "444112"], ["-411331", "-411331"]]  # -411342 dropped
    moc.write_text(json.dumps(env))
    with pytest.warns(HiveWarning, match=r"stale root coverage.*-411342\.zarr.*\(1\)"):
        ds = _open(root, verify="open")
    assert ds.sizes["cells"] == 48  # what the MOC lists, as moczarr reads it
    _equal(moczarr.open_hive(str(root)), ds)


def test_dangling_leaves_are_one_warning_naming_the_first(hive_copy, monkeypatch, caplog):
    """verify="open" meets every dangling leaf: one HiveWarning for the level, naming the
    first ``DANGLING_NAMED`` and counting the rest; every leaf at DEBUG."""
    from moczarr_store.hive import template

    root = hive_copy("bare_versioned")
    removed = []
    for name in ("4/4/4/1/1/2/444112.zarr", "-4/1/1/3/4/2/-411342.zarr"):
        current = json.loads((root / name / "zarr.json").read_text())[
            "attributes"]["morton_hive_commit"]["current"]
        shutil.rmtree(root / name / current)
        removed.append(name)
    removed.sort()  # named in path order
    monkeypatch.setattr(template, "DANGLING_NAMED", 1)
    caplog.set_level("DEBUG", logger="moczarr_store")
    with pytest.warns(HiveWarning) as caught:
        got = _open(root, verify="open")
    dangling = [str(w.message) for w in caught if "which is missing" in str(w.message)]
    assert len(dangling) == 1, dangling
    assert removed[0] in dangling[0] and removed[1] not in dangling[0]
    assert "1 more leaves of atl06/o7" in dangling[0]
    logged = [r.getMessage() for r in caplog.records if "which is missing" in r.getMessage()]
    assert all(any(name in line for line in logged) for name in removed)
    with pytest.warns(UserWarning):
        _equal(moczarr.open_hive(str(root)), got)
