"""A hive read and served while zagg writes it: every answer must be a committed state.

    python -m tests.support.live_write --seconds 180 [--zagg-python PY] [--clients 4]

(from a checkout's root).

PYTEST_DONT_REWRITE

The writer is zagg's real write path (``zagg.runner.agg``, backend ``local``, driven as
``fixtures/make_fixtures.py`` drives it: a synthetic HDF5 source, zagg 0.61.0), run in
its own interpreter (``--zagg-python``, else ``$MOCZARR_ZAGG_PYTHON``; it needs Python
>= 3.12 and pins other versions of zarr and xarray than this package's environments, so
it runs as a subprocess). It writes a first run, then commits run after run until
``--seconds`` have passed: each run rewrites a few existing leaves (a granule added: zagg
writes a new ``run-*`` version and swaps the leaf's stamp) and sometimes adds a new leaf.
zagg 0.61 never removes a superseded version, so after each run the writer removes them
as a writer's cleanup does: once the stamp names the new version, ``rmtree`` of every other
``run-*`` directory of the leaves it rewrote. Before that, it records a digest of every
field of each new version as zarr reads it from the version itself (``oracle/``).

Meanwhile this process reads the hive: an in-process ``MocHiveStore`` opened once (never
renewed), a fresh store every ``--fresh`` seconds (new leaves appear there), and
``moczarr-store serve`` (``--stamp-ttl``) read by ``--clients`` zarr clients over HTTP,
plus one raw HTTP client counting statuses. The writer commits its second run only once
the in-process store and ``serve`` have opened the first: a chunk index names a leaf by its
place in a view, so the two views must hold the same leaves. Each read is one leaf's chunk
of one field (``chunking="leaf"``); its digest must be one a committed version of that leaf recorded
(checked again at the end, once every version's record exists). At the end the hive,
settled, is read by a fresh store and compared with ``moczarr.open_hive``.

``--unversioned``: zagg rewrites leaves in place (``leaf_versions: false``: it clears a
leaf, then writes it again); every reader reads every stamp before the rewrites begin, and
a read that meets a leaf being rewritten must fail (``LeafMovedError``; a 502 through
``serve``), never read as fill.

Prints the commits, the reads and their outcomes by kind: ``match`` (a committed version's
values), ``fill`` (the fill value for a stamped leaf: wrong), ``wrong`` (no committed
version's values: a mix or garbage), ``error`` (an exception; its kinds are listed).
Exit status 1 if any read was ``fill`` or ``wrong``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARD_ORDER, CELL_ORDER = 5, 7
CELLS = 4 ** (CELL_ORDER - SHARD_ORDER)  # cells per leaf (one chunk per leaf and field)
FIELDS = ("count", "h_max", "h_mean", "h_min")
GROUP = f"atl06/o{CELL_ORDER}"
# the shards a run may write: the 16 order-5 children of 4441, and 4 of -41133
POOL = [f"4441{a}{b}" for a in "1234" for b in "1234"] + [f"-41133{a}" for a in "1234"]
FIRST = 8  # shards of the first run


def digest(values: np.ndarray) -> str:
    """What a field's values are compared by: dtype, shape and bytes (NaN made one NaN)."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind == "f":
        values = np.where(np.isnan(values), np.nan, values).astype(values.dtype)
    h = hashlib.blake2b(f"{values.dtype.str}{values.shape}".encode(), digest_size=16)
    h.update(values.tobytes())
    return h.hexdigest()


def leaf_path(shard: str) -> str:
    """A shard's leaf, relative to the hive root: one directory per digit."""
    sign, digits = ("-", shard[1:]) if shard.startswith("-") else ("", shard)
    return "/".join([sign + digits[0], *digits[1:]]) + f"/{shard}.zarr"


# -- the writer (run in zagg's interpreter) ----------------------------------------------


def writer_main(hive: Path, seconds: float, seed: int, unversioned: bool = False) -> int:
    """The first run, then runs until ``seconds`` have passed; one JSON line per commit on
    stdout (``{"ready": true}`` after the first). The runs after the first wait for a line
    on stdin: the readers have opened their views of the first run by then (and, when
    ``unversioned``, read every stamp). ``unversioned``: leaves rewritten in place
    (``leaf_versions: false``), no new leaf."""
    sys.path.insert(0, str(FIXTURES))
    import make_fixtures as mf
    import zarr

    rng = random.Random(seed)
    in_place = {"leaf_versions": False} if unversioned else {}  # zagg's default: versioned
    cfg = mf.make_config(SHARD_ORDER, CELL_ORDER, **in_place)
    granules: dict[str, list[dict]] = {}
    made = [0, 0]  # granules made, runs made

    def granule(shard: str) -> dict:
        made[0] += 1
        cells = mf.spread(CELLS, rng.randint(2, CELLS), seed * 1000 + made[0])
        return mf.make_granule(f"live_g{made[0]}", [(shard, cells, rng.randint(1, 4))],
                               cell_order=CELL_ORDER, seed=made[0],
                               mean=1000.0 + 50 * made[0])

    def run(shards: list[str]) -> dict:
        for shard in shards:
            granules.setdefault(shard, []).append(granule(shard))
        started = time.monotonic()
        mf.run_agg(cfg, hive, {s: list(granules[s]) for s in shards})
        record: dict = {"seconds": round(time.monotonic() - started, 2), "leaves": {}}
        made[1] += 1
        for shard in shards:
            leaf = hive / leaf_path(shard)
            current = mf._stamp(leaf).get("current") or f"commit-{made[1]:06d}"
            data = leaf if unversioned else leaf / current
            version = zarr.open_group(str(data / str(CELL_ORDER)), mode="r")
            oracle = hive.parent / "oracle" / shard
            oracle.mkdir(parents=True, exist_ok=True)
            doc = {name: digest(version[name][...]) for name in FIELDS}
            (oracle / f".{current}").write_text(json.dumps(doc))
            os.replace(oracle / f".{current}", oracle / f"{current}.json")
            record["leaves"][shard] = current
        removed = 0
        time.sleep(rng.uniform(0.0, 0.1))  # readers may hold the old stamps meanwhile
        for shard in shards:  # the cleanup: every superseded version goes
            leaf = hive / leaf_path(shard)
            for old in leaf.glob("run-*"):
                if old.name != record["leaves"][shard]:
                    shutil.rmtree(old)
                    removed += 1
        record["removed"] = removed
        return record

    written = rng.sample(POOL, FIRST)
    print(json.dumps({"commit": 0, **run(written), "ready": True}), flush=True)
    sys.stdin.readline()  # the readers' views are open
    deadline, commit = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        commit += 1
        shards = rng.sample(written, min(len(written), rng.randint(1, 4)))
        fresh = [s for s in POOL if s not in written]
        if fresh and not unversioned and rng.random() < 0.3:
            shards.append(rng.choice(fresh))
            written.append(shards[-1])
        print(json.dumps({"commit": commit, **run(shards)}), flush=True)
    return 0


# -- the readers (run here) -----------------------------------------------------------------


class Oracle:
    """The digests of every committed version of every leaf, read from ``oracle/``."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.known: dict[tuple[str, str], set[str]] = {}
        self.lock = threading.Lock()

    def load(self) -> None:
        known: dict[tuple[str, str], set[str]] = {}
        for path in self.where.glob("*/*.json"):
            for name, value in json.loads(path.read_text()).items():
                known.setdefault((path.parent.name, name), set()).add(value)
        with self.lock:
            self.known = known

    def holds(self, shard: str, name: str, value: str) -> bool:
        with self.lock:
            return value in self.known.get((shard, name), ())


class Tally:
    """Outcomes by reader and kind; digests not (yet) known, to check at the end."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self.counts: Counter = Counter()
        self.errors: Counter = Counter()
        self.pending: list[tuple[str, str, str, str]] = []
        self.lock = threading.Lock()

    def check(self, reader: str, shard: str, name: str, values: np.ndarray, fill) -> None:
        value = digest(values)
        if self.oracle.holds(shard, name, value):
            kind = "match"
        elif _all_fill(values, fill):
            kind = "fill"
        else:
            with self.lock:
                self.pending.append((reader, shard, name, value))
            return
        with self.lock:
            self.counts[(reader, kind)] += 1

    def failed(self, reader: str, err: BaseException) -> None:
        with self.lock:
            self.counts[(reader, "error")] += 1
            self.errors[f"{reader}: {type(err).__name__}: {str(err)[:160]}"] += 1

    def settle(self) -> None:
        """The digests not known when read, against every version recorded by now."""
        self.oracle.load()
        for reader, shard, name, value in self.pending:
            kind = "match" if self.oracle.holds(shard, name, value) else "wrong"
            self.counts[(reader, kind)] += 1
        self.pending.clear()


def _all_fill(values: np.ndarray, fill) -> bool:
    if values.dtype.kind == "f" and (fill is None or np.isnan(fill)):
        return bool(np.isnan(values).all())
    return bool((values == fill).all())


def _leaf_of(store, name: str, chunk: int) -> str:
    """The shard whose leaf chunk ``chunk`` of field ``name`` names in ``store``'s view."""
    array = store.session.view.arrays[f"{GROUP}/{name}"]
    path = array.located_object((chunk,))[1]
    return path.rsplit("/", 1)[-1].removesuffix(".zarr")


def _read_loop(reader: str, open_arrays, layout, tally: Tally, stop: threading.Event,
               seed: int) -> None:
    """Random leaf chunks of random fields, checked, until ``stop``."""
    rng = random.Random(seed)
    arrays = open_arrays()
    while not stop.is_set():
        name = rng.choice(FIELDS)
        chunk = rng.randrange(len(layout))
        try:
            values = arrays[name][chunk * CELLS : (chunk + 1) * CELLS]
        except Exception as err:  # counted by kind: the run goes on
            tally.failed(reader, err)
            continue
        tally.check(reader, layout[chunk], name, values, arrays[name].fill_value)


def _raw_loop(url: str, layout: list[str], tally: Tally, stop: threading.Event,
              seed: int) -> None:
    """Plain GETs of leaf chunks: their HTTP statuses (a 404 is the fill value)."""
    rng = random.Random(seed)
    while not stop.is_set():
        key = f"{GROUP}/{rng.choice(FIELDS)}/c/{rng.randrange(len(layout))}"
        try:
            with urllib.request.urlopen(f"{url}/{key}", timeout=30) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as err:
            status = err.code
        except OSError as err:
            tally.failed("http-raw", err)
            continue
        with tally.lock:
            tally.counts[("http-raw", f"status {status}")] += 1


def run(args) -> dict:
    import moczarr
    import zarr

    from moczarr_store import MocHiveStore

    from .processes import http_store, served

    work = Path(tempfile.mkdtemp(prefix="live-write-", dir=args.tmp))
    hive = work / "hive"
    writer = subprocess.Popen(
        [args.zagg_python, str(Path(__file__).resolve()), "--writer", str(hive),
         "--seconds", str(args.seconds), "--seed", str(args.seed),
         *(["--unversioned"] if args.unversioned else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=open(work / "writer.log", "w"),  # noqa: SIM115
        text=True, cwd=ROOT,
    )
    commits: list[dict] = []
    assert writer.stdout is not None
    first = writer.stdout.readline()
    if not first:
        raise RuntimeError(f"the writer ({args.zagg_python}) stopped before its first run")
    commits.append(json.loads(first))
    oracle = Oracle(work / "oracle")
    oracle.load()
    tally = Tally(oracle)
    warnings.simplefilter("ignore")
    stop = threading.Event()
    with served(hive, "--stamp-ttl", str(args.stamp_ttl), "--chunking", "leaf") as (url, _):
        store = MocHiveStore(hive)  # the first run, as the server's view: checked below
        group = zarr.open_group(store, path=GROUP, mode="r")
        layout = [_leaf_of(store, "count", i) for i in range(group["count"].shape[0] // CELLS)]

        def local_arrays():
            return {name: group[name] for name in FIELDS}

        def http_arrays():
            remote = zarr.open_group(http_store(url), path=GROUP, mode="r",
                                     use_consolidated=False)
            return {name: remote[name] for name in FIELDS}

        threads = [threading.Thread(target=_read_loop, daemon=True, args=(
            "in-process", local_arrays, layout, tally, stop, args.seed))]
        threads += [threading.Thread(target=_read_loop, daemon=True, args=(
            f"http-{i}", http_arrays, layout, tally, stop, args.seed + 1 + i))
            for i in range(args.clients)]
        threads.append(threading.Thread(target=_raw_loop, daemon=True,
                                        args=(url, layout, tally, stop, args.seed)))

        # A chunk index names a leaf by its place in the view, so both views must hold the
        # same leaves (the writer only adds leaves: the same count is the same leaves).
        served_shape = http_arrays()["count"].shape
        if served_shape != group["count"].shape:
            raise RuntimeError(f"the server's view {served_shape} is not the in-process "
                               f"view {group['count'].shape}: chunk indexes would disagree")
        if args.unversioned:  # every stamp read here and by the server, then the rewrites
            for arrays in (local_arrays(), http_arrays()):
                for name in FIELDS:
                    arrays[name][...]
        assert writer.stdin is not None
        writer.stdin.write("go\n")  # the views are open: the writer commits from now
        writer.stdin.flush()

        def follow() -> None:
            for line in writer.stdout:  # type: ignore[union-attr]
                commits.append(json.loads(line))
                oracle.load()

        follower = threading.Thread(target=follow, daemon=True)
        for thread in [follower, *threads]:
            thread.start()
        fresh_seen = 0
        while writer.poll() is None:
            time.sleep(args.fresh)
            try:  # a store opened now presents the leaves committed so far
                fresh = MocHiveStore(hive)
                node = zarr.open_group(fresh, path=GROUP, mode="r")
                chunks = node["count"].shape[0] // CELLS
                fresh_seen = max(fresh_seen, chunks)
                for name in FIELDS:
                    chunk = random.randrange(chunks)
                    values = node[name][chunk * CELLS : (chunk + 1) * CELLS]
                    tally.check("fresh-store", _leaf_of(fresh, name, chunk), name, values,
                                node[name].fill_value)
            except Exception as err:
                tally.failed("fresh-store", err)
        stop.set()
        for thread in threads:
            thread.join(60)
        follower.join(60)
    tally.settle()
    final = MocHiveStore(hive)
    node = zarr.open_group(final, path=GROUP, mode="r")
    ref = moczarr.open_hive(str(hive)).load()
    final_equal = all(np.array_equal(node[name][...], ref[name].values, equal_nan=True)
                      for name in FIELDS)
    out = {
        "writer_exit": writer.returncode,
        "commits": len(commits) - 1,
        "leaves_rewritten": sum(len(c["leaves"]) for c in commits[1:]),
        "versions_removed": sum(c["removed"] for c in commits),
        "leaves": {"first": FIRST, "last": len({s for c in commits for s in c["leaves"]}),
                   "seen_by_fresh_stores": fresh_seen, "in_open_view": len(layout)},
        "outcomes": {f"{r} {k}": n for (r, k), n in sorted(tally.counts.items())},
        "errors": dict(tally.errors.most_common(10)),
        "final_state_equals_moczarr": final_equal,
    }
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return out


def bad(out: dict) -> int:
    """Reads that gave the fill value or no committed state, and everything else amiss."""
    wrong = sum(n for k, n in out["outcomes"].items() if k.endswith((" fill", " wrong")))
    return wrong + (out["writer_exit"] != 0) + (not out["final_state_equals_moczarr"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long zagg writes")
    parser.add_argument("--zagg-python", default=os.environ.get("MOCZARR_ZAGG_PYTHON"),
                        help="a Python >= 3.12 with zagg 0.61.0 ($MOCZARR_ZAGG_PYTHON)")
    parser.add_argument("--clients", type=int, default=4, help="zarr clients over HTTP")
    parser.add_argument("--stamp-ttl", type=float, default=60.0, help="serve --stamp-ttl")
    parser.add_argument("--fresh", type=float, default=5.0,
                        help="seconds between fresh in-process stores")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", default=None, help="where the hive is written")
    parser.add_argument("--keep", action="store_true", help="keep the hive and its oracle")
    parser.add_argument("--unversioned", action="store_true",
                        help="leaves rewritten in place (leaf_versions: false); a read of "
                        "a leaf while it is rewritten may fail, never read as fill")
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer is not None:
        return writer_main(args.writer, args.seconds, args.seed, args.unversioned)
    if not args.zagg_python:
        parser.error("the writer needs zagg: give --zagg-python or $MOCZARR_ZAGG_PYTHON")
    out = run(args)
    print(json.dumps(out, indent=2))
    return 1 if bad(out) else 0


if __name__ == "__main__":
    sys.exit(main())
