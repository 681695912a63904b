"""Benchmark of ``moczarr-store refs``: export time and size per format, and the read time
of one field through our Icechunk export, through zagg's own Icechunk companion (when the
hive has one) and through ``MocHiveStore`` itself.

Usage (Python >= 3.12 with the [export] extra)::

    python -m benchmarks.refs_bench HIVE --group atl06/o12 --field h_mean \
        [--companion-array 12/h_mean] [--repeat 3]

``--companion-array`` names the field in zagg's companion (``HIVE/icechunk``), a dense
``(window, cells of the whole sphere)`` array; it is read at the view's ``cell_ids``.

Prints a Markdown table. Times are the best of ``--repeat`` runs (the machines are shared
and noisy); the exports go to a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import zarr

from benchmarks.common import best
from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.refs import FORMATS, export_refs


def icechunk_array(repo: Path, path: str, root: Path):
    import icechunk

    access = {root.resolve().as_uri() + "/": icechunk.credentials.LocalFileSystemAccess}
    store = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)),
                                     authorize_virtual_chunk_access=access
                                     ).readonly_session("main").store
    return zarr.open_array(store, path=path, mode="r")


def run(hive: Path, group: str, field: str, companion: str | None, repeat: int,
        chunking: str) -> list[str]:
    rows = ["| measure | value | note |", "|---|---|---|"]
    work = Path(tempfile.mkdtemp(prefix="refs-bench-"))
    try:
        exports = {}
        for fmt in FORMATS:
            def export(fmt=fmt):
                out = work / f"{fmt}-{time.perf_counter_ns()}"
                report = export_refs(hive, fmt, out, chunking=chunking)
                return out, report

            seconds, (out, report) = best(export, repeat)
            exports[fmt] = out
            c = report.counts
            rows.append(
                f"| export {fmt} (chunking={chunking}) | {seconds:.2f} s, "
                f"{report.bytes_on_disk / 1e6:.2f} MB on disk | {c['chunks_referenced']} refs "
                f"to {c['sources']} objects, {c['chunks_inline']} inline chunks"
                f"{f', layouts {report.layouts}' if report.layouts else ''} |"
            )
        path = f"{group}/{field}"
        want = zarr.open_group(MocHiveStore(hive), mode="r")[path][...]
        for mode in ("shard", "leaf"):
            t, got = best(lambda m=mode: zarr.open_group(MocHiveStore(hive, chunking=m),
                                                         mode="r")[path][...], repeat)
            assert np.array_equal(got, want, equal_nan=True)
            rows.append(f"| read {path}: MocHiveStore (chunking={mode}) | {t * 1e3:.0f} ms | "
                        f"{want.nbytes / 1e6:.2f} MB, open included |")
        for mode in dict.fromkeys((chunking, "shard", "leaf")):
            repo = exports["icechunk"]
            if mode != chunking:
                repo = work / f"icechunk-{mode}"
                export_refs(hive, "icechunk", repo, chunking=mode)
            t, got = best(lambda r=repo: icechunk_array(r, path, hive)[...], repeat)
            assert np.array_equal(got, want, equal_nan=True)
            rows.append(f"| read {path}: our Icechunk export (chunking={mode}) | "
                        f"{t * 1e3:.0f} ms | open included |")
        if companion:  # a dense (window, every cell of the sphere) array: read our cells
            cells = zarr.open_group(MocHiveStore(hive), mode="r")[f"{group}/cell_ids"][...]

            def read_companion():
                array = icechunk_array(hive / "icechunk", companion, hive)
                return array.get_orthogonal_selection((0, cells.astype(np.int64)))

            t, got = best(read_companion, repeat)
            same = np.array_equal(got, want, equal_nan=True)
            rows.append(f"| read {companion} at the same {cells.size} cells: zagg's Icechunk "
                        f"companion | {t * 1e3:.0f} ms | open included; values "
                        f"{'identical' if same else 'DIFFER'} |")
        leaves = sum(1 for _ in hive.rglob("*.zarr")) if hive.is_dir() else 0
        rows.append(f"| hive | {leaves} .zarr objects | {hive} |")
    finally:
        shutil.rmtree(work)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refs_bench", description=__doc__)
    parser.add_argument("hive", type=Path)
    parser.add_argument("--group", required=True)
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--companion-array", help="the field's path inside hive/icechunk")
    parser.add_argument("--chunking", default="auto")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", HiveWarning)
    os.environ.setdefault("RUST_LOG", "error")
    rows = run(args.hive, args.group, args.field, args.companion_array, args.repeat,
               args.chunking)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
