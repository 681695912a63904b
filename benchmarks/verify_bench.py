"""Check a bench hive against its plain copy (and moczarr.open_hive).

Usage (dev venv)::

    .venv/bin/python benchmarks/verify_bench.py HIVE PLAIN [--group atl06/o12]
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
import time
import warnings

import numpy as np
import xarray as xr

from moczarr_store import MocHiveStore


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("hive")
    ap.add_argument("plain")
    ap.add_argument("--group", default="atl06/o12")
    ap.add_argument("--field", default="h_mean")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--no-moczarr", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    ok = True

    t0 = time.time()
    h = xr.open_zarr(MocHiveStore(args.hive), group=args.group)
    t_h = time.time() - t0
    t0 = time.time()
    p = xr.open_zarr(args.plain)
    t_p = time.time() - t0
    print(f"open: MocHiveStore {t_h:.2f}s, plain {t_p:.2f}s; sizes {dict(h.sizes)}")
    same = sorted(h.variables) == sorted(p.variables) and dict(h.sizes) == dict(p.sizes)
    print(f"variables/sizes equal: {same}  vars={sorted(h.data_vars)}")
    ok &= same

    f = args.field
    chunk = h[f].encoding.get("chunks", h[f].data.chunksize)[0]
    n = h.sizes["cells"]
    nchunks = -(-n // chunk)
    rng = np.random.default_rng(0)
    picks = sorted({0, nchunks - 1, *rng.choice(nchunks, args.samples, replace=False).tolist()})
    for name in (f, "count", "morton"):
        for i in picks:
            sl = slice(i * chunk, min((i + 1) * chunk, n))
            a = h[name].isel(cells=sl).values
            b = p[name].isel(cells=sl).values
            eq = np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
            ok &= eq
            if not eq:
                print(f"  MISMATCH {name} chunk {i}")
    print(
        f"sampled chunks {picks} (chunk={chunk} cells) of {f}, count, morton: "
        f"{'equal' if ok else 'DIFFER'}"
    )

    sums = {}
    for label, ds in (("MocHiveStore", h), ("plain", p)):
        t0 = time.time()
        s = float(ds[f].astype("float64").sum(skipna=True).compute())
        c = int(ds["count"].sum().compute())
        sums[label] = (s, c)
        print(f"full sum {label}: {f}={s!r} count={c} ({time.time() - t0:.1f}s)")
    eq = sums["MocHiveStore"] == sums["plain"]
    ok &= eq
    print(f"full sums equal: {eq}")

    if not args.no_moczarr:
        import moczarr

        t0 = time.time()
        ds = moczarr.open_hive(args.hive)
        dt = time.time() - t0
        t0 = time.time()
        s = float(ds[f].astype("float64").sum(skipna=True).compute())
        ds_sum = time.time() - t0
        # open_hive chunks differently: float64 sums may differ in the last bits
        m_eq = bool(np.isclose(s, sums["plain"][0], rtol=1e-12)) and ds.sizes["cells"] == n
        ok &= m_eq
        print(
            f"moczarr.open_hive: {dt:.2f}s (cells={ds.sizes['cells']}); "
            f"{f} sum {s!r} ({ds_sum:.1f}s) equal: {m_eq}"
        )
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
