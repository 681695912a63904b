"""A product's levels (cell orders): row domain, windows and template leaf schema.

Opening a product's source level costs a constant number of requests: the manifest, the root
``coverage.moc``, the stamp of the first stamped leaf, its cell-order group's ``zarr.json``
and one ``zarr.json`` per array (named by the stamp's content hashes, else by one listing of
the group). If the first listed leaves are not stamped, the template search stays
bounded (``find_template``): no request per absent shard. Then a bounded sample of the writer
runs (``runs.py``: at most 7 more stamps, and one ``zarr.json`` per array of each further run
seen). Other leaves are not touched unless every stamp must be known: ``verify="open"``
(moczarr's exact debris semantics), or a view scoped to one window of a windowed product
(whose rows are the shards stamped in it).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ..errors import (
    CannotWalk,
    HiveFormatError,
    HiveWarning,
    LeafSchemaError,
    NoCoverageError,
    OutsideRootError,
    UnusableCoverage,
)
from . import coverage as _coverage_module
from .aoi import Cells, overlaps
from .coverage import COVERAGE_NAME, parse_root_coverage
from .ids import rank_to_decimal
from .jsonio import load_object, object_field, read_document
from .leaves import Leaf, LeafCache
from .manifest import Manifest
from .paths import (
    leaf_path,
    node_name_problem,
    node_path,
    requestable,
    short,
    validate_node_name,
)
from .runs import RunEncoding, learn_runs, probe_paths
from .walk import existing_objects, walk_leaves
from .windows import bounds, explicit_labels, labels_between, schedule

COORDINATE_NAMES = ("morton", "cell_ids")
WINDOW_COORDINATES = ("window", "window_start", "window_end")
TEMPLATE_BATCH = 8
TEMPLATE_MAX_BATCH = 512
DEFAULT_TEMPLATE_PROBES = 4096
"""Objects probed for a template, at most, on a backend that cannot list (plain HTTP)."""
VERIFY_BATCH = 4096


@dataclass(eq=False)  # identity: a level is settled in place, and numpy fields do not compare
class Level:
    """One cell order of a product: rows are the subtrees of its objects' nodes.

    The source level's objects are the leaves (nodes at the shard order); an overview
    level's are ``all.zarr`` / ``{window}.zarr`` at ancestor nodes; a column level's are
    the ``all.pyramid.zarr`` / ``{window}.pyramid.zarr`` siblings of the leaves.
    """

    product: str
    root: str
    manifest: Manifest
    cell_order: int
    node_order: int
    shard_ranks: np.ndarray  # ranks of the objects' nodes at node_order, ascending
    coverage_source: str
    artifact: str = "source"  # "source" | "overview" | "column"
    fold: bool = False  # the all-time folds (all.zarr) of a windowed product
    windows: tuple[str, ...] = ()  # the window axis (unscoped windowed products)
    window: str | None = None  # the one window every object is read from (scoped)
    group_attrs: dict = field(default_factory=dict)
    arrays: dict[str, dict] = field(default_factory=dict)
    template: str = ""
    template_run: str = ""
    template_data: str = ""  # where the template's arrays live (its data prefix)
    encodings: list[RunEncoding] = field(default_factory=list)  # the template's, then runs'
    dropped: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The level's group in the virtual hierarchy."""
        return f"{self.product}/{'all_time/' if self.fold else ''}o{self.cell_order}"

    @property
    def n_shards(self) -> int:
        return int(self.shard_ranks.size)

    @property
    def depth(self) -> int:
        return self.cell_order - self.node_order

    @property
    def cells_per_shard(self) -> int:
        return 4**self.depth

    def leaf_path(self, index: int, window: str | None = None) -> str:
        """Hive-relative path of the ``index``-th object (in ``window``)."""
        decimal = rank_to_decimal(int(self.shard_ranks[index]), self.node_order)
        window = window or self.window
        stem = "all" if self.fold or window is None else window
        if self.artifact == "overview":
            rel = f"{node_path(decimal)}/{stem}.zarr"
        elif self.artifact == "column":
            node = leaf_path(decimal, None, self.manifest.path_grouping).rpartition("/")[0]
            rel = f"{node}/{stem}.pyramid.zarr"
        else:
            rel = leaf_path(decimal, window, self.manifest.path_grouping)
        return f"{self.root}/{rel}" if self.root else rel

    def summary(self) -> dict:
        """``attrs["morton_hive"]`` as moczarr publishes it for this order."""
        return {**self.manifest.summary(), "cell_order": self.cell_order,
                "shard_order": self.node_order}

    def window_bounds(self) -> list[tuple[datetime, datetime] | None]:
        return [bounds(self.manifest, label) for label in self.windows]

    def leaf_pairs(self) -> Iterator[tuple[int, str]]:
        """``(node index, object path)`` of every object the view may read, in order."""
        for index in range(self.n_shards):
            for window in self.windows or (None,):
                yield index, self.leaf_path(index, window)


@dataclass
class Product:
    """A product's levels: ``levels`` are read (the source first), ``pending`` are declared
    overviews whose schemas are read when first needed."""

    name: str
    root: str
    manifest: Manifest
    levels: list[Level]
    pending: list[Level] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._declared = [lv.path for lv in (*self.levels, *self.pending)]

    def settle(self, level: Level, kept: bool) -> None:
        """A pending level was read: keep it (in declared order) or drop it."""
        self.pending.remove(level)
        if kept:
            rank = self._declared.index
            self.levels = sorted([*self.levels, level], key=lambda lv: rank(lv.path))


def _join(root: str, rel: str) -> str:
    return f"{root}/{rel}" if root else rel


def _warn(message: str) -> None:
    warnings.warn(message, HiveWarning, stacklevel=3)


async def _coverage(backend, root: str, manifest: Manifest) -> tuple[np.ndarray, dict] | None:
    """The root MOC's shard ranks and envelope; ``None`` (with a warning) if unusable.

    Cost: one ranged GET of at most the coverage byte cap (plus one byte)."""
    where = _join(root, COVERAGE_NAME)
    payload = await read_document(backend, where, _coverage_module.DEFAULT_MAX_COVERAGE_BYTES)
    if payload is None:
        reason = "is missing"
    else:
        try:
            return parse_root_coverage(payload, manifest.shard_order, where)
        except ValueError as err:  # UnusableCoverage and MalformedMetadataError included
            reason = f"is unusable ({err})"
    _warn(f"root coverage {where} {reason}; discovering shards with the digit-tree walk")
    return None


async def _walk(backend, root: str, manifest: Manifest, why: str) -> dict[int, set]:
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


def _walked_ranks(walked: dict[int, set], window: str | None, windowed: bool) -> np.ndarray:
    ranks = [r for r, labels in walked.items() if (window in labels) or (windowed and not window)]
    return np.array(sorted(ranks), dtype=np.uint64)


async def _read_json(backend, key: str) -> dict | None:
    """A hive ``zarr.json`` (or other JSON object), ``None`` when absent: one ranged GET
    of at most the document cap."""
    payload = await read_document(backend, key)
    return None if payload is None else load_object(payload, key)


def _hashed_names(stamp: dict, order: str) -> tuple[list[str] | None, str | None]:
    """Array names the stamp's ``content_hashes.arrays`` keys give for group ``order``
    (keys ``{order}/{name}``; deeper keys are not arrays of the group), and why the hashes
    cannot name them (``None``: they are absent or empty, which is no defect)."""
    hashes = stamp.get("content_hashes")
    arrays = hashes.get("arrays") if isinstance(hashes, dict) else None
    if hashes is not None and not isinstance(hashes, dict):
        return None, "is not a JSON object"
    if arrays is not None and not isinstance(arrays, dict):
        return None, "field 'arrays' is not a JSON object"
    if not arrays:
        return None, None
    names = set()
    for key, digest in arrays.items():
        parts = key.split("/")
        if not isinstance(digest, str):
            return None, f"value of {short(key)} is not a string"
        if any(part in ("", ".", "..") for part in parts):
            return None, f"key {short(key)} has an empty or dot segment"
        if len(parts) == 2 and parts[0] == order:
            names.add(parts[1])
    return sorted(names), None


async def _sampled(backend, leaves: LeafCache, path: str) -> Leaf | None:
    """The object's leaf with its stamp, ``None`` when it cannot be read."""
    try:
        return await leaves.resolve_full(path, backend.get)
    except ValueError:  # a malformed stamp: reported when the object is read
        return None


async def _array_names(
    backend, leaves: LeafCache, leaf: Leaf, group: str, level: Level
) -> tuple[list[str], bool]:
    """Array names in a leaf's cell-order group: its stamp's content hashes name them
    (no request); a stamp without usable ones costs one listing (with a warning when
    they are malformed). Where the group cannot be listed (plain HTTP), the first stamp
    of the writer-run sample that names arrays names them, with a warning (a zagg 0.38
    template records none): up to ``RUN_PROBES - 1`` stamp GETs. The flag says whether the
    names came from a stamp."""
    names, problem = _hashed_names(leaf.stamp, group.rsplit("/", 1)[-1])
    if names is not None:
        return names, True
    if problem is not None:
        _warn(f"leaf {leaf.path}: commit stamp field 'content_hashes' {problem}; listing "
              f"{group} to name its arrays")
    try:
        dirs, _ = await backend.list_dir(group)
    except OutsideRootError:
        raise
    except Exception as err:  # backends that cannot list (plain HTTP)
        detail = (str(err).splitlines() or [type(err).__name__])[0]
        sample = await asyncio.gather(*(_sampled(backend, leaves, p) for p in probe_paths(level)))
        for other in sample:
            named = _hashed_names(other.stamp, group.rsplit("/", 1)[-1])[0] if other else None
            if named and other is not None:
                _warn(f"leaf {leaf.path}: its commit stamp names no arrays and {group} cannot "
                      f"be listed ({detail}); presenting the arrays leaf {other.path}'s "
                      "commit stamp names")
                return named, True
        raise HiveFormatError(
            f"leaf {leaf.path}: cannot list {group} ({detail}), and neither its commit stamp "
            "nor those of the writer-run sample name its arrays (content_hashes)"
        ) from err
    return sorted(dirs), False


async def _valid_names(backend, names: list[str], group: str) -> list[str]:
    """``names`` that are zarr node names. Another name is refused (naming it) if it is
    an array, or cannot even be looked up; one that is merely not an array is skipped.
    Cost: one GET per invalid name that can be looked up; none for valid names."""
    bad = [name for name in names if node_name_problem(name) is not None]
    for name in bad:
        if not requestable(name):
            validate_node_name(name, group)
    metas = await asyncio.gather(*(_read_json(backend, f"{group}/{n}/zarr.json") for n in bad))
    for name, meta in zip(bad, metas, strict=True):
        if meta is not None and meta.get("node_type") == "array":
            validate_node_name(name, group)
    return [name for name in names if name not in bad]


Template = tuple[Leaf, dict, dict[str, dict]]


async def _first_template(
    backend, leaves: LeafCache, batch: list[str], level: Level
) -> Template | None:
    """The first stamped object of ``batch`` (stamps read concurrently) whose cell-order
    group exists: its leaf, group attributes and array metadata by name (the stored
    coordinates included). The group's listing, where the backend lists, is the authority
    on its arrays (as for moczarr): it is made concurrently with the reads of the arrays
    the stamp names, so it adds a request, not a round trip."""
    resolved = await asyncio.gather(*(leaves.resolve_full(p, backend.get) for p in batch))
    for leaf in resolved:
        if leaf.state != "stamped":
            continue
        group = f"{leaf.data_prefix}/{level.cell_order}"
        group_meta = await _read_json(backend, f"{group}/zarr.json")
        if group_meta is None:
            warn_dangling(leaf, group)
            continue
        attrs = object_field(group_meta, "attributes", f"{group}/zarr.json")
        names, hashed = await _array_names(backend, leaves, leaf, group, level)
        if hashed:
            arrays, listed = await asyncio.gather(_group_arrays(backend, group, names),
                                                  _listing(backend, group))
            arrays = await _reconcile(backend, leaf, group, arrays, listed)
        else:
            arrays = await _group_arrays(backend, group, names)
        return leaf, attrs, {n: m for n, m in arrays.items() if m is not None}
    return None


async def _group_arrays(backend, group: str, names: list[str]) -> dict[str, dict | None]:
    """The array metadata of ``names`` in ``group`` (``None``: no array by that name)."""
    names = await _valid_names(backend, names, group)
    metas = await asyncio.gather(*(_read_json(backend, f"{group}/{n}/zarr.json") for n in names))
    return {n: m if m is not None and m.get("node_type") == "array" else None
            for n, m in zip(names, metas, strict=True)}


async def _listing(backend, group: str) -> list[str] | None:
    """The directories in ``group`` (one LIST); ``None`` where the backend cannot list."""
    try:
        dirs, _ = await backend.list_dir(group)
    except OutsideRootError:
        raise
    except Exception:  # plain HTTP: the stamp's content hashes alone name the arrays
        return None
    return dirs


async def _reconcile(backend, leaf: Leaf, group: str, hashed: dict[str, dict | None],
                     listed: list[str] | None) -> dict[str, dict | None]:
    """The arrays of ``group``: the listing's (``listed``; ``None`` where the backend
    cannot list, and then the stamp's), with a warning naming what the stamp's content
    hashes name that the group does not hold, or omit that it does. Cost: one GET per
    array the stamp does not name."""
    found: dict[str, dict | None] = {n: m for n, m in hashed.items() if m is not None}
    missing = sorted(n for n, m in hashed.items() if m is None)
    if listed is None:
        if missing:
            _warn(f"leaf {leaf.path}: commit stamp names arrays {', '.join(map(short, missing))} "
                  f"that {group} does not hold, and it cannot be listed; they are not presented")
        return found
    extra = await _group_arrays(backend, group, sorted(set(listed) - set(hashed)))
    unnamed = sorted(n for n, m in extra.items() if m is not None)
    problems = [f"names arrays {', '.join(map(short, missing))} that {group} does not hold"
                ] if missing else []
    if unnamed:
        problems.append(f"does not name arrays {', '.join(map(short, unnamed))} that it holds")
    if problems:
        _warn(f"leaf {leaf.path}: commit stamp {' and '.join(problems)}; the arrays are "
              "those the listing names")
    return {**found, **{n: extra[n] for n in unnamed}}


async def find_template(
    backend, leaves: LeafCache, level: Level, *, max_probes: int | None = None
) -> tuple[Template | None, str]:
    """The first stamped object of the level (in domain order) whose cell-order group
    exists, and (when there is none) what was searched, for the error.

    Cost: a clean hive's first object is stamped (one stamp GET). Else one batch of
    ``TEMPLATE_BATCH`` stamps; then, where the backend lists, one LIST per directory on
    the way to existing objects (``walk.existing_objects``) and one stamp per existing
    object, in growing concurrent batches; where it cannot (plain HTTP), stamps of the
    next listed objects in growing batches, ``max_probes`` (default
    ``DEFAULT_TEMPLATE_PROBES``) in all.
    """
    limit = DEFAULT_TEMPLATE_PROBES if max_probes is None else max_probes
    total = level.n_shards * max(1, len(level.windows))
    pairs = (path for _, path in level.leaf_pairs())
    probed: set[str] = set()
    for size in (1, TEMPLATE_BATCH):
        batch = [path for _, path in zip(range(size), pairs, strict=False)]
        probed.update(batch)
        found = await _first_template(backend, leaves, batch, level)
        if found is not None or len(batch) < size:
            return found, f"all {total:,} objects probed"
    try:
        found, existing = await _walked_template(backend, leaves, level, probed)
    except _ListingFailed as err:
        note = f"the backend cannot be listed to find existing objects ({err})"
    else:
        return found, (
            f"the first {len(probed):,} of {total:,} objects probed, then the digit-tree "
            f"walk found {existing:,} other existing objects, none committed"
        )
    size = TEMPLATE_BATCH
    while len(probed) < limit:
        size = min(2 * size, TEMPLATE_MAX_BATCH, limit - len(probed))
        batch = [path for _, path in zip(range(size), pairs, strict=False)]
        probed.update(batch)
        found = await _first_template(backend, leaves, batch, level)
        if found is not None or len(batch) < size:
            return found, f"all {total:,} objects probed"
    return None, f"the first {len(probed):,} of {total:,} objects probed (the probe limit); {note}"


class _ListingFailed(Exception):
    """A LIST of the template walk failed (a backend that cannot list, or an error)."""


async def _walked_template(
    backend, leaves: LeafCache, level: Level, probed: set[str]
) -> tuple[Template | None, int]:
    """The template among the level's objects that exist, found by walking the digit
    tree in domain order, and how many existing objects were probed."""
    grouping = 1 if level.artifact == "overview" else level.manifest.path_grouping
    walk = existing_objects(backend, level.root, level.shard_ranks, level.node_order, grouping)
    batch: list[str] = []
    size, seen = TEMPLATE_BATCH, 0
    async with aclosing(walk):
        while True:
            try:
                rank, names = await anext(walk)
            except StopAsyncIteration:
                break
            except Exception as err:
                detail = (str(err).splitlines() or [type(err).__name__])[0]
                raise _ListingFailed(detail) from err
            index = int(np.searchsorted(level.shard_ranks, np.uint64(rank)))
            for window in level.windows or (None,):
                path = level.leaf_path(index, window)
                if path.rsplit("/", 1)[-1] in names and path not in probed:
                    batch.append(path)
            if len(batch) >= size:
                seen += len(batch)
                found = await _first_template(backend, leaves, batch, level)
                if found is not None:
                    return found, seen
                batch, size = [], min(2 * size, TEMPLATE_MAX_BATCH)
    seen += len(batch)
    return await _first_template(backend, leaves, batch, level), seen


def warn_dangling(leaf: Leaf, group: str) -> None:
    what = (
        f"points at version {leaf.current!r}, which is missing"
        if leaf.current
        else f"has no group {group}"
    )
    warnings.warn(
        f"leaf {leaf.path} {what}: read as missing (fill value)", HiveWarning, stacklevel=3
    )


PROVENANCE = ("role", "zagg_overview", "zagg_column")


async def verify_all(backend, leaves: LeafCache, level: Level) -> None:
    """Read every leaf's stamp; drop shards with no readable leaf in any window.

    On overview and column levels every object's provenance (role, zagg_overview or
    zagg_column) is kept in the group attrs under ``zagg_objects``.
    """
    keep = np.zeros(level.n_shards, dtype=bool)
    dropped: list[str] = []
    provenance: dict[str, dict] = {}
    cell_order = level.cell_order

    async def check(index: int, path: str) -> None:
        leaf = await leaves.resolve(path, backend.get)
        if leaf.state != "stamped":
            if leaf.state == "debris" or not (level.windows or level.window or level.fold):
                dropped.append(path)
            return
        if leaf.current is not None:
            group = f"{leaf.data_prefix}/{cell_order}"
            if await backend.get(f"{group}/zarr.json") is None:
                warn_dangling(leaf, group)
                dropped.append(path)
                return
        keep[index] = True
        if level.artifact != "source":
            attrs = level.group_attrs if path == level.template else (leaf.attrs or {})
            provenance[path] = {"object": path, **{k: attrs[k] for k in PROVENANCE if k in attrs}}

    pairs = list(level.leaf_pairs())
    for start in range(0, len(pairs), VERIFY_BATCH):
        await asyncio.gather(*(check(i, p) for i, p in pairs[start : start + VERIFY_BATCH]))
    level.shard_ranks = level.shard_ranks[keep]
    level.dropped = sorted(dropped)
    if provenance:
        level.group_attrs["zagg_objects"] = [provenance[p] for _, p in pairs if p in provenance]


async def _window_labels(backend, level: Level, envelope: dict | None, walked) -> list[str]:
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


async def open_source(
    backend,
    leaves: LeafCache,
    name: str,
    root: str,
    manifest: Manifest,
    verify: str,
    window: str | None = None,
    aoi: Cells | None = None,
) -> tuple[Level, np.ndarray | None]:
    """The product's source level, and the root MOC's shard ranks (``None``: walked)."""
    windowed = schedule(manifest) is not None
    scoped = window if windowed else None
    coverage = await _coverage(backend, root, manifest)
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
        name, root, manifest, manifest.cell_order, manifest.shard_order, ranks, source,
        window=scoped,
    )
    if windowed and scoped is None:
        level.windows = tuple(await _window_labels(backend, level, envelope, walked))
    await fill_schema(backend, leaves, level, aoi)
    restrict(level, aoi)
    if verify == "open" or scoped is not None:
        await verify_all(backend, leaves, level)
    if verify == "open" and source == "moc":
        await warn_if_stale(backend, leaves, level, ranks)
    return level, (ranks if source == "moc" else None)


async def warn_if_stale(backend, leaves: LeafCache, level: Level, listed: np.ndarray) -> None:
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
    found = await asyncio.gather(*(leaves.resolve(p, backend.get) for _, p in probe.leaf_pairs()))
    stale = sorted(leaf.path for leaf in found if leaf.state == "stamped")
    if stale:
        _warn(
            f"stale root coverage at {_join(level.root, COVERAGE_NAME)}: stamped leaves "
            f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''} ({len(stale)}) are not "
            "listed, so they are not served; regenerate the root coverage"
        )


def restrict(level: Level, aoi: Cells | None) -> None:
    """Keep the nodes whose subtrees overlap the AOI (after the schema was found)."""
    if aoi is None:
        return
    level.shard_ranks = in_view(level, aoi).shard_ranks
    if not level.n_shards:
        _warn(f"{level.path}: the AOI intersects no coverage; the level has 0 cells")


def in_view(level: Level, aoi: Cells | None) -> Level:
    """The level as the AOI will cut it (a copy; ``level`` itself when there is no AOI)."""
    if aoi is None:
        return level
    return replace(level, shard_ranks=level.shard_ranks[overlaps(level.shard_ranks,
                                                                 level.node_order, aoi)])


def _check_coordinates(level: Level, leaf: Leaf, stored: dict[str, dict]) -> None:
    """A stored ``morton`` / ``cell_ids`` array is the cell coordinate the view computes in
    its place (uint64, one value per cell, along ``cells``); an array of that name holding
    anything else would be silently replaced, so it is refused, naming it and the field."""
    want = {"data_type": "uint64", "shape": [level.cells_per_shard],
            "dimension_names": ["cells"]}
    for name, meta in stored.items():
        for key, value in want.items():
            if meta.get(key) != value:
                raise LeafSchemaError(
                    f"{leaf.data_prefix}/{level.cell_order}/{name}/zarr.json: field {key!r} "
                    f"{short(meta.get(key))} is not {value!r}: a leaf array named {name!r} "
                    "must be the cell coordinate the store computes in its place"
                )


async def fill_schema(backend, leaves: LeafCache, level: Level, aoi: Cells | None = None) -> bool:
    """Read the level's schema from the first stamped object in the view (the AOI's nodes;
    the whole domain when none of them is stamped, as moczarr's empty result does) and
    learn the writer runs' encodings (``runs.py``); ``False`` if it has no stamped object."""
    view = in_view(level, aoi)
    found, searched = await find_template(backend, leaves, view)
    if found is None and view is not level:
        found, searched = await find_template(backend, leaves, level)
    if found is None:
        if level.artifact != "source":
            return False
        raise NoCoverageError(
            f"product {level.product!r} at {level.root or '/'}: no committed leaf among "
            f"the {level.n_shards:,} {level.coverage_source}-listed shards ({searched}), so "
            "it has no schema"
        )
    leaf, level.group_attrs, level.arrays = found
    _check_coordinates(level, leaf, {n: level.arrays.pop(n) for n in COORDINATE_NAMES
                                     if n in level.arrays})
    clash = sorted(set(level.arrays) & set(WINDOW_COORDINATES)) if level.windows else []
    if clash:
        raise HiveFormatError(
            f"{leaf.data_prefix}/{level.cell_order}: array {clash[0]!r} clashes with the "
            "window coordinate of the same name"
        )
    level.template, level.template_run, level.template_data = leaf.path, leaf.run, (
        leaf.data_prefix or "")
    level.encodings = await learn_runs(backend, leaves, view, leaf, level.arrays)
    if level.artifact != "source":
        attrs = leaf.attrs or {}
        level.group_attrs = {**level.group_attrs, **{k: attrs[k] for k in PROVENANCE if k in attrs}}
    return True
