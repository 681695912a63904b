"""A hive that grows while it is open, on every fixture.

A writer's next run adds a leaf and lists it in the root coverage. Where the new node falls
before others in domain order, every chunk after it names the next node on. So whatever
holds an array's metadata must read its chunks through the structure it was opened with:
the store that opened it and its pickled copies (a dask worker) keep that structure; a
store opened afterwards presents the grown hive. Each is checked against moczarr reading
the hive in the matching state (values and dtypes), on every fixture, in every chunking
and (leaf chunks) in the sphere geometry.
"""

from __future__ import annotations

import json
import pickle
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr
from support.hives import FIXTURES, assert_values, fixture_roots, rebound
from support.hostile import Group, Ref, _kind_of, pristine, pristine_references, references

from moczarr_store import MocHiveStore


def _nodes(first: str, last: str) -> list[str]:
    """The nodes of a coverage range, in order: digit strings of one base cell and one
    order, each digit after the base cell 1-4."""
    sign, head = ("-", first[1:]) if first.startswith("-") else ("", first)
    digits, end = [int(d) for d in head], last.lstrip("-")
    nodes = []
    while True:
        nodes.append(sign + "".join(map(str, digits)))
        if nodes[-1].lstrip("-") == end:
            return nodes
        at = len(digits) - 1
        while digits[at] == 4:
            digits[at], at = 1, at - 1
        assert at > 0, (first, last)  # the base cell stays
        digits[at] += 1


def _uncover(moc: Path, node: str) -> None:
    """Rewrite the ranges coverage ``moc`` without ``node`` (one range per node left)."""
    doc = json.loads(moc.read_text())
    assert doc["encoding"] == "ranges", moc
    nodes = [n for first, last in doc["ranges"] for n in _nodes(first, last)]
    assert node in nodes, (moc, node)
    doc["ranges"] = [[n, n] for n in nodes if n != node]
    moc.write_text(json.dumps(doc))


def _source_leaves(name: str) -> list[str]:
    """Stamped source leaves of fixture ``name`` (relative paths), in path order."""
    return sorted(obj for obj in pristine(name).objects if _kind_of(obj) == "leaf")


def _shrink(root: Path, leaf: str, aside: Path) -> Callable[[], None]:
    """``root`` as it was before a writer added ``leaf``: the leaf moved to ``aside``, its
    node taken out of its product's coverage. Returns what lands it again."""
    product = root / leaf.split("/", 1)[0] if not (root / "coverage.moc").is_file() else root
    moc = product / "coverage.moc"
    grown = moc.read_text()
    node = leaf.rsplit("/", 1)[-1].removesuffix(".zarr").split("_")[0]
    kept = shutil.move(root / leaf, aside / "leaf.zarr")
    _uncover(moc, node)

    def land() -> None:
        shutil.move(kept, root / leaf)
        moc.write_text(grown)

    return land


def _source(groups: tuple[Group, ...]) -> list[Group]:
    return [g for g in groups if g.artifact == "leaf" and not g.all_time]


def _shifts(before: dict, after: dict, groups: list[Group]) -> bool:
    """Whether some source group's rows, before, are not the first rows after: a chunk
    index then names another node."""
    for key, ref in before.items():
        if key[0] in {g.path for g in groups} and ref.morton is not None:
            grown = after[key].morton
            n = ref.morton.size
            if grown is None or grown.size <= n or not np.array_equal(grown[:n], ref.morton):
                return True
    return False


CASES = [root.name for root in fixture_roots()]


@pytest.fixture(scope="module")
def shifting(tmp_path_factory):
    """``shifting(name)``: the first source leaf of fixture ``name`` whose landing moves
    chunks, and moczarr's answers without it (``None``: no leaf's does)."""
    found: dict[str, tuple[str, dict] | None] = {}

    def find(name: str) -> tuple[str, dict] | None:
        if name not in found:
            found[name] = None
            source = _source(pristine(name).groups)
            for leaf in _source_leaves(name):
                base = tmp_path_factory.mktemp(name)
                root = Path(shutil.copytree(FIXTURES / name, base / name))
                try:
                    _shrink(root, leaf, base)
                except AssertionError:
                    continue  # its node is not in its coverage: nothing to land
                before = references(root, pristine(name).groups)
                if _shifts(before, pristine_references(name), source):
                    found[name] = (leaf, before)
                    break
        return found[name]

    return find


def _arrays(root: zarr.Group, groups: tuple[Group, ...]) -> dict[str, zarr.Array]:
    """Every array of ``groups`` under ``root``, its metadata read now."""
    return {
        f"{g.path}/{name}": root[f"{g.path}/{name}"]
        for g in groups
        for name in root[g.path].array_keys()
    }


def _read_as(
    arrays: dict[str, zarr.Array],
    morton: dict[str, np.ndarray],
    groups: tuple[Group, ...],
    refs: dict[tuple, Ref],
    what: str,
) -> int:
    """Assert ``arrays`` hold ``refs``' values and dtypes at the rows ``morton`` names
    (each group's cell ids, read when its metadata was: the store presents whole nodes,
    moczarr the cells it found). Returns the values checked."""
    checked = 0
    for group in groups:
        ids = morton[group.path]
        for position, window in enumerate(group.windows or (None,)):
            ref = refs[(group.path, window)]
            rows = np.flatnonzero(np.isin(ids, ref.morton))
            np.testing.assert_array_equal(ids[rows], ref.morton, err_msg=what)
            for field, want in ref.values.items():
                got = arrays[f"{group.path}/{field}"][...]
                assert got.dtype == want.dtype, (what, group.path, field)
                got = got[position] if group.windows else got
                assert_values(got[rows], want, (what, group.path, window, field))
                checked += want.size
    return checked


# the sphere geometry keeps positions anyway (the landed node read as fill before): checked
# on the fixtures of coarse shard orders (a sphere array has a chunk per node of the sphere:
# 12,288 at order 5, read whole three times, take 15-60 s a fixture)
SPHERE = ("pyramid2", "windowed_explicit", "paged", "ragged", "sharded")
GROWTHS = [(name, chunking, "covered") for name in CASES for chunking in ("leaf", "shard",
                                                                          "inner", 2)]
GROWTHS += [(name, "leaf", "sphere") for name in SPHERE]


@pytest.mark.parametrize(("name", "chunking", "geometry"), GROWTHS)
def test_a_leaf_added_while_open_moves_no_chunk(shifting, tmp_path, name, chunking, geometry):
    found = shifting(name)
    assert found is not None, f"{name}: no leaf of its source level moves a chunk"
    leaf, before = found
    root = Path(shutil.copytree(FIXTURES / name, tmp_path / name))
    land = _shrink(root, leaf, tmp_path)
    groups = pristine(name).groups
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # debris in some fixtures is reported elsewhere
        store = MocHiveStore(root, chunking=chunking, geometry=geometry)
        arrays = _arrays(zarr.open_group(store, mode="r"), groups)  # a client opens
        morton = {g.path: arrays[f"{g.path}/morton"][...] for g in groups}
        shipped = pickle.dumps(store)  # a dask graph sent before the writer's run
        land()
        assert _read_as(arrays, morton, groups, before, "open store") > 0
        clone = pickle.loads(shipped)
        remote = {path: rebound(array, clone) for path, array in arrays.items()}
        assert _read_as(remote, morton, groups, before, "unpickled") > 0
        fresh = MocHiveStore(root, chunking=chunking, geometry=geometry)
        fresh = _arrays(zarr.open_group(fresh, mode="r"), groups)
        fresh_morton = {g.path: fresh[f"{g.path}/morton"][...] for g in groups}
        assert _read_as(fresh, fresh_morton, groups, pristine_references(name), "fresh") > 0
