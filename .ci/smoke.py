"""Smoke test of an installed wheel, run from the repository root (for fixtures/):

    python .ci/smoke.py            # the plain install: zarr reads a fixture, --version
    python .ci/smoke.py extras     # and what [xarray], [serve], [export] add, where installed

It must import the installed package, not src/: it says where it found it.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import zarr

import moczarr_store
from moczarr_store import MocHiveStore

FIXTURE = "fixtures/bare_versioned"


def base() -> None:
    assert "site-packages" in moczarr_store.__file__, moczarr_store.__file__
    root = zarr.open_group(MocHiveStore(FIXTURE), mode="r")
    assert int(root["atl06/o7/count"][:].sum()) == 71
    cli = Path(sys.executable).with_name("moczarr-store")
    version = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"moczarr-store {moczarr_store.__version__}", version
    print(f"base: {moczarr_store.__file__} {version.stdout.strip()}: zarr reads {FIXTURE}")


def xarray() -> None:
    import xarray as xr

    ds = xr.open_zarr(MocHiveStore(FIXTURE), group="atl06/o7")
    assert int(ds["count"].sum()) == 71
    print("xarray: open_zarr reads", FIXTURE)


def serve() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cli = Path(sys.executable).with_name("moczarr-store")
    server = subprocess.Popen([cli, "serve", FIXTURE, "--port", str(port)],
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                url = f"http://127.0.0.1:{port}/atl06/o7/zarr.json"
                with urllib.request.urlopen(url, timeout=5) as answer:
                    assert b'"node_type": "group"' in answer.read().replace(b'":"', b'": "')
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(20)
    print("serve: answers on 127.0.0.1")


def export() -> None:
    from moczarr_store.refs import export_refs

    with tempfile.TemporaryDirectory() as tmp:
        formats = ["mdim-refs"]
        if importlib.util.find_spec("icechunk"):
            formats += ["icechunk", "kerchunk-json"]
        for fmt in formats:
            report = export_refs(FIXTURE, fmt, Path(tmp) / fmt)
            assert report.to_json()["chunks_referenced"] > 0, fmt
    print("export:", ", ".join(formats))


if __name__ == "__main__":
    base()
    if sys.argv[1:] == ["extras"]:
        xarray()
        serve()
        export()
