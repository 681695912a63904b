"""The D24 compose: a product whose source leaves sit at two cell orders (``fixtures/_d24``:
zagg-written leaves at order 7 in one region, at 6 in another; ``fixtures/README.md``).

The oracle is moczarr: each leaf read with ``moczarr.open_leaf`` at the cell order it was
written at, its cells' ``moczarr.parent_cells`` at order ``k``, and each parent's fold
(sum / min / max over present values). The store is never its own oracle.
"""

from __future__ import annotations

import functools
import json
import warnings

import moczarr
import numpy as np
import pytest
import zarr
from support.hives import FIXTURES

from moczarr_store import MalformedMetadataError, MocHiveStore
from moczarr_store.cli import describe
from moczarr_store.errors import HiveFormatError

ROOT = FIXTURES / "_d24"
REGIONS = {7: ("444111", "444112"), 6: ("444113", "-411331")}  # shards by cell order
FOLDS = {"count": ("sum", np.int64, 0), "h_max": ("max", np.float32, np.nan),
         "h_min": ("min", np.float32, np.nan)}


def _open(root=ROOT, **options) -> zarr.Group:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the compose reads every leaf: nothing to warn of
        return zarr.open_group(MocHiveStore(root, **options), mode="r")


@functools.cache
def _leaves() -> dict[str, tuple[int, zarr.Group]]:
    """Each shard's leaf as moczarr reads it, with the cell order it was written at."""
    return {shard: (order, zarr.open_group(moczarr.open_leaf(str(ROOT), shard), mode="r"))
            for order, shards in REGIONS.items() for shard in shards}


def _expected(order: int, field: str, shards) -> dict[int, object]:
    """``{parent word at order: fold}`` of ``shards``' cells that hold a value (moczarr)."""
    method, dtype, fill = FOLDS[field]
    groups: dict[int, list] = {}
    for shard, (own, leaf) in _leaves().items():
        if shard not in shards:
            continue
        values = leaf[f"{own}/{field}"][:].astype(dtype)
        parents = np.asarray(moczarr.parent_cells(leaf[f"{own}/morton"][:], order))
        for parent, value in zip(parents.tolist(), values, strict=True):
            if not (np.isnan(value) if dtype == np.float32 else value == fill):
                groups.setdefault(parent, []).append(value)
    ufunc = {"sum": np.sum, "min": np.min, "max": np.max}[method]
    return {p: dtype(ufunc(np.asarray(v, dtype))) for p, v in groups.items()}


def _by_word(level: zarr.Group, field: str) -> dict[int, np.generic]:
    return dict(zip(level["morton"][:].tolist(), level[field][:], strict=True))


def test_every_order_from_0_to_the_finest_source_order_is_a_group():
    group = _open()
    assert sorted(group["atl06"].group_keys()) == [f"o{k}" for k in range(8)]


@pytest.mark.parametrize("order", range(7))
@pytest.mark.parametrize("field", sorted(FOLDS))
def test_a_composed_order_is_moczarrs_fold_per_region(order, field):
    """At ``order`` each region is folded from its own leaves (passed through where they
    are at that order), and where regions meet under one cell (``444113`` beside the
    order-7 leaves under ``4441``) from both; a cell no present value reaches holds the
    fill value."""
    level = _open()[f"atl06/o{order}"]
    got = _by_word(level, field)
    _, dtype, fill = FOLDS[field]
    want = _expected(order, field, [s for shards in REGIONS.values() for s in shards])
    for shards in REGIONS.values():  # each region is there
        assert _expected(order, field, shards).keys() <= want.keys() <= got.keys()
    for word, value in got.items():
        assert value.dtype == dtype
        if word in want:
            assert value == want[word], (order, field, word)
        else:
            assert np.isnan(value) if np.isnan(fill) else value == fill, (order, word)


def test_the_region_at_a_composed_order_is_passed_through_bit_for_bit():
    """Every field, ``h_mean`` (no exact fold) too: its order-6 leaves as stored."""
    level = _open()["atl06/o6"]
    words = level["morton"][:]
    for shard in REGIONS[6]:
        leaf = _leaves()[shard][1]
        at = np.searchsorted(words, leaf["6/morton"][0])
        for field in (*FOLDS, "h_mean"):
            stored = leaf[f"6/{field}"][:]
            assert level[field][at:at + stored.size].tobytes() == stored.tobytes(), field


def test_a_field_without_an_exact_fold_is_read_only_where_a_region_is_at_the_order():
    """``h_mean`` (a mean: class none) at order 6 is the order-6 region's, and the fill
    value (NaN) wherever only order-7 leaves lie beneath; it is absent below order 6."""
    group = _open()
    level = group["atl06/o6"]
    said = level["h_mean"].attrs["morton_hive_store"]["computed"]
    assert said["source_orders"] == [6] and said["fold"]["method"] == "pass"
    coarse = set(np.concatenate([_leaves()[s][1]["6/morton"][:] for s in REGIONS[6]]).tolist())
    for word, value in zip(level["morton"][:].tolist(), level["h_mean"][:], strict=True):
        if word not in coarse:
            assert np.isnan(value), word
    assert all("h_mean" not in group[f"atl06/o{k}"] for k in range(6))


def test_a_region_coarser_than_an_order_is_absent_from_it_never_upsampled():
    """At order 7 the order-6 region has no rows (its leaves are not read as order-7
    leaves with nothing in them), and the order-7 leaves are served as stored."""
    level = _open()["atl06/o7"]
    coarse = np.concatenate([_leaves()[s][1]["6/morton"][:] for s in REGIONS[6]])
    parents = np.asarray(moczarr.parent_cells(level["morton"][:], 6))
    assert not set(parents.tolist()) & set(coarse.tolist())
    for shard in REGIONS[7]:
        leaf = _leaves()[shard][1]
        at = np.searchsorted(level["morton"][:], leaf["7/morton"][0])
        for field in (*FOLDS, "h_mean"):
            stored = leaf[f"7/{field}"][:]
            assert level[field][at:at + stored.size].tobytes() == stored.tobytes()


def test_the_metadata_says_how_each_region_is_read():
    group = _open()
    said = {k: group[f"atl06/o{k}"].attrs["morton_hive_store"] for k in (7, 6, 5)}
    assert said[7]["regions"] == {"o7": "as stored", "o6": "absent"}
    assert "computed" not in said[7]
    assert said[6]["regions"] == {"o7": "folded", "o6": "passed through"}
    assert said[5]["regions"] == {"o7": "folded", "o6": "folded"}
    assert said[6]["computed"]["source_orders"] == [7, 6]
    count = group["atl06/o6/count"].attrs["morton_hive_store"]["computed"]
    assert count["source_orders"] == [7, 6] and count["fold"]["method"] == "sum"
    text = "\n".join(describe(MocHiveStore(ROOT)))
    assert "/atl06/o6  computed from o7, o6" in text
    assert "regions by source order: o7 as stored, o6 absent" in text
    assert "regions by source order: o7 folded, o6 passed through" in text


def test_with_computed_orders_off_only_the_finest_order_is_presented():
    group = _open(computed_orders="none")
    assert list(group["atl06"].group_keys()) == ["o7"]
    assert "regions" in group["atl06/o7"].attrs["morton_hive_store"]


def _damaged(hive_copy, change) -> MocHiveStore:
    root = hive_copy("_d24")
    manifest = json.loads((root / "morton_hive.json").read_text())
    change(root, manifest)
    (root / "morton_hive.json").write_text(json.dumps(manifest))
    return MocHiveStore(root)


@pytest.mark.parametrize("entries, said", [
    ("not a list", "is not a list"),
    ([{"cell_order": 6, "coverage": "coverage.o6.moc"}], "does not list cell_order 7"),
    ([{"cell_order": 7, "coverage": "coverage.o7.moc"},
      {"cell_order": 7, "coverage": "coverage.o6.moc"}], "is not a new int"),
    ([{"cell_order": 7, "coverage": "coverage.o7.moc"},
      {"cell_order": 4, "coverage": "coverage.o6.moc"}], "is not a new int"),
    ([{"cell_order": 7, "coverage": "../coverage.o7.moc"}], "is not a coverage*.moc file"),
])
def test_a_malformed_source_orders_key_is_refused_naming_it(hive_copy, entries, said):
    def change(root, manifest):
        manifest["source_orders"] = entries

    with pytest.raises(MalformedMetadataError, match="source_orders") as found:
        zarr.open_group(_damaged(hive_copy, change), mode="r")
    assert said in str(found.value)


def test_a_missing_source_order_coverage_is_an_error_not_a_walk(hive_copy):
    with pytest.raises(HiveFormatError, match=r"coverage\.o6\.moc.*is missing"):
        zarr.open_group(_damaged(hive_copy, lambda root, _: (root / "coverage.o6.moc")
                                 .unlink()), mode="r")


@pytest.mark.filterwarnings("ignore:leaf .* points at version")  # its order-6 group
def test_a_shard_two_source_orders_list_is_refused(hive_copy):
    def change(root, manifest):
        (root / "coverage.o6.moc").write_bytes((root / "coverage.moc").read_bytes())

    with pytest.raises(HiveFormatError, match="shard 444111 is listed by the coverage of two"):
        zarr.open_group(_damaged(hive_copy, change), mode="r")


def test_verify_open_reads_every_region_and_finds_no_stale_coverage():
    """``verify="open"`` reads every stamp of each source order, and its check for leaves
    the coverage does not list counts both orders' documents (the order-6 leaves are not
    stale to the order-7 level)."""
    opened, default = _open(verify="open"), _open()
    for order in (7, 6, 0):
        path = f"atl06/o{order}/count"
        assert opened[path][:].tobytes() == default[path][:].tobytes()


def test_verify_hashes_both_regions_leaves(hive_copy):
    """``verify`` checks the order-6 leaves too (only the computed orders read them):
    their fields and ``morton`` against their stamps, all four leaves clean; a value
    changed in an order-6 leaf is a mismatch naming that leaf and field, and ``atl06/o6``
    (a computed order holding that region) verifies that region alone."""
    import asyncio

    from moczarr_store.verify import verify_hive

    report = asyncio.run(verify_hive(MocHiveStore(ROOT)))
    assert (report.objects, report.clean, report.unserved) == (4, 4, [])
    root = hive_copy("_d24")
    (version,) = root.glob("-4/1/1/3/3/1/-411331.zarr/run-*")
    h_max = zarr.open_array(version / "6" / "h_max", mode="r+")
    values = h_max[:]
    at = int(np.flatnonzero(~np.isnan(values))[0])
    h_max[at] = values[at] + 1
    report = asyncio.run(verify_hive(MocHiveStore(root)))
    (failed,) = report.failures
    assert failed.object == "-4/1/1/3/3/1/-411331.zarr" and failed.level == "atl06/o6"
    assert [(p.array, p.kind) for p in failed.problems] == [("6/h_max", "mismatch")]
    alone = asyncio.run(verify_hive(MocHiveStore(root), group="atl06/o6"))
    assert (alone.objects, alone.clean, len(alone.failures)) == (2, 1, 1)
