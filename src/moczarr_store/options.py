"""The store's options, declared once (:data:`OPTIONS`), and ``OpenOptions``: the ones that
shape a store's view of a hive, as one frozen value.

Every entry point takes its options from :data:`OPTIONS`: ``MocHiveStore``'s checks and its
pickled state, the command line's flags (``cli.store_arguments``), ``serve``'s worker
environment (``serve/env.py``) and the documentation's options table
(``docs/gen/options.py``). A new option is one more :class:`Option` here (and, as every
keyword, a parameter of ``MocHiveStore.__init__`` and, for a view option, a field of
``OpenOptions``; a test checks both against this declaration). ``serve``'s own options
are declared the same way (:data:`SERVE_OPTIONS`): its flags, its keywords, its workers'
variables and their documentation come from there.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, cast, get_args

import numpy as np

from .errors import OptionError
from .hive.aoi import Cells, aoi_members, parse_aoi
from .hive.paths import short, validate_window

Verify = Literal["lazy", "open"]
Chunking = Literal["auto", "shard", "leaf", "inner", "span"]
Geometry = Literal["covered", "sphere"]
ComputedOrders = Literal["missing", "all", "none"]
WindowLabels = Literal["text", "index"]
VERIFY_MODES: tuple[str, ...] = get_args(Verify)
CHUNKINGS: tuple[str, ...] = get_args(Chunking)
REFERENCE_CHUNKINGS = ("auto", "shard", "leaf", "inner")
"""The chunkings an export takes: every chunk one byte range of one object (what a
reference names); ``auto`` chooses ``leaf`` or ``shard`` per group."""
GEOMETRIES: tuple[str, ...] = get_args(Geometry)
COMPUTED_ORDERS: tuple[str, ...] = get_args(ComputedOrders)
WINDOW_LABELS: tuple[str, ...] = get_args(WindowLabels)
DEFAULT_MAX_CONCURRENCY = 64
ENV_PREFIX = "MOCZARR_STORE_"


# -- checks: a Python value as the store keeps it, else an OptionError naming the option -------


def parse_chunking(value: object) -> str | int:
    """A chunking: one of ``CHUNKINGS``, or a count of leaves per chunk (an int >= 1, or
    its decimal digits, as the CLI and environment variables spell it)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise OptionError(f"chunking={value}: leaves per chunk must be >= 1")
        return value
    return _choice("chunking", value, CHUNKINGS)


def _choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise OptionError(f"{name}={value!r}: expected one of {choices}")
    return value


def flag(name: str, value: object) -> bool:
    """``value`` if it is a bool (numpy's too), else an :class:`OptionError` naming the
    option: ``bool("no")`` is ``True``."""
    if not isinstance(value, bool | np.bool_):
        raise OptionError(f"{name}={short(value)}: expected True or False")
    return bool(value)


def positive(name: str, value: object) -> int:
    """``value`` if it is an int >= 1 (not a bool), else an :class:`OptionError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OptionError(f"{name}={short(value)}: expected an int >= 1")
    count = int(value)
    if count < 1:
        raise OptionError(f"{name}={count}: expected an int >= 1")
    return count


def check_window(value: object) -> str | None:
    """A window label (``window=2019`` means the label ``"2019"``), or ``None``."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    try:
        return validate_window(value)
    except ValueError as err:
        raise OptionError(f"window={value!r}: {err}") from None


def check_aoi(value: object) -> tuple[str | int, ...] | None:
    """AOI members (decimal ids as ``str``, packed words as ``int``), each checked."""
    if value is None:
        return None
    members = aoi_members(cast(Any, value))
    try:
        parse_aoi(members)
    except (TypeError, ValueError) as err:
        raise OptionError(f"aoi: {err}") from None
    return members


def check_storage(value: object) -> dict[str, Any]:
    """Storage options as a dict of string keys (their values are checked by the backend,
    which knows the source's kind)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise OptionError(f"storage_options: expected a dict, got {type(value)!r}")
    named = [key for key in value if not isinstance(key, str)]
    if named:
        raise OptionError(f"storage_options: option names are strings, got {named[0]!r}")
    return dict(value)


# -- text: a command-line argument or an environment variable as a Python value ---------------
# (a ValueError says what was expected; the caller names the flag or the variable)


def _text_choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return text
    return parse


def _text_chunking(text: str) -> str | int:
    try:
        return parse_chunking(text)
    except OptionError:
        raise ValueError(f"expected one of {', '.join(CHUNKINGS)}, or a count of leaves "
                         ">= 1") from None


def _text_count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError("expected an integer >= 1")
    return int(text)


def _text_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("1", "true", "yes", "0", "false", "no", ""):
        raise ValueError("expected true or false")
    return lowered in ("1", "true", "yes")


def _text_aoi(text: str) -> tuple[str | int, ...]:
    """Members separated by commas or spaces: decimal ids, or packed words in hex
    (``0x...``), which the text of a decimal id can never be."""
    members = [m for m in re.split(r"[\s,]+", text) if m]
    if not members:
        raise ValueError("expected decimal ids (or packed words as 0x...)")
    return tuple(int(m, 16) if m.lower().startswith("0x") else m for m in members)


def _show_aoi(value: tuple[str | int, ...]) -> str:
    return " ".join(m if isinstance(m, str) else hex(m) for m in value)


def _text_storage(text: str) -> dict[str, Any]:
    from .io.storage import from_json

    try:
        return from_json(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"expected a JSON object ({err})") from None


def _show_storage(value: Mapping[str, Any]) -> str:
    from .io.storage import to_json

    return to_json(value)


# -- the declaration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One keyword of ``MocHiveStore`` (or of ``serve``: :data:`SERVE_OPTIONS`), with what
    each entry point needs to take it.

    ``check`` turns a Python value into the one the store keeps (an :class:`OptionError`
    naming the option otherwise); ``text`` reads a command-line argument or an environment
    variable (a ``ValueError`` saying what was expected), ``show`` writes one. ``view``:
    the option shapes the view (an ``OpenOptions`` field, recorded in the root group's
    ``morton_hive_store`` attribute, at its default too when ``recorded``). ``flag``: the
    command line's flag (``None``: none, ``note`` says why); ``many``: the flag may be
    repeated, its members joined. ``env``: ``serve``'s worker processes take it from
    ``MOCZARR_STORE_<NAME>``. ``more``: what the docstring adds. ``unrecorded``: a value
    the root group never records (the one that presents the hierarchy as it was before
    the option existed).
    """

    name: str
    default: Any
    help: str
    check: Callable[[Any], Any]
    text: Callable[[str], Any] = str
    show: Callable[[Any], str] = str
    choices: tuple[str, ...] = ()
    view: bool = False
    recorded: bool = False
    flag: str | None = None
    metavar: str | None = None
    many: bool = False
    env: bool = True
    note: str = ""
    more: str = ""
    unrecorded: tuple[Any, ...] = ()

    @property
    def env_name(self) -> str | None:
        """The environment variable a ``serve`` worker reads this option from."""
        return f"{ENV_PREFIX}{self.name.upper()}" if self.env else None

    def from_text(self, text: str, where: str) -> Any:
        """``text`` (given as ``where``: a flag or a variable) as the option's value."""
        try:
            return self.check(self.text(text))
        except (ValueError, OptionError) as err:
            raise OptionError(f"{where}={text!r}: {err}") from None


OPTIONS: tuple[Option, ...] = (
    Option(
        "verify", "lazy",
        "lazy reads a leaf's commit stamp when its chunk is first read (debris reads as "
        "missing, with a warning); open reads every stamp at open and drops debris from "
        "the domain, as moczarr.open_hive does.",
        lambda v: _choice("verify", v, VERIFY_MODES), _text_choice(VERIFY_MODES),
        choices=VERIFY_MODES, view=True, recorded=True, flag="--verify"),
    Option(
        "chunking", "auto",
        "How a leaf array is chunked in the view: auto (the default: consecutive leaves "
        "joined where their bytes join, as the chunking guide tells; one leaf per chunk "
        "where not), leaf (one contiguous chunk per leaf; for "
        "lookups), shard (the shard object passed through), inner (one chunk "
        "per inner chunk), span or an int k (k consecutive leaves per chunk).",
        parse_chunking, _text_chunking, choices=CHUNKINGS, view=True, recorded=True,
        flag="--chunking", metavar="CHUNKING",
        note="The refs subcommand takes the export's own --chunking instead (auto, shard, "
             "leaf, inner): a reference names one byte range of one object.",
        more="``\"span\"`` chooses ``k`` so that a chunk holds about 4 MiB of the level's "
             "largest field. ``\"auto\"`` chooses per level (the chunking guide). Spans "
             "make full scans pay zarr's and dask's per-chunk cost ``k`` times less often; a "
             "read of one cell then reads ``k`` leaves. Fields whose leaves cannot be joined "
             "byte for byte (compressed or variable-length) stay one leaf per chunk."),
    Option(
        "window", None,
        "Scope windowed products (their (\"cells\", ...) arrays) to this one window.",
        check_window, view=True, flag="--window", metavar="WINDOW"),
    Option(
        "aoi", None,
        "Keep the nodes whose subtrees overlap these cells, at any orders: decimal ids "
        "(str) or packed morton words (int); as text, separated by commas or spaces, a "
        "packed word in hex (0x...).",
        check_aoi, _text_aoi, cast(Callable[[Any], str], _show_aoi), view=True,
        flag="--aoi", metavar="CELLS", many=True),
    Option(
        "geometry", "covered",
        "covered: rows are the covered nodes' cells; sphere: every array at order o spans "
        "the 12 * 4**o cells of the sphere (NESTED order), so a chunk names the same node "
        "on a grown hive.",
        lambda v: _choice("geometry", v, GEOMETRIES), _text_choice(GEOMETRIES),
        choices=GEOMETRIES, view=True, flag="--geometry",
        more="Uncovered nodes read as the fill value without a request (at most 2**24 "
             "chunks along ``cells`` per array, else ``SphereTooLarge``)."),
    Option(
        "computed_orders", "missing",
        "missing: every cell order of a product the hive does not store is a group too, "
        "each field computed from the source leaves by the fold the manifest declares for "
        "it (fields without an exact fold are absent there); all: every order below the "
        "source's is computed, stored overviews unread (to check a writer's sweep); none: "
        "only the stored orders, as before computed orders existed.",
        lambda v: _choice("computed_orders", v, COMPUTED_ORDERS),
        _text_choice(COMPUTED_ORDERS), choices=COMPUTED_ORDERS, view=True, recorded=True,
        flag="--computed-orders", unrecorded=("none",),
        more="See the guide's page on computed orders for what is folded, how, and what "
             "it costs."),
    Option(
        "centres", False,
        "Present each cell's centre as lon and lat coordinates (CF's auxiliary coordinates "
        "of every field, computed per chunk when read).",
        lambda v: flag("centres", v), _text_bool, lambda v: "1" if v else "0", view=True,
        flag="--centres",
        more="Off by default: xarray loads every coordinate of a field with it, and a "
             "centre costs 0.2-0.8 µs a cell to compute, far more than reading a value "
             "(measured: a field's .load() 3.3x as long on 2,100 leaves of 4,096 cells). "
             "open_cells computes them only when their values are asked for."),
    Option(
        "window_labels", "text",
        "How a windowed level's window coordinate holds its labels. text: the labels "
        "(Zarr strings); index: each window's position (0, 1, ...), the labels in its "
        "labels attribute, for clients that decode no Zarr string (GDAL 3.12).",
        lambda v: _choice("window_labels", v, WINDOW_LABELS), _text_choice(WINDOW_LABELS),
        choices=WINDOW_LABELS, view=True, flag="--window-labels",
        more="``gdalmdimtranslate -group`` copies a windowed level only with ``index``: "
             "GDAL 3.12 refuses every Zarr string data type, so an array of strings stops "
             "the copy."),
    Option(
        "max_concurrency", DEFAULT_MAX_CONCURRENCY,
        "Backend requests in flight at once, one cap shared by every store of the process "
        "with the same cap (4 for python -m http.server, which queues 5 connections).",
        lambda v: positive("max_concurrency", v), _text_count, flag="--max-concurrency",
        metavar="N"),
    Option(
        "read_only", False,
        "zarr's access-mode flag: the store never writes either way; False only lets "
        "zarr.open_group(store) (mode 'a') open it.",
        lambda v: flag("read_only", v), _text_bool, env=False,
        note="Neither on the command line nor for serve's workers: the store never writes."),
    Option(
        "follow_links", False,
        "Local hives: read through links whose target lies outside the hive root (by "
        "default such an object is refused with OutsideRootError).",
        lambda v: flag("follow_links", v), _text_bool, lambda v: "1" if v else "0",
        flag="--follow-links"),
    Option(
        "storage_options", None,
        "How to reach the objects, as fsspec names them (anon, key, secret, endpoint_url, "
        "client_kwargs, token, headers) or as obstore does (region, endpoint, "
        "skip_signature, client_options, retry_config, ...).",
        check_storage, _text_storage, cast(Callable[[Any], str], _show_storage),
        flag="-o", metavar="KEY=VALUE",
        note="On the command line: -o KEY=VALUE (repeat), --anon, --endpoint, --region and "
             "the fail-fast timeouts; for serve's workers: JSON.",
        more="Checked at construction (no request): an unknown key is an ``OptionError`` "
             "naming the valid ones."),
)
"""Every keyword ``MocHiveStore`` takes besides its source, in its signature's order."""

BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
VIEW_OPTIONS: tuple[Option, ...] = tuple(o for o in OPTIONS if o.view)


def check_all(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option's value from ``given`` (the defaults for the others), each checked."""
    unknown = set(given) - set(BY_NAME)
    if unknown:
        raise OptionError(f"unknown option(s) {sorted(unknown)}: expected {store_keywords()}")
    return {o.name: o.check(given.get(o.name, o.default)) for o in OPTIONS}


def store_keywords() -> tuple[str, ...]:
    """The keyword arguments ``MocHiveStore`` takes (its options)."""
    return tuple(o.name for o in OPTIONS)


def docstring_parameters() -> str:
    """The numpydoc ``Parameters`` entries of every option, from the declaration
    (unindented, as ``inspect.cleandoc`` leaves a docstring)."""
    import textwrap

    lines = []
    for o in OPTIONS:
        lines.append(o.name)
        body = f"{o.help} Default: ``{o.default!r}``." + (f" {o.more}" if o.more else "")
        lines.extend(textwrap.wrap(body, 88, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)


# -- serve's own options ------------------------------------------------------------------------

DEFAULT_STAMP_TTL = 60.0
DEFAULT_WARM_LEAVES = 20_000  # serve's warm-up (serve/warm.py): ~15 s of one core at most
"""Seconds a served leaf's stamp is trusted by default (``serve --stamp-ttl``)."""
MAX_STAMP_TTL = 365 * 86400.0  # a year
MAX_WORKERS = 256
_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"\A(?=.{{1,253}}\Z){_LABEL}(\.{_LABEL})*\.?\Z")
_ORIGIN = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#,\\]+\Z")


def check_stamp_ttl(value: object) -> float:
    """``stamp_ttl`` as seconds: a finite number in (0, a year]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < float(value) <= MAX_STAMP_TTL:  # NaN too
        raise OptionError(f"stamp_ttl={short(value)}: expected seconds, more than 0 and at "
                          f"most {MAX_STAMP_TTL:,.0f} (a year)")
    return float(value)


def _within(name: str, value: object, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not least <= int(value) <= most:
        raise OptionError(f"{name}={short(value)}: expected an integer from {least} to "
                          f"{most:,}")
    return int(value)


def check_host(value: object) -> str:
    """The address to bind: an IP address or a host name."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_address(value))
        if _HOST_NAME.match(value) and not value.replace(".", "").isdigit():
            return value
    raise OptionError(f"host={short(value)}: expected an IP address or a host name")


def check_origins(value: object) -> tuple[str, ...]:
    """CORS origins: ``*`` or ``scheme://host[:port]`` each (a ``str`` is one origin)."""
    origins = (value,) if isinstance(value, str) else value
    if not isinstance(origins, Iterable):
        raise OptionError(f"cors={short(value)}: expected origins (a list of str)")
    checked = tuple(origins)
    for origin in checked:
        if not isinstance(origin, str) or not (origin == "*" or _ORIGIN.match(origin)):
            raise OptionError(f"cors: {short(origin)} is no origin: expected '*' or "
                              "scheme://host[:port], without a path")
    return checked


def _text_number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("expected a number of seconds") from None


def _text_integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("expected an integer") from None


def _text_origins(text: str) -> tuple[str, ...]:
    """Origins separated by spaces or commas."""
    origins = tuple(o for o in re.split(r"[\s,]+", text) if o)
    if not origins:
        raise ValueError("expected origins: '*' or scheme://host[:port]")
    return origins


SERVE_OPTIONS: tuple[Option, ...] = (
    Option(
        "host", "127.0.0.1",
        "The address to bind: 127.0.0.1 keeps the server reachable from this machine only.",
        check_host, flag="--host", metavar="ADDRESS", env=False),
    Option(
        "port", 8000, "The port to listen on (0: any free port).",
        lambda v: _within("port", v, 0, 65535), _text_integer, flag="--port", metavar="N",
        env=False),
    Option(
        "workers", 1,
        f"Worker processes sharing the port, each with its own memory and caches (at most "
        f"{MAX_WORKERS}).",
        lambda v: _within("workers", v, 1, MAX_WORKERS), _text_integer, flag="--workers",
        metavar="N", env=False),
    Option(
        "cors", (),
        "Origins allowed to read, as browsers send them (scheme://host[:port]; '*': any page).",
        check_origins, _text_origins, lambda v: " ".join(v), flag="--cors", metavar="ORIGIN",
        many=True),
    Option(
        "stamp_ttl", DEFAULT_STAMP_TTL,
        "Seconds a leaf's commit stamp is trusted before it is read again, and the longest "
        "max-age sent (max-age only with geometry sphere, else no-cache).",
        check_stamp_ttl, _text_number, repr, flag="--stamp-ttl", metavar="SECONDS"),
    Option(
        "warm_leaves", DEFAULT_WARM_LEAVES,
        "Leaf reads the server may make at start to fold the coarse computed orders before "
        "a client asks (the map viewer's first picture); 0: none.",
        lambda v: _within("warm_leaves", v, 0, 10**9), _text_integer, repr,
        flag="--warm-leaves", metavar="N"),
    Option(
        "tiles", False,
        "Also serve map tiles of every field under /.tiles/ (OGC API Tiles, XYZ PNG; the "
        "[tiles] extra, Python >= 3.12).",
        lambda v: flag("tiles", v), _text_bool, lambda v: "1" if v else "0",
        flag="--tiles"),
    Option(
        "access_log", False,
        "Log one line per request (off by default: a read asks for every chunk).",
        lambda v: flag("access_log", v), _text_bool, flag="--access-log", env=False),
)
"""``serve``'s own options (``moczarr-store serve``'s flags, ``serve.run.serve``'s keywords),
each checked before the hive is opened or a port bound. Those with a variable reach the
workers of ``serve --workers N`` and servers built by ``app_from_env``."""

SERVE_BY_NAME: dict[str, Option] = {o.name: o for o in SERVE_OPTIONS}


def check_serve(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every serve option's value from ``given`` (the defaults for the others), checked."""
    unknown = set(given) - set(SERVE_BY_NAME)
    if unknown:
        raise OptionError(f"unknown serve option(s) {sorted(unknown)}: expected "
                          f"{sorted(SERVE_BY_NAME)}")
    return {o.name: o.check(given.get(o.name, o.default)) for o in SERVE_OPTIONS}


# -- the view's options --------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenOptions:
    """How a hive is presented: equal options give identical views of the same hive.

    One field per view option of :data:`OPTIONS` (which says what each does), and the AOI
    parsed once (``aoi_cells``).
    """

    verify: Verify = "lazy"
    chunking: Chunking | int = "auto"
    window: str | None = None
    aoi: tuple[str | int, ...] | None = None
    aoi_cells: Cells | None = field(default=None, compare=False, repr=False)
    geometry: Geometry = "covered"
    computed_orders: ComputedOrders = "missing"
    centres: bool = False
    window_labels: WindowLabels = "text"

    def __post_init__(self) -> None:
        if isinstance(self.chunking, str) and self.chunking.isdigit():
            raise OptionError(f"chunking={self.chunking!r}: pass a count as an int")
        for option in VIEW_OPTIONS:
            if option.name != "aoi":  # the AOI is checked where its cells are parsed (make)
                option.check(getattr(self, option.name))

    @classmethod
    def make(cls, **given: Any) -> OpenOptions:
        """Options from loose keyword arguments (the view options of :data:`OPTIONS`),
        each checked and normalised; the AOI parsed once."""
        values = {o.name: o.check(given.pop(o.name, o.default)) for o in VIEW_OPTIONS}
        if given:
            raise OptionError(f"not a view option: {sorted(given)}")
        aoi = values["aoi"]
        return cls(**values, aoi_cells=None if aoi is None else parse_aoi(aoi))

    def describe(self) -> str:
        """The options that differ from the defaults, as keyword arguments (for ``repr``);
        an AOI of more than 4 members is shortened."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if not f.repr or value == f.default:
                continue
            if isinstance(value, tuple) and len(value) > 4:
                shown = ", ".join(map(repr, value[:3]))
                parts.append(f"{f.name}=({shown}, ... {len(value)} members)")
            else:
                parts.append(f"{f.name}={value!r}")
        return ", ".join(parts)

    def view_attrs(self) -> dict[str, object]:
        """What the root group's ``morton_hive_store`` attribute records of these options:
        those ``recorded`` always, the others where they differ from their default."""
        attrs: dict[str, object] = {}
        for option in VIEW_OPTIONS:
            value = getattr(self, option.name)
            if value in option.unrecorded:
                continue
            if option.recorded or value != option.default:
                attrs[option.name] = [str(a) for a in value] if isinstance(value, tuple) else value
        return attrs


def arguments_of(options: OpenOptions) -> dict[str, Any]:
    """The view options' keyword arguments that make ``options`` again."""
    return {o.name: getattr(options, o.name) for o in VIEW_OPTIONS}
