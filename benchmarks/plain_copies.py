"""Plain zarr copies of a group, timed for the in-process target rows beside the store.

Two copies of every array of the group (``make_plain_copy.copy_group``): the layout zagg
wrote (``"shard"``: one chunk per leaf, the leaves' own codecs) and the layout the store
presents with its default options (its ``zarr.json`` verbatim, its chunks as served).
A plain copy has no store state: its "first" read differs from its "second" only by
zarr opening the array's metadata. Reading zagg's layout decodes every 64-cell inner
chunk (on a shared 2-core machine, 13 s a field on 512 leaves by zarr, 72 s by xarray
with a dask chunk per leaf): it holds the one field, its zarr scan is timed once
(:func:`rounds_for`), and nothing else; the other rows, over the wire too, time the
store's layout alone. Each copy is read by the very call of the store's row beside it
(xarray's: :func:`benchmarks.targets._open_xr`, its defaults, a dask chunk per zarr chunk).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from benchmarks.common import OneField, alternate, random_reads
from moczarr_store import MocHiveStore

# name: the store's chunking it copies (None: the default)
COPIES = {"zagg's layout": "shard", "the store's layout": None}


def rounds_for(copy: str, rounds: int) -> int:
    """The rounds a read of ``copy`` is timed in: one for zagg's layout."""
    return 1 if slow(copy) else rounds


def slow(copy: str) -> bool:
    """Whether ``copy`` is zagg's layout (slow to decode: see the module's docstring)."""
    return COPIES.get(copy) == "shard"


def make_copies(hive: Path, group: str, field: str, out: Path) -> dict[str, Path]:
    """Both copies under ``out`` (written here): ``{name: path}``; every array of ``group``
    in the store's layout, ``field`` alone in zagg's. Cost: those arrays read through the
    store and written."""
    from benchmarks.make_plain_copy import copy_group

    copies = {}
    for i, (name, chunking) in enumerate(COPIES.items()):
        path = out / f"copy{i}"
        store = MocHiveStore(hive, **({} if chunking is None else {"chunking": chunking}))
        source = OneField(store, group, field) if slow(name) else store
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            asyncio.run(copy_group(source, group, path))
            zarr.consolidate_metadata(zarr.storage.LocalStore(str(path)))
        copies[name] = path
    return copies


def _open_xr(path: Path) -> xr.Dataset:
    """The copy at ``path`` by the very call the store's xarray rows make
    (:func:`benchmarks.targets._open_xr`: xarray's defaults, a dask chunk per zarr chunk).
    Only the store's layout is read by xarray (zagg's is read by zarr alone)."""
    from benchmarks.targets import _open_xr as open_xr

    return open_xr(str(path))


def time_plain(copies: dict[str, Path], field: str, fields: list[str],
               want: dict[str, np.ndarray], cells: int, rounds: int = 3) -> dict[str, list]:
    """Per target row (keyed by the start of its label), each copy's ``(name, seconds,
    own anchor seconds or None)``: the reads of :func:`benchmarks.targets.measure_targets`
    on the copies, values checked equal to ``want`` first, each the best of ``rounds``
    timed in turn; random reads per read."""

    took: dict[tuple[str, str], float] = {}
    arrays = {}
    for name, path in copies.items():
        fns: dict[tuple[str, str], object] = {}
        arrays[name] = array = zarr.open_array(str(path / field), mode="r")
        checks = {
            "first zarr": lambda p=path: zarr.open_array(str(p / field), mode="r")[:],
            "second zarr": lambda a=array: a[:],
            "values": lambda p=path: _open_xr(p)[field].values,
            "load": lambda p=path: _open_xr(p)[field].load().values,
        }
        if slow(name):  # one zarr read for both zarr rows, checked
            checks = {"second zarr": checks["first zarr"]}
            for key, fn in checks.items():
                fns[name, key] = _checked(fn, want[field], f"{name} {key}")
        else:
            for key, fn in checks.items():
                np.testing.assert_array_equal(fn(), want[field], err_msg=f"{name} {key}")
                fns[name, key] = fn
            loaded = _open_xr(path).load()
            for n in fields:
                np.testing.assert_array_equal(loaded[n].values, want[n], err_msg=f"{name} {n}")
            del loaded
            fns[name, "all values"] = lambda p=path: [_open_xr(p)[n].values for n in fields]
            fns[name, "ds load"] = lambda p=path: _open_xr(p).load()
        took.update(alternate(fns, rounds_for(name, rounds)))
    lookups = random_reads(want[field], cells,
                            {n: a for n, a in arrays.items() if not slow(n)})
    out: dict[str, list] = {}
    for name in copies:
        t = {key: seconds for (copy, key), seconds in took.items() if copy == name}
        for row, seconds, anchor in (
            ("first scan (new store), zarr", t.get("first zarr", t["second zarr"]), None),
            ("first scan (new store), xr", t.get("values"), None),
            ("second scan (same store), zarr", t["second zarr"], None),
            ("second scan (same store), xarray", t.get("values"), None),
            ("[field].load()", t.get("load"), t.get("values")),
            ("ds.load()", t.get("ds load"), t.get("all values")),
            ("random single cell", lookups.get(("random single cell", name)), None),
            ("random leaf-sized slice", lookups.get(("random leaf-sized slice", name)), None),
        ):
            if seconds is not None:
                out.setdefault(row, []).append((name, seconds, anchor))
    return out


def _checked(read, want: np.ndarray, what: str):
    """``read`` whose result is checked equal to ``want`` after each run (inside its time:
    for a read of seconds, a check of milliseconds)."""
    def run():
        np.testing.assert_array_equal(got := read(), want, err_msg=what)
        return got
    return run


def attach(rows: list[dict], plain: dict[str, list]) -> None:
    """Each plain copy's time beside the target row it was timed for: ``row["plain"]``, a
    list of ``{copy, ms, ratio}`` (the ratio to the row's floor, or to the copy's own
    anchor where the row compares two reads of one source)."""
    for row in rows:
        for start, timed in plain.items():
            if row["row"].startswith(start):
                row["plain"] = [
                    {"copy": name, "ms": round(seconds * 1e3, 2),
                     "ratio": round(seconds / (anchor if anchor else row["floor_ms"] / 1e3), 2)}
                    for name, seconds, anchor in timed]
