"""Command line: ``moczarr-store inspect | verify | serve | refs | stac | cells PATH_OR_URL``.

Every subcommand opens a store, so every one takes the store's options as flags made from
their declaration (:func:`add_store_arguments`, from ``options.OPTIONS``) and the storage
options of :func:`storage_parser` (an argparse parent; :func:`storage_options` turns the
parsed arguments into ``MocHiveStore``'s ``storage_options``), with bounded timeouts and
retries so that a dead endpoint is reported in seconds. :func:`build_parser` builds the
whole parser (the CLI reference is generated from it). An error is one line on stderr and
an exit status per family (:data:`EXIT_CODES`); ``--debug`` adds the traceback.
Everything the hive supplies is escaped before it reaches the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from tqdm import tqdm
from zarr.core.sync import sync  # internal: zarr exports no runner on its event loop

from . import __version__
from .errors import HiveReadError, MocHiveError, NotAHiveError, OptionError
from .io.redact import redact, scrub
from .io.storage import FAIL_FAST, fail_fast, merged
from .io.urls import family
from .options import OPTIONS, REFERENCE_CHUNKINGS, SERVE_OPTIONS, Option
from .store import MocHiveStore
from .tunables import check_settings
from .verify import report_lines, verify_hive
from .view.arrays import FabricatedArray, FieldArray
from .view.computed import ComputedArray, region_reads

EXIT_OK = 0
EXIT_DIFFERS = 1  # verify: an array differs from its stamp or cannot be read
EXIT_USAGE = 2  # bad arguments or options (argparse's own status too)
EXIT_NOT_FOUND = 3  # no hive at the source: no root, no manifest, no product
EXIT_READ = 4  # the hive cannot be read: network, timeout, permission, damaged bytes
EXIT_FORMAT = 5  # the hive's metadata is malformed or describes what cannot be presented
EXIT_MISSING = 6  # an optional dependency is not installed (the [serve] or [export] extra)
EXIT_UNCHECKED = 7  # verify: nothing could be checked (no stamp records content hashes)
EXIT_INTERNAL = 70  # anything else: a bug of this package (rerun with --debug, report it)
EXIT_INTERRUPTED = 130
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_DIFFERS: "verify: an array differs from its commit stamp or cannot be read",
    EXIT_USAGE: "bad arguments or options",
    EXIT_NOT_FOUND: "no hive at the source",
    EXIT_READ: "the hive cannot be read (network, timeout, permission, damaged bytes)",
    EXIT_FORMAT: "the hive's metadata is malformed or unsupported",
    EXIT_MISSING: "an optional dependency is missing",
    EXIT_UNCHECKED: "verify: nothing could be checked (no stamp records content hashes)",
    EXIT_INTERNAL: "internal error",
    EXIT_INTERRUPTED: "interrupted",
}
MAX_LINE = 1000  # characters of one message line
MAX_WARNINGS = 20  # warning lines shown (all of them with --debug)


# -- text for the terminal -----------------------------------------------------------------


def escape(text: object) -> str:
    """``text`` safe for a terminal: every control or invisible character (and ``\\``)
    written as a Python escape (``\\x1b``, ``\\n``, ``\\u202e``), credentials redacted."""
    return "".join(
        ch if ch.isprintable() and ch != "\\" else ch.encode("unicode_escape").decode("ascii")
        for ch in redact(str(text))
    )


def clip(line: str, limit: int = MAX_LINE) -> str:
    """``line`` cut to ``limit`` characters, saying how many were left out."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... ({len(line) - limit:,} more characters)"


def one_line(err: BaseException, options: dict[str, Any] | None = None) -> str:
    """An error as one escaped, clipped line without credentials: the package's own errors
    by their message, others prefixed with their type."""
    text = str(err).split("\n\nDebug source:", 1)[0]
    text = " ".join(scrub(text, options).split()) or "no detail"
    if not isinstance(err, MocHiveError):
        text = f"{type(err).__name__}: {text}"
    return clip(escape(text))


def exit_code(err: BaseException) -> int:
    """The exit status of an error's family (:data:`EXIT_CODES`)."""
    if isinstance(err, OptionError | FileExistsError):  # FileExistsError: an export's output
        return EXIT_USAGE
    if isinstance(err, NotAHiveError | FileNotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(err, HiveReadError | OSError):
        return EXIT_READ
    if isinstance(err, MocHiveError | ValueError):
        return EXIT_FORMAT
    if isinstance(err, ImportError):
        return EXIT_MISSING
    return EXIT_INTERNAL


# -- storage options shared by every subcommand ----------------------------------------------


def seconds(text: str) -> float:
    """A duration argument: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds > 0")
    return value


def count(least: int, most: int | None = None) -> Callable[[str], int]:
    """An integer argument in ``[least, most]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least or (most is not None and value > most):
            within = f">= {least}" if most is None else f"in {least}..{most}"
            raise argparse.ArgumentTypeError(f"{text!r}: expected an integer {within}")
        return value
    return parse


def storage_parser() -> argparse.ArgumentParser:
    """The arguments every subcommand shares, as an argparse parent
    (``add_parser(..., parents=[storage_parser()])``): storage options, the fail-fast
    timeouts and retries, ``--debug`` and ``--verbose``."""
    parent = argparse.ArgumentParser(add_help=False)
    storage = parent.add_argument_group("storage (s3://, gs://, http(s)://)")
    storage.add_argument(
        "-o", "--option", action="append", default=[], metavar="KEY=VALUE",
        help="a storage option, as obstore or fsspec names it (repeat for several); dotted "
             "keys nest: client_options.timeout=60s, retry_config.max_retries=5",
    )
    storage.add_argument("--anon", action="store_true",
                         help="unsigned requests (public buckets: skip_signature)")
    storage.add_argument("--endpoint", help="the S3 or Azure endpoint URL, or the GCS base "
                         "URL (a plain http:// one is allowed)")
    storage.add_argument("--region", help="the S3 region")
    limits = parent.add_argument_group("fail fast (remote sources)")
    limits.add_argument("--connect-timeout", type=seconds, default=FAIL_FAST["connect_timeout"],
                        metavar="SECONDS", help="to connect (%(default)s)")
    limits.add_argument("--read-timeout", type=seconds, default=FAIL_FAST["read_timeout"],
                        metavar="SECONDS", help="longest wait for a byte (%(default)s)")
    limits.add_argument("--retries", type=count(0), default=FAIL_FAST["retries"], metavar="N",
                        help="retries of a failed request (%(default)s)")
    limits.add_argument("--retry-timeout", type=seconds, default=FAIL_FAST["retry_timeout"],
                        metavar="SECONDS",
                        help="no retry after this long since a request's start (%(default)s)")
    parent.add_argument("--debug", action="store_true",
                        help="show an error's traceback; log at DEBUG on stderr")
    parent.add_argument("-v", "--verbose", action="store_true",
                        help="log what the store does (INFO) on stderr")
    return parent


_DURATIONS = {"retry_timeout", "init_backoff", "max_backoff"}  # obstore wants timedelta


def _value(key: str, text: str) -> Any:
    """A ``--option`` value: booleans and the retry settings' numbers and durations
    typed, everything else a string (obstore parses its own)."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        if key in _DURATIONS:
            return timedelta(seconds=float(text.removesuffix("s")))
        if key == "max_retries":
            return int(text)
        if key == "base":
            return float(text)
    except ValueError:
        raise OptionError(f"--option ...{key}={text}: expected a number") from None
    return text


def parse_option(item: str) -> dict[str, Any]:
    """``KEY=VALUE`` (``a.b=VALUE`` nests) as a storage options dict."""
    key, eq, text = item.partition("=")
    if not eq or not key.strip():
        raise OptionError(f"--option {item!r}: expected KEY=VALUE")
    *outer, last = key.strip().split(".")
    value: dict[str, Any] = {last: _value(last, text)}
    for name in reversed(outer):
        value = {name: value}
    return value


# obstore client options its builders also read from the environment (AWS_ALLOW_HTTP, ...):
# a client_options dict given to obstore replaces the environment's, so the fail-fast
# timeouts must carry these over or an env-configured plain-http endpoint is refused
ENV_CLIENT_KEYS = ("allow_http", "allow_invalid_certificates", "proxy_url",
                   "proxy_ca_certificate", "proxy_excludes", "http1_only", "http2_only",
                   "randomize_addresses")
ENV_PREFIXES = {"s3": "AWS_", "gs": "GOOGLE_"}
ENDPOINT_KEY = {"s3": "endpoint", "gs": "base_url", "az": "endpoint"}  # what --endpoint sets


def env_client_options(kind: str) -> dict[str, Any]:
    """The client options the environment sets for a ``kind`` source (``AWS_ALLOW_HTTP``
    for ``s3``), as obstore's builders read them."""
    prefix = ENV_PREFIXES.get(kind)
    if prefix is None:
        return {}
    return {key: _value(key, os.environ[prefix + key.upper()]) for key in ENV_CLIENT_KEYS
            if prefix + key.upper() in os.environ}


def storage_options(args: argparse.Namespace, source: str) -> dict[str, Any]:
    """``MocHiveStore``'s ``storage_options`` for ``source`` from the arguments of
    :func:`storage_parser`: the client options the environment sets, the fail-fast limits
    (remote sources), ``--anon``, ``--endpoint``, ``--region``, then every ``--option``
    (which win)."""
    kind = family(source if "://" in source else "file://")
    given: dict[str, Any] = {}
    for item in args.option:
        given = merged(given, parse_option(item))
    if kind == "file":
        flags = [f for f in ("anon", "endpoint", "region") if getattr(args, f)]
        if flags:
            raise OptionError(f"--{flags[0]} applies to remote sources, not {escape(source)}")
        return given
    options: dict[str, Any] = fail_fast(args.connect_timeout, args.read_timeout, args.retries,
                                        args.retry_timeout)
    options = merged({"client_options": env_client_options(kind)}, options)
    if args.anon:
        if kind not in ("s3", "gs"):
            raise OptionError("--anon applies to s3:// and gs:// sources")
        options["skip_signature"] = True
    if args.endpoint:
        if kind not in ENDPOINT_KEY:
            raise OptionError("--endpoint applies to s3://, gs:// and az:// sources")
        options[ENDPOINT_KEY[kind]] = args.endpoint
    if args.region:
        if kind != "s3":
            raise OptionError("--region applies to s3:// sources")
        options["region"] = args.region
    return merged(options, given)


# -- the store's options, from their declaration -----------------------------------------------

_STORE_DEST = "store_options_taken"  # the options a subcommand's parser took, by name


def _argument_type(option: Option, checked: bool) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = option.text(text)
            return option.check(value) if checked else value
        except (ValueError, OptionError) as err:
            raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    parse.__name__ = option.name  # argparse names the type in some messages
    return parse


def add_option_argument(group: argparse._ActionsContainer, option: Option, default: Any,
                        checked: bool = False) -> None:
    """The flag of ``option`` (declared in ``options``), in ``group``; ``checked``: a value
    is checked as it is parsed (a bad one exits with status 2 before anything is opened),
    else where the option is applied."""
    help, flag = option.help.replace("%", "%%"), option.flag
    if flag is None:
        raise ValueError(f"option {option.name!r} has no flag")
    if option.default is False:
        group.add_argument(flag, action="store_true", help=help)
        return
    metavar = option.metavar or "{" + ",".join(option.choices) + "}"
    if option.many and isinstance(default, tuple):
        default = list(default)  # argparse extends it
    group.add_argument(flag, type=_argument_type(option, checked), default=default,
                       metavar=metavar, action="extend" if option.many else "store",
                       help=help + (f" Default: {default}." if default else "")
                       + (" Repeat for several." if option.many else ""))


def add_store_arguments(parser: argparse.ArgumentParser, skip: tuple[str, ...] = (),
                        **defaults: Any) -> None:
    """One flag per option of ``options.OPTIONS`` that has one (storage options come from
    :func:`storage_parser`), except ``skip``; ``defaults`` replace the store's defaults
    (``inspect`` reads every stamp)."""
    group = parser.add_argument_group("the store (MocHiveStore's options)")
    taken = []
    for option in OPTIONS:
        if option.flag is None or option.name == "storage_options" or option.name in skip:
            continue
        taken.append(option.name)
        add_option_argument(group, option, defaults.get(option.name, option.default))
    parser.set_defaults(**{_STORE_DEST: (*taken, "storage_options")})


def store_options(args: argparse.Namespace) -> dict[str, Any]:
    """``MocHiveStore``'s keyword arguments from a subcommand's parsed arguments: the
    options its parser took, and the storage options."""
    taken = getattr(args, _STORE_DEST)
    options = {name: getattr(args, name) for name in taken if name != "storage_options"}
    options["storage_options"] = storage_options(args, args.source)
    return options


def open_store(args: argparse.Namespace) -> MocHiveStore:
    """The store the arguments name (``args.source`` and the store's options)."""
    return MocHiveStore(args.source, **store_options(args))


@contextlib.contextmanager
def request_bar(store: MocHiveStore, what: str) -> Iterator[None]:
    """A progress bar of the store's backend requests on a terminal (stderr); nothing
    when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    bar = tqdm(desc=what, unit=" requests", file=sys.stderr, leave=False)
    store.backend.progress = bar.update
    try:
        yield
    finally:
        store.backend.progress = None
        bar.close()


# -- inspect ---------------------------------------------------------------------------------


def _first(names: list[str], n: int = 5) -> str:
    more = f" ... ({len(names):,} in all)" if len(names) > n else ""
    return ", ".join(names[:n]) + more


def chunking_line(store: MocHiveStore, view: Any, path: str) -> str:
    """What the store's chunking chose for level ``path``: leaves per chunk of its fields,
    the chunk's bytes, and the fields kept one leaf per chunk (compressed or
    variable-length)."""
    fields = [a for a in (view.arrays[f"{path}/{c}"] for c in view.children(path) or [])
              if isinstance(a, FieldArray) and a.axis is not None]
    k = max((a.span for a in fields), default=1)
    joined = [a for a in fields if a.span == k]
    size = max((a.meta.chunk_nbytes for a in joined), default=0)
    text = (f"chunking={store.chunking!r}: {k:,} leaves per chunk"
            f" ({size / 2**20:.2f} MiB of the largest field)")
    single = [a.name for a in fields if a.span != k]
    if single:
        text += f"; one leaf per chunk (cannot be joined): {_first(single)}"
    return text


def describe(store: MocHiveStore) -> list[str]:
    """The virtual tree and the hive facts, one line per node; every line escaped (names
    come from the hive) and clipped; long lists summarised (count and first names)."""
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
            windows = f", windows=[{_first(list(level.windows), 8)}]" if level.windows else ""
            if level.source is not None:  # computed: no objects of its own
                folds = ", ".join(f"{n} {f.method}" for n, f in sorted(level.folds.items()))
                orders = ", ".join(f"o{s.cell_order}" for s in (level.source, *level.regions))
                lines.append(
                    f"  /{level.path}  computed from {orders}"
                    f"{' (all windows)' if level.fold else ''}: {level.n_nodes} nodes x"
                    f" {level.cells_per_node} cells at order {level.node_order}; {folds}")
                lines.append("    one chunk per node, folded from the source leaves beneath it")
            else:
                lines.append(
                    f"  /{level.path}  {level.artifact} objects at order"
                    f" {level.node_order}: {level.n_nodes} nodes x {level.cells_per_node} cells,"
                    f" coverage={level.coverage_source}{windows}"
                )
                lines.append(f"    {chunking_line(store, view, level.path)}")
            if regions := region_reads(level):
                lines.append("    regions by source order: " + ", ".join(
                    f"{order} {how}" for order, how in regions.items()))
            if level.dropped:
                lines.append(f"    {len(level.dropped):,} debris/dangling objects dropped: "
                             f"{_first(level.dropped)}")
            if level.missing:
                lines.append(f"    {level.missing:,} listed objects missing (neither stamp nor"
                             f" directory), for example: {', '.join(level.missing_names)}")
            for child in view.children(level.path) or []:
                array = view.arrays[f"{level.path}/{child}"]
                meta = array.meta
                source = ("fabricated" if isinstance(array, FabricatedArray) else
                          "computed" if isinstance(array, ComputedArray) else "objects")
                lines.append(
                    f"    {child:<20} shape={meta.shape} dtype={meta.data_type}"
                    f" chunks={meta.chunk_shape} {source}"
                )
    problems = store.session.problems.lines()
    if problems:
        lines.append("problems seen:")
        lines.extend(f"  {line}" for line in problems)
    lines.append(f"backend requests: {dict(store.request_stats.counts)}")
    return [clip(escape(line)) for line in lines]


def run_inspect(args: argparse.Namespace) -> int:
    store = open_store(args)
    with request_bar(store, "opening"):
        lines = describe(store)
    print("\n".join(lines))
    return EXIT_OK


# -- verify ----------------------------------------------------------------------------------

VERIFY_HELP = """\
Recompute the content hashes every commit stamp records (one sha256 per array over its
decoded values) from the bytes the store serves, and compare them array by array.

Exit status: 0 when at least one object was verified and no array differs; 1 when an
array differs or cannot be read (each object and array is named), or, with --strict, when
an object is unverifiable; 7 when nothing could be checked (no stamp records content
hashes: checking nothing is not success); otherwise that of the error (see moczarr-store
--help). Objects whose stamps record no content hashes are reported as "unverifiable".

The hashes are integrity, not authenticity: they catch bytes damaged or mixed up after the
writer recorded them, not a deliberate change, since whoever can rewrite the values can
rewrite the hashes in the stamp beside them.
"""


def run_verify(args: argparse.Namespace) -> int:
    """``moczarr-store verify``: the report on stdout, warnings on stderr."""
    store = open_store(args)
    bar = None
    if sys.stderr.isatty():  # a bar on a terminal only; --json output stays on stdout
        bar = tqdm(unit="obj", file=sys.stderr, leave=False)
    try:
        report = sync(verify_hive(store, args.group, bar))
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps({**report.to_json(), "strict": args.strict}, indent=1))
    else:
        print("\n".join(report_lines(report)))
    if report.status == "failed" or (args.strict and report.n_unverifiable):
        return EXIT_DIFFERS
    return EXIT_UNCHECKED if report.status == "unchecked" else EXIT_OK


# -- serve -----------------------------------------------------------------------------------


def add_serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                     parents: list[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", parents=parents,
                           help="serve the hive as a Zarr v3 hierarchy over HTTP")
    add_source(serve)
    group = serve.add_argument_group("the server (serve's options)")
    for option in SERVE_OPTIONS:
        add_option_argument(group, option, option.default, checked=True)
    add_store_arguments(serve)


def run_serve(args: argparse.Namespace) -> int:
    """Open the hive once (so a bad source fails here, not on the first request), then
    serve it until interrupted."""
    try:
        from .serve.run import serve
    except ImportError as err:
        raise ImportError(f"serve needs the [serve] extra ({err}): "
                          "pip install 'moczarr-store[serve]'") from err
    options = store_options(args)
    store = MocHiveStore(args.source, **options)
    sync(store.session.ensure_levels(None))
    served = {o.name: getattr(args, o.name) for o in SERVE_OPTIONS}
    try:
        serve(args.source, **served, **options)
    except SystemExit as end:  # uvicorn's way of saying it could not start
        if end.code:
            raise OptionError(f"the server did not start on {args.host}:{args.port} "
                              "(the reason is logged above)") from None
    return EXIT_OK


# -- refs ------------------------------------------------------------------------------------

REFS_HELP = """\
Publish the hive as byte references, from its current state: every chunk is planned by
the store's read plan. Passed-through chunks are references (object, offset, length);
fabricated coordinates, transcoded (mixed-writer) chunks and re-framed chunks with gaps
are written inline. A published path is the source URL with the longest matching
--remap prefix replaced. Icechunk references carry each object's ETag (else its
modification time) so that reading an object changed since the export fails.
"""


# the formats written through VirtualiZarr and Icechunk, which need Python >= 3.12
NEEDS_312 = ("icechunk", "kerchunk-json")


def runnable_formats() -> tuple[str, ...]:
    """The reference formats this Python can write (``--help`` offers only these)."""
    from .refs import FORMATS

    return FORMATS if sys.version_info >= (3, 12) else tuple(
        f for f in FORMATS if f not in NEEDS_312)


def format_choice(text: str) -> str:
    """``--format``: a format this Python cannot write says why, in one line."""
    if text in NEEDS_312 and text not in runnable_formats():
        raise argparse.ArgumentTypeError(
            f"{text} needs Python 3.12 or newer (VirtualiZarr and Icechunk do), this is "
            f"Python {sys.version_info[0]}.{sys.version_info[1]}: use --format mdim-refs "
            "here, or run on Python 3.12")
    return text


def add_refs_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                    parents: list[argparse.ArgumentParser]) -> None:
    refs = sub.add_parser(
        "refs", parents=parents,
        help="publish the hive as Icechunk, kerchunk JSON or mdim-refs references"
        + ("" if sys.version_info >= (3, 12) else " (Python 3.11: mdim-refs only)"),
        description=REFS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    refs.add_argument("source", help=SOURCE_HELP)
    refs.add_argument("--format", type=format_choice, choices=runnable_formats(),
                      required=True,
                      help="icechunk (a repository), kerchunk-json (one JSON file) or "
                           "mdim-refs (SQLite, for GDAL)")
    refs.add_argument("out", help="output path (must not exist)")
    refs.add_argument("--group", action="append", default=[],
                      help="only the arrays under this virtual path; repeat for several")
    refs.add_argument("--remap", action="append", default=[], metavar="PREFIX=NEW",
                      help="publish source URLs starting with PREFIX under NEW (longest wins)")
    refs.add_argument("--chunking", choices=REFERENCE_CHUNKINGS, default="auto",
                      help="how sharded leaf arrays are referenced (auto: per group, leaf "
                           "where every shard is whole and in order, else shard)")
    refs.add_argument("--no-checksums", action="store_true",
                      help="icechunk: no ETag/mtime checksums (a re-uploaded copy has its own)")
    refs.add_argument("--json", action="store_true", help="print a JSON summary")
    add_store_arguments(refs, skip=("chunking",))  # the export's --chunking chooses it


def run_refs(args: argparse.Namespace) -> int:
    """``moczarr-store refs``: the summary on stdout, warnings and the bar on stderr."""
    from .refs import export_refs

    bar = tqdm(unit="chunk", file=sys.stderr, leave=False) if sys.stderr.isatty() else None
    try:
        report = export_refs(
            args.source, args.format, args.out, group=args.group, remap=args.remap,
            chunking=args.chunking, checksums=not args.no_checksums, progress=bar,
            **store_options(args),
        )
    finally:
        if bar is not None:
            bar.close()
    summary = report.to_json()
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(escape(
            f"{report.format} {report.out}: {summary['arrays']} arrays, "
            f"{summary['chunks_referenced']} chunks referenced in {summary['sources']} objects, "
            f"{summary['chunks_inline']} inline, {report.bytes_on_disk} bytes written in "
            f"{report.seconds:.2f} s"
        ))
    return EXIT_OK


# -- stac and cells --------------------------------------------------------------------------


def add_stac_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                    parents: list[argparse.ArgumentParser]) -> None:
    stac = sub.add_parser(
        "stac", parents=parents,
        help="write a static STAC catalog of the hive (OUT_DIR/collection.json)")
    stac.add_argument("source", help=SOURCE_HELP)
    stac.add_argument("out", help="output directory (new or empty)")
    stac.add_argument("--serve-url", help="where `moczarr-store serve` answers for this hive "
                                          "(an asset of the catalog)")
    stac.add_argument("--refs", action="append", default=[], metavar="FORMAT=HREF",
                      help="a reference export of the hive (kerchunk-json, icechunk, "
                           "mdim-refs) as an asset; repeat for several")
    stac.add_argument("--id", help="the collection's id (default: the hive's directory name)")
    add_store_arguments(stac)


def run_stac(args: argparse.Namespace) -> int:
    from .stac import write_stac

    path = write_stac(args.source, args.out, serve_url=args.serve_url, refs=args.refs,
                      collection_id=args.id, **store_options(args))
    print(escape(path))
    return EXIT_OK


def add_cells_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                     parents: list[argparse.ArgumentParser]) -> None:
    cells = sub.add_parser(
        "cells", parents=parents,
        help="write one level's cells as polygons with their values (GeoParquet, or "
             "FlatGeobuf for an OUT ending in .fgb)")
    cells.add_argument("source", help=SOURCE_HELP)
    cells.add_argument("out", help="output file (must not exist): GeoParquet, or FlatGeobuf "
                                   "if it ends in .fgb")
    cells.add_argument("--group", required=True, help="the level, e.g. atl06/o7")
    cells.add_argument("--field", action="append", default=[],
                       help="only this field; repeat for several (default: every fixed-size "
                            "field)")
    cells.add_argument("--json", action="store_true", help="print a JSON summary")
    add_store_arguments(cells)


def run_cells(args: argparse.Namespace) -> int:
    from .geoparquet import export_cells

    report = export_cells(args.source, args.out, args.group, fields=args.field or None,
                          **store_options(args))
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        print(escape(f"{report.out}: {report.rows} cells of {report.group} "
                     f"({', '.join(report.fields)}) in {report.seconds:.2f} s"))
    return EXIT_OK


# -- main ------------------------------------------------------------------------------------

SOURCE_HELP = "hive root: a path or a file/s3/gs/http(s) URL"


def add_source(parser: argparse.ArgumentParser) -> None:
    """The hive to open: ``PATH_OR_URL``, or ``--sample`` for the one in the package."""
    parser.add_argument("source", nargs="?", help=SOURCE_HELP + " (or --sample)")
    parser.add_argument("--sample", action="store_true",
                        help="the small sample hive installed with the package")


def resolve_source(args: argparse.Namespace) -> None:
    """``args.source`` from ``--sample``; exactly one of the two is given."""
    if not hasattr(args, "sample"):
        return
    if args.sample == (args.source is not None):
        raise OptionError(f"{args.command} reads one hive: give its PATH_OR_URL, or --sample "
                          "for the sample hive, not both")
    if args.sample:
        from .sample import sample_hive

        args.source = sample_hive()


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every subcommand, every argument with its help."""
    parents = [storage_parser()]
    parser = argparse.ArgumentParser(
        prog="moczarr-store",
        description="A morton-hive as one read-only Zarr v3 hierarchy.",
        epilog="exit status: " + "; ".join(f"{k} {v}" for k, v in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", parents=parents,
                             help="print the virtual tree and the hive facts")
    add_source(inspect)
    add_store_arguments(inspect, verify="open")  # to report debris, read every stamp
    check = sub.add_parser(
        "verify",
        parents=parents,
        help="recompute every object's content hashes through the store and compare them",
        description=VERIFY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source(check)
    check.add_argument("--group", help="only the levels under this virtual path (atl06/o7)")
    check.add_argument("--json", action="store_true", help="print a JSON summary")
    check.add_argument("--strict", action="store_true",
                       help="an unverifiable object (its stamp records no hashes) fails (1)")
    add_store_arguments(check)
    add_serve_parser(sub, parents)
    add_refs_parser(sub, parents)
    add_stac_parser(sub, parents)
    add_cells_parser(sub, parents)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "inspect": run_inspect, "verify": run_verify, "serve": run_serve, "refs": run_refs,
    "stac": run_stac, "cells": run_cells,
}


@contextlib.contextmanager
def logging_to_stderr(args: argparse.Namespace) -> Iterator[None]:
    """``--verbose``/``--debug``: the ``moczarr_store`` logger at INFO/DEBUG on stderr
    (escaped), for the command's duration."""
    level = logging.DEBUG if args.debug else logging.INFO if args.verbose else None
    if level is None:
        yield
        return
    logger = logging.getLogger("moczarr_store")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EscapingFormatter("%(levelname)s %(name)s: %(message)s"))
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


class _EscapingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


def report_warnings(caught: list[warnings.WarningMessage], every: bool) -> None:
    """The warnings met, one escaped, clipped line each; at most :data:`MAX_WARNINGS`
    unless ``every``."""
    shown = caught if every else caught[:MAX_WARNINGS]
    for w in shown:
        print(f"warning: {clip(escape(w.message))}", file=sys.stderr)
    if len(caught) > len(shown):
        print(f"warning: {len(caught) - len(shown):,} more warning(s) not shown "
              "(--debug shows them all)", file=sys.stderr)


def _given_options(items: list[str]) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for item in items:
        with contextlib.suppress(OptionError):
            given = merged(given, parse_option(item))
    return given


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; the exit status of :data:`EXIT_CODES`."""
    args = build_parser().parse_args(argv)
    secrets = _given_options(args.option)  # scrubbed from every message by key name
    code = EXIT_OK
    record = args.command != "serve"  # a server logs its warnings (serve.run)
    with warnings.catch_warnings(record=record) as caught, logging_to_stderr(args):
        caught = caught if caught is not None else []
        if record:
            warnings.simplefilter("always")
        try:
            check_settings()  # a bad one refused before anything is opened
            resolve_source(args)
            code = COMMANDS[args.command](args)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
        except Exception as err:
            code = exit_code(err)
            report_warnings(caught, args.debug)
            caught.clear()
            if args.debug:
                for line in "".join(traceback.format_exception(err)).splitlines():
                    print(escape(scrub(line, secrets)), file=sys.stderr)
            print(f"error: {one_line(err, secrets)}", file=sys.stderr)
            if code == EXIT_INTERNAL and not args.debug:
                print("(an internal error: rerun with --debug for the traceback, and report "
                      "it)", file=sys.stderr)
    report_warnings(caught, args.debug)
    return code


if __name__ == "__main__":
    sys.exit(main())
