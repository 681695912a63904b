"""``MocHiveStore``: a zarr v3 Store that presents a morton-hive as one hierarchy."""

from __future__ import annotations

import asyncio
import functools
import os
import warnings
from collections.abc import AsyncIterator, Iterable
from typing import Any

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype

from .backend import DEFAULT_MAX_CONCURRENCY, Backend, slice_bytes
from .cache import AsyncCache
from .chunks import (
    TruncatedChunkError,
    check_chunk,
    inner_span,
    load_index,
    reframe,
    shard_passthrough,
)
from .errors import ChunkReadError, OutsideRootError
from .hive.aoi import aoi_members, parse_aoi
from .hive.leaves import LeafCache
from .hive.level import HiveWarning, warn_dangling
from .hive.roster import Hive, open_hive, settle
from .transcode import Encodings, transcode
from .view.arrays import ChunkCheck, FabricatedArray, FieldArray
from .view.tree import INDEX_RE, Array, View

VERIFY_MODES = ("lazy", "open")
CHUNKINGS = ("shard", "leaf", "inner")
_V2_KEYS = frozenset({".zgroup", ".zattrs", ".zarray", ".zmetadata"})
_STATE_TEXT = {"debris": "unstamped debris", "absent": "no root zarr.json"}
_READ_ONLY = "store was opened in read-only mode and does not support writing"



class MocHiveStore(Store):
    """A morton-hive presented as one read-only Zarr v3 hierarchy.

    Parameters
    ----------
    source
        Hive root: a local path, a ``file://``, ``s3://``, ``gs://`` or ``http(s)://``
        URL, or an obstore store instance rooted at the hive.
    verify
        ``"lazy"`` (default) reads leaf stamps the first time a leaf's chunk is
        requested: debris and dangling pointers read as missing, with a warning.
        ``"open"`` reads every stamp at open and drops those shards from the domain,
        exactly as ``moczarr.open_hive`` does.
    window
        Scope windowed products to this one window (``("cells", ...)`` arrays).
    aoi
        Decimal ids or packed words (any orders): keep the nodes whose subtrees overlap.
    chunking
        How a sharded leaf array is chunked in the view: ``"shard"`` passes the shard
        object through, ``"leaf"`` presents it as one contiguous chunk (one request per
        leaf), ``"inner"`` as one chunk per inner chunk (ranged reads).
    max_concurrency
        Process-wide cap on in-flight backend requests shared by all stores with
        the same cap.
    read_only
        zarr's access-mode flag. The store never writes either way; it defaults to
        ``False`` only so that ``zarr.open_group(store)`` (mode ``"a"``) opens it.
    follow_links
        Local hives: read through links whose target lies outside the hive root (by
        default such an object is refused with ``OutsideRootError``).
    **storage_options
        Passed to obstore (``region``, ``endpoint``, ``skip_signature``,
        ``client_options``, ``retry_config``, ...).
    """

    supports_writes = False
    supports_deletes = False
    supports_listing = True
    supports_consolidated_metadata = True

    def __init__(
        self,
        source: str | os.PathLike | Any,
        *,
        verify: str = "lazy",
        window: str | None = None,
        aoi: Iterable[str | int] | None = None,
        chunking: str = "leaf",
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        read_only: bool = False,
        follow_links: bool = False,
        **storage_options: Any,
    ) -> None:
        super().__init__(read_only=read_only)
        if verify not in VERIFY_MODES:
            raise ValueError(f"verify={verify!r}: expected one of {VERIFY_MODES}")
        if chunking not in CHUNKINGS:
            raise ValueError(f"chunking={chunking!r}: expected one of {CHUNKINGS}")
        self.chunking = chunking
        self.backend = Backend(source, storage_options, max_concurrency, follow_links)
        self.verify = verify
        self.window = window
        self.aoi = None if aoi is None else aoi_members(aoi)
        self._aoi_cells = None if aoi is None else parse_aoi(self.aoi)
        self._source = source
        self._shared = _Shared()

    # -- identity ---------------------------------------------------------------

    def _recipe(self) -> tuple:
        return (
            *self.backend.recipe(), self.verify, self.window, self.aoi, self.chunking,
            self.read_only,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MocHiveStore) and self._recipe() == other._recipe()

    def __hash__(self) -> int:
        return hash((self.backend.url, self.verify, self.read_only))

    def __dask_tokenize__(self) -> tuple:
        return (type(self).__name__, *map(repr, self._recipe()))

    def __repr__(self) -> str:
        return f"MocHiveStore({self.backend!r})"

    def __getstate__(self) -> dict:
        return {
            "backend": self.backend,
            "verify": self.verify,
            "window": self.window,
            "aoi": self.aoi,
            "chunking": self.chunking,
            "read_only": self.read_only,
            "source": self._source if self.backend.url is None else self.backend.url,
        }

    def __setstate__(self, state: dict) -> None:
        backend: Backend = state["backend"]
        self.__init__(
            state["source"],
            verify=state["verify"],
            window=state["window"],
            aoi=state["aoi"],
            chunking=state["chunking"],
            max_concurrency=backend.max_concurrency,
            read_only=state["read_only"],
            follow_links=backend.follow_links,
            **backend.options,
        )

    def with_read_only(self, read_only: bool = False) -> MocHiveStore:
        if not read_only:
            raise NotImplementedError(
                f"with_read_only is not implemented for the {type(self)} store type."
            )
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy._read_only = True
        copy._is_open = False
        return copy

    # -- opening ------------------------------------------------------------------

    async def _open(self) -> None:
        await super()._open()
        await self._shared.view(self, None)

    async def view(self, path: str = "") -> View:
        """The virtual hierarchy with every level that node ``path`` needs read (all of
        them for the root); built on first use, once per store and process."""
        return await self._shared.view(self, path)

    async def hive(self) -> Hive:
        """The hive with every level read."""
        await self.view()
        return self._shared.hive

    @property
    def request_stats(self):
        """Backend requests made so far (by kind), and the most in flight at once."""
        return self.backend.stats

    # -- reads --------------------------------------------------------------------

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        if byte_range is not None and not isinstance(
            byte_range, RangeByteRequest | OffsetByteRequest | SuffixByteRequest
        ):
            raise TypeError(f"Unexpected byte_range, got {byte_range}.")
        data = await self._get_bytes_like(key, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def _get_bytes_like(self, key: str, byte_range: ByteRequest | None):
        if not isinstance(key, str) or key.rsplit("/", 1)[-1] in _V2_KEYS:
            return None
        if (path := _document_path(key)) is not None:
            doc = (await self.view(path)).document(path)
            return None if doc is None else slice_bytes(doc, byte_range)
        found = await self._find_chunk(key)
        if found is None:
            return None
        array, coords = found
        if isinstance(array, FabricatedArray):
            return slice_bytes(array.fabricate(coords), byte_range)
        return await self._leaf_chunk(array, coords, byte_range)

    async def _find_chunk(self, key: str) -> tuple[Array, tuple[int, ...]] | None:
        """The array and chunk coordinates ``key`` names; only a miss reads the unread
        levels the key may lie in (the hot path does not look at them)."""
        found = (await self._shared.view(self, None)).chunk(key)
        return found if found is not None else (await self.view(key)).chunk(key)

    async def _leaf_chunk(self, array: FieldArray, coords: tuple[int, ...], byte_range):
        located = array.locate(coords)
        leaf_path = located.path or array.level.leaf_path(located.shard, located.window)
        leaf = await self._shared.leaves.resolve(leaf_path, self.backend.get)
        if leaf.state != "stamped":
            if leaf.state == "absent" and (located.window or array.level.window):
                return None  # a shard with no leaf in this window: absence is an answer
            self._shared.warn_once(
                leaf_path,
                f"leaf {leaf_path} has no commit stamp ({_STATE_TEXT[leaf.state]}; listed by the"
                f" {array.level.coverage_source}): read as missing (fill value)",
            )
            return None
        differing = await self._shared.encodings.differing_meta(self.backend, leaf, array)
        if differing is not None:
            chunk = await transcode(self.backend, leaf, array, differing, coords)
            return None if chunk is None else slice_bytes(chunk, byte_range)
        key = f"{leaf.data_prefix}/{located.key}"
        if array.mode == "shard":
            read = functools.partial(self._read, sized=True)
            data = await shard_passthrough(read, self._shared.indexes, key, array.check,
                                           byte_range)
        elif array.mode == "leaf":
            data = await self._read(key)
            data = None if data is None else reframe(data, array.check, key)
            data = None if data is None else slice_bytes(data, byte_range)
        else:
            data = await self._inner_chunk(key, array, located.inner, byte_range)
        if data is None and leaf.current is not None:
            await self._warn_if_dangling(leaf, array)
        return data

    async def _read(self, key: str, byte_range=None, sized: bool = False):
        try:
            return await (self.backend.get_sized if sized else self.backend.get)(key, byte_range)
        except OutsideRootError:
            raise
        except Exception as err:
            raise ChunkReadError(f"reading {key} from {self.backend}: {err}") from err

    async def _inner_chunk(self, key: str, array: FieldArray, part: int, byte_range):
        """One inner chunk of a shard object, as a ranged read located by its index."""

        read = functools.partial(self._read, sized=True)
        entries = await self._shared.indexes.get(key, lambda: load_index(read, key, array.check))
        span = None if entries is None else inner_span(entries, part)
        if span is None:
            return None
        data = await self._read(key, span)
        size = span.end - span.start
        if data is None or len(memoryview(data)) != size:
            raise TruncatedChunkError(f"{key}: its index promised {size} bytes at {span.start}")
        check_chunk(data, ChunkCheck(nbytes=array.check.inner_nbytes), None, key)
        return slice_bytes(data, byte_range)

    async def _warn_if_dangling(self, leaf, array: FieldArray) -> None:
        """A versioned leaf's missing chunk: warn once if its version itself is gone."""
        if leaf.path in self._shared.dangling_checked:
            return
        self._shared.dangling_checked.add(leaf.path)
        group = f"{leaf.data_prefix}/{array.level.cell_order}"
        if await self.backend.get(f"{group}/zarr.json") is None:
            warn_dangling(leaf, group)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(k, prototype, r) for k, r in list(key_ranges)))
        )

    async def exists(self, key: str) -> bool:
        if (path := _document_path(key)) is not None:
            return (await self.view(path)).document(path) is not None
        found = await self._find_chunk(key)
        if found is None:
            return False
        if isinstance(found[0], FabricatedArray):
            return True
        return await self._get_bytes_like(key, RangeByteRequest(0, 1)) is not None

    async def getsize(self, key: str) -> int:
        path = _document_path(key)
        if path is not None and (doc := (await self.view(path)).document(path)) is not None:
            return len(doc)
        found = await self._find_chunk(key)
        if found is not None and isinstance(found[0], FabricatedArray):
            return len(memoryview(found[0].fabricate(found[1])).cast("B"))
        return await super().getsize(key)

    # -- listing ------------------------------------------------------------------

    async def list(self) -> AsyncIterator[str]:
        view = await self.view()
        for path in ["", *view.descendants("")]:
            yield f"{path}/zarr.json" if path else "zarr.json"
            if path in view.arrays:
                for key in _chunk_keys(path, view.arrays[path].grid):
                    yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        stem = prefix.rstrip("/")
        async for key in self.list():
            if not stem or key == stem or key.startswith(stem + "/"):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        path = prefix.strip("/")
        view = await self.view(path)
        children = view.children(path)
        if children is not None:
            yield "zarr.json"
            for child in children:
                yield child
            return
        if path in view.arrays:
            yield "zarr.json"
            yield "c"
            return
        parts = path.split("/")
        for i, part in enumerate(parts):
            array = view.arrays.get("/".join(parts[:i])) if part == "c" else None
            if array is not None:
                done = parts[i + 1 :]
                if len(done) < len(array.grid) and all(
                    INDEX_RE.match(p) and int(p) < n
                    for p, n in zip(done, array.grid, strict=False)
                ):
                    for index in range(array.grid[len(done)]):
                        yield str(index)
                return

    # -- writes (refused) -----------------------------------------------------------

    def _refuse(self) -> None:
        self._check_writable()
        raise ValueError(f"{_READ_ONLY}: {self!r} is a read-only view of a morton-hive")

    async def set(self, key: str, value: Buffer) -> None:
        self._refuse()

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._refuse()

    async def delete(self, key: str) -> None:
        self._refuse()

    async def delete_dir(self, prefix: str) -> None:
        self._refuse()

    async def clear(self) -> None:
        self._refuse()


def _document_path(key: str) -> str | None:
    """The node path whose ``zarr.json`` ``key`` names, or ``None``."""
    if key == "zarr.json":
        return ""
    return key[: -len("/zarr.json")] if key.endswith("/zarr.json") else None


def _chunk_keys(path: str, grid: tuple[int, ...]):
    import itertools

    for coords in itertools.product(*(range(n) for n in grid)):
        yield f"{path}/c/" + "/".join(map(str, coords))


class _Shared:
    """Per-process state a store and its read-only copies share; never pickled."""

    def __init__(self) -> None:
        self.leaves = LeafCache()
        self.encodings = Encodings()
        self.indexes: AsyncCache = AsyncCache(65_536)
        self.hive: Hive | None = None
        self._opened: AsyncCache[View] = AsyncCache(1)
        self._settled: AsyncCache[None] = AsyncCache(1 << 16)
        self._current: View | None = None
        self.warned: set[str] = set()
        self.dangling_checked: set[str] = set()

    async def view(self, store: MocHiveStore, path: str | None) -> View:
        """The view, opened once (concurrent first requests share one open), with the
        pending levels ``path`` needs read first (``None``: none)."""
        await self._opened.get(None, lambda: self._open(store))
        wanted = [] if path is None else self.hive.pending_for(path)
        if wanted:
            await asyncio.gather(*(
                self._settled.get(level.path, lambda p=product, lv=level: settle(
                    store.backend, self.leaves, p, lv, store.verify, store._aoi_cells))
                for product, level in wanted
            ))
            self._current = self._build(store)
        return self._current

    async def _open(self, store: MocHiveStore) -> View:
        self.hive = await open_hive(
            store.backend, self.leaves, store.verify, store.window, store._aoi_cells
        )
        self._current = self._build(store)
        return self._current

    def _build(self, store: MocHiveStore) -> View:
        options = {"verify": store.verify, "chunking": store.chunking}
        if store.window is not None:
            options["window"] = store.window
        if store.aoi is not None:
            options["aoi"] = [str(a) for a in store.aoi]
        view = View(self.hive, options)
        for array in view.arrays.values():
            if isinstance(array, FieldArray):
                self.encodings.seed(array)
        return view

    def warn_once(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            warnings.warn(message, HiveWarning, stacklevel=2)
