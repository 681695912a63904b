"""The performance harness: every measure as a ratio against its anchors, in one run.

    python -m benchmarks.run --quick                     # committed fixture, < 1 minute
    python -m benchmarks.run --hive H --plain P --group G [--scale100k S --scale1m S]
        [--subset N] [--only open,full,...]
    python -m benchmarks.run --targets HIVE:GROUP [--onecell HIVE:GROUP]
        [--computed HIVE:PRODUCT] [--json OUT]

Anchors are ``moczarr.open_hive`` (the reference reader) and a plain zarr v3 copy of the
same data (``benchmarks/make_plain_copy.py``: same chunks and codecs, no virtualisation).
Absolute times are printed, never asserted: each figure is the best of a few repeats (one
for runs over 10 s), compared within the same run. ``--subset N`` measures the slow anchors
and modes on the first N leaves only. The measures are in ``local_reads.py`` (one field
and every field read warm against the disk) and ``measures.py`` (the rest); the default
options' targets in ``targets.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import xarray as xr
import zarr

from benchmarks import local_reads, make_plain_copy, measures
from benchmarks.common import target_cells
from benchmarks.measures import ROWS, Run
from benchmarks.targets import TARGET_COLUMNS, measure_all_targets
from moczarr_store import MocHiveStore

REPO = Path(__file__).resolve().parents[1]
QUICK_GROUP = "atl06/o7"
MEASURES = {
    "scan": local_reads.measure_scan, "spans": local_reads.measure_spans,
    "open": measures.measure_open, "full": measures.measure_full_reads,
    "moczarr": measures.measure_moczarr, "random": measures.measure_random,
    "requests": measures.measure_requests, "fabrication": measures.measure_fabrication,
    "latency": measures.measure_latency, "scale": measures.measure_scale,
    "dask": measures.measure_dask, "verify": measures.measure_verify,
    "serve": measures.measure_serve, "remote": measures.measure_remote,
    "targets": lambda r: TARGET_ROWS.extend(measure_all_targets([(r.hive, r.group)], r.field)),
}
TARGET_ROWS: list[dict] = []


def environment() -> dict:
    import dask

    return {
        "cores": os.cpu_count(),
        "RAM GiB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load average (1, 5, 15 min) at the end": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(), "zarr": zarr.__version__,
        "xarray": xr.__version__, "dask": dask.__version__,
    }


def write_json(path: Path | None, command: str, hive: str) -> None:
    """The rows measured, as ``{"environment", "command", "hive", "columns", "rows"}`` and
    the target rows (``targets``, and as printed: ``targets_table``): what
    ``docs/gen/performance.py`` renders (columns come from here, not the page)."""
    if path is None:
        return
    # no machine's directories in a committed file: each absolute path shown by its name
    command = re.sub(r"(?<![\w.])/(?:[^\s:/]+/)+", "", command)
    doc = {"environment": environment(), "command": command, "hive": hive,
           "columns": ["measure", "ours", "anchor", "ratio"], "rows": [list(r) for r in ROWS],
           "targets": TARGET_ROWS, "targets_columns": TARGET_COLUMNS,
           "targets_table": [target_cells(r) for r in TARGET_ROWS]}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def run(hive: Path, plain: Path, group: str, field: str, scales: dict[str, Path],
        subset: int | None = None, only: tuple[str, ...] = tuple(MEASURES)) -> None:
    """Each measure of ``only``, in ``MEASURES``' order, printed as one table."""
    level = asyncio.run(MocHiveStore(hive).hive()).products[0].levels[0]
    cells, leaves = level.cells_per_node, min(subset or level.n_nodes, level.n_nodes)
    where = "whole hive" if leaves == level.n_nodes else f"first {leaves:,} leaves"
    context = Run(hive, plain, group, field, slice(0, leaves * cells), where, cells, scales)
    print(f"# hive {hive}: {level.n_nodes} leaves x {cells} cells, group {group}, "
          f"field {field}; slow anchors and modes on the {where}\n")
    print("| measure | ours | anchor | ratio |\n|---|---|---|---|")
    took = {}
    for name in (m for m in MEASURES if m in only):
        start = time.perf_counter()
        MEASURES[name](context)
        gc.collect()
        took[name] = time.perf_counter() - start
    print("\n# seconds per measure: " + ", ".join(f"{k} {v:.0f}" for k, v in took.items()))


def _hive_group(text: str) -> tuple[Path, str]:
    hive, sep, group = text.rpartition(":")
    if not sep or not hive or not group:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HIVE:GROUP")
    return Path(hive), group


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the committed sharded fixture")
    p.add_argument("--hive", type=Path)
    p.add_argument("--plain", type=Path)
    p.add_argument("--group")
    p.add_argument("--field", default="h_mean")
    p.add_argument("--scale100k", type=Path)
    p.add_argument("--scale1m", type=Path)
    p.add_argument("--subset", type=int, metavar="N",
                   help="slow anchors and modes on the first N leaves")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="also write the table as JSON (the docs' performance page)")
    p.add_argument("--only", type=lambda text: tuple(text.split(",")), default=tuple(MEASURES),
                   help=f"a comma list of measures, default all: {','.join(MEASURES)}")
    p.add_argument("--targets", type=_hive_group, action="append", default=[],
                   metavar="HIVE:GROUP", help="the default options' target rows on each hive")
    p.add_argument("--rounds", type=int, metavar="N", help="--targets: each row the best of "
                   "N rounds (default: 5 in process, 3 for the rest)")
    p.add_argument("--onecell", type=_hive_group, action="append", default=[],
                   metavar="HIVE:GROUP", help="onecell.py's target rows on a hive of one-cell "
                   "leaves")
    p.add_argument("--computed", type=_hive_group, action="append", default=[],
                   metavar="HIVE:PRODUCT", help="computed.py's rows: computed orders against "
                   "the raw reads of the leaves they fold")
    return p


def main(argv: list[str] | None = None) -> int:
    """Every option above is repeatable where it takes ``HIVE:GROUP``."""
    args = (p := parser()).parse_args(argv)
    if unknown := set(args.only) - set(MEASURES):
        p.error(f"--only: unknown measures {sorted(unknown)}")
    needs, wanted = set(args.only) - {"verify"}, args.targets + args.onecell + args.computed
    if not args.quick and (args.hive or not wanted) and (not args.hive or (
            needs and not args.group) or (needs - {"scan", "spans"} and not args.plain)):
        p.error("--hive, --plain and --group are needed without --quick (--hive alone for "
                "--only verify, --hive and --group for --only scan,spans)")
    command = "python -m benchmarks.run " + " ".join(argv or sys.argv[1:])
    print("# machine: " + "; ".join(f"{k} {v}" for k, v in environment().items())
          + f"; {datetime.date.today()}")
    scales = {k: v for k, v in (("100,000 nodes", args.scale100k),
                                ("1,000,000 nodes", args.scale1m)) if v}
    if wanted:
        TARGET_ROWS.extend(measure_all_targets(args.targets, args.field, args.onecell,
                                               args.rounds, args.computed))
        if not args.hive and not args.quick:
            write_json(args.json, command, ", ".join(hive.name for hive, _ in wanted))
            return 0
    if args.quick:
        hive = REPO / "fixtures" / "sharded"
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain"
            make_plain_copy.main([str(hive), str(plain), "--group", QUICK_GROUP])
            run(hive, plain, QUICK_GROUP, args.field, scales, args.subset, args.only)
        write_json(args.json, "python -m benchmarks.run --quick", "fixtures/sharded")
        return 0
    run(args.hive, args.plain, args.group, args.field, scales, args.subset, args.only)
    write_json(args.json, command, args.hive.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
