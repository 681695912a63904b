"""The ASGI application: the virtual hierarchy as a read-only Zarr v3 HTTP endpoint.

Routes: ``GET /`` is the viewer page (``static/index.html`` beside this module when it
exists, else one line of text) for a request that accepts ``text/html`` (a browser), and
the root's directory index for any other (GDAL, curl); ``GET /{group}/`` is the group's
directory index (``listing``); ``/.static/...`` the viewer's files and, with
``tiles=True``, ``/.tiles/...`` map tiles (``tiles``; prefixes no virtual key can have),
and every other path a virtual key. Keys answer ``GET`` and
``HEAD`` (anything else is 405 with ``Allow``). See
``protocol`` for ranges and conditionals, ``resource`` for entity tags and
``generations`` for how long bytes may be cached.

Status codes: 200/206 with the bytes; 304 when ``If-None-Match`` names the current tag;
404 for keys outside the hierarchy and for chunks with nothing stored (the fill value),
204 instead when the URL's query says ``absent=204`` (the viewer's spelling: an expected
absence is not an error in a browser's console);
416 with ``Content-Range: bytes */N`` for an unsatisfiable range; 502 with a one-line
reason naming the object when the hive cannot be read or is damaged (logged once per
reason on the ``moczarr_store.serve`` logger); 500 for anything unexpected. Every
request is logged on ``moczarr_store.serve.access`` (INFO; ``moczarr-store serve`` shows
those lines with ``--access-log``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import MocHiveError
from ..options import DEFAULT_STAMP_TTL, check_origins
from ..read.execute import execute
from ..read.fresh import planned
from ..read.plan import Absent, Plan
from .generations import Generation, Generations, store_factory
from .listing import group_children, index_page
from .representation import (
    ByteRange,
    Unsatisfiable,
    byte_range,
    names_tag,
    none_match,
    range_applies,
)
from .resource import Found, find, leaf_tag, read_range, whole
from .streamed import Streamed
from .warm import warm

logger = logging.getLogger("moczarr_store.serve")
access_logger = logging.getLogger("moczarr_store.serve.access")

STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC_PREFIX = "/.static"
EXPOSED_HEADERS = ("Content-Range", "Content-Length", "ETag", "Accept-Ranges")
ALLOWED_HEADERS = ("Range", "If-None-Match", "If-Range")
MAX_KEY = 4096
MAX_REASONS = 65_536  # distinct failure reasons remembered for logging once
_BAD_KEY = re.compile(r"[\x00-\x1f\x7f\\]")
_ENCODED_SEPARATOR = re.compile(rb"%(2f|5c|00)", re.IGNORECASE)


def is_candidate(key: str, raw_path: bytes | None) -> bool:
    """Whether ``key`` may name a node's ``zarr.json`` or a chunk; nothing else is looked
    up (no store, no backend): not a percent-encoded ``/``, ``\\`` or NUL, control
    characters, empty, ``.`` or ``..`` segments, nor over 4,096 characters."""
    if not key or len(key) > MAX_KEY or _BAD_KEY.search(key):
        return False
    if raw_path is not None and _ENCODED_SEPARATOR.search(raw_path):
        return False
    if not (key == "zarr.json" or key.endswith("/zarr.json") or "/c/" in key):
        return False
    return all(part not in ("", ".", "..") for part in key.split("/"))


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or "no detail"
    return f"{type(err).__name__}: {text}"[:1000]


def _locations(generation: Generation) -> list[str]:
    """How messages may name the hive's root (its URL, its local directory)."""
    backend = generation.store.backend
    url = backend.url or ""
    return [w for w in (url, url.removeprefix("file://")) if len(w) > 1]


class KeyServer:
    """Answers requests for virtual keys from the current generation."""

    def __init__(self, generations: Generations) -> None:
        self.generations = generations
        self._reasons: set[str] = set()

    # -- responses -------------------------------------------------------------------

    @staticmethod
    def _cache(generation: Generation, now: float) -> dict[str, str]:
        return {"Cache-Control": generation.cache_control(now)}

    def _not_found(self, generation: Generation, now: float) -> Response:
        return PlainTextResponse("not found\n", 404, headers=self._cache(generation, now))

    def _failed(self, generation: Generation, status: int, key: str, err: Exception) -> Response:
        """A 5xx with a one-line reason, logged once per reason. The client's copy names the
        hive-relative object, not where the hive lives (the log has it all)."""
        reason = _one_line(err) if status == 502 else f"internal error ({type(err).__name__})"
        if reason not in self._reasons:
            if len(self._reasons) >= MAX_REASONS:
                self._reasons.clear()
            self._reasons.add(reason)
            if status == 502:
                logger.error("%s: %s", key, reason)
            else:
                logger.error("%s: %s", key, reason, exc_info=err)
        for where in _locations(generation):
            reason = reason.replace(where, "<hive>")
        return PlainTextResponse(reason + "\n", status, headers={"Cache-Control": "no-store"})

    # -- the endpoint ------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        generation = self.generations.current()
        now = self.generations.now()
        key = request.path_params["key"]
        if not is_candidate(key, request.scope.get("raw_path")):
            return self._not_found(generation, now)
        try:
            answer = await self._answer(generation, now, key, request)
        except (MocHiveError, OSError, ValueError) as err:
            return self._failed(generation, 502, key, err)
        except Exception as err:
            return self._failed(generation, 500, key, err)
        if answer.status_code == 404 and request.query_params.get("absent") == "204":
            # the viewer's spelling: an absent chunk (its fill value) is expected, not an error
            return Response(None, 204, headers=self._cache(generation, now))
        return answer

    async def index(self, request: Request, path: str | None = None) -> Response:
        """A group's directory index (``GET /{group}/``; ``path=""``: the root's)."""
        generation = self.generations.current()
        now = self.generations.now()
        if path is None:  # ``/{path}/``: an empty or odd segment is no group
            path = request.path_params["path"]
            key = f"{path}/zarr.json"
        else:
            key = f"{path}/zarr.json" if path else "zarr.json"
        if not is_candidate(key, request.scope.get("raw_path")):
            return self._not_found(generation, now)
        try:
            children = await group_children(generation.store.session, path)
        except (MocHiveError, OSError, ValueError) as err:
            return self._failed(generation, 502, key, err)
        except Exception as err:
            return self._failed(generation, 500, key, err)
        if children is None:
            return self._not_found(generation, now)
        page = index_page(f"/{path}/" if path else "/", children)
        return Response(page, 200, headers=self._cache(generation, now), media_type="text/html")

    async def _answer(
        self, generation: Generation, now: float, key: str, request: Request
    ) -> Response:
        """The response to ``key``, planned again if a leaf's stamp moved while it was
        answered: its status, size, entity tag and bytes come from one plan."""

        async def respond(plan: Plan) -> Response:
            return await self._respond(generation, now, plan, request)

        return await planned(generation.store.session, key, respond)

    async def _respond(
        self, generation: Generation, now: float, plan: Plan, request: Request
    ) -> Response:
        session = generation.store.session
        if isinstance(plan, Absent):
            await execute(session, plan)  # damage is noted (warned once per level and kind)
            return self._not_found(generation, now)
        headers = request.headers
        if_none_match = headers.get("if-none-match")
        cache = self._cache(generation, now)
        tag = leaf_tag(generation, plan)
        if tag is not None and names_tag(if_none_match, tag):  # known from the stamp alone
            return Response(None, 304, headers={"ETag": tag, **cache})
        ranged = headers.get("range")
        body = request.method == "GET" and ranged is None
        found = await find(generation, plan, tag, body=body,
                           part=request.method == "GET" and ranged is not None)
        if found is None:
            return self._not_found(generation, now)
        if none_match(if_none_match, found.etag):
            return Response(None, 304, headers={"ETag": found.etag, **cache})
        selected = byte_range(ranged, found.size)
        if selected is not None and not range_applies(headers.get("if-range"), found.etag):
            selected = None
        common = {"ETag": found.etag, "Accept-Ranges": "bytes", **cache}
        if isinstance(selected, Unsatisfiable):
            return Response(
                None, 416, headers={**common, "Content-Range": f"bytes */{found.size}"}
            )
        return await self._bytes(generation, request, found, selected, common)

    async def _bytes(
        self,
        generation: Generation,
        request: Request,
        found: Found,
        selected: ByteRange | None,
        common: dict[str, str],
    ) -> Response:
        status, length, extra = 200, found.size, {}
        if selected is not None:
            status, length = 206, selected.end - selected.start
            extra = {"Content-Range": selected.content_range(found.size)}
        if request.method == "HEAD":
            payload = None
        else:
            payload = await (whole(generation, found) if selected is None
                             else read_range(generation, found, selected))
            if payload is None:  # the object went away after its size was read
                return self._not_found(generation, self.generations.now())
            length = len(payload)
        headers = {**common, **extra, "Content-Length": str(length)}
        if payload is None:
            return Response(None, status, headers=headers, media_type=found.media_type)
        return Streamed(payload, status, headers, found.media_type)


# -- the application ------------------------------------------------------------------


class AccessLog:
    """ASGI middleware: one INFO line per request on ``moczarr_store.serve.access``
    (client, method, raw path, status, body bytes, milliseconds)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not access_logger.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        start, status, sent = time.perf_counter(), [0], [0]

        async def observed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body":
                sent[0] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            client = scope.get("client") or ("-", 0)
            path = (scope.get("raw_path") or scope["path"].encode()).decode("ascii", "replace")
            access_logger.info(
                '%s "%s %s" %d %d %.1fms', client[0], scope["method"], path[:512], status[0],
                sent[0], (time.perf_counter() - start) * 1e3,
            )


class HiveApp:
    """The ASGI app: a ``GET`` or ``HEAD`` of a virtual key goes to
    ``KeyServer.handle`` at once; every other request (the viewer, its files,
    directory indexes, other methods) to the Starlette app ``pages``, which routes it.
    Routing a chunk request through Starlette's router and middleware would cost more
    than reading a warm chunk. ``state.generations`` holds the current store."""

    def __init__(self, keys: KeyServer, pages: Starlette, *, prefixes: tuple[str, ...],
                 cors: list[str]) -> None:
        self.keys, self.pages, self.prefixes = keys, pages, prefixes
        self.state = pages.state
        app: Any = self._dispatch
        if cors:
            app = CORSMiddleware(
                app,
                allow_origins=cors,
                allow_methods=["GET", "HEAD"],
                allow_headers=list(ALLOWED_HEADERS),
                expose_headers=list(EXPOSED_HEADERS),
                max_age=600,
            )
        self._app = AccessLog(app)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)

    async def _dispatch(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        key = self._key(scope) if scope["type"] == "http" else None
        if key is None:
            await self.pages(scope, receive, send)
            return
        scope["path_params"] = {"key": key}  # as Starlette's router sets it, no copy
        request = Request(scope, receive)
        response = await self.keys.handle(request)
        await response(scope, receive, send)

    def _key(self, scope: dict[str, Any]) -> str | None:
        """The virtual key a ``GET``/``HEAD`` asks for, as the ``/{key:path}`` route
        would match it, or ``None`` for a request another route answers."""
        if scope["method"] not in ("GET", "HEAD"):
            return None
        path: str = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root) and path[len(root):len(root) + 1] == "/":
            path = path[len(root):]
        if len(path) < 2 or path[0] != "/" or path[-1] == "/":
            return None
        if any(path == p or path.startswith(p + "/") for p in self.prefixes):
            return None
        return path[1:]


def tiles_module() -> ModuleType:
    """:mod:`.tiles`, or an ``ImportError`` saying how to install what it needs."""
    try:
        from . import tiles
    except ImportError as err:
        python = "" if sys.version_info >= (3, 12) else (
            f"; xpublish-tiles needs Python >= 3.12, this is {platform.python_version()}")
        raise ImportError(f"tiles need the [tiles] extra ({err}): "
                          f"pip install 'moczarr-store[tiles]'{python}") from err
    return tiles


def _index(static_dir: Path | None,
           keys: KeyServer) -> Callable[[Request], Awaitable[Response]]:
    async def index(request: Request) -> Response:
        if "text/html" not in request.headers.get("accept", ""):
            return await keys.index(request, "")
        page = None if static_dir is None else static_dir / "index.html"
        if page is not None and page.is_file():
            return FileResponse(page)
        return PlainTextResponse(
            "moczarr-store: a read-only Zarr v3 hierarchy; its root metadata is /zarr.json\n"
        )

    return index


def _warming(generations: Generations, warm_leaves: int) -> Callable[[Any], Any]:
    """The app's lifespan: the warm-up (:func:`.warm.warm`) runs in the background while it
    serves, and is cancelled when it stops."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        task = asyncio.get_running_loop().create_task(warm(generations, warm_leaves)) \
            if warm_leaves else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return lifespan


def create_app(
    source_or_store: Any,
    *,
    cors: Iterable[str] = (),
    stamp_ttl: float = DEFAULT_STAMP_TTL,
    static_dir: Path | None = STATIC_DIR,
    tiles: bool = False,
    warm_leaves: int = 0,
    **store_options: Any,
) -> HiveApp:
    """An ASGI app serving one hive as a Zarr v3 hierarchy over HTTP.

    ``source_or_store``: a path or URL (with ``store_options`` for
    ``MocHiveStore``: ``chunking``, ``verify``, ``window``,
    ``geometry``, storage options...) or a ``MocHiveStore`` (its recipe makes each later
    generation).
    ``cors``: origins allowed to read (``"*"`` for any). ``stamp_ttl``: seconds a
    generation's stamps are trusted and the longest ``max-age`` sent. ``static_dir``: the
    viewer's files. ``warm_leaves``: leaf reads allowed at start to fold the coarse
    computed orders (0, the default here: none, and nothing is read until
    the first request). ``app.state.generations`` holds the current store. Create one app
    per process (each worker its own).
    """
    make, first = store_factory(source_or_store, store_options)
    generations = Generations(make, stamp_ttl, first)
    keys = KeyServer(generations)
    routes: list[BaseRoute] = [Route("/", _index(static_dir, keys), methods=["GET"])]
    prefixes: tuple[str, ...] = ()
    if static_dir is not None and static_dir.is_dir():
        routes.append(Mount(STATIC_PREFIX, StaticFiles(directory=static_dir)))
        prefixes += (STATIC_PREFIX,)
    if tiles:
        made = tiles_module()
        routes.append(Mount(made.TILES_PREFIX, made.tiles_app(generations)))
        prefixes += (made.TILES_PREFIX,)
    routes.append(Route("/{path:path}/", keys.index, methods=["GET"]))
    routes.append(Route("/{key:path}", keys.handle, methods=["GET"]))  # 405 for others
    pages = Starlette(routes=routes, lifespan=_warming(generations, warm_leaves))
    pages.state.generations = generations
    return HiveApp(keys, pages, prefixes=prefixes, cors=list(check_origins(cors)))
