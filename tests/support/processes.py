"""Servers in subprocesses on a free loopback port, for the tests and the benchmarks.

PYTEST_DONT_REWRITE

``served`` runs ``moczarr-store serve``, ``running`` any server command,
``limited_server`` ``serve`` with a descriptor limit and its access log; each stops its
process (SIGTERM, then SIGKILL) on exit. ``http_store`` is zarr-python's store over HTTP.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served(hive: Path, *args: str, log: Path | None = None) -> Iterator[tuple[str, int]]:
    """``moczarr-store serve hive`` in a subprocess on a free loopback port: ``(url, pid)``,
    stopped (SIGTERM, then SIGKILL) on exit."""
    port = free_port()
    command = [sys.executable, "-m", "moczarr_store.cli", "serve", str(hive),
               "--port", str(port), *args]
    with running(command, f"http://127.0.0.1:{port}", log=log) as pid:
        yield f"http://127.0.0.1:{port}", pid


@contextlib.contextmanager
def running(
    command: list[str], url: str, env: dict | None = None, log: Path | None = None,
    preexec_fn: Callable[[], None] | None = None, timeout: float = 60,
) -> Iterator[int]:
    """``command`` (a server) in a subprocess (``preexec_fn`` run in the child before it
    starts), once ``url/zarr.json`` answers (within ``timeout`` seconds): its pid; stopped
    (SIGTERM, then SIGKILL) on exit."""
    sink = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, stdout=sink, stderr=sink, env=env,
                               preexec_fn=preexec_fn)  # noqa: PLW1509 - setrlimit only
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/zarr.json", timeout=5) as response:
                    response.read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {command}") from None
                time.sleep(0.1)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if log:
            sink.close()


def http_store(url: str):
    """zarr-python's store over obstore's HTTPStore (plain HTTP allowed: loopback)."""
    import obstore.store
    from zarr.storage import ObjectStore

    http = obstore.store.HTTPStore.from_url(url, client_options={"allow_http": True})
    return ObjectStore(http, read_only=True)


def nofile_limit(soft: int, hard: int):
    def apply() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return apply


@contextlib.contextmanager
def limited_server(
    hive: Path, nofile: int, log: Path, soft: int | None = None, *more: str
) -> Iterator[tuple[int, int]]:
    """``moczarr-store serve hive`` with at most ``nofile`` descriptors (the hard limit;
    the soft one ``soft``, else the same), and the arguments ``more``: ``(port, pid)``."""
    port = free_port()
    command = [sys.executable, "-m", "moczarr_store.cli", "serve", str(hive), "--port",
               str(port), "--stamp-ttl", "600", "--access-log", *more]
    with running(command, f"http://127.0.0.1:{port}", log=log,
                 preexec_fn=nofile_limit(soft or nofile, nofile)) as pid:
        yield port, pid


def run_benchmark(module: str, *args: str, timeout: float = 600) -> tuple[int, str]:
    """``python -m benchmarks.<module> args`` from the repository root, as a user runs it
    (the tests drive the harness only through its command line): exit status and output."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args], cwd=root,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout + done.stderr
