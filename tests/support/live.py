"""A writer's commit of a versioned leaf, as zagg makes it, for the live-commit tests.

PYTEST_DONT_REWRITE

zagg commits a leaf's new data by writing a new ``run-*`` version beside the current one
and then replacing the leaf's root ``zarr.json`` (the commit stamp, whose ``current``
names the version) with one atomic rename; a cleanup later removes the version it
superseded. :func:`commit` does exactly that on a fixture copy, with the new version's
values shifted (and, if asked, one array re-encoded), so a reader holding the old stamp
meets a version that is gone.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import numpy as np
import zarr

_VERSIONS = itertools.count(1)
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}


def current(leaf: Path) -> str:
    """The version a leaf's commit stamp names."""
    doc = json.loads((leaf / "zarr.json").read_text())
    return doc["attributes"]["morton_hive_commit"]["current"]


def commit(leaf: Path, shift: float = 1.0, recode: str | None = None,
           remove_old: bool = True) -> str:
    """Commit a new version of ``leaf`` (its float arrays + ``shift``; ``recode``: the name
    of one array written again with zstd added to its codecs), swap the stamp atomically
    and (``remove_old``) remove the version it superseded. Returns the new version."""
    old = current(leaf)
    new = f"run-live{next(_VERSIONS):06d}-{os.getpid():x}"
    shutil.copytree(leaf / old, leaf / new)
    group = zarr.open_group(str(leaf / new), mode="r+")
    for path, array in group.members(max_depth=None):
        if not isinstance(array, zarr.Array) or array.dtype.kind != "f":
            continue
        values = array[...] + np.asarray(shift, array.dtype)
        if path.rsplit("/", 1)[-1] == recode:
            _rewrite_with_zstd(leaf / new / path, values)
        else:
            array[...] = values
    doc = json.loads((leaf / "zarr.json").read_text())
    doc["attributes"]["morton_hive_commit"]["current"] = new
    swap = leaf / f".zarr.json.{new}"
    swap.write_text(json.dumps(doc))
    os.replace(swap, leaf / "zarr.json")  # the commit: one atomic rename
    if remove_old:
        shutil.rmtree(leaf / old)
    return new


def _rewrite_with_zstd(where: Path, values: np.ndarray) -> None:
    """The array at ``where`` written again with ``values``, its codecs followed by zstd."""
    meta = json.loads((where / "zarr.json").read_text())
    shutil.rmtree(where)
    where.mkdir()
    meta["codecs"] = [*meta["codecs"], ZSTD] if not _sharded(meta) else _inner_zstd(meta)
    (where / "zarr.json").write_text(json.dumps(meta))
    zarr.open_array(str(where), mode="r+")[...] = values


def _sharded(meta: dict) -> bool:
    return any(c.get("name") == "sharding_indexed" for c in meta["codecs"])


def _inner_zstd(meta: dict) -> list[dict]:
    codecs = [dict(c) for c in meta["codecs"]]
    for codec in codecs:
        if codec.get("name") == "sharding_indexed":
            conf = dict(codec["configuration"])
            conf["codecs"] = [*conf["codecs"], ZSTD]
            codec["configuration"] = conf
    return codecs
