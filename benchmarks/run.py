"""The performance harness: every measure as a ratio against its anchors, in one run.

    python -m benchmarks.run --quick                     # committed fixture, < 1 minute
    python -m benchmarks.run --hive H --plain P --group G [--scale100k S --scale1m S]
        [--subset N] [--only open,full,...]

Anchors are ``moczarr.open_hive`` (the reference reader) and a plain zarr v3 copy of the
same data (``benchmarks/make_plain_copy.py``: same chunks and codecs, no virtualisation).
Absolute times are printed, never asserted: the machines are shared and noisy, so each
figure is taken as the best of a few repeats (one for runs over 10 s) and compared within
the same run. ``--subset N`` measures the slow anchors and modes on the first N leaves only.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import gc
import hashlib
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from zarr.core import codec_pipeline as zarr_pipelines
from zarr.core.buffer import NDBuffer, default_buffer_prototype

from benchmarks.common import (
    DEFAULT,
    OneField,
    SlowBackend,
    alternate,
    best,
    cold_scan,
    nbytes,
    random_reads,
    raw_read,
    read_into,
    record_reads,
    target_cells,
)
from moczarr_store import MocHiveStore, config, mapped

REPO = Path(__file__).resolve().parents[1]
MODES = ("shard", "leaf", "inner", "span")
MEASURES = (
    "scan", "spans", "open", "full", "moczarr", "random", "requests", "fabrication", "latency",
    "scale", "dask", "verify", "serve", "remote", "targets",
)
ROWS: list[tuple[str, str, str, str]] = []


def row(measure: str, ours: str, anchor: str, ratio: str) -> None:
    ROWS.append((measure, ours, anchor, ratio))
    print(f"| {measure} | {ours} | {anchor} | {ratio} |", flush=True)


def moczarr_open(hive: Path):
    import moczarr

    with warnings.catch_warnings(action="ignore"):
        return moczarr.open_hive(str(hive))


def open_ours(hive: Path, group: str, **options) -> tuple[xr.Dataset, MocHiveStore]:
    store = MocHiveStore(hive, **options)
    with warnings.catch_warnings(action="ignore"):
        return xr.open_zarr(store, group=group), store


# -- 0. one field against the disk -------------------------------------------------------

KNOBS: tuple[dict, ...] = (
    {"async.concurrency": 4},
    {"async.concurrency": 64},
    {"async.concurrency": 256},
    {"codec_pipeline.batch_size": 16},
    {"async.concurrency": 256, "codec_pipeline.batch_size": 64},
)
# zarr >= 3.4: an opt-in codec pipeline that fetches, decodes and scatters each chunk in one
# step, synchronously on a thread pool when the store offers synchronous I/O
FUSED = "zarr.core.codec_pipeline.FusedCodecPipeline"
HAS_FUSED = hasattr(zarr_pipelines, "FusedCodecPipeline")


def _tuned(open_array, settings: dict):
    """``[:]`` of ``open_array()`` under zarr's configuration ``settings``, the array opened
    under them too (zarr binds an array's codec pipeline, its batch size included, when
    the array is opened)."""
    with zarr.config.set(settings):
        array = open_array()

    def read():
        with zarr.config.set(settings):
            return array[:]
    return read


def _leaf_objects(hive: Path, group: str, field: str) -> tuple[list[str], float]:
    """The objects a warm zarr scan of ``field`` reads (recorded at the local reader), and
    that scan's requests per leaf when cold (a fresh store; metadata reads not counted)."""
    store = MocHiveStore(hive, chunking=DEFAULT)
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    store.request_stats.reset()
    array[:]
    cold = store.request_stats.total / array.nchunks
    reads = record_reads(store)
    array[:]
    return [f"{hive}/{path}" for path, _option in reads], cold


INTO_NEW = "raw floor into one new array, readinto()"


def _raw_into_new(paths: list[str], nbytes: int) -> np.ndarray:
    """The objects read one after another into one new array of their total size: the
    floor of any read that hands back new memory (zarr's ``[:]``, dask's joined result)."""
    out = np.empty(nbytes, dtype=np.uint8)
    view, at = memoryview(out), 0
    for path in paths:
        with open(path, "rb") as f:
            at += f.readinto(view[at:])
    if at != nbytes:
        raise SystemExit(f"the objects changed while measured: {at} bytes, not {nbytes}")
    return out


def _one_chunk_copy(want: np.ndarray, array: zarr.Array, field: str, out: Path) -> zarr.Array:
    """``want`` written as ``field`` of a plain zarr v3 group at ``out``, ONE uncompressed
    chunk (``array``'s dimension names): zarr's and dask's work per chunk paid once (zarr
    then reads the object whole into a new buffer and copies it into its output)."""
    names = array.metadata.dimension_names  # type: ignore[union-attr]
    copy = zarr.open_group(str(out), mode="w", zarr_format=3).create_array(
        field, shape=want.shape, chunks=want.shape, dtype=want.dtype, compressors=None,
        dimension_names=names, fill_value=array.fill_value)
    copy[...] = want
    return copy


def _plain_leaf_copy(hive: Path, group: str, field: str, out: Path,
                     chunking: str = DEFAULT) -> zarr.Array:
    """``field`` copied into a plain zarr v3 array in the layout the store presents with
    ``chunking`` (its ``zarr.json`` verbatim: one uncompressed chunk per leaf, or per span),
    from the store itself."""
    from benchmarks.make_plain_copy import copy_group

    async def one_field():
        store = MocHiveStore(hive, chunking=chunking)
        return await copy_group(OneField(store, group, field), group, out)

    with warnings.catch_warnings(action="ignore"):
        asyncio.run(one_field())
    return zarr.open_array(str(out / field), mode="r")


def _xr_field(where, group: str | None, field: str, coords: bool = False):
    with warnings.catch_warnings(action="ignore"):
        data = xr.open_zarr(where, group=group, consolidated=False if group is None else None)
    return data[field] if coords else data[field].variable


def _layout_reads(name: str, array: zarr.Array, store: MocHiveStore, plain: zarr.Array,
                  copy: Path, group: str, field: str) -> dict:
    """The reads of one presented layout: the store through zarr and through xarray's
    defaults (the field, and with its coordinates), a plain copy of that layout through both."""
    return {
        f"store {name}, zarr open_array()[:]": lambda: array[:],
        f"store {name}, xr.open_zarr(store, group=...) defaults, field .load()":
            lambda: _xr_field(store, group, field).load().values,
        f"store {name}, the same, field + its coordinates .load()":
            lambda: _xr_field(store, group, field, True).load().values,
        f"plain copy in the {name} layout, zarr [:]": lambda: plain[:],
        f"plain copy in the {name} layout, xr.open_zarr defaults, field .load()":
            lambda: _xr_field(copy, None, field).load().values,
    }


def _unlike(out: NDBuffer, want: np.ndarray) -> None:
    """Make every byte of ``out`` differ from ``want``'s (a read into it is then checked)."""
    np.invert(want.view(np.uint8), out=out.as_numpy_array().view(np.uint8))


def _into(array: zarr.Array, out: NDBuffer, want: np.ndarray):
    """:func:`read_into`, ``out`` made :func:`_unlike` the values before each read
    (untimed): no new output array, whose first writes are page faults (on this machine's
    VM slow and erratic, see benchmarks/README)."""
    def run():
        return read_into(array, out)
    run.prepare = lambda: _unlike(out, want)  # type: ignore[attr-defined]
    return run


def _mapped_afresh(read):
    """``read`` with every kept span let go (and unmapped) before, untimed: the scan maps
    its spans again, and keeps them."""
    def run():
        return read()
    run.prepare = mapped.release  # type: ignore[attr-defined]
    return run


def _unmapped(read):
    """``read`` with mapping off: spans are read into buffers."""
    def run():
        with config.set({"mapped.bytes": 0}):
            return read()
    return run


def measure_scan(hive: Path, group: str, field: str, rounds: int = 9) -> None:
    """One field, warm page cache, each row the best of ``rounds`` timed in turn, and a ratio
    to the raw floor (plain Python ``open().read()`` of the objects the store reads): the
    store through zarr (``open_array(...)[:]``), through ``xr.open_zarr`` with default
    arguments (``.load()``, open included), a plain zarr copy in the layout the store
    presents (made here, from the store), and zarr's configuration knobs on the store's zarr
    path. Two anchors bound what any layout reaches here: the objects read into one new
    array (every row's second ratio: the floor of a read that returns new memory) and a
    plain copy of one chunk. Values are checked equal across paths. Cost: three copies of
    one field in a temporary directory."""
    paths, cold = _leaf_objects(hive, group, field)
    store = MocHiveStore(hive, chunking=DEFAULT)
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    want = array[:]
    nbytes = raw_read(paths)

    spanned = MocHiveStore(hive, chunking="span")
    span_array = zarr.open_array(spanned, path=f"{group}/{field}", mode="r")
    k = span_array.chunks[0] // array.chunks[0]
    with tempfile.TemporaryDirectory() as tmp:
        copy, span_copy, whole_copy = (Path(tmp) / name for name in ("copy", "span", "whole"))
        plain = _plain_leaf_copy(hive, group, field, copy)
        plain_span = _plain_leaf_copy(hive, group, field, span_copy, "span")
        whole = _one_chunk_copy(want, array, field, whole_copy)
        leaf, span = f"chunking={DEFAULT!r}", f"chunking='span' ({k} leaves per chunk)"
        reads = {
            "raw floor, plain Python open().read()": lambda: raw_read(paths),
            INTO_NEW: lambda: _raw_into_new(paths, nbytes),
            "plain copy of ONE chunk, zarr [:]": lambda: whole[:],
            "plain copy of ONE chunk, xr.open_zarr defaults, field .load()":
                lambda: _xr_field(whole_copy, None, field).load().values,
            **_layout_reads(leaf, array, store, plain, copy, group, field),
            **_layout_reads(span, span_array, spanned, plain_span, span_copy, group, field),
        }
        out = default_buffer_prototype().nd_buffer.from_numpy_array(np.empty_like(want))
        for layout, viewed, copied in ((leaf, array, plain), (span, span_array, plain_span)):
            reads[f"store {layout}, zarr into a reused output array"] = _into(viewed, out, want)
            reads[f"plain copy in the {layout} layout, zarr into a reused output array"] = (
                _into(copied, out, want))
        reads.update({
            f"store {span}, zarr [:], its spans mapped in the scan (none kept before)":
                _mapped_afresh(lambda: span_array[:]),
            f"store {span}, zarr [:], spans read, not mapped": _unmapped(lambda: span_array[:]),
        })
        knobs = {", ".join(f"{k}={v}" for k, v in settings.items()): settings
                 for settings in KNOBS}
        def store_array(ours: MocHiveStore):
            return functools.partial(zarr.open_array, ours, path=f"{group}/{field}", mode="r")

        reads.update({f"store, zarr [:], {text}": _tuned(store_array(store), settings)
                      for text, settings in knobs.items()})
        if HAS_FUSED:  # the same API path on both sides: each layout, store and plain copy
            fused = {"codec_pipeline.path": FUSED}
            for layout, ours, theirs in ((leaf, store, copy), (span, spanned, span_copy)):
                reads[f"store {layout}, zarr [:], fused pipeline"] = _tuned(
                    store_array(ours), fused)
                reads[f"plain copy in the {layout} layout, zarr [:], fused pipeline"] = _tuned(
                    functools.partial(zarr.open_array, str(theirs / field), mode="r"), fused)
        for name, fn in reads.items():
            if not name.startswith("raw"):
                if hasattr(fn, "prepare"):
                    fn.prepare()
                np.testing.assert_array_equal(fn(), want, err_msg=name)
        took = alternate(reads, rounds)
        lookups = random_reads(want, array.chunks[0], {
            f"store {leaf}": array, f"plain copy in the {leaf} layout": plain,
            f"store {span}": span_array, f"plain copy in the {span} layout": plain_span})
    floor, mb = took[next(iter(reads))], nbytes / 1e6
    into_new = took[INTO_NEW]
    for name, seconds in took.items():
        row(f"scan {field} ({len(paths)} leaves, {mb:.1f} MB): {name}",
            f"{seconds * 1e3:.1f} ms", f"raw floor {floor * 1e3:.1f} ms",
            f"{seconds / floor:.2f}x the floor, {seconds / into_new:.2f}x into new memory")
    pairs = {"zarr": ("store {}, zarr open_array()[:]", "plain copy in the {} layout, zarr [:]"),
             "zarr into a reused output array": (
                 "store {}, zarr into a reused output array",
                 "plain copy in the {} layout, zarr into a reused output array"),
             "zarr, fused pipeline": ("store {}, zarr [:], fused pipeline",
                                      "plain copy in the {} layout, zarr [:], fused pipeline")}
    for layout in (leaf, span):
        for path, (ours_name, theirs_name) in pairs.items():
            if ours_name.format(layout) not in took:
                continue
            ours, theirs = took[ours_name.format(layout)], took[theirs_name.format(layout)]
            row(f"scan {field}: store vs plain copy of its layout ({layout}), {path}",
                f"{ours * 1e3:.1f} ms", f"plain {theirs * 1e3:.1f} ms",
                f"{theirs / ours:.2f}x the plain copy's speed")
    row(f"scan {field}: requests per leaf, cold zarr scan", f"{cold:.2f}",
        f"{len(paths)} leaves", "stamp + leaf metadata + chunk per leaf")
    anchor = f"store {leaf}"
    for (kind, name), per_read in lookups.items():
        base = lookups[kind, anchor]
        row(f"{kind}, {name}", f"{per_read * 1e3:.2f} ms/read",
            f"{anchor} {base * 1e3:.2f} ms/read", f"{per_read / base:.2f}x the default view's")


SPAN_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256)


def measure_spans(hive: Path, group: str, field: str, rounds: int = 5) -> None:
    """Leaves per chunk against both kinds of read: for ``"leaf"``, every count ``k`` of
    ``SPAN_COUNTS`` up to the level's node count and ``"span"`` (its own ``k``), one field
    scanned through zarr into a reused output array (no new memory's page faults) and
    through ``xr.open_zarr`` defaults, and random single cells and leaf-sized slices
    (stamps warm); values checked equal, each row the best of ``rounds`` timed in turn,
    scans as a ratio to the raw floor, random reads to ``"leaf"``'s."""
    paths, _cold = _leaf_objects(hive, group, field)

    def view(chunking: str | int) -> zarr.Array:
        return zarr.open_array(MocHiveStore(hive, chunking=chunking), path=f"{group}/{field}",
                               mode="r")

    arrays = {"leaf": view("leaf")}
    cells, want = arrays["leaf"].chunks[0], arrays["leaf"][:]
    nodes = want.shape[0] // cells
    for chunking in (*(k for k in SPAN_COUNTS if k <= nodes), "span"):
        array = view(chunking)
        k = array.chunks[0] // cells
        if chunking == "span" and k in arrays:  # the same view: named as "span" chooses it
            del arrays[k]
        arrays[f"'span' (k = {k})" if chunking == "span" else chunking] = array
    # each view keeps its spans mapped, as in a process that reads that view alone (the
    # views map the same files: their pages are the same page cache, counted once in memory)
    views = len(arrays)
    kept = {"mapped.objects": max(config.get("mapped.objects"), 2 * views * len(paths)),
            "mapped.touched_bytes": max(config.get("mapped.touched_bytes"),
                                        2 * views * want.nbytes)}
    try:
        with config.set(kept):
            _spans_timed(paths, arrays, want, group, field, rounds)
    finally:
        mapped.release()


def _spans_timed(paths: list[str], arrays: dict, want: np.ndarray, group: str, field: str,
                 rounds: int) -> None:
    """:func:`measure_spans`'s reads, timed and reported."""
    cells = arrays["leaf"].chunks[0]
    out = default_buffer_prototype().nd_buffer.from_numpy_array(np.empty_like(want))
    reads: dict = {"raw floor": lambda: raw_read(paths)}
    for name, array in arrays.items():
        reads[f"{name}, zarr into a reused output array"] = _into(array, out, want)
        reads[f"{name}, xr.open_zarr defaults, field .load()"] = (
            lambda st=array.store: _xr_field(st, group, field).load().values)
    for name, fn in reads.items():
        if name != "raw floor":
            if hasattr(fn, "prepare"):
                fn.prepare()
            np.testing.assert_array_equal(fn(), want, err_msg=name)
    took = alternate(reads, rounds)
    lookups = random_reads(want, cells, arrays, rounds=rounds)
    floor, mb = took["raw floor"], nbytes(paths) / 1e6
    for name in arrays:
        scans = [took[f"{name}, zarr into a reused output array"],
                 took[f"{name}, xr.open_zarr defaults, field .load()"]]
        single, whole = (lookups[kind, name] for kind in ("random single cell",
                                                            "random leaf-sized slice"))
        base = lookups["random single cell", "leaf"], lookups["random leaf-sized slice", "leaf"]
        row(f"spans {field} ({len(paths)} leaves of {cells:,} cells, {mb:.1f} MB): "
            f"chunking={name}, {arrays[name].nchunks} chunks",
            f"scan {scans[0] * 1e3:.1f} ms zarr / {scans[1] * 1e3:.1f} ms xarray; random "
            f"{single * 1e3:.2f} ms cell / {whole * 1e3:.2f} ms slice",
            f"raw floor {floor * 1e3:.1f} ms",
            f"{scans[0] / floor:.2f}x / {scans[1] / floor:.2f}x the floor; random "
            f"{single / base[0]:.2f}x / {whole / base[1]:.2f}x leaf's")


def measure_scan_all(hive: Path, group: str, rounds: int = 5) -> None:
    """Every field of ``group`` (its data variables), warm page cache, against the raw floor
    of all their objects: zarr array by array and ``xr.open_zarr(...).load()`` with default
    arguments, one leaf per chunk and in spans. Values are checked equal across paths."""
    with warnings.catch_warnings(action="ignore"):
        names = sorted(map(str, xr.open_zarr(MocHiveStore(hive), group=group).data_vars))
    paths = [p for name in names for p in _leaf_objects(hive, group, name)[0]]
    stores = {mode: MocHiveStore(hive, chunking=mode) for mode in (DEFAULT, "span")}
    arrays = {mode: [zarr.open_array(st, path=f"{group}/{n}", mode="r") for n in names]
              for mode, st in stores.items()}

    def xr_all(store):
        with warnings.catch_warnings(action="ignore"):
            ds = xr.open_zarr(store, group=group).load()
        return [ds[n].values for n in names]

    want = [a[...] for a in arrays[DEFAULT]]
    reads = {"raw floor, plain Python open().read()": lambda: raw_read(paths)}
    for mode, store in stores.items():
        reads[f"chunking={mode!r}, zarr, array by array [...]"] = (
            lambda a=arrays[mode]: [x[...] for x in a])
        reads[f"chunking={mode!r}, xr.open_zarr defaults, dataset .load()"] = (
            lambda st=store: xr_all(st))
    for name, fn in reads.items():
        if not name.startswith("raw"):
            for got, ref in zip(fn(), want, strict=True):
                np.testing.assert_array_equal(got, ref, err_msg=name)
    took = alternate(reads, rounds)
    floor, mb = took[next(iter(reads))], nbytes(paths) / 1e6
    for name, seconds in took.items():
        row(f"scan all {len(names)} fields ({len(paths)} objects, {mb:.1f} MB): "
            f"{name}", f"{seconds * 1e3:.1f} ms", f"raw floor {floor * 1e3:.1f} ms",
            f"{seconds / floor:.2f}x the floor")


# -- 1. open ---------------------------------------------------------------------------


def measure_open(hive: Path, plain: Path, group: str) -> None:
    ours, (_ds, store) = best(lambda: open_ours(hive, group))
    flat, _ = best(lambda: xr.open_zarr(plain))
    row(
        "open: vs plain zarr",
        f"{ours * 1e3:.1f} ms",
        f"plain {flat * 1e3:.1f} ms",
        f"{ours / flat:.2f}x the plain open",
    )
    direct = MocHiveStore(hive)
    with warnings.catch_warnings(action="ignore"):
        xr.open_zarr(direct, group=group, consolidated=False)
    one_group = direct.request_stats.total
    levels = len(asyncio.run(direct.hive()).products[0].levels)
    row(
        "open: backend requests",
        f"{store.request_stats.total} (xr.open_zarr); {one_group} (consolidated=False)",
        "-",
        f"constant in leaves; the root document consolidates every level ({levels}), "
        "one group's needs only its own",
    )


# -- 2. full reads ---------------------------------------------------------------------


def _read(ds, names: list[str], part: slice | None = None) -> list[np.ndarray]:
    return [(ds[n] if part is None else ds[n].isel(cells=part)).values for n in names]


def measure_full_reads(
    hive: Path, plain: Path, group: str, field: str, part: slice, where: str
) -> None:
    """Whole hive: ours in the default mode against the plain copy read by zarr directly (no
    dask). On ``part`` (``where``): every mode against the plain copy through xarray (one dask
    task per inner chunk). All fields in the default mode only (the other modes read the
    sharded layout as slowly as the plain copy does, so one field shows it)."""
    flat = xr.open_zarr(plain)
    direct = zarr.open_group(plain, mode="r")
    fields = [n for n in flat.data_vars if n not in ("morton", "cell_ids")]
    for label, names, modes in (
        (f"one field ({field})", [field], MODES),
        ("all fields", fields, (DEFAULT,)),
    ):
        width = sum(flat[n].dtype.itemsize for n in names) / 1e6  # MB per cell
        size = width * flat.sizes["cells"]
        ds, _store = open_ours(hive, group, chunking=DEFAULT)
        t_ours, _ = best(lambda ds=ds, names=names: _read(ds, names))
        t_plain, _ = best(lambda names=names: [direct[n][:] for n in names], repeat=1)
        row(
            f"full read, {label}, whole hive, chunking={DEFAULT}",
            f"{size / t_ours:.3g} MB/s",
            f"plain, zarr direct {size / t_plain:.3g} MB/s",
            f"{t_plain / t_ours:.2f}x plain, zarr direct",
        )
        size = width * (part.stop - part.start)
        t_plain, _ = best(lambda names=names: _read(flat, names, part), repeat=1)
        for mode in modes:
            ds, _store = open_ours(hive, group, chunking=mode)
            t_ours, _ = best(
                lambda ds=ds, names=names: _read(ds, names, part),
                repeat=3 if mode == DEFAULT else 1,
            )
            row(
                f"full read, {label}, {where}, chunking={mode}",
                f"{size / t_ours:.3g} MB/s",
                f"plain {size / t_plain:.3g} MB/s",
                f"{t_plain / t_ours:.2f}x plain",
            )


def measure_moczarr(hive: Path, group: str, field: str, part: slice, where: str) -> None:
    """Ours against ``moczarr.open_hive``: open, and reads of ``part``. moczarr runs last and
    is dropped after: its ~2 M Python objects (4,096 leaves) slow every measure taken while
    they live, as each full garbage-collection pass walks them."""
    ours_open, (ds, _store) = best(lambda: open_ours(hive, group))
    fields = [n for n in ds.data_vars if n not in ("morton", "cell_ids")]
    cases = ((f"one field ({field})", [field]), ("all fields", fields))
    ours = {label: best(lambda names=names: _read(ds, names, part))[0] for label, names in cases}
    ref_open, ref = best(lambda: moczarr_open(hive), repeat=1)
    row(
        "open: wall time",
        f"{ours_open * 1e3:.1f} ms",
        f"moczarr {ref_open * 1e3:.0f} ms",
        f"{ref_open / ours_open:.0f}x faster",
    )
    for label, names in cases:
        size = sum(ds[n].dtype.itemsize for n in names) / 1e6 * (part.stop - part.start)
        t_ref, _ = best(lambda names=names, ref=ref: _read(ref, names, part), repeat=1)
        row(
            f"full read, {label}, {where}, vs moczarr",
            f"{size / ours[label]:.3g} MB/s",
            f"moczarr {size / t_ref:.3g} MB/s",
            f"{t_ref / ours[label]:.0f}x moczarr",
        )
    del ref
    gc.collect()


# -- 3. random access ------------------------------------------------------------------


def measure_random(hive: Path, plain: Path, group: str, field: str, cells: int) -> None:
    rng = np.random.default_rng(0)
    flat = zarr.open_group(plain, mode="r")[field]
    n = flat.shape[0]
    points = rng.integers(0, n, 1000)
    starts = rng.integers(0, max(1, n // cells), 100) * cells
    t_plain_pt, _ = best(lambda: [flat[int(i)] for i in points], repeat=1)
    t_plain_sl, _ = best(lambda: [flat[int(s) : int(s) + cells] for s in starts], repeat=1)
    for mode in MODES:
        array = zarr.open_group(MocHiveStore(hive, chunking=mode), mode="r")[f"{group}/{field}"]
        [array[int(i)] for i in points[:50]]  # warm the stamp cache for a fair comparison
        t_pt, _ = best(lambda array=array: [array[int(i)] for i in points], repeat=1)
        t_sl, _ = best(
            lambda array=array: [array[int(s) : int(s) + cells] for s in starts], repeat=1
        )
        row(
            f"random: 1,000 single cells, chunking={mode}",
            f"{t_pt * 1e3 / 1000:.2f} ms/read",
            f"plain {t_plain_pt * 1e3 / 1000:.2f} ms/read",
            f"{t_plain_pt / t_pt:.2f}x plain",
        )
        row(
            f"random: 100 leaf slices, chunking={mode}",
            f"{t_sl * 1e3 / 100:.2f} ms/read",
            f"plain {t_plain_sl * 1e3 / 100:.2f} ms/read",
            f"{t_plain_sl / t_sl:.2f}x plain",
        )


# -- 4. requests -----------------------------------------------------------------------


def measure_requests(hive: Path, group: str, field: str, part: slice, where: str) -> None:
    """A scan of the whole hive; in ``inner`` mode (a request per inner chunk) of ``part``."""
    for mode in MODES:
        store = MocHiveStore(hive, chunking=mode)
        array = zarr.open_group(store, mode="r")[f"{group}/{field}"]
        level = store.session.hive.products[0].levels[0]
        scan = part if mode == "inner" else slice(0, array.shape[0])
        leaves = (scan.stop - scan.start) // level.cells_per_node
        store.request_stats.reset()
        array[scan]
        cold = store.request_stats.total
        store.request_stats.reset()
        array[scan]
        warm = store.request_stats.total
        scope = where if mode == "inner" else "whole hive"
        row(
            f"requests per leaf, scan of {field} ({scope}), chunking={mode}",
            f"cold {cold / leaves:.2f}, warm {warm / leaves:.2f}",
            f"{leaves} leaves",
            "cold: 1 stamp GET + 1 leaf-metadata GET (concurrent with the chunk) per leaf",
        )


# -- 5. fabrication --------------------------------------------------------------------


def _drain(array) -> None:
    """Fabricate every chunk, dropping each as zarr does once it is decoded."""
    for i in range(array.grid[0]):
        array.fabricate((i,))


def measure_fabrication(hive: Path, group: str) -> None:
    import mortie

    store = MocHiveStore(hive)
    view = asyncio.run(store.view())
    for name in ("morton", "cell_ids"):
        array = view.arrays[f"{group}/{name}"]
        cells = array.meta["shape"][0]
        t, _ = best(lambda array=array: _drain(array), 5)
        words = np.frombuffer(view.arrays[f"{group}/morton"].fabricate((0,)), dtype="<u8")
        words = words[words != 0]
        t_ref, _ = best(lambda words=words: mortie.mort2healpix(words), 5)
        row(
            f"fabrication: {name}",
            f"{t * 1e9 / cells:.2f} ns/cell",
            f"mortie.mort2healpix {t_ref * 1e9 / words.size:.2f} ns/cell",
            f"{(t_ref / words.size) / (t / cells):.1f}x mortie",
        )


# -- 6. latency ------------------------------------------------------------------------


def measure_latency(hive: Path, group: str, field: str) -> None:
    """A cold scan with 50 ms added per request, against ``ideal`` (the requests in waves of
    ``cap``) and against the same scan with no added latency (``floor``: the CPU's share).
    At 128 in flight, also into an output array written before (zarr's ``out=``): the
    first writes to a new array's memory are page faults on zarr's side, whatever the store,
    and they hold up the event loop that ends the waits."""
    want = zarr.open_group(MocHiveStore(hive), mode="r")[f"{group}/{field}"][:]
    reused = default_buffer_prototype().nd_buffer.from_numpy_array(np.ones_like(want))
    for cap, out in ((8, None), (32, None), (128, None), (128, reused)):
        floor, _, _ = cold_scan(hive, group, field, cap, 0.0, out)
        if out is not None:
            _unlike(out, want)
        took, requests, got = cold_scan(hive, group, field, cap, SlowBackend.delay, out)
        np.testing.assert_array_equal(got, want, err_msg=f"latency, {cap} in flight")
        del got
        ideal = math.ceil(requests / cap) * SlowBackend.delay
        into = "" if out is None else ", into a reused output array"
        row(
            f"latency 50 ms/request, concurrency {cap}{into}",
            f"{took:.2f} s ({requests} requests)",
            f"ideal {ideal:.2f} s, no added latency {floor:.2f} s",
            f"{took / ideal:.2f}x ideal, {took / max(ideal, floor):.2f}x max(ideal, floor)",
        )


# -- 7. scale --------------------------------------------------------------------------


# Peak RSS in MB: VmHWM, as ru_maxrss on Linux keeps the parent's peak across fork/exec.
PEAK = """
import sys
def peak():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
    except OSError:
        import resource
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return rss / 2**20 if sys.platform == "darwin" else rss / 1024
"""


def _python(code: str) -> list[str]:
    args = [sys.executable, "-c", PEAK + code]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()


def measure_scale(hive: Path, label: str) -> None:
    (base,) = _python("import zarr, moczarr_store; print(peak())")
    seconds, rss, requests = _python(
        "import time, warnings, zarr; from moczarr_store import MocHiveStore\n"
        "warnings.simplefilter('ignore'); t = time.perf_counter()\n"
        f"s = MocHiveStore({str(hive)!r}); g = zarr.open_group(s, mode='r')\n"
        "print(time.perf_counter() - t, peak(), s.request_stats.total)"
    )
    row(
        f"scale: open {label}",
        f"{float(seconds) * 1e3:.0f} ms, peak RSS {float(rss):.0f} MB",
        f"import alone {float(base):.0f} MB",
        f"{requests} requests",
    )


# -- 8. dask ---------------------------------------------------------------------------


def measure_dask(hive: Path, plain: Path, group: str, field: str, cells: int) -> None:
    """``sum()`` of one field; the plain copy with one dask chunk per shard (not per inner
    chunk), so both graphs have the same chunk boundaries and give the same float total."""
    import distributed
    from tests.support.workers import keep_backends, requests_made

    ds, _ = open_ours(hive, group, chunking=DEFAULT)
    with warnings.catch_warnings(action="ignore"):
        flat = xr.open_zarr(plain, chunks={"cells": cells})

    def sums(label: str, repeat: int) -> None:
        t_ours, total = best(lambda: float(ds[field].sum().compute()))
        t_plain, expected = best(lambda: float(flat[field].sum().compute()), repeat)
        assert total == expected, (total, expected)
        row(
            f"{label}: {field}.sum()",
            f"{t_ours * 1e3:.0f} ms",
            f"plain, a dask chunk per shard {t_plain * 1e3:.0f} ms",
            f"{t_plain / t_ours:.2f}x plain",
        )

    sums("dask threads", 3)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(keep_backends)
        want = float(ds[field].sum().compute(scheduler="threads"))
        fresh, _ = open_ours(hive, group, chunking=DEFAULT)  # a store no worker has seen
        first = None
        for compute in (1, 2, 3):  # a copy of the store unpickled on a worker for each
            before = sum(client.run(requests_made).values())
            start = time.perf_counter()
            assert float(fresh[field].sum().compute()) == want
            took = time.perf_counter() - start
            made = sum(client.run(requests_made).values()) - before
            first = first or made
            row(f"dask.distributed 2 processes: {field}.sum(), compute {compute}",
                f"{took * 1e3:.0f} ms", f"{made:,} requests at the workers",
                f"{made / first:.2f}x compute 1's requests")
        sums("dask.distributed 2 processes", 1)


# -- 9. verify -------------------------------------------------------------------------


def _verify_and_reads(hive: Path):
    """One ``verify_hive`` run, and every object (and range) its backend read."""
    from moczarr_store.verify import verify_hive

    store = MocHiveStore(hive)
    reads = record_reads(store)
    with warnings.catch_warnings(action="ignore"):
        report = asyncio.run(verify_hive(store))
    return report, reads


def _bare_reads(root: Path, reads: list[tuple[str, object]]) -> tuple[int, int]:
    """The same objects read with bare syscalls (open, fstat, preadv, close), and the
    link check of the first object of each directory (the store checks each once: the
    open file's real path, one ``readlink``)."""
    from moczarr_store.io.ranges import byte_bounds

    base, seen = f"{root}/", set()
    total = 0
    for path, option in reads:
        fd = os.open(base + path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            directory = path.rpartition("/")[0]
            if directory not in seen:
                seen.add(directory)
                os.readlink(f"/proc/self/fd/{fd}")
            start, end = byte_bounds(option, os.fstat(fd).st_size)
            total += os.preadv(fd, [bytearray(end - start)], start)
        finally:
            os.close(fd)
    return len(reads), total


def measure_verify(hive: Path, rounds: int = 5) -> None:
    """``verify_hive`` (every stamped object's content hashes recomputed through the store)
    against ``hashlib.sha256`` alone over as many bytes in as many calls (one per array),
    timed alternately ``rounds`` times, best of each. A local hive also gets the floor of
    its read path: the objects verify read, read again with bare syscalls."""
    from moczarr_store.verify import verify_hive

    report, reads = _verify_and_reads(hive)  # warms the page cache too
    if not report.ok:
        raise SystemExit(f"verify: {hive} does not verify: {report.failures[:3]}")
    payload = np.random.default_rng(0).bytes(report.nbytes // max(1, report.arrays))

    def run_verify():
        with warnings.catch_warnings(action="ignore"):
            return asyncio.run(verify_hive(MocHiveStore(hive)))

    def sha256_alone():
        for _ in range(report.arrays):
            hashlib.sha256(payload).hexdigest()

    times: dict[str, list[float]] = {"verify": [], "sha256": [], "floor": []}
    for _ in range(rounds):
        times["verify"].append(best(run_verify, 1)[0])
        times["sha256"].append(best(sha256_alone, 1)[0])
        times["floor"].append(best(lambda: _bare_reads(hive, reads), 1)[0])
    seconds, anchor, floor = (min(times[k]) for k in ("verify", "sha256", "floor"))
    mb = report.nbytes / 1e6
    row(
        f"verify: {report.objects:,} objects, {report.arrays:,} arrays, {mb:.1f} MB decoded",
        f"{mb / seconds:.1f} MB/s ({seconds:.2f} s)",
        f"hashlib.sha256 alone {mb / anchor:.1f} MB/s",
        f"{anchor / seconds:.2f}x sha256 alone",
    )
    row(
        f"verify: the read path's syscalls alone ({len(reads):,} objects read bare)",
        f"{floor:.3f} s",
        f"sha256 alone {anchor:.3f} s",
        f"bound {anchor / (anchor + floor):.2f}x serial, {min(1, anchor / floor):.2f}x "
        "with hashing overlapped",
    )


# -- 10. serve --------------------------------------------------------------------------


def measure_serve(hive: Path, group: str, field: str, repeat: int = 5) -> None:
    """A full read of one field through ``moczarr-store serve`` (a subprocess on loopback)
    by zarr-python over obstore's HTTPStore, against the same read in process (zarr
    directly, no dask, default settings). Both warm (stamps read), timed alternately
    ``repeat`` times, best of each; the server's CPU time per request is reported too."""
    import psutil
    from tests.support.processes import http_store, served

    for mode in (DEFAULT, "span"):
        local = zarr.open_group(MocHiveStore(hive, chunking=mode), mode="r")[f"{group}/{field}"]
        want = local[:]
        with served(hive, "--chunking", mode, "--stamp-ttl", "3600") as (url, pid):
            server = psutil.Process(pid)
            remote = zarr.open_array(http_store(url), path=f"{group}/{field}", mode="r")
            np.testing.assert_array_equal(remote[:], want)
            t_local, t_remote, cpu = [], [], []
            for _ in range(repeat):
                t_local.append(best(lambda local=local: local[:], 1)[0])
                before = sum(server.cpu_times()[:2])
                t_remote.append(best(lambda remote=remote: remote[:], 1)[0])
                cpu.append(sum(server.cpu_times()[:2]) - before)
        size, n = want.nbytes / 1e6, remote.nchunks
        if mode == DEFAULT:
            in_process = min(t_local)
        row(
            f"serve --chunking {mode}: full read, one field ({field}), zarr over obstore "
            "HTTPStore",
            f"{size / min(t_remote):.3g} MB/s ({n} chunks; server CPU "
            f"{min(cpu) / n * 1e3:.2f} ms/request)",
            f"in-process (chunking={mode}) {size / min(t_local):.3g} MB/s",
            f"{min(t_local) / min(t_remote):.2f}x in-process, {in_process / min(t_remote):.2f}x "
            f"in-process chunking={DEFAULT}",
        )


# -- 11. remote ------------------------------------------------------------------------


def measure_remote(hive: Path, group: str, field: str, rounds: int = 3) -> None:
    """One field from moto's S3 server on loopback (the hive uploaded to it in this run):
    the store's warm zarr scan (stamps known, one GET per leaf) in each presented layout
    against raw concurrent obstore GETs of the same objects under the same cap on requests
    in flight, timed in turn; values checked equal to the local read."""
    import obstore

    sys.path.insert(0, str(REPO / "tests"))
    from support.servers import PREFIX, S3Server, s3_options, s3_url  # the tests' loopback S3

    from moczarr_store.options import DEFAULT_MAX_CONCURRENCY

    paths, _ = _leaf_objects(hive, group, field)
    keys = [p[len(f"{hive}/") :] for p in paths]
    want = zarr.open_array(MocHiveStore(hive), path=f"{group}/{field}", mode="r")[:]
    server = S3Server()
    try:
        uploaded = server.upload_tree(hive, f"{PREFIX}/bench")
        options = {"storage_options": s3_options(server.url)}
        arrays = {}
        for mode in (DEFAULT, "span"):
            store = MocHiveStore(s3_url("bench"), chunking=mode, **options)
            arrays[mode] = zarr.open_array(store, path=f"{group}/{field}", mode="r")
            np.testing.assert_array_equal(arrays[mode][:], want, err_msg=mode)  # stamps read
        objects = MocHiveStore(s3_url("bench"), **options).backend.store

        async def raw() -> int:
            cap = asyncio.Semaphore(DEFAULT_MAX_CONCURRENCY)

            async def one(key: str) -> int:
                async with cap:
                    got = await obstore.get_async(objects, key)
                    return len(await got.bytes_async())

            return sum(await asyncio.gather(*(one(k) for k in keys)))

        reads = {"raw concurrent obstore GETs": lambda: asyncio.run(raw())}
        reads.update({f"store chunking={m!r}, zarr [:]": (lambda a=a: a[:])
                      for m, a in arrays.items()})
        took = alternate(reads, rounds)
    finally:
        server.stop()
    floor = took["raw concurrent obstore GETs"]
    mb = raw_read(paths) / 1e6
    for name, seconds in took.items():
        row(f"remote (moto S3 on loopback, {uploaded:,} objects uploaded): {field}, "
            f"{len(keys)} leaves, {mb:.1f} MB: {name}", f"{mb / seconds:.3g} MB/s",
            f"raw GETs {mb / floor:.3g} MB/s", f"{floor / seconds:.2f}x raw")


def machine() -> str:
    import dask

    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"# machine: {os.cpu_count()} cores, {ram:.1f} GiB RAM; {datetime.date.today()}; "
        f"Python {platform.python_version()}, zarr {zarr.__version__}, "
        f"xarray {xr.__version__}, dask {dask.__version__}"
    )


def write_json(path: Path | None, command: str, hive: str) -> None:
    """The rows measured, as ``{"environment", "command", "hive", "columns", "rows"}``:
    what ``docs/gen/performance.py`` renders (columns come from here, not the page)."""
    if path is None:
        return
    import json

    import dask

    environment = {
        "cores": os.cpu_count(),
        "RAM GiB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load average (1, 5, 15 min) at the end": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "zarr": zarr.__version__,
        "xarray": xr.__version__,
        "dask": dask.__version__,
    }
    # no machine's directories in a committed file: each absolute path shown by its name
    command = re.sub(r"(?<![\w.])/(?:[^\s:/]+/)+", "", command)
    doc = {"environment": environment, "command": command, "hive": hive,
           "columns": ["measure", "ours", "anchor", "ratio"], "rows": [list(r) for r in ROWS],
           # the default options against their floors (--targets, the targets measure):
           # {hive, row, ms, floor, floor_ms, ratio, target, met, plain} each, and as the
           # table printed (the docs render it)
           "targets": TARGET_ROWS, "targets_columns": TARGET_COLUMNS,
           "targets_table": [target_cells(r) for r in TARGET_ROWS]}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def run(
    hive: Path,
    plain: Path,
    group: str,
    field: str,
    scales: dict[str, Path],
    subset: int | None = None,
    only: tuple[str, ...] = MEASURES,
) -> None:
    level = asyncio.run(MocHiveStore(hive).hive()).products[0].levels[0]
    cells, leaves = level.cells_per_node, min(subset or level.n_nodes, level.n_nodes)
    part = slice(0, leaves * cells)
    where = "whole hive" if leaves == level.n_nodes else f"first {leaves:,} leaves"
    print(machine())
    print(
        f"# hive {hive}: {level.n_nodes} leaves x {cells} cells, group {group}, "
        f"field {field}; slow anchors and modes on the {where}\n"
    )
    print("| measure | ours | anchor | ratio |\n|---|---|---|---|")
    steps = {
        "scan": lambda: (measure_scan(hive, group, field), measure_scan_all(hive, group)),
        "spans": lambda: measure_spans(hive, group, field),
        "open": lambda: measure_open(hive, plain, group),
        "full": lambda: measure_full_reads(hive, plain, group, field, part, where),
        "moczarr": lambda: measure_moczarr(hive, group, field, part, where),
        "random": lambda: measure_random(hive, plain, group, field, cells),
        "requests": lambda: measure_requests(hive, group, field, part, where),
        "fabrication": lambda: measure_fabrication(hive, group),
        "latency": lambda: measure_latency(hive, group, field),
        "scale": lambda: [measure_scale(path, label) for label, path in scales.items()],
        "dask": lambda: measure_dask(hive, plain, group, field, cells),
        "verify": lambda: measure_verify(hive),
        "serve": lambda: measure_serve(hive, group, field),
        "remote": lambda: measure_remote(hive, group, field),
        "targets": lambda: measure_all_targets([(hive, group)], field),
    }
    took = {}
    for name in (m for m in MEASURES if m in only):
        start = time.perf_counter()
        steps[name]()
        gc.collect()
        took[name] = time.perf_counter() - start
    print("\n# seconds per measure: " + ", ".join(f"{k} {v:.0f}" for k, v in took.items()))


TARGET_ROWS: list[dict] = []
TARGET_COLUMNS = ["hive", "row", "ours", "floor", "ratio", "target", "met", "best plain copy"]


def measure_all_targets(hives: list[tuple[Path, str]], field: str,
                        onecell: list[tuple[Path, str]] = (), rounds: int | None = None,
                        computed: list[tuple[Path, str]] = ()) -> None:
    """The default options' rows against their floors, per hive: in process
    (``targets.py``), over the wire (``targets_wire.py``: serve, S3, latency), each beside
    the plain zarr copies' (``plain_copies.py``); then ``onecell.py``'s rows; then
    ``computed.py``'s (``computed``: ``(hive, product)``); then the whole table again, the
    copies' best beside each row. ``rounds``: each row the best of that many (None: each
    module's own default)."""
    from benchmarks import plain_copies, targets, targets_wire
    from benchmarks.onecell import measure_onecell

    print("| hive | row | ms | floor | ratio | target | met |\n|---|---|---|---|---|---|---|")
    for hive, group in hives:
        started = time.perf_counter()
        rows = targets.measure_targets(hive, group, field, **({} if rounds is None else
                                                              {"rounds": rounds}))
        took = {"in process": time.perf_counter() - started}
        with warnings.catch_warnings(action="ignore"):
            names = list(xr.open_zarr(MocHiveStore(hive), group=group).data_vars)
        fields = [n for n in names if n not in targets.COORDS]
        want = targets._reference(hive, group, [field, *fields])
        with tempfile.TemporaryDirectory(prefix="moczarr-targets-") as tmp:
            copies = plain_copies.make_copies(hive, group, field, Path(tmp))
            leaves = zarr.open_array(str(copies["zagg's layout"] / field), mode="r").nchunks
            cells = want[field].shape[0] // leaves
            took["plain copies made"] = time.perf_counter() - started - sum(took.values())
            plain_copies.attach(rows, plain_copies.time_plain(copies, field, fields, want,
                                                              cells, rounds or 3))
            took["plain copies timed"] = time.perf_counter() - started - sum(took.values())
            rows += targets_wire.measure_wire(hive, group, field, want[field], copies,
                                              rounds or 3)
            took["over the wire"] = time.perf_counter() - started - sum(took.values())
        print(f"# {hive.name}: seconds " + ", ".join(f"{k} {v:.0f}" for k, v in took.items()))
        TARGET_ROWS.extend(rows)
        targets.KEPT.clear()
        gc.collect()
    for hive, group in onecell:
        TARGET_ROWS.extend(measure_onecell(hive, group))
    for hive, product in computed:
        from benchmarks.computed import measure_computed

        TARGET_ROWS.extend(measure_computed(hive, product, **({} if rounds is None else
                                                              {"rounds": rounds})))
    print_targets(TARGET_ROWS)


def print_targets(rows: list[dict]) -> None:
    """The target rows as one table, the best plain copy beside each."""
    print("\n# the default options' targets, the best plain zarr copy beside each row\n")
    print("| " + " | ".join(TARGET_COLUMNS) + " |\n|" + "---|" * len(TARGET_COLUMNS))
    for r in rows:
        print("| " + " | ".join(target_cells(r)) + " |")


def _hive_group(text: str) -> tuple[Path, str]:
    hive, sep, group = text.rpartition(":")
    if not sep or not hive or not group:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HIVE:GROUP")
    return Path(hive), group


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the committed sharded fixture")
    parser.add_argument("--hive", type=Path)
    parser.add_argument("--plain", type=Path)
    parser.add_argument("--group")
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--scale100k", type=Path)
    parser.add_argument("--scale1m", type=Path)
    parser.add_argument(
        "--subset", type=int, metavar="N", help="slow anchors and modes on the first N leaves"
    )
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the table as JSON (the docs' performance page)")
    parser.add_argument(
        "--only",
        type=lambda text: tuple(text.split(",")),
        default=MEASURES,
        help=f"a comma list of measures, default all: {','.join(MEASURES)}",
    )
    parser.add_argument("--targets", type=_hive_group, action="append", metavar="HIVE:GROUP",
                        help="the default options' target rows on each hive (repeatable)")
    parser.add_argument("--rounds", type=int, metavar="N",
                        help="--targets: each row the best of N rounds (default: 5 in "
                        "process, 3 for the rest)")
    parser.add_argument("--onecell", type=_hive_group, action="append", default=[],
                        metavar="HIVE:GROUP", help="benchmarks/onecell.py's target rows on a "
                        "hive of one-cell leaves (repeatable)")
    parser.add_argument("--computed", type=_hive_group, action="append", default=[],
                        metavar="HIVE:PRODUCT", help="benchmarks/computed.py's rows: computed "
                        "orders against the raw reads of the leaves they fold (repeatable)")
    args = parser.parse_args(argv)
    return _main(parser, args, argv)


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace,
          argv: list[str] | None) -> int:
    if args.targets or args.onecell or args.computed:
        print(machine())
        measure_all_targets(args.targets or [], args.field, args.onecell, args.rounds,
                            args.computed)
        if not args.hive and not args.quick:
            hives = (args.targets or []) + args.onecell + args.computed
            write_json(args.json, "python -m benchmarks.run " + " ".join(argv or sys.argv[1:]),
                       ", ".join(hive.name for hive, _ in hives))
            return 0
    if unknown := set(args.only) - set(MEASURES):
        parser.error(f"--only: unknown measures {sorted(unknown)}")
    options = {"subset": args.subset, "only": args.only}
    scales = {
        k: v
        for k, v in (("100,000 nodes", args.scale100k), ("1,000,000 nodes", args.scale1m))
        if v
    }
    if args.quick:
        hive = REPO / "fixtures" / "sharded"
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain"
            subprocess.run(
                [
                    sys.executable,
                    str(REPO / "benchmarks" / "make_plain_copy.py"),
                    str(hive),
                    str(plain),
                    "--group",
                    "atl06/o7",
                ],
                check=True,
            )
            run(hive, plain, "atl06/o7", args.field, scales, **options)
            shutil.rmtree(plain)
        write_json(args.json, "python -m benchmarks.run --quick", "fixtures/sharded")
        return 0
    needs = set(args.only) - {"verify"}
    if not args.hive or (needs and not args.group) or (needs - {"scan", "spans"}
                                                       and not args.plain):
        parser.error("--hive, --plain and --group are needed without --quick "
                     "(--hive alone for --only verify, --hive and --group for --only "
                     "scan,spans)")
    run(args.hive, args.plain, args.group, args.field, scales, **options)
    write_json(args.json, "python -m benchmarks.run " + " ".join(argv or sys.argv[1:]),
               args.hive.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
