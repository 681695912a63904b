"""Command line: ``moczarr-store inspect | verify | serve PATH_OR_URL``."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from tqdm import tqdm
from zarr.core.sync import sync  # internal: zarr exports no runner on its event loop

from .backend import redact
from .options import CHUNKINGS, VERIFY_MODES
from .store import MocHiveStore
from .verify import printable, report_lines, verify_hive
from .view.arrays import FabricatedArray


def escape(text: object) -> str:
    """``text`` safe for a terminal: every control or invisible character (and ``\\``)
    written as a Python escape (``\\x1b``, ``\\n``, ``\\u202e``), credentials redacted."""
    return "".join(
        ch if ch.isprintable() and ch != "\\" else ch.encode("unicode_escape").decode("ascii")
        for ch in redact(str(text))
    )


def describe(store: MocHiveStore) -> list[str]:
    """The virtual tree and the hive facts, one line per node; every line escaped (names
    come from the hive)."""
    hive = sync(store.hive())
    view = sync(store.view())
    lines = [f"hive {store.backend}  ({'bare store' if hive.bare else 'multi-product root'})"]
    for name, reason in sorted(hive.skipped.items()):
        lines.append(f"  skipped product {name}: {reason}")
    for product in hive.products:
        m = product.manifest
        lines.append(
            f"/{product.name}  spec={m.spec} cell_order={m.cell_order} shard_order={m.shard_order}"
            f" path_grouping={m.path_grouping}"
        )
        for level in product.levels:
            lines.append(
                f"  /{level.path}  {level.artifact} objects at order"
                f" {level.node_order}: {level.n_nodes} nodes x {level.cells_per_node} cells,"
                f" coverage={level.coverage_source}"
                + (f", windows={list(level.windows)}" if level.windows else "")
            )
            if level.dropped:
                lines.append(f"    debris/dangling objects dropped: {', '.join(level.dropped)}")
            for child in view.children(level.path) or []:
                array = view.arrays[f"{level.path}/{child}"]
                meta = array.meta
                chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
                source = "fabricated" if isinstance(array, FabricatedArray) else "objects"
                lines.append(
                    f"    {child:<20} shape={tuple(meta['shape'])} dtype={meta['data_type']}"
                    f" chunks={tuple(chunks)} {source}"
                )
    problems = store.session.problems.lines()
    if problems:
        lines.append("problems seen:")
        lines.extend(f"  {line}" for line in problems)
    lines.append(f"backend requests: {dict(store.request_stats.counts)}")
    return [escape(line) for line in lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="moczarr-store")
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help="print the virtual tree and the hive facts")
    inspect.add_argument("source", help="hive root: a path or a file/s3/gs/http(s) URL")
    inspect.add_argument(
        "--verify",
        choices=VERIFY_MODES,
        default="open",
        help="'open' (default) reads every stamp to report debris; 'lazy' reads one leaf",
    )
    inspect.add_argument(
        "--follow-links",
        action="store_true",
        help="local hives: read through links that lead out of the hive root",
    )
    check = sub.add_parser(
        "verify",
        help="recompute every object's content hashes through the store and compare them",
        description=VERIFY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("source", help="hive root: a path or a file/s3/gs/http(s) URL")
    check.add_argument("--group", help="only the levels under this virtual path (atl06/o7)")
    check.add_argument("--json", action="store_true", help="print a JSON summary")
    add_serve_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "verify":
        return run_verify(args)
    if args.command == "serve":
        return serve_command(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            store = MocHiveStore(args.source, verify=args.verify, follow_links=args.follow_links)
            lines = describe(store)
        except (OSError, ValueError) as err:
            print(f"error: {escape(err)}", file=sys.stderr)
            return 1
    print("\n".join(lines))
    for w in caught:
        print(f"warning: {escape(w.message)}", file=sys.stderr)
    return 0


VERIFY_HELP = """\
Recompute the content hashes every commit stamp records (one sha256 per array over its
decoded values) from the bytes the store serves, and compare them array by array.

Exit status: 0 when no array differs; 1 when an array differs or cannot be read (each
object and array is named), or the hive cannot be opened. Objects whose stamps record
no content hashes are reported as "unverifiable": that alone is not a failure.
"""


def run_verify(args: argparse.Namespace) -> int:
    """``moczarr-store verify``: the report on stdout, warnings on stderr."""
    bar = None
    if sys.stderr.isatty():  # a bar on a terminal only; --json output stays on stdout
        bar = tqdm(unit="obj", file=sys.stderr, leave=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report = sync(verify_hive(MocHiveStore(args.source), args.group, bar))
        except (OSError, ValueError) as err:
            print(f"error: {printable(err)}", file=sys.stderr)
            return 1
        finally:
            if bar is not None:
                bar.close()
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        print("\n".join(report_lines(report)))
    for w in caught:
        print(f"warning: {printable(w.message)}", file=sys.stderr)
    return 0 if report.ok else 1


def add_serve_parser(sub) -> None:
    serve = sub.add_parser("serve", help="serve the hive as a Zarr v3 hierarchy over HTTP")
    serve.add_argument("source", help="hive root: a path or a file/s3/gs/http(s) URL")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (8000)")
    serve.add_argument("--chunking", choices=CHUNKINGS, default="leaf")
    serve.add_argument("--verify", choices=VERIFY_MODES, default="lazy")
    serve.add_argument("--window", help="scope windowed products to this window")
    serve.add_argument(
        "--cors", action="append", default=[], metavar="ORIGIN",
        help="an origin allowed to read ('*': any); repeat for several",
    )
    serve.add_argument(
        "--stamp-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a leaf's stamp is trusted, and the longest max-age sent (60)",
    )
    serve.add_argument("--workers", type=int, default=1, help="worker processes (1)")


def serve_command(args: argparse.Namespace) -> int:
    """Open the hive once (so a bad source fails here, not on the first request), then
    serve it until interrupted."""
    try:
        from .serve.run import serve
    except ImportError as err:
        print(f"error: serve needs the [serve] extra ({err}): "
              "pip install 'moczarr-store[serve]'", file=sys.stderr)
        return 1
    options = {"chunking": args.chunking, "verify": args.verify, "window": args.window}
    try:
        store = MocHiveStore(args.source, **options)
        sync(store.session.ensure_levels(None))
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    serve(args.source, host=args.host, port=args.port, workers=args.workers, cors=args.cors,
          stamp_ttl=args.stamp_ttl, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
