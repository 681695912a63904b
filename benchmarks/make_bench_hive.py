"""Write benchmark morton-hives for moczarr_store.

Usage (Python 3.12 venv with zagg 0.61.0)::

    python3.12 benchmarks/make_bench_hive.py OUTDIR [--mode full|scale] [--shards N]

``--mode full`` (default)
    A LARGE hive written by zagg's REAL write path
    (``zagg.runner.agg(config, catalog=..., store=..., backend="local")``),
    driven exactly as ``fixtures/make_fixtures.py`` drives it (imported from
    there: ``make_config``, ``make_granule``, ``synthetic_source`` and the
    ``SyntheticH5Coro`` registry). Defaults: 4,096 leaves, shard order 6, cell
    order 12 (zagg's packaged ATL06 grid), ``chunk_inner: 9`` + ``sharded:
    true`` (K = 4^(9-6) = 64 inner chunks of 4^(12-9) = 64 cells; 4,096 cells
    per leaf), the full default ATL06 aggregation (9 fields + ``morton``; ``--fields``
    keeps some),
    zagg defaults otherwise: versioned leaves, root coverage.moc, Icechunk
    companion ON, and zagg's default pyramid, which on this interior-chunk
    grid is the ``zagg-pyramid/2`` ladder (leaf columns at order 9, rungs
    ``all.zarr`` at orders 8..3). ``output.sweep: "stages"`` is spelled out
    (it is what the absent key resolves to) because only the explicit value
    makes the Icechunk commit resolve to the LADDER -- one commit per order-3
    node instead of one per leaf: per-leaf commits rewrite icechunk's repo
    object each time, O(commits) each, and made a 2,400-leaf run quadratic
    (> 1 s per commit after 1,500 commits). ``--no-pyramid`` switches
    sweep/pyramid off as in the fixtures (Icechunk then commits per leaf).

    Leaves: :func:`choose_shards` -- a seeded random half (``--keep``) of the
    order-4 blocks (16 consecutive shards each) of base cell -1, then of base
    cell 1 (2,048 leaves each): contiguous runs with gaps, as real coverage.
    Every leaf gets one synthetic granule with ``--points-per-cell`` (3)
    points at ``--cells-per-chunk`` (4) random cells of EVERY inner chunk, so
    every inner chunk of every array is written (zagg skips empty inner
    chunks) while most cells hold fill values: zagg's per-cell aggregation
    loop costs ~0.1 ms per cell, occupied or not, so bytes are bought with
    cells, not with observations. Granule arrays are generated lazily, on
    the worker's first open, and dropped soon after.

    Parallelism: zagg's local backend is a thread pool (``--threads``) inside
    one GIL-bound process. ``--procs P`` (2) runs P zagg runs concurrently in
    separate processes, each over a contiguous slice of the shards (= one
    base cell each with the defaults, so their run-scoped staged sweeps touch
    disjoint ladder nodes), in batches of ``--batch`` shards (0 = one ``agg``
    call per process). Icechunk commits are serialized across processes by an
    ``flock`` added to zagg's per-process commit lock (icechunk's local
    storage is not safe for concurrent commits). The root coverage.moc is
    read-modify-written by every run's tail, so after all runs it is REBUILT
    from the stamped leaves with zagg's ``build_root_coverage`` /
    ``write_root_coverage``. The manifest's informative pyramid ``actuals``
    are last-writer-wins between the processes.

    Cost (2 cores, 2026-11-29): about 53 minutes for the default hive -- a first
    pass stopped after 43 min at ~3,300 leaves, and ``--resume`` (zagg skips the
    leaves already current) finished it in 10.5 min including the staged sweep.
    Result: 4,096 leaves + 7 pyramid orders, 296,886 files, 2.1 GB apparent size
    (3.0 GB on disk), and a 46 MiB Icechunk companion.

``--mode scale --shards N``
    ONE real leaf, written by zagg's real write path like full mode but at
    shard order 10 / cell order 12, ``chunk_inner: 11`` sharded (K = 4 inner
    chunks of 4 cells, every cell observed), Icechunk off: shard
    ``11111111111`` (rank 0 of base cell 1 -> the smallest packed word at
    order 10, so it is the FIRST shard of the domain); then the root
    ``coverage.moc`` is replaced by one listing N shards
    (:func:`scale_shards`: runs of 1..16 consecutive shards with gaps of 1..8,
    ~N/8.5 ranges) via zagg's ``build_root_coverage``/``write_root_coverage``.
    ``morton_hive.json`` is zagg's. Every other listed shard has no leaf on
    disk (reads as missing with ``verify="lazy"``).
    ``--scale-cell-order 10`` makes the leaf ONE cell (cell order = shard
    order, one inner chunk): the hive of one-cell leaves ``benchmarks/onecell.py``
    measures (1,000,000 shards: about 20 s).
"""

from __future__ import annotations

import argparse
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

log = logging.getLogger("make_bench_hive")


# ---------------------------------------------------------------------------
# lazy synthetic source
# ---------------------------------------------------------------------------


class LazyRegistry(dict):
    """``make_fixtures._REGISTRY`` replacement: a granule's arrays are built
    (by ``make_fixtures.make_granule``) on the first ``H5Coro`` open and not
    kept (each granule is opened by exactly one shard worker)."""

    def __init__(self, cell_order: int, chunk_inner: int, per_chunk: int, ppc: int):
        super().__init__()
        self.cell_order = cell_order
        self.cells_per_chunk = 4 ** (cell_order - chunk_inner)
        self.per_chunk = min(per_chunk, self.cells_per_chunk)
        self.ppc = ppc
        self.recent: dict[str, dict] = {}  # small FIFO: a granule may be opened twice
        self.opens = 0

    def __missing__(self, resource: str):
        self.opens += 1
        hit = self.recent.get(resource)
        if hit is not None:
            return hit
        # resource = "synthetic-atl06/bench_{shard}.h5"
        gid = resource.rsplit("/", 1)[-1][: -len(".h5")]
        shard = gid[len("bench_") :]
        n = 4 ** (self.cell_order - len(shard.lstrip("-")) + 1)
        seed = abs(hash_shard(shard))
        rng = np.random.default_rng(seed)
        # stratified: `per_chunk` distinct observed cells in EVERY inner chunk
        cpc, m = self.cells_per_chunk, self.per_chunk
        picks = np.argsort(rng.random((n // cpc, cpc)), axis=1)[:, :m]
        ranks = np.sort((picks + cpc * np.arange(n // cpc)[:, None]).ravel())
        mf.make_granule(
            gid,
            [(shard, ranks, self.ppc)],
            cell_order=self.cell_order,
            seed=seed,
            mean=1000.0 + (seed % 2000),
        )
        data = dict.pop(self, resource)
        self.recent[resource] = data
        while len(self.recent) > 8:
            self.recent.pop(next(iter(self.recent)), None)
        return data


def hash_shard(shard: str) -> int:
    return int(shard.replace("-", "9"))


def granule_record(shard: str) -> dict:
    gid = f"bench_{shard}"
    return {
        "id": f"{gid}.h5",
        "s3": f"s3://synthetic-atl06/{gid}.h5",
        "https": f"https://synthetic-atl06.invalid/{gid}.h5",
        "time_start": "2019-04-01T00:00:00Z",
        "time_end": "2019-09-30T00:00:00Z",
    }


# ---------------------------------------------------------------------------
# shard choice
# ---------------------------------------------------------------------------


def _tail(rank: int, order: int) -> str:
    digits = []
    for _ in range(order):
        digits.append("1234"[rank % 4])
        rank //= 4
    return "".join(reversed(digits))


def choose_shards(
    n: int, shard_order: int, seed: int = 0, block: int = 2, keep: float = 0.2
) -> list[str]:
    """``n`` shards at ``shard_order``, clustered like real coverage: in base
    cells -1, -2, 1, 2, ... (in that order, until ``n`` are taken) a seeded
    random 20 % of the order ``shard_order - block`` blocks, each contributing
    all of its ``4**block`` shards (contiguous runs with gaps -> many MOC
    ranges; positive and negative bases both present)."""
    rng = np.random.default_rng(seed)
    per_base = 4**shard_order
    run = 4**block
    out: list[str] = []
    for base in ("-1", "1", "-2", "2", "-3", "3", "-4", "4", "-5", "5", "-6", "6"):
        nblocks = per_base // run
        kept = np.sort(rng.choice(nblocks, size=max(1, int(nblocks * keep)), replace=False))
        ranks = (kept[:, None] * run + np.arange(run)[None, :]).ravel()
        out.extend(base + _tail(int(r), shard_order) for r in ranks)
        if len(out) >= n:
            break
    return out[:n]


# ---------------------------------------------------------------------------
# full mode
# ---------------------------------------------------------------------------


def bench_config(args):
    # None -> key dropped -> zagg default; False -> off
    if args.pyramid:
        # zagg's default pyramid (zagg-pyramid/2 ladder on this interior-chunk
        # grid); sweep "stages" spelled out so the Icechunk commit resolves to
        # the LADDER (one commit per commit_order node) instead of per leaf.
        pyr = {"sweep": "stages", "pyramid": None}
    else:
        pyr = {"sweep": False, "pyramid": False}
    return mf.make_config(
        args.shard_order,
        args.cell_order,
        fields=args.fields.split(",") if args.fields else None,  # None: all of ATL06's
        grid={"chunk_inner": args.chunk_inner, "sharded": True},
        icechunk=None if args.icechunk else False,  # None -> zagg default (ON)
        **pyr,
    )


def run_batch(args, shards: list[str]) -> dict:
    """One zagg.runner.agg run over ``shards`` (one lazily built granule each)."""
    import mortie
    import zagg.runner
    from zagg.grids import from_config

    cfg = bench_config(args)
    grid = from_config(cfg)
    pairs = sorted((int(mortie.decimal_to_word(s)), [granule_record(s)]) for s in shards)
    catalog = {
        "metadata": {"short_name": "ATL06", "version": "007"},
        "grid_signature": grid.spatial_signature(),
        "shard_keys": [k for k, _ in pairs],
        "granules": [recs for _, recs in pairs],
    }
    cat_path = Path(args.outdir).parent / f".bench_catalog_{os.getpid()}.json"
    cat_path.write_text(json.dumps(catalog))
    t0 = time.time()
    tag = f"[proc {args.slice[0]}]" if getattr(args, "slice", None) else "[run]"

    def progress(done, total, _cost):
        if done % 50 == 0 or done == total:
            print(f"{tag}   {done}/{total} leaves, {time.time() - t0:.0f}s", flush=True)

    try:
        with mf.synthetic_source():
            summary = zagg.runner.agg(
                cfg,
                catalog=str(cat_path),
                store=str(args.outdir),
                backend="local",
                max_workers=args.threads,
                on_progress=progress,
            )
    finally:
        cat_path.unlink(missing_ok=True)
    return summary


class _InterprocessCommitLock:
    """zagg serializes icechunk commits per PROCESS (a threading.Lock per repo,
    ``zagg.icechunk_refs._local_commit_lock``); icechunk's local-filesystem
    storage is not safe for concurrent commits, so with several writer
    processes the same lock also takes an ``flock`` on a file beside the store."""

    def __init__(self, thread_lock, lock_path: Path):
        self.thread_lock = thread_lock
        self.lock_path = lock_path
        self.fd = None

    def __enter__(self):
        import fcntl

        self.thread_lock.acquire()
        self.fd = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl

        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.thread_lock.release()
        return False


def install_commit_lock(outdir: Path) -> None:
    """Serialize, across the writer processes, (a) Icechunk commits and (b) the
    run-tail staged sweeps. zagg admits one staged sweep per store at a time
    (``zagg.sweep_lease``) and a refused run simply skips its sweep (fail-open,
    D9) -- which would leave that run's ladder rungs unbuilt and, in ladder
    commit mode, its Icechunk refs uncommitted. With the flock the second
    process's sweep waits for the first to release the lease instead."""
    import threading

    import zagg.icechunk_refs as ir
    import zagg.sweep_stages as ss

    original = ir._local_commit_lock
    commit_lock = outdir.resolve().parent / f".{outdir.name}.icechunk-commit.lock"

    def lock(repo_path: str):
        return _InterprocessCommitLock(original(repo_path), commit_lock)

    ir._local_commit_lock = lock

    sweep = ss.stage_sweep_after_run
    sweep_lock = outdir.resolve().parent / f".{outdir.name}.sweep.lock"
    sweep_thread_lock = threading.Lock()

    def serialized_sweep(*a, **kw):
        with _InterprocessCommitLock(sweep_thread_lock, sweep_lock):
            t0 = time.time()
            out = sweep(*a, **kw)
            print(f"[pid {os.getpid()}] staged sweep {time.time() - t0:.0f}s", flush=True)
            return out

    ss.stage_sweep_after_run = serialized_sweep


def worker_main(args) -> int:
    """Child process: run ``args.slice`` of the shard list in batches."""
    import zagg

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    mf._REGISTRY = LazyRegistry(
        args.cell_order, args.chunk_inner, args.cells_per_chunk, args.points_per_cell
    )
    install_commit_lock(Path(args.outdir))
    shards = choose_shards(args.leaves, args.shard_order, seed=args.seed, keep=args.keep)
    i, p = args.slice
    per = -(-len(shards) // p)
    mine = shards[i * per : (i + 1) * per]  # contiguous: fewer icechunk rebases
    done = 0
    batch = args.batch or len(mine)
    for b in range(0, len(mine), batch):
        chunk = mine[b : b + batch]
        t0 = time.time()
        s = run_batch(args, chunk)
        done += len(chunk)
        ice = s.get("icechunk")
        failed = isinstance(ice, dict) and ice.get("error")
        ice_state = f"err {ice['error']}" if failed else bool(ice)
        print(
            f"[proc {i}] batch {b // batch}: {len(chunk)} shards, "
            f"with_data={s['cells_with_data']} err={s['cells_error']} "
            f"obs={s['total_obs']:,} {time.time() - t0:.0f}s "
            f"icechunk={ice_state} "
            f"({done}/{len(mine)})",
            flush=True,
        )
        if s["cells_error"]:
            for r in s["results"]:
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


def full_main(args) -> int:
    import zagg

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    out = Path(args.outdir).resolve()
    if out.exists() and not args.resume:
        if not args.force:
            sys.exit(f"{out} exists (use --force to delete it, or --resume)")
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    k = 4 ** (args.chunk_inner - args.shard_order)
    cells = 4 ** (args.cell_order - args.shard_order)
    print(
        f"full hive -> {out}: {args.leaves} leaves s={args.shard_order} c={args.cell_order} "
        f"chunk_inner={args.chunk_inner} (K={k} x {cells // k} cells) "
        f"points/cell={args.points_per_cell} procs={args.procs} threads={args.threads} "
        f"batch={args.batch} icechunk={'default(ON)' if args.icechunk else 'off'} "
        f"pyramid={'zagg default + sweep stages' if args.pyramid else 'off'}",
        flush=True,
    )
    t0 = time.time()
    # First batch alone (manifest + icechunk repo init happen once, race-free).
    first = [a for a in sys.argv[1:]]
    procs = []
    for i in range(args.procs):
        cmd = [sys.executable, __file__, *first, "--_slice", f"{i}/{args.procs}"]
        procs.append(subprocess.Popen(cmd))
        if i == 0 and args.procs > 1:
            # let proc 0 create the manifest / icechunk repo before the others start
            ready = [out / "morton_hive.json"]
            if args.icechunk:
                ready.append(out / "icechunk" / "repo")
            while not all(p.exists() for p in ready) and procs[0].poll() is None:
                time.sleep(0.5)
            time.sleep(3)
    rcs = [p.wait() for p in procs]
    gen = time.time() - t0
    n = rebuild_root_coverage(out, args.shard_order)
    print(f"zagg runs done rc={rcs} in {gen:.0f}s; root coverage.moc rebuilt: {n} stamped leaves")
    ice = out / "icechunk"
    if ice.exists():
        size = sum(p.stat().st_size for p in ice.rglob("*") if p.is_file())
        nfiles = sum(1 for p in ice.rglob("*") if p.is_file())
        print(f"icechunk companion: {nfiles} files, {size / 2**20:.1f} MiB")
    else:
        print("icechunk companion: ABSENT")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"total apparent size {total / 2**30:.2f} GiB, wall {time.time() - t0:.0f}s")
    return 0 if not any(rcs) else 1


# ---------------------------------------------------------------------------
# scale mode
# ---------------------------------------------------------------------------

#: scale-mode grid: shard order 10 (12 * 4^10 = 12.6 M possible shards, so
#: 1,000,000 fit in two base cells), cell order 12 like the large hive,
#: ``chunk_inner: 11`` sharded -> K = 4 inner chunks of 4 cells, 16 cells/leaf.
SCALE_S, SCALE_C, SCALE_K = 10, 12, 11
#: the template shard: rank 0 of base cell "1" -> the smallest packed word at
#: order 10, i.e. the FIRST shard of any domain at that order.
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
    """Packed words of ``n`` order-``SCALE_S`` shards, template first: runs of
    1..16 consecutive ranks separated by gaps of 1..8 (seeded), from rank 0 of
    base cell 1 onwards through bases 2, 3, ... -> a fragmented MOC with about
    n / 8.5 ranges, like real swath coverage."""
    import mortie

    rng = np.random.default_rng(seed)
    runs = rng.integers(1, 17, size=n // 4 + 16)
    gaps = rng.integers(1, 9, size=runs.size)
    gaps[0] = 0  # the first run starts at rank 0 (the template)
    starts = np.cumsum(gaps + np.concatenate(([0], runs[:-1])))
    ranks = np.concatenate([np.arange(a, a + r) for a, r in zip(starts, runs, strict=True)])[:n]
    assert ranks.size == n
    per_base = 4**SCALE_S
    base = 1 + ranks // per_base
    assert base.max() <= 6, "too many shards for the positive base cells"
    local = ranks % per_base
    digits = np.zeros((n, SCALE_S), dtype=np.uint8)
    for i in range(SCALE_S):
        digits[:, SCALE_S - 1 - i] = (local >> (2 * i)) & 3
    chars = (digits + ord("1")).view(f"S{SCALE_S}").ravel()
    decs = np.char.add(base.astype("S1"), chars).astype(str)
    words = np.asarray(mortie.decimal_to_word(decs), dtype=np.uint64)
    assert decs[0] == SCALE_TEMPLATE
    return words


def scale_main(args) -> int:
    import zagg
    from zagg.hive import build_root_coverage, write_root_coverage

    assert zagg.__version__ == mf.ZAGG_VERSION, zagg.__version__
    out = Path(args.outdir).resolve()
    if out.exists():
        if not args.force:
            sys.exit(f"{out} exists (use --force to delete it)")
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    # 1. the ONE real leaf, written by zagg's real write path (same synthetic
    #    source and settings as full mode, every cell observed).
    cells, inner = scale_grid(args.scale_cell_order)
    leaf_args = argparse.Namespace(
        outdir=str(out),
        shard_order=SCALE_S,
        cell_order=cells,
        chunk_inner=inner,
        fields=args.fields,
        icechunk=False,  # a one-leaf companion repo would benchmark nothing
        pyramid=False,
        threads=1,
    )
    mf._REGISTRY = LazyRegistry(cells, inner, 4, args.points_per_cell)
    summary = run_batch(leaf_args, [SCALE_TEMPLATE])
    assert summary["cells_with_data"] == 1 and not summary["cells_error"], summary
    # 2. the root coverage.moc listing N shards (zagg's own builder/writer)
    words = scale_shards(args.shards)
    env = build_root_coverage(words, SCALE_S, source="builder")
    (out / "coverage.moc").unlink()
    write_root_coverage(str(out), env)
    moc_bytes = (out / "coverage.moc").stat().st_size
    print(
        f"scale hive -> {out}: {args.shards:,} shards listed at order {SCALE_S} "
        f"({len(env['ranges']):,} ranges, coverage.moc {moc_bytes / 2**20:.1f} MiB), "
        f"1 real leaf {SCALE_TEMPLATE} (c={cells}, K={4 ** (inner - SCALE_S)}), "
        f"{time.time() - t0:.0f}s"
    )
    return 0


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--mode", choices=("full", "scale"), default="full")
    ap.add_argument("--shards", type=int, default=100_000, help="scale mode: shards listed")
    ap.add_argument("--scale-cell-order", type=int, default=SCALE_C,
                    help=f"scale mode: cell order ({SCALE_S}: one-cell leaves)")
    ap.add_argument("--leaves", type=int, default=4096, help="full mode: leaves written")
    ap.add_argument("--shard-order", type=int, default=6)
    ap.add_argument("--cell-order", type=int, default=12)
    ap.add_argument("--chunk-inner", type=int, default=9)
    ap.add_argument("--points-per-cell", type=int, default=3)
    ap.add_argument("--cells-per-chunk", type=int, default=4, help="observed cells per inner chunk")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=0, help="shards per zagg run (0: all)")
    ap.add_argument("--fields", default="", help="comma-separated ATL06 fields (default: all 9)")
    ap.add_argument("--no-icechunk", dest="icechunk", action="store_false")
    ap.add_argument(
        "--no-pyramid",
        dest="pyramid",
        action="store_false",
        help="sweep/pyramid off (as in the fixtures); default: zagg's pyramid + staged sweep",
    )
    ap.add_argument("--force", action="store_true", help="delete OUTDIR first")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="full mode: re-run into an existing OUTDIR; zagg skips leaves already current "
        "(skip-if-current) and its staged sweep re-gathers them as dirt-only units",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=float, default=0.5, help="share of order-(s-2) blocks kept")
    ap.add_argument("--_slice", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    for name in ("zagg", "h5coro"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if args._slice:
        i, p = (int(x) for x in args._slice.split("/"))
        args.slice = (i, p)
        return worker_main(args)
    if args.mode == "scale":
        return scale_main(args)
    return full_main(args)


if __name__ == "__main__":
    sys.exit(main())
