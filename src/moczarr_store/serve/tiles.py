"""Map tiles of any field under ``/.tiles/``: OGC API Tiles and XYZ PNG tiles rendered by
xpublish-tiles from the hive's CF HEALPix layer (the ``[tiles]`` extra; xpublish-tiles
needs Python >= 3.12).

``/.tiles`` is a prefix no virtual key can have. Below it are xpublish's routes:
``/tiles/tileMatrixSets`` (the tile matrix sets: ``WebMercatorQuad``,
``UPSArcticWGS84Quad``, ``UPSAntarcticWGS84Quad``, ...), ``/datasets`` (the ids), and per
dataset ``/datasets/{id}/tiles/`` (its tilesets), ``.../tiles/{tms}/tilejson.json`` and
``.../tiles/{tms}/{z}/{y}/{x}?variables=FIELD&colorscalerange=MIN,MAX`` (a PNG; 256
pixels square unless ``width``/``height`` say otherwise).

Dataset ids name groups of the hierarchy: ``{product}`` holds every order of the product,
and each tile is drawn from the order, among those holding the tile's fields, whose cell
size is nearest the tile's pixel size (a field without a fold, absent from the computed
orders, is drawn from its stored orders at every zoom);
``{product}.o{N}`` holds order ``N`` alone; ``{product}.all_time`` and
``{product}.all_time.o{N}`` the same for a windowed product's all-time folds. A windowed
field is drawn for ``?window=LABEL`` (the last window without it).

Tiles are read through a second store of the hive with ``centres=True`` (xpublish-tiles
finds a HEALPix grid by its ``lon``/``lat``); it presents the structure the first one
opened for the process's lifetime, and reads the leaves of the serving generation's
stamps. Cost: a dataset's first tile opens its orders' metadata and reads its cell ids
once (kept by xpublish-tiles); a tile reads the chunks of the cells it covers, and one
that would draw more than ``config["tiles.cells"]`` cells is refused (413). A TileJSON's
``minzoom`` and a tileset list's zooms start where no tile is (:mod:`.tile_zooms`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlencode

import morecantile
import numpy as np
import xarray as xr
import xpublish
import zarr
from xpublish import Plugin, hookimpl
from xpublish_tiles.grids import guess_grid_system
from xpublish_tiles.multiscale import assign_leaf_xpublish_ids
from xpublish_tiles.tiles_lib import grid_overlaps_tms
from xpublish_tiles.xpublish.tiles import TilesPlugin

from ..hive.roster import Hive
from ..store import MocHiveStore
from ..tunables import setting
from .generations import Generation, Generations
from .tile_zooms import check_cells, honest_tilejson, honest_tilesets, min_zoom

logger = logging.getLogger("moczarr_store.serve")

TILES_PREFIX = "/.tiles"
# a tile's size and format unless the URL says otherwise; f=png also because
# xpublish-tiles 0.12 hands its unvalidated default ("image/png") to the encoder
DEFAULTS = {"width": "256", "height": "256", "f": "png"}
# a cell's side, in degrees, at order 0: sqrt(4 pi / 12) radians
ORDER0_DEGREES = math.degrees(math.sqrt(math.pi / 3))
_ORDER = re.compile(r"o(\d{1,2})")
_TILE = re.compile(r"/tiles/([^/]+)/(\d{1,2})/(\d{1,9})/(\d{1,9})$")
# the metadata that advertises zooms: a dataset's TileJSON, and its list of tilesets
_TILEJSON = re.compile(r"/datasets/([^/]+)/tiles/([^/]+)/tilejson\.json$")
_TILESETS = re.compile(r"/datasets/([^/]+)/tiles/?$")


class _Asked(NamedTuple):
    """What the request being answered asks of the dataset provider: the fields it draws
    (its ``variables``; xpublish-tiles picks a tree's order by zoom alone, so the provider
    answers with the orders holding them), its tile, ``(tms, z, y, x)``, if it is one,
    and the tile matrix set of a TileJSON."""

    fields: frozenset[str] = frozenset()
    tile: tuple[str, int, int, int] | None = None
    tilejson: str | None = None  # the tile matrix set of a TileJSON asked for


_ASKED: ContextVar[_Asked | None] = ContextVar("moczarr_tiles_asked", default=None)


def order_attrs(order: int) -> dict[str, Any]:
    """The attributes by which xpublish-tiles picks an order for a zoom: its cell size
    (degrees, ``spatial:transform``) in a geographic CRS (``proj:code``)."""
    size = ORDER0_DEGREES / 2**order
    return {"spatial:transform": [size, 0.0, -180.0, 0.0, -size, 90.0],
            "proj:code": "EPSG:4326"}


class _Datasets:
    """The dataset ids of one tile store and their trees, each built on first use."""

    def __init__(self, store: MocHiveStore, shown: Hive | None, lineage: str) -> None:
        self.store, self.shown, self.lineage = store, shown, lineage
        self._groups: dict[str, list[str]] | None = None  # id -> its order groups
        self._nodes: dict[str, xr.Dataset] = {}  # group path -> its order's dataset
        self._trees: dict[tuple[str, tuple[str, ...]], xr.DataTree] = {}  # (id, groups)
        self._zooms: dict[tuple[int, str | None, int], int] = {}  # see min_zoom
        self._lock = threading.Lock()

    def groups(self) -> dict[str, list[str]]:
        """Each id and the groups of the orders it holds. Cost: the hierarchy's group
        listing, once."""
        if self._groups is None:
            found: dict[str, list[str]] = {}
            for product in self._children(""):
                parents = [(product, product)]
                if "all_time" in self._children(product):
                    parents.append((f"{product}.all_time", f"{product}/all_time"))
                for name, path in parents:
                    orders = sorted((int(m[1]) for key in self._children(path)
                                     if (m := _ORDER.fullmatch(key))), reverse=True)
                    found[name] = [f"{path}/o{n}" for n in orders]
                    for n in orders:
                        found[f"{name}.o{n}"] = [f"{path}/o{n}"]
            self._groups = found
        return self._groups

    def _children(self, path: str) -> list[str]:
        return sorted(zarr.open_group(self.store, path=path, mode="r").group_keys())

    def tree(self, dataset_id: str, fields: frozenset[str] = frozenset(),
             within: morecantile.TileMatrixSet | None = None) -> xr.DataTree | None:
        """The tree of ``dataset_id`` (``None`` for an unknown id): one node per order
        holding every one of ``fields`` (every order if none holds them), its fields lazy;
        ``within``: without the coarsest orders whose cell centres all lie outside where
        that tile matrix set is defined (:meth:`_within`). Cost: each order's metadata,
        once."""
        with self._lock:
            paths = self.groups().get(dataset_id)
            if paths is None:
                return None
            holding = tuple(p for p in paths if fields <= set(self._node(p).data_vars))
            holding = holding or tuple(paths)
            if within is not None:
                holding = self._within(dataset_id, holding, fields, within)
            key = (dataset_id, holding)
            if key not in self._trees:
                tree = xr.DataTree.from_dict({p.rsplit("/", 1)[1]: self._node(p) for p in key[1]})
                # xpublish-tiles keeps each node's grid (its cell ids) under this id, in
                # one cache for the process: unique to this app's tile stores, whose
                # structure never changes
                tree.attrs["_xpublish_id"] = f"{self.lineage}:{dataset_id}"
                assign_leaf_xpublish_ids(tree)
                self._trees[key] = tree
            return self._trees[key]

    def min_zoom(self, dataset_id: str, fields: frozenset[str],
                 tms: morecantile.TileMatrixSet) -> int:
        """:func:`~.tile_zooms.min_zoom` of the tree drawing ``fields``, kept per tree,
        tile matrix set and ``tiles.cells``. Cost: that of the tree, and of its zooms
        once."""
        tree = self.tree(dataset_id, fields)
        if tree is None:
            return tms.minzoom
        key = (id(tree), tms.id, setting("tiles.cells"))  # trees are kept: ids stay theirs
        if key not in self._zooms:
            self._zooms[key] = min_zoom(tree, tms)
        return self._zooms[key]

    def _within(self, dataset_id: str, paths: tuple[str, ...], fields: frozenset[str],
                tms: morecantile.TileMatrixSet) -> tuple[str, ...]:
        """``paths`` (finest first) without the coarsest orders whose cell centres all lie
        outside ``tms``'s area of use, as xpublish-tiles judges the coarsest order of a
        TileJSON's tree: a coarse cell reaches far beyond its centre (an order-0 polar cell
        touches its pole; its centre, at 42 degrees of latitude, lies 48 from it), so that
        check would refuse a polar tile matrix set for data at the poles. All of ``paths``
        when even the finest order lies outside. Cost: the cell ids of the orders looked
        at, coarsest first (xpublish-tiles keeps them for drawing, under the id the tree
        gives them)."""
        kept = list(paths)
        while kept:
            order = kept[-1].rsplit("/", 1)[1]
            node = self._node(kept[-1]).assign_attrs(
                _xpublish_id=f"{self.lineage}:{dataset_id}/{order}")
            name = min(fields) if fields else next(iter(node.data_vars))
            if grid_overlaps_tms(guess_grid_system(node, name), tms):
                return tuple(kept)
            kept.pop()
        return paths

    def _node(self, path: str) -> xr.Dataset:
        """The order group at ``path`` as a lazy dataset with its cell size. Cost: its
        metadata, once."""
        if path not in self._nodes:
            ds = xr.open_zarr(self.store, group=path, chunks=None, consolidated=False)
            self._nodes[path] = ds.assign_attrs(order_attrs(int(path.rsplit("/o", 1)[1])))
        return self._nodes[path]


def tile_store(store: MocHiveStore, shown: Hive | None) -> MocHiveStore:
    """A store of ``store``'s hive with its options and ``centres=True``, presenting
    ``shown`` (a session snapshot) where given. No request."""
    state = store.__getstate__()
    state = {**state, "arguments": {**state["arguments"], "centres": True}, "snapshot": None}
    made = MocHiveStore.__new__(MocHiveStore)
    made.__setstate__(state)
    made.backend.maps_spans = store.backend.maps_spans
    if shown is not None:
        made.session.adopt(copy.deepcopy(shown))
    return made


class HiveDatasets(Plugin):
    """xpublish's dataset provider: the current generation's tile store's datasets."""

    name: str = "moczarr-hive"
    generations: Any = None

    def model_post_init(self, context: Any, /) -> None:
        self._lock = threading.Lock()
        self._made: tuple[Generation, _Datasets] | None = None
        self._lineage = uuid.uuid4().hex  # the trees' ids for xpublish-tiles' grid cache

    def current(self) -> _Datasets:
        """The datasets of the serving generation: a new tile store per generation, which
        presents what the previous one did (the served store's view at first)."""
        generation = self.generations.current()
        with self._lock:
            if self._made is None or self._made[0] is not generation:
                if self._made is None:
                    source, shown = generation.store, generation.store.session.snapshot()
                else:  # what it presented: the levels it read, else what it was given
                    before = self._made[1]
                    source, shown = before.store, before.store.session.snapshot() or before.shown
                made = _Datasets(tile_store(source, shown), shown, self._lineage)
                self._made = (generation, made)
            return self._made[1]

    @hookimpl
    def get_datasets(self) -> list[str]:
        return list(self.current().groups())

    @hookimpl
    def get_datatree(self, dataset_id: str, group: str) -> xr.DataTree | None:
        if group:
            return None
        asked = _ASKED.get() or _Asked()
        within = None
        if asked.tilejson is not None and asked.tilejson in morecantile.tms.list():
            within = morecantile.tms.get(asked.tilejson)
        tree = self.current().tree(dataset_id, asked.fields, within)
        if tree is not None and asked.tile is not None:
            check_cells(tree, *asked.tile)
        return tree


class Mounted:
    """ASGI middleware for the app mounted at :data:`TILES_PREFIX`: adds
    :data:`DEFAULTS` to a query that lacks them, and makes the mount point the app's root
    (xpublish-tiles writes its tile URLs from it); a request's fields (its ``variables``)
    choose the orders its dataset's tree holds, its tile is checked by
    :func:`~.tile_zooms.check_cells`, and the zooms a TileJSON or tileset list advertises
    start where no tile is refused (:mod:`.tile_zooms`)."""

    def __init__(self, app: Any, hive: HiveDatasets) -> None:
        self.app, self.hive = app, hive

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                          keep_blank_values=True)
        given = {name for name, _ in query}
        missing = [(k, v) for k, v in DEFAULTS.items() if k not in given]
        scope = {**scope, "app_root_path": scope.get("root_path", ""),
                 "query_string": urlencode(query + missing).encode()}
        path = scope.get("path", "")
        tile, tilejson = _TILE.search(path), _TILEJSON.search(path)
        fields = frozenset(v for k, v in query if k == "variables")
        asked = _ASKED.set(_Asked(
            fields, (tile[1], int(tile[2]), int(tile[3]), int(tile[4])) if tile else None,
            tilejson[2] if tilejson else None))
        try:
            if found := tilejson:
                datasets, dataset_id, tms_id = self.hive.current(), found[1], found[2]
                await _rewritten(self.app, scope, receive, send, lambda body: honest_tilejson(
                    body, tms_id, lambda tms: datasets.min_zoom(dataset_id, fields, tms)))
            elif found := _TILESETS.search(path):
                datasets, dataset_id = self.hive.current(), found[1]
                await _rewritten(self.app, scope, receive, send, lambda body: honest_tilesets(
                    body, lambda field, tms: datasets.min_zoom(
                        dataset_id, frozenset({field}), tms)))
            else:
                await self.app(scope, receive, send)
        finally:
            _ASKED.reset(asked)


async def _rewritten(app: Any, scope: dict, receive: Any, send: Any,
                     change: Callable[[dict], dict]) -> None:
    """``app``'s answer, its JSON body passed through ``change`` if it succeeded (run in a
    thread: it may transform many tile boxes). Cost: the body held in memory."""
    start: dict | None = None
    parts: list[bytes] = []

    async def held(message: dict) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(parts)
        if start["status"] == 200:
            body = json.dumps(await asyncio.to_thread(change, json.loads(body))).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    await app(scope, receive, held)


def tiles_app(generations: Generations) -> Callable:
    """The ASGI app answering under :data:`TILES_PREFIX` (mounted there by
    ``create_app(tiles=True)``)."""
    hive = HiveDatasets(generations=generations)
    return Mounted(xpublish.Rest({}, plugins={"tiles": TilesPlugin(), "hive": hive}).app, hive)


# -- the first tile's wait --------------------------------------------------------------

_warmed = threading.Event()
_warming = threading.Lock()
WARM_DTYPES = ("float32", "float64", "int64", "int32")


def warm_up(dtypes: tuple[str, ...] = WARM_DTYPES) -> None:
    """Render one small tile of a synthetic HEALPix field of each of ``dtypes``, so that
    numba compiles the renderer's kernels (datashader's, generated per value type, which
    its on-disk cache cannot keep) before a user's first tile waits for them. Cost:
    about 10 s a type on two cores, once per process. Blocks; a no-op once done."""
    from xpublish_tiles.pipeline import pipeline
    from xpublish_tiles.types import ImageFormat, QueryParams
    from xpublish_tiles.xpublish.tiles.tile_matrix import extract_tile_bbox_and_crs

    with _warming:
        if _warmed.is_set():
            return
        start = time.perf_counter()
        bbox, crs = extract_tile_bbox_and_crs("WebMercatorQuad", 0, 0, 0)
        for dtype in dtypes:
            params = QueryParams(
                variables=["v"], style="polygons", variant="viridis", crs=crs, bbox=bbox,
                width=256, height=256, format=ImageFormat.PNG, selectors={},
                colorscalerange=(0.0, 1.0))
            asyncio.run(pipeline(_synthetic(dtype), params))
        _warmed.set()
        logger.info("tiles: the renderer is ready for %s (%.1f s)", ", ".join(dtypes),
                    time.perf_counter() - start)


def warm_up_in_background() -> threading.Thread:
    """:func:`warm_up` in a daemon thread (``serve --tiles`` starts it with the server)."""
    thread = threading.Thread(target=warm_up, name="moczarr-tiles-warm-up", daemon=True)
    thread.start()
    return thread


def _synthetic(dtype: str) -> xr.Dataset:
    """Order 1 of the sphere (48 cells) as the store presents a level's CF layer."""
    cells = np.arange(48, dtype="uint64")
    lon = np.zeros(48)
    field = xr.Variable("cells", (cells % 2).astype(dtype), {"grid_mapping": "healpix"},
                        encoding={"coordinates": "healpix_index lon lat healpix"})
    return xr.Dataset(
        {"v": field},
        coords={
            "healpix_index": ("cells", cells, {"standard_name": "healpix_index"}),
            "lon": ("cells", lon, {"standard_name": "longitude", "units": "degrees_east"}),
            "lat": ("cells", lon, {"standard_name": "latitude", "units": "degrees_north"}),
            "healpix": ((), 0, {"grid_mapping_name": "healpix", "refinement_level": 1,
                                "indexing_scheme": "nested"}),
        },
        attrs={"_xpublish_id": f"moczarr-store warm-up {dtype}"},
    )
