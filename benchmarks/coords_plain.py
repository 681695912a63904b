"""The coordinate rows of the targets, for the store and a plain zarr copy of the same group.

    python -m benchmarks.coords_plain HIVE:GROUP [HIVE:GROUP ...] [--field F] [--rounds N]

``xr.open_zarr(store, group=g)[field].load()`` also loads the group's ``morton`` and
``cell_ids`` (8 bytes a cell each), so its ratio to ``[field].values`` is bounded below by
the bytes it reads unless coordinates cost less per byte than a field. A plain zarr copy
of the same group (``make_plain_copy.copy_group``: every array's ``zarr.json`` and every
chunk the store serves, with its default options, so the same chunks and codecs) is read
the same way in the same rounds: what plain zarr reaches for the same rows is the bound
the machine sets. Values are checked equal between the two.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from benchmarks.make_plain_copy import copy_group
from moczarr_store import MocHiveStore

COORDS = ("morton", "cell_ids")


def _open(where, group: str | None) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(where, group=group)


def _reads(where, group: str | None, field: str, fields: list[str]) -> dict:
    return {
        "values": lambda: _open(where, group)[field].values,
        "load": lambda: _open(where, group)[field].load(),
        "all values": lambda: [_open(where, group)[n].values for n in fields],
        "ds load": lambda: _open(where, group).load(),
    }


def measure_coordinate_rows(hive: Path, group: str, field: str = "h_mean",
                            rounds: int = 5) -> list[dict]:
    """Rows ``{hive, row, ms, floor, floor_ms, ratio, target, met}`` (as
    ``benchmarks/targets.py``'s) for the store with its default options and for a plain
    zarr copy of the same group: ``[field].load()`` against ``[field].values`` and
    ``ds.load()`` against every field's ``.values``."""
    store = MocHiveStore(hive)
    ds = _open(store, group)
    fields = [n for n in ds.data_vars if n not in COORDS]
    tasks = {n: len(dict(ds[n].variable.data.__dask_graph__())) for n in (*COORDS, field)}
    print(f"# {hive.name} {group}: coordinates are lazy dask arrays (not indexes): "
          f"{ds['morton'].variable.data.numblocks[0]} chunks, tasks {tasks}; bytes: "
          f"{field} {ds[field].nbytes / 1e6:.0f} MB, morton + cell_ids "
          f"{(ds['morton'].nbytes + ds['cell_ids'].nbytes) / 1e6:.0f} MB", flush=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="coords-plain-") as tmp:
        copy = Path(tmp) / "plain"
        asyncio.run(copy_group(store, group, copy))
        zarr.consolidate_metadata(zarr.storage.LocalStore(str(copy)))
        plain = _open(str(copy), None)
        ours = _open(store, group)
        for n in (*COORDS, *fields):
            np.testing.assert_array_equal(plain[n].values, ours[n].values, err_msg=n)
        fns = {("store", k): fn for k, fn in _reads(store, group, field, fields).items()}
        fns.update({("plain", k): fn for k, fn in _reads(str(copy), None, field,
                                                              fields).items()})
        took: dict = {k: [] for k in fns}
        for _ in range(rounds):
            for k, fn in fns.items():
                gc.collect()
                start = time.perf_counter()
                fn()
                took[k].append(time.perf_counter() - start)
    t = {k: min(v) for k, v in took.items()}
    for who in ("store", "plain"):
        for label, key, anchor, anchor_name in (
            ("[field].load() (coordinates included) vs [field].values", "load", "values",
             "[field].values"),
            (f"ds.load() of all {len(fields)} fields vs their .values", "ds load",
             "all values", "fields' .values"),
        ):
            seconds, base = t[who, key], t[who, anchor]
            ratio = seconds / base
            name = label if who == "store" else f"plain zarr copy: {label}"
            rows.append({"hive": hive.name, "row": name, "ms": round(seconds * 1e3, 2),
                         "floor": anchor_name, "floor_ms": round(base * 1e3, 2),
                         "ratio": round(ratio, 2), "target": 2, "met": bool(ratio <= 2)})
            print(f"| {hive.name} | {name} | {seconds * 1e3:,.1f} ms | {anchor_name} "
                  f"{base * 1e3:,.1f} ms | {ratio:.2f}x | <= 2x | "
                  f"{'met' if ratio <= 2 else 'MISSED'} |", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+", metavar="HIVE:GROUP")
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for target in args.targets:
        hive, _, group = target.rpartition(":")
        measure_coordinate_rows(Path(hive), group, args.field, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
