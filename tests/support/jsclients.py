"""The JavaScript clients (``clients/js``: zarrita.js and puppeteer-core, pinned by its
``package-lock.json``), Debian's Chromium and GDAL's ``ogrinfo``, for the tests that run
them.

A test that needs one skips, naming what is missing and the command that installs it,
unless ``MOCZARR_STORE_REQUIRE_CLIENTS=1`` (``.ci/run`` sets it after installing them),
where a missing client fails the test instead.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parents[2] / "clients" / "js"
REQUIRED = os.environ.get("MOCZARR_STORE_REQUIRE_CLIENTS") == "1"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def missing(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (MOCZARR_STORE_REQUIRE_CLIENTS=1)")
    pytest.skip(reason)


def node() -> str:
    """The ``node`` executable with ``clients/js``'s packages installed, or skip."""
    exe = shutil.which("node")
    if exe is None:
        missing("Node.js is not installed (apt-get install nodejs npm)")
    if not (JS / "node_modules" / "zarrita" / "package.json").is_file():
        missing("clients/js has no node_modules: run `npm ci` in clients/js")
    return exe


def chromium() -> str:
    """The system Chromium, or skip."""
    for name in CHROMIUM_NAMES:
        if exe := shutil.which(name):
            return exe
    missing("Chromium is not installed (apt-get install chromium)")
    raise AssertionError  # unreachable: missing raises


def run_node(script: str, *args: str, timeout: float = 300) -> dict:
    """Run ``clients/js/{script}`` with ``args``; its standard output parsed as JSON."""
    done = subprocess.run(
        [node(), str(JS / script), *args], cwd=JS, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    assert done.returncode == 0, f"node {script} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout)


def version(package: str) -> str:
    """The installed version of an npm package of ``clients/js``."""
    return json.loads((JS / "node_modules" / package / "package.json").read_text())["version"]
