"""Plain zarr copies of a group, timed for the in-process target rows beside the store.

Two copies of every array of the group (``make_plain_copy.copy_group``): the layout zagg
wrote (``"shard"``: one chunk per leaf, the leaves' own codecs) and the layout the store
presents with its default options. A plain copy has no store state: its "first" read
differs from its "second" only by zarr opening the array's metadata. Reading zagg's layout
decodes every 64-cell inner chunk (13 s a field on 512 leaves by zarr on 2 shared cores):
it holds the one field, its zarr scan is timed once, and nothing else; the other rows, over
the wire too, time the store's layout alone. Each copy is read by the very call of the
store's row beside it (xarray's: ``common.open_xr``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import OneField, alternate, open_xr, random_reads
from benchmarks.make_plain_copy import copy_group
from moczarr_store import MocHiveStore

# name: the store's chunking it copies (None: the default)
COPIES = {"zagg's layout": "shard", "the store's layout": None}
# each target row (the start of its label): the copies' reads timed for it, and for a row
# comparing two reads of one source, the read that is its own anchor
ROWS = {
    "first scan (new store), zarr": ("first zarr", None),
    "first scan (new store), xr": ("values", None),
    "second scan (same store), zarr": ("second zarr", None),
    "second scan (same store), xarray": ("values", None),
    "[field].load()": ("load", "values"),
    "ds.load()": ("ds load", "all values"),
    "random single cell": ("random single cell", None),
    "random leaf-sized slice": ("random leaf-sized slice", None),
}


def slow(copy: str) -> bool:
    """Whether ``copy`` is zagg's layout (slow to decode: see the module's docstring)."""
    return COPIES.get(copy) == "shard"


def make_copies(hive: Path, group: str, field: str, out: Path) -> dict[str, Path]:
    """Both copies under ``out`` (written here): ``{name: path}``; every array of ``group``
    in the store's layout, ``field`` alone in zagg's. Cost: those arrays read through the
    store and written."""
    copies = {}
    for i, (name, chunking) in enumerate(COPIES.items()):
        copies[name] = path = out / f"copy{i}"
        store = MocHiveStore(hive, **({} if chunking is None else {"chunking": chunking}))
        source = OneField(store, group, field) if slow(name) else store
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            asyncio.run(copy_group(source, group, path))
            zarr.consolidate_metadata(zarr.storage.LocalStore(str(path)))
    return copies


def _reads(path: Path, field: str, fields: list[str], want: dict) -> dict:
    """The reads of one copy in the store's layout, values checked first."""
    array = zarr.open_array(str(path / field), mode="r")
    reads = {
        "first zarr": lambda: zarr.open_array(str(path / field), mode="r")[:],
        "second zarr": lambda: array[:],
        "values": lambda: open_xr(str(path))[field].values,
        "load": lambda: open_xr(str(path))[field].load().values,
    }
    for key, fn in reads.items():
        np.testing.assert_array_equal(fn(), want[field], err_msg=f"{path.name} {key}")
    loaded = open_xr(str(path)).load()
    for n in fields:
        np.testing.assert_array_equal(loaded[n].values, want[n], err_msg=f"{path.name} {n}")
    reads["all values"] = lambda: [open_xr(str(path))[n].values for n in fields]
    reads["ds load"] = lambda: open_xr(str(path)).load()
    return reads


def time_plain(copies: dict[str, Path], field: str, fields: list[str],
               want: dict[str, np.ndarray], cells: int, rounds: int = 3) -> dict[str, list]:
    """Per target row (keyed by the start of its label), each copy's ``(name, seconds, own
    anchor seconds or None)``: the reads of ``targets.measure_targets`` on the copies,
    each the best of ``rounds`` timed in turn (zagg's layout: one zarr read, checked in its
    time); random reads per read."""
    took: dict[str, dict[str, float]] = {}
    fast = {}
    for name, path in copies.items():
        if slow(name):
            def scan(path=path, name=name):
                got = zarr.open_array(str(path / field), mode="r")[:]
                np.testing.assert_array_equal(got, want[field], err_msg=name)
            took[name] = alternate({"second zarr": scan}, 1)
            took[name]["first zarr"] = took[name]["second zarr"]
        else:
            took[name] = alternate(_reads(path, field, fields, want), rounds)
            fast[name] = zarr.open_array(str(path / field), mode="r")
    for (kind, name), seconds in random_reads(want[field], cells, fast).items():
        took[name][kind] = seconds
    out: dict[str, list] = {}
    for row, (key, anchor) in ROWS.items():
        for name, t in took.items():
            if key in t:
                out.setdefault(row, []).append((name, t[key], t.get(anchor)))
    return out


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
