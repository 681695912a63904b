"""Compare ``MocHiveStore`` with the reference reader ``moczarr.open_hive`` on any hive.

    python -m conformance.check PATH [PATH...] [--verify open] [--chunking shard|inner]
        [--computed]

For each product and ``o{order}`` group the store presents, ``xr.open_zarr`` of that
group must match ``moczarr.open_hive(PATH, product=...)`` (``open_level`` for an order
other than the source's), as the README's "Pyramids" paragraph promises; a windowed group
is compared window by window. With ``--computed``, every stored overview order is also
computed from the source and compared with it. One line per product/order[/window]:
``PASS``, ``FAIL`` (with the reasons) or ``SKIP`` (a product the store declines to serve).
Exits 1 on any FAIL.
"""

from __future__ import annotations

import argparse
import re
import sys

import moczarr
import numpy as np
import xarray as xr
import zarr

from moczarr_store import MocHiveStore

COORDS = ("morton", "cell_ids")


def _values_differ(ref: np.ndarray, got: np.ndarray) -> str | None:
    """Why two arrays differ (NaN equals NaN; objects compare elementwise), or None."""
    if ref.shape != got.shape:
        return f"shape {ref.shape} != {got.shape}"
    if ref.dtype.kind in "fc" and got.dtype.kind in "fc":
        equal = (ref == got) | (np.isnan(ref) & np.isnan(got))
    elif ref.dtype.kind == "O" or got.dtype.kind == "O":
        equal = np.array(
            [a == b or (a != a and b != b) for a, b in zip(ref.flat, got.flat, strict=True)],
            dtype=bool,
        ).reshape(ref.shape)
    else:
        equal = ref == got
    if np.all(equal):
        return None
    at = tuple(int(i) for i in np.argwhere(~equal)[0])
    return f"{int((~equal).sum())} values differ, first at {at}: {ref[at]!r} != {got[at]!r}"


def compare(ref: xr.Dataset, got: xr.Dataset) -> list[str]:
    """The differences between the reference dataset and ours; empty when they match."""
    diffs = []
    if dict(ref.sizes) != dict(got.sizes):
        diffs.append(f"sizes {dict(ref.sizes)} != {dict(got.sizes)}")
    missing, extra = set(ref.data_vars) - set(got), set(got.data_vars) - set(ref)
    if missing or extra:
        diffs.append(f"data variables: missing {sorted(missing)}, extra {sorted(extra)}")
    for name in sorted(set(ref.data_vars) & set(got.data_vars)):
        r, g = ref[name].variable, got[name].variable
        if r.dims != g.dims:
            diffs.append(f"{name}: dims {r.dims} != {g.dims}")
        if r.dtype != g.dtype:
            diffs.append(f"{name}: dtype {r.dtype} != {g.dtype}")
        elif r.dims == g.dims and (why := _values_differ(r.values, g.values)):
            diffs.append(f"{name}: {why}")
        # ours adds the CF grid mapping of the level to each field (the reference has none)
        ours = {k: v for k, v in g.attrs.items()
                if (k, v) != ("grid_mapping", "healpix") or k in r.attrs}
        if r.attrs != ours:
            diffs.append(f"{name}: attrs {r.attrs} != {ours}")
    for name in COORDS:
        if name not in got.coords:
            diffs.append(f"{name}: not a coordinate of ours")
        elif name in ref.coords:
            r, g = ref[name].values, got[name].values
            if r.dtype != g.dtype:
                diffs.append(f"{name}: dtype {r.dtype} != {g.dtype}")
            elif why := _values_differ(r, g):
                diffs.append(f"{name}: {why}")
    for name in sorted(set(ref.coords) - set(COORDS)):
        if name not in got.variables:
            diffs.append(f"coordinate {name}: missing")
        elif why := _values_differ(ref[name].values, got[name].values):
            diffs.append(f"coordinate {name}: {why}")
    if ref.attrs.get("morton_hive") != got.attrs.get("morton_hive"):
        diffs.append(
            f"attrs['morton_hive'] {ref.attrs.get('morton_hive')} != {got.attrs.get('morton_hive')}"
        )
    return diffs


def window_slices(got: xr.Dataset):
    """``(label, dataset)`` per window of a windowed group, else ``(None, got)``."""
    if "window" not in got.dims:
        yield None, got
        return
    for i, label in enumerate(got["window"].values):
        one = got.isel(window=i)
        yield str(label), one.drop_vars([n for n in one.coords if one[n].ndim == 0])


def compare_window(ref: xr.Dataset, got: xr.Dataset, fill: dict | None = None) -> list[str]:
    """``compare`` on the window's cells; our other cells must hold the fill value.

    ``fill`` maps a variable to its array's fill value (default NaN).
    """
    inside = np.isin(got["morton"].values, ref["morton"].values)
    diffs = compare(ref, got.isel(cells=inside))
    for name, var in got.isel(cells=~inside).data_vars.items():
        expected = np.full_like(var.values, (fill or {}).get(name, np.nan))
        if _values_differ(expected, var.values):
            diffs.append(f"{name}: data in cells outside the window's domain")
    return diffs


def reference(
    path: str, product: str | None, order: int, window: str | None, all_time: bool = False
) -> xr.Dataset:
    """moczarr's dataset: ``open_hive`` at the source order, ``open_level`` at others (and
    ``open_level(all_time=True)`` for the all-time folds)."""
    kwargs = {k: v for k, v in (("product", product), ("window", window)) if v}
    if all_time:
        return moczarr.open_level(path, order, all_time=True, **kwargs)
    ref = moczarr.open_hive(path, **kwargs)
    if ref.attrs["morton_hive"]["cell_order"] != order:
        ref = moczarr.open_level(path, order, **kwargs)
        if ref is None:
            raise LookupError(f"moczarr.open_level finds no order {order}")
    return ref


def as_computed(ref: xr.Dataset, got: xr.Dataset, declared: dict) -> tuple[xr.Dataset,
                                                                               xr.Dataset]:
    """A stored overview (``ref``) and the same order computed (``got``), made comparable:
    the reference keeps the fields the computed level ``declared`` it folds (the others,
    t-digests and means, are absent from computed orders by design), each computed
    field's attributes lose what says how it was computed, and its node order is the
    reference's (a computed level has the layout of zagg's overviews, whose nodes may be
    coarser than a stored leaf column's: its other cells hold the fill value)."""
    ref = ref.drop_vars([n for n in ref.data_vars if n not in declared])
    got = got.copy()
    for var in got.data_vars.values():
        var.attrs.pop("morton_hive_store", None)
    summary = dict(got.attrs.get("morton_hive") or {})
    if "shard_order" in summary:
        summary["shard_order"] = ref.attrs.get("morton_hive", {}).get("shard_order")
        got.attrs["morton_hive"] = summary
    return ref, got


def check_group(path: str, store: MocHiveStore, product: str | None, group: str) -> list[str]:
    """One PASS/FAIL line per window (or one line) of a ``{product}/o{order}`` group.

    ``product`` is what moczarr is given (``None`` for a bare hive). A computed group is
    compared with the overview the hive stores at its order (the writer's fold).
    """
    try:
        slices = list(window_slices(xr.open_zarr(store, group=group)))
        opened = zarr.open_group(store, path=group, mode="r")
        fill = {n: a.fill_value for n, a in opened.arrays()}
        computed = opened.attrs["morton_hive_store"].get("computed")
    except Exception as err:
        return [f"FAIL {path} {group}: {type(err).__name__}: {err}"]
    lines = []
    for window, got in slices:
        where = f"{path} {group}" + (f"[{window}]" if window else "")
        try:
            order = int(group.rsplit("/o", 1)[1])
            ref = reference(path, product, order, window, "/all_time/" in group)
            if computed is not None:
                ref, got = as_computed(ref, got, computed["fields"])
                where += " (computed)"
            # a window's cells, or a computed level's (its nodes may hold cells a stored
            # leaf column has not): the others hold the fill value
            diffs = (compare(ref, got) if window is None and computed is None
                     else compare_window(ref, got, fill))
        except Exception as err:
            diffs = [f"{type(err).__name__}: {err}"]
        if diffs:
            lines.append(f"FAIL {where}: " + "; ".join(diffs))
        else:
            lines.append(f"PASS {where} cells={ref.sizes.get('cells')} vars={len(ref.data_vars)}")
    return lines


def check_hive(path: str, verify: str = "lazy", chunking: str = "leaf",
               computed: bool = False) -> bool:
    """Print one line per product/order(/window) of the hive at ``path``; True if none failed.

    The orders the hive stores are compared with moczarr. ``computed``: each of them is
    read computed too (``computed_orders="all"``: folded from the source, no stored
    overview read) and compared with the overview moczarr reads."""
    try:
        store = MocHiveStore(path, verify=verify, chunking=chunking, computed_orders="none")
        root = zarr.open_group(store, mode="r")
        info = root.attrs["morton_hive_store"]
        folded = MocHiveStore(path, verify=verify, chunking=chunking,
                              computed_orders="all") if computed else None
        every = zarr.open_group(folded, mode="r") if folded is not None else None
    except Exception as err:
        print(f"FAIL {path}: cannot open the store: {type(err).__name__}: {err}")
        return False
    lines = [f"SKIP {path} {name}: {why}" for name, why in (info.get("skipped") or {}).items()]
    for name in info["products"]:
        try:
            orders = [k for k in root[name].group_keys() if re.fullmatch(r"o\d+", k)]
        except Exception as err:
            lines.append(f"FAIL {path} {name}: {type(err).__name__}: {err}")
            continue
        if not orders:
            lines.append(f"FAIL {path} {name}: no o{{order}} group")
        groups = [f"{name}/{o}" for o in sorted(orders, key=lambda o: -int(o[1:]))]
        if "all_time" in root[name]:
            groups += [f"{name}/all_time/{o}" for o in sorted(root[name]["all_time"].group_keys())]
        product = None if info["bare"] else name
        for group in groups:
            lines += check_group(path, store, product, group)
            if every is not None and group in every and "computed" in every[group].attrs[
                    "morton_hive_store"]:
                lines += check_group(path, folded, product, group)  # type: ignore[arg-type]
    print("\n".join(lines))
    return not any(line.startswith("FAIL") for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.check", description=__doc__)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="hive root (path or URL)")
    parser.add_argument("--verify", choices=("lazy", "open"), default="lazy")
    parser.add_argument("--chunking", choices=("shard", "leaf", "inner"), default="leaf")
    parser.add_argument("--computed", action="store_true",
                        help="also compute every stored overview order from the source and "
                             "compare it with the overview moczarr reads")
    args = parser.parse_args(argv)
    results = [check_hive(path, args.verify, args.chunking, args.computed)
               for path in args.paths]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
