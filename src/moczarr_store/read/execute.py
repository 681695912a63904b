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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import LeafSchemaError, TruncatedChunkError
from ..hive.arraymeta import ArrayMeta, parse_array
from ..hive.jsonio import read_document, read_document_now
from ..hive.level import Level
from ..hive.paths import short
from ..io.backend import NOT_NOW
from ..io.ranges import BytesLike, slice_bytes
from ..transcode import transcode
from ..view.arrays import FabricatedArray, FieldArray
from .absence import check_version, check_window, no_array, settle_absence
from .compute import computed_chunk
from .fastpath import read_cached_span
from .objects import CUTS, HELD
from .plan import (
    SAME,
    Absent,
    Compute,
    Document,
    Fabricate,
    LeafRead,
    Plan,
    Span,
    damaged,
    on_disk,
    unreadable,
)

if TYPE_CHECKING:
    from ..session import HiveSession

Bytes = BytesLike
_UNKNOWN = object()


async def execute(session: HiveSession, plan: Plan) -> Bytes | None:
    """The bytes ``plan`` names, or ``None`` for an absent chunk (the fill value)."""
    match plan:
        case Document(path=path):
            doc = session.view.document(path)
            return None if doc is None else slice_bytes(doc, plan.byte_range)
        case Fabricate(array=name, coords=coords):
            fabricated = session.view.arrays[name]
            assert isinstance(fabricated, FabricatedArray)
            chunk = fabricated.fabricate(coords, session.coordinate_buffers.take)
            return slice_bytes(chunk, plan.byte_range)
        case Absent(problem=problem, window=window):
            if problem is not None:
                session.problems.note(plan.level, problem, plan.obj, plan.source, plan.what)
            elif window is not None:
                await check_window(session, plan.level, window)
            return None
        case Span():
            return await _joined(session, plan)
        case Compute():
            return await computed_chunk(session, plan, (execute, read_leaf, read_now))
        case LeafRead():
            return (await read_leaf(session, plan))[0]
    raise TypeError(f"not a read plan: {plan!r}")


async def read_leaf(session: HiveSession, plan: LeafRead,
                    array: FieldArray | None = None) -> tuple[Bytes | None, Any]:
    """One leaf chunk's bytes and the leaf array metadata they are served under (``SAME``:
    as declared; an ``ArrayMeta``: re-encoded from it; ``None``: the version holds no such
    array).
    Cost: the object's bytes (:data:`.objects.CUTS`) read while the leaf array's
    ``zarr.json`` is (no added round trip; none for an immutable version's known one);
    an absence, what settling it costs (:mod:`.absence`); a chunk encoded otherwise, the
    leaf array's values it covers, read through zarr. ``array``: the field the plan was
    made for, when it is not the view's (a computed order's source, one chunk per leaf)."""
    if array is None:
        found = session.view.arrays[plan.array]
        assert isinstance(found, FieldArray)
        array = found
    data, meta = await _bytes_and_meta(session, plan, array)
    if meta is None:  # no array metadata in this leaf version
        await settle_absence(session, plan, plan.meta)
        await no_array(session, plan, array, data)
        return None, None
    if meta != SAME or plan.cut == "values":  # encoded otherwise: its values encoded anew
        leaf_meta = array.source_meta if meta == SAME else meta
        return await _transcoded(session, plan, array, leaf_meta), meta
    return await _as_declared(session, plan, array, data), meta


async def _bytes_and_meta(session: HiveSession, plan: LeafRead,
                          array: FieldArray) -> tuple[Any, Any]:
    """The chunk's bytes as its plan cuts them (:data:`.objects.CUTS`), or the exception
    reading them raised (judged once the metadata says whether they were read under the
    right encoding), and the leaf array's metadata (:func:`_leaf_meta`): read concurrently
    (one task) unless the metadata is known, then in this task after it. Bytes are read
    only where they may be served as they are: not for ``cut="values"``, nor under
    metadata that differs."""
    known = session.leaf_metas.peek(plan.meta, _UNKNOWN) if plan.immutable else _UNKNOWN
    if known is _UNKNOWN and plan.cut != "values":
        read = asyncio.ensure_future(_captured(session, plan))
        try:
            meta = await _leaf_meta(session, plan, array)
        except BaseException:
            read.cancel()
            raise
        return await read, meta
    meta = known if known is not _UNKNOWN else await _leaf_meta(session, plan, array)
    if meta != SAME:
        return None, meta
    try:
        return await CUTS[plan.cut](session, plan), meta
    except Exception as err:  # re-raised by the caller when the encoding matches
        return err, meta


async def _captured(session: HiveSession, plan: LeafRead) -> Any:
    """The chunk's bytes, or the exception reading them raised."""
    try:
        return await CUTS[plan.cut](session, plan)
    except Exception as err:  # re-raised by the caller when the encoding matches
        return err


async def _as_declared(session: HiveSession, plan: LeafRead, array: FieldArray,
                       data: Any) -> Bytes | None:
    """Bytes read under the declared encoding, served: a failure raised; an absent chunk
    settled (:func:`.absence.settle_absence`), and its version checked. Cost: an
    absence's (one GET at most, each)."""
    if isinstance(data, BaseException):
        if isinstance(data, TruncatedChunkError):  # perhaps removed between index and bytes
            await settle_absence(session, plan, None)
        raise data
    if data is HELD:  # its object is there, without this chunk: the version's content
        return None
    if data is None:
        await settle_absence(session, plan, plan.object)
        if plan.immutable:
            await check_version(session, plan, array)
    served: Bytes | None = data
    return served


async def _transcoded(session: HiveSession, plan: LeafRead, array: FieldArray,
                      leaf_meta: ArrayMeta) -> Bytes | None:
    """The chunk's values decoded under ``leaf_meta`` (the leaf array's own) and encoded as
    the view declares (:func:`~moczarr_store.transcode.transcode`); a chunk object zarr
    finds absent is settled as any absence. Cost: the leaf array's chunks it covers."""
    where = plan.meta.rsplit("/", 1)[0]
    missing: list[str] = []  # chunk objects zarr found none of (it reads them as fill)
    chunk = await transcode(session.backend, where, array, leaf_meta, plan.coords, missing)
    if missing:
        await settle_absence(session, plan, missing[0])
    return None if chunk is None else slice_bytes(chunk, plan.byte_range)


async def _joined(session: HiveSession, plan: Span) -> Bytes | None:
    """A span's leaf chunks read and joined, each absent one as its fill bytes; ``None``
    when every part is absent. Cost: as many leaf chunk reads: straight into the chunk's
    buffer from the page cache (:func:`.fastpath.read_cached_span`), else concurrent, and
    one copy."""
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    direct = read_now(session, plan.parts, array, array.part_fill)
    if direct is not None:
        return slice_bytes(direct, plan.byte_range)
    present = [p for p in plan.parts if p is not None]
    settled = _note_absent(session, present)
    read = iter(await asyncio.gather(*(_part(session, array, p) for p in present
                                       if id(p) not in settled)))
    parts = [None if id(p) in settled else next(read) for p in present]
    if all(p is None for p in parts):
        return None
    fill = array.part_fill
    joined = b"".join(fill if p is None else p for p in parts)
    joined += fill * (len(plan.parts) - len(parts))
    return slice_bytes(joined, plan.byte_range)


def read_now(session: HiveSession, parts: Sequence[Plan | None], array: FieldArray,
             fill: bytes, mapped: bool = True) -> memoryview | None:
    """Leaf chunks ``parts`` of ``array`` joined as :func:`_joined` serves them, without a
    task, when all are in the page cache (:func:`.fastpath.read_cached_span`, their leaf
    metadata established first by :func:`_metas_now`); ``None``: read them as usual."""
    _metas_now(session, parts, array)
    return read_cached_span(session, parts, fill, mapped)


def _note_absent(session: HiveSession, parts: Sequence[Plan]) -> set[int]:
    """The ids of a joined chunk's parts that are absent with nothing to check (their
    fill bytes at once, no task each), their problems noted once per (level, kind) with
    how many parts of the chunk have it. No request."""
    settled: set[int] = set()
    met: dict[tuple[str, str], list[Absent]] = {}
    for part in parts:
        if isinstance(part, Absent) and part.window is None:
            settled.add(id(part))
            if part.problem is not None:
                met.setdefault((part.level, part.problem), []).append(part)
    for (level, problem), absent in met.items():
        first = absent[0]
        session.problems.note(level, problem, first.obj, first.source, first.what,
                              count=len(absent))
    return settled


async def _part(session: HiveSession, array: FieldArray, part: Plan) -> Bytes | None:
    """One part of a joined chunk as :func:`execute` reads it; a leaf whose objects are
    damaged (:func:`.absence.damaged`) reads as its fill bytes, warned once per level
    naming it, and its neighbours' rows are read."""
    try:
        return await execute(session, part)
    except Exception as err:
        if not damaged(err, on_disk(session)) or not isinstance(part, LeafRead):
            raise
        return await execute(session, unreadable(array, part.leaf, err))


async def read_leaf_chunks(
    session: HiveSession, plans: list[LeafRead], arrays: Sequence[FieldArray] | None = None
) -> list[tuple[Bytes | None, ArrayMeta | None] | Exception]:
    """Each plan's bytes, exactly as :func:`execute` serves them, with the leaf array
    metadata they were established under (``None``: the leaf version holds no such
    array); all read concurrently, a failure returned in its plan's place. ``arrays``:
    each plan's field, where it is not the view's (a D24 region's, which computed orders
    read). For consumers that read many arrays of one leaf at once (``verify``). Cost: as
    many :func:`read_leaf` calls, one task each."""

    async def one(
        plan: LeafRead, array: FieldArray | None
    ) -> tuple[Bytes | None, ArrayMeta | None] | Exception:
        try:
            data, meta = await read_leaf(session, plan, array)
        except Exception as err:
            return err
        if meta == SAME:
            declared = array or session.view.arrays[plan.array]
            assert isinstance(declared, FieldArray)
            meta = declared.source_meta
        return data, meta

    fields = arrays if arrays is not None else [None] * len(plans)
    return list(await asyncio.gather(*(one(plan, array)
                                       for plan, array in zip(plans, fields, strict=True))))


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
    return judged(parse_array(payload, plan.meta), array, plan.meta)


def _metas_now(session: HiveSession, parts: Sequence[Plan | None], array: FieldArray) -> None:
    """The leaf array metadata of a span's leaf chunks of immutable versions established
    as :func:`_leaf_meta` does, without a task: those the page cache holds, read inline
    (in one pass while they are small, ``backend.documents_now``), until one would
    wait (one request each, as :func:`_leaf_meta` makes; none for those known or being
    read). Their chunks may then take the fast path; an absent one is kept as
    :func:`_leaf_meta` keeps it, a damaged one is left to be judged (and warned of)
    where it is read (one request more, as for any damaged document). A document
    byte-identical to the one before it (the leaves of one writer run) is judged as that
    one was, without a look at the shared memo (``arraymeta.parse_array``)."""
    metas, backend = session.leaf_metas, session.backend
    wanted = [part for part in parts if isinstance(part, LeafRead) and part.immutable
              and metas.peek(part.meta, _UNKNOWN) is _UNKNOWN and not metas.loading(part.meta)]
    read = backend.documents_now([part.meta for part in wanted])
    last: tuple[bytes, Any] | None = None  # the document before, and what it made
    for at, part in enumerate(wanted):
        try:
            payload = read[at] if at < len(read) else read_document_now(backend, part.meta)
            if payload is NOT_NOW:
                return
            if payload is None:  # absent: no such array in that version
                metas.put(part.meta, None)
                continue
            content = bytes(payload)
            if last is None or content != last[0]:  # a defect is never remembered
                last = (content, _meta_of(content, part, array))
        except Exception as err:
            if damaged(err, on_disk(session)):  # judged (and warned) where it is read
                continue
            raise
        metas.put(part.meta, last[1])


def judged(meta: ArrayMeta, array: FieldArray, where: str) -> ArrayMeta | object:
    """``SAME`` when leaf array ``meta`` (at ``where``) is encoded as ``array`` declares,
    else ``meta`` (its values are then encoded anew). A leaf whose axes are named otherwise
    than the view presents them (the template's names) is refused, naming it and the field
    (the reference reader cannot concatenate it either). No request."""
    want = array.source_meta.dimension_names
    if meta.dimension_names != want:
        raise LeafSchemaError(f"{where}: field 'dimension_names' "
                              f"{short(list(meta.dimension_names))} differs from "
                              f"{list(want)!r}, the template's, which the view presents")
    return SAME if meta.encoding == array.source_meta.encoding else meta


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
    judged against the declared encoding, which the template's need not be; one whose axes
    differ is left for its chunk reads to refuse. No request."""
    for run in level.encodings:
        if not run.immutable:
            continue
        for name, meta in run.arrays.items():
            array = session.view.arrays.get(f"{level.path}/{name}")
            if not isinstance(array, FieldArray):
                continue
            key = f"{run.prefix}/{level.cell_order}/{name}/zarr.json"
            try:
                session.leaf_metas.put(key, judged(meta, array, key))
            except LeafSchemaError:
                continue


def size_known(session: HiveSession, plan: Plan) -> bool:
    """Whether one HEAD of ``plan.object`` gives the size of the bytes ``plan`` names: a
    whole object served as it is (``cut="object"``), of an immutable leaf version whose
    encoding is established."""
    return (
        isinstance(plan, LeafRead)
        and plan.cut == "object"
        and plan.byte_range is None
        and plan.immutable
        and session.leaf_metas.peek(plan.meta, None) == SAME
    )


async def object_size(session: HiveSession, plan: Plan) -> int | None:
    """The size of the bytes ``plan`` names without reading a chunk where that is known:
    documents, fabricated chunks, and whole objects served as they are, of a leaf whose
    encoding is already established (one HEAD); otherwise the chunk is read."""
    if size_known(session, plan):
        assert isinstance(plan, LeafRead)
        size = await session.backend.size(plan.object)
        if size is not None:
            return size  # else read: its version may be gone (execute finds out)
    data = await execute(session, plan)
    return None if data is None else len(memoryview(data).cast("B"))
