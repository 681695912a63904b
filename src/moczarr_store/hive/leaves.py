"""Leaves: the commit stamp, the versioned ``current`` pointer, debris.

A leaf is complete iff its root ``zarr.json`` carries a ``morton_hive_commit``
mapping. Its data lives under ``{leaf}/{current}/`` when the stamp names a version,
else under ``{leaf}/``. Stamps are read lazily and cached in a bounded LRU; a read that
finds nothing in the version a cached stamp names has the stamp read again
(:meth:`LeafCache.reread`).

An unversioned leaf (no ``current``) is rewritten in place: zagg clears it, then writes its
arrays and its stamp. The process remembers the unversioned leaves it has seen stamped
(:data:`IN_PLACE`), so a later read of one that has no stamp now, by any store of the same
hive (after ``refresh()``, a new store, a new ``serve`` generation), raises
:class:`~moczarr_store.errors.LeafMovedError` instead of taking it for debris.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .. import state
from ..cache import AsyncCache
from ..errors import LeafMovedError, OutsideRootError
from ..io.backend import NOT_NOW
from ..io.ranges import BytesLike
from ..tunables import setting
from .ids import DECIMAL_RE
from .jsonio import DOCUMENT_WINDOW, load_json, read_document_now
from .paths import short, split_leaf_name, validate_current

if TYPE_CHECKING:
    from ..io.ranges import ByteRequest
    from ..io.reader import HiveIO

Read = Callable[[str, "ByteRequest | None"], Awaitable["BytesLike | None"]]  # HiveIO.get

STAMP_KEY = "morton_hive_commit"
LeafState = Literal["stamped", "debris", "absent", "linked"]  # linked: out of the root
PROVENANCE = ("role", "zagg_overview", "zagg_column")  # an object's role and its blocks
# What a pyramid level checks of an object's role and provenance block (``Level.refusal``)
_OVERVIEW_KEYS = ("spec", "cell_order", "node", "window")
_COLUMN_KEYS = ("spec", "node", "order", "window")  # and the cell orders of its "groups"
Provenance = tuple[object, tuple[Any, ...] | None, tuple[Any, ...] | None]
_KEPT = 128  # characters of a provenance string kept (longer ones match nothing)
_GROUPS_KEPT = 64  # cell orders of a column's "groups" kept (zagg writes a few)
REREADS_KEPT = 4096  # leaves whose last re-read (and when it began) is remembered
_TICKS = itertools.count()
_LINKED = object()


def tick() -> int:
    """A number larger than every one handed out before (in this process): what orders a
    read that found nothing before a re-read of the stamp."""
    return next(_TICKS)


@dataclass(frozen=True)
class Leaf:
    """What a leaf's root ``zarr.json`` said when it was read.

    ``attrs`` (the whole root attributes) is kept only on a freshly read leaf; the
    cache keeps the slim form, with ``provenance``: ``(role, overview, column)``, the
    scalar fields of the ``zagg_overview`` and ``zagg_column`` blocks a pyramid level
    checks (``None``: a block that is no JSON object); ``None`` when the object has no
    role and no block (a source leaf). ``hashed``: the arrays (``"7/count"``) the stamp's
    content hashes name, i.e. were written (``None``: the stamp records no hashes).
    ``misplaced``: why the stamp says the leaf belongs to another node or window than its
    path names (:func:`misplaced`), ``None`` if it does not.
    """

    path: str
    state: LeafState
    current: str | None = None
    attrs: dict[str, Any] | None = None
    provenance: Provenance | None = None
    hashed: frozenset[str] | None = None
    misplaced: str | None = None

    @property
    def data_prefix(self) -> str | None:
        """Where the leaf's arrays live, or ``None`` when it has no committed data."""
        if self.state != "stamped":
            return None
        return self.path if self.current is None else f"{self.path}/{self.current}"

    @property
    def stamp(self) -> dict[str, Any]:
        return (self.attrs or {}).get(STAMP_KEY) or {}

    @property
    def run(self) -> str:
        """Leaves sharing this key were written by one writer run (one encoding)."""
        if self.current:
            run_id, _, _attempt = self.current.rpartition("-")
            return run_id
        return self.path

    def slim(self) -> Leaf:
        if self.attrs is None:  # slim already (frozen: itself)
            return self
        return Leaf(self.path, self.state, self.current, None, self.provenance, self.hashed,
                    self.misplaced)


def _scalar(value: object) -> object:
    """A JSON value kept for a later comparison (and a message): itself when null, a
    boolean, an integer of at most 64 bits or a string of at most ``_KEPT`` characters;
    else a short description, never equal to what a check wants."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, str):
        return value if len(value) <= _KEPT else f"<a string of {len(value):,} characters>"
    return f"<a JSON {type(value).__name__}>"


def _provenance(attrs: dict[str, Any]) -> Provenance | None:
    if attrs.keys().isdisjoint(PROVENANCE):
        return None

    def fields(block: object, keys: tuple[str, ...]) -> tuple[Any, ...] | None:
        return tuple(_scalar(block.get(k)) for k in keys) if isinstance(block, dict) else None

    column = attrs.get("zagg_column")
    column_fields = None if not isinstance(column, dict) else (
        *(_scalar(column.get(k)) for k in _COLUMN_KEYS), _groups(column.get("groups")))
    return (_scalar(attrs.get("role")), fields(attrs.get("zagg_overview"), _OVERVIEW_KEYS),
            column_fields)


def _groups(groups: object) -> frozenset[str] | object:
    """A column block's ``groups``: the cell orders it carries (its keys; longer ones
    cannot be an order), or a short description of anything else (which carries none)."""
    if not isinstance(groups, dict):
        return _scalar(groups)
    if len(groups) > _GROUPS_KEPT:
        return f"<{len(groups):,} groups>"
    return _interned(frozenset(k for k in groups if len(k) <= 4))


# one set per distinct set of names, while fewer than _SHARED_SETS were seen
SHARED: state.Part[dict[frozenset[str], frozenset[str]]] = state.Part(
    "shared sets of array names", dict)
_SHARED_SETS = 1024


def _interned(names: frozenset[str]) -> frozenset[str]:
    """``names``, as the one set kept for equal ones (a cached leaf costs a reference, not
    a set), while fewer than ``_SHARED_SETS`` distinct ones were seen."""
    kept = SHARED()
    shared = kept.get(names)
    if shared is None and len(kept) < _SHARED_SETS:
        shared = kept[names] = names
    return names if shared is None else shared


def _hashed(stamp: dict[str, Any]) -> frozenset[str] | None:
    """The array names of the stamp's ``content_hashes`` (shared between leaves: a cached
    leaf costs a reference, not a set)."""
    hashes = stamp.get("content_hashes")
    arrays = hashes.get("arrays") if isinstance(hashes, dict) else None
    if not isinstance(arrays, dict):
        return None
    return _interned(frozenset(arrays))  # a JSON object's names are strings


def misplaced(path: str, stamp: dict[str, Any]) -> str | None:
    """Why the commit stamp of the source leaf at ``path`` (``{node}.zarr`` or
    ``{node}_{window}.zarr``) says it was written for another place: its coverage ``box``
    (``morton-moc/1``) names a cell outside the node, or its ``window`` is not the
    path's. ``None``: it does not, or says nothing to check (other objects, no or
    malformed coverage). A leaf moved or copied to another node's path would otherwise
    serve its values at that node's cells (``morton`` is computed from the path, by
    moczarr too). No I/O; the path's name is checked only when the stamp disagrees with it
    (a stamp that agrees says nothing, whatever the name)."""
    coverage = stamp.get("coverage")
    box = coverage.get("box") if isinstance(coverage, dict) else None
    cells = box[:4] if isinstance(box, list) else ()
    label = stamp.get("window")
    stem = path[path.rfind("/") + 1 : -len(".zarr")]
    node, sep, window = stem.partition("_")
    if not (sep and isinstance(label, str) and label != window):
        for cell in cells:
            if isinstance(cell, str) and not cell.startswith(node):
                break
        else:  # the stamp agrees with the path
            return None
    if cells and coverage.get("spec") != "morton-moc/1":  # type: ignore[union-attr]
        cells = ()  # another spec: its box is not read
    return _misplaced(path, cells, label)


def _misplaced(path: str, cells: list[Any] | tuple[Any, ...], label: object) -> str | None:
    """:func:`misplaced` of a stamp whose ``box`` members (``morton-moc/1``'s first four)
    and ``window`` disagree with ``path``'s name, when that name is a leaf's."""
    named = split_leaf_name(path.rpartition("/")[2])
    if named is None:
        return None
    node, window = named
    for cell in cells:
        if isinstance(cell, str) and not cell.startswith(node) and DECIMAL_RE.match(cell):
            return (f"was written for another node: its commit stamp's coverage box "
                    f"names cell {cell}, outside node {node}")
    if window is not None and isinstance(label, str) and label != window:
        return (f"was written for another window: its commit stamp says window "
                f"{short(label)}, its path {window!r}")
    return None


def parse_leaf(path: str, payload: BytesLike | None, slim: bool = False) -> Leaf:
    """A leaf from its root ``zarr.json`` bytes (``None``: no such object); ``slim``: its
    slim form (:meth:`Leaf.slim`) at once.

    As moczarr reads it: a document that is not JSON is an error naming the leaf; one
    without a commit mapping (whatever else it holds) is debris."""
    if payload is None:
        return Leaf(path, "absent")
    meta = load_json(payload, f"leaf {path}/zarr.json")
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if not isinstance(attrs, dict) or not isinstance(stamp := attrs.get(STAMP_KEY), dict):
        return Leaf(path, "debris")  # no commit mapping: debris, as moczarr reads it
    current = stamp.get("current")
    if current is not None:
        validate_current(current, path)
    return Leaf(path, "stamped", current, None if slim else attrs, _provenance(attrs),
                _hashed(stamp), misplaced(path, stamp))


async def _load(path: str, read: Read) -> Leaf:
    """``parse_leaf`` of one ranged ``read`` of at most the document cap; a stamp linked
    out of the hive root is that leaf's refusal (``"linked"``), not the hive's."""
    try:
        payload = await read(f"{path}/zarr.json", DOCUMENT_WINDOW)
    except OutsideRootError:  # that object is refused, not the hive
        return Leaf(path, "linked")
    return parse_leaf(path, payload)


class InPlace:
    """The unversioned source leaves this process has seen stamped, by hive (``origin``):
    one that has no stamp when read again is being rewritten in place, never debris. Bounded
    by the stamp cache's bound (``config["cache.stamps"]``), least recently seen
    forgotten first (such a leaf then reads as debris again, as in a new process).
    Thread-safe: sessions on other threads' event loops share it."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def judge(self, origin: str | None, leaf: Leaf, bound: int) -> Leaf:
        """``leaf`` as read from hive ``origin`` (``None``: no hive to remember it by),
        remembered when it is stamped in place (``bound`` leaves kept); a
        :class:`LeafMovedError` naming it when it was seen so and has no stamp now. Cost:
        a dict look-up (none for a versioned leaf: it is never rewritten in place)."""
        if leaf.current is not None or origin is None or leaf.state == "linked" or (
                not _is_leaf(leaf.path)):
            return leaf  # overviews and columns: deleted ones are debris (not yet swept)
        key = (origin, leaf.path)
        with self._lock:
            if leaf.state == "stamped":
                if leaf.current is None:
                    self._seen[key] = None
                    self._seen.move_to_end(key)
                    while len(self._seen) > bound:
                        self._seen.popitem(last=False)
                return leaf
            if key not in self._seen:
                return leaf
        raise LeafMovedError(
            f"leaf {leaf.path}: it had a commit stamp and has none now ({leaf.state}): it is "
            "being rewritten in place (unversioned leaves cannot be read while a writer "
            "rewrites them; read it again once the writer is done)")


IN_PLACE: state.Part[InPlace] = state.Part("unversioned leaves seen stamped", InPlace)


def _is_leaf(path: str) -> bool:
    """Whether ``path`` names a source leaf (``{node}.zarr``, ``{node}_{window}.zarr``)."""
    return split_leaf_name(path.rpartition("/")[2]) is not None


class LeafCache(AsyncCache[Leaf]):
    """Resolved leaves by path: a bounded LRU keeping each leaf's slim form."""

    def __init__(self, max_entries: int | None = None, origin: str | None = None) -> None:
        """``origin`` names the hive (its URL): what :data:`IN_PLACE` remembers its
        unversioned leaves by (``None``: nothing is remembered)."""
        bound = setting("cache.stamps") if max_entries is None else max_entries
        super().__init__(bound, keep=Leaf.slim)
        self.origin = origin
        # path -> (tick its last re-read began at, the leaf it read)
        self._reread: OrderedDict[str, tuple[int, Leaf]] = OrderedDict()
        self._rereading: dict[tuple[int, str], tuple[int, asyncio.Future[Any]]] = {}

    async def resolve(self, path: str, read: Read) -> Leaf:
        """The leaf at ``path``: cached, else ``parse_leaf`` of one ranged ``read`` of at
        most the document cap."""

        return await self.get(path, lambda: self._load(path, read))

    async def _load(self, path: str, read: Read) -> Leaf:
        """:func:`_load`, judged by :data:`IN_PLACE` (an in-place leaf being rewritten
        raises, and is not cached)."""
        return IN_PLACE().judge(self.origin, await _load(path, read), self.max_entries)

    def stamps_now(self, paths: list[str], backend: HiveIO) -> dict[str, Exception]:
        """Read and keep the stamps of those of ``paths`` neither cached nor being read, as
        far as one pass reads them from a local page cache (``backend.documents_now``; one
        request each, as :meth:`resolve` makes), so :meth:`resolve_now` finds them
        cached. What reading one raised (a damaged stamp, an in-place leaf being
        rewritten), by path: not kept, :meth:`resolve_now` would read and raise it again."""
        kept, loading = self._done, self.loading
        unknown = [path for path in paths if path not in kept and not loading(path)]
        read = backend.documents_now([f"{path}/zarr.json" for path in unknown])
        failed: dict[str, Exception] = {}
        for path, payload in zip(unknown, read, strict=False):  # the first len(read)
            try:
                self._settle(path, payload)
            except Exception as err:  # the caller's to judge, as resolve_now's caller does
                failed[path] = err
        return failed

    def resolve_now(self, path: str, backend: HiveIO) -> Leaf | None:
        """The leaf at ``path`` as :meth:`resolve` gives it (its cached, slim form), without
        an await: cached, or read inline when its stamp is local and all in the page cache
        (``backend.get_now``; one request, as :meth:`resolve` makes). ``None`` when that
        read would wait or one is under way: :meth:`resolve` it then."""
        leaf = self.hit(path)
        if leaf is not None or self.loading(path):
            return leaf
        try:
            payload = read_document_now(backend, f"{path}/zarr.json")
        except OutsideRootError:  # that object is refused, not the hive
            payload = _LINKED
        return None if payload is NOT_NOW else self._settle(path, payload)

    def _settle(self, path: str, payload: Any) -> Leaf:
        """The leaf a stamp document (``None``: absent; :data:`_LINKED`) says, judged by
        :data:`IN_PLACE` and cached as it is (slim): the very object a plan is kept under."""
        leaf = (Leaf(path, "linked") if payload is _LINKED
                else parse_leaf(path, payload, slim=True))
        IN_PLACE().judge(self.origin, leaf, self.max_entries)
        self.put(path, leaf)
        return leaf

    async def resolve_full(self, path: str, read: Read) -> Leaf:
        """Like :meth:`resolve`, with the stamp's attributes: the cache keeps slim leaves,
        so a stamped leaf cached before is read again (one more GET)."""
        leaf = await self.resolve(path, read)
        if leaf.state == "stamped" and leaf.attrs is None:
            leaf = await self._load(path, read)
        return leaf

    async def rereading(self, path: str) -> Leaf | None:
        """What a re-read of ``path``'s stamp under way (on this event loop) reads, or
        ``None`` when there is none; it may have begun before a caller's evidence."""
        pending = self._rereading.get((id(asyncio.get_running_loop()), path))
        return None if pending is None else await asyncio.shield(pending[1])

    async def reread(self, path: str, read: Read, after: int, replace: bool = True) -> Leaf:
        """The leaf at ``path`` as its stamp reads in a read begun after :func:`tick`
        ``after`` (taken once a read under the cached stamp found nothing): the cached
        leaf is replaced when the stamp moved (and ``replace``). One ranged GET, shared by
        every caller whose evidence came before it began (the misses of one leaf's arrays
        read together)."""
        known = self._reread.get(path)
        if known is not None and known[0] > after:
            return known[1]
        loop = asyncio.get_running_loop()
        slot = (id(loop), path)
        pending = self._rereading.get(slot)
        if pending is not None and pending[0] > after:
            return await asyncio.shield(pending[1])
        began, future = tick(), loop.create_future()
        self._rereading[slot] = (began, future)
        try:
            leaf = await self._load(path, read)
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: the waiters re-raise it themselves
            raise
        finally:
            if self._rereading.get(slot, (None,))[0] == began:
                del self._rereading[slot]
        if replace and self.peek(path) != leaf.slim():  # moved: plans under the old end
            self.put(path, leaf)
        self._reread[path] = (began, leaf.slim())
        self._reread.move_to_end(path)
        while len(self._reread) > REREADS_KEPT:
            self._reread.popitem(last=False)
        future.set_result(leaf)
        return leaf
