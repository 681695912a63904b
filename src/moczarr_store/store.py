"""``MocHiveStore``: the zarr v3 Store protocol over a :class:`HiveSession`.

The store is a thin adapter: every key goes through the one read plan
(:func:`~moczarr_store.read.plan.plan_key`) and its executor; the session owns the hive,
its caches and its view. See ``ARCHITECTURE.md`` beside this module for one key's path.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import itertools
import os
import warnings
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)

from .diagnostics import Problem
from .hive.roster import Hive
from .io.backend import Backend, RequestStats
from .io.storage import storage_arguments
from .options import (
    CHUNKINGS,
    DEFAULT_MAX_CONCURRENCY,
    VERIFY_MODES,
    VIEW_OPTIONS,
    OpenOptions,
    arguments_of,
    check_all,
    docstring_parameters,
    store_keywords,
)
from .read.execute import execute, object_size
from .read.fresh import planned
from .read.plan import Absent, Document, Fabricate, Plan
from .session import HiveSession, adopt_pickled
from .view.tree import INDEX_RE, View

__all__ = ["CHUNKINGS", "VERIFY_MODES", "MocHiveStore"]
_READ_ONLY = "store was opened in read-only mode and does not support writing"


class MocHiveStore(Store):
    """A morton-hive presented as one read-only Zarr v3 hierarchy.

    Parameters
    ----------
    source
        Hive root: a local path, a ``file://``, ``s3://``, ``gs://`` or ``http(s)://``
        URL, or an obstore store instance rooted at the hive.
    """

    supports_writes = False
    supports_deletes = False
    supports_listing = True
    # zarr and xarray open a group from its own documents (built in memory, no request)
    # rather than from the root's consolidated metadata, which holds every level of every
    # product: a misspelt group then reaches the store, which names the groups there are,
    # instead of failing inside zarr with a bare KeyError. Clients over HTTP (``serve``,
    # the exports) still get the consolidated metadata in the root document.
    supports_consolidated_metadata = False

    def __init__(
        self,
        source: str | os.PathLike[str] | Any,
        *,
        verify: str = "lazy",
        chunking: str | int = "auto",
        window: str | None = None,
        aoi: Iterable[str | int] | None = None,
        geometry: str = "covered",
        computed_orders: str = "missing",
        centres: bool = False,
        window_labels: str = "text",
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        read_only: bool = False,
        follow_links: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        **more_storage_options: Any,
    ) -> None:
        given = locals()  # the parameters are the options of OPTIONS (a test checks them)
        arguments = check_all({name: given[name] for name in store_keywords()})
        if more_storage_options:
            arguments["storage_options"] = storage_arguments(arguments["storage_options"],
                                                             more_storage_options)
        super().__init__(read_only=arguments["read_only"])
        self.options = OpenOptions.make(**{o.name: arguments[o.name] for o in VIEW_OPTIONS})
        self.backend = Backend(source, arguments["storage_options"],
                               arguments["max_concurrency"], arguments["follow_links"],
                               store_keywords())
        if more_storage_options:  # warned once they are known to be storage options
            warnings.warn(DeprecationWarning(
                f"storage options as keyword arguments ({', '.join(more_storage_options)}) "
                "are deprecated: pass them as storage_options={...}"), stacklevel=2)
        self._source = source
        self._arguments = arguments
        self.session = HiveSession(self.backend, self.options)

    @classmethod
    def from_url(
        cls, url: str, storage_options: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> MocHiveStore:
        """``MocHiveStore(url, storage_options=storage_options, **kwargs)``, spelt as
        zarr's ``FsspecStore.from_url`` is."""
        return cls(url, storage_options=storage_options, **kwargs)

    @property
    def verify(self) -> str:
        """The ``verify`` option the store was opened with."""
        return self.options.verify

    @property
    def chunking(self) -> str | int:
        """The ``chunking`` option the store was opened with."""
        return self.options.chunking

    @property
    def window(self) -> str | None:
        """The ``window`` option the store was opened with."""
        return self.options.window

    @property
    def aoi(self) -> tuple[str | int, ...] | None:
        """The ``aoi`` option the store was opened with."""
        return self.options.aoi

    @property
    def geometry(self) -> str:
        """The ``geometry`` option the store was opened with."""
        return self.options.geometry

    @property
    def computed_orders(self) -> str:
        """The ``computed_orders`` option the store was opened with."""
        return self.options.computed_orders

    @property
    def centres(self) -> bool:
        """The ``centres`` option the store was opened with."""
        return self.options.centres

    @property
    def window_labels(self) -> str:
        """The ``window_labels`` option the store was opened with."""
        return self.options.window_labels

    # -- identity ---------------------------------------------------------------

    def _recipe(self) -> tuple[Any, ...]:
        return (*self.backend.recipe(), self.options, self.read_only)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MocHiveStore) and self._recipe() == other._recipe()

    def __hash__(self) -> int:
        return hash((self.backend.url, self.options.verify, self.read_only))

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        """The recipe and the session: a store and its read-only copies share dask names;
        another store of the same hive (or an unpickled copy, which reads stamps afresh)
        may serve other versions of its leaves, so its arrays never share a name, which
        would let dask compute one for both in a graph that holds them together. The
        recipe is hashed: it holds the URL's user-info and the storage options' secrets."""
        recipe = hashlib.sha256(repr(self._recipe()).encode()).hexdigest()
        return (type(self).__name__, recipe, self.session.token)

    def __repr__(self) -> str:
        """The source (credentials redacted) and the options that change the view; storage
        options are never shown."""
        described = self.options.describe()
        return f"MocHiveStore({str(self.backend)!r}{', ' if described else ''}{described})"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "arguments": {**self._arguments, "read_only": self.read_only,
                          "storage_options": self.backend.options},
            "source": self._source if self.backend.url is None else self.backend.url,
            "snapshot": self.session.pickled(),  # what the store presents, and whose view
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        arguments = state.get("arguments")
        if arguments is None:  # pickled by an earlier release: its backend and options
            backend = state["backend"]
            arguments = {**arguments_of(state["options"]), "read_only": state["read_only"],
                         "max_concurrency": backend.max_concurrency,
                         "follow_links": backend.follow_links, "storage_options": backend.options}
        type(self).__init__(self, state["source"], **arguments)
        # a copy is read where it was sent, often a dask worker, whose memory monitor counts
        # the pages of mapped spans and pauses the worker at its limit: read into buffers
        self.backend.maps_spans = False
        if state.get("snapshot") is not None:  # what the pickled store presented, kept
            adopt_pickled(self.session, *state["snapshot"])
        elif state.get("hive") is not None:  # pickled by an earlier release: the hive itself
            self.session.adopt(state["hive"])

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

    # -- the hive -------------------------------------------------------------------

    async def _open(self) -> None:
        await super()._open()
        await self.session.ensure_levels(None)

    async def view(self, path: str = "") -> View:
        """The virtual hierarchy with every level that node ``path`` needs read (all of
        them for the root); built on first use, once per store and process."""
        return await self.session.ensure_levels(path)

    async def hive(self) -> Hive:
        """The hive with every level read."""
        await self.session.ensure_levels("")
        return self.session.hive

    def refresh(self) -> None:
        """Read each leaf's commit stamp afresh from the next read on, so leaves a writer
        has committed again since are read from their new versions (a leaf keeps its old
        version until its stamp is read again, or that version is removed). Leaves added
        since the store opened need a new store. No request."""
        self.session.refresh()

    def problems(self) -> dict[tuple[str, str], Problem]:
        """Damage met so far, by ``(level, kind)``: counts and the first few objects."""
        return self.session.problems.summary()

    @property
    def request_stats(self) -> RequestStats:
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
        data = await planned(self.session, key, functools.partial(execute, self.session),
                             byte_range)
        if data is None and key.endswith("/zarr.json"):  # a node the hierarchy lacks
            from .hints import hint_missing

            hint_missing(self, key)
        return None if data is None else prototype.buffer.from_bytes(memoryview(data))

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(k, prototype, r) for k, r in list(key_ranges)))
        )

    async def exists(self, key: str) -> bool:
        async def present(plan: Plan) -> bool:
            if isinstance(plan, Absent | Document | Fabricate):
                return not isinstance(plan, Absent)
            return await execute(self.session, plan) is not None

        return await planned(self.session, key, present, RangeByteRequest(0, 1))

    async def getsize(self, key: str) -> int:
        async def measured(plan: Plan) -> int | None:
            return await object_size(self.session, plan)

        size = await planned(self.session, key, measured)
        if size is None:
            raise FileNotFoundError(key)
        return size

    # -- listing ------------------------------------------------------------------

    async def list(self) -> AsyncIterator[str]:
        view = await self.view()
        for path in ["", *view.descendants("")]:
            yield f"{path}/zarr.json" if path else "zarr.json"
            if path in view.arrays:
                for key in _chunk_keys(path, view.arrays[path].grid):
                    yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        stem = _prefix(prefix).rstrip("/")
        async for key in self.list():
            if not stem or key == stem or key.startswith(stem + "/"):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        path = _prefix(prefix).strip("/")
        view = await self.view(path)
        children = view.children(path)
        if children is not None:
            yield "zarr.json"
            for child in children:
                yield child
            return
        if path in view.arrays:
            yield "zarr.json"
            if view.arrays[path].grid:  # a scalar has no chunk
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


_RAISES = """
Raises
------
OptionError
    An unknown keyword or a bad value, at construction (no request is made then).
NotAHiveError
    At the first read, when the source holds no hive.
HiveReadError
    At a read, when an object cannot be read (``ObjectReadError`` names it).

Examples
--------
``zarr.open_group(MocHiveStore("s3://bucket/hive", storage_options={"anon": True}))``
"""
MocHiveStore.__doc__ = (f"{inspect.cleandoc(MocHiveStore.__doc__ or '')}\n"
                        f"{docstring_parameters()}\n{_RAISES}")


def _prefix(prefix: object) -> str:
    if not isinstance(prefix, str):
        raise TypeError(f"a key prefix is a str, got {type(prefix).__name__}")
    return prefix


def _chunk_keys(path: str, grid: tuple[int, ...]) -> Iterator[str]:
    """The chunk keys of an array (none for a scalar: its value is its fill value)."""
    for coords in itertools.product(*(range(n) for n in grid)) if grid else ():
        yield f"{path}/c/" + "/".join(map(str, coords))
