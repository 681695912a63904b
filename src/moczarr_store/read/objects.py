"""A leaf chunk's bytes read from its object and cut as its plan's kind says
(``LeafRead.cut``), checked against the plan's :class:`~moczarr_store.chunkbytes.ChunkCheck`.
Nothing here knows of leaf metadata or stamps: :func:`.execute.read_leaf` reads these bytes
while it establishes the leaf's encoding, and judges them once it is known.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..cache import AsyncCache
from ..chunkbytes import (
    ChunkCheck,
    check_chunk,
    inner_range,
    load_index,
    reframe,
    shard_entries,
    shard_passthrough,
)
from ..errors import ChunkReadError, ObjectReadError, OutsideRootError, TruncatedChunkError
from ..io.ranges import ByteRequest, BytesLike, slice_bytes
from .plan import InnerRange, LeafRead

if TYPE_CHECKING:
    from ..session import HiveSession

HELD = object()  # a chunk its object's shard index marks absent (the object is there)


async def read_object(
    session: HiveSession, key: str, byte_range: ByteRequest | None = None
) -> BytesLike | None:
    """The object's bytes (or ``byte_range`` of them), ``None`` if there is none."""
    got = await read_sized(session, key, byte_range)
    return None if got is None else got[0]


async def read_sized(
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


async def _as_stored(session: HiveSession, plan: LeafRead) -> BytesLike | None:
    """``cut="object"``: the object (or ``byte_range`` of it) as it is, checked
    (:func:`~moczarr_store.chunkbytes.shard_passthrough`). Cost: one GET; a range of a shard
    other than its index, one more for the index when it is not cached."""
    # a shard's verified index is remembered for immutable objects only: a rewritten
    # object's ranges are checked against its index as it is now
    indexes = session.indexes if plan.immutable else AsyncCache(1)
    read = functools.partial(read_sized, session)
    return await shard_passthrough(read, indexes, plan.object, plan.check, plan.byte_range)


async def _reframed(session: HiveSession, plan: LeafRead) -> Any:
    """``cut="reframed"``: a shard object read whole, its inner chunks joined into one
    chunk (:func:`~moczarr_store.chunkbytes.reframe`); :data:`HELD` when it stores none.
    Cost: one GET."""
    data = await read_object(session, plan.object)
    framed = None if data is None else reframe(data, plan.check, plan.object)
    if framed is None:
        return None if data is None else HELD
    return slice_bytes(framed, plan.byte_range)


async def _inner_chunk(session: HiveSession, plan: LeafRead) -> Any:
    """``cut="inner"``: one inner chunk of a shard object: by range after one cached index
    read (immutable objects), else cut from one read of the whole object (``None``: no
    object; :data:`HELD`: the chunk absent from its index). Cost: one GET, and one for the
    index when it is not cached."""
    assert isinstance(plan, InnerRange)
    key, check = plan.object, plan.check
    if not plan.immutable:
        whole = await read_object(session, key)
        if whole is None:
            return None
        inner = inner_range(shard_entries(whole, check, key), plan.part)
        if inner is None:
            return HELD
        data: BytesLike | None = memoryview(whole)[inner.start : inner.end]
    else:
        read = functools.partial(read_sized, session)
        entries = await session.indexes.get(key, lambda: load_index(read, key, check))
        inner = None if entries is None else inner_range(entries, plan.part)
        if inner is not None:
            data = await read_object(session, key, inner)
    if inner is None:
        return None if entries is None else HELD
    size = inner.end - inner.start
    if data is None or len(memoryview(data)) != size:
        raise TruncatedChunkError(f"{key}: its index promised {size} bytes at {inner.start}")
    check_chunk(data, ChunkCheck(nbytes=check.inner_nbytes), None, key)
    return slice_bytes(data, plan.byte_range)


async def _no_bytes(session: HiveSession, plan: LeafRead) -> None:
    """``cut="values"``: no bytes served as they are (the values are encoded anew)."""
    return None


CUTS: dict[str, Callable[[HiveSession, LeafRead], Awaitable[Any]]] = {
    "object": _as_stored, "reframed": _reframed, "inner": _inner_chunk, "values": _no_bytes}
"""How each ``LeafRead.cut`` reads its chunk: the bytes, checked; ``None`` when there is no
object, :data:`HELD` when its shard index says the chunk is absent."""
