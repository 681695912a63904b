"""The read plan as byte references: every chunk of the exported arrays, planned exactly as
the store plans it, becomes a reference ``(object, offset, length)``, inline bytes, or
nothing (the fill value).

- ``Passthrough`` (``chunking="shard"``, and unsharded leaves in every mode): the whole
  object, after its size (plain chunks) or its shard index (crc32c, bounds) is checked.
- ``InnerRange`` (``"inner"``): the inner chunk's span in the verified shard index.
- ``Reframe`` (``"leaf"``): the payload span when every inner chunk is present and stored in
  order (one contiguous range); otherwise the re-framed bytes, inline.
- ``Recode`` (``"leaf"``, sharded variable-length values such as ragged digests): the
  values encoded anew as one chunk, inline.
- a leaf encoded otherwise than the view declares (e.g. a mixed writer run), any kind:
  the bytes the store serves, re-encoded as declared, inline. A reference cannot carry a
  re-encoding, and refusing would make mixed-writer hives unexportable.
- ``Fabricate`` (``morton``, ``cell_ids``, ``healpix_index``, windows, and the centres
  ``lon`` / ``lat`` with ``centres=True``): the computed bytes, inline; the
  per-cell coordinates ``morton`` and ``cell_ids``, when unsharded in chunks of at least
  ``COMPRESS_MIN_ROWS``, published with Blosc (zstd, byte shuffle) after their ``bytes``
  codec: far smaller, compressed quickly (computed, they would otherwise be most of an
  export's bytes). Sharded ones stay as served:
  a compressor after ``sharding_indexed`` would hide the sharding from zarr (its
  ``chunks`` would become the shard), so xarray would no longer chunk them as the fields;
  and compressing each small inner chunk apart costs a call per chunk, more than it saves.
- ``Absent``: no reference; damage (debris, a dangling version) is warned as the store warns.
- computed orders (``Compute``): left out of the export, groups and arrays. No object holds
  a fold's bytes to refer to, and inlining them would freeze at export time what a live
  hive recomputes; a reader of the references folds the stored orders itself, or reads
  the hive through the store.

``relayout=True`` (the export's ``chunking="auto"``; the session plans ``"shard"``): a group
whose every field chunk is a reference to a whole object, each shard's inner chunks all
present and back to back in order, is published in the ``"leaf"`` layout instead (one
payload range per leaf, its coordinates per leaf and compressed): the same references
without the shard indexes, and no per-inner-chunk coordinates. Any other group (a gap in a
shard, an inline chunk) keeps the ``"shard"`` layout, every chunk a pure reference. Cost:
no request beyond the plan's, plus a leaf-chunked view's open when a group qualifies.

Cost: per leaf its stamp (cached), per (leaf, field) the leaf array metadata where not
already known, and per referenced object one request that gives the sources table its
size, ETag and mtime: the ranged GET of a shard's index (verified), or a HEAD of a plain
chunk. Inline chunks are read whole. Memory: the references (a few dozen bytes each)
plus the inline bytes.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np
from numcodecs import Blosc

from ..cache import AsyncCache
from ..chunkbytes import ABSENT, ChunkCheck, in_order, index_entries, index_range, inner_range
from ..errors import OptionError, TruncatedChunkError
from ..hive.arraymeta import ArrayMeta, codec_chain
from ..io.ranges import BytesLike
from ..io.reader import ObjectStat
from ..read.execute import encoded_as_declared, execute
from ..read.plan import Absent, InnerRange, LeafRead, Passthrough, Recode, Reframe, plan_chunk
from ..view.arrays import FabricatedArray, FieldArray

if TYPE_CHECKING:
    from ..session import HiveSession

JOBS = 64  # chunks planned concurrently (the backend caps requests in flight)
FABRICATED_RUN = 256  # coordinate chunks computed in one pass (a few MB: compressed while
# in the CPU's cache, ~25% faster than 4,096)
# The codec appended to the per-cell coordinates' ``bytes`` codec in exports: sorted 8-byte
# ids shuffle into long runs. Smaller chunks compress poorly and cost a call each.
COMPRESSED: dict[str, Any] = {"name": "blosc", "configuration": {
    "cname": "zstd", "clevel": 1, "shuffle": "shuffle", "typesize": 8, "blocksize": 0}}
COMPRESS_MIN_ROWS = 512
Source = tuple[ObjectStat, "np.ndarray | None"]  # an object's stat, and a shard's index rows


@dataclass(slots=True)
class Chunk:
    """One present chunk: a reference to ``source`` (a hive-relative object key) or
    ``data`` (inline). ``info`` says which: ``ref``, or why the bytes are inline
    (``fabricated``, ``transcoded``, ``reframed``)."""

    coords: tuple[int, ...]
    info: str
    source: str | None = None
    offset: int = 0
    length: int = 0
    data: bytes | None = None
    # a whole shard in order: its payload as one range ((offset, length); (): no inner chunk)
    payload: tuple[int, ...] | None = None
    rewritable: bool = False  # a reference into an object rewritten in place (no run-* version)


@dataclass
class ArrayRefs:
    """One virtual array: its published metadata and its present chunks."""

    path: str
    meta: ArrayMeta
    kind: str  # "field" or "coordinate"
    grid: tuple[int, ...]
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def storage(self) -> str:
        """``referenced`` (every present chunk a reference), ``inline``, ``mixed``, or
        ``empty`` (no chunk present: every value is the fill value)."""
        infos = {c.info == "ref" for c in self.chunks}
        if not infos:
            return "empty"
        if infos == {True}:
            return "referenced"
        return "mixed" if len(infos) == 2 else "inline"


@dataclass
class Collected:
    """What an export writes: groups, arrays, and the objects referenced."""

    root: str  # the hive root URL, with a trailing slash
    chunking: str | int
    groups: dict[str, dict[str, Any]] = field(default_factory=dict[str, Any])  # path -> attributes
    arrays: dict[str, ArrayRefs] = field(default_factory=dict)
    sources: dict[str, ObjectStat] = field(default_factory=dict)  # object key -> stat
    layouts: dict[str, str] = field(default_factory=dict)  # group -> "leaf"/"shard" (auto)

    def rewritable(self) -> list[str]:
        """The objects referenced that a later run rewrites in place, sorted."""
        return sorted({c.source for a in self.arrays.values() for c in a.chunks
                       if c.rewritable and c.source is not None})

    def url(self, key: str) -> str:
        """The source URL of hive-relative object ``key``: its path segments percent-encoded
        (a name holding ``%``, ``#``, ``?`` or a space is a URL of that very object, which
        a reader decodes; ``coun%74`` must not name ``count``)."""
        return self.root + quote(key, safe="/")

    def counts(self) -> dict[str, int]:
        chunks = [c for a in self.arrays.values() for c in a.chunks]
        refs = [c for c in chunks if c.info == "ref"]
        inline = [c for c in chunks if c.info != "ref"]
        return {
            "arrays": len(self.arrays),
            "groups": len(self.groups),
            "chunks_referenced": len(refs),
            "chunks_referenced_rewritable": sum(c.rewritable for c in refs),
            "chunks_inline": len(inline),
            "bytes_referenced": sum(c.length for c in refs),
            "bytes_inline": sum(len(c.data or b"") for c in inline),
            "sources": len(self.sources),
        }


def in_groups(path: str, groups: Iterable[str] | None) -> bool:
    """Whether node ``path`` is under (or is) one of ``groups`` (none: everything)."""
    wanted = [g.strip("/") for g in groups or ()]
    return not wanted or any(not g or path == g or path.startswith(g + "/") for g in wanted)


def _ancestors(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(len(parts)):
        yield "/".join(parts[:i])


async def collect(
    session: HiveSession,
    root: str,
    groups: Iterable[str] | None = None,
    progress: Any = None,
    relayout: bool = False,
) -> Collected:
    """Every chunk of every array under ``groups`` as a :class:`Chunk`, planned by the
    store's read plan. ``progress`` (a ``tqdm``-like bar) is reset to the number of chunks
    and updated as they are planned. ``relayout``: publish the groups that qualify in the
    leaf layout (see the module's docstring; the session must plan ``"shard"``)."""
    view = await session.ensure_levels("")
    if root.startswith("file://"):  # the store's file:// URLs are plain paths: encode
        root = "file://" + quote(root[len("file://"):], safe="/")
    out = Collected(root if root.endswith("/") else root + "/",
                    "auto" if relayout else session.options.chunking)
    for group in groups or ():  # each must name something: a typo is not left out silently
        if not any(in_groups(p, [group]) for p in view.arrays):
            from ..hints import missing_group

            raise OptionError(missing_group(group, view.groups))
    # computed orders are left out: no object holds their bytes to refer to
    computed = {path for path, level in view.levels.items() if level.artifact == "computed"}
    arrays = [view.arrays[p] for p in view.arrays
              if in_groups(p, groups) and _group(p) not in computed]
    if not arrays:
        raise OptionError("the hive has no array to export")
    keep = {a for array in arrays for a in _ancestors(array.path)}
    keep |= {g for g in view.groups if g and in_groups(g, groups)
             and any(a.path.startswith(g + "/") for a in arrays)}
    out.groups = {g: view.groups[g].attrs for g in view.groups if g in keep}
    for array in arrays:
        kind = "coordinate" if isinstance(array, FabricatedArray) else "field"
        out.arrays[array.path] = ArrayRefs(array.path, array.meta, kind, tuple(array.grid))
    fields = [a for a in arrays if isinstance(a, FieldArray)]
    coordinates = [a for a in arrays if isinstance(a, FabricatedArray)]
    work = [(a, c) for a in fields for c in itertools.product(*(range(n) for n in a.grid))]
    if progress is not None:
        progress.reset(total=len(work) + sum(a.grid[0] for a in coordinates if a.grid))
    sources: AsyncCache[Source | None] = AsyncCache(1 << 22)
    queue = iter(work)

    async def worker() -> None:
        for array, coords in queue:
            chunk = await _chunk(session, array, coords, sources, relayout)
            if chunk is not None:
                out.arrays[array.path].chunks.append(chunk)
                source = None if chunk.source is None else sources.peek(chunk.source)
                if isinstance(source, tuple):
                    out.sources[chunk.source] = source[0]  # type: ignore[index]
            if progress is not None:
                progress.update(1)

    tasks = [asyncio.ensure_future(worker()) for _ in range(JOBS)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:  # the first failure ends the export: stop the other workers
        for task in tasks:
            task.cancel()
        raise
    if relayout:
        coordinates = await _relayout(session, out, coordinates)
    for coordinate in coordinates:
        _fabricated(coordinate, out.arrays[coordinate.path], progress)
    for refs in out.arrays.values():
        refs.chunks.sort(key=lambda c: c.coords)
    return out


def _group(path: str) -> str:
    return path.rpartition("/")[0]


async def _relayout(session: HiveSession, out: Collected,
                    coordinates: list[FabricatedArray]) -> list[FabricatedArray]:
    """Decide each group's layout (``out.layouts``) and rewrite the field references of
    the groups published in the leaf layout; returns the coordinates to fabricate, each
    from the view its group follows."""
    fields: dict[str, list[ArrayRefs]] = {_group(path): [] for path in out.arrays}
    for refs in out.arrays.values():
        if refs.kind == "field":
            fields[_group(refs.path)].append(refs)
    out.layouts = {g: "shard" for g in fields}
    ready = [g for g, members in fields.items()
             if all(c.info == "ref" for r in members for c in r.chunks)]
    if not ready:
        return coordinates
    from ..session import HiveSession  # the session module imports the read plan

    leaf = HiveSession(session.backend, replace(session.options, chunking="leaf"))
    leaf_arrays = (await leaf.ensure_levels("")).arrays
    for group in ready:
        # an array presented alike in both layouts (unsharded leaves) keeps its references
        relaid = [r for r in fields[group] if r.meta != leaf_arrays[r.path].meta]
        if any(c.payload is None for r in relaid for c in r.chunks):
            continue  # a shard with a gap or out of order: the group stays as planned
        out.layouts[group] = "leaf"
        for refs in relaid:
            refs.meta = leaf_arrays[refs.path].meta
            refs.chunks = [_leaf_ref(c) for c in refs.chunks if c.payload]
    relaid_coordinates = []
    for array in coordinates:
        if out.layouts[_group(array.path)] == "leaf":
            array = leaf_arrays[array.path]  # type: ignore[assignment]
            out.arrays[array.path].meta = array.meta
        relaid_coordinates.append(array)
    return relaid_coordinates


def _leaf_ref(chunk: Chunk) -> Chunk:
    """A whole shard's reference in the leaf layout: its payload range."""
    offset, length = chunk.payload or ()
    return Chunk(chunk.coords, "ref", chunk.source, offset, length, rewritable=chunk.rewritable)


def _fabricated(array: FabricatedArray, refs: ArrayRefs, progress: Any) -> None:
    """Every chunk of a coordinate array, inline, computed in runs of ``FABRICATED_RUN``
    (and compressed as they come, where :func:`_compressible`)."""
    encode = _compressor(refs) if _compressible(array.meta) else None
    total = array.grid[0] if array.grid else 0  # a scalar has no chunk
    for first in range(0, total, FABRICATED_RUN):
        stop = min(first + FABRICATED_RUN, total)
        for i, data in enumerate(array.fabricate_run(first, stop), first):
            refs.chunks.append(Chunk((i,), "fabricated",
                                     data=encode(data) if encode else bytes(data)))
        if progress is not None:
            progress.update(stop - first)


def _compressible(meta: ArrayMeta) -> bool:
    """Whether a coordinate is published compressed: a per-cell one (8-byte values),
    unsharded, in chunks of at least ``COMPRESS_MIN_ROWS``."""
    return (meta.dimension_names == ("cells",)
            and meta.data_type in ("uint64", "int64")
            and [c.name for c in meta.codecs] == ["bytes"]
            and meta.chunk_shape[0] >= COMPRESS_MIN_ROWS)


def _compressor(refs: ArrayRefs) -> Callable[[BytesLike], bytes]:
    """Publish a per-cell coordinate compressed: :data:`COMPRESSED` appended to its codecs;
    returns the encoder of its chunks. Cost: one Blosc encode per chunk."""
    compressed = codec_chain([COMPRESSED])
    refs.meta = refs.meta.derive(codecs=[*refs.meta.codecs, *compressed])
    config = compressed[0].configuration
    codec = Blosc(cname=config["cname"], clevel=config["clevel"], shuffle=Blosc.SHUFFLE,
                  blocksize=config["blocksize"], typesize=config["typesize"])
    encode: Callable[[BytesLike], bytes] = codec.encode
    return encode


async def _source(session: HiveSession, plan: LeafRead) -> Source | None:
    """The object's stat and, for a shard, its verified index rows, from one request: a
    HEAD (a plain chunk) or the ranged GET of the index, so that the stat recorded and the
    index read describe one version of the object. ``None``: no such object."""
    key, check = plan.object, plan.check
    if not check.shard_chunks:
        stat = await session.backend.stat(key)
        return None if stat is None else (stat, None)
    got = await session.backend.get_stat(key, index_range(check))
    if got is None:
        return None
    index, stat = got
    return stat, index_entries(index, check, key, stat.size)


async def _chunk(
    session: HiveSession, array: FieldArray, coords: tuple[int, ...],
    sources: AsyncCache[Source | None], relayout: bool = False,
) -> Chunk | None:
    located, path = array.located_object(coords)
    if path is None:  # a sphere node no object covers: the fill value, no reference
        return None
    leaf = await session.leaves.resolve(path, session.backend.get)
    plan = plan_chunk(array, coords, leaf, located=located)
    if isinstance(plan, Absent):
        await execute(session, plan)  # damage is reported as the store reports it
        return None
    if isinstance(plan, Recode):  # variable-length values encoded anew: no object holds them
        return await _inline(session, plan, coords, "recoded")
    chunk = await _referenced(session, plan, coords, sources, relayout)
    if chunk is not None and chunk.info == "ref":
        chunk.rewritable = not plan.immutable
    return chunk


async def _referenced(
    session: HiveSession, plan: LeafRead, coords: tuple[int, ...],
    sources: AsyncCache[Source | None], relayout: bool,
) -> Chunk | None:
    """A leaf chunk as a reference into its object, or inline where it cannot be one."""
    same = await encoded_as_declared(session, plan)
    if not same:  # None: no such array in the leaf version (read, and reported, as missing)
        return await _inline(session, plan, coords, "transcoded")
    source = await sources.get(plan.object, lambda: _source(session, plan))
    if source is None:
        return await _inline(session, plan, coords, "missing")
    stat, entries = source
    if isinstance(plan, Passthrough):
        payload = None
        if relayout and entries is not None:
            payload = _contiguous(entries, plan.check, stat.size)
        return _whole(plan, coords, stat, payload)
    assert entries is not None  # a shard's source carries its index
    if isinstance(plan, InnerRange):
        inner = inner_range(entries, plan.part)
        if inner is None:
            return None
        return Chunk(coords, "ref", plan.object, inner.start, inner.end - inner.start)
    assert isinstance(plan, Reframe)
    payload = _contiguous(entries, plan.check, stat.size)
    if payload is None:
        return await _inline(session, plan, coords, "reframed")
    if not payload:
        return None
    offset, length = payload
    return Chunk(coords, "ref", plan.object, offset, length)


def _whole(plan: Passthrough, coords: tuple[int, ...], stat: ObjectStat,
           payload: tuple[int, ...] | None = None) -> Chunk:
    """A whole object, its shard index verified (by :func:`_source`) or its size checked
    (``payload``: see :attr:`Chunk.payload`)."""
    check = plan.check
    if not check.shard_chunks and check.nbytes is not None and stat.size != check.nbytes:
        raise TruncatedChunkError(
            f"{plan.object}: an uncompressed chunk of {check.nbytes} bytes was expected, "
            f"the object has {stat.size}"
        )
    if stat.size == 0:
        raise TruncatedChunkError(f"{plan.object}: the object is empty")
    return Chunk(coords, "ref", plan.object, 0, stat.size, payload=payload)


def _contiguous(entries: np.ndarray, check: ChunkCheck, size: int) -> tuple[int, ...] | None:
    """``(offset, length)`` of a shard's inner chunks stored whole, back to back and in
    order; ``()`` when every inner chunk is absent; ``None`` when they cannot be one range."""
    if in_order(entries, check, size):
        return int(entries[0, 0]), (check.inner_nbytes or 0) * len(entries)
    return () if (entries[:, 0] == np.uint64(ABSENT)).all() else None


async def _inline(
    session: HiveSession, plan: LeafRead, coords: tuple[int, ...], info: str,
) -> Chunk | None:
    """The chunk as the store serves it, inline; ``None`` when it reads as the fill value."""
    data = await execute(session, plan)
    if data is None:
        return None
    return Chunk(coords, info, data=bytes(memoryview(data).cast("B")))


def published(remap: list[tuple[str, str]]) -> Callable[[str], str]:
    """The publish rule: a URL with the longest matching prefix of ``remap`` replaced."""
    rules = sorted(remap, key=lambda r: len(r[0]), reverse=True)

    def apply(url: str) -> str:
        for prefix, new in rules:
            if url.startswith(prefix):
                return new + url[len(prefix) :]
        return url

    return apply
