"""A hive of one-cell leaves: ``morton`` read whole against the floor of its bytes.

    python -m benchmarks.onecell HIVE [GROUP] [--conflict]

``HIVE``: what ``make_bench_hive.py --mode scale --shards N --scale-cell-order 10`` writes,
ONE real zagg leaf and a root coverage listing N one-cell shards, the others absent. The
store opens it with its default options: ``morton`` and ``cell_ids`` are computed from the
coverage. Floor: the same bytes read raw from one page-cached file into one new array;
beside it plain zarr copies of the values, chunked as the store presents them and in one
chunk. Memory: Python's traced peak during a read and the growth of the process's peak
resident set (``common.memory``). Values: ``morton`` equals the coverage's shards as moczarr
expands them, ``cell_ids`` their NESTED ids (``moczarr.open_hive`` would read every stamp:
half an hour for a million).
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import zarr
from zarr.storage import LocalStore

from benchmarks.common import (
    alternate,
    best,
    memory,
    open_xr,
    raw_into_new,
    raw_read,
    record_reads,
    target_row,
)
from moczarr_store import MocHiveStore

ROUNDS = 5


def _check(hive: Path, group: str, store: MocHiveStore) -> np.ndarray:
    """The store's ``morton`` (checked against moczarr's expansion of the coverage: every
    listed shard once) and its ``cell_ids`` (the NESTED ids of the words): the words."""
    from moczarr.coverage import ranges_words
    from moczarr.store import load_root_coverage

    if (envelope := load_root_coverage(str(hive))) is None:
        raise SystemExit(f"{hive}: no usable root coverage")
    words, cell_ids = (zarr.open_array(store, path=f"{group}/{name}", mode="r")[:]
                       for name in ("morton", "cell_ids"))
    np.testing.assert_array_equal(np.sort(words), ranges_words(envelope), err_msg="morton")
    order = int(group.rsplit("/o", 1)[1])
    nested = (words >> np.uint64(6 + 2 * (27 - order))) - np.uint64(4**order)
    np.testing.assert_array_equal(cell_ids, nested, err_msg=f"{hive} cell_ids")
    return words

def _plain(words: np.ndarray, chunks: tuple, out: Path) -> zarr.Array:
    """``words`` as a plain uncompressed zarr array at ``out`` in ``chunks``, checked."""
    copy = zarr.create_array(LocalStore(out), shape=words.shape, chunks=chunks,
                             dtype=words.dtype, compressors=None, fill_value=0)
    copy[:] = words
    np.testing.assert_array_equal(copy[:], words)
    return zarr.open_array(copy.store, mode="r")


def measure_onecell(hive: Path, group: str = "atl06/o10") -> list[dict]:
    """The one-cell-leaf rows for ``hive``, as ``common.target_row``'s, the store's with
    ``traced_peak_mb`` and ``peak_rss_mb`` (the read's memory: Python's traced peak, and how
    far the process's peak resident set rose above its resident set before the read)."""
    opened = time.perf_counter()
    store = MocHiveStore(hive)
    with warnings.catch_warnings(action="ignore"):
        morton = zarr.open_array(store, path=f"{group}/morton", mode="r")
    open_s = time.perf_counter() - opened
    words = _check(hive, group, store)
    reads = {"zarr": lambda: morton[:], "xr": lambda: open_xr(store, group)["morton"].values}
    np.testing.assert_array_equal(reads["xr"](), words)
    with tempfile.TemporaryDirectory(prefix="onecell-") as tmp:
        raw = Path(tmp) / "morton.bin"
        raw.write_bytes(words.tobytes())
        same, one = (_plain(words, chunks, Path(tmp) / label) for label, chunks in
                     (("same", morton.chunks), ("one", words.shape)))
        raw_read([str(raw)])  # into the page cache
        t = alternate({"floor": lambda: raw_into_new([str(raw)], words.nbytes), **reads,
                       "plain same": lambda: same[:], "plain one": lambda: one[:]},
                      ROUNDS, collect=True)
        used = {key: memory(read) for key, read in reads.items()}
    tasks = len(dict(open_xr(store, group)["morton"].variable.data.__dask_graph__()))
    print(f"# {hive.name}: {words.size:,} one-cell leaves; store opened in {open_s:.2f} s; "
          f"morton {words.nbytes / 1e6:.1f} MB in {morton.nchunks:,} chunks of "
          f"{morton.chunks[0]:,} rows; xarray: a lazy dask coordinate of {tasks} tasks")
    rows = []
    for label, key in (
            ("morton read whole, zarr [:]", "zarr"),
            ("morton read whole, xr.open_zarr(store, group=g)['morton'].values", "xr"),
            (f"plain zarr copy of morton, same chunks ({morton.chunks[0]:,}), [:]", "plain same"),
            ("plain zarr copy of morton, one chunk, [:]", "plain one")):
        extra = {} if key not in used else {
            "traced_peak_mb": round(used[key][0], 1),
            "peak_rss_mb": None if used[key][1] is None else round(used[key][1], 1)}
        rows.append(target_row(hive.name, f"one-cell leaves: {label}", t[key],
                               "raw read of its bytes from one page-cached file", t["floor"],
                               3, **extra))
    return rows


# -- the conflict: leaves a chunk, for morton read whole and for a field read by cell ------

CHUNKINGS = (4_096, 16_384, 65_536, 262_144)  # leaves a chunk (``AUTO_MAX_LEAVES``: the first)
# the chunkings whose field reads are timed, in a run of under two minutes: a field's chunk
# looks for each of its leaves' stamps (262,144 leaves: about 16 s on 2 shared cores, and
# the reads take four such chunks); ``--field-chunkings`` asks for others
FIELD_CHUNKINGS = (4_096, 16_384, 65_536)
SLICE = 4_096  # cells of the field read "whole" (every leaf of the slice a stamp to look for)
PROBES = 65_536  # leaves the random single-cell reads of one chunking may look at, in all


def _field_expected(hive: Path, group: str, field: str, words: np.ndarray,
                    fill: float) -> np.ndarray:
    """``field``'s values as the hive's one real leaf holds them, read by zarr from that
    leaf's own arrays, every other cell ``fill`` (what a reader must return: its leaf is
    absent)."""
    order = group.rsplit("/o", 1)[1]
    (leaf,) = [p.parent.parent for p in hive.rglob(f"{order}/{field}/zarr.json")]
    values = np.full(words.shape, fill, dtype=zarr.open_array(str(leaf / field), mode="r").dtype)
    at = np.searchsorted(words, zarr.open_array(str(leaf / "morton"), mode="r")[:])
    values[at] = zarr.open_array(str(leaf / field), mode="r")[:]
    return values


def measure_conflict(hive: Path, group: str = "atl06/o10", field: str = "h_mean",
                     chunkings: tuple[int, ...] = CHUNKINGS,
                     field_chunkings: tuple[int, ...] = FIELD_CHUNKINGS, cells: int = SLICE,
                     probes: int = PROBES) -> list[dict]:
    """Leaves a chunk (``MocHiveStore(hive, chunking=k)``) against the reads that want few
    (a random single cell of ``field``: a chunk looks for each of its ``k`` leaves' stamps)
    and the read that wants many (``morton`` whole: a chunk costs a task whatever its size),
    one row each ``k``: ``morton`` read whole (best of 5) to the raw read of its bytes; the
    first ``cells`` cells of ``field`` read by a new store (timed once: every stamp looked
    for once) to the raw reads of the objects it opened or looked for (best of 3); a random
    cell each in a few chunks of ``k`` leaves (one chunk's worth the first time each; at
    most ``probes`` leaves in all) to the same cells read by a ``"leaf"`` store; the traced
    memory peak of the two whole reads (a second run of each). The reads of ``field`` for
    ``field_chunkings`` alone. Values checked: ``morton`` against the coverage, ``field``
    against the one real leaf read by zarr (the rest fill). Under a minute on 2 cores."""
    with warnings.catch_warnings():  # a missing stamp is warned about: here, all but one
        warnings.simplefilter("ignore")
        return _conflict(hive, group, field, chunkings, field_chunkings, cells, probes)


def _conflict(hive, group, field, chunkings, field_chunkings, cells, probes) -> list[dict]:
    name = hive.name
    words = _check(hive, group, MocHiveStore(hive))  # (a "leaf" store: a chunk per cell)
    leaf = zarr.open_array(MocHiveStore(hive, chunking="leaf"), path=f"{group}/{field}",
                           mode="r")
    want = _field_expected(hive, group, field, words, leaf.metadata.fill_value)
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    print(f"# {name}: {words.size:,} one-cell leaves; {field}'s first {cells:,} cells read "
          f"whole; random single cells at most {probes:,} leaves a chunking\n"
          "| leaves a chunk | chunks | morton whole | morton ratio | morton traced peak | "
          f"{field} first {cells:,} cells | ratio to raw | traced peak | random cell | "
          "'leaf' mode | ratio |\n|" + "---|" * 11, flush=True)
    with tempfile.TemporaryDirectory(prefix="onecell-") as tmp:
        raw = Path(tmp) / "morton.bin"
        raw.write_bytes(words.tobytes())
        raw_read([str(raw)])  # into the page cache
        for k in chunkings:
            rows.append(_one_chunking(hive, group, field, k, cells, probes, words, want, leaf,
                                      raw, rng, k in field_chunkings))
    return rows


def _one_chunking(hive, group, field, k, cells, probes, words, want, leaf, raw, rng,
                  fields: bool) -> dict:
    """:func:`measure_conflict`'s row for ``k`` leaves a chunk (``fields``: the field's
    reads too)."""
    store = MocHiveStore(hive, chunking=k)
    morton = zarr.open_array(store, path=f"{group}/morton", mode="r")
    np.testing.assert_array_equal(morton[:], words, err_msg=f"morton, {k} leaves a chunk")
    t_morton = alternate({"morton": lambda: morton[:], "floor": lambda: raw_into_new(
        [str(raw)], words.nbytes)}, ROUNDS, collect=True)
    m_morton = memory(lambda: morton[:])[0]
    ratio_m = t_morton["morton"] / t_morton["floor"]
    row = {"hive": hive.name, "leaves_a_chunk": k, "chunks": morton.nchunks,
           "morton_ms": round(t_morton["morton"] * 1e3, 2),
           "morton_floor_ms": round(t_morton["floor"] * 1e3, 2), "morton_ratio": round(ratio_m, 2),
           "morton_traced_peak_mb": round(m_morton, 1)}
    cols = ["-"] * 6
    if fields:
        row.update(_field_reads(hive, store, group, field, k, cells, probes, want, leaf, rng))
        cols = [f"{row['field_ms']:,.0f} ms ({row['field_objects']:,} objects)",
                f"{row['field_ratio']:.1f}x (raw {row['field_raw_ms']:,.0f} ms)",
                f"{row['field_traced_peak_mb']:.1f} MB",
                f"{row['random_ms']:,.1f} ms ({row['random_cells']} reads)",
                f"{row['random_leaf_ms']:.2f} ms", f"{row['random_ratio']:,.0f}x"]
    print(f"| {k:,} | {morton.nchunks:,} | {t_morton['morton'] * 1e3:.1f} ms | {ratio_m:.1f}x | "
          f"{m_morton:.1f} MB | " + " | ".join(cols) + " |", flush=True)
    return row


def _field_reads(hive: Path, store: MocHiveStore, group: str, field: str, k: int, cells: int,
                 probes: int, want: np.ndarray, leaf: zarr.Array, rng) -> dict:
    """The field's columns of :func:`_one_chunking`'s row (``store``: new, ``k`` leaves a
    chunk)."""
    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    tried = record_reads(store, tried=True)
    t_field, got = best(lambda: array[:cells], 1, collect=True)
    np.testing.assert_array_equal(got, want[:cells], err_msg=f"{field}, {k} leaves a chunk")
    paths = [f"{hive}/{p}" for p in dict.fromkeys(path for path, _ in tried)]
    t_raw = best(lambda: raw_read(paths, missing_ok=True), 3, collect=True)[0]
    m_field = memory(lambda: array[:cells])[0]
    # random single cells, each in a chunk not read yet (chunk 0 holds the slice)
    chunks = want.size // k
    n = max(1, min(5, probes // k, chunks - 1))
    picked = rng.choice(np.arange(1, chunks), size=n, replace=False)
    points = [int(c) * k + int(rng.integers(0, k)) for c in picked]
    took = {}
    for label, a in (("k", array), ("leaf", leaf)):
        seconds, values = best(lambda a=a: [a[i : i + 1] for i in points], 1, collect=True)
        took[label] = seconds / n
        for i, v in zip(points, values, strict=True):
            np.testing.assert_array_equal(v, want[i : i + 1], err_msg=f"{field}[{i}] {label}")
    return {"field_cells": cells, "field_ms": round(t_field * 1e3, 1),
            "field_raw_ms": round(t_raw * 1e3, 1), "field_ratio": round(t_field / t_raw, 2),
            "field_objects": len(paths), "field_traced_peak_mb": round(m_field, 1),
            "random_cells": n, "random_ms": round(took["k"] * 1e3, 2),
            "random_leaf_ms": round(took["leaf"] * 1e3, 2),
            "random_ratio": round(took["k"] / took["leaf"], 1)}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.onecell", description=__doc__)
    parser.add_argument("hive", type=Path)
    parser.add_argument("group", nargs="?", default="atl06/o10")
    parser.add_argument("--conflict", action="store_true",
                        help="leaves a chunk against morton whole and a field's reads "
                        "(measure_conflict) instead of the target rows")
    parser.add_argument("--field-chunkings", type=lambda t: tuple(int(k) for k in t.split(",")),
                        default=FIELD_CHUNKINGS, metavar="K,K",
                        help="--conflict: the chunkings whose field reads are timed")
    args = parser.parse_args(argv)
    if args.conflict:
        chunkings = tuple(sorted(set(CHUNKINGS) | set(args.field_chunkings)))
        measure_conflict(args.hive, args.group, chunkings=chunkings,
                         field_chunkings=args.field_chunkings)
    else:
        measure_onecell(args.hive, args.group)


if __name__ == "__main__":
    main(sys.argv[1:])
