"""What the cell centres (``centres=True``) cost the reads that do not ask for them.

    python -m benchmarks.centres_bench HIVE:GROUP [--field NAME] [--rounds N]

Three ways to open a level, each on a new ``MocHiveStore`` every time and timed in turn
(``common.alternate``): ``xr.open_zarr`` with the centres off (the default) and on, and
``open_cells`` with them on. For each: the open (before any field is read), a first
``[field].values``, a first ``[field].load()`` (xarray loads a field's coordinates with
it), a first ``ds.load()``, and a first ``lon.values`` (the centres asked for). Each
row's ratio is against the centres off, in the same run. The field's values are checked
equal to ``moczarr.open_hive``'s (``targets.reference``) before anything is timed. A
hive without windows (``--targets`` measures windowed ones).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from moczarr_store import MocHiveStore, open_cells

from .common import Fresh, alternate, open_xr
from .targets import reference

OPENERS = {
    "open_zarr, centres off": lambda hive, group: open_xr(MocHiveStore(hive), group),
    "open_zarr, centres on": lambda hive, group: open_xr(MocHiveStore(hive, centres=True),
                                                         group),
    "open_cells, centres on": lambda hive, group: open_cells(
        MocHiveStore(hive, centres=True), group),
}


def rows(field: str) -> dict:
    """Each row's read of an opened dataset (``None``: the open itself)."""
    return {
        "open": None,
        "first [field].values": lambda ds: ds[field].values,
        "first [field].load()": lambda ds: ds[field].load(),
        "first ds.load()": lambda ds: ds.load(),
        "first lon.values": lambda ds: ds["lon"].values if "lon" in ds else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", help="HIVE:GROUP, a level of a hive without windows")
    ap.add_argument("--field", default=None, help="default: the level's first field")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    where, group = args.target.rsplit(":", 1)
    hive = Path(where)
    plain = OPENERS["open_zarr, centres off"](hive, group)
    if "window" in plain.dims:
        raise SystemExit(f"{args.target}: windowed; measure a level without windows")
    field = args.field or next(n for n, v in plain.data_vars.items() if "cells" in v.dims)
    want = reference(hive, [field])[field]
    for name, opener in OPENERS.items():
        np.testing.assert_array_equal(opener(hive, group)[field].load().values, want, name)
    print(f"{hive} {group} {field}: {want.size:,} cells, best of {args.rounds} rounds")
    print(f"{'row':22s}" + "".join(f"{name:>26s}" for name in OPENERS))
    for label, read in rows(field).items():
        fns = {name: Fresh(lambda o=opener: None, lambda _, o=opener: o(hive, group))
               if read is None else Fresh(lambda o=opener: o(hive, group), read)
               for name, opener in OPENERS.items()}
        if label == "first lon.values":
            fns.pop("open_zarr, centres off")
        seconds = alternate(fns, args.rounds)
        off = seconds.get("open_zarr, centres off")
        cells = [f"{seconds[n] * 1e3:9.1f} ms" + (f" ({seconds[n] / off:4.2f}x)" if off else "")
                 if n in seconds else "" for n in OPENERS]
        print(f"{label:22s}" + "".join(f"{c:>26s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
