"""The read plan: what a virtual key maps to, as a plain frozen value.

``plan_key`` answers "what does key K map to?" for every consumer (the zarr Store, and
anything else that serves or exports the hierarchy). Planning reads nothing but a leaf's
commit stamp (cached), which names the version its bytes live in; ``plan_chunk`` is the
pure part, so a test can assert "key K maps to object O, bytes [a, b)" without I/O.

Plans that read a leaf object carry the key of the leaf array's own ``zarr.json``: the
executor establishes the leaf's encoding from it before any byte is served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..chunkbytes import ChunkCheck
from ..errors import (
    ChunkReadError,
    HiveFormatError,
    HiveReadError,
    LeafMovedError,
    ObjectReadError,
    OutsideRootError,
    TruncatedChunkError,
)
from ..hive.leaves import Leaf, LeafCache
from ..hive.presence import SAMPLE, Found
from ..io.slots import started
from ..view.arrays import FabricatedArray, FieldArray, LeafChunk
from ..view.computed import ComputedArray

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest

    from ..session import HiveSession

_V2_KEYS = frozenset({".zgroup", ".zattrs", ".zarray", ".zmetadata"})


SAME = "same"
"""What a session's leaf metadata cache keeps for a leaf array encoded as declared: its
chunks are served as planned."""

@dataclass(frozen=True)
class Document:
    """A node's ``zarr.json`` (or ``byte_range`` of it), generated from the view."""

    path: str
    byte_range: ByteRequest | None = None


@dataclass(frozen=True)
class Fabricate:
    """A coordinate chunk computed from the domain (``morton``, ``cell_ids``, windows)."""

    array: str
    coords: tuple[int, ...]
    byte_range: ByteRequest | None = None


@dataclass(frozen=True)
class Absent:
    """No bytes: the key names nothing, or a chunk with nothing stored (the fill value).

    ``problem`` (a :data:`~moczarr_store.diagnostics.KINDS` key) is set when the absence is
    damage to report, with the ``level`` and ``obj`` it concerns.
    """

    reason: str
    problem: str | None = None
    level: str = ""
    obj: str = ""
    source: str = ""  # what listed the object (the root MOC, the walk)
    # an overview or column object absent from this window: whether the level has any
    # object in it is checked once (an absent one is legitimate where others exist)
    window: str | None = None
    what: str = ""  # the problem said of this object (default: the kind's own words)


@dataclass(frozen=True, slots=True)
class LeafRead:
    """Bytes of one chunk object of one leaf.

    ``object`` is the hive-relative key read; ``meta`` the key of the leaf array's own
    ``zarr.json`` (the authority for the bytes); ``immutable`` says the object lives in a
    ``run-*`` version, so what is learned about it may be cached for good. ``cut`` (of the
    kind) says what of the object the chunk is, when the leaf is encoded as declared:
    ``"object"`` its bytes as they are, ``"reframed"`` a whole shard's inner chunks joined,
    ``"inner"`` one inner chunk its index locates, ``"values"`` none (its values are
    decoded and encoded again).
    """

    cut: ClassVar[str] = "object"

    array: str
    coords: tuple[int, ...]
    leaf: str
    object: str
    meta: str
    immutable: bool
    check: ChunkCheck = field(repr=False)
    byte_range: ByteRequest | None = None

    @property
    def version(self) -> str | None:
        """The ``run-*`` version read (``None``: an unversioned leaf, read in place)."""
        return self.object[len(self.leaf) + 1 :].partition("/")[0] if self.immutable else None


@dataclass(frozen=True, slots=True)
class Passthrough(LeafRead):
    """The object's bytes (or ``byte_range`` of them), as they are."""


@dataclass(frozen=True, slots=True)
class Reframe(LeafRead):
    """A shard object read whole; its inner chunks concatenated into one chunk."""

    cut: ClassVar[str] = "reframed"


@dataclass(frozen=True, slots=True)
class InnerRange(LeafRead):
    """Inner chunk ``part`` of a shard object, located by its index."""

    cut: ClassVar[str] = "inner"
    part: int = 0


@dataclass(frozen=True, slots=True)
class Recode(LeafRead):
    """A shard object of variable-length inner chunks presented as one chunk: its values
    decoded under the leaf array's own metadata and encoded as the view declares."""

    cut: ClassVar[str] = "values"


@dataclass(frozen=True)
class Span:
    """Consecutive leaves' chunks joined along ``cells`` (``chunking="span"``): each part is
    planned as that leaf's own chunk; ``None`` is a part past the domain's end (fill)."""

    array: str
    coords: tuple[int, ...]
    parts: tuple[LeafPlan | None, ...]
    byte_range: ByteRequest | None = None


@dataclass(frozen=True)
class Compute:
    """A chunk of a computed order: the fold of the source leaves beneath its node, read
    when it is executed (:mod:`.compute`)."""

    array: str
    coords: tuple[int, ...]
    byte_range: ByteRequest | None = None


LeafPlan = Absent | Passthrough | Reframe | InnerRange | Recode
Plan = Document | Fabricate | Absent | LeafRead | Span | Compute
OUTSIDE = Absent("outside the virtual hierarchy")


def damaged(err: BaseException, local: bool) -> bool:
    """Whether ``err`` says one leaf's own objects are damaged or refused: the package's
    read and format errors, except a stamp that moved under the read (the key is planned
    again), a link out of the hive root (refused with an error in every chunking), a
    request that failed (also as the cause of another error) and, from a remote backend
    (``local`` false), bytes cut short (as likely the server's fault as the object's).
    In a chunk joining several leaves such a leaf reads as missing (:func:`unreadable`):
    one bad leaf costs only its own rows."""
    if not isinstance(err, (HiveReadError, HiveFormatError)):
        return False
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, (LeafMovedError, OutsideRootError, ObjectReadError,
                              ChunkReadError)):
            return False
        cause = cause.__cause__
    return local or not isinstance(err, TruncatedChunkError)


def on_disk(session: HiveSession) -> bool:
    """Whether the session reads a local hive (bytes cut short are the object's)."""
    url = session.backend.url
    return url is not None and url.startswith("file://")


def unreadable(array: FieldArray, leaf: str, err: BaseException) -> Absent:
    """The part of a joined chunk whose leaf cannot be read (``err``, :func:`damaged`):
    missing, and noted when executed (one warning per level, naming the first such leaf
    and its error). No I/O."""
    reason = (str(err).splitlines() or [""])[0][:300]
    what = (f"cannot be read ({type(err).__name__}: {reason}), so its rows in a chunk it "
            "shares with other leaves read as missing")
    return Absent(f"leaf {leaf}: {reason}", "unreadable", array.level.path, leaf, what=what)


def document_path(key: str) -> str | None:
    """The node path whose ``zarr.json`` ``key`` names, or ``None``."""
    if key == "zarr.json":
        return ""
    return key[: -len("/zarr.json")] if key.endswith("/zarr.json") else None


def plan_chunk(
    array: FieldArray,
    coords: tuple[int, ...],
    leaf: Leaf,
    byte_range: ByteRequest | None = None,
    located: LeafChunk | None = None,
) -> LeafPlan:
    """The plan for chunk ``coords`` of field ``array``, given the leaf its bytes live in,
    as its stamp was read (``located``: ``array.locate(coords)``, if known). No I/O."""
    level = array.level
    if leaf.state != "stamped":
        if leaf.state == "absent" and array.gaps_by_design:
            window = None
            if level.artifact != "source" and level.window is None:
                window = (located or array.locate(coords)).window
            return Absent("no leaf for this node in this window", level=level.path,
                          obj=leaf.path, window=window)
        problem = leaf.state if leaf.state in ("debris", "linked") else "absent"
        return Absent(
            f"leaf {leaf.path}: {problem}", problem, level.path, leaf.path, level.coverage_source
        )
    located = located or array.locate(coords)
    refused = level.refusal(leaf, located.node, located.window)
    if refused is not None:
        kind, why = refused
        return Absent(f"leaf {leaf.path}: {why}", kind, level.path, leaf.path, what=why)
    current = leaf.current
    prefix = leaf.path if current is None else f"{leaf.path}/{current}"  # its data prefix
    read = (  # LeafRead's fields, in order
        array.path,
        coords,
        leaf.path,
        f"{prefix}/{located.key}",  # the object
        f"{prefix}/{array.group}/zarr.json",  # the leaf array's metadata
        current is not None,  # immutable: a run-* version
        array.check,
        byte_range,
    )
    mode = array.mode
    if mode == "leaf":
        return Reframe(*read)
    if mode == "inner":
        return InnerRange(*read, part=located.inner or 0)
    return Recode(*read) if mode == "recode" else Passthrough(*read)


async def plan_key(session: HiveSession, key: str, byte_range: ByteRequest | None = None) -> Plan:
    """What ``key`` maps to. Cost: a chunk key of a field reads its leaves' stamps once
    (cached; concurrently for a span); a key in a level not read yet reads that level's
    schema first."""
    if not isinstance(key, str) or key.rsplit("/", 1)[-1] in _V2_KEYS:
        return OUTSIDE
    if (path := document_path(key)) is not None:
        view = await session.ensure_levels(path)
        return Document(path, byte_range) if view.has_node(path) else OUTSIDE
    view = await session.ensure_levels(None)
    found = view.chunk(key)
    if found is None:  # perhaps in a level not read yet
        view = await session.ensure_levels(key)
        found = view.chunk(key)
    if found is None:
        return OUTSIDE
    array, coords = found
    if isinstance(array, FabricatedArray):
        return Fabricate(array.path, coords, byte_range)
    if isinstance(array, ComputedArray):
        return Compute(array.path, coords, byte_range)
    if array.span > 1:
        return await _span(session, array, coords, byte_range)
    located, path = array.located_object(coords)
    if path is None:
        return _UNCOVERED
    leaf = session.leaves.hit(path)
    node, presence = located.node, session.presence
    if leaf is None and node is not None and listable(array):  # a listing may know it
        listed = await presence.absent(session.backend, array.level, node)  # absent
        if listed is not None:
            return _listed_absent(array, path, listed)
        leaf = await session.leaves.resolve(path, session.backend.get)
        presence.tally(array.level.path, 1, leaf.state == "absent")
        if leaf.state == "absent" and (probed := await presence.probe(
                session.backend, array.level, node)):
            return _listed_absent(array, path, probed)
    return plan_chunk(array, coords, leaf or await session.leaves.resolve(
        path, session.backend.get), byte_range, located)


def listable(array: FieldArray) -> bool:
    """Whether the presence of ``array``'s objects (leaves, overview objects, columns) may
    be learned from listings (:mod:`~moczarr_store.hive.presence`): not a sphere's, nor a
    window's (a node may lack an object by design)."""
    return not (array.sphere or array.gaps_by_design)


def _listed_absent(array: FieldArray, path: str, found: Found) -> Absent:
    """The plan of a chunk of object ``path`` (absent from its level), its problem
    saying how many listed leaves the listing ``found`` found missing around it."""
    level = array.level
    return Absent(f"leaf {path}: absent", "absent", level.path, path, level.coverage_source,
                  what=found.what)


_UNCOVERED = Absent("no object covers this node (geometry='sphere')")


async def _span(
    session: HiveSession, array: FieldArray, coords: tuple[int, ...],
    byte_range: ByteRequest | None,
) -> Span:
    """A span's plan: each part planned as its leaf's chunk, stamps known to the cache or
    in the page cache without a task; the others read concurrently, once the backend has
    room for new work (a scan's spans do not all queue their requests at once). A span
    planned before is planned again only when the view's array or one of its leaves'
    cached stamps is another object than it was planned under (a cache look per part
    instead of planning it)."""
    key = (array.path, coords)
    known = session.span_plans.get(key)
    if known is not None and known.array is array and session.leaves.holds(known.under):
        return Span(array.path, coords, known.parts, byte_range)
    parts: list[LeafPlan | None] = []
    missing: dict[int, tuple[tuple[int, ...], LeafChunk, str]] = {}
    under: list[tuple[str, Leaf]] = []  # the stamps each part was planned under
    resolve_now, backend = session.leaves.resolve_now, session.backend
    answer = await _absent_parts(session, array, coords)  # no directory: no stamp read
    listed = None if answer is None else answer[0]
    absent: LeafPlan | None = None  # one plan for every part the listing found absent
    located_parts = _located(array, coords, listed)
    failed = session.leaves.stamps_now(  # the stamps read and kept in one pass where it can
        [found[2] for at, found in enumerate(located_parts) if found is not None
         and found[2] is not None and (listed is None or not listed[at])], backend)
    for at, found in enumerate(located_parts):
        if found is None:  # past the domain's end
            parts.append(None)
            continue
        part, located, path = found
        if answer is not None and answer[0][at]:
            absent = absent or _listed_absent(array, str(path), answer[1])
            parts.append(absent)
            continue
        try:
            if path in failed:
                raise failed[path]
            leaf = None if path is None else resolve_now(path, backend)
        except Exception as err:
            if not damaged(err, on_disk(session)):
                raise
            parts.append(unreadable(array, str(path), err))
            continue
        if path is None:
            parts.append(_UNCOVERED)
        elif leaf is None:
            missing[len(parts)] = (part, located, path)
            parts.append(None)
        else:
            parts.append(plan_chunk(array, part, leaf, None, located))
            under.append((path, leaf))
    if missing:
        room = backend.room(len(missing))  # waits while a cap's worth of requests waits
        if room is not None:
            await room
        stamps, get = session.leaves, backend.get
        local = on_disk(session)
        read = await asyncio.gather(*(started(_stamp(stamps, path, get, local))  # out at once
                                      for _, _, path in missing.values()))
        for (at, (part, located, path)), stamp in zip(missing.items(), read, strict=True):
            parts[at] = (plan_chunk(array, part, stamp, None, located)
                         if isinstance(stamp, Leaf) else unreadable(array, path, stamp))
    if listed is None:  # read from stamps: what they say of the level
        await _learn(session, array, coords, parts)
        if not missing:  # every stamp was cached: the plan holds while they are
            session.span_plans.put(key, _KeptSpan(array, tuple(parts), tuple(under)))
    return Span(array.path, coords, tuple(parts), byte_range)


async def _learn(session: HiveSession, array: FieldArray, coords: tuple[int, ...],
                 parts: list[LeafPlan | None]) -> None:
    """A span planned from its stamps: they are tallied (:meth:`~.presence.Presence.tally`),
    and the level's first leaf without a stamp has the run from it listed, its plan then
    saying how many listed leaves are missing there (:meth:`~.presence.Presence.probe`)."""
    gone = [at for at, part in enumerate(parts)
            if isinstance(part, Absent) and part.problem == "absent"]
    presence = session.presence
    presence.tally(array.level.path, sum(p is not None for p in parts), len(gone))
    if gone and listable(array):
        node = array.span_parts(coords)[gone[0]]
        first = parts[gone[0]]
        assert node is not None and isinstance(first, Absent)
        if probed := await presence.probe(session.backend, array.level,
                                          node[array.windowed]):
            parts[gone[0]] = _listed_absent(array, first.obj, probed)


BULK_PARTS = 64
"""Parts of a joined chunk whose stamps are unknown from which, while its level is not
known sparse, a sample of them is read first (:func:`_absent_parts`)."""


def _located(array: FieldArray, coords: tuple[int, ...], listed: list[bool] | None,
             ) -> list[tuple[tuple[int, ...], LeafChunk, str | None] | None]:
    """:meth:`FieldArray.span_objects`, or with ``listed`` (parts known absent) each
    part that may exist located alone, the absent ones only up to the first (no path
    made for the rest: a chunk of thousands of absent leaves costs what exists)."""
    if listed is None:
        return array.span_objects(coords)
    out: list[tuple[tuple[int, ...], LeafChunk, str | None] | None] = []
    first = True
    for part, gone in zip(array.span_parts(coords), listed, strict=True):
        if part is None or (gone and not first):
            out.append(None if part is None else (part, _NOWHERE, None))
            continue
        first = first and not gone
        out.append((part, *array.located_object(part)))
    return out


_NOWHERE = LeafChunk(None, None, "")  # a part the listing found absent, not located


async def _absent_parts(session: HiveSession, array: FieldArray, coords: tuple[int, ...],
                        ) -> tuple[list[bool], Found] | None:
    """For each part of span ``coords`` (:meth:`FieldArray.span_parts`), whether a
    listing found its leaf absent (:meth:`~.presence.Presence.gone`), with what that
    listing found; ``None`` when the stamps are read one by one. A chunk of at least
    ``BULK_PARTS`` parts in a level not known sparse reads ``SAMPLE`` of its stamps first,
    spread over it (read anyway), which may show the level sparse; if not, all its
    stamps are read and tallied, so a level is sparse by its next chunk at the latest."""
    spans = array.span_parts(coords)
    nodes = [part[array.windowed] for part in spans if part is not None]
    if not nodes or not listable(array):
        return None
    presence, level = session.presence, array.level
    if len(nodes) >= BULK_PARTS and presence.sparse(level.path) is None:
        step = len(nodes) // SAMPLE
        sample = await asyncio.gather(*(  # one from the middle of each SAMPLE-th
            _stamp(session.leaves, level.object_path(node), session.backend.get,
                   on_disk(session)) for node in nodes[step // 2 :: step][:SAMPLE]))
        presence.tally(level.path, len(sample), sum(
            isinstance(leaf, Leaf) and leaf.state == "absent" for leaf in sample))
    answer = await presence.gone(session.backend, level, nodes[0], nodes[-1])
    if answer is None:
        return None
    gone, found = answer
    return gone.tolist() + [False] * (len(spans) - len(gone)), found


async def _stamp(leaves: LeafCache, path: str, get: Callable[..., Any],
                 local: bool) -> Leaf | Exception:
    """``leaves.resolve(path, get)``, or the error saying the stamp is damaged
    (:func:`damaged`)."""
    try:
        return await leaves.resolve(path, get)
    except Exception as err:
        if not damaged(err, local):
            raise
        return err


@dataclass(frozen=True, slots=True)
class _KeptSpan:
    array: FieldArray  # the view's array it was planned for
    parts: tuple[LeafPlan | None, ...]
    under: tuple[tuple[str, Leaf], ...]  # each stamp a part was planned under, by path


class SpanPlans:
    """The span plans a session keeps (:func:`_span`), up to ``limit`` parts in all
    (``config["cache.span_parts"]``); all are let go when one more would not fit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[tuple[str, tuple[int, ...]], _KeptSpan] = {}
        self._parts = 0

    def get(self, key: tuple[str, tuple[int, ...]]) -> _KeptSpan | None:
        return self._kept.get(key)

    def put(self, key: tuple[str, tuple[int, ...]], kept: _KeptSpan) -> None:
        old = self._kept.pop(key, None)
        self._parts -= 0 if old is None else len(old.parts)
        if self._parts + len(kept.parts) > self.limit:
            self._kept.clear()
            self._parts = 0
        self._kept[key] = kept
        self._parts += len(kept.parts)
