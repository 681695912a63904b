"""Check a bench hive against its plain copy (and moczarr.open_hive).

    python -m benchmarks.verify_bench HIVE PLAIN [--group atl06/o12]
        [--field h_mean] [--samples 5]

* ``xr.open_zarr(MocHiveStore(HIVE), group=GROUP)`` vs ``xr.open_zarr(PLAIN)``:
  same variables, shapes, chunks; ``--samples`` random chunks (plus the first
  and the last) of the field, of ``count`` and of ``morton`` compared exactly
  (NaN == NaN); then a full-array sum of the field (dask, float64) on both.
* ``moczarr.open_hive(HIVE)`` is timed and its field sum compared too.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import xarray as xr

from benchmarks.common import best
from moczarr_store import MocHiveStore


def _sums(ds, field: str) -> tuple[float, int]:
    return (float(ds[field].astype("float64").sum(skipna=True).compute()),
            int(ds["count"].sum().compute()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hive")
    ap.add_argument("plain")
    ap.add_argument("--group", default="atl06/o12")
    ap.add_argument("--field", default="h_mean")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--no-moczarr", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    (t_h, h), (t_p, p) = (best(lambda w=w, g=g: xr.open_zarr(w, group=g), 1) for w, g in
                          ((MocHiveStore(args.hive), args.group), (args.plain, None)))
    ok = sorted(h.variables) == sorted(p.variables) and dict(h.sizes) == dict(p.sizes)
    print(f"open: MocHiveStore {t_h:.2f}s, plain {t_p:.2f}s; sizes {dict(h.sizes)}; "
          f"variables/sizes equal: {ok}  vars={sorted(h.data_vars)}")
    f, n = args.field, h.sizes["cells"]
    chunk = h[f].encoding.get("chunks", h[f].data.chunksize)[0]
    nchunks = -(-n // chunk)
    rng = np.random.default_rng(0)
    picks = sorted({0, nchunks - 1, *rng.choice(nchunks, args.samples, replace=False).tolist()})
    for name in (f, "count", "morton"):
        for i in picks:
            a, b = (ds[name].isel(cells=slice(i * chunk, (i + 1) * chunk)).values for ds in (h, p))
            if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                ok = False
                print(f"  MISMATCH {name} chunk {i}")
    print(f"sampled chunks {picks} (chunk={chunk} cells) of {f}, count, morton: "
          f"{'equal' if ok else 'DIFFER'}")
    sums = {}
    for label, ds in (("MocHiveStore", h), ("plain", p)):
        seconds, sums[label] = best(lambda ds=ds: _sums(ds, f), 1)
        print(f"full sum {label}: {f}={sums[label][0]!r} count={sums[label][1]} ({seconds:.1f}s)")
    ok &= (equal := sums["MocHiveStore"] == sums["plain"])
    print(f"full sums equal: {equal}")
    if not args.no_moczarr:
        import moczarr

        opened, ds = best(lambda: moczarr.open_hive(args.hive), 1)
        seconds, total = best(lambda: float(ds[f].astype("float64").sum(skipna=True).compute()),
                              1)
        # open_hive chunks differently: float64 sums may differ in the last bits
        equal = bool(np.isclose(total, sums["plain"][0], rtol=1e-12)) and ds.sizes["cells"] == n
        ok &= equal
        print(f"moczarr.open_hive: {opened:.2f}s (cells={ds.sizes['cells']}); {f} sum {total!r} "
              f"({seconds:.1f}s) equal: {equal}")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
