"""Hostile hives: mutations of copies of the committed fixtures, the oracle, the verdicts.

A *case* is (fixture, mutation kind, target object, parameters, store options: chunking,
``verify``, an AOI of the mutated object's node, the backend, an export). Running it copies the
fixture, mutates the copy, asks the reference reader (``moczarr``, with the same AOI) for
every group of the hive, then reads every array of every group through zarr (and, for
some cases, xarray) from a ``MocHiveStore`` over the copy (local, or uploaded to a
loopback S3 server), and gives each read one verdict:

- ``values-equal``: moczarr's values and dtype on every row the store serves;
- ``fill+warning``: where they differ, the fill value, and a ``HiveWarning`` naming the
  mutated object (or its leaf);
- ``omitted+warning``: an array (or group) moczarr has is left out, with such a warning;
- ``package-error``: a ``MocHiveError`` whose message names the mutated object;

or a violation: ``wrong-values``, ``wrong-dtype``, ``followed-link`` (bytes served from
beyond the hive root), ``bare-exception``, ``error-not-naming-object``, ``hang``,
``unbounded`` (an array too large to be this hive's), ``repeated-warning`` (one store
giving the same ``HiveWarning`` twice), and finer kinds of wrong data: ``silent-fill``,
``values-where-moczarr-fails``, ``missing-array``, ``missing-group``, ``extra-array``.
After a live commit (``commit-after-read``: a new ``run-*`` version, the stamp swapped and
the old version removed between two reads of one store) only ``values-equal`` is right.
``clear-after-read`` clears an unversioned leaf after a first read, as zagg does before it
rewrites one in place (``template``: its unstamped group written again): the second read
of its rows must be a ``LeafMovedError`` naming it, never the fill value.
``mass-absent`` widens a root (or product) coverage to list every node of the faces it
covers (thousands) of which a few leaves exist: the missing ones read as the fill value;
in every chunking the store's requests stay within what the clean fixture's reads ask plus
a few per leaf that exists (``unbounded`` otherwise).
``oversize-json`` pads a document with whitespace past the 16 MiB limit (moczarr reads it;
the store must refuse it naming it). ``lie-length`` and ``endless-listing`` change no file:
the copy is served by a rogue S3 endpoint on loopback (``support.rogue``, backend
``"rogue"``) that lies about the target's length, or never ends a listing.

moczarr computes ``morton`` from an object's path as the store does, so on leaves that
trade places (``misplace``) its values are the swapped ones; the store's fill with a
warning there is judged acceptable, and ``tests/hive/test_misplaced.py`` holds the store to the
clean hive's values instead.

Some local cases also export the copy in every reference format this Python writes
(mdim-refs; kerchunk JSON and Icechunk on Python >= 3.12) and read every array back with
the format's own reader: each must be what a fresh store reads (``values-equal``), or both
refuse (``package-error``), or the export fails naming the object; else ``export-differs``,
``export-unreadable`` or ``export-where-store-refuses``. Renamed arrays include names a
reference format cannot take verbatim: ``%`` (a URL reader decodes ``coun%74`` to
``count``), names differing from another only in case (SQLite identifiers ignore it), and
names that are not printable (refused, that array alone, with a warning).

Run ``python -m tests.hostile --report N`` (from the repository root) to generate N cases
and print their verdict counts by mutation kind, and the violations; ``--seed S`` draws
other cases than the derandomized default, ``--kind K`` only mutations of kind ``K``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import os
import re
import resource
import shutil
import sys
import tempfile
import threading
import warnings
from asyncio import run as sync
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import dask
import google_crc32c
import moczarr
import numpy as np
import xarray as xr
import zarr
from hypothesis import strategies as st
from zarr.storage import LocalStore

from moczarr_store import HiveWarning, MocHiveError, MocHiveStore
from moczarr_store.hive.jsonio import DEFAULT_MAX_JSON_BYTES
from support.hives import swap

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HIVES = ("bare_versioned", "legacy", "legacy_versioned", "mixed", "multiproduct", "pyramid1",
         "pyramid1_resweep", "pyramid2", "ragged", "sharded", "windowed", "windowed_explicit",
         "paged")
KINDS = ("type-swap", "truncate-json", "truncate-chunk", "shard-index", "rename-array",
         "symlink", "rewrite-after-read", "drift", "delete", "misplace", "commit-after-read",
         "oversize-json", "lie-length", "endless-listing", "clear-after-read",
         "mass-absent")
LATER_KINDS = ("rewrite-after-read", "commit-after-read", "clear-after-read")  # two reads
ROGUE_KINDS = ("lie-length", "endless-listing")  # what a rogue endpoint does, not the files
LIES = ("says-small", "says-big")  # support.rogue: no Content-Length then 1 GiB; half of it
LISTING_SECONDS = 2.0  # the listing cap of an endless-listing case
OK = ("values-equal", "fill+warning", "omitted+warning", "package-error")
VIOLATIONS = ("wrong-values", "wrong-dtype", "silent-fill", "values-where-moczarr-fails",
              "missing-array", "missing-group", "extra-array", "followed-link", "bare-exception",
              "error-not-naming-object", "hang", "unbounded", "repeated-warning",
              # the case's hive exported as mdim-refs and read back, against the store
              "export-differs", "export-unreadable", "export-where-store-refuses")
READ_TIMEOUT = 30.0  # seconds for one read before it counts as a hang
MAX_ELEMENTS = 1 << 22  # no array of these hives comes near; larger is unbounded work
MEMORY_LIMIT = 8 << 30  # report mode: a runaway allocation fails its case, not the machine
SKIP_DIRS = {"icechunk", "multiscales"}
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # copies are 10x faster in RAM
COORDS = ("morton", "cell_ids")
# the store's CF HEALPix arrays (beside xdggs's cell_ids): moczarr has none, so they are
# not judged against it; told apart by their attributes, since a field may take the name
CF_MARKS = {"grid_mapping_name": "healpix", "standard_name": ("healpix_index", "longitude",
                                                              "latitude")}
ABSENT = 2**64 - 1

SWAPS = ("float", "string", "list", "null", "object-to-list", "nan", "infinity", "huge-int",
         "negative-huge", "bool", "empty-string", "deep")
SHARD_LIES = ("past-end", "length-past-end", "overlap", "straddle", "wrap", "wrap-length",
              "zero-length", "half-absent", "into-index")
NEW_NAMES = ("c", "zarr.json", "0", "h.mean", ".hidden", "count.v2", "o7", "morton", "cell_ids",
             "window", "c.0", "-1",
             # a URL reader percent-decodes ("coun%74" is "count"); SQLite ignores case
             # ("COUNT" beside "count"); not printable (refused, that array alone)
             "coun%74", "h%5Fmean", "%", "a#b?c", "COUNT", "H_MEAN", "Count",
             "tab\tname", "bell\x07", "esc\x1b[31m")
REWRITES = ("values", "dtype", "endian", "zstd", "fill", "shape", "unstamp", "delete")
COMMITS = ("values", "zstd", "endian")  # a live commit's new version: other values, encoding
DRIFTS = ("dtype:int32", "dtype:float32", "dtype:int64", "dtype:float64", "endian", "fill",
          "zstd", "shape")
DEEP = 100_000
CHUNKINGS = ("auto", "leaf", "shard", "inner", 2)  # every one, for the explicit cases


# -- the pristine fixtures ----------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One ``{product}/[all_time/]o{order}`` group the store presents for a clean fixture."""

    path: str
    product: str | None  # what moczarr is given (None: a bare hive)
    order: int
    all_time: bool
    windows: tuple[str, ...]
    artifact: str = "leaf"  # the kind of object its rows are read from (``_kind_of``)


@dataclass(frozen=True)
class Pristine:
    """What a clean fixture holds: its groups and the objects each mutation can target."""

    name: str
    groups: tuple[Group, ...]
    json_docs: tuple[str, ...]
    chunks: tuple[str, ...]
    shards: tuple[str, ...]
    arrays: tuple[str, ...]  # array dirs of data fields in stamped objects
    unversioned: tuple[str, ...]  # array dirs in stamped objects with no `current`
    objects: tuple[str, ...]  # stamped object dirs (leaves, overviews, columns)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _stamp(obj: Path) -> dict | None:
    doc = _json(obj / "zarr.json")
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    stamp = attrs.get("morton_hive_commit") if isinstance(attrs, dict) else None
    return stamp if isinstance(stamp, dict) else None


def _objects(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.zarr")):
        parts = path.relative_to(root).parts
        if path.is_dir() and not SKIP_DIRS & set(parts) and ".zarr" not in "".join(parts[:-1]):
            found.append(path)
    return found


def _data_prefix(obj: Path) -> Path | None:
    stamp = _stamp(obj)
    if stamp is None:
        return None
    current = stamp.get("current")
    return obj / current if isinstance(current, str) else obj


def _array_dirs(prefix: Path) -> list[Path]:
    return sorted(
        a for g in prefix.iterdir() if g.is_dir() and g.name.isdigit()
        for a in g.iterdir() if (a / "zarr.json").is_file() and a.name not in COORDS
    )


def _groups(root: Path) -> tuple[Group, ...]:
    store = MocHiveStore(root, computed_orders="none")  # the stored levels moczarr reads
    top = zarr.open_group(store, mode="r")
    info = top.attrs["morton_hive_store"]
    groups = []
    for product in info["products"]:
        paths = [f"{product}/{k}" for k in top[product].group_keys() if re.fullmatch(r"o\d+", k)]
        if "all_time" in top[product]:
            paths += [f"{product}/all_time/{k}" for k in top[product]["all_time"].group_keys()]
        for path in paths:
            group = top[path]
            windows = tuple(str(w) for w in group["window"][...]) if "window" in group else ()
            order = int(path.rsplit("/o", 1)[1])
            manifest = _json(root / ("" if info["bare"] else product) / "morton_hive.json")
            groups.append(Group(path, None if info["bare"] else product, order,
                                "/all_time/" in path, windows, _artifact(manifest, order)))
    return tuple(groups)


def _artifact(manifest: dict, order: int) -> str:
    """What a product's rows at ``order`` are read from, by the manifest: its leaves (the
    source order), the leaf columns (a zagg-pyramid/2 ladder entry at the shard order) or
    the overview objects at ancestor nodes."""
    if order == manifest["cell_order"]:
        return "leaf"
    ladder = (manifest.get("pyramid") or {}).get("overviews") or []
    columns = {c for e in ladder if e.get("node") == manifest["shard_order"] for c in e["cells"]}
    return "column" if order in columns else "overview"


@functools.cache
def pristine(name: str) -> Pristine:
    """The clean fixture ``name``: its groups (as the store presents them) and targets."""
    root = FIXTURES / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        groups = _groups(root)
    docs = [p for p in root.rglob("morton_hive.json") if not SKIP_DIRS & set(p.parts)]
    docs += [p for p in root.rglob("coverage.moc")
             if p.parent.name not in SKIP_DIRS and (p.parent / "morton_hive.json").is_file()]
    chunks, shards, arrays, unversioned, objects = [], [], [], [], []
    for obj in _objects(root):
        prefix = _data_prefix(obj)
        if prefix is None or not prefix.is_dir():
            continue
        objects.append(obj)
        docs.append(obj / "zarr.json")
        docs += [g / "zarr.json" for g in prefix.iterdir() if (g / "zarr.json").is_file()
                 and g.name.isdigit()]
        for array in _array_dirs(prefix):
            meta = _json(array / "zarr.json") or {}
            docs.append(array / "zarr.json")
            arrays.append(array)
            if prefix == obj:
                unversioned.append(array)
            files = sorted(p for p in (array / "c").rglob("*") if p.is_file())
            chunks += files
            if [c.get("name") for c in meta.get("codecs", [])] == ["sharding_indexed"]:
                shards += files
    lists = (sorted(set(docs)), chunks, shards, arrays, unversioned, objects)
    return Pristine(name, groups, *(tuple(_rel(p, root) for p in paths) for paths in lists))


# -- cases ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    fixture: str
    kind: str
    target: str
    params: tuple[tuple[str, object], ...] = ()
    chunking: str | int = "leaf"
    verify: str = "lazy"
    xarray: bool = False
    aoi: str | None = None  # the store opened with this node as its AOI
    # or "s3": the mutated copy read from the loopback S3 server; "rogue": from a rogue one
    backend: str = "local"
    export: bool = False  # also exported as mdim-refs, read back and compared with the store

    def param(self, name: str, default: object = None) -> object:
        return dict(self.params).get(name, default)

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params)
        return (f"{self.fixture}: {self.kind} of {self.target} ({params}) "
                f"[chunking={self.chunking}, verify={self.verify}"
                f"{', +xarray' if self.xarray else ''}"
                f"{f', aoi={self.aoi}' if self.aoi else ''}"
                f"{f', {self.backend}' if self.backend != 'local' else ''}"
                f"{', export' if self.export else ''}]")


def _targets(p: Pristine, kind: str) -> tuple[str, ...]:
    return {
        "type-swap": p.json_docs, "truncate-json": p.json_docs, "truncate-chunk": p.chunks,
        "shard-index": p.shards, "rename-array": p.arrays,
        "symlink": p.chunks + p.objects + p.arrays + tuple(f"{o}/zarr.json" for o in p.objects),
        "rewrite-after-read": p.unversioned, "drift": p.arrays,
        "clear-after-read": tuple(sorted({str(_object_of(a)) for a in p.unversioned})),
        "mass-absent": tuple(d for d in p.json_docs
                             if d.endswith("coverage.moc") and d.count("/") <= 1),
        "delete": p.chunks + p.arrays + p.json_docs + p.objects,
        "misplace": tuple(o for o in p.objects if _places(p, o)),
        "commit-after-read": tuple(a for a in p.arrays if "/run-" in a),
        "oversize-json": tuple(d for d in p.json_docs if not d.endswith("coverage.moc")),
        "lie-length": p.json_docs + p.chunks,
        # a hive's or a product's manifest stands for the hive: every listing never ends
        "endless-listing": tuple(d for d in p.json_docs
                                 if d.endswith("morton_hive.json") and d.count("/") <= 1),
    }[kind]


_LEAF_NAME = re.compile(r"-?\d+(_[^/]+)?\.zarr")


def _place(obj: str) -> tuple | None:
    """A source leaf's product directory (``None``: a bare hive), depth and window suffix;
    ``None`` for any other object."""
    match = _LEAF_NAME.fullmatch(obj.rpartition("/")[2])
    if match is None:
        return None
    product = None if re.match(r"-?\d", obj) else obj.split("/")[0]
    return product, obj.count("/"), match.group(1)


def _places(p: Pristine, obj: str) -> tuple[str, ...]:
    """The other source leaves ``obj`` (one itself) can trade places with: of its product,
    node order and window."""
    mine = _place(obj)
    return () if mine is None else tuple(o for o in p.objects if o != obj and _place(o) == mine)


def _json_paths(doc: object, at: tuple = ()) -> list[tuple]:
    """Every node of a JSON document, depth first (the document itself first)."""
    out = [at]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _json_paths(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _json_paths(value, (*at, i))
    return out


@st.composite
def cases(draw, kinds: tuple[str, ...] = KINDS) -> Case:
    """A fixture, a mutation of one of its objects, its parameters and store options."""
    kind = draw(st.sampled_from(kinds))
    names = [h for h in HIVES if _targets(pristine(h), kind)]
    p = pristine(draw(st.sampled_from(names)))
    target = draw(st.sampled_from(_targets(p, kind)))
    size = (FIXTURES / p.name / target).stat().st_size if kind not in (
        "symlink", "delete", "misplace", "endless-listing", "mass-absent") else 0
    if kind == "type-swap":
        paths = _json_paths(_json(FIXTURES / p.name / target))
        params = {"at": draw(st.sampled_from(paths)), "swap": draw(st.sampled_from(SWAPS))}
    elif kind in ("truncate-json", "truncate-chunk"):
        params = {"keep": draw(st.integers(0, max(0, size - 1)))}
    elif kind == "shard-index":
        params = {"entry": draw(st.integers(0, 63)), "lie": draw(st.sampled_from(SHARD_LIES)),
                  "fix_crc": draw(st.booleans())}
    elif kind == "rename-array":
        params = {"to": draw(st.sampled_from(NEW_NAMES)), "hashes": draw(st.booleans())}
    elif kind in ("symlink", "delete", "oversize-json", "endless-listing", "mass-absent"):
        params = {}
    elif kind == "lie-length":
        params = {"how": draw(st.sampled_from(LIES))}
    elif kind == "misplace":  # trade places with another leaf (a botched move or sync)
        params = {"partner": draw(st.sampled_from(_places(p, target)))}
    elif kind == "rewrite-after-read":
        params = {"how": draw(st.sampled_from(REWRITES))}
    elif kind == "commit-after-read":
        params = {"how": draw(st.sampled_from(COMMITS))}
    elif kind == "clear-after-read":
        params = {"template": draw(st.booleans())}
    else:
        params = {"how": draw(st.sampled_from(DRIFTS))}
    node = _node_of(_object_of(target))  # an AOI of the mutated object's node, sometimes
    # links and rewrites after a first read are local: an upload copies what a link
    # points at, and a rewrite would need a second upload; thousands of absent leaves are
    # local too (with one chunk per leaf, a request each: slow against the S3 emulator)
    remote = (["local"] if kind in ("symlink", "mass-absent", *LATER_KINDS)
              else ["rogue"] if kind in ROGUE_KINDS else ["local"] * 3 + ["s3"])
    chunking = draw(st.sampled_from(["leaf", "shard", "inner", 2]))  # 2: spans of 2 leaves
    verify, xarray = draw(st.sampled_from(["lazy", "open"])), draw(st.booleans())
    aoi, backend = draw(st.sampled_from([None, None, None, node or None])), draw(
        st.sampled_from(remote))
    # a local hive not rewritten later, sometimes also exported (the export reads it anew)
    export = (draw(st.sampled_from([False, False, False, True])) and backend == "local"
              and kind not in LATER_KINDS)
    return Case(p.name, kind, target, tuple(params.items()), chunking, verify, xarray, aoi,
                backend, export)


# -- mutations --------------------------------------------------------------------------------


@dataclass
class Applied:
    """What a mutation did: the names an error or warning may use for it, the rows it can
    change (``None`` fields: any), and what it leaves for later."""

    names: set[str]
    product: str | None = None
    node: str = ""  # decimal id: rows in its subtree, and its ancestors ("": every row)
    window: str | None = None
    orders: set[int] | None = None
    arrays: set[str] | None = None
    artifact: str | None = None  # the kind of object mutated (None: hive-wide)
    fold: bool = False  # an all-time fold (``all.zarr``) of a windowed product
    linked: bool = False  # reads of those rows go through a link out of the root
    inert: bool = False  # a leaf's cell-order group document: no encoding, nothing to read
    later: Callable[[], None] | None = None  # the rewrite done after a first read


def _object_of(rel: str) -> str | None:
    parts = rel.split("/")
    ends = [i for i, part in enumerate(parts) if part.endswith(".zarr")]
    return "/".join(parts[: ends[0] + 1]) if ends else None


def _node_of(obj: str | None) -> str:
    """The decimal node id of an object (``""`` for hive-wide documents)."""
    if obj is None:
        return ""
    parts = obj.split("/")
    digits = [p for p in parts[:-1] if re.fullmatch(r"-?\d", p)]
    return "".join(digits)


def _scope(fixture: str, rel: str) -> Applied:
    """The rows an object of the clean fixture holds: its product, node, window, cell
    orders and arrays (a product's manifest or root coverage holds them all)."""
    obj = _object_of(rel)
    first = rel.split("/", 1)[0]
    bare = pristine(fixture).groups[0].product is None
    scope = Applied({rel} | ({obj} if obj else set()), None if bare else first, _node_of(obj))
    if obj is None:
        return scope
    stem = obj.rsplit("/", 1)[-1].removesuffix(".zarr").removesuffix(".pyramid")
    window = stem.partition("_")[2] if re.match(r"-?\d", stem) else stem
    scope.window = None if window in ("", "all") else window
    scope.artifact, scope.fold = _kind_of(obj), window == "all"
    inside = rel[len(obj) + 1:].split("/") if rel != obj else []
    at = next((i for i, p in enumerate(inside) if p.isdigit()), None)
    if at is None:
        prefix = _data_prefix(FIXTURES / fixture / obj)
        scope.orders = {int(g.name) for g in prefix.iterdir() if g.name.isdigit()}
        return scope
    scope.orders = {int(inside[at])}
    if len(inside) > at + 1 and inside[at + 1] != "zarr.json":
        scope.arrays = {inside[at + 1]}
    scope.inert = inside[at + 1:] == ["zarr.json"]
    return scope


def _swapped(value: object, swap: str) -> object:
    """``value`` with another JSON type (or a hostile value of its own)."""
    return {
        "float": float(value) if isinstance(value, int) and not isinstance(value, bool) else 0.5,
        "string": value if isinstance(value, str) else json.dumps(value),
        "list": [value],
        "null": None,
        "object-to-list": list(value.values()) if isinstance(value, dict) else [],
        "nan": math.nan,
        "infinity": math.inf,
        "huge-int": 2**64 + 1,
        "negative-huge": -(2**63) - 1,
        "bool": True,
        "empty-string": "",
        "deep": "\x00DEEP\x00",
    }[swap]


def _type_swap(root: Path, case: Case) -> None:
    path = root / case.target
    doc = json.loads(path.read_text())
    where = case.param("at")
    new = _swapped(_get(doc, where), case.param("swap"))
    if where:
        _get(doc, where[:-1])[where[-1]] = new
    else:
        doc = new
    text = json.dumps(doc)
    path.write_text(text.replace('"\\u0000DEEP\\u0000"', "[" * DEEP + "]" * DEEP))


def _get(doc, where: tuple):
    for key in where:
        doc = doc[key]
    return doc


def _truncate(root: Path, case: Case) -> None:
    path = root / case.target
    path.write_bytes(path.read_bytes()[: case.param("keep")])


def _shard_layout(meta: dict) -> tuple[int, bool]:
    conf = meta["codecs"][0]["configuration"]
    outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
    n = math.prod(o // i for o, i in zip(outer, conf["chunk_shape"], strict=True))
    return n, [c["name"] for c in conf["index_codecs"]][-1] == "crc32c"


def _shard_index(root: Path, case: Case) -> None:
    path = root / case.target
    meta = json.loads((path.parent.parent / "zarr.json").read_text())
    n, crc = _shard_layout(meta)
    data = bytearray(path.read_bytes())
    size = 16 * n + 4 * crc
    payload = len(data) - size
    index = np.frombuffer(bytes(data[payload : payload + 16 * n]), "<u8").reshape(n, 2).copy()
    i = case.param("entry") % n
    offset, nbytes = (int(v) for v in index[i])
    present = [(int(o), int(b)) for o, b in index if o != ABSENT and (o, b) != (offset, nbytes)]
    nbytes = nbytes if offset != ABSENT else 16
    offset = offset if offset != ABSENT else 0
    index[i] = {
        "past-end": (payload + 1, nbytes),
        "length-past-end": (offset, payload - offset + 1),
        "overlap": present[0] if present else (offset, nbytes),
        "straddle": (offset + 1, nbytes),
        "wrap": (ABSENT - 7, 16),
        "wrap-length": (8, ABSENT - 3),
        "zero-length": (offset, 0),
        "half-absent": (ABSENT, nbytes),
        "into-index": (max(0, payload - 8), 16),
    }[case.param("lie")]
    body = index.tobytes()
    data[payload : payload + 16 * n] = body
    if crc and case.param("fix_crc"):
        data[-4:] = google_crc32c.value(body).to_bytes(4, "little")
    path.write_bytes(bytes(data))


def _kind_of(obj: str) -> str:
    """Leaves, overviews (``all`` and per window) or columns (``*.pyramid.zarr``)."""
    name = obj.rsplit("/", 1)[-1]
    if re.fullmatch(r"-?\d+(_[^.]*)?\.zarr", name):
        return "leaf"
    return "column" if name.endswith(".pyramid.zarr") else "overview"


def _rename(root: Path, case: Case, applied: Applied) -> None:
    """Rename an array in every object of its level (a name of the hive's schema, not a
    drift between leaves), and its stamps' content-hash keys if asked. An array already
    holding the new name (a stored ``morton``) is replaced: the names collide."""
    array = root / case.target
    old, new = array.name, case.param("to")
    order, kind = array.parent.name, _kind_of(_object_of(case.target))
    applied.arrays, applied.node = {old, new}, ""
    targets = []
    for other in _objects(root):
        prefix = _data_prefix(other)
        if (_kind_of(other.name) == kind and prefix is not None
                and (prefix / order / old / "zarr.json").is_file()):
            targets.append(prefix / order / old)
    for path in targets:
        applied.names.add(_rel(path, root))
        applied.names.add(_object_of(_rel(path, root)))
        if (path.parent / new).is_dir():
            shutil.rmtree(path.parent / new)
        if not (path.parent / new).exists():
            path.rename(path.parent / new)
        if case.param("hashes"):
            obj_dir = root / _object_of(_rel(path, root))
            doc = json.loads((obj_dir / "zarr.json").read_text())
            hashes = doc["attributes"]["morton_hive_commit"].get("content_hashes", {})
            arrays = hashes.get("arrays", {})
            if f"{order}/{old}" in arrays:
                arrays[f"{order}/{new}"] = arrays.pop(f"{order}/{old}")
                (obj_dir / "zarr.json").write_text(json.dumps(doc))


def _symlink(root: Path, outside: Path, case: Case, applied: Applied) -> None:
    path = root / case.target
    away = outside / f"linked-{len(list(outside.iterdir()))}"
    shutil.move(path, away)
    path.symlink_to(away, target_is_directory=away.is_dir())
    applied.linked = True


def _numeric(meta: dict) -> bool:
    return isinstance(meta.get("data_type"), str) and re.fullmatch(
        r"u?int\d+|float\d+", meta["data_type"]) is not None


def _bytes_codecs(meta: dict) -> list[dict]:
    """The codec list holding the ``bytes`` codec (the shard's inner one when sharded)."""
    codecs = meta["codecs"]
    if codecs and codecs[0]["name"] == "sharding_indexed":
        return codecs[0]["configuration"]["codecs"]
    return codecs


def _cast(values: np.ndarray, dtype: str, fill: object) -> np.ndarray:
    if np.dtype(dtype).kind in "iu" and values.dtype.kind == "f":
        values = np.nan_to_num(values, nan=float(fill), posinf=0, neginf=0)
    return values.astype(dtype)


def _zarr_fill(value: object, dtype: str) -> object:
    if np.dtype(dtype).kind == "f":
        return "NaN" if value is None or (isinstance(value, float) and math.isnan(value)) \
            else float(value)
    return 0 if value is None or isinstance(value, str) else int(value)


def reencode(array: Path, how: str) -> None:
    """Rewrite a leaf array under other metadata, its values re-encoded to match (so a
    reader honouring the leaf's own ``zarr.json`` reads the values it read before)."""
    meta = json.loads((array / "zarr.json").read_text())
    if not _numeric(meta):
        return
    values = zarr.open_array(LocalStore(array), mode="r")[...]
    new = copy.deepcopy(meta)
    if how.startswith("dtype"):
        dtype = how.split(":", 1)[1] if ":" in how else {
            "int64": "float64", "float64": "int64", "int32": "float32", "float32": "int32"
        }.get(meta["data_type"], "float32")
        new["data_type"] = dtype
        new["fill_value"] = _zarr_fill(0 if np.dtype(dtype).kind in "iu" else None, dtype)
        values = _cast(values, dtype, new["fill_value"])
    elif how == "endian":
        for codec in _bytes_codecs(new):
            if codec["name"] == "bytes":
                codec["configuration"] = {"endian": "big"}
    elif how == "zstd":
        _bytes_codecs(new).append({"name": "zstd", "configuration": {"level": 3,
                                                                    "checksum": False}})
    elif how == "fill":  # cells that held the old fill hold the new one (absent chunks stay)
        new["fill_value"] = 7 if np.dtype(meta["data_type"]).kind in "iu" else -9999.0
        old_fill = np.full((), _zarr_fill(meta.get("fill_value"), meta["data_type"]),
                           dtype=values.dtype)
        values = np.where(_equal(values, np.broadcast_to(old_fill, values.shape)),
                          np.asarray(new["fill_value"], dtype=values.dtype), values)
    elif how == "shape":
        new["shape"] = [2 * s for s in meta["shape"]]
        grid = new["chunk_grid"]["configuration"]
        grid["chunk_shape"] = [2 * s for s in grid["chunk_shape"]]
        values = np.concatenate([values, values])
    elif how == "values":
        values = values * 2 + 1 if values.dtype.kind in "iu" else values + 1.5
    shutil.rmtree(array / "c", ignore_errors=True)
    (array / "zarr.json").write_text(json.dumps(new))
    zarr.open_array(LocalStore(array), mode="r+")[...] = values


def _rewrite(root: Path, case: Case) -> None:
    how = case.param("how")
    obj = root / _object_of(case.target)
    if how == "delete":
        shutil.rmtree(obj)
    elif how == "unstamp":
        doc = json.loads((obj / "zarr.json").read_text())
        doc["attributes"].pop("morton_hive_commit", None)
        (obj / "zarr.json").write_text(json.dumps(doc))
    else:
        reencode(root / case.target, how)


def _commit(root: Path, case: Case) -> None:
    """A writer's commit of the target's object between two reads: its current version
    copied to a new one with the target array re-encoded there (``how``), the stamp
    swapped by one atomic rename, then the old version removed (its cleanup)."""
    rel = _object_of(case.target)
    assert rel is not None, case.target
    obj = root / rel
    doc = json.loads((obj / "zarr.json").read_text())
    old = doc["attributes"]["morton_hive_commit"]["current"]
    new = "run-committed-after-read-1"
    shutil.copytree(obj / old, obj / new)
    reencode(obj / new / case.target[len(rel) + 1 :].split("/", 1)[1], str(case.param("how")))
    doc["attributes"]["morton_hive_commit"]["current"] = new
    (obj / ".zarr.json.swap").write_text(json.dumps(doc))
    os.replace(obj / ".zarr.json.swap", obj / "zarr.json")
    shutil.rmtree(obj / old)


def _clear(leaf: Path, aside: Path, template: bool) -> None:
    """``leaf`` as zagg leaves it while it rewrites it in place: its files gone (put
    ``aside``), and with ``template`` its unstamped group written again."""
    shutil.move(leaf, aside)
    if template:
        leaf.mkdir()
        (leaf / "zarr.json").write_text(json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": {}}))


def _product_objects(root: Path, rel: str) -> set[str]:
    """Every object of ``rel``'s product: an encoding error caused by a changed template
    rightly names the other leaf whose encoding no longer matches."""
    first = rel.split("/", 1)[0]
    base = root if re.fullmatch(r"-?\d", first) or "/" not in rel else root / first
    return {_rel(o, root) for o in _objects(base)}


def apply(case: Case, root: Path, outside: Path) -> Applied:
    """Mutate the hive copy at ``root`` (``outside`` is a directory beyond it)."""
    applied = _scope(case.fixture, case.target)
    encoding = case.kind in ("drift", "rewrite-after-read", "rename-array", "delete",
                             "commit-after-read") or (
        case.kind == "type-swap" and case.target.count("/") and _json(
            FIXTURES / case.fixture / case.target).get("node_type") == "array")
    if encoding:
        applied.names |= _product_objects(root, case.target)
    if case.kind == "type-swap":
        _type_swap(root, case)
    elif case.kind in ("truncate-json", "truncate-chunk"):
        _truncate(root, case)
    elif case.kind == "shard-index":
        _shard_index(root, case)
    elif case.kind == "rename-array":
        _rename(root, case, applied)
    elif case.kind == "symlink":
        _symlink(root, outside, case, applied)
    elif case.kind == "drift":
        reencode(root / case.target, case.param("how"))
    elif case.kind == "rewrite-after-read":
        applied.later = lambda: _rewrite(root, case)
    elif case.kind == "commit-after-read":
        applied.later = lambda: _commit(root, case)
    elif case.kind == "clear-after-read":
        applied.later = lambda: _clear(root / case.target, outside / "kept.zarr",
                                       bool(case.param("template")))
    elif case.kind == "misplace":
        other = str(case.param("partner"))
        applied.names.add(other)  # rows of both nodes (their common ancestor's) can change
        applied.node = os.path.commonprefix([applied.node, _node_of(other)])
        swap(root, case.target, other)
    elif case.kind == "delete":
        path = root / case.target
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    elif case.kind == "oversize-json":
        with open(root / case.target, "ab") as padded:  # still JSON: trailing whitespace
            padded.write(b" " * (DEFAULT_MAX_JSON_BYTES + 1))
    elif case.kind == "endless-listing":
        applied.names.add("listing")  # the refusal names the listing, not an object
    elif case.kind == "mass-absent":
        _widen(root / case.target)
    return applied


def _widen(moc: Path) -> None:
    """The coverage ``moc`` listing every node of each face it lists a node of (4 ** order
    a face), whether a leaf was written there or not."""
    doc = json.loads(moc.read_text())
    order = int(doc["order"])
    faces = {str(lo)[: len(str(lo)) - order] for lo, _ in doc["ranges"]}
    doc["ranges"] = [[f + "1" * order, f + "4" * order] for f in sorted(faces)]
    moc.write_text(json.dumps(doc))


ABSENT_REQUESTS = 40  # requests per object that exists and pass of reads, at most, beyond
# what the same reads of the clean fixture ask (each chunk of those objects: one GET a leaf
# under joined chunks, one an inner chunk under chunking="inner")


def _absence_cost(case: Case, store: MocHiveStore, root: Path, base: dict) -> list[Read]:
    """A scan over listed-but-absent leaves asks in proportion to the objects that exist,
    not to the nodes listed, in every chunking (absence is learned in bulk): at most what
    the same reads of the clean fixture ask, plus ``ABSENT_REQUESTS`` per object and pass
    (the stamps sampled and the listings that learn the rest absent), under
    ``verify="open"`` too (which checks every listed leaf at open, learning the same way)."""
    if case.kind != "mass-absent":
        return []
    clean = MocHiveStore(FIXTURES / case.fixture, verify=case.verify, chunking=case.chunking,
                         aoi=[case.aoi] if case.aoi else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read_all(Context(case, Applied(set()), base, base, None, []), clean)
    objects, passes = len(_objects(root)), 1 + case.xarray  # zarr's reads, xarray's
    total, bound = store.request_stats.total, clean.request_stats.total
    bound += ABSENT_REQUESTS * objects * passes
    return [] if total <= bound else [Read(
        "requests", "unbounded", f"{total} requests for {objects} objects, {passes} passes "
        f"(at most {bound:,}: the clean fixture's reads asked {clean.request_stats.total:,})")]


# -- the oracle -------------------------------------------------------------------------------


@dataclass
class Ref:
    """moczarr's answer for one group (and window): values by variable, or why not."""

    morton: np.ndarray | None = None
    values: dict[str, np.ndarray] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # "*": the whole group failed
    wider: bool = False  # the answer without the AOI, standing in for a failed AOI read


def _moczarr(root: Path, group: Group, window: str | None, aoi: str | None) -> xr.Dataset:
    """moczarr's dataset for one group: ``open_hive`` at the source order, ``open_level``
    at the others (without dask: one chunk per leaf is slow to compute)."""
    kwargs = {k: v for k, v in (("product", group.product), ("window", window),
                                ("aoi", [aoi] if aoi else None)) if v}
    kwargs["xr_kwargs"] = {"chunks": None}
    if group.all_time:
        return moczarr.open_level(str(root), group.order, all_time=True, **kwargs)
    ds = moczarr.open_hive(str(root), **kwargs)
    if ds.attrs["morton_hive"]["cell_order"] != group.order:
        ds = moczarr.open_level(str(root), group.order, **kwargs)
    return ds


def _refused(err: BaseException) -> str:
    """moczarr refusing, as an answer: any ``Exception``, or a panic of its Rust helpers
    (mortie: pyo3's ``PanicException`` is a ``BaseException``, raised on some malformed
    coverage boxes); anything else (an interrupt) is re-raised."""
    if not isinstance(err, Exception) and type(err).__name__ != "PanicException":
        raise err
    return f"{type(err).__name__}: {err}"


def _reference(root: Path, group: Group, window: str | None, aoi: str | None) -> Ref:
    ref = Ref()
    try:
        ds = _moczarr(root, group, window, aoi)
        ref.morton = np.asarray(ds["morton"].values)
    except BaseException as err:  # moczarr refusing is an answer
        ref.errors["*"] = _refused(err)
        return ref
    try:  # else variable by variable, to see which fail
        ds = ds.load()
    except BaseException as err:
        _refused(err)
    for name in ds.data_vars:
        if ds[name].dims != ("cells",):  # every field of these hives is 1-d
            ref.errors[str(name)] = f"moczarr presents it along {ds[name].dims}, not cells"
            continue
        try:
            ref.values[str(name)] = np.asarray(ds[name].values)
        except BaseException as err:
            ref.errors[str(name)] = _refused(err)
    return ref


def references(root: Path, groups: tuple[Group, ...],
               aoi: str | None = None) -> dict[tuple[str, str | None], Ref]:
    """moczarr's answer for every group (window by window) of the hive at ``root``, cut to
    node ``aoi`` when given."""
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        return {(g.path, w): _reference(root, g, w, aoi)
                for g in groups for w in g.windows or (None,)}


def aoi_references(root: Path, groups: tuple[Group, ...], aoi: str | None) -> dict:
    """:func:`references` with the AOI; where moczarr's AOI path fails (it parses leaves'
    coverage boxes, which nothing else reads), its answer without the AOI: the store
    keeps whole nodes, so the same rows (``wider``: its dtypes promote over more leaves
    than the AOI keeps)."""
    refs = references(root, groups, aoi)
    if aoi and any("*" in ref.errors for ref in refs.values()):
        wide = references(root, groups)
        refs = {key: replace(wide[key], wider=True) if "*" in ref.errors else ref
                for key, ref in refs.items()}
    return refs


def walk_references(root: Path, groups: tuple[Group, ...], moc: Path,
                    aoi: str | None = None) -> dict | None:
    """moczarr's answers with the root coverage ``moc`` removed (it walks the digit tree):
    what the store documents for an unusable root coverage, with a warning."""
    if not moc.is_file():
        return None
    aside = moc.with_name("coverage.moc.aside")
    moc.rename(aside)
    try:
        return references(root, groups, aoi)
    finally:
        aside.rename(moc)


@functools.cache
def pristine_references(name: str, aoi: str | None = None) -> dict[tuple[str, str | None], Ref]:
    return references(FIXTURES / name, pristine(name).groups, aoi)


# -- reading through the store, and the verdicts ------------------------------------------------


@dataclass(frozen=True)
class Read:
    """One read of one array (one window of it) and its verdict."""

    key: str
    verdict: str
    detail: str = ""


class Hang(Exception):
    """A read that did not finish within ``READ_TIMEOUT``."""


def _timed(fn: Callable[[], object]) -> object:
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # re-raised in the caller
            box["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(READ_TIMEOUT)
    if thread.is_alive():
        raise Hang(f"no answer after {READ_TIMEOUT:.0f} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def error_verdict(err: BaseException, names: set[str]) -> tuple[str, str]:
    text = f"{type(err).__name__}: {str(err)[:300]}"
    if isinstance(err, Hang):
        return "hang", text
    if not isinstance(err, MocHiveError):
        return "bare-exception", text
    if any(n in str(err) for n in names):
        return "package-error", text
    return "error-not-naming-object", text


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality, NaN equal to NaN."""
    if a.dtype.kind in "biufc" and b.dtype.kind in "biufc":
        with np.errstate(all="ignore"):
            same = a == b
            if a.dtype.kind in "fc" or b.dtype.kind in "fc":
                same |= np.isnan(a.astype("f8")) & np.isnan(b.astype("f8"))
        return np.asarray(same, dtype=bool)
    return np.array([x == y or (x != x and y != y) for x, y in zip(a.flat, b.flat, strict=True)],
                    dtype=bool).reshape(a.shape)


@dataclass
class Context:
    """One case's run: the mutation, moczarr's answers, and the store's warnings so far."""

    case: Case
    applied: Applied
    refs: dict
    base: dict  # the clean fixture's answers
    old: dict | None  # the answers before a rewrite (a store may keep reading those)
    caught: list
    fallback: dict | None = None  # a documented fallback's answers, right with a warning

    def warned(self) -> bool:
        names = self.applied.names
        return any(issubclass(w.category, HiveWarning) and any(n in str(w.message) for n in names)
                   for w in self.caught)

    def affected(self, group: Group, window: str | None, name: str,
                 morton: np.ndarray) -> np.ndarray:
        """Rows of array ``name`` the mutation can change."""
        a = self.applied
        if (a.product is not None and group.product not in (None, a.product)
                or a.artifact is not None and a.artifact != group.artifact
                or group.all_time and a.window is not None
                or group.windows and a.fold
                or a.window is not None and window not in (None, a.window)
                or a.orders is not None and group.order not in a.orders
                or a.arrays is not None and name not in a.arrays):
            return np.zeros(morton.shape, bool)
        return np.array([d.startswith(a.node) or a.node.startswith(d)
                         for d in (moczarr.morton_decimal(int(w)) for w in morton)], dtype=bool)


def _expected(ref: Ref | None, name: str, morton: np.ndarray):
    """Reference values aligned to the store's rows (``None``: no such array), and which
    rows the reference has."""
    if ref is None or name not in ref.values or ref.morton is None:
        return None, np.zeros(morton.shape, bool)
    values = ref.values[name]
    pos = {int(w): i for i, w in enumerate(ref.morton)}
    index = np.array([pos.get(int(w), -1) for w in morton], dtype=np.int64)
    has = index >= 0
    out = np.empty(morton.shape, dtype=values.dtype)
    if values.size:
        out[has] = values[index[has]]
    return out, has


def judge(ctx: Context, group: Group, window: str | None, name: str, got: np.ndarray,
          fill: object, morton: np.ndarray) -> tuple[str, str]:
    """The verdict on one read of array ``name`` (one window's rows of it).

    A row is right when it equals moczarr's (on the mutated hive; or before a rewrite;
    or, where moczarr fails, on the clean hive for rows the mutation cannot change), or
    when it is the fill value where the clean hive has no such row (windows). Any other
    fill needs a ``HiveWarning`` naming the object.
    """
    key = (group.path, window)
    ref = ctx.refs.get(key)
    failed = ref is None or "*" in ref.errors or name in ref.errors
    warned = ctx.warned()
    rows = ctx.affected(group, window, name, morton)
    fills = _equal(got, np.full(got.shape, fill, dtype=got.dtype))
    answers = [(ref, None), (ctx.old.get(key) if ctx.old else None, None),
               (ctx.base.get(key) if failed else None, None if ctx.applied.inert else ~rows),
               (ctx.fallback.get(key) if ctx.fallback and warned else None, None)]
    ok, dtypes = np.zeros(got.shape, bool), set()
    for answer, usable in answers:
        want, has = _expected(answer, name, morton)
        if want is not None:
            dtypes.add(want.dtype)
            ok |= has & (True if usable is None else usable) & _equal(got, want)
    if window is not None and dtypes:  # one array for every window: their promotion
        each = [r.values[name].dtype for (path, _), r in ctx.refs.items()
                if path == group.path and name in r.values]
        dtypes.add(np.result_type(*each) if each else next(iter(dtypes)))
    base = ctx.base.get(key)
    if ref is not None and ref.wider and base is not None and name in base.values:
        # moczarr's AOI read failed on the damage: the clean hive's AOI dtype (promoted
        # over the leaves the AOI keeps) is what it would give
        dtypes.add(base.values[name].dtype)
    if warned and base is not None and name in base.values:
        # rows read as fill with a warning keep the declared dtype where moczarr promotes
        # (an int64 leaf array gone: moczarr's NaN rows make it float64)
        dtypes.add(base.values[name].dtype)
    absent = fills & ~np.isin(morton, base.morton if base and base.morton is not None else [])
    if window is not None and not failed and ref.morton is not None:
        # no committed leaf in this window (moczarr, opened on it, has no such row): a
        # window axis shows that as the fill value, as for a window never written
        absent |= fills & ~np.isin(morton, ref.morton)
    if dtypes and got.dtype not in dtypes and not fills.all():
        return "wrong-dtype", f"{got.dtype}, moczarr gives {' or '.join(sorted(map(str, dtypes)))}"
    if ctx.applied.linked and (served := rows & ~fills).any():
        return "followed-link", f"{int(served.sum())} rows served through a link out of the root"
    bad = ~ok & ~fills
    if bad.any():
        i = int(np.argmax(bad))
        at = f"first at morton {moczarr.morton_decimal(int(morton[i]))}: {got[i]!r}"
        if not dtypes:
            return "extra-array", f"moczarr has no array {name!r}; {int(bad.sum())} rows, {at}"
        if failed:
            return "values-where-moczarr-fails", f"{int(bad.sum())} rows served, {at}"
        return "wrong-values", f"{int(bad.sum())} rows differ from moczarr's, {at}"
    unexplained = ~ok & fills & ~absent
    if unexplained.any() and not warned:
        i = int(np.argmax(unexplained))
        return "silent-fill", (f"{int(unexplained.sum())} rows read as fill with no HiveWarning "
                               f"naming it, first at morton "
                               f"{moczarr.morton_decimal(int(morton[i]))}")
    if unexplained.any():
        return "fill+warning", f"{int(unexplained.sum())} rows read as fill"
    return "values-equal", ""


def _bounded(shape: tuple[int, ...]) -> bool:
    return math.prod(shape) <= MAX_ELEMENTS


def _open_group(store: MocHiveStore, group: Group, via: str):
    """``(arrays, coordinates)`` of one group, through zarr or xarray."""
    if via == "xarray":
        ds = xr.open_zarr(store, group=group.path)
        return ({str(n): ds[n] for n in ds.data_vars if not _cf_layer(ds[n])},
                {str(n): ds[n] for n in ds.coords})
    arrays = dict(zarr.open_group(store, path=group.path, mode="r").arrays())
    names = [*COORDS, *(("window", "window_start", "window_end") if group.windows else ())]
    names += [n for n, a in arrays.items() if _cf_layer(a)]
    return arrays, {n: arrays.pop(n) for n in names if n in arrays}


def _cf_layer(array) -> bool:
    """Whether ``array`` (zarr's or xarray's) is one of the store's CF HEALPix arrays."""
    attrs = array.attrs
    return (attrs.get("grid_mapping_name") == CF_MARKS["grid_mapping_name"]
            or attrs.get("standard_name") in CF_MARKS["standard_name"])


def _expected_names(ctx: Context, group: Group) -> set[str]:
    """Arrays moczarr presents in this group (the clean hive's where moczarr fails)."""
    names = set()
    for window in group.windows or (None,):
        ref = ctx.refs.get((group.path, window))
        if ref is not None and "*" not in ref.errors:
            names |= set(ref.values) | set(ref.errors)
        else:
            names |= set(ctx.base.get((group.path, window), Ref()).values)
    return names


def _absent(store: MocHiveStore, group: Group) -> bool:
    """Whether the store's hierarchy leaves ``group`` out (its open may fail instead)."""
    try:
        return not _timed(lambda: sync(store.exists(f"{group.path}/zarr.json")))
    except Exception:  # the hive does not open: the read's own error is the verdict
        return False


def _read_group(ctx: Context, store: MocHiveStore, group: Group, via: str) -> list[Read]:
    """Every array of one group read whole, judged window by window."""
    names = ctx.applied.names
    try:
        arrays, coords = _timed(lambda: _open_group(store, group, via))
        if "morton" not in coords or not _bounded(coords["morton"].shape):
            shape = getattr(coords.get("morton"), "shape", None)
            return [Read(f"{via} {group.path}/morton", "unbounded", f"shape {shape}")]
        morton = np.asarray(_timed(lambda: np.asarray(coords["morton"][...])))
        labels = ([str(w) for w in np.asarray(coords["window"][...])]
                  if group.windows and "window" in coords else [None])
    except Exception as err:  # judged
        if _absent(store, group):
            verdict = "omitted+warning" if ctx.warned() else "missing-group"
            return [Read(f"{via} {group.path}", verdict, "group not presented")]
        return [Read(f"{via} {group.path}", *error_verdict(err, names))]
    reads = []
    expected = _expected_names(ctx, group)
    for name in sorted(expected | set(arrays)):
        where = f"{via} {group.path}/{name}"
        if name not in arrays:
            if ctx.warned():
                reads.append(Read(where, "omitted+warning", "array not presented"))
            else:
                reads.append(Read(where, "missing-array", "moczarr presents it; no HiveWarning"))
            continue
        array = arrays[name]
        if not _bounded(array.shape):
            reads.append(Read(where, "unbounded", f"shape {array.shape}"))
            continue
        try:
            got = np.asarray(_timed(lambda a=array: np.asarray(a[...] if via == "zarr"
                                                                else a.values)))
            fill = array.fill_value if via == "zarr" else _zarr_array_fill(store, group, name)
        except Exception as err:  # judged
            reads.append(Read(where, *error_verdict(err, names)))
            continue
        for w, label in enumerate(labels):
            values = got[w] if label is not None and got.ndim > 1 else got
            suffix = "" if label is None else f"[{label}]"
            if values.shape[:1] != morton.shape:
                reads.append(Read(where + suffix, "wrong-values",
                                  f"shape {values.shape} for {morton.shape[0]} rows"))
            else:
                cut = _cut(ctx, group, label, morton)
                reads.append(Read(where + suffix,
                                  *judge(ctx, group, label, name, values[cut], fill, morton[cut])))
    return reads


def _cut(ctx: Context, group: Group, window: str | None, morton: np.ndarray):
    """The rows to judge: all, or with an AOI (the store keeps whole nodes, moczarr cuts
    cell-exact) those moczarr's cut of the mutated or the clean hive has."""
    if not ctx.case.aoi:
        return slice(None)
    refs = (ctx.refs.get((group.path, window)), ctx.base.get((group.path, window)))
    known = [r.morton for r in refs if r is not None and r.morton is not None]
    return np.isin(morton, np.concatenate(known)) if known else np.zeros(morton.shape, bool)


def _zarr_array_fill(store: MocHiveStore, group: Group, name: str) -> object:
    return zarr.open_array(store, path=f"{group.path}/{name}", mode="r").fill_value


def read_all(ctx: Context, store: MocHiveStore) -> list[Read]:
    """Every array of every group of the clean fixture, through zarr (and xarray)."""
    reads = []
    with dask.config.set(scheduler="synchronous"):
        for group in pristine(ctx.case.fixture).groups:
            reads += _read_group(ctx, store, group, "zarr")
            if ctx.case.xarray:
                reads += _read_group(ctx, store, group, "xarray")
    return reads


def run_case(case: Case) -> list[Read]:
    """Every read of every array of every group of the mutated hive, judged."""
    p, aoi = pristine(case.fixture), case.aoi
    base = pristine_references(case.fixture, aoi)
    with (tempfile.TemporaryDirectory(dir=SCRATCH) as tmp,
          warnings.catch_warnings(record=True) as caught):
        warnings.simplefilter("always")
        root, outside = Path(tmp) / case.fixture, Path(tmp) / "outside"
        shutil.copytree(FIXTURES / case.fixture, root, symlinks=True)
        outside.mkdir()
        applied = apply(case, root, outside)
        with _source(case, root) as (source, options):
            try:
                store = MocHiveStore(source, verify=case.verify, chunking=case.chunking,
                                     aoi=[case.aoi] if case.aoi else None, **options)
            except Exception as err:  # judged
                return [Read("open", *error_verdict(err, applied.names))]
            if applied.later is None:
                ctx = Context(case, applied, aoi_references(root, p.groups, aoi), base, None,
                              caught)
                if case.target.rsplit("/", 1)[-1] == "coverage.moc":
                    ctx.fallback = walk_references(root, p.groups, root / case.target, aoi)
                reads = read_all(ctx, store) + _absence_cost(case, store, root, base)
                if case.export:
                    reads += export_reads(case, root, applied)
            else:
                reads = read_all(Context(case, applied, base, base, None, caught), store)
                applied.later()
                ctx = Context(case, applied, aoi_references(root, p.groups, aoi), base, base,
                              caught)
                reads += [Read("again " + r.key, r.verdict, r.detail)
                          for r in read_all(ctx, store)]
        return reads + _repeated_warnings(caught)


def export_formats() -> tuple[str, ...]:
    """The reference formats this Python can write: mdim-refs always; kerchunk JSON and
    Icechunk with the ``[export]`` extra (Python >= 3.12)."""
    try:
        import icechunk  # noqa: F401
        import virtualizarr  # noqa: F401
    except ImportError:
        return ("mdim-refs",)
    return ("mdim-refs", "kerchunk-json", "icechunk")


def _exported(fmt: str, out: Path, root: Path) -> dict[str, Callable[[], np.ndarray]]:
    """Every array of an export, as a function reading it back with the format's reader."""
    from support.refs_read import icechunk_store, local_access, mdim_arrays, walk

    if fmt == "mdim-refs":
        return mdim_arrays(out)
    if fmt == "kerchunk-json":
        import fsspec
        from zarr.storage import FsspecStore

        fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file",
                               asynchronous=True)
        group = zarr.open_group(FsspecStore(fs, read_only=True, path=""), mode="r",
                                zarr_format=3)
    else:
        group = zarr.open_group(icechunk_store(out, local_access(root)), mode="r")
    return {p: (lambda a=a: a[...]) for p, a in walk(group).items()}


def export_reads(case: Case, root: Path, applied: Applied) -> list[Read]:
    """The hive at ``root`` published in every format this Python writes (the case's
    chunking where a reference can carry it, else ``auto``) and every array read back with
    the format's own reader, against a fresh store's read of it (judged against moczarr by
    the case itself): the same values and dtype, or both refusing; or the export fails
    naming the object. Its warnings are its own (a second store warns again)."""
    reads = []
    for fmt in export_formats():
        reads += _export_reads(case, root, applied, fmt)
    return reads


def _export_reads(case: Case, root: Path, applied: Applied, fmt: str) -> list[Read]:
    from moczarr_store.refs import export_refs
    from support.refs_read import walk

    chunking = case.chunking if case.chunking in ("leaf", "shard", "inner") else "auto"
    options = {"verify": case.verify, "aoi": [case.aoi] if case.aoi else None}
    reads = []
    with (tempfile.TemporaryDirectory(dir=SCRATCH) as tmp, warnings.catch_warnings()):
        warnings.simplefilter("ignore", HiveWarning)
        out = Path(tmp) / "refs"
        try:
            export_refs(root, fmt, out, chunking=chunking, **options)
        except Exception as err:
            return [Read(f"export {fmt}", *error_verdict(err, applied.names))]
        try:
            exported = _exported(fmt, out, root)
        except Exception as err:  # judged
            return [Read(f"export {fmt}", "export-unreadable", f"{type(err).__name__}: {err}")]
        store = MocHiveStore(root, chunking="shard" if chunking == "auto" else chunking,
                             computed_orders="none", **options)  # exports leave them out
        served = walk(zarr.open_group(store, mode="r"))
        for path in sorted(set(exported) | set(served)):
            key = f"export {fmt} {path}"
            if path not in exported or path not in served:
                where = "the export" if path in exported else "the store"
                reads.append(Read(key, "export-differs", f"only {where} has it"))
                continue
            got, want = _attempt(exported[path]), _attempt(lambda p=path: served[p][...])
            if isinstance(want, BaseException):
                verdict = ("package-error" if isinstance(got, BaseException)
                           else "export-where-store-refuses")
                reads.append(Read(key, verdict, f"the store: {type(want).__name__}: {want}"))
            elif isinstance(got, BaseException):
                reads.append(Read(key, "export-unreadable", f"{type(got).__name__}: {got}"))
            elif got.dtype != want.dtype or got.shape != want.shape or not bool(
                    _equal(got, want).all()):
                reads.append(Read(key, "export-differs",
                                  f"{got.dtype}{got.shape} against the store's "
                                  f"{want.dtype}{want.shape}"))
            else:
                reads.append(Read(key, "values-equal", ""))
    return reads


def _attempt(read: Callable[[], np.ndarray]) -> np.ndarray | Exception:
    try:
        return np.asarray(read())
    except Exception as err:  # judged by the caller
        return err


@functools.cache
def _s3_server():
    """One loopback S3 server (moto) for the cases read from S3, stopped at exit."""
    import atexit

    from support.servers import S3Server

    server = S3Server()
    atexit.register(server.stop)
    return server


@contextlib.contextmanager
def _source(case: Case, root: Path):
    """``(source, storage options)`` of the mutated copy at ``root``: itself, or uploaded
    to the loopback S3 server under a prefix of its own, deleted after the case, or served
    by a rogue S3 endpoint doing what the case's kind says."""
    if case.backend == "local":
        yield root, {}
        return
    if case.backend == "rogue":
        with _rogue(case, root) as source:
            yield source
        return
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    from support.servers import BUCKET, s3_options

    server = _s3_server()
    prefix = f"hostile/{root.parent.name}/{root.name}"
    keys = [f"{prefix}/{p.relative_to(root).as_posix()}" for p in root.rglob("*") if p.is_file()]
    server.upload_tree(root, prefix)
    try:
        yield f"s3://{BUCKET}/{prefix}", {"storage_options": s3_options(server.url)}
    finally:
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        for key in keys:
            backend.delete_object(BUCKET, key)


@contextlib.contextmanager
def _rogue(case: Case, root: Path):
    """The copy at ``root`` served by a rogue S3 endpoint of its own for the case."""
    from moczarr_store import config
    from support.rogue import RogueS3

    server = RogueS3(root.parent)
    if case.kind == "lie-length":
        server.behaviours[f"{root.name}/{case.target}"] = (str(case.param("how")), 1 << 30)
    elif case.kind == "endless-listing":
        server.behaviours["list"] = ("endless", 100)
    try:
        with config.set({"listing.seconds": LISTING_SECONDS}):
            yield f"s3://{server.bucket}/{root.name}", {"storage_options": server.options()}
    finally:
        server.stop()


def _repeated_warnings(caught: list) -> list[Read]:
    """A store warns about one thing once, however many reads meet it."""
    seen = Counter(str(w.message) for w in caught if issubclass(w.category, HiveWarning))
    return [Read("warnings", "repeated-warning", f"{n} times: {message[:300]}")
            for message, n in seen.items() if n > 1]


def failures(case: Case, reads: list[Read]) -> list[str]:
    """The bad reads; after a live commit (a clean new version), only moczarr's values are
    right: the fill value there is data lost. After a leaf seen stamped is cleared, its
    rows are a ``LeafMovedError`` naming it (never the fill value), the others moczarr's."""
    ok = ("values-equal",) if case.kind in ("commit-after-read", "clear-after-read") else OK
    return [f"{case}: {r.key} -> {r.verdict}: {r.detail}" for r in reads if r.verdict not in ok
            and not (case.kind == "clear-after-read" and r.verdict == "package-error"
                     and r.detail.startswith("LeafMovedError"))]


# -- explicit cases: every kind, every time ------------------------------------------------------


def _pick(fixture: str, kind: str, *needles: str) -> str:
    """The first target holding every needle and ending with the last."""
    return next(t for t in _targets(pristine(fixture), kind)
                if all(n in t for n in needles) and t.endswith(needles[-1]))


def _case(fixture: str, kind: str, needles: tuple[str, ...], chunking: str | int = "leaf",
          verify: str = "lazy", xarray: bool = False, aoi: str | None = None,
          export: bool = False, **params: object) -> Case:
    return Case(fixture, kind, _pick(fixture, kind, *needles), tuple(params.items()), chunking,
                verify, xarray, aoi, "local", export)


@functools.cache
def examples() -> tuple[Case, ...]:
    """The cases that always run: each mutation kind, on its most telling targets."""
    commit = ("attributes", "morton_hive_commit")
    swap, trunc, chunk = "type-swap", "truncate-json", "truncate-chunk"
    sharded = ("44411.zarr/", "/count/c/0")
    return (
        _case("bare_versioned", swap, ("morton_hive.json",), at=(), swap="deep"),
        _case("legacy", swap, ("444113.zarr/7/h_mean/zarr.json",), at=("fill_value",),
              swap="list", xarray=True),
        _case("legacy", swap, ("coverage.moc",), at=("ranges",), swap="null"),
        _case("legacy", swap, ("coverage.moc",), at=("ranges",), swap="object-to-list",
              chunking="inner", verify="open"),  # a root coverage listing nothing
        _case("windowed", swap, ("morton_hive.json",), at=("cell_order",), swap="string"),
        _case("bare_versioned", swap, ("444112.zarr/zarr.json",), at=(*commit, "current"),
              swap="list"),
        _case("legacy", swap, ("444111.zarr/zarr.json",), at=(*commit, "content_hashes"),
              swap="object-to-list"),
        _case("mixed", swap, ("444112.zarr/7/count/zarr.json",), at=("shape", 0),
              swap="huge-int"),
        _case("sharded", swap, ("44412.zarr/", "/count/zarr.json"),
              at=("codecs", 0, "configuration", "chunk_shape", 0), swap="float",
              chunking="inner"),
        _case("pyramid1", swap, ("4/4/all.zarr/", "/count/zarr.json"), at=("data_type",),
              swap="nan"),
        _case("windowed_explicit", swap, ("441_early.zarr/", "/4/h_mean/zarr.json"),
              at=("codecs", 0, "configuration", "index_codecs", 0, "configuration", "endian"),
              swap="null", chunking=2, verify="open"),  # zarr refuses it when it decodes
        _case("mixed", swap, ("444111.zarr/7/h_min/zarr.json",), at=("storage_transformers",),
              swap="list", chunking="shard"),  # zarr refuses it when it opens the array
        _case("bare_versioned", swap, ("444111.zarr/", "/7/h_variance/zarr.json"),
              at=("dimension_names", 0), swap="empty-string", xarray=True),  # off cells
        _case("sharded", swap, ("morton_hive.json",), at=("dataset", "short_name"),
              swap="object-to-list", chunking="inner"),  # no product name
        _case("pyramid1", swap, ("morton_hive.json",), at=("pyramid", "overview", "orders", 1),
              swap="string", chunking=2),  # the pyramid omitted: the warning names the file
        _case("ragged", swap, ("-41133.zarr/zarr.json",), at=(*commit, "coverage", "box", 2),
              swap="bool", chunking=2, aoi="-41133"),  # moczarr's AOI path panics (Rust)
        _case("windowed_explicit", swap, ("morton_hive.json",), at=("pyramid", "overview"),
              swap="null", chunking=2, verify="open"),  # levels and folds omitted: warned
        _case("legacy_versioned", swap, ("morton_hive.json",), at=("path_grouping",),
              swap="huge-int"),  # no leaf found: the error names the manifest's field
        _case("pyramid2", swap, ("4/4/1/all.pyramid.zarr/zarr.json",),
              at=("attributes", "zagg_column", "groups"), swap="float"),  # moczarr: TypeError
        _case("windowed_explicit", "delete", ("4/early.zarr",), chunking="inner"),
        _case("multiproduct", "delete", ("atl06_a/morton_hive.json",), chunking="shard"),
        _case("pyramid1_resweep", "delete", ("4/4/all.zarr",), chunking=2),  # o3's only one
        _case("legacy", "delete", ("-411331.zarr/7/count",), xarray=True),  # hashed, gone
        _case("sharded", "delete", ("44411.zarr/", "/7/zarr.json"), chunking=2, verify="open"),
        _case("pyramid1", swap, ("-4/1/1/3/all.zarr/zarr.json",), at=("attributes", "role"),
              swap="huge-int", verify="open", xarray=True),  # a non-template overview
        _case("legacy", trunc, ("444111.zarr/zarr.json",), keep=10),
        _case("sharded", trunc, ("-41133.zarr/", "/h_mean/zarr.json"), keep=100),
        _case("legacy", chunk, ("444113.zarr/7/h_mean/c/0",), keep=30),
        _case("sharded", chunk, sharded, keep=200, chunking="shard"),
        _case("ragged", chunk, ("44411.zarr/", "h_tdigest/c/0"), keep=60),
        # a zstd chunk passed through as it is (its leaf the only one, so the template)
        _case("mixed", chunk, ("-411331.zarr/7/h_mean/c/0",), keep=39, aoi="-411331"),
        # moczarr's AOI read fails on the box: its dtype is the clean hive's AOI dtype
        _case("mixed", swap, ("444112.zarr/zarr.json",), at=(*commit, "coverage", "box"),
              swap="bool", xarray=True, aoi="444112"),
        _case("sharded", "shard-index", sharded, entry=3, lie="wrap", fix_crc=True),
        _case("sharded", "shard-index", sharded, entry=1, lie="zero-length", fix_crc=True,
              chunking="inner"),
        _case("sharded", "shard-index", sharded, entry=0, lie="past-end", fix_crc=True,
              chunking="shard"),
        _case("sharded", "shard-index", sharded, entry=2, lie="overlap", fix_crc=True),
        _case("sharded", "shard-index", sharded, entry=4, lie="past-end", fix_crc=True,
              chunking=2),
        _case("sharded", chunk, sharded, keep=200, chunking=2),
        _case("sharded", "shard-index", sharded, entry=5, lie="wrap-length", fix_crc=False),
        _case("legacy", "rename-array", ("444113.zarr/7/count",), to="c", hashes=True),
        _case("bare_versioned", "rename-array", ("444111.zarr/", "/7/count"), to="zarr.json",
              hashes=True),
        _case("sharded", "rename-array", ("44411.zarr/", "/7/h_mean"), to="0", hashes=True,
              chunking="inner"),
        _case("legacy", "rename-array", ("444111.zarr/7/h_mean",), to="h.mean", hashes=True,
              xarray=True),
        _case("bare_versioned", "rename-array", ("444111.zarr/", "/7/h_max"), to="count.v2",
              hashes=False),
        _case("legacy", "rename-array", ("-411331.zarr/7/count",), to="morton", hashes=True),
        _case("legacy", "rename-array", ("-411331.zarr/7/h_min",), to="cell_ids", hashes=False),
        _case("pyramid1", swap, ("4/4/all.zarr/3/h_min/zarr.json",), at=("dimension_names",),
              swap="null", verify="open"),
        _case("legacy", "symlink", ("444113.zarr/7/count/c/0",)),
        _case("windowed_explicit", "symlink", ("4/late.zarr/2/count",), xarray=True),
        _case("pyramid2", "symlink", ("-4/1/1/all.pyramid.zarr/2/h_max",), chunking="shard",
              verify="open"),
        _case("pyramid2", "symlink", ("-4/all.zarr/1/h_max",), chunking="shard", verify="open"),
        _case("bare_versioned", "symlink", ("444112.zarr",)),
        _case("sharded", "symlink", ("44412.zarr/", "/7/h_max"), chunking="shard"),
        _case("legacy", "symlink", ("-411331.zarr/zarr.json",)),
        _case("legacy", "rewrite-after-read", ("444113.zarr/7/count",), how="values"),
        _case("legacy", "rewrite-after-read", ("444113.zarr/7/h_mean",), how="dtype"),
        _case("mixed", "rewrite-after-read", ("-411331.zarr/7/count",), how="endian"),
        _case("legacy", "rewrite-after-read", ("-411331.zarr/7/count",), how="unstamp"),
        # an unversioned leaf cleared after a first read (zagg rewriting it in place), under
        # every chunking: its rows an error naming it, never the fill value
        *(_case("legacy" if i % 2 else "mixed", "clear-after-read", ("444113.zarr",),
                chunking=chunking, template=bool(i % 2))
          for i, chunking in enumerate(CHUNKINGS)),
        # a coverage listing thousands of nodes, a few written: bounded in every chunking
        _case("legacy", "mass-absent", ("coverage.moc",), chunking="auto"),
        _case("multiproduct", "mass-absent", ("atl06_a/coverage.moc",), chunking="auto",
              xarray=True),
        _case("legacy", "mass-absent", ("coverage.moc",), chunking="shard"),
        _case("mixed", "mass-absent", ("coverage.moc",), chunking=2, verify="open"),
        _case("pyramid2", "mass-absent", ("coverage.moc",), chunking="auto"),  # overviews
        # a live commit between two reads: new version, stamp swapped, old version removed
        _case("bare_versioned", "commit-after-read", ("444112.zarr/", "/7/h_mean"),
              how="values"),
        _case("sharded", "commit-after-read", ("44412.zarr/", "/7/count"), how="zstd",
              chunking="inner"),
        _case("paged", "commit-after-read", ("4442.zarr/", "/8/h_max"), how="endian",
              chunking=2),
        _case("pyramid2", "commit-after-read", ("441.zarr/", "/4/h_max"), how="values",
              chunking="shard", verify="open"),
        _case("bare_versioned", "drift", ("-411331.zarr/", "/7/count"), how="dtype:float32"),
        _case("bare_versioned", "drift", ("-411342.zarr/", "/7/h_mean"), how="dtype:int32"),
        _case("bare_versioned", "drift", ("-411331.zarr/", "/7/h_max"), how="endian"),
        _case("sharded", "drift", ("-41133.zarr/", "/7/count"), how="fill", xarray=True),
        _case("bare_versioned", "drift", ("-411342.zarr/", "/7/h_min"), how="zstd"),
        _case("legacy", "drift", ("-411331.zarr/7/h_max",), how="shape"),
        # exported as mdim-refs too: a big-endian leaf (transcoded inline), a hashed array gone,
        # a shard index entry aliasing another (served and exported as zarr reads it)
        _case("bare_versioned", "drift", ("-411331.zarr/", "/7/h_max"), how="endian",
              chunking="shard", export=True),
        _case("legacy", "delete", ("-411331.zarr/7/count",), chunking="shard", export=True),
        _case("sharded", "shard-index", sharded, entry=2, lie="overlap", fix_crc=True,
              chunking="inner", export=True),
        # names a reference format cannot take verbatim, exported in every format
        _case("sharded", "rename-array", ("44411.zarr/", "/7/h_mean"), to="coun%74",
              hashes=True, export=True),
        _case("bare_versioned", "rename-array", ("444111.zarr/", "/7/h_mean"), to="COUNT",
              hashes=True, export=True),
        _case("legacy", "rename-array", ("444111.zarr/7/h_max",), to="a#b?c", hashes=False,
              chunking="shard", export=True),
        _case("bare_versioned", "rename-array", ("444111.zarr/", "/7/h_max"), to="bell\x07",
              hashes=True, export=True),
        _case("legacy", "rename-array", ("444111.zarr/7/h_min",), to="tab\tname",
              hashes=False, export=True),
        # on S3, where obstore refuses a key holding a control character
        replace(_case("pyramid2", "rename-array", ("-4/1/1/all.pyramid.zarr/3/count",),
                      to="bell\x07", hashes=True, chunking="shard", xarray=True),
                backend="s3"),
        # two leaves trade places: each stamp's coverage names its own node (span of 2:
        # one chunk holds both), a windowed leaf with another window's
        _case("bare_versioned", "misplace", ("444111.zarr",), chunking=2, export=True,
              partner="4/4/4/1/1/2/444112.zarr"),
        _case("windowed", "misplace", ("444111_2019.zarr",), verify="open",
              partner="4/4/4/1/1/2/444112_2019.zarr"),
        # documents past the size limit: a stamp (alone, and joined with a neighbour), an
        # array document, a product's manifest
        _case("bare_versioned", "oversize-json", ("444112.zarr/zarr.json",)),
        _case("bare_versioned", "oversize-json", ("444112.zarr/zarr.json",), chunking=2),
        _case("legacy", "oversize-json", ("444113.zarr/7/h_mean/zarr.json",), verify="open"),
        _case("multiproduct", "oversize-json", ("atl06_b/morton_hive.json",)),
        # a rogue endpoint: lengths that lie, listings that never end
        replace(_case("bare_versioned", "lie-length", ("444112.zarr/zarr.json",),
                      how="says-small"), backend="rogue"),
        replace(_case("sharded", "lie-length", sharded, how="says-big", chunking="shard"),
                backend="rogue"),
        replace(_case("legacy", "lie-length", ("morton_hive.json",), how="says-big"),
                backend="rogue"),
        replace(_case("multiproduct", "endless-listing", ("atl06_a/morton_hive.json",)),
                backend="rogue"),
        replace(_case("bare_versioned", "endless-listing", ("morton_hive.json",)),
                backend="rogue"),  # a hive read without listing: every value
    )


# -- report mode -------------------------------------------------------------------------------


def collect(n: int, seed: int | None = None,
            kinds: tuple[str, ...] = KINDS) -> dict[Case, list[Read]]:
    """The explicit cases and ``n`` generated ones (of mutation ``kinds``), each run once:
    the same ones every time (derandomized), or those of random seed ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    def run(case: Case) -> list[Read]:
        try:
            reads = run_case(case)
        except Exception as err:  # a bug of this harness: count it, keep going
            reads = [Read("harness", "harness-error", f"{type(err).__name__}: {err}")]
        print(f"[{len(seen) + 1}] {case}: {len(failures(case, reads))} bad reads",
              file=sys.stderr, flush=True)
        return reads

    seen: dict[Case, list[Read]] = {}
    for case in examples():
        seen[case] = run(case)

    @settings(max_examples=max(1, n), derandomize=seed is None, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(cases(kinds))
    def generate(case: Case) -> None:
        if case not in seen:
            seen[case] = run(case)

    if seed is not None:
        generate = seeded(seed)(generate)

    if n:
        generate()
    return seen


def table(seen: dict[Case, list[Read]]) -> str:
    """Verdict counts by mutation kind (reads), with the number of distinct cases."""
    columns = [*OK, *VIOLATIONS]
    if any(r.verdict == "harness-error" for reads in seen.values() for r in reads):
        columns.append("harness-error")
    head = ["kind", "cases", "red cases", *columns]
    rows = [head]
    for kind in [*KINDS, "total"]:
        runs = [(c, r) for c, r in seen.items() if kind in (c.kind, "total")]
        counts = {v: sum(1 for _, reads in runs for r in reads if r.verdict == v) for v in columns}
        red = sum(1 for c, reads in runs if failures(c, reads))
        rows.append([kind, str(len(runs)), str(red), *(str(counts[v]) for v in columns)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |"
             for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", type=int, metavar="N", required=True,
                        help="generated cases to run beside the explicit ones (0: those alone)")
    parser.add_argument("--seed", type=int, help="generate the cases of this random seed "
                        "(default: the same derandomized ones every run)")
    parser.add_argument("--kind", action="append", choices=KINDS,
                        help="generate mutations of this kind only (repeatable)")
    parser.add_argument("--violations", action="store_true", help="list every violation")
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))  # MemoryError, not OOM
    seen = collect(args.report, args.seed, tuple(args.kind or KINDS))
    print(table(seen))
    if args.violations:
        for case, reads in seen.items():
            for line in failures(case, reads):
                print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
