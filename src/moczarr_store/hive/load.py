"""Loading a product's levels: the source level's row domain, windows and schema, and the
checks that settle a level (``verify="open"``, a window scope, an AOI).

Opening a product's source level costs a constant number of requests: the manifest, the root
``coverage.moc``, and the template (``template.py``: the stamp of the first stamped object,
its cell-order group's ``zarr.json`` and one ``zarr.json`` per array). Then a bounded sample
of the writer runs (``runs.py``: at most 7 more stamps, and one ``zarr.json`` per array of
each further run seen). Other objects are not touched unless every stamp must be known:
``verify="open"`` (moczarr's exact debris semantics), or a view scoped to one window of a
windowed product (whose rows are the nodes stamped in it); then the stamps of nodes without
a directory are not read once listings show the level sparse (``presence.py``).

The functions that change a level say so: ``fill_schema`` fills in its schema,
``drop_unstamped`` and ``drop_outside_aoi`` drop nodes from its domain.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..diagnostics import KINDS
from ..errors import (
    CannotWalk,
    HiveFormatError,
    HiveWarning,
    LeafSchemaError,
    NoCoverageError,
    UnusableCoverage,
)
from ..tunables import setting
from . import coverage as _coverage_module
from .aoi import Cells, overlaps
from .arraymeta import ArrayMeta
from .coverage import COVERAGE_NAME, parse_root_coverage
from .jsonio import read_document
from .leaves import PROVENANCE, Leaf, LeafCache
from .level import COORDINATE_NAMES, WINDOW_COORDINATES, Level
from .manifest import Manifest
from .paths import short
from .presence import SAMPLE, Presence
from .runs import learn_runs
from .template import find_template, warn_dangling, warn_refused
from .walk import walk_leaves
from .windows import check_window, explicit_labels, known_labels, labels_between, schedule

if TYPE_CHECKING:
    from ..io.reader import HiveIO

VERIFY_BATCH = 4096
MISSING_NAMES = 5  # the listed-but-missing objects a level names (it counts them all)


def _join(root: str, rel: str) -> str:
    return f"{root}/{rel}" if root else rel


def _warn(message: str) -> None:
    warnings.warn(message, HiveWarning, stacklevel=3)


async def _coverage(
    backend: HiveIO, root: str, manifest: Manifest, name: str = COVERAGE_NAME
) -> tuple[np.ndarray, dict[str, Any]] | None:
    """The node ranks and envelope of coverage document ``name`` (the root MOC, or a
    source order's); ``None`` (with a warning) if the root MOC is unusable. A source
    order's document has no walk to fall back on (a walk cannot tell the orders apart
    without every stamp): missing or unusable, it raises :class:`HiveFormatError`.

    Cost: one ranged GET of at most the coverage byte cap (plus one byte)."""
    where = _join(root, name)
    payload = await read_document(backend, where, _coverage_module.DEFAULT_MAX_COVERAGE_BYTES)
    if payload is None:
        reason = "is missing"
    else:
        try:
            return parse_root_coverage(payload, manifest.shard_order, where)
        except ValueError as err:  # UnusableCoverage and MalformedMetadataError included
            reason = f"is unusable ({err})"
    if name != COVERAGE_NAME:
        raise HiveFormatError(f"coverage {where}, which {manifest.where} names for a source "
                              f"order, {reason}")
    _warn(f"root coverage {where} {reason}; discovering nodes with the digit-tree walk")
    return None


async def _walk(backend: HiveIO, root: str, manifest: Manifest,
                why: str) -> dict[int, set[str | None]]:
    """The digit-tree walk; where listing fails, an error saying why it was needed."""
    try:
        return await walk_leaves(backend, root, manifest.shard_order, manifest.path_grouping)
    except Exception as err:  # a backend that cannot list (plain HTTP), or a failed LIST
        detail = (str(err).splitlines() or [type(err).__name__])[0]
        raise CannotWalk(
            f"{backend}: {why}, and the hive cannot be listed to walk its digit tree "
            f"({detail}); a backend that cannot list (plain HTTP) needs a usable root "
            f"{_join(root, COVERAGE_NAME)}"
        ) from err


def _walked_ranks(walked: dict[int, set[str | None]], window: str | None,
                  windowed: bool) -> np.ndarray:
    ranks = [r for r, labels in walked.items() if (window in labels) or (windowed and not window)]
    return np.array(sorted(ranks), dtype=np.uint64)


async def drop_unstamped(backend: HiveIO, leaves: LeafCache, level: Level) -> None:
    """Read every object's stamp; drop from ``level`` (in place) the nodes with no
    readable object in any window, and record them in ``level.dropped`` (debris, refused
    or dangling objects, by name) and ``level.missing`` (listed objects that do not exist:
    a count and the first few names, so a coverage listing millions costs no names).
    Cost: one stamp GET per (node, window) object that may exist, in batches growing to
    ``VERIFY_BATCH``; once the stamps read mostly absent, the nodes without a directory
    are learned from listings (:class:`~.presence.Presence`: one LIST per directory that
    exists) and their stamps are not read.

    On overview and column levels every object's provenance (role, zagg_overview or
    zagg_column) is kept in the group attrs under ``zagg_objects``.
    """
    keep = np.zeros(level.n_nodes, dtype=bool)
    dropped: list[str] = []
    missing: list[str] = []  # the first MISSING_NAMES of them
    n_missing = 0
    dangling: list[tuple[Leaf, str]] = []
    refused: list[tuple[str, str]] = []
    provenance: dict[str, dict[str, Any]] = {}
    cell_order = level.cell_order
    gaps = bool(level.windows or level.window or level.fold)  # an absent object is no damage
    windows = level.windows or (None,)

    async def check(index: int, window: str | None, path: str) -> bool:
        """Whether the object has no stamp."""
        leaf = await leaves.resolve(path, backend.get)
        if leaf.state == "linked":  # that object is refused (and its reads), not the hive
            refused.append((path, KINDS["linked"]))
            dropped.append(path)
            return False
        if leaf.state != "stamped":
            if leaf.state == "debris":
                dropped.append(path)
            elif not gaps:
                note_missing(1, [path])
            return leaf.state == "absent"
        reason = level.refusal(leaf, index, window)
        if reason is not None:
            refused.append((path, reason[1]))
            dropped.append(path)
            return False
        if leaf.current is not None:
            group = f"{leaf.data_prefix}/{cell_order}"
            if await read_document(backend, f"{group}/zarr.json") is None:
                dangling.append((leaf, group))
                dropped.append(path)
                return False
        keep[index] = True
        if level.artifact != "source":
            attrs = level.group_attrs if path == level.template else (leaf.attrs or {})
            provenance[path] = {"object": path, **{k: attrs[k] for k in PROVENANCE if k in attrs}}
        return False

    def note_missing(count: int, names: list[str]) -> None:
        nonlocal n_missing
        n_missing += count
        missing.extend(names[:MISSING_NAMES - len(missing)])

    # this level's node indices only: the drop below renumbers them
    presence = Presence(setting("cache.listed_runs"))
    start, size = 0, SAMPLE
    while start < level.n_nodes:
        stop = min(level.n_nodes, start + size)
        answer = await presence.gone(backend, level, start, stop - 1)
        nodes = range(start, stop) if answer is None else start + np.flatnonzero(~answer[0])
        pairs = [(int(i), w, level.object_path(int(i), w)) for i in nodes for w in windows]
        absent = await asyncio.gather(*(check(*pair) for pair in pairs))
        if answer is None:
            presence.tally(level.path, len(absent), sum(absent))
        elif not gaps:  # no directory: no object, as a stamp read absent says
            gone = start + np.flatnonzero(answer[0])
            room = max(0, MISSING_NAMES - len(missing))
            note_missing(len(gone), [level.object_path(int(i)) for i in gone[:room]])
        start, size = stop, min(2 * size, VERIFY_BATCH)
    warn_dangling(level, sorted(dangling, key=lambda found: found[0].path))
    warn_refused(level.path, sorted(refused))
    level.node_ranks = level.node_ranks[keep]
    level.dropped = sorted(dropped)
    level.missing, level.missing_names = n_missing, sorted(missing)
    if provenance:
        level.group_attrs["zagg_objects"] = [provenance[p] for _, _, p in level.object_pairs()
                                             if p in provenance]


async def _window_labels(backend: HiveIO, level: Level, envelope: dict[str, Any] | None,
                         walked: dict[int, set[str | None]] | None) -> list[str]:
    manifest = level.manifest
    labels = explicit_labels(manifest)
    why = "neither the manifest nor the root coverage names its windows"
    if labels is None and envelope is not None:
        try:
            labels = labels_between(schedule(manifest), envelope.get("time_range"),
                                    _join(level.root, COVERAGE_NAME))
        except UnusableCoverage as err:
            why = f"its root coverage's windows are unusable ({err})"
    if labels is None:
        if walked is None:
            _warn(f"product {level.product!r}: {why}; discovering them with the digit-tree walk")
            walked = await _walk(backend, level.root, manifest, f"product {level.product!r}: {why}")
        labels = sorted({label for found in walked.values() for label in found if label})
    return labels


async def load_source(
    backend: HiveIO,
    leaves: LeafCache,
    name: str,
    root: str,
    manifest: Manifest,
    verify: str,
    window: str | None = None,
    aoi: Cells | None = None,
    order: tuple[int, str] | None = None,
) -> tuple[Level, np.ndarray | None]:
    """The product's source level, loaded and settled, and the root MOC's node ranks
    (``None``: walked). ``order``: ``(cell order, coverage document)`` of one source order
    of a product whose leaves sit at several (``Manifest.source_orders``): the level of
    the shards that document lists, at that order."""
    windowed = schedule(manifest) is not None
    scoped = window if windowed else None
    cell_order, coverage_name = order or (manifest.cell_order, COVERAGE_NAME)
    coverage = await _coverage(backend, root, manifest, coverage_name)
    walked = None
    if coverage is None:
        walked = await _walk(
            backend, root, manifest,
            f"root coverage {_join(root, COVERAGE_NAME)} is missing or unusable",
        )
        ranks, envelope, source = _walked_ranks(walked, scoped, windowed), None, "walk"
    else:
        (ranks, envelope), source = coverage, "moc"
    level = Level(
        name, root, manifest, cell_order, manifest.shard_order, ranks, source,
        window=scoped,
    )
    if scoped is not None:
        where = _join(root, COVERAGE_NAME)
        check_window(scoped, known_labels(manifest, envelope, walked, where), name)
    if windowed and scoped is None:
        level.windows = tuple(await _window_labels(backend, level, envelope, walked))
    try:
        await fill_schema(backend, leaves, level, aoi)
    except NoCoverageError as err:
        raise _named_time_range(err, level, envelope) from None
    drop_outside_aoi(level, aoi)
    if verify == "open" or scoped is not None:
        await drop_unstamped(backend, leaves, level)
    if verify == "open" and source == "moc" and order is None:
        await warn_if_stale(backend, leaves, level, ranks)
    return level, (ranks if source == "moc" else None)


def _named_time_range(err: NoCoverageError, level: Level,
                      envelope: dict[str, Any] | None) -> NoCoverageError:
    """``err`` naming the root coverage's ``time_range`` when the windows no leaf was found
    in are the ones it names (a range in year 9999, say, names none the writer made)."""
    time_range = (envelope or {}).get("time_range")
    if not level.windows or time_range is None or explicit_labels(level.manifest) is not None:
        return err
    shown = ", ".join(level.windows[:3]) + (", ..." if len(level.windows) > 3 else "")
    return NoCoverageError(
        f"{err}; the {len(level.windows):,} window(s) looked in ({shown}) are those the "
        f"time_range {short(time_range)} of {_join(level.root, COVERAGE_NAME)} names")


async def warn_if_stale(
    backend: HiveIO, leaves: LeafCache, level: Level, listed: np.ndarray
) -> None:
    """Warn (once) when stamped leaves exist that the root MOC does not list."""
    manifest = level.manifest
    try:
        walked = await _walk(backend, level.root, manifest, "checking for unlisted leaves")
    except CannotWalk as err:
        detail = (str(err.__cause__).splitlines() or ["cannot list"])[0]
        _warn(
            f"{level.path}: the root coverage {_join(level.root, COVERAGE_NAME)} was not "
            f"checked for unlisted stamped leaves: {backend} cannot be listed ({detail})"
        )
        return
    unlisted = np.setdiff1d(_walked_ranks(walked, level.window, bool(level.windows)), listed)
    probe = Level(level.product, level.root, manifest, level.cell_order, level.node_order,
                  unlisted, "walk", windows=level.windows, window=level.window)
    pairs = probe.object_pairs()
    found = await asyncio.gather(*(leaves.resolve(p, backend.get) for _, _, p in pairs))
    stale = sorted(leaf.path for leaf in found if leaf.state == "stamped")
    if stale:
        _warn(
            f"stale root coverage at {_join(level.root, COVERAGE_NAME)}: stamped leaves "
            f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''} ({len(stale)}) are not "
            "listed, so they are not served; regenerate the root coverage"
        )


def drop_outside_aoi(level: Level, aoi: Cells | None) -> None:
    """Drop from ``level`` (in place) the nodes whose subtrees miss the AOI (after the
    schema was found). No I/O."""
    if aoi is None:
        return
    level.uncut_ranks, level.node_ranks = level.node_ranks, within_aoi(level, aoi).node_ranks
    if not level.n_nodes:
        _warn(f"{level.path}: the AOI intersects no coverage; the level has 0 cells")


def within_aoi(level: Level, aoi: Cells | None) -> Level:
    """The level as the AOI will cut it (a copy; ``level`` itself when there is no AOI)."""
    if aoi is None:
        return level
    return replace(level, node_ranks=level.node_ranks[overlaps(level.node_ranks,
                                                                 level.node_order, aoi)])


def _check_coordinates(level: Level, leaf: Leaf, stored: dict[str, ArrayMeta]) -> None:
    """A stored ``morton`` / ``cell_ids`` array is the cell coordinate the view computes in
    its place (uint64, one value per cell, along ``cells``); an array of that name holding
    anything else would be silently replaced, so it is refused, naming it and the field."""
    for name, meta in stored.items():
        for key, got, want in (("data_type", meta.data_type, "uint64"),
                               ("shape", list(meta.shape), [level.cells_per_node]),
                               ("dimension_names", list(meta.dimension_names), ["cells"])):
            if got != want:
                raise LeafSchemaError(
                    f"{leaf.data_prefix}/{level.cell_order}/{name}/zarr.json: field {key!r} "
                    f"{short(got)} is not {want!r}: a leaf array named {name!r} "
                    "must be the cell coordinate the store computes in its place"
                )


def _drop_unplaced(level: Level, leaf: Leaf) -> None:
    """Omit, with one warning, each template array with no ``cells`` axis that is no
    dimension coordinate (one axis, named as the array, as a raster's ``time``): it lies
    along no axis of the level, and serving the template's values would present one
    leaf's as the product's (moczarr broadcasts them along ``cells``)."""
    unplaced = {
        name: list(meta.dimension_names) for name, meta in level.arrays.items()
        if "cells" not in meta.dimension_names and meta.dimension_names != (name,)
    }
    for name in unplaced:
        del level.arrays[name]
    if unplaced:
        where = f"{leaf.data_prefix or leaf.path}/{level.cell_order}"
        listed = ", ".join(f"{name!r} along {short(dims)}" for name, dims in unplaced.items())
        _warn(f"{where}: {listed}: no 'cells' axis, and no dimension coordinate (as a "
              "raster's 'time'); omitted")


async def fill_schema(
    backend: HiveIO, leaves: LeafCache, level: Level, aoi: Cells | None = None
) -> bool:
    """Fill in ``level``'s schema (in place), read from the first stamped object in
    scope (the AOI's nodes; the whole domain when none of them is stamped, as moczarr's empty
    result does), and learn the writer runs' encodings (``runs.py``); ``False`` if it has
    no stamped object."""
    scoped = within_aoi(level, aoi)
    found, searched = await find_template(backend, leaves, scoped)
    if found is None and scoped is not level:
        found, searched = await find_template(backend, leaves, level)
    if found is None:
        if level.artifact != "source":
            return False
        if level.coverage_source == "moc":
            listed = f"listed by the root coverage {_join(level.root, COVERAGE_NAME)}"
            hint = "; if leaves were written since it was made, regenerate it"
        else:
            listed, hint = "found by the digit-tree walk", ""
        if (grouping := level.manifest.path_grouping) != 1:  # zagg writes 1: name the cause
            hint += (f"; leaves were looked for at {grouping} digits per directory, the "
                     f"path_grouping of {level.manifest.where}")
        raise NoCoverageError(
            f"product {level.product!r} at {level.root or '/'}: no committed leaf among "
            f"the {level.n_nodes:,} nodes {listed} ({searched}), so it has no schema{hint}"
        )
    leaf, level.group_attrs, level.arrays = found
    _check_coordinates(level, leaf, {n: level.arrays.pop(n) for n in COORDINATE_NAMES
                                     if n in level.arrays})
    _drop_unplaced(level, leaf)
    clash = sorted(set(level.arrays) & set(WINDOW_COORDINATES)) if level.windows else []
    if clash:
        raise HiveFormatError(
            f"{leaf.data_prefix}/{level.cell_order}: array {clash[0]!r} clashes with the "
            "window coordinate of the same name"
        )
    level.template, level.template_run, level.template_data = leaf.path, leaf.run, (
        leaf.data_prefix or "")
    level.encodings = await learn_runs(backend, leaves, scoped, leaf, level.arrays)
    if level.artifact != "source":
        attrs = leaf.attrs or {}
        level.group_attrs = {**level.group_attrs, **{k: attrs[k] for k in PROVENANCE if k in attrs}}
    return True
