"""Reading reference exports back with their own readers, for the refs tests.

Expected values come from the in-process ``MocHiveStore`` (itself checked against
``moczarr.open_hive`` by the conformance tests).
"""

from __future__ import annotations

import functools
import json
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import zarr
from zarr.buffer import cpu
from zarr.storage import MemoryStore

from moczarr_store import HiveWarning, MocHiveStore

ReadRange = Callable[[str, int, int], bytes]


def walk(group: zarr.Group, prefix: str = "") -> dict[str, zarr.Array]:
    """Every array below ``group``, by path."""
    out: dict[str, zarr.Array] = {}
    for name, node in group.members():
        path = f"{prefix}{name}"
        if isinstance(node, zarr.Array):
            out[path] = node
        else:
            out.update(walk(node, path + "/"))
    return out


def store_values(source, **options) -> dict[str, np.ndarray]:
    """Every array of the in-process store that references can hold, read whole: the
    stored orders (exports leave computed orders out)."""
    options = {"computed_orders": "none", **options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        group = zarr.open_group(MocHiveStore(source, **options), mode="r")
        return {p: a[...] for p, a in walk(group).items()}


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """The same arrays, dtypes and values (NaN equal to NaN; variable-length cells
    compared cell by cell)."""
    assert sorted(got) == sorted(want)
    for path, values in want.items():
        other = np.asarray(got[path])
        assert other.dtype == values.dtype, path
        assert other.shape == values.shape, path
        if values.dtype.kind == "O" or values.dtype.kind == "T":
            assert [bytes(v) if isinstance(v, bytes) else v for v in other.ravel()] == [
                bytes(v) if isinstance(v, bytes) else v for v in values.ravel()
            ], path
        else:
            np.testing.assert_array_equal(other, values, err_msg=path, strict=True)


def read_local(url: str, offset: int, size: int) -> bytes:
    """A byte range of a ``file://`` URL (percent-encoded)."""
    assert url.startswith("file://"), url
    with open(unquote(url[len("file://") :]), "rb") as f:
        f.seek(offset)
        data = f.read(size)
    assert len(data) == size, url
    return data


def mdim_values(path: Path, read: ReadRange = read_local) -> dict[str, np.ndarray]:
    """Every array of an mdim-refs file: its ``zarr.json`` from ``arrays``, its chunks
    from the ``refs_`` view (referenced bytes read at the published path, inline bytes
    as stored), decoded by zarr."""
    return {array: read_array() for array, read_array in mdim_arrays(path, read).items()}


def mdim_arrays(path: Path, read: ReadRange = read_local) -> dict[str, Callable[[], np.ndarray]]:
    """Every array of an mdim-refs file, as a function that reads it (see
    :func:`mdim_values`): a caller may judge each array's failure apart."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        arrays = db.execute("SELECT array, zarr_json, chunk_table FROM arrays").fetchall()
        return {array: functools.partial(
                    _decoded, zarr_json,
                    db.execute(f'SELECT * FROM "refs_{table}"').fetchall(), read)
                for array, zarr_json, table in arrays}
    finally:
        db.close()


def _decoded(zarr_json: str, rows: list[tuple], read: ReadRange) -> np.ndarray:
    """One array from its ``zarr.json`` and its ``refs_`` rows, decoded by zarr."""
    ndim = len(json.loads(zarr_json)["shape"])
    docs = {"zarr.json": zarr_json.encode()}
    for row in rows:
        coords, (present, url, offset, size, _info, data) = row[:ndim], row[ndim:]
        assert present == 1
        key = "c/" + "/".join(map(str, coords))
        docs[key] = data if url is None else read(url, offset, size)
    store = MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in docs.items()})
    return zarr.open_array(store, mode="r")[...]


def kerchunk_values(path: Path, remote_protocol: str = "file",
                    remote_options: dict | None = None) -> dict[str, np.ndarray]:
    """Every array of a kerchunk JSON export, through fsspec's reference file system."""
    import fsspec
    from zarr.storage import FsspecStore

    options = dict(remote_options or {})
    if remote_protocol != "file":  # an async target file system must match the reference one
        options.setdefault("asynchronous", True)
    fs = fsspec.filesystem("reference", fo=str(path), remote_protocol=remote_protocol,
                           remote_options=options, asynchronous=True)
    group = zarr.open_group(FsspecStore(fs, read_only=True, path=""), mode="r", zarr_format=3)
    return {p: a[...] for p, a in walk(group).items()}


def icechunk_store(path: Path, authorize: dict):
    """A read-only session store of an Icechunk export, its containers authorized."""
    import icechunk

    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)),
                                    authorize_virtual_chunk_access=authorize)
    return repo.readonly_session("main").store


def local_access(root: Path) -> dict:
    """Authorization of the ``file://`` container at ``root``."""
    import icechunk

    return {root.resolve().as_uri() + "/": icechunk.credentials.LocalFileSystemAccess}


def icechunk_values(path: Path, authorize: dict) -> dict[str, np.ndarray]:
    """Every array of an Icechunk export, read with zarr."""
    group = zarr.open_group(icechunk_store(path, authorize), mode="r")
    return {p: a[...] for p, a in walk(group).items()}
