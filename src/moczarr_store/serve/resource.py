"""One virtual key as an HTTP representation: its size, its entity tag and its bytes,
from the read plan of one generation.

Entity tags are strong and name what the bytes are:

- a chunk of an immutable leaf version (its stamp names a ``run-*`` version), or a span
  whose every leaf is one: a digest of the plan (per leaf the object key, which contains
  the version, the leaf array's metadata key in the same version and the inner chunk; the
  virtual array's declared encoding and this package's version). Known before any byte is
  read, so ``If-None-Match`` is answered with 304 from the stamps alone;
- documents, fabricated chunks and chunks of unversioned leaves (rewritten in place, so
  their key says nothing): a digest of the bytes, which are read to answer (an unversioned
  leaf's chunk is read whole on every request anyway).

Cost: a HEAD, or a ranged GET, of a whole passthrough object whose leaf encoding is
established asks the backend for its size only (one HEAD per object and generation); a
ranged GET of a span of immutable leaf versions reads only the leaf chunks the range falls
in (all of them when those are all absent, to tell an absent chunk); every other
representation is computed or read whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from zarr.abc.store import RangeByteRequest

from .. import __version__
from ..errors import TruncatedChunkError
from ..io.ranges import BytesLike
from ..read.execute import execute, size_known
from ..read.plan import Absent, Document, LeafRead, Plan
from ..read.plan import Span as SpanPlan
from ..view.arrays import FieldArray
from .generations import Generation
from .representation import ByteRange, content_tag, recipe_tag


@dataclass(frozen=True)
class Found:
    """A representation: ``data`` is its bytes, or ``None`` when only its size was read."""

    plan: Plan
    size: int
    etag: str
    data: memoryview | None

    @property
    def media_type(self) -> str:
        return "application/json" if isinstance(self.plan, Document) else "application/octet-stream"


def leaf_tag(generation: Generation, plan: Plan) -> str | None:
    """The entity tag of a chunk of immutable leaf versions (one leaf, or a span whose
    every leaf part is), from its plan; ``None`` for every other plan (tagged by content).
    Cost: a span planned from stamps that have not moved since it was last tagged (the
    same parts) takes its tag from ``generation.span_tags``; else a digest of its
    recipe."""
    if not isinstance(plan, SpanPlan):
        return _leaf_tag(generation, plan)
    key = id(plan.parts)  # the kept parts (see ``read.plan._span``) outlive the entry
    kept = generation.span_tags.hit(key)
    if kept is not None and kept[0] is plan.parts:
        return kept[1]
    tag = _leaf_tag(generation, plan)
    generation.span_tags.put(key, (plan.parts, tag))
    return tag


def _leaf_tag(generation: Generation, plan: Plan) -> str | None:
    if not isinstance(plan, LeafRead | SpanPlan):
        return None
    parts = plan.parts if isinstance(plan, SpanPlan) else (plan,)
    if not all(p is None or isinstance(p, Absent) and p.problem is None
               or isinstance(p, LeafRead) and p.immutable for p in parts):
        return None
    if not any(isinstance(p, LeafRead) for p in parts):
        return None
    array = plan.array
    declared = generation.declared.get(array)
    if declared is None:
        declared = "\0".join(generation.store.session.view.arrays[array].meta.chunk_encoding)
        generation.declared[array] = declared
    return recipe_tag("\0".join([__version__, declared, *map(_recipe, parts)]))


def _recipe(plan: LeafRead | Absent | None) -> str:
    """What determines the bytes of one leaf part: the plan kind, the object (its key names
    the version), the leaf metadata's key and the inner chunk; an absence by design by its
    reason; a part past the domain's end as ``-``."""
    if isinstance(plan, LeafRead):
        part = getattr(plan, "part", None)
        return f"{type(plan).__name__}\0{plan.object}\0{plan.meta}\0{part}"
    return "-" if plan is None else f"absent\0{plan.reason}"


def _bytes(data: BytesLike) -> memoryview:
    buf = memoryview(data)
    return buf if buf.format == "B" and buf.ndim == 1 else buf.cast("B")


async def find(generation: Generation, plan: Plan, tag: str | None, *, body: bool,
               part: bool = False) -> Found | None:
    """The representation ``plan`` names (``tag``: its ``leaf_tag``), or ``None`` when it
    has no bytes (404). With ``body=False`` the size alone is read where one HEAD gives it;
    with ``part`` (a ranged GET: its bytes are read by :func:`read_range`) a span of
    immutable leaf versions is sized from its parts, nothing read."""
    session = generation.store.session
    if part and tag is not None and isinstance(plan, SpanPlan):
        array = session.view.arrays[plan.array]
        assert isinstance(array, FieldArray)
        return Found(plan, len(plan.parts) * len(array.part_fill), tag, None)
    if not body and tag is not None and size_known(session, plan):
        assert isinstance(plan, LeafRead)
        key = plan.object
        size = await generation.sizes.get(key, lambda: session.backend.size(key))
        if size is not None:
            return Found(plan, size, tag, None)
    data = await execute(session, plan)
    if data is None:
        return None
    buf = _bytes(data)
    return Found(plan, len(buf), tag or content_tag(buf), buf)


async def read_range(generation: Generation, found: Found,
                     selected: ByteRange) -> memoryview | None:
    """Bytes ``selected`` of a representation: cut from its bytes, or one ranged read of its
    object (``None`` if the object is gone since its size was read)."""
    if found.data is not None:
        return found.data[selected.start : selected.end]
    if isinstance(found.plan, SpanPlan):
        return await _span_range(generation, found.plan, selected)
    assert isinstance(found.plan, LeafRead)  # only a leaf object's size is read alone
    plan = replace(found.plan, byte_range=RangeByteRequest(selected.start, selected.end))
    data = await execute(generation.store.session, plan)
    if data is None:
        return None
    buf = _bytes(data)
    if len(buf) != selected.end - selected.start:
        raise TruncatedChunkError(
            f"{plan.object}: {len(buf)} bytes at {selected.start} where its size "
            f"({found.size}) promised {selected.end - selected.start}"
        )
    return buf


async def _span_range(generation: Generation, plan: SpanPlan,
                      selected: ByteRange) -> memoryview | None:
    """Bytes ``selected`` of a span, reading only the parts they fall in; when those are
    all absent, the whole span (``None``: every part is absent, the chunk is)."""
    session = generation.store.session
    array = session.view.arrays[plan.array]
    assert isinstance(array, FieldArray)
    step = len(array.part_fill)  # every part is one leaf chunk of fixed size
    first, stop = selected.start // step, -(-selected.end // step)
    at = RangeByteRequest(selected.start - first * step, selected.end - first * step)
    data = await execute(session, replace(plan, parts=plan.parts[first:stop], byte_range=at))
    if data is None:
        data = await execute(session, plan)
        return None if data is None else _bytes(data)[selected.start : selected.end]
    buf, asked = _bytes(data), selected.end - selected.start
    if len(buf) != asked:
        key = f"{plan.array}/c/{'/'.join(map(str, plan.coords))}"
        raise TruncatedChunkError(f"{key}: {len(buf)} bytes where {asked} were asked")
    return buf


async def whole(generation: Generation, found: Found) -> memoryview | None:
    """All the bytes of a representation."""
    if found.data is not None:
        return found.data
    data = await execute(generation.store.session, found.plan)
    return None if data is None else _bytes(data)
