"""Shared test helpers: the committed zagg-written fixtures."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture_roots() -> list[Path]:
    """Every committed hive root (bare or multi-product)."""
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_"))


@pytest.fixture
def hive_copy(tmp_path):
    """A writable copy of a committed fixture, to damage in a test."""

    def copy(name: str) -> Path:
        return Path(shutil.copytree(FIXTURES / name, tmp_path / name))

    return copy


def grown_after_open(root: Path, aside: Path) -> Callable[[], None]:
    """``root`` (a copy of ``pyramid1_resweep``) as it was before zagg's second run added
    leaf ``444112`` (between ``444111`` and ``444211`` in domain order, so every chunk after
    it moves one node on); returns what lands that leaf again, as the run did: the leaf
    (kept meanwhile in directory ``aside``), then its coverage entry."""
    leaf = root / "4/4/4/1/1/2/444112.zarr"
    kept = shutil.move(leaf, aside / "444112.zarr")
    moc = root / "coverage.moc"
    after = moc.read_text()
    before = json.loads(after)
    before["ranges"] = [["444111", "444111"], ["444211", "444211"]]
    moc.write_text(json.dumps(before))

    def land() -> None:
        shutil.move(kept, leaf)
        moc.write_text(after)

    return land


def repoint(root: Path, plan: Any, shift: float) -> None:
    """Write a new version of ``plan``'s leaf (a ``LeafRead``: its array + ``shift``, the
    rest copied) and move the leaf's ``current`` pointer to it, as a writer would."""
    import zarr

    leaf = root / plan.leaf
    doc = json.loads((leaf / "zarr.json").read_text())
    old = doc["attributes"]["morton_hive_commit"]["current"]
    shutil.copytree(leaf / old, leaf / "run-repointed-1")
    where = plan.meta.removeprefix(f"{plan.leaf}/{old}/").removesuffix("/zarr.json")
    array = zarr.open_array(str(leaf / "run-repointed-1" / where), mode="r+")
    array[...] = array[...] + shift
    doc["attributes"]["morton_hive_commit"]["current"] = "run-repointed-1"
    (leaf / "zarr.json").write_text(json.dumps(doc))


def rebound(array: Any, store: Any) -> Any:
    """``array``'s metadata over ``store``: a client's array whose chunks another store
    answers (a dask worker's unpickled copy, a restarted server at the same URL)."""
    import zarr
    from zarr.core.array import AsyncArray
    from zarr.storage._common import StorePath

    return zarr.Array(AsyncArray(array.metadata, StorePath(store, array.path)))


def assert_values(got: np.ndarray, want: np.ndarray, name: object) -> None:
    """``got`` holds ``want``'s values (NaN equals NaN; variable-length cells compared as
    Python objects)."""
    if want.dtype.kind == "O":
        assert list(got) == list(want), name
    else:
        np.testing.assert_array_equal(got, want, err_msg=str(name))


def rename_count(root: Path, name: str) -> None:
    """Rename the order-7 ``count`` array of every leaf to ``name``, in the stamps' content
    hashes too (so the stamps name it)."""
    for directory in sorted(root.rglob("7/count"), reverse=True):
        shutil.move(directory, directory.with_name(name))
    for stamp in root.rglob("zarr.json"):
        doc = json.loads(stamp.read_text())
        hashes = doc.get("attributes", {}).get("morton_hive_commit", {}).get("content_hashes")
        if hashes:
            hashes["arrays"][f"7/{name}"] = hashes["arrays"].pop("7/count")
            stamp.write_text(json.dumps(doc))


def swap(root: Path, a: str, b: str) -> None:
    """Objects ``a`` and ``b`` of the hive at ``root`` trade places on disk."""
    (root / a).rename(root / "aside")
    (root / b).rename(root / a)
    (root / "aside").rename(root / b)


def copy_leaf(source: Path, target: Path) -> None:
    """A copy of the leaf directory ``source`` as the leaf ``target`` (``{node}.zarr``),
    its stamps' coverage box naming that node: a leaf written there, not one moved there
    (which the store refuses as misplaced)."""
    shutil.copytree(source, target)
    node = target.name.removesuffix(".zarr").partition("_")[0]
    for stamp in [target / "zarr.json", *target.glob("run-*/zarr.json")]:
        doc = json.loads(stamp.read_text())
        coverage = doc.get("attributes", {}).get("morton_hive_commit", {}).get("coverage")
        if isinstance(coverage, dict):
            coverage["box"] = [node, None, None, None]
            stamp.write_text(json.dumps(doc))


def reversed_shard(raw: bytes) -> bytes:
    """A shard of 16 inner chunks (a crc32c-checked index at its end) stored the other way
    round, its index saying so: the same values at other offsets."""
    rows = np.frombuffer(raw[-260:-4], "<u8").reshape(16, 2)
    payload, index = b"", np.zeros((16, 2), "<u8")
    for inner in reversed(range(16)):
        start, size = rows[inner]
        index[inner] = (len(payload), size)
        payload += raw[start : start + size]
    return (payload + index.tobytes()
            + google_crc32c.value(index.tobytes()).to_bytes(4, "little"))
