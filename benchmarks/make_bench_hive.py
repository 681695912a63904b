"""Write benchmark morton-hives with zagg's real write path (Python 3.12, zagg 0.61.0).

    python3.12 benchmarks/make_bench_hive.py OUTDIR [--mode full|scale] [--shards N]

``--mode full`` (default): a LARGE hive by ``zagg.runner.agg(..., backend="local")``,
driven as ``fixtures/make_fixtures.py`` drives it (its config, granules and synthetic
source). Defaults: 4,096 leaves at shard order 6, cell order 12, ``chunk_inner: 9``
sharded (64 inner chunks of 64 cells a leaf), the 9 ATL06 fields (``--fields`` keeps
some), versioned leaves, root coverage, the Icechunk companion, and zagg's default pyramid
with ``output.sweep: "stages"`` spelled out: only the explicit value makes the Icechunk
commit follow the ladder (one commit per order-3 node; per-leaf commits grow quadratic).
``--no-pyramid`` turns sweep and pyramid off, as in the fixtures. Leaves
(:func:`choose_shards`): a seeded random half (``--keep``) of the order-4 blocks of base
cells -1 then 1, contiguous runs with gaps as real coverage. Each leaf gets one synthetic
granule observing ``--cells-per-chunk`` cells of EVERY inner chunk, so every inner chunk is
written while most cells hold fill values.
``--procs P`` runs P zagg runs in processes of their own over contiguous slices of the
shards (in ``--batch`` shards a run), their Icechunk commits and staged sweeps serialized
by an ``flock``; with several, the root coverage is rebuilt from the stamped leaves at the
end. ``--resume`` lets zagg skip the leaves already current. ``--windows N`` (``--procs 1``)
makes the hive windowed (yearly on ``delta_time``): each leaf observed in N years from 2019.
Cost: about an hour on 2 cores for the default hive (296,886 files, 2.1 GB, a 46 MiB
Icechunk companion); with 3 fields, ~0.3 s of CPU a leaf of 4,096 cells and ~0.75 s one of
65,536 (``--cell-order 14 --chunk-inner 8``).

``--mode scale --shards N``: ONE real leaf (shard order 10, cell order 12, ``chunk_inner:
11`` sharded, every cell observed, no Icechunk), shard ``11111111111`` (the first of the
domain); then the root ``coverage.moc`` replaced by one listing N shards
(:func:`scale_shards`: runs of 1..16 with gaps of 1..8), by zagg's own builder. Every other
listed shard has no leaf. ``--scale-cell-order 10`` makes the leaf ONE cell: the hive of
one-cell leaves ``onecell.py`` measures (1,000,000 shards: about 20 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))

import make_fixtures as mf  # noqa: E402


class LazyRegistry(dict):
    """``make_fixtures._REGISTRY`` replacement: a granule's arrays are built (by
    ``make_fixtures.make_granule``) on the first ``H5Coro`` open and not kept (each granule
    is opened by one shard worker; the last 8 kept, as one may be opened twice)."""

    def __init__(self, cell_order: int, chunk_inner: int, per_chunk: int, ppc: int):
        super().__init__()
        self.cell_order, self.ppc = cell_order, ppc
        self.cells_per_chunk = 4 ** (cell_order - chunk_inner)
        self.per_chunk = min(per_chunk, self.cells_per_chunk)
        self.recent: dict[str, dict] = {}

    def __missing__(self, resource: str):
        if (hit := self.recent.get(resource)) is not None:
            return hit
        # "synthetic-atl06/bench_{shard}.h5", or "..._y{year}.h5" with --windows
        gid = resource.rsplit("/", 1)[-1][: -len(".h5")]
        shard, _, year = gid[len("bench_") :].partition("_y")
        year = int(year or FIRST_YEAR)
        n = 4 ** (self.cell_order - len(shard.lstrip("-")) + 1)
        seed = int(shard.replace("-", "9")) + year - FIRST_YEAR
        rng = np.random.default_rng(seed)
        # stratified: `per_chunk` distinct observed cells in EVERY inner chunk
        cpc, m = self.cells_per_chunk, self.per_chunk
        picks = np.argsort(rng.random((n // cpc, cpc)), axis=1)[:, :m]
        ranks = np.sort((picks + cpc * np.arange(n // cpc)[:, None]).ravel())
        mf.make_granule(gid, [(shard, ranks, self.ppc)], cell_order=self.cell_order, seed=seed,
                        year=year, mean=1000.0 + (seed % 2000))
        self.recent[resource] = data = dict.pop(self, resource)
        while len(self.recent) > 8:
            self.recent.pop(next(iter(self.recent)), None)
        return data


FIRST_YEAR = 2019  # the year of every granule, or of the first window (--windows)


def granule_records(shard: str, windows: int = 0) -> list[dict]:
    """The shard's granule, or one per year from ``FIRST_YEAR`` with ``windows``."""
    out = []
    for year in range(FIRST_YEAR, FIRST_YEAR + max(1, windows)):
        gid = f"bench_{shard}_y{year}" if windows else f"bench_{shard}"
        out.append({"id": f"{gid}.h5", "s3": f"s3://synthetic-atl06/{gid}.h5",
                    "https": f"https://synthetic-atl06.invalid/{gid}.h5",
                    "time_start": f"{year}-04-01T00:00:00Z",
                    "time_end": f"{year}-09-30T00:00:00Z"})
    return out


def choose_shards(n: int, shard_order: int, seed: int = 0, block: int = 2,
                  keep: float = 0.2) -> list[str]:
    """``n`` shards at ``shard_order``, clustered like real coverage: in base cells -1, 1,
    -2, 2, ... (until ``n`` are taken) a seeded random ``keep`` of the order
    ``shard_order - block`` blocks, each with all of its ``4**block`` shards."""
    rng = np.random.default_rng(seed)
    run, out = 4**block, []
    for base in ("-1", "1", "-2", "2", "-3", "3", "-4", "4", "-5", "5", "-6", "6"):
        blocks = 4**shard_order // run
        kept = np.sort(rng.choice(blocks, size=max(1, int(blocks * keep)), replace=False))
        ranks = (kept[:, None] * run + np.arange(run)[None, :]).ravel()
        out.extend(base + "".join("1234"[int(d)] for d in np.base_repr(int(r), 4).zfill(
            shard_order)) for r in ranks)
        if len(out) >= n:
            break
    return out[:n]


def bench_config(args):
    """zagg's config: with ``args.pyramid`` its default pyramid (None: the key dropped) and
    sweep "stages" spelled out (the Icechunk commit then follows the ladder)."""
    pyramid = {"sweep": "stages", "pyramid": None} if args.pyramid else {
        "sweep": False, "pyramid": False}
    if getattr(args, "windows", 0):  # yearly windows on delta_time
        pyramid["windowing"] = {"schedule": "yearly", "time_field": "delta_time",
                                "epoch": mf.EPOCH, "scale": "gps", "units": "seconds"}
    return mf.make_config(args.shard_order, args.cell_order,
                          fields=args.fields.split(",") if args.fields else None,
                          grid={"chunk_inner": args.chunk_inner, "sharded": True},
                          icechunk=None if args.icechunk else False, **pyramid)


def run_batch(args, shards: list[str]) -> dict:
    """One zagg.runner.agg run over ``shards`` (one lazily built granule each)."""
    import mortie
    import zagg.runner
    from zagg.grids import from_config

    cfg = bench_config(args)
    windows = getattr(args, "windows", 0)
    pairs = sorted((int(mortie.decimal_to_word(s)), granule_records(s, windows)) for s in shards)
    catalog = {"metadata": {"short_name": "ATL06", "version": "007"},
               "grid_signature": from_config(cfg).spatial_signature(),
               "shard_keys": [k for k, _ in pairs], "granules": [recs for _, recs in pairs]}
    cat_path = Path(args.outdir).parent / f".bench_catalog_{os.getpid()}.json"
    cat_path.write_text(json.dumps(catalog))
    start = time.time()
    tag = f"[proc {args.slice[0]}]" if getattr(args, "slice", None) else "[run]"

    def progress(done, total, _cost):
        if done % 50 == 0 or done == total:
            print(f"{tag}   {done}/{total} leaves, {time.time() - start:.0f}s", flush=True)

    try:
        with mf.synthetic_source():
            return zagg.runner.agg(cfg, catalog=str(cat_path), store=str(args.outdir),
                                   backend="local", max_workers=args.threads,
                                   on_progress=progress)
    finally:
        cat_path.unlink(missing_ok=True)


@contextlib.contextmanager
def _flocked(thread_lock, path: Path):
    """``thread_lock`` and an ``flock`` on ``path``: a lock across the writer processes."""
    import fcntl

    with thread_lock:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # the flock goes with it


def install_commit_lock(outdir: Path) -> None:
    """Serialize, across the writer processes, Icechunk commits (zagg locks them per
    process; icechunk's local storage is not safe for concurrent commits) and the run-tail
    staged sweeps (zagg admits one per store and a refused run skips its sweep, leaving
    its ladder rungs unbuilt): the second process's waits for the first."""
    import threading

    import zagg.icechunk_refs as ir
    import zagg.sweep_stages as ss

    original, sweep, sweep_lock = ir._local_commit_lock, ss.stage_sweep_after_run, threading.Lock()
    where = outdir.resolve().parent

    def commit_lock(repo_path: str):
        return _flocked(original(repo_path), where / f".{outdir.name}.icechunk-commit.lock")

    def serialized_sweep(*a, **kw):
        with _flocked(sweep_lock, where / f".{outdir.name}.sweep.lock"):
            start = time.time()
            out = sweep(*a, **kw)
            print(f"[pid {os.getpid()}] staged sweep {time.time() - start:.0f}s", flush=True)
            return out

    ir._local_commit_lock, ss.stage_sweep_after_run = commit_lock, serialized_sweep


def worker_main(args) -> int:
    """Child process: run ``args.slice`` of the shard list in batches."""
    import zagg

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    mf._REGISTRY = LazyRegistry(args.cell_order, args.chunk_inner, args.cells_per_chunk,
                                args.points_per_cell)
    install_commit_lock(Path(args.outdir))
    shards = choose_shards(args.leaves, args.shard_order, seed=args.seed, keep=args.keep)
    i, p = args.slice
    per = -(-len(shards) // p)
    mine = shards[i * per : (i + 1) * per]  # contiguous: fewer icechunk rebases
    batch = args.batch or len(mine)
    for b in range(0, len(mine), batch):
        start = time.time()
        s = run_batch(args, mine[b : b + batch])
        ice = s.get("icechunk")
        ice_state = f"err {ice['error']}" if isinstance(ice, dict) and ice.get("error") else (
            bool(ice))
        print(f"[proc {i}] batch {b // batch}: {len(mine[b : b + batch])} shards, "
              f"with_data={s['cells_with_data']} err={s['cells_error']} "
              f"obs={s['total_obs']:,} {time.time() - start:.0f}s icechunk={ice_state} "
              f"({min(b + batch, len(mine))}/{len(mine)})", flush=True)
        for r in s["results"] if s["cells_error"] else ():
            if r.get("error"):
                print(f"   error {r.get('shard_key')}: {r['error']}", flush=True)
    return 0


def rebuild_root_coverage(outdir: Path, shard_order: int) -> int:
    """Root coverage.moc from every STAMPED leaf (zagg's own builder)."""
    import mortie
    from zagg.hive import build_root_coverage, write_root_coverage

    words = []
    for leaf in mf._leaf_roots(outdir):
        if mf._stamp(leaf) is not None:
            words.append(int(mortie.decimal_to_word(leaf.name[: -len(".zarr")])))
    env = build_root_coverage(words, shard_order)
    env["source"] = "refresh"
    write_root_coverage(str(outdir), env)
    return len(words)


def _fresh(out: Path, force: bool, resume: bool | None = None) -> None:
    """``out``'s parent made; ``out`` removed first with ``force`` (kept with ``resume``)."""
    if out.exists() and not resume:
        if not force:
            hint = "" if resume is None else ", or --resume"
            sys.exit(f"{out} exists (use --force to delete it{hint})")
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)


def _size(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def full_main(args) -> int:
    """``args.procs`` writer processes (the first alone until it made the manifest and the
    Icechunk repository), then the root coverage rebuilt."""
    import zagg

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    if args.windows and args.procs > 1:
        sys.exit("--windows needs --procs 1 (a rebuilt root coverage would lose its time range)")
    out = Path(args.outdir).resolve()
    _fresh(out, args.force, args.resume)
    k, cells = 4 ** (args.chunk_inner - args.shard_order), 4 ** (args.cell_order - args.shard_order)
    print(f"full hive -> {out}: {args.leaves} leaves s={args.shard_order} c={args.cell_order} "
          f"chunk_inner={args.chunk_inner} (K={k} x {cells // k} cells) "
          f"points/cell={args.points_per_cell} procs={args.procs} threads={args.threads} "
          f"batch={args.batch} icechunk={'default(ON)' if args.icechunk else 'off'} "
          f"pyramid={'zagg default + sweep stages' if args.pyramid else 'off'}", flush=True)
    start, procs = time.time(), []
    ready = [out / "morton_hive.json", *([out / "icechunk" / "repo"] * args.icechunk)]
    for i in range(args.procs):
        procs.append(subprocess.Popen([sys.executable, __file__, *sys.argv[1:], "--_slice",
                                       f"{i}/{args.procs}"]))
        if i == 0 and args.procs > 1:
            while not all(p.exists() for p in ready) and procs[0].poll() is None:
                time.sleep(0.5)
            time.sleep(3)
    codes = [p.wait() for p in procs]
    print(f"zagg runs done rc={codes} in {time.time() - start:.0f}s")
    if args.procs > 1:  # else the one run's tail wrote it whole
        n = rebuild_root_coverage(out, args.shard_order)
        print(f"root coverage.moc rebuilt: {n} stamped leaves")
    if (out / "icechunk").exists():
        files, size = _size(out / "icechunk")
        print(f"icechunk companion: {files} files, {size / 2**20:.1f} MiB")
    else:
        print("icechunk companion: ABSENT")
    print(f"total apparent size {_size(out)[1] / 2**30:.2f} GiB, wall "
          f"{time.time() - start:.0f}s")
    return 1 if any(codes) else 0


# the scale mode's grid: shard order 10 (a million shards fit in two base cells), cell order
# 12, ``chunk_inner: 11`` sharded (4 inner chunks of 4 cells); its one leaf: rank 0 of base
# cell 1, the FIRST shard of any domain at that order
SCALE_S, SCALE_C, SCALE_K = 10, 12, 11
SCALE_TEMPLATE = "1" + "1" * SCALE_S


def scale_grid(cell_order: int) -> tuple[int, int]:
    """(cell order, ``chunk_inner``) of the scale leaf: ``SCALE_C``/``SCALE_K`` by default;
    a cell order of ``SCALE_S`` gives one-cell leaves (one inner chunk of one cell)."""
    if cell_order == SCALE_C:
        return SCALE_C, SCALE_K
    if not SCALE_S <= cell_order <= 29:
        sys.exit(f"--scale-cell-order must be {SCALE_S}..29, got {cell_order}")
    return cell_order, max(SCALE_S, cell_order - 1)


def scale_shards(n: int, seed: int = 1) -> np.ndarray:
    """Packed words of ``n`` order-``SCALE_S`` shards, template first: runs of 1..16
    consecutive ranks separated by gaps of 1..8 (seeded), from rank 0 of base cell 1 on: a
    fragmented MOC of about n / 8.5 ranges, like real swath coverage."""
    import mortie

    rng = np.random.default_rng(seed)
    runs = rng.integers(1, 17, size=n // 4 + 16)
    gaps = rng.integers(1, 9, size=runs.size)
    gaps[0] = 0  # the first run starts at rank 0 (the template)
    starts = np.cumsum(gaps + np.concatenate(([0], runs[:-1])))
    ranks = np.concatenate([np.arange(a, a + r) for a, r in zip(starts, runs, strict=True)])[:n]
    base, local = 1 + ranks // 4**SCALE_S, ranks % 4**SCALE_S
    assert ranks.size == n and base.max() <= 6, "too many shards for the positive base cells"
    digits = np.stack([(local >> (2 * i)) & 3 for i in reversed(range(SCALE_S))], axis=1)
    chars = (digits.astype(np.uint8) + ord("1")).view(f"S{SCALE_S}").ravel()
    decs = np.char.add(base.astype("S1"), chars).astype(str)
    assert decs[0] == SCALE_TEMPLATE
    return np.asarray(mortie.decimal_to_word(decs), dtype=np.uint64)


def scale_main(args) -> int:
    """The one real leaf by zagg's write path (no Icechunk: a one-leaf companion would
    benchmark nothing), then the root coverage listing ``args.shards`` by zagg's builder."""
    import zagg
    from zagg.hive import build_root_coverage, write_root_coverage

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    out = Path(args.outdir).resolve()
    _fresh(out, args.force)
    start = time.time()
    cells, inner = scale_grid(args.scale_cell_order)
    leaf_args = argparse.Namespace(outdir=str(out), shard_order=SCALE_S, cell_order=cells,
                                   chunk_inner=inner, fields=args.fields, icechunk=False,
                                   pyramid=False, threads=1)
    mf._REGISTRY = LazyRegistry(cells, inner, 4, args.points_per_cell)
    summary = run_batch(leaf_args, [SCALE_TEMPLATE])
    assert summary["cells_with_data"] == 1 and not summary["cells_error"], summary
    env = build_root_coverage(scale_shards(args.shards), SCALE_S, source="builder")
    (out / "coverage.moc").unlink()
    write_root_coverage(str(out), env)
    print(f"scale hive -> {out}: {args.shards:,} shards listed at order {SCALE_S} "
          f"({len(env['ranges']):,} ranges, coverage.moc "
          f"{(out / 'coverage.moc').stat().st_size / 2**20:.1f} MiB), 1 real leaf "
          f"{SCALE_TEMPLATE} (c={cells}, K={4 ** (inner - SCALE_S)}), "
          f"{time.time() - start:.0f}s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--mode", choices=("full", "scale"), default="full")
    ap.add_argument("--shards", type=int, default=100_000, help="scale mode: shards listed")
    ap.add_argument("--scale-cell-order", type=int, default=SCALE_C,
                    help=f"scale mode: cell order ({SCALE_S}: one-cell leaves)")
    ap.add_argument("--leaves", type=int, default=4096, help="full mode: leaves written")
    for name, default in (("shard-order", 6), ("cell-order", 12), ("chunk-inner", 9),
                          ("points-per-cell", 3), ("procs", 2), ("threads", 1)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--cells-per-chunk", type=int, default=4, help="observed cells per inner chunk")
    ap.add_argument("--batch", type=int, default=0, help="shards per zagg run (0: all)")
    ap.add_argument("--fields", default="", help="comma-separated ATL06 fields (default: all 9)")
    ap.add_argument("--windows", type=int, default=0,
                    help="full mode: yearly windows, every leaf observed in each (0: none)")
    ap.add_argument("--no-icechunk", dest="icechunk", action="store_false")
    ap.add_argument("--no-pyramid", dest="pyramid", action="store_false", help="sweep/pyramid "
                    "off (as in the fixtures); default: zagg's pyramid + staged sweep")
    ap.add_argument("--force", action="store_true", help="delete OUTDIR first")
    ap.add_argument("--resume", action="store_true", help="full mode: re-run into an existing "
                    "OUTDIR; zagg skips leaves already current and its staged sweep re-gathers "
                    "them as dirt-only units")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=float, default=0.5, help="share of order-(s-2) blocks kept")
    ap.add_argument("--_slice", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    for name in ("zagg", "h5coro"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if args._slice:
        args.slice = tuple(int(x) for x in args._slice.split("/"))
        return worker_main(args)
    return scale_main(args) if args.mode == "scale" else full_main(args)


if __name__ == "__main__":
    sys.exit(main())
