"""Warm local reads against the disk: one field (``scan``: every presented layout and zarr
knob, beside plain copies of each layout), every field (``scan all``), and leaves per chunk
(``spans``); each row the best of a few rounds timed in turn, as a ratio to the raw floor
(plain Python ``open().read()`` of the objects the store reads). Values checked equal
across paths first. Cost: three copies of one field in a temporary directory."""

from __future__ import annotations

import asyncio
import functools
import tempfile
import warnings
from pathlib import Path

import numpy as np
import zarr
from zarr.core import codec_pipeline as zarr_pipelines
from zarr.core.buffer import default_buffer_prototype

from benchmarks.common import (
    DEFAULT,
    OneField,
    alternate,
    checked,
    nbytes,
    open_xr,
    random_reads,
    raw_into_new,
    raw_read,
    read_into,
    scan_objects,
    unlike,
)
from benchmarks.make_plain_copy import copy_group
from benchmarks.measures import Run, row
from moczarr_store import MocHiveStore, config, mapped

KNOBS: tuple[dict, ...] = (
    {"async.concurrency": 4},
    {"async.concurrency": 64},
    {"async.concurrency": 256},
    {"codec_pipeline.batch_size": 16},
    {"async.concurrency": 256, "codec_pipeline.batch_size": 64},
)
# zarr >= 3.4: an opt-in codec pipeline that fetches, decodes and scatters each chunk in one
# step, synchronously on a thread pool when the store offers synchronous I/O
FUSED = {"codec_pipeline.path": "zarr.core.codec_pipeline.FusedCodecPipeline"}
HAS_FUSED = hasattr(zarr_pipelines, "FusedCodecPipeline")
RAW, INTO_NEW = "raw floor, plain Python open().read()", "raw floor into one new array, readinto()"
SPAN_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256)
# the rows comparing the store to the plain copy of its layout: (path, ours, the copy's)
PAIRS = {"zarr": ("store {}, zarr open_array()[:]", "plain copy in the {} layout, zarr [:]"),
         "zarr into a reused output array": (
             "store {}, zarr into a reused output array",
             "plain copy in the {} layout, zarr into a reused output array"),
         "zarr, fused pipeline": ("store {}, zarr [:], fused pipeline",
                                  "plain copy in the {} layout, zarr [:], fused pipeline")}


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


def _prepared(read, prepare):
    """``read`` with ``prepare()`` run untimed before each timed run."""
    def run():
        return read()
    run.prepare = prepare  # type: ignore[attr-defined]
    return run


def _plain_copy(hive: Path, group: str, field: str, out: Path, chunking: str) -> zarr.Array:
    """``field`` copied into a plain zarr v3 array in the layout the store presents with
    ``chunking`` (its ``zarr.json`` verbatim: one uncompressed chunk per leaf, or per span)."""
    store = OneField(MocHiveStore(hive, chunking=chunking), group, field)
    with warnings.catch_warnings(action="ignore"):
        asyncio.run(copy_group(store, group, out, quiet=True))
    return zarr.open_array(str(out / field), mode="r")


def _one_chunk_copy(want: np.ndarray, array: zarr.Array, field: str, out: Path) -> zarr.Array:
    """``want`` as ``field`` of a plain zarr v3 group at ``out`` in ONE uncompressed chunk:
    zarr's and dask's work per chunk paid once."""
    copy = zarr.open_group(str(out), mode="w", zarr_format=3).create_array(
        field, shape=want.shape, chunks=want.shape, dtype=want.dtype, compressors=None,
        dimension_names=array.metadata.dimension_names,  # type: ignore[union-attr]
        fill_value=array.fill_value)
    copy[...] = want
    return copy


def _xr_field(where, group: str | None, field: str, coords: bool = False):
    data = open_xr(where, group, consolidated=False if group is None else None)
    return data[field] if coords else data[field].variable


def _layout_reads(name: str, array: zarr.Array, plain: zarr.Array, copy: Path, group: str,
                  field: str, out, want: np.ndarray) -> dict:
    """The reads of one presented layout: the store through zarr (into new memory and into
    ``out``) and through xarray's defaults (the field, and with its coordinates), a plain
    copy of that layout through both; with the fused pipeline where zarr has it."""
    reads = {
        f"store {name}, zarr open_array()[:]": lambda: array[:],
        f"store {name}, xr.open_zarr(store, group=...) defaults, field .load()":
            lambda: _xr_field(array.store, group, field).load().values,
        f"store {name}, the same, field + its coordinates .load()":
            lambda: _xr_field(array.store, group, field, True).load().values,
        f"plain copy in the {name} layout, zarr [:]": lambda: plain[:],
        f"plain copy in the {name} layout, xr.open_zarr defaults, field .load()":
            lambda: _xr_field(copy, None, field).load().values,
        f"store {name}, zarr into a reused output array":
            _prepared(lambda: read_into(array, out), lambda: unlike(out, want)),
        f"plain copy in the {name} layout, zarr into a reused output array":
            _prepared(lambda: read_into(plain, out), lambda: unlike(out, want)),
    }
    if HAS_FUSED:  # the same API path on both sides
        reads[f"store {name}, zarr [:], fused pipeline"] = _tuned(functools.partial(
            zarr.open_array, array.store, path=f"{group}/{field}", mode="r"), FUSED)
        reads[f"plain copy in the {name} layout, zarr [:], fused pipeline"] = _tuned(
            functools.partial(zarr.open_array, str(copy / field), mode="r"), FUSED)
    return reads


def _scan_reads(r: Run, paths: list[str], tmp: Path) -> tuple[dict, dict, np.ndarray]:
    """Every read of :func:`measure_scan` (values checked), the arrays of its random reads,
    and the field's values."""
    path = f"{r.group}/{r.field}"
    array = zarr.open_array(MocHiveStore(r.hive, chunking=DEFAULT), path=path, mode="r")
    span_array = zarr.open_array(MocHiveStore(r.hive, chunking="span"), path=path, mode="r")
    want, size = array[:], nbytes(paths)
    leaf = f"chunking={DEFAULT!r}"
    span = f"chunking='span' ({span_array.chunks[0] // array.chunks[0]} leaves per chunk)"
    whole = _one_chunk_copy(want, array, r.field, tmp / "whole")
    reads = {
        RAW: lambda: raw_read(paths), INTO_NEW: lambda: raw_into_new(paths, size),
        "plain copy of ONE chunk, zarr [:]": lambda: whole[:],
        "plain copy of ONE chunk, xr.open_zarr defaults, field .load()":
            lambda: _xr_field(tmp / "whole", None, r.field).load().values}
    out = default_buffer_prototype().nd_buffer.from_numpy_array(np.empty_like(want))
    lookups = {}
    for name, chunking, ours in ((leaf, DEFAULT, array), (span, "span", span_array)):
        plain = _plain_copy(r.hive, r.group, r.field, tmp / chunking, chunking)
        reads.update(_layout_reads(name, ours, plain, tmp / chunking, r.group, r.field, out,
                                   want))
        lookups |= {f"store {name}": ours, f"plain copy in the {name} layout": plain}
    reads[f"store {span}, zarr [:], its spans mapped in the scan (none kept before)"] = (
        _prepared(lambda: span_array[:], mapped.release))

    def unmapped():
        with config.set({"mapped.bytes": 0}):
            return span_array[:]
    reads[f"store {span}, zarr [:], spans read, not mapped"] = unmapped
    for settings in KNOBS:
        text = ", ".join(f"{k}={v}" for k, v in settings.items())
        reads[f"store, zarr [:], {text}"] = _tuned(functools.partial(
            zarr.open_array, array.store, path=path, mode="r"), settings)
    checked(reads, want)
    return reads, lookups, want


def measure_scan(r: Run, rounds: int = 9) -> None:
    """One field, warm page cache, through the store (zarr, xarray's defaults, zarr's knobs)
    in both presented layouts and plain copies of each; two anchors bound what any layout
    reaches: the objects read into one new array (every row's second ratio) and a plain
    copy of ONE chunk. Then :func:`measure_scan_all`."""
    first, chunks, cold = scan_objects(r.hive, r.group, r.field)
    paths = [f"{r.hive}/{p}" for p in chunks]
    with tempfile.TemporaryDirectory() as tmp:
        reads, arrays, want = _scan_reads(r, paths, Path(tmp))
        took = alternate(reads, rounds)
        lookups = random_reads(want, arrays[next(iter(arrays))].chunks[0], arrays)
    floor, mb, into_new = took[RAW], nbytes(paths) / 1e6, took[INTO_NEW]
    for name, seconds in took.items():
        row(f"scan {r.field} ({len(paths)} leaves, {mb:.1f} MB): {name}",
            f"{seconds * 1e3:.1f} ms", f"raw floor {floor * 1e3:.1f} ms",
            f"{seconds / floor:.2f}x the floor, {seconds / into_new:.2f}x into new memory")
    layouts = [name[len("store "):] for name in arrays if name.startswith("store ")]
    for layout in layouts:
        for path, (ours_name, theirs_name) in PAIRS.items():
            if (ours := took.get(ours_name.format(layout))) is not None:
                theirs = took[theirs_name.format(layout)]
                row(f"scan {r.field}: store vs plain copy of its layout ({layout}), {path}",
                    f"{ours * 1e3:.1f} ms", f"plain {theirs * 1e3:.1f} ms",
                    f"{theirs / ours:.2f}x the plain copy's speed")
    row(f"scan {r.field}: requests per leaf, cold zarr scan", f"{cold:.2f}",
        f"{len(paths)} leaves", "stamp + leaf metadata + chunk per leaf")
    anchor = f"store {layouts[0]}"
    for (kind, name), per_read in lookups.items():
        base = lookups[kind, anchor]
        row(f"{kind}, {name}", f"{per_read * 1e3:.2f} ms/read",
            f"{anchor} {base * 1e3:.2f} ms/read", f"{per_read / base:.2f}x the default view's")
    measure_scan_all(r)


def measure_scan_all(r: Run, rounds: int = 5) -> None:
    """Every field of the group (its data variables), warm page cache, against the raw floor
    of all their objects: zarr array by array and ``xr.open_zarr(...).load()`` with default
    arguments, one leaf per chunk and in spans."""
    names = sorted(map(str, open_xr(MocHiveStore(r.hive), r.group).data_vars))
    paths = [f"{r.hive}/{p}" for n in names for p in scan_objects(r.hive, r.group, n)[1]]
    reads: dict = {RAW: lambda: raw_read(paths)}
    for mode in (DEFAULT, "span"):
        store = MocHiveStore(r.hive, chunking=mode)
        arrays = [zarr.open_array(store, path=f"{r.group}/{n}", mode="r") for n in names]
        reads[f"chunking={mode!r}, zarr, array by array [...]"] = (
            lambda a=arrays: [x[...] for x in a])
        reads[f"chunking={mode!r}, xr.open_zarr defaults, dataset .load()"] = (
            lambda st=store: [ds[n].values for ds in [open_xr(st, r.group).load()]
                              for n in names])
    want = reads[f"chunking={DEFAULT!r}, zarr, array by array [...]"]()
    for name, fn in reads.items():
        if name != RAW:
            for got, ref in zip(fn(), want, strict=True):
                np.testing.assert_array_equal(got, ref, err_msg=name)
    took = alternate(reads, rounds)
    floor, mb = took[RAW], nbytes(paths) / 1e6
    for name, seconds in took.items():
        row(f"scan all {len(names)} fields ({len(paths)} objects, {mb:.1f} MB): {name}",
            f"{seconds * 1e3:.1f} ms", f"raw floor {floor * 1e3:.1f} ms",
            f"{seconds / floor:.2f}x the floor")


def measure_spans(r: Run, rounds: int = 5) -> None:
    """Leaves per chunk against both kinds of read: for ``"leaf"``, every count ``k`` of
    ``SPAN_COUNTS`` up to the level's node count and ``"span"`` (its own ``k``), one field
    scanned through zarr into a reused output array and through ``xr.open_zarr`` defaults,
    and random single cells and leaf-sized slices (stamps warm); scans as a ratio to the raw
    floor, random reads to ``"leaf"``'s. Each view keeps its spans mapped, as in a process
    that reads that view alone (their pages are the same page cache, counted once)."""
    paths = [f"{r.hive}/{p}" for p in scan_objects(r.hive, r.group, r.field)[1]]

    def view(chunking: str | int) -> zarr.Array:
        return zarr.open_array(MocHiveStore(r.hive, chunking=chunking),
                               path=f"{r.group}/{r.field}", mode="r")

    arrays = {"leaf": view("leaf")}
    cells, want = arrays["leaf"].chunks[0], arrays["leaf"][:]
    for chunking in (*(k for k in SPAN_COUNTS if k <= want.shape[0] // cells), "span"):
        array = view(chunking)
        k = array.chunks[0] // cells
        if chunking == "span" and k in arrays:  # the same view: named as "span" chooses it
            del arrays[k]
        arrays[f"'span' (k = {k})" if chunking == "span" else chunking] = array
    kept = {"mapped.objects": max(config.get("mapped.objects"), 2 * len(arrays) * len(paths)),
            "mapped.touched_bytes": max(config.get("mapped.touched_bytes"),
                                        2 * len(arrays) * want.nbytes)}
    try:
        with config.set(kept):
            _spans_timed(r, paths, arrays, want, rounds)
    finally:
        mapped.release()


def _spans_timed(r: Run, paths: list[str], arrays: dict, want: np.ndarray,
                 rounds: int) -> None:
    """:func:`measure_spans`'s reads, timed and reported."""
    cells = arrays["leaf"].chunks[0]
    out = default_buffer_prototype().nd_buffer.from_numpy_array(np.empty_like(want))
    reads: dict = {"raw floor": lambda: raw_read(paths)}
    for name, array in arrays.items():
        reads[f"{name}, zarr into a reused output array"] = _prepared(
            lambda a=array: read_into(a, out), lambda: unlike(out, want))
        reads[f"{name}, xr.open_zarr defaults, field .load()"] = (
            lambda st=array.store: _xr_field(st, r.group, r.field).load().values)
    checked(reads, want)
    took = alternate(reads, rounds)
    lookups = random_reads(want, cells, arrays, rounds=rounds)
    floor, mb = took["raw floor"], nbytes(paths) / 1e6
    kinds = ("random single cell", "random leaf-sized slice")
    for name in arrays:
        scans = [took[f"{name}, zarr into a reused output array"],
                 took[f"{name}, xr.open_zarr defaults, field .load()"]]
        single, whole = (lookups[kind, name] for kind in kinds)
        base = [lookups[kind, "leaf"] for kind in kinds]
        row(f"spans {r.field} ({len(paths)} leaves of {cells:,} cells, {mb:.1f} MB): "
            f"chunking={name}, {arrays[name].nchunks} chunks",
            f"scan {scans[0] * 1e3:.1f} ms zarr / {scans[1] * 1e3:.1f} ms xarray; random "
            f"{single * 1e3:.2f} ms cell / {whole * 1e3:.2f} ms slice",
            f"raw floor {floor * 1e3:.1f} ms",
            f"{scans[0] / floor:.2f}x / {scans[1] / floor:.2f}x the floor; random "
            f"{single / base[0]:.2f}x / {whole / base[1]:.2f}x leaf's")
