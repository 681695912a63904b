"""Smoke test of an installed wheel, run from the repository root (for README.md only):

    python .ci/smoke.py            # the plain install: zarr reads the sample hive, --version
    python .ci/smoke.py extras     # the README's Quick start, serve --sample and the exports

Everything runs on the sample hive the wheel carries, in a temporary directory, never on
the clone's fixtures. It must import the installed package, not src/: it says where it
found it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import zarr

import moczarr_store
from moczarr_store import MocHiveStore, sample_hive

README = Path("README.md").resolve()
CLI = Path(sys.executable).with_name("moczarr-store")


def base() -> None:
    assert "site-packages" in moczarr_store.__file__, moczarr_store.__file__
    hive = sample_hive()
    assert "site-packages" in hive, f"the sample hive is not the wheel's: {hive}"
    root = zarr.open_group(MocHiveStore(hive), mode="r")
    assert int(root["atl06/o4/count"][:].sum()) == 25
    version = subprocess.run([CLI, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"moczarr-store {moczarr_store.__version__}", version
    inspect = subprocess.run([CLI, "inspect", "--sample"], capture_output=True, text=True,
                             check=True)
    assert "/atl06/o4" in inspect.stdout, inspect.stdout
    print(f"base: {moczarr_store.__file__} {version.stdout.strip()}: zarr reads {hive}")


def quick_start() -> None:
    """The README's Quick start block, run as pasted, prints what the README shows."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    code, shown = re.search(r"```python\n(.*?)```\s*```output\n(.*?)```", section, re.S).groups()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md (Quick start)", "exec"), {"__name__": "__main__"})
    assert printed.getvalue() == shown, f"printed:\n{printed.getvalue()}\nshown:\n{shown}"
    print("quick start: prints what the README shows")


def serve() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([CLI, "serve", "--sample", "--port", str(port)],
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                url = f"http://127.0.0.1:{port}/atl06/o4/zarr.json"
                with urllib.request.urlopen(url, timeout=5) as answer:
                    assert b'"node_type": "group"' in answer.read().replace(b'":"', b'": "')
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(20)
    print("serve --sample: answers on 127.0.0.1")


def export() -> None:
    from moczarr_store.refs import export_refs

    with tempfile.TemporaryDirectory() as tmp:
        formats = ["mdim-refs"]
        if importlib.util.find_spec("icechunk"):
            formats += ["icechunk", "kerchunk-json"]
        for fmt in formats:
            report = export_refs(sample_hive(), fmt, Path(tmp) / fmt)
            assert report.to_json()["chunks_referenced"] > 0, fmt
    print("export:", ", ".join(formats))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as elsewhere:
        os.chdir(elsewhere)  # nothing of the clone is in reach
        base()
        if sys.argv[1:] == ["extras"]:
            quick_start()
            serve()
            export()
