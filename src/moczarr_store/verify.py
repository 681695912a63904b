"""Verify a hive against its commit stamps' content hashes, through the store's read path.

zagg records, in every commit stamp, one sha256 per array of the object
(``morton_hive_commit.content_hashes = {"arrays": {"7/count": hex, ...}, "combined": hex}``):
over the array's decoded values in C order, little-endian, at the leaf's own dtype
(unwritten chunks count as fill), variable-length cells as ``u64le(len) || payload``;
``combined`` is the sha256 of the sorted hex digests joined by newlines.

:func:`verify_hive` recomputes those hashes from what the store *serves*: every chunk of a
field comes from the read plan and its executor (``plan_chunk``, then ``read_leaf_chunks``:
``execute`` for all of one object's chunks at once, the path ``MocHiveStore.get`` takes),
decoded under the virtual array's metadata (numpy for plain chunks, zarr's codecs once per
leaf array otherwise) and cast back to the leaf array's own dtype (the virtual dtype may be
a promoted one); ``morton`` and ``cell_ids`` are the store's fabricated coordinates (a
D24 region's, which only computed orders read, are made as for a level of its own). A stamp
without a record is *unverifiable*, not tampered; a run that verified no object at all is
*unchecked*, not a success (``VerifyReport.status``). The hashes are integrity, not
authenticity: whoever can rewrite the values can rewrite the stamp's hashes with them.

Cost: per object, one GET of its stamp, one per chunk of each served array, plus one per
leaf array's ``zarr.json`` where the session does not know it yet. CPU: the event loop
reads and decodes, ``threads`` worker threads cast and hash (one job per object). Memory:
``jobs`` objects in flight, each holding its arrays' decoded values once.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from zarr import AsyncArray
from zarr.buffer import default_buffer_prototype

# zarr internals with no public equivalent in zarr 3.1.6 and 3.4.2: zarr.dtype.parse_dtype
# falls back to numpy's reading of a string a v3 document does not name; metadata classes
# are not exported
from zarr.core.dtype import get_data_type_from_json
from zarr.core.metadata.v3 import ArrayV3Metadata
from zarr.storage import MemoryStore, StorePath

from .errors import OptionError
from .hive.arraymeta import ArrayMeta, parse_array
from .hive.jsonio import read_document
from .hive.leaves import Leaf, parse_leaf
from .hive.level import COORDINATE_NAMES, Level
from .read.execute import Bytes, read_leaf_chunks
from .read.plan import (
    Absent,
    LeafRead,
    plan_chunk,
)
from .view.arrays import FabricatedArray, FieldArray, cell_coordinate, domain_position
from .view.computed import ComputedArray

if TYPE_CHECKING:
    from .session import HiveSession
    from .store import MocHiveStore

JOBS = 32  # objects verified concurrently
THREADS = 2  # worker threads casting and hashing (hashlib releases the GIL)
MAX_NAMES = 10_000  # names kept per informational list (counts are always exact)
VLEN_PREFIX = 8  # bytes of the little-endian length before each variable-length cell
Status = Literal["clean", "mismatch", "error", "unverifiable"]


class Progress(Protocol):
    """What :func:`verify_hive` reports progress to (a ``tqdm`` bar fits)."""

    def reset(self, total: int | None = None) -> None: ...

    def update(self, n: int = 1) -> Any: ...


@dataclass(frozen=True)
class ArrayProblem:
    """One array of an object that does not verify.

    ``kind``: ``mismatch`` (the values served hash differently), ``missing`` (recorded,
    but the object holds no such array), ``unrecorded`` (the object holds an array its
    record omits), ``combined`` (the record's combined hash disagrees with its own
    per-array hashes), ``error`` (the store could not read it), ``misplaced`` (the
    object's commit stamp, ``zarr.json``, says it was written for another node or window),
    ``refused`` (its role or provenance block is not its level's: :meth:`Level.refusal`).
    The last two are served as the fill value.
    """

    array: str
    kind: str
    detail: str
    recorded: str | None = None
    computed: str | None = None


@dataclass
class ObjectVerdict:
    """The verdict on one stamped object as one level serves it."""

    level: str
    object: str
    status: Status
    checked: int = 0  # arrays compared with the record
    problems: list[ArrayProblem] = field(default_factory=list)
    unserved: list[str] = field(default_factory=list)  # recorded, not served: not checked
    nbytes: int = 0  # decoded bytes hashed


@dataclass
class VerifyReport:
    """Every verdict that is not ``clean``, and counts of the rest."""

    source: str
    objects: int = 0
    clean: int = 0
    failures: list[ObjectVerdict] = field(default_factory=list)  # mismatch and error
    unverifiable: list[ObjectVerdict] = field(default_factory=list)
    n_unverifiable: int = 0
    not_stamped: list[str] = field(default_factory=list)  # debris / absent, skipped
    n_not_stamped: int = 0
    unserved: list[ObjectVerdict] = field(default_factory=list)  # clean, with arrays unserved
    arrays: int = 0
    nbytes: int = 0
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """``failed``: an array mismatched or an object could not be read; ``unchecked``:
        no object was verified (every stamp records no hashes, or none was found), which is
        not a success; ``verified``: at least one object was, and none failed."""
        if self.failures:
            return "failed"
        return "verified" if self.clean else "unchecked"

    @property
    def ok(self) -> bool:
        """Something was verified and nothing failed (unverifiable objects aside)."""
        return self.status == "verified"

    def add(self, verdict: ObjectVerdict) -> None:
        """Count one object's verdict (``verify_hive`` calls it)."""
        self.objects += 1
        self.arrays += verdict.checked
        self.nbytes += verdict.nbytes
        if verdict.status in ("mismatch", "error"):
            self.failures.append(verdict)
            return
        if verdict.status == "unverifiable":
            self.n_unverifiable += 1
            if len(self.unverifiable) < MAX_NAMES:
                self.unverifiable.append(verdict)
            return
        self.clean += 1
        if verdict.unserved and len(self.unserved) < MAX_NAMES:
            self.unserved.append(verdict)

    def skip(self, path: str) -> None:
        """Count an object without a stamp (``verify_hive`` calls it)."""
        self.n_not_stamped += 1
        if len(self.not_stamped) < MAX_NAMES:
            self.not_stamped.append(path)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (every failure in full)."""

        def verdict(v: ObjectVerdict) -> dict[str, Any]:
            return {
                "level": v.level,
                "object": v.object,
                "status": v.status,
                "arrays_checked": v.checked,
                "problems": [p.__dict__ for p in v.problems],
                "unserved": v.unserved,
            }

        return {
            "source": self.source,
            "status": self.status,
            "ok": self.ok,
            "objects": self.objects,
            "clean": self.clean,
            "mismatch": sum(v.status == "mismatch" for v in self.failures),
            "error": sum(v.status == "error" for v in self.failures),
            "unverifiable": self.n_unverifiable,
            "not_stamped": self.n_not_stamped,
            "arrays_checked": self.arrays,
            "bytes_hashed": self.nbytes,
            "seconds": round(self.seconds, 3),
            "failures": [verdict(v) for v in self.failures],
            "unverifiable_objects": [verdict(v) for v in self.unverifiable],
            "not_stamped_objects": self.not_stamped,
            "unserved": [verdict(v) for v in self.unserved],
        }


# -- the recipe ---------------------------------------------------------------------------


def recorded_hashes(stamp: dict[str, Any]) -> tuple[dict[str, Any] | None, Any]:
    """``(per-array, combined)`` of a stamp's ``content_hashes`` (nested
    ``{"arrays": ..., "combined": ...}`` or flat); ``(None, None)`` when nothing is recorded."""
    content = stamp.get("content_hashes")
    if not isinstance(content, dict) or not content:
        return None, None
    if isinstance(content.get("arrays"), dict):
        return (dict(content["arrays"]) or None), content.get("combined")
    flat = dict(content)
    combined = flat.pop("combined", None)
    return (flat or None), combined


def combined_hash(hashes: dict[str, str]) -> str:
    """sha256 of the sorted per-array hex digests joined by newlines (names excluded)."""
    return hashlib.sha256("\n".join(sorted(hashes.values())).encode()).hexdigest()


def _cell_bytes(cell: object) -> bytes:
    if cell is None:
        return b""
    if isinstance(cell, bytes | bytearray | memoryview):
        return bytes(cell)
    if isinstance(cell, str):
        return cell.encode()
    if isinstance(cell, np.ndarray):
        return np.ascontiguousarray(cell, dtype=cell.dtype.newbyteorder("<")).tobytes()
    raise TypeError(f"a variable-length cell of type {type(cell).__name__} has no byte recipe")


def digest(values: np.ndarray) -> tuple[str, int]:
    """The hex sha256 of ``values`` by the recipe, and the number of bytes hashed."""
    h = hashlib.sha256()
    if values.dtype.kind == "O":
        n = 0
        for cell in values.ravel(order="C"):
            payload = _cell_bytes(cell)
            h.update(len(payload).to_bytes(VLEN_PREFIX, "little"))
            h.update(payload)
            n += VLEN_PREFIX + len(payload)
        return h.hexdigest(), n
    values = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
    h.update(values.data)
    return h.hexdigest(), values.nbytes


def native_dtype(meta: ArrayMeta) -> np.dtype:
    """The numpy dtype of a zarr v3 array's ``data_type`` (``object`` for variable length)."""
    data_type = meta.data_type
    if isinstance(data_type, str):
        return _named_dtype(data_type)
    return get_data_type_from_json(data_type, zarr_format=3).to_native_dtype()


@functools.lru_cache(maxsize=256)
def _named_dtype(data_type: str) -> np.dtype:
    return get_data_type_from_json(data_type, zarr_format=3).to_native_dtype()


def as_leaf_dtype(values: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` (served at the virtual dtype) at the leaf's own ``dtype``; a value that
    does not survive the round trip bit for bit is an error, never silently rounded."""
    if values.dtype == dtype or values.dtype.kind == "O" or dtype.kind == "O":
        return values
    back = values.astype(dtype)
    if back.astype(values.dtype).tobytes() != values.tobytes():
        raise ValueError(f"{what}: the values served are not all representable as {dtype}")
    return back


# -- reading one object's arrays through the read path --------------------------------------


class _Decoder:
    """Decodes a leaf array's virtual chunks, as served, into the leaf array's values:
    plain ``bytes``-coded chunks with numpy (no copy for a single chunk), anything else
    with zarr's codec pipeline, all chunks of the leaf array in one call."""

    def __init__(self, array: FieldArray) -> None:
        self.array = array
        self.lead = (1,) if array.windowed else ()
        self.chunk = array.part_chunks[len(self.lead) :]  # one leaf chunk, also in a span
        self.shape = array.source_meta.shape
        served = array.meta.derive(shape=[*self.lead, *self.shape],
                                   chunk_shape=array.part_chunks, attributes={})
        self.meta = ArrayV3Metadata.from_dict(served.to_json())  # the leaf array, as served
        self.dtype = self.meta.dtype.to_native_dtype()
        codecs = served.codecs
        self.plain: np.dtype | None = None
        if len(codecs) == 1 and codecs[0].name == "bytes" and self.dtype.kind in "biufc":
            self.plain = self.dtype.newbyteorder("<" if codecs[0].endian == "little" else ">")

    async def __call__(self, plans: Sequence[LeafRead], datas: list[Bytes | None]) -> np.ndarray:
        """The leaf array's values from its chunks' bytes (``None``: the fill value)."""
        if self.plain is None:
            return await self._pipeline(plans, datas)
        if len(datas) == 1 and datas[0] is not None and self.chunk == self.shape:
            return np.frombuffer(memoryview(datas[0]), dtype=self.plain).reshape(self.shape)
        if any(d is None for d in datas):
            out = np.full(self.shape, self.meta.fill_value, dtype=self.dtype)
        else:
            out = np.empty(self.shape, dtype=self.dtype)
        for plan, data in zip(plans, datas, strict=True):
            if data is not None:
                region = self.array.leaf_region(plan.coords)
                part = np.frombuffer(memoryview(data), dtype=self.plain).reshape(self.chunk)
                clipped = tuple(
                    slice(r.start, min(r.stop, n)) for r, n in zip(region, self.shape, strict=True)
                )
                out[clipped] = part[tuple(slice(0, c.stop - c.start) for c in clipped)]
        return out

    async def _pipeline(self, plans: Sequence[LeafRead], datas: list[Bytes | None]) -> np.ndarray:
        """One zarr read of the leaf array over an in-memory store of its chunks."""
        buffer = default_buffer_prototype().buffer
        chunks = {}
        for plan, data in zip(plans, datas, strict=True):
            if data is not None:
                region = self.array.leaf_region(plan.coords)
                local = (*(0 for _ in self.lead), *(r.start // c for r, c in zip(
                    region, self.chunk, strict=True)))
                chunks["c/" + "/".join(map(str, local))] = buffer.from_bytes(bytes(data))
        array = AsyncArray(metadata=self.meta, store_path=StorePath(MemoryStore(chunks)))
        values = await array.getitem(tuple(slice(None) for _ in self.meta.shape))
        return np.asarray(values).reshape(self.shape)


def _node_chunks(array: FieldArray, index: int, window: int) -> Iterator[tuple[int, ...]]:
    """The leaf chunk coordinates holding node ``index`` (in window position ``window``),
    a span's parts among them; every chunk for an array with no cells axis (served from
    the template object)."""
    ranges = [range(n) for n in array.grid]
    if array.windowed:
        ranges[0] = range(window, window + 1)
    if array.axis is not None:
        per, node = array.chunks_per_leaf, domain_position(array.level, index, array.sphere)
        ranges[array.windowed + array.axis] = range(node * per, (node + 1) * per)
    return itertools.product(*ranges)


def _leaf_reads(
    array: FieldArray, leaf: Leaf, index: int, window: int
) -> list[LeafRead]:
    """The plans of every virtual chunk of one leaf array."""
    plans: list[LeafRead] = []
    for coords in _node_chunks(array, index, window):
        plan = plan_chunk(array, coords, leaf)
        if isinstance(plan, Absent):  # a stamped leaf always has a data prefix
            raise RuntimeError(f"{leaf.path}: {plan.reason}")
        plans.append(plan)
    return plans


def _one_meta(got: list[tuple[Bytes | None, ArrayMeta | None] | Exception],
              what: str) -> ArrayMeta | None:
    """The leaf array metadata every chunk of it was read under (a failure is raised)."""
    for result in got:
        if isinstance(result, Exception):
            raise result
    metas = [meta for _, meta in got]  # type: ignore[misc]
    if any(meta != metas[0] for meta in metas[1:]):
        raise RuntimeError(f"{what}: the leaf array's metadata changed while it was read")
    return metas[0]


async def _read_array(session: HiveSession, key: str) -> ArrayMeta | None:
    """An array metadata document (``None``: no such object), read and checked
    (``hive/arraymeta.py``)."""
    payload = await read_document(session.backend, key)
    return None if payload is None else parse_array(payload, key)


# -- one level ---------------------------------------------------------------------------


Values = dict[str, "tuple[np.ndarray | ArrayProblem, ArrayMeta | None]"]
Digests = dict[str, "tuple[str, int] | ArrayProblem"]
ToHash = dict[str, "tuple[np.ndarray, np.dtype, str]"]
Hasher = Callable[[ToHash], Awaitable[Digests]]


def hash_arrays(arrays: ToHash) -> Digests:
    """Each array cast back to its leaf dtype (``(values, dtype, name)``) and digested;
    a failure (a value that does not survive the cast, a cell with no byte recipe) is
    that array's problem. Runs on a worker thread: hashlib and numpy release the GIL."""
    out: Digests = {}
    for key, (values, dtype, what) in arrays.items():
        try:
            out[key] = digest(as_leaf_dtype(values, dtype, what))
        except Exception as err:  # reported against this array, never raised
            out[key] = _error(key, err)
    return out


class _LevelJob:
    """What verifying a level's objects needs, computed once per level."""

    FABRICATED = 8  # fabricated coordinate chunks kept (consecutive nodes share one)

    def __init__(self, session: HiveSession, level: Level, siblings: set[int],
                 fields: dict[str, FieldArray] | None = None) -> None:
        """``fields``: the level's fields as read (a D24 region's, which the computed
        orders read), its coordinates made as the view makes a level's; else the view's
        fields and coordinates at its path."""
        view = session.view
        self.level = level
        self.prefix = f"{level.cell_order}/"
        self.groups = siblings  # cell orders that levels listing the same objects serve
        self.fields: dict[str, FieldArray] = {}
        self.coordinates: dict[str, FabricatedArray] = {}
        if fields is not None:
            sphere = session.options.geometry == "sphere"
            self.fields = dict(fields)
            self.coordinates = {name: cell_coordinate(level, name, {}, level.cells_per_node,
                                                      sphere) for name in COORDINATE_NAMES}
        else:
            for name in view.children(level.path) or []:
                array = view.arrays.get(f"{level.path}/{name}")
                if isinstance(array, FieldArray):
                    self.fields[name] = array
                elif isinstance(array, FabricatedArray) and name in COORDINATE_NAMES:
                    self.coordinates[name] = array
        self.decoders = {name: _Decoder(a) for name, a in self.fields.items()}
        self._fabricated: dict[tuple[int, int], bytes] = {}

    def objects(self) -> Iterator[tuple[int, int, str]]:
        """``(node index, window position, object path)`` of every object, in order."""
        level = self.level
        for index in range(level.n_nodes):
            for position, window in enumerate(level.windows or (None,)):
                yield index, position, level.object_path(index, window)

    def served(self, name: str, path: str) -> bool:
        array = self.fields.get(name)
        if array is not None:
            return array.axis is not None or path == self.level.template
        return name in self.coordinates

    def unserved(self, key: str, path: str) -> bool:
        """Whether recorded array ``key`` of object ``path`` is served by no level (one in
        another group of the object may be served by a sibling level)."""
        group, _, name = key.partition("/")
        if group == str(self.level.cell_order):
            return not self.served(name, path)
        return not group.isdigit() or int(group) not in self.groups

    async def verify(
        self, session: HiveSession, index: int, window: int, path: str, hasher: Hasher
    ) -> ObjectVerdict | Leaf:
        """The verdict on one object, or its (unstamped) leaf. Its arrays are read
        concurrently, then cast and hashed together by ``hasher`` (a worker thread)."""
        level = self.level
        leaf = parse_leaf(path, await read_document(session.backend, f"{path}/zarr.json"))
        if leaf.state != "stamped":
            return leaf
        refused = level.refusal(leaf, index, level.windows[window] if level.windows else None)
        if refused is not None:  # the store serves it as the fill value
            kind, why = refused
            unserved = ArrayProblem("zarr.json", "refused" if kind == "provenance" else kind,
                                    f"the object {why}; served as the fill value")
            return ObjectVerdict(level.path, path, "mismatch", problems=[unserved])
        recorded, combined = recorded_hashes(leaf.stamp)
        if recorded is None:
            return ObjectVerdict(level.path, path, "unverifiable")
        verdict = ObjectVerdict(level.path, path, "clean")
        verdict.unserved = [k for k in sorted(recorded) if self.unserved(k, path)]
        names = [
            n for n in (*self.fields, *self.coordinates)
            if self.served(n, path) and (n in self.fields or self.prefix + n in recorded)
        ]
        todo: ToHash = {}
        values = await self._values(session, leaf, index, window, names)
        for key, (found, meta) in values.items():
            if isinstance(found, ArrayProblem):
                verdict.problems.append(found)
            elif (problem := _unmatched(key, meta, recorded)) is not None:
                verdict.problems.append(problem)
            elif meta is not None:  # held and recorded
                try:
                    todo[key] = (found, native_dtype(meta), f"{leaf.path}/{key}")
                except Exception as err:  # a data type zarr cannot read
                    verdict.problems.append(_error(key, err))
        for key, result in (await hasher(todo) if todo else {}).items():
            if isinstance(result, ArrayProblem):
                verdict.problems.append(result)
                continue
            computed, nbytes = result
            verdict.checked += 1
            verdict.nbytes += nbytes
            if computed != recorded[key]:
                verdict.problems.append(self._mismatch(key, recorded[key], computed))
        verdict.problems.extend(_combined_problems(recorded, combined))
        if verdict.problems:
            verdict.problems.sort(key=lambda p: p.array)
            errors = all(p.kind == "error" for p in verdict.problems)
            verdict.status = "error" if errors else "mismatch"
        return verdict

    async def _values(
        self, session: HiveSession, leaf: Leaf, index: int, window: int, names: list[str]
    ) -> Values:
        """``{key: (values as served, leaf array metadata)}`` of the object's arrays
        (``None`` metadata: the object holds no such array), a failure as its problem.
        Every chunk of every field is read in one concurrent batch."""
        out: Values = {}
        plans: dict[str, list[LeafRead]] = {}
        for name in names:
            if name in self.fields:
                try:
                    plans[name] = _leaf_reads(self.fields[name], leaf, index, window)
                except Exception as err:
                    out[self.prefix + name] = (_error(self.prefix + name, err), None)
        flat = [plan for group in plans.values() for plan in group]
        arrays = [self.fields[name] for name, group in plans.items() for _ in group]
        got = await read_leaf_chunks(session, flat, arrays) if flat else []
        start = 0
        for name, group in plans.items():
            key, part = self.prefix + name, got[start : start + len(group)]
            start += len(group)
            try:
                meta = _one_meta(part, f"{leaf.path}/{key}")
                datas = [data for data, _ in part]  # type: ignore[misc]
                out[key] = (await self.decoders[name](group, datas), meta)
            except Exception as err:  # reported against this array, never raised
                out[key] = (_error(key, err), None)
        for name in names:
            if name in self.coordinates:
                key = self.prefix + name
                try:
                    values = await self._coordinate(session, self.coordinates[name], index)
                    meta = await _read_array(session, f"{leaf.data_prefix}/{key}/zarr.json")
                    out[key] = (values, meta)
                except Exception as err:
                    out[key] = (_error(key, err), None)
        return out

    async def _coordinate(
        self, session: HiveSession, array: FabricatedArray, index: int
    ) -> np.ndarray:
        """The fabricated ``morton`` / ``cell_ids`` rows of node ``index``: the chunks
        spanning them, each fabricated once for the consecutive nodes it spans."""
        cells = self.level.cells_per_node
        start = domain_position(self.level, index, session.options.geometry == "sphere") * cells
        first, stop = start // array.rows, -(-(start + cells) // array.rows)
        parts = []
        for chunk in range(first, stop):
            slot = (id(array), chunk)
            if slot not in self._fabricated:
                if len(self._fabricated) >= self.FABRICATED:
                    self._fabricated.pop(next(iter(self._fabricated)))
                self._fabricated[slot] = bytes(array.fabricate((chunk,)))
            parts.append(np.frombuffer(array.values(self._fabricated[slot]), dtype="<u8"))
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        offset = start - first * array.rows
        return rows[offset : offset + cells]

    def _mismatch(self, key: str, recorded: object, computed: str) -> ArrayProblem:
        name = key[len(self.prefix) :]
        detail = "sha256 of the values served differs"
        if name in self.coordinates:
            detail = (
                f"sha256 of the store's {name} (computed from the object's place in the "
                "tree) differs: the object is misplaced, or its writer stored fill for "
                "cells it did not write"
            )
        return ArrayProblem(key, "mismatch", detail, recorded=str(recorded), computed=computed)


def _error(key: str, err: Exception) -> ArrayProblem:
    return ArrayProblem(key, "error", f"{type(err).__name__}: {err}")


def _unmatched(key: str, meta: ArrayMeta | None,
               recorded: dict[str, Any]) -> ArrayProblem | None:
    """An array held but not recorded, or recorded but not held (``None``: neither)."""
    if meta is None and key in recorded:
        detail = "recorded, but the object holds no such array"
        return ArrayProblem(key, "missing", detail, recorded=str(recorded[key]))
    if meta is not None and key not in recorded:
        return ArrayProblem(key, "unrecorded", "the object holds it; its record does not")
    return None


def _combined_problems(recorded: dict[str, Any], combined: object) -> list[ArrayProblem]:
    """The record's own consistency: its combined hash over its per-array hashes."""
    if combined is None:
        return []
    if not all(isinstance(h, str) for h in recorded.values()):
        return [ArrayProblem("combined", "combined", "the record holds a non-string hash")]
    expected = combined_hash(recorded)
    if expected == combined:
        return []
    detail = "the recorded combined hash disagrees with the recorded per-array hashes"
    return [ArrayProblem("combined", "combined", detail, str(combined), expected)]


def _siblings(levels: list[Level], level: Level) -> set[int]:
    """Cell orders served by the levels whose objects are this level's objects."""
    same = (level.artifact, level.node_order, level.fold, level.window, level.root)
    return {
        lv.cell_order for lv in levels
        if (lv.artifact, lv.node_order, lv.fold, lv.window, lv.root) == same
    }


def _regions(session: HiveSession, levels: list[Level]) -> dict[Level, dict[str, FieldArray]]:
    """The source levels of a D24 product's coarser regions (which only its computed
    orders read) and their fields as those orders read them. No request."""
    regions = {id(r): r for level in levels for r in level.regions}
    found: dict[Level, dict[str, FieldArray]] = {}
    for array in session.view.arrays.values():
        if not isinstance(array, ComputedArray):
            continue
        for source in array.sources:
            if id(source.level) in regions:
                found.setdefault(source.level, {})[source.name] = source
    return found


# -- the hive ---------------------------------------------------------------------------


def _in_group(path: str, group: str | None) -> bool:
    if not group:
        return True
    group = group.strip("/")
    return path == group or path.startswith(group + "/") or group.startswith(path + "/")


async def verify_hive(
    store_or_session: MocHiveStore | HiveSession,
    group: str | None = None,
    progress: Progress | None = None,
    jobs: int = JOBS,
    threads: int = THREADS,
) -> VerifyReport:
    """Recompute every stamped object's content hashes through the store's read path and
    compare them, array by array, with its commit stamp.

    ``group`` restricts the run to the levels under (or above) that virtual path
    (``"atl06"``, ``"atl06/o7"``). ``progress`` is reset to the number of objects, then
    updated once per object. ``jobs`` objects are verified concurrently (memory: one
    object's decoded arrays each), read on the event loop and hashed by ``threads``
    worker threads (one job per object; 0: on the loop). Objects whose stamp records no hashes are
    ``unverifiable`` (not a failure); unstamped objects (debris) are skipped and counted.

    Raises
    ------
    OptionError
        When ``group`` names no group of the hive (the closest ones are named).

    Examples
    --------
    ``sync(verify_hive(MocHiveStore(sample_hive()))).status`` is ``"verified"``.
    """
    from .store import MocHiveStore

    session = (
        store_or_session.session if isinstance(store_or_session, MocHiveStore)
        else store_or_session
    )
    start = time.perf_counter()
    await session.ensure_levels("")
    report = VerifyReport(public_source(str(session.backend)))
    work: list[_LevelJob] = []
    for product in session.hive.products:
        for level in product.levels:  # a computed order has no objects of its own
            if _in_group(level.path, group) and level.artifact != "computed":
                work.append(_LevelJob(session, level, _siblings(product.levels, level)))
        for region, fields in _regions(session, product.levels).items():
            if _in_group(region.path, group):
                work.append(_LevelJob(session, region, {region.cell_order}, fields))
    if not work:
        if group in session.view.levels:
            raise OptionError(f"group {group!r} is a computed order: it has no objects of its "
                              "own to verify (verify the orders it is folded from)")
        from .hints import missing_group

        raise OptionError(missing_group(str(group), session.view.groups))
    if progress is not None:
        progress.reset(total=sum(j.level.n_nodes * max(1, len(j.level.windows)) for j in work))
    queue = ((job, *obj) for job in work for obj in job.objects())
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="moczarr-verify")

    async def hasher(arrays: ToHash) -> Digests:
        if threads < 1:
            return hash_arrays(arrays)
        return await loop.run_in_executor(pool, hash_arrays, arrays)

    async def worker() -> None:
        for job, index, window, path in queue:
            try:
                result = await job.verify(session, index, window, path, hasher)
            except Exception as err:  # the stamp could not be read or parsed
                problem = ArrayProblem("zarr.json", "error", f"{type(err).__name__}: {err}")
                result = ObjectVerdict(job.level.path, path, "error", problems=[problem])
            if isinstance(result, Leaf):
                by_design = result.state == "absent" and (job.level.windows or job.level.window)
                if not by_design:  # a (node, window) pair may have no leaf
                    report.skip(result.path)
            else:
                report.add(result)
            if progress is not None:
                progress.update(1)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, jobs))))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    report.failures.sort(key=lambda v: (v.level, v.object))
    report.seconds = time.perf_counter() - start
    return report


# -- text --------------------------------------------------------------------------------


def public_source(url: str) -> str:
    """``url`` without user-info, query or fragment (where credentials and signatures live)."""
    parts = urlsplit(url)
    if not parts.scheme:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def printable(text: object) -> str:
    """``text`` safe for a terminal: control and other non-printable characters (and the
    backslash) escaped as ``repr`` escapes them."""
    return "".join(
        c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in str(text)
    )


def _problem_line(p: ArrayProblem) -> str:
    line = f"  {p.array}: {p.kind}: {p.detail}"
    if p.recorded is not None or p.computed is not None:
        line += f" (recorded {p.recorded}, computed {p.computed})"
    return printable(line)


def report_lines(report: VerifyReport) -> list[str]:
    """The report for a terminal: a summary, every failure with each array named, then the
    unverifiable, unstamped and partly served objects (hive names escaped)."""
    mismatches = sum(v.status == "mismatch" for v in report.failures)
    lines = [printable(
        f"verify {report.source}: {report.objects} stamped objects, {report.arrays} arrays, "
        f"{report.nbytes / 1e6:.1f} MB hashed in {report.seconds:.2f} s: {report.clean} clean, "
        f"{mismatches} mismatch, {len(report.failures) - mismatches} error, "
        f"{report.n_unverifiable} unverifiable, {report.n_not_stamped} not stamped"
    )]
    if report.status == "unchecked":
        lines.append("UNCHECKED: no object was verified (no stamp records content hashes): "
                     "nothing here says the values are the ones written")
    for v in report.failures:
        lines.append(printable(f"{v.status.upper()} {v.level} {v.object}"))
        lines.extend(_problem_line(p) for p in v.problems)
        if v.unserved:
            lines.append(printable(f"  not served, not checked: {', '.join(v.unserved)}"))
    more = report.n_unverifiable - len(report.unverifiable)
    for v in report.unverifiable:
        lines.append(printable(
            f"UNVERIFIABLE {v.level} {v.object}: its commit stamp records no content hashes"
        ))
    if more:
        lines.append(f"UNVERIFIABLE ... and {more} more")
    for path in report.not_stamped:
        lines.append(printable(f"NOT STAMPED {path}: no commit stamp, skipped (read as fill)"))
    for v in report.unserved:
        lines.append(printable(
            f"NOT SERVED {v.level} {v.object}: {', '.join(v.unserved)} (recorded, but not "
            "served by the store, so not checked)"
        ))
    return lines
