"""Damage and cold-scan costs, on synthetic hives made from one real zagg leaf.

    python -m benchmarks.damage_bench rss [--shards 600000]
    python -m benchmarks.damage_bench cold [--leaves 256] [--rev REV]...
    python -m benchmarks.damage_bench absent [--shards 1000000] [--leaves 1000]
        [--window 4096] [--rev REV]...

``rss``: peak RSS of a scan of one field over a hive whose root MOC lists ``--shards``
shards of which only the first has a leaf (every other read meets a missing leaf), against
the scan of a CLEAN hive of the same shape: the same MOC, every leaf present. The clean
hive is not written out: its reader maps every leaf path onto the one real leaf, so each
leaf costs the store what a real one does (its stamp, its metadata, its chunk; every
cache keyed by its own path) without 600,000 directories on disk.

``cold``: a cold scan of one field (a new store, after its open) of a hive of ``--leaves``
real leaves (hard-linked copies of ``fixtures/bare_versioned``'s template leaf, a zagg
0.61 write), in requests and wall milliseconds per leaf, for this tree's code and for each
``--rev`` (its ``src/`` exported with ``git archive``). Best of 3; the page cache is warm.

``absent``: requests and wall time of a read of the first ``--window`` leaves' rows of a
hive whose root MOC lists ``--shards`` shards of which the first ``--leaves`` have a leaf
(the rest were never written), in every chunking, for this tree's code and each ``--rev``:
a read over listed-but-absent leaves costs what exists, not what is listed. zarr asks for
each chunk, so one-leaf chunkings over a million leaves take minutes whatever the store
does: the window keeps them short.

Every measure runs in a fresh subprocess (``VmHWM`` after ``clear_refs``, Linux only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LEAF = "4/4/4/1/1/1/444111.zarr"
FIRST = "1" * 10  # the first shard at order 9 (base cell 1)

_SCAN = textwrap.dedent("""
    import json, sys, time, warnings
    from pathlib import Path
    import zarr
    from moczarr_store import MocHiveStore

    def status(key):
        with open("/proc/self/status") as lines:
            return next(int(l.split()[1]) for l in lines if l.startswith(key)) * 1024

    root, field, alias, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    chunking, window = json.loads(sys.argv[5]), int(sys.argv[6])  # window: rows (0: all)
    if alias:  # every leaf path read as the one real leaf
        import re
        from moczarr_store.io import local as b
        leaf = re.compile(r"^(?:-?\\d/)+-?\\d+\\.zarr/")
        for name in ("_open", "_identity"):  # where every path is opened or looked at
            real = getattr(b.LocalReader, name)
            def aliased(self, path, *args, _real=real):
                return _real(self, leaf.sub(alias + "/", path), *args)
            setattr(b.LocalReader, name, aliased)
        real_documents = getattr(b.LocalReader, "documents_now", None)  # one-pass reads
        if real_documents is not None:
            b.LocalReader.documents_now = lambda self, paths: real_documents(
                self, [leaf.sub(alias + "/", path) for path in paths])
    best = None
    for _ in range(repeat):
        with open("/proc/self/clear_refs", "w") as reset:
            reset.write("5")
        before = status("VmRSS:")
        store = MocHiveStore(root, chunking=chunking)
        with warnings.catch_warnings(action="ignore"):
            array = zarr.open_group(store, mode="r")[f"atl06/o11/{field}"]
            store.request_stats.reset()
            total = min(array.shape[0], window or array.shape[0])
            step, start = 65_536, time.perf_counter()
            for at in range(0, total, step):
                array[at : min(at + step, total)]
            wall = time.perf_counter() - start
        got = {"wall_s": wall, "requests": store.request_stats.total, "rows": total,
               "peak_mib": (status("VmHWM:") - before) / 2**20,
               "problems": {f"{k[0]} {k[1]}": p.count  # older code has no problems()
                            for k, p in getattr(store, "problems", dict)().items()}}
        if best is None or wall < best["wall_s"]:
            best = got
    print(json.dumps(best))
""")


def _coverage(n_nodes: int) -> list[list[str]]:
    """The ranges of ``n_nodes`` consecutive order-9 nodes from ``FIRST`` on."""
    from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal

    start = decimal_to_rank(FIRST)
    ranges, rank, stop = [], start, start + n_nodes
    while rank < stop:  # one range per base cell (4**9 nodes each)
        end = min(stop, (rank // 4**9 + 1) * 4**9)
        ranges.append([rank_to_decimal(rank, 9), rank_to_decimal(end - 1, 9)])
        rank = end
    return ranges


def _leaf_rel(decimal: str) -> str:
    return "/".join([*decimal, f"{decimal}.zarr"])  # base cells 1-6 only


def make_hive(root: Path, n_nodes: int, leaves: int) -> str:
    """A hive at cell order 11 / shard order 9 listing ``n_nodes`` shards, the first
    ``leaves`` of them holding (hard-linked) copies of the fixture's template leaf; the
    first leaf's path."""
    from benchmarks.common import synthetic_hive
    from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal

    synthetic_hive(root, 11, 9, _coverage(n_nodes), LEAF, template := root / "template")
    first = decimal_to_rank(FIRST)
    rels = [_leaf_rel(rank_to_decimal(first + i, 9)) for i in range(leaves)]
    for rel in rels:
        shutil.copytree(template, root / rel, copy_function=os.link)
    shutil.rmtree(template)
    return rels[0]


def _scan(root: Path, field: str, alias: str = "", src: Path | None = None,
          repeat: int = 1, chunking: str | int = "auto", rows: int = 0) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src or REPO / "src")}
    done = subprocess.run([sys.executable, "-c", _SCAN, str(root), field, alias, str(repeat),
                           json.dumps(chunking), str(rows)],
                          capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode:
        raise SystemExit(f"scan failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def measure_rss(shards: int, field: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hive"
        first = make_hive(root, shards, 1)
        missing = _scan(root, field)
        clean = _scan(root, field, alias=first)
    for label, got in (("clean (every leaf present)", clean), ("missing leaves", missing)):
        print(f"| scan of {field}, {shards:,} listed nodes, {label} | peak RSS "
              f"{got['peak_mib']:.0f} MiB | {got['wall_s']:.1f} s, {got['requests']:,} "
              f"requests | {got['problems'] or 'no problems'} |", flush=True)
    print(f"| difference | {missing['peak_mib'] - clean['peak_mib']:+.0f} MiB | | |")


def _export(rev: str, into: Path) -> Path:
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def measure_cold(leaves: int, field: str, revs: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hive"
        make_hive(root, leaves, leaves)
        codes = {"this tree": None, **{rev: _export(rev, Path(tmp) / rev) for rev in revs}}
        for label, src in codes.items():
            got = _scan(root, field, src=src, repeat=3)
            print(f"| cold scan of {field}, {leaves} leaves, {label} | "
                  f"{got['requests'] / leaves:.2f} requests/leaf | "
                  f"{got['wall_s'] * 1e3 / leaves:.2f} ms/leaf |", flush=True)


def measure_absent(shards: int, leaves: int, window: int, field: str,
                   revs: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hive"
        make_hive(root, shards, leaves)
        codes = {"this tree": None, **{rev: _export(rev, Path(tmp) / rev) for rev in revs}}
        rows = window * 4 ** (11 - 9)  # cells of a shard: cell order 11, shard order 9
        for chunking in ("auto", "leaf", "shard", "inner", 2):
            for label, src in codes.items():
                got = _scan(root, field, src=src, chunking=chunking, rows=rows)
                print(f"| {field}, first {window:,} of {shards:,} listed nodes ({leaves:,} "
                      f"written), chunking={chunking!r}, {label} | {got['requests']:,} "
                      f"requests | {got['wall_s']:.2f} s |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.damage_bench",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("measure", choices=("rss", "cold", "absent"))
    parser.add_argument("--shards", type=int, default=None,
                        help="rss: listed shards (600,000); absent: (1,000,000)")
    parser.add_argument("--leaves", type=int, default=None,
                        help="cold: leaves (256); absent: leaves written (1,000)")
    parser.add_argument("--window", type=int, default=4096, help="absent: leaves read")
    parser.add_argument("--field", default="h_mean")
    parser.add_argument("--rev", action="append", default=[],
                        help="cold, absent: other code to time")
    args = parser.parse_args(argv)
    if args.measure == "rss":
        measure_rss(args.shards or 600_000, args.field)
    elif args.measure == "cold":
        measure_cold(args.leaves or 256, args.field, args.rev)
    else:
        measure_absent(args.shards or 1_000_000, args.leaves or 1000, args.window, args.field,
                       args.rev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
