"""Helpers for the HTTP server tests: the app under uvicorn on a free loopback port, zarr
clients over HTTP, and the comparison of every array with the in-process store.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import zarr

from moczarr_store import MocHiveStore
from moczarr_store.serve.protocols import http_protocol

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CHUNK = "atl06/o7/h_mean/c/0"  # a leaf chunk of every bare fixture


class Served:
    """``app`` under uvicorn in a daemon thread on 127.0.0.1 (``port``, else a free one),
    stopped on exit."""

    def __init__(self, app, port: int = 0, **config) -> None:
        import uvicorn

        self.app = app
        # bound as uvicorn binds for --workers (protocol 0: asyncio leaves TCP_NODELAY off)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        options = {"log_config": None, "access_log": False, "lifespan": "off",
                   "http": http_protocol(),
                   **config}
        self.server = uvicorn.Server(uvicorn.Config(app, **options))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def store(self) -> MocHiveStore:
        """The store of the generation serving now."""
        return self.app.state.generations.current().store

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(20)
        self.sock.close()


def fetch(server: Served, path: str, method: str = "GET", **headers: str):
    """``(status, headers with lower-case names, body)`` of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, headers={k.replace("_", "-"): v for k, v in headers.items()})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def obstore_client(url: str):
    """zarr-python over obstore's ``HTTPStore``."""
    import obstore.store
    from zarr.storage import ObjectStore

    http = obstore.store.HTTPStore.from_url(url, client_options={"allow_http": True})
    return ObjectStore(http, read_only=True)


def fsspec_client(url: str):
    """zarr-python over fsspec's HTTP filesystem (aiohttp)."""
    from zarr.storage import FsspecStore

    return FsspecStore.from_url(url, read_only=True)


def array_paths(store: MocHiveStore) -> list[str]:
    """Every array of the virtual hierarchy (every level read)."""
    root = zarr.open_group(store, mode="r")
    return sorted(p for p, node in root.members(max_depth=None) if isinstance(node, zarr.Array))


def read(store, path: str) -> tuple[np.ndarray, zarr.Array]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.open_array(store, path=path, mode="r")
        return array[...], array


def expected(local: MocHiveStore, paths: list[str]) -> dict[str, tuple[np.ndarray, dict]]:
    """Every array's values and metadata as the in-process store reads them."""
    out = {}
    for path in paths:
        values, array = read(local, path)
        out[path] = (values, array.metadata.to_dict())
    return out


def assert_same_values(remote, want: dict[str, tuple[np.ndarray, dict]]) -> None:
    """Each array read through ``remote`` equals the in-process read (``expected``):
    metadata, dtype, shape and every value (ragged cells compared one by one)."""
    for path, (values, meta) in want.items():
        got, array = read(remote, path)
        assert array.metadata.to_dict() == meta, path
        assert got.dtype == values.dtype and got.shape == values.shape, path
        if values.dtype == object:
            assert got.ravel().tolist() == values.ravel().tolist(), path
        else:
            np.testing.assert_array_equal(got, values, err_msg=path)
