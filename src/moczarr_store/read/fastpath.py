"""The fast path of a span: its leaf chunks served from the page cache without a task
per part, mapped side by side (:mod:`..mapped`) or read straight into one buffer; any
other read goes the general way (:mod:`.execute`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import state
from ..chunkbytes import full_shard, reframe
from ..io.backend import Backend
from ..tunables import setting
from .plan import SAME, LeafRead, Plan

if TYPE_CHECKING:
    from ..session import HiveSession


def read_cached_span(session: HiveSession, parts: Sequence[Plan | None],
                     fill: bytes, mapped: bool = True) -> memoryview | None:
    """A span served from the page cache, each part exactly as :func:`.execute.execute`
    serves it,
    when every part is a whole leaf chunk of an immutable version whose encoding is
    established (a plain chunk, or a shard of uncompressed inner chunks) and every object
    is there; ``None`` otherwise (the parts are then executed as usual; damage is reported
    there). Objects whose data fills whole pages, each a plain chunk or a shard written in
    order with its index at the end, are mapped side by side (:mod:`..mapped`: no copy;
    kept mapped, a ``stat`` per object). Else one ``preadv`` per object into one buffer, no
    task, no copy for a plain chunk of the chunk's size or a full shard written in order (its
    index compared with that layout's bytes, as :func:`reframe` does); a shard laid out
    otherwise is re-framed from its bytes (one copy). What the parts' plans alone decide is
    worked out once per ``parts`` (:func:`_layout`); each call then looks up each leaf's
    established encoding. ``mapped`` false: never mapped (a span read once)."""
    backend = session.backend
    pool = backend.buffers
    if pool is None:  # not a local hive
        return None
    layout = _layout(parts, len(fill))
    if layout is None:
        return None
    metas, layouts, objects = layout
    peek = session.leaf_metas.peek
    if not all(peek(meta) == SAME for meta in metas):
        return None
    if mapped and objects is not None:
        found = backend.mapped_span(objects, len(fill))
        if found is not None:
            return found
    return _read_into(backend, pool.take(len(fill) * len(parts)), layouts, fill)


_Layout = tuple[tuple[str, ...], list[tuple[LeafRead, bytes] | None],
                list[tuple[str, bytes]] | None]


class Layouts:
    """Span layouts by ``(id(parts), step)`` (with the ``parts`` they were made for), their
    parts counted: at most ``config["cache.span_parts"]``, all let go when one more would
    not fit. This module's part of the process state."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, int], tuple[Sequence[Plan | None], _Layout | None]] = {}
        self.parts = 0


LAYOUTS = state.Part("span layouts for the fast path", Layouts)


def _layout(parts: Sequence[Plan | None], step: int) -> _Layout | None:
    """What :func:`read_cached_span` can decide from the plans of ``parts`` alone, chunks
    of ``step`` bytes: the leaf metadata keys whose encoding must be established, each
    part's ``(plan, index bytes)`` (``None``: past the domain's end), and the objects to
    map (``None``: read them); ``None`` when the span cannot take the fast path. Plans
    are frozen and a span's are reused while its stamps hold: kept per ``parts`` object
    (one dict look a call instead of the checks of every part)."""
    slot, layouts_kept = (id(parts), step), LAYOUTS()
    kept = layouts_kept.kept.get(slot)
    if kept is not None and kept[0] is parts:
        return kept[1]
    layouts: list[tuple[LeafRead, bytes] | None] = []
    found: _Layout | None = None
    for plan in parts:
        if plan is None:  # past the domain's end
            layouts.append(None)
            continue
        if (not isinstance(plan, LeafRead) or plan.cut not in ("object", "reframed")
                or not plan.immutable or plan.byte_range is not None):
            break
        check = plan.check
        if plan.cut == "object":  # a plain chunk: no index
            if check.shard_chunks or check.nbytes != step:
                break
            layouts.append((plan, b""))
            continue
        shard = full_shard(check)
        if shard is None or shard[0] - len(shard[1]) != step:
            break
        layouts.append((plan, shard[1]))
    else:
        whole = [layout for layout in layouts if layout is not None]  # none past the end
        mappable = len(whole) == len(parts) and all(not want or plan.check.index_at_end
                                                    for plan, want in whole)
        found = (tuple(plan.meta for plan, _ in whole), layouts,
                 [(plan.object, want) for plan, want in whole] if mappable else None)
    if layouts_kept.parts + len(parts) > setting("cache.span_parts"):
        layouts_kept.kept.clear()
        layouts_kept.parts = 0
    if slot not in layouts_kept.kept:
        layouts_kept.parts += len(parts)
    layouts_kept.kept[slot] = (parts, found)
    return found


def _read_into(backend: Backend, out: memoryview,
                      layouts: list[tuple[LeafRead, bytes] | None],
                      fill: bytes) -> memoryview | None:
    """The span of :func:`read_cached_span` read into ``out`` (see there)."""
    step = len(fill)
    slots: list[tuple[LeafRead, memoryview, bytearray, bytes]] = []
    reads: list[tuple[str, list[memoryview]]] = []
    for at, layout in enumerate(layouts):
        into = out[at * step : (at + 1) * step]
        if layout is None:
            into[:] = fill
            continue
        plan, want = layout
        index = bytearray(len(want))
        pieces = [into] if not want else (
            [into, memoryview(index)] if plan.check.index_at_end else [memoryview(index), into])
        slots.append((plan, into, index, want))
        reads.append((plan.object, pieces))
    got = backend.read_cached_into(reads) if reads else None
    if got is None:
        return None
    for (plan, into, index, want), data in zip(slots, got, strict=True):
        check = plan.check
        if data is None and index == want:  # in place: a plain chunk, or a shard in order
            continue
        if not want:  # a plain chunk of another size: read as usual (its error named there)
            return None
        if data is None:  # in place, another layout: re-framed from its bytes
            data = bytes(into) + index if check.index_at_end else bytes(index) + bytes(into)
        framed = reframe(data, check, plan.object)
        if framed is None or len(framed) != step:  # no inner chunk stored: executed one by
            return None  # one (damage is reported)
        into[:] = framed
    return out
