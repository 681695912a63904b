"""The template of a level: the first stamped object (in domain order) whose cell-order
group exists; its group attributes and array metadata are the level's schema.

Cost: a clean hive's first object is stamped (one stamp GET, the group's ``zarr.json`` and
one ``zarr.json`` per array, named by the stamp's content hashes, else by one listing of the
group). If the first listed objects are not stamped, the search stays bounded
(``find_template``): no request per absent node.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import HiveFormatError, HiveWarning, MocHiveError, OutsideRootError
from .arraymeta import ArrayMeta, parse_node
from .jsonio import load_object, object_field, read_document
from .leaves import Leaf, LeafCache
from .level import Level
from .paths import node_name_problem, requestable, short
from .runs import probe_paths
from .walk import existing_objects

if TYPE_CHECKING:
    from ..io.reader import HiveIO

TEMPLATE_BATCH = 8
TEMPLATE_MAX_BATCH = 512
DEFAULT_TEMPLATE_PROBES = 4096
"""Objects probed for a template, at most, on a backend that cannot list (plain HTTP)."""


DANGLING_NAMED = 5  # dangling leaves a warning names (all of them at DEBUG)
logger = logging.getLogger("moczarr_store")


def _warn(message: str) -> None:
    warnings.warn(message, HiveWarning, stacklevel=3)


async def _read_json(backend: HiveIO, key: str) -> dict[str, Any] | None:
    """A hive ``zarr.json`` (or other JSON object), ``None`` when absent: one ranged GET
    of at most the document cap."""
    payload = await read_document(backend, key)
    return None if payload is None else load_object(payload, key)


def _hashed_names(stamp: dict[str, Any], order: str) -> tuple[list[str] | None, str | None]:
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


async def _sampled(backend: HiveIO, leaves: LeafCache, path: str) -> Leaf | None:
    """The object's leaf with its stamp, ``None`` when it cannot be read."""
    try:
        return await leaves.resolve_full(path, backend.get)
    except ValueError:  # a malformed stamp: reported when the object is read
        return None


async def _array_names(
    backend: HiveIO, leaves: LeafCache, leaf: Leaf, group: str, level: Level
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


async def _read_array(backend: HiveIO, key: str) -> ArrayMeta | None:
    """The array metadata at ``key``, ``None`` when absent or no array (a group): one
    ranged GET of at most the document cap."""
    payload = await read_document(backend, key)
    return None if payload is None else parse_node(payload, key)


async def _refused_name(backend: HiveIO, key: str) -> bool:
    """Whether the ``zarr.json`` of an invalid name, ``key``, is an array's, or cannot even
    be looked up: a backend may refuse such a key (obstore parses object paths: a control
    character is no path segment to it), and a malformed document there is no array."""
    try:
        return await _read_array(backend, key) is not None
    except (ValueError, MocHiveError):
        return True


async def _valid_names(backend: HiveIO, names: list[str], group: str,
                       refused_out: list[str] | None = None) -> list[str]:
    """``names`` that are zarr node names. Another name is omitted: with one warning naming
    each if it is an array, or cannot even be looked up (that array is refused, not the
    hive); silently if it is merely not an array (``refused_out`` gets the refused ones).
    Cost: one GET per invalid name that can be looked up; none for valid names."""
    bad = [name for name in names if node_name_problem(name) is not None]
    looked = [name for name in bad if requestable(name)]
    found = await asyncio.gather(*(_refused_name(backend, f"{group}/{n}/zarr.json")
                                   for n in looked))
    refused = [name for name in bad if not requestable(name)] + [
        name for name, array in zip(looked, found, strict=True) if array]
    if refused_out is not None:
        refused_out += refused
    if refused:
        said = "; ".join(f"array name {short(n)} is not a valid zarr node name "
                         f"({node_name_problem(n)})" for n in refused[:DANGLING_NAMED])
        more = f"; {len(refused) - DANGLING_NAMED} more" if len(refused) > DANGLING_NAMED else ""
        _warn(f"{group}: {said}{more}: not presented")
    return [name for name in names if name not in bad]


Template = tuple[Leaf, dict[str, Any], dict[str, ArrayMeta]]


async def _first_template(
    backend: HiveIO, leaves: LeafCache, batch: list[str], level: Level,
    fallback: list[Template] | None = None,
) -> Template | None:
    """The first stamped object of ``batch`` (stamps read concurrently) whose cell-order
    group exists: its leaf, group attributes and array metadata by name (the stored
    coordinates included). The group's listing, where the backend lists, is the authority
    on its arrays (as for moczarr): it is made concurrently with the reads of the arrays
    the stamp names, so it adds a request, not a round trip. An object holding an array
    refused for its name is the template only if no later one of the batch is usable
    (``fallback``: shared with the caller, which may look further; then ``None`` here)."""
    resolved = await asyncio.gather(*(leaves.resolve_full(p, backend.get) for p in batch))
    dangling: list[tuple[Leaf, str]] = []
    own: list[Template] = [] if fallback is None else fallback
    try:
        found = await _first_usable(backend, leaves, resolved, level, dangling, own)
    finally:
        warn_dangling(level, dangling)
    return found if found is not None or fallback is not None or not own else own[0]


async def _first_usable(
    backend: HiveIO, leaves: LeafCache, resolved: list[Leaf], level: Level,
    dangling: list[tuple[Leaf, str]], fallback: list[Template],
) -> Template | None:
    """The first usable template of ``resolved``. One that holds an array refused for its
    name is kept in ``fallback`` (once), and the next object is tried: one object's bad
    name must not hide an array the others hold from the whole level."""
    for leaf in resolved:
        if leaf.state != "stamped":
            continue
        group = f"{leaf.data_prefix}/{level.cell_order}"
        group_meta = await _read_json(backend, f"{group}/zarr.json")
        if group_meta is None:
            dangling.append((leaf, group))
            continue
        attrs = object_field(group_meta, "attributes", f"{group}/zarr.json")
        names, hashed = await _array_names(backend, leaves, leaf, group, level)
        refused: list[str] = []
        if hashed:
            arrays, listed = await asyncio.gather(_group_arrays(backend, group, names, refused),
                                                  _listing(backend, group))
            arrays = await _reconcile(backend, leaf, group, arrays, listed, names, refused)
        else:
            arrays = await _group_arrays(backend, group, names, refused)
        found = leaf, attrs, {n: m for n, m in arrays.items() if m is not None}
        if not refused:
            return found
        if fallback:  # a second such object: its names are the level's, not one object's
            return fallback[0]
        fallback.append(found)
    return None


async def _group_arrays(backend: HiveIO, group: str, names: list[str],
                       refused: list[str] | None = None) -> dict[str, ArrayMeta | None]:
    """The array metadata of ``names`` in ``group`` (``None``: no array by that name;
    ``refused`` gets the names refused, see :func:`_valid_names`)."""
    names = await _valid_names(backend, names, group, refused)
    metas = await asyncio.gather(*(_read_array(backend, f"{group}/{n}/zarr.json") for n in names))
    return dict(zip(names, metas, strict=True))


async def _listing(backend: HiveIO, group: str) -> list[str] | None:
    """The directories in ``group`` (one LIST); ``None`` where the backend cannot list."""
    try:
        dirs, _ = await backend.list_dir(group)
    except OutsideRootError:
        raise
    except Exception:  # plain HTTP: the stamp's content hashes alone name the arrays
        return None
    return dirs


async def _reconcile(backend: HiveIO, leaf: Leaf, group: str,
                     hashed: dict[str, ArrayMeta | None], listed: list[str] | None,
                     named: list[str], refused: list[str]) -> dict[str, ArrayMeta | None]:
    """The arrays of ``group``: the listing's (``listed``; ``None`` where the backend
    cannot list, and then the stamp's), with a warning naming what the stamp's content
    hashes name that the group does not hold, or omit that it does (``named``: every name
    the stamp gives, valid or not). Cost: one GET per array the stamp does not name."""
    found: dict[str, ArrayMeta | None] = {n: m for n, m in hashed.items() if m is not None}
    missing = sorted(n for n, m in hashed.items() if m is None)
    if listed is None:
        if missing:
            _warn(f"leaf {leaf.path}: commit stamp names arrays {', '.join(map(short, missing))} "
                  f"that {group} does not hold, and it cannot be listed; they are not presented")
        return found
    extra = await _group_arrays(backend, group, sorted(set(listed) - set(named)), refused)
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
    backend: HiveIO, leaves: LeafCache, level: Level, *, max_probes: int | None = None
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
    total = level.n_nodes * max(1, len(level.windows))
    pairs = (path for _, _, path in level.object_pairs())
    probed: set[str] = set()
    fallback: list[Template] = []  # a first object holding an array refused for its name
    for size in (1, TEMPLATE_BATCH):
        batch = [path for _, path in zip(range(size), pairs, strict=False)]
        probed.update(batch)
        found = await _first_template(backend, leaves, batch, level, fallback)
        if found is not None or len(batch) < size:
            return found or (fallback[0] if fallback else None), f"all {total:,} objects probed"
    if fallback:
        return fallback[0], ""
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
    backend: HiveIO, leaves: LeafCache, level: Level, probed: set[str]
) -> tuple[Template | None, int]:
    """The template among the level's objects that exist, found by walking the digit
    tree in domain order, and how many existing objects were probed."""
    grouping = 1 if level.artifact == "overview" else level.manifest.path_grouping
    walk = existing_objects(backend, level.root, level.node_ranks, level.node_order, grouping)
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
            index = int(np.searchsorted(level.node_ranks, np.uint64(rank)))
            for window in level.windows or (None,):
                path = level.object_path(index, window)
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


def _warn_missing(level: str, found: list[tuple[str, str]], noun: str, nouns: str,
                  prefix: str = "") -> None:
    """One warning for the objects ``found`` (``(path, what is wrong)``) of ``level``, which
    read as missing, naming the first ``DANGLING_NAMED``; every one is logged at DEBUG."""
    if not found:
        return
    for path, what in found:
        logger.debug("%s: %s %s %s: read as missing (fill value)", level, noun, path, what)
    said = [f"{noun} {path} {what}" for path, what in found[:DANGLING_NAMED]]
    more = len(found) - len(said)
    rest = f"; {more:,} more {nouns} of {level} too (DEBUG log of 'moczarr_store')" if more else ""
    warnings.warn(f"{prefix}{'; '.join(said)}{rest}: read as missing (fill value)", HiveWarning,
                  stacklevel=4)


def warn_refused(level: str, refused: list[tuple[str, str]]) -> None:
    """One warning for the objects of pyramid ``level`` whose role or provenance block
    does not make them this level's artifact (:meth:`Level.refusal`; they read as missing)."""
    _warn_missing(level, refused, "object", "objects", f"{level}: ")


def warn_dangling(level: Level, dangling: list[tuple[Leaf, str]]) -> None:
    """One warning for the leaves of ``level`` that point at a missing version or have
    no group for its cell order (they read as missing), but those a warning at open
    named already (the template search meets them before ``verify="open"`` does)."""
    new = [(leaf, group) for leaf, group in dangling if leaf.path not in level.warned]
    level.warned.update(leaf.path for leaf, _ in new)
    _warn_missing(level.path, [(leaf.path, f"points at version {leaf.current!r}, which is "
                                "missing" if leaf.current else f"has no group {group}")
                               for leaf, group in new], "leaf", "leaves")
