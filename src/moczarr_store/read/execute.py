"""Executing a read plan: bytes through the backend, checked, never under metadata that was
not established for the leaf they come from.

Cost of a leaf chunk: its object (one GET, or one ranged GET per inner chunk after one
index read in ``inner`` mode), and the leaf array's own ``zarr.json`` fetched concurrently
with it (no added round trip). Both are remembered for ``run-*`` versions, which are
immutable; an unversioned (rewritten-in-place) leaf's metadata is read with every chunk,
and its inner chunks are cut from one read of the whole object, so a chunk never mixes two
writes of it. A leaf array document byte-identical to one already checked (the leaves of
one writer run) is fetched, never parsed again.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..cache import AsyncCache
from ..chunks import (
    ChunkCheck,
    check_chunk,
    inner_range,
    load_index,
    reframe,
    shard_entries,
    shard_passthrough,
)
from ..diagnostics import FIRST_NAMES, first_names
from ..errors import (
    ChunkReadError,
    HiveFormatError,
    LeafMovedError,
    LeafSchemaError,
    ObjectReadError,
    OutsideRootError,
    TruncatedChunkError,
)
from ..hive.jsonio import load_json, read_document, read_document_now
from ..hive.leaves import Leaf, tick
from ..hive.level import Level
from ..hive.paths import short
from ..io.backend import NOT_NOW
from ..io.ranges import ByteRequest, BytesLike, slice_bytes
from ..transcode import transcode
from ..view.arrays import FabricatedArray, FieldArray, check_leaf_meta, encoding
from .fastpath import read_cached_span
from .plan import (
    SAME,
    Absent,
    Document,
    Fabricate,
    InnerRange,
    LeafRead,
    Passthrough,
    Plan,
    Recode,
    Reframe,
    Span,
    Transcode,
)

if TYPE_CHECKING:
    from ..session import HiveSession

Bytes = BytesLike
_UNKNOWN = object()
HELD = object()  # a chunk its object's shard index marks absent (the object is there)
CHECKED_METAS = 256  # distinct leaf array documents remembered by content
WINDOW_PROBES = 4096  # stamps read to find whether a pyramid level has a window
CHECKED_MAX_BYTES = 1 << 16
_CHECKED: OrderedDict[bytes, tuple[dict[str, Any], tuple[Any, ...]]] = OrderedDict()
_CHECKED_LOCK = threading.Lock()


async def execute(session: HiveSession, plan: Plan) -> Bytes | None:
    """The bytes ``plan`` names, or ``None`` for an absent chunk (the fill value)."""
    if isinstance(plan, Document):
        doc = session.view.document(plan.path)
        return None if doc is None else slice_bytes(doc, plan.byte_range)
    if isinstance(plan, Fabricate):
        fabricated = session.view.arrays[plan.array]
        assert isinstance(fabricated, FabricatedArray)
        return slice_bytes(fabricated.fabricate(plan.coords), plan.byte_range)
    if isinstance(plan, Absent):
        if plan.problem is not None:
            session.problems.note(plan.level, plan.problem, plan.obj, plan.source, plan.what)
        elif plan.window is not None:
            await _check_window(session, plan.level, plan.window)
        return None
    if isinstance(plan, Transcode):
        return await _transcoded(session, plan)
    if isinstance(plan, Span):
        return await _joined(session, plan)
    # a leaf chunk (Passthrough, Reframe, InnerRange, Recode): read while its leaf array's
    # metadata is established (or under what is known of it), served as is or re-encoded
    return (await _established(session, plan))[0]


async def _check_window(session: HiveSession, path: str, window: str) -> None:
    """An overview or column object absent from ``window``: if no object of its level is
    stamped in that window, the level was not made for it (not yet swept, or deleted), and
    its cells read as the fill value: warned once, naming the objects, as moczarr warns.
    Cost, once per (level, window): the stamps of its objects there (outside an AOI too)
    in domain order until one is stamped (cached), in growing batches; none when it has
    more than ``WINDOW_PROBES`` there (it is assumed made)."""
    level = session.view.levels[path]
    ranks = level.node_ranks if level.uncut_ranks is None else level.uncut_ranks  # any AOI's
    level = replace(level, node_ranks=ranks, windows=(), window=window)

    async def absent() -> list[str]:
        """The first of the level's objects in ``window`` when none is stamped, else
        ``[]`` (also when more than ``WINDOW_PROBES``: assume the level was made)."""
        paths = [p for _, _, p in itertools.islice(level.object_pairs(), WINDOW_PROBES + 1)]
        if len(paths) > WINDOW_PROBES:
            return []
        start, size = 0, 1
        while start < len(paths):
            found = await asyncio.gather(*(session.leaves.resolve(p, session.backend.get)
                                           for p in paths[start : start + size]))
            if any(leaf.state == "stamped" for leaf in found):
                return []
            start, size = start + size, size * 8
        return paths[: FIRST_NAMES + 1]

    missing = await session.windows.get((path, window), absent)
    if missing:
        session.problems.note(path, "unswept", repr(window), noun="window",
                              what=f"has no stamped {level.artifact} object (not yet swept, "
                              f"or deleted; absent: {first_names(missing)})")


async def _joined(session: HiveSession, plan: Span) -> Bytes | None:
    """A span's leaf chunks read and joined, each absent one as its fill bytes; ``None``
    when every part is absent. Cost: as many leaf chunk reads: straight into the chunk's
    buffer from the page cache (:func:`.fastpath.read_cached_span`), else concurrent, and
    one copy."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    _metas_now(session, plan.parts, array)
    direct = read_cached_span(session, plan.parts, array.part_fill)
    if direct is not None:
        return slice_bytes(direct, plan.byte_range)
    present = [p for p in plan.parts if p is not None]
    parts = list(await asyncio.gather(*(execute(session, p) for p in present)))
    if all(p is None for p in parts):
        return None
    fill = array.part_fill
    joined = b"".join(fill if p is None else p for p in parts)
    joined += fill * (len(plan.parts) - len(parts))
    return slice_bytes(joined, plan.byte_range)


async def _established(session: HiveSession, plan: LeafRead) -> tuple[Bytes | None, Any]:
    """The chunk's bytes and the leaf array metadata they are served under (``SAME``: as
    declared; a dict: re-encoded from it; ``None``: the version holds no such array). The
    object is read while the metadata is established (one task, no added round trip)."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    if isinstance(plan, Recode):  # its values are read through zarr once its metadata is known
        meta = await _leaf_meta(session, plan, array)
        if meta is None:
            await _no_array(session, plan, array, None)
            return None, None
        leaf_meta = array.source_meta if meta == SAME else meta
        return await _transcoded(session, Transcode(**_fields(plan), leaf_meta=leaf_meta)), meta
    known = session.leaf_metas.peek(plan.meta, _UNKNOWN) if plan.immutable else _UNKNOWN
    if known is _UNKNOWN:
        read = asyncio.ensure_future(_captured_bytes(session, plan))
        try:
            meta = await _leaf_meta(session, plan, array)
        except BaseException:
            read.cancel()
            raise
        data = await read
    else:
        meta = known
        data = await _captured_bytes(session, plan) if meta == SAME else None
    if meta is None:  # no array metadata in this leaf version
        await _settle_absence(session, plan, plan.meta)
        await _no_array(session, plan, array, data)
        return None, None
    if meta != SAME:
        return await _transcoded(session, Transcode(**_fields(plan), leaf_meta=meta)), meta
    if isinstance(data, BaseException):
        if isinstance(data, TruncatedChunkError):  # perhaps removed between index and bytes
            await _settle_absence(session, plan, None)
        raise data
    if data is HELD:  # its object is there, without this chunk: the version's content
        return None, meta
    if data is None:
        await _settle_absence(session, plan, plan.object)
        if plan.immutable:
            await _check_version(session, plan, array)
    return data, meta


async def _settle_absence(session: HiveSession, plan: LeafRead, missing: str | None) -> None:
    """A read of a ``run-*`` version found nothing (``missing``: the key; ``None``: bytes
    cut short). The version is immutable, so that is its content, unless the writer has
    committed another version since and removed this one: the leaf's stamp is read again
    (:meth:`~moczarr_store.hive.leaves.LeafCache.reread`: one GET, shared by the misses
    of one leaf met together; none when the cached stamp has moved on already: a stamp
    never names a version again once it left it) and if it moved,
    :class:`LeafMovedError` makes the caller plan the key again. A confirmed absence is
    remembered: the next read of that key re-reads no stamp. An unversioned leaf
    (rewritten in place) missing an object while it has no stamp is being rewritten: an
    error naming it, never its half-written state read as the fill value (its cached
    stamp is kept for the reads after the rewrite). Cost: none for a key known absent,
    else one GET (every time, for unversioned leaves: their absences can change)."""
    if not plan.immutable:
        if missing is not None:
            await _check_in_place(session, plan)
        return
    if missing is not None and session.absences.peek(missing) is not None:
        return
    after = tick()
    leaf = session.leaves.peek(plan.leaf)  # moved on already (another read found out)?
    if _names(leaf, plan):
        leaf = await session.leaves.rereading(plan.leaf)  # or is finding out now?
    if _names(leaf, plan):
        leaf = await session.leaves.reread(plan.leaf, session.backend.get, after)
    assert isinstance(leaf, Leaf)
    if leaf.state != "stamped" or leaf.current != plan.version:
        now = f"version {leaf.current!r}" if leaf.state == "stamped" else f"{leaf.state}"
        raise LeafMovedError(f"leaf {plan.leaf}: its commit stamp moved from version "
                             f"{plan.version!r} to {now} while {plan.object} was read")
    if missing is not None:
        session.absences.put(missing, True)


def _names(leaf: object, plan: LeafRead) -> bool:
    """Whether ``leaf`` (a stamp as read, if any) may still name ``plan``'s version: only a
    stamp read after the miss can confirm it, any stamp that names another refutes it."""
    return not isinstance(leaf, Leaf) or leaf.state == "stamped" and leaf.current == plan.version


async def read_leaf_chunks(
    session: HiveSession, plans: list[LeafRead]
) -> list[tuple[Bytes | None, dict[str, Any] | None] | Exception]:
    """Each plan's bytes, exactly as :func:`execute` serves them, with the leaf array
    metadata they were established under (``None``: the leaf version holds no such
    array); all read concurrently, a failure returned in its plan's place. For consumers
    that read many arrays of one leaf at once (``verify``). Cost: as many ``execute``
    calls, one task each."""

    async def one(
        plan: LeafRead,
    ) -> tuple[Bytes | None, dict[str, Any] | None] | Exception:
        try:
            data, meta = await _established(session, plan)
        except Exception as err:
            return err
        if meta == SAME:
            declared = session.view.arrays[plan.array]
            assert isinstance(declared, FieldArray)
            meta = declared.source_meta
        return data, meta

    return list(await asyncio.gather(*(one(plan) for plan in plans)))


def _fields(plan: LeafRead) -> dict[str, Any]:
    return {name: getattr(plan, name) for name in LeafRead.__dataclass_fields__}


async def _captured_bytes(session: HiveSession, plan: LeafRead) -> Any:
    """The chunk's object bytes, or the exception reading them raised (judged once the
    leaf's metadata says whether these bytes were read under the right encoding)."""
    try:
        return await _object_bytes(session, plan)
    except Exception as err:  # re-raised by the caller when the encoding matches
        return err


async def _leaf_meta(session: HiveSession, plan: LeafRead, array: FieldArray) -> Any:
    """``SAME``, the leaf array's metadata when its encoding differs, or ``None``."""

    async def load() -> Any:
        return _meta_of(await read_document(session.backend, plan.meta), plan, array)

    if not plan.immutable:
        return await load()
    return await session.leaf_metas.get(plan.meta, load)


def _meta_of(payload: Bytes | None, plan: LeafRead, array: FieldArray) -> Any:
    """What :func:`_leaf_meta` makes of the leaf array document ``payload``."""
    if payload is None:
        return None
    meta, coded = _checked_meta(payload, plan.meta)
    check_dimensions(meta, array, plan.meta)
    return SAME if coded == array.declared_encoding else meta


def _metas_now(session: HiveSession, parts: Sequence[Plan | None], array: FieldArray) -> None:
    """The leaf array metadata of a span's leaf chunks of immutable versions established
    as :func:`_leaf_meta` does, without a task: those the page cache holds, read inline,
    until one would wait (one request each, as :func:`_leaf_meta` makes; none for those
    known or being read). Their chunks may then take the fast path."""
    metas = session.leaf_metas
    for part in parts:
        if (not isinstance(part, LeafRead) or not part.immutable
                or metas.peek(part.meta, _UNKNOWN) is not _UNKNOWN or metas.loading(part.meta)):
            continue
        payload = read_document_now(session.backend, part.meta)
        if payload is NOT_NOW or payload is None:  # an absent one: read where it is judged
            return
        metas.put(part.meta, _meta_of(payload, part, array))


def _checked_meta(payload: Bytes, key: str) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """A leaf array's ``zarr.json`` parsed and checked, with its encoding. Leaves written
    by one run hold byte-identical documents, so a document seen before (an LRU of
    ``CHECKED_METAS`` up to ``CHECKED_MAX_BYTES`` each, keyed by its bytes) is not parsed
    again (zarr's parse of it is saved). A defect raises every time."""
    content = bytes(payload)
    small = len(content) <= CHECKED_MAX_BYTES
    with _CHECKED_LOCK:  # sessions on other threads' event loops share it
        found = _CHECKED.get(content) if small else None
        if found is not None:
            _CHECKED.move_to_end(content)
            return found
    meta = check_leaf_meta(load_json(content, key), key)
    found = (meta, encoding(meta))
    if small:
        with _CHECKED_LOCK:
            _CHECKED[content] = found
            if len(_CHECKED) > CHECKED_METAS:
                _CHECKED.popitem(last=False)
    return found


def check_dimensions(meta: dict[str, Any], array: FieldArray, where: str) -> None:
    """A leaf array's axes are named as the view presents them (the template's names): a
    leaf whose axes differ is refused, naming it and the field (the reference reader
    cannot concatenate it either). No request."""
    want = array.source_meta.get("dimension_names")
    got = meta.get("dimension_names")
    if got != want:
        raise LeafSchemaError(f"{where}: field 'dimension_names' {short(got)} differs from "
                              f"{want!r}, the template's, which the view presents")


async def _no_array(session: HiveSession, plan: LeafRead, array: FieldArray, data: Any) -> None:
    """A leaf version without this array: its chunks read as missing. Damage is warned
    once per (level, kind): the version is gone; bytes with no metadata to read them by;
    no metadata although the leaf's commit stamp hashes the array (it was written). Cost:
    the version check (:func:`_check_version`); the stamp is cached."""
    if not await _check_version(session, plan, array):
        return
    if data is not None and not isinstance(data, BaseException):
        session.problems.note(array.level.path, "no-array", plan.object)
        return
    leaf = await session.leaves.resolve(plan.leaf, session.backend.get)
    if leaf.hashed is not None and array.group in leaf.hashed:
        session.problems.note(array.level.path, "unwritten", plan.leaf,
                              what=f"hashes array {array.group} in its commit stamp but has "
                              "no metadata for it")


async def _check_version(session: HiveSession, plan: LeafRead, array: FieldArray) -> bool:
    """Whether the leaf version a chunk read as missing was read from still exists; if it
    is gone (a ``current`` pointer left dangling, or moved on and the old version deleted),
    that is damage, warned once. Cost: one GET per leaf version (cached)."""
    group = plan.meta.rsplit("/", 2)[0]

    async def group_exists() -> bool:
        return await session.backend.get(f"{group}/zarr.json") is not None

    if await session.groups.get(group, group_exists):
        return True
    if plan.immutable:
        version = group.rsplit("/", 2)[-2]
        what = f"points at version {version!r}, which is missing"
        session.problems.note(array.level.path, "dangling", plan.leaf, what=what)
    else:
        session.problems.note(array.level.path, "no-group", plan.leaf)
    return False


async def encoded_as_declared(session: HiveSession, plan: LeafRead) -> bool | None:
    """Whether the leaf array is encoded as the virtual array declares (its bytes may be
    referenced as they are); ``None``: the leaf version has no such array. Cost: none when
    known (immutable versions), else one GET of the leaf array's ``zarr.json``."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    meta = await _leaf_meta(session, plan, array)
    return None if meta is None else meta == SAME


def remember_template(session: HiveSession, level: Level) -> None:
    """The array metadata read at open (the template's and each sampled writer run's): a
    chunk of those objects needs no second read of it (immutable versions only). Each is
    compared with the declared encoding, which the template's need not be."""
    for run in level.encodings:
        if not run.immutable:
            continue
        for name, meta in run.arrays.items():
            array = session.view.arrays.get(f"{level.path}/{name}")
            key = f"{run.prefix}/{level.cell_order}/{name}/zarr.json"
            if not isinstance(array, FieldArray):
                continue
            try:  # a malformed one is left for its chunk reads to refuse
                meta = check_leaf_meta(meta, key)
                check_dimensions(meta, array, key)
            except HiveFormatError:
                continue
            same = encoding(meta) == array.declared_encoding
            session.leaf_metas.put(key, SAME if same else meta)


async def _read(
    session: HiveSession, key: str, byte_range: ByteRequest | None = None
) -> Bytes | None:
    got = await _read_sized(session, key, byte_range)
    return None if got is None else got[0]


async def _read_sized(
    session: HiveSession, key: str, byte_range: ByteRequest | None = None
) -> tuple[BytesLike, int] | None:
    """``(bytes, object size)`` or ``None``; a failure is an error naming the object."""
    try:
        return await session.backend.get_sized(key, byte_range)
    except (TruncatedChunkError, ChunkReadError, OutsideRootError):
        raise
    except ObjectReadError as err:  # it names the object already
        raise ChunkReadError(str(err)) from err
    except Exception as err:
        raise ChunkReadError(f"reading {key} from {session.backend}: {err}") from err


async def _object_bytes(session: HiveSession, plan: LeafRead) -> Any:
    """The chunk's bytes from its object, checked against what the plan expects; ``None``
    when there is no object, :data:`HELD` when its shard index says the chunk is absent."""
    key, check = plan.object, plan.check
    if isinstance(plan, Passthrough):
        # a shard's verified index is remembered for immutable objects only: a rewritten
        # object's ranges are checked against its index as it is now
        indexes = session.indexes if plan.immutable else AsyncCache(1)
        read = functools.partial(_read_sized, session)
        return await shard_passthrough(read, indexes, key, check, plan.byte_range)
    if isinstance(plan, Reframe):
        data = await _read(session, key)
        framed = None if data is None else reframe(data, check, key)
        if framed is None:
            return None if data is None else HELD
        return slice_bytes(framed, plan.byte_range)
    assert isinstance(plan, InnerRange)
    return await _inner_chunk(session, plan)


async def _check_in_place(session: HiveSession, plan: LeafRead) -> None:
    """An unversioned leaf's object is missing: an error if the leaf has no stamp now
    (zagg rewrites such a leaf by clearing it, then writing it, its stamp last)."""
    leaf = await session.leaves.reread(plan.leaf, session.backend.get, tick(), replace=False)
    if leaf.state != "stamped":
        raise LeafMovedError(
            f"leaf {plan.leaf}: {plan.object} is missing and the leaf has no commit stamp "
            f"now ({leaf.state}): it is being rewritten in place (unversioned leaves "
            "cannot be read while a writer rewrites them)")


async def _inner_chunk(session: HiveSession, plan: InnerRange) -> Any:
    """One inner chunk of a shard object: by range after one cached index read (immutable
    objects), else cut from one read of the whole object (``None``: no object;
    :data:`HELD`: the chunk absent from its index)."""
    key, check = plan.object, plan.check
    if not plan.immutable:
        whole = await _read(session, key)
        if whole is None:
            return None
        inner = inner_range(shard_entries(whole, check, key), plan.part)
        if inner is None:
            return HELD
        data: Bytes | None = memoryview(whole)[inner.start : inner.end]
    else:
        read = functools.partial(_read_sized, session)
        entries = await session.indexes.get(key, lambda: load_index(read, key, check))
        inner = None if entries is None else inner_range(entries, plan.part)
        if inner is not None:
            data = await _read(session, key, inner)
    if inner is None:
        return None if entries is None else HELD
    size = inner.end - inner.start
    if data is None or len(memoryview(data)) != size:
        raise TruncatedChunkError(f"{key}: its index promised {size} bytes at {inner.start}")
    check_chunk(data, ChunkCheck(nbytes=check.inner_nbytes), None, key)
    return slice_bytes(data, plan.byte_range)


async def _transcoded(session: HiveSession, plan: Transcode) -> Bytes | None:
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    where = plan.meta.rsplit("/", 1)[0]
    missing: list[str] = []  # chunk objects zarr found none of (it reads them as fill)
    chunk = await transcode(session.backend, where, array, plan.leaf_meta, plan.coords,
                            missing)
    if missing:
        await _settle_absence(session, plan, missing[0])
    return None if chunk is None else slice_bytes(chunk, plan.byte_range)


def size_known(session: HiveSession, plan: Plan) -> bool:
    """Whether one HEAD of ``plan.object`` gives the size of the bytes ``plan`` names: a
    whole passthrough object of an immutable leaf version whose encoding is established."""
    return (
        isinstance(plan, Passthrough)
        and plan.byte_range is None
        and plan.immutable
        and session.leaf_metas.peek(plan.meta, None) == SAME
    )


async def object_size(session: HiveSession, plan: Plan) -> int | None:
    """The size of the bytes ``plan`` names without reading a chunk where that is known:
    documents, fabricated chunks, and whole passthrough objects of a leaf whose encoding is
    already established (one HEAD); otherwise the chunk is read."""
    if size_known(session, plan):
        assert isinstance(plan, Passthrough)
        size = await session.backend.size(plan.object)
        if size is not None:
            return size  # else read: its version may be gone (execute finds out)
    data = await execute(session, plan)
    return None if data is None else len(memoryview(data).cast("B"))
