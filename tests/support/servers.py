"""Loopback servers for the remote tests: S3 (moto), static HTTP, and a fault proxy.

PYTEST_DONT_REWRITE (imported by the test modules before pytest loads it as a plugin).

Everything binds 127.0.0.1 on a free port, runs in daemon threads of the test process
and is bounded: a server answers at most ``max_requests`` requests (then 503s), an
idle keep-alive connection is dropped after ``IDLE_TIMEOUT`` seconds, an injected
delay is at most ``MAX_DELAY`` seconds, and every fixture stops its server.

- :class:`S3Server`: moto's S3 backend (``moto.server.create_backend_app("s3")``)
  behind :class:`LoopbackServer`. moto's own ``ThreadedMotoServer`` (werkzeug's dev
  server) closes the connection after every response and re-scans moto's service
  modules for every request (~5 ms a request here); this keep-alive front is ~2 ms.
- :class:`StaticFiles`: a plain static file server (GET/HEAD with ranges; it cannot
  list: WebDAV ``PROPFIND`` gets ``405``, as from most static servers).
- :class:`HttpForward`: forwards to another server, so a :class:`LoopbackServer` with
  faults in front of the S3 server is a fault-injecting proxy.

Every :class:`LoopbackServer` logs each request's method and raw target, and counts
the requests in flight, each from its arrival until its response is sent (most seen at
once: ``max_in_flight``).
"""

from __future__ import annotations

import asyncio
import http.client
import io
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, unquote_to_bytes, urlsplit

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUCKET = "hive"
PREFIX = "pre"  # fixtures are uploaded to s3://hive/pre/{fixture}/...
REGION = "us-east-1"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing"}
IDLE_TIMEOUT = 20.0
MAX_DELAY = 30.0
MAX_BODY = 64 << 20
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server",
     "proxy-connection", "te", "trailer", "upgrade"}
)


# -- the server --------------------------------------------------------------------------


@dataclass
class Fault:
    """One injected fault, applied to the next ``times`` matching requests.

    ``kind``: ``"status"`` (answer ``status`` without asking upstream), ``"reset"``
    (close the connection with a TCP RST, no answer), ``"slow"`` (wait ``delay``
    seconds, then answer normally), ``"truncate"`` (the real headers, ``Content-Length``
    included, then half the body and a close), ``"short"`` (half the body with a
    matching ``Content-Length``: a server that lies), ``"whole"`` (a ranged GET answered
    ``200`` with the whole object: a server that ignores ``Range``), ``"later"`` (a
    ranged GET answered ``206`` with the range one byte later, its ``Content-Range``
    saying so).
    """

    kind: str
    match: str = ""  # substring of the raw request target
    times: int = 1
    status: int = 503
    delay: float = 2.0
    methods: tuple[str, ...] = ("GET",)
    per_target: bool = False  # only the first request for each target
    fired: int = 0
    seen: set = field(default_factory=set)


@dataclass
class LogEntry:
    method: str
    target: str  # the raw request target, as received (percent-encoded, with query)
    fault: str | None = None

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def object_path(self) -> str:
        """The decoded object path a request touches (S3 listings: bucket + prefix)."""
        parts = urlsplit(self.target)
        path = unquote(parts.path, errors="surrogateescape")
        prefix = parse_qs(parts.query).get("prefix")
        if prefix is not None:
            path = path.rstrip("/") + "/" + prefix[0]
        return path


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    wbufsize = 1 << 16  # headers and body leave in one segment (no Nagle/delayed-ACK stall)

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_expect_100(self):
        ok = super().handle_expect_100()
        self.wfile.flush()  # buffered writer: the interim 100 must leave now
        return ok

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def _dispatch(self):
        self.server.owner.handle(self)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PROPFIND = do_OPTIONS = _dispatch


class _Threading(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the socketserver default (5) drops bursts of connects
    allow_reuse_address = True


class LoopbackServer:
    """A keep-alive HTTP/1.1 server on 127.0.0.1 in front of an ``upstream`` callable.

    ``upstream(method, target, headers, body) -> (status, headers, body)``.
    """

    def __init__(self, upstream, *, max_requests: int = 200_000) -> None:
        self.upstream = upstream
        self.max_requests = max_requests
        self.faults: list[Fault] = []
        self.log: list[LogEntry] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Threading(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
        close = getattr(self.upstream, "close", None)
        if close is not None:
            close()

    def reset(self) -> None:
        """Forget faults, the log and the in-flight maximum."""
        with self._lock:
            self.faults.clear()
            self.log.clear()
            self.max_in_flight = self.in_flight

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def _pick(self, method: str, target: str) -> Fault | None:
        """The first live fault matching the request (called with the lock held)."""
        for fault in self.faults:
            if fault.fired < fault.times and method in fault.methods and fault.match in target:
                if fault.per_target:
                    if target in fault.seen:
                        continue
                    fault.seen.add(target)
                fault.fired += 1
                return fault
        return None

    # one request -------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        body = _read_body(h)
        with self._lock:
            n = len(self.log)
            fault = None if n >= self.max_requests else self._pick(h.command, h.path)
            entry = LogEntry(h.command, h.path, fault.kind if fault else None)
            self.log.append(entry)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        answered = False

        def done() -> None:
            """The request leaves the count (once) just before its response is sent: a
            client may send its next request as soon as it has one, before this thread would
            get to count it out, which would count the two as overlapping."""
            nonlocal answered
            if not answered:
                answered = True
                with self._lock:
                    self.in_flight -= 1

        try:
            if n >= self.max_requests:
                _respond(h, 503, {}, b"request budget of this test server exhausted", close=True,
                         sent=done)
                return
            if fault is not None and fault.kind == "status":
                payload = f"<Error><Code>Injected</Code><Message>{fault.status}</Message></Error>"
                _respond(h, fault.status, {"Content-Type": "application/xml"}, payload.encode(),
                         sent=done)
                return
            if fault is not None and fault.kind == "reset":
                done()
                _reset(h)
                return
            if fault is not None and fault.kind == "slow":
                self._stopping.wait(min(fault.delay, MAX_DELAY))
            sent = dict(h.headers)
            if fault is not None and fault.kind in ("whole", "later"):
                asked = sent.pop("Range", None) or sent.pop("range", None)
                if fault.kind == "later" and asked is not None:
                    sent["Range"] = _later(asked)
            status, headers, payload = self.upstream(h.command, h.path, sent, body)
            if fault is not None and fault.kind in ("truncate", "short") and len(payload) > 1:
                cut = payload[: len(payload) // 2]
                if fault.kind == "short":
                    _respond(h, status, headers, cut, close=True, sent=done)
                else:
                    _respond(h, status, headers, cut, close=True, length=len(payload),
                             sent=done)
                return
            _respond(h, status, headers, payload, head=h.command == "HEAD", sent=done)
        except (ConnectionError, TimeoutError, OSError):
            h.close_connection = True
        finally:
            done()


def _later(spec: str) -> str:
    """A ``Range`` header's first range moved one byte on (suffix ranges as they are)."""
    unit, _, first = spec.partition("=")
    start, _, end = first.split(",")[0].strip().partition("-")
    if not start:
        return spec
    return f"{unit}={int(start) + 1}-{int(end) + 1 if end else ''}"


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks, total = [], 0
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise ValueError("request body too large")
            chunks.append(h.rfile.read(size))
            h.rfile.readline()
    length = int(h.headers.get("Content-Length") or 0)
    if length > MAX_BODY:
        raise ValueError("request body too large")
    return h.rfile.read(length) if length else b""


def _respond(h, status, headers, payload, *, close=False, length=None, head=False,
             sent: Callable[[], None] = lambda: None) -> None:
    """Answer ``h``; ``sent()`` runs just before the response's first byte is sent."""
    h.send_response_only(status, http.client.responses.get(status, ""))
    for key, value in headers.items():
        if key.lower() not in HOP_BY_HOP:
            h.send_header(key, value)
    if head:
        length = headers.get("Content-Length", headers.get("content-length", len(payload)))
    h.send_header("Content-Length", str(len(payload) if length is None else length))
    if close:
        h.send_header("Connection", "close")
        h.close_connection = True
    sent()
    h.end_headers()
    if not head:
        h.wfile.write(payload)
    h.wfile.flush()


def _reset(h: BaseHTTPRequestHandler) -> None:
    """Drop the connection with a TCP RST (SO_LINGER 0), answering nothing."""
    h.close_connection = True
    try:
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# -- upstreams -----------------------------------------------------------------------------


class WsgiApp:
    """Call a WSGI application in-process."""

    def __init__(self, app, port_of) -> None:
        self.app = app
        self._port_of = port_of

    def __call__(self, method, target, headers, body):
        parts = urlsplit(target)
        environ = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(parts.path).decode("latin-1"),
            "QUERY_STRING": parts.query,
            "RAW_URI": target,
            "REQUEST_URI": target,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": str(self._port_of()),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(body)),
        }
        for key, value in headers.items():
            name = key.upper().replace("-", "_")
            if name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                if name == "CONTENT_TYPE":
                    environ[name] = value
                continue
            environ["HTTP_" + name] = value
        if headers.get("Transfer-Encoding", "").lower() == "chunked":
            environ.pop("HTTP_TRANSFER_ENCODING", None)
        started: list = []

        def start_response(status, response_headers, exc_info=None):
            started[:] = [status, response_headers]

        result = self.app(environ, start_response)
        try:
            payload = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, response_headers = started
        return int(status.split()[0]), dict(response_headers), payload


class StaticFiles:
    """GET/HEAD of files below ``root``, with single byte ranges; nothing else."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def __call__(self, method, target, headers, body):
        if method not in ("GET", "HEAD"):
            return 405, {"Allow": "GET, HEAD"}, b"method not allowed"
        rel = unquote(urlsplit(target).path, errors="surrogateescape").lstrip("/")
        try:
            path = (self.root / rel).resolve()
            inside = path.is_relative_to(self.root)
            data = path.read_bytes() if inside and path.is_file() else None
        except (OSError, ValueError):
            data = None
        if data is None:
            return 404, {"Content-Type": "text/plain"}, b"not found"
        size = len(data)
        spec = headers.get("Range") or headers.get("range")
        if not spec:
            return 200, {"Accept-Ranges": "bytes"}, data
        first, _, last = spec.removeprefix("bytes=").partition("-")
        if not first:
            start, end = max(0, size - int(last)), size
        else:
            start = int(first)
            end = size if not last else min(size, int(last) + 1)
        if start >= size:
            return 416, {"Content-Range": f"bytes */{size}"}, b""
        return 206, {"Content-Range": f"bytes {start}-{end - 1}/{size}"}, data[start:end]


class HttpForward:
    """Forward to ``host:port`` over a pool of keep-alive connections (closed at stop)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __call__(self, method, target, headers, body):
        headers = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        for attempt in range(2):
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
            try:
                conn.request(method, target, body=body, headers=headers)
                response = conn.getresponse()
                payload = response.read()
            except (ConnectionError, http.client.HTTPException, OSError):
                conn.close()
                if attempt:
                    raise
                continue
            with self._lock:
                self._idle.append(conn)
            return response.status, dict(response.getheaders()), payload
        raise AssertionError("unreachable")


# -- S3 -------------------------------------------------------------------------------------


class S3Server(LoopbackServer):
    """moto's S3 backend on a loopback keep-alive server, with a ``hive`` bucket."""

    def __init__(self) -> None:
        from moto.server import create_backend_app

        super().__init__(WsgiApp(create_backend_app("s3"), lambda: self.port))
        self.client = self.boto3_client()
        self.client.create_bucket(Bucket=BUCKET)

    def boto3_client(self):
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["access_key_id"],
            aws_secret_access_key=CREDENTIALS["secret_access_key"],
            config=Config(
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
                retries={"max_attempts": 1},
            ),
        )

    def upload_tree(self, root: Path, prefix: str) -> int:
        """Put every file below ``root`` at ``s3://hive/{prefix}/...``.

        Straight into moto's S3 backend (this process's): ~0.2 s for the ~1,000 fixture
        files, against ~5 s through boto3. Single objects go through the S3 API
        (:meth:`put`, :meth:`delete`).
        """
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        files = [p for p in Path(root).rglob("*") if p.is_file()]
        for path in files:
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            backend.put_object(BUCKET, key, path.read_bytes())
        return len(files)

    def put(self, key: str, body: bytes, bucket: str = BUCKET) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=body)

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=BUCKET, Key=key)

    def keys(self, prefix: str) -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=prefix, PaginationConfig={"MaxItems": 100_000}
        )
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def make_public(self) -> None:
        """A bucket policy allowing anonymous GetObject/ListBucket (moto enforces it)."""
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"],
                 "Resource": [f"arn:aws:s3:::{BUCKET}/*"]},
                {"Effect": "Allow", "Principal": "*", "Action": ["s3:ListBucket"],
                 "Resource": [f"arn:aws:s3:::{BUCKET}"]},
            ],
        }
        self.client.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps(policy))


def s3_url(path: str) -> str:
    return f"s3://{BUCKET}/{PREFIX}/{path}" if path else f"s3://{BUCKET}/{PREFIX}"


# Bounded retries for every test store: obstore's default is 10 retries within 3 minutes.
RETRY = {
    "max_retries": 2,
    "backoff": {"init_backoff": timedelta(milliseconds=10),
                "max_backoff": timedelta(milliseconds=100), "base": 2},
    "retry_timeout": timedelta(seconds=10),
}
CLIENT = {"allow_http": True, "timeout": "10s", "connect_timeout": "5s"}


def _options(options: dict, extra: dict) -> dict:
    client = {**CLIENT, **extra.pop("client_options", {})}
    return {**options, "client_options": client, "retry_config": RETRY, **extra}


def s3_options(endpoint: str, *, anonymous: bool = False, **extra) -> dict:
    """``MocHiveStore`` storage options for the loopback S3 server at ``endpoint``."""
    base = {"endpoint": endpoint, "region": REGION}
    base.update({"skip_signature": True} if anonymous else CREDENTIALS)
    return _options(base, extra)


def http_options(**extra) -> dict:
    return _options({}, extra)


# -- pytest fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server():
    """The loopback S3 server with every fixture uploaded below ``s3://hive/pre/``."""
    server = S3Server()
    try:
        started = time.monotonic()
        server.upload_tree(FIXTURES, PREFIX)
        server.make_public()
        server.upload_seconds = time.monotonic() - started
        server.reset()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http_server():
    """A static HTTP server whose root is ``fixtures/``."""
    server = LoopbackServer(StaticFiles(FIXTURES))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fault_proxy(s3_server):
    """A fault-injecting proxy in front of the S3 server (fresh for each test)."""
    proxy = LoopbackServer(HttpForward("127.0.0.1", s3_server.port))
    try:
        yield proxy
    finally:
        proxy.stop()


# -- an S3 server in a child process --------------------------------------------------------


class S3Subprocess:
    """The same S3 server (moto, fixtures uploaded) in a child process, for read-only load.

    In-process, the server's Python shares the GIL with the client (~2.2 ms a GET here);
    in a child it runs beside it (~1.4 ms). The child exits when its stdin closes or after
    ``lifetime`` seconds, and then reports its request count and most requests in flight.
    """

    def __init__(self, lifetime: float = 300.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "s3", str(FIXTURES), PREFIX, str(lifetime)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        ready = threading.Event()
        line: list[str] = []

        def read():
            line.append(self.proc.stdout.readline())
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or not line[0].strip().isdigit():
            self.proc.kill()
            raise RuntimeError(f"S3 subprocess did not start: {line!r}")
        self.port = int(line[0])
        self.url = f"http://127.0.0.1:{self.port}"
        self.report: dict = {}

    def stop(self) -> dict:
        """Stop the child; its report: ``{"requests": n, "max_in_flight": m}``."""
        if self.proc.poll() is None:
            try:
                out, _ = self.proc.communicate(input="", timeout=15)
                self.report = json.loads(out.strip().splitlines()[-1])
            except (subprocess.TimeoutExpired, ValueError, IndexError):
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.report


def _child_s3(root: str, prefix: str, lifetime: str) -> None:
    server = S3Server()
    server.upload_tree(Path(root), prefix)
    server.reset()
    print(server.port, flush=True)
    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    closed.wait(float(lifetime))
    report = {"requests": len(server.log), "max_in_flight": server.max_in_flight}
    server.stop()
    print(json.dumps(report), flush=True)


# -- helpers for comparing remote reads with local ones ----------------------------------------


def array_groups(store) -> list[str]:
    """Every group of the virtual hierarchy that holds arrays (``product/o{order}``...)."""
    import zarr

    root = zarr.open_group(store, mode="r")
    paths = {p.rsplit("/", 1)[0] for p, node in root.members(max_depth=None)
             if isinstance(node, zarr.Array)}
    return sorted(paths)


def window_labels(store) -> list[str]:
    """Window labels of every windowed product level of ``store``."""
    hive = asyncio.run(store.hive())
    return sorted({w for p in hive.products for level in p.levels for w in level.windows})


def assert_same_read(remote, local, group: str) -> None:
    """``xr.open_zarr`` over ``remote`` loads exactly what it loads over ``local``."""
    import numpy as np
    import xarray as xr

    got = xr.open_zarr(remote, group=group).load()
    want = xr.open_zarr(local, group=group).load()
    assert list(got.data_vars) == list(want.data_vars), group
    for name in [*want.data_vars, "morton", "cell_ids"]:
        a, b = got[name], want[name]
        assert a.dims == b.dims and a.dtype == b.dtype, (group, name)
        if a.dtype == object:
            assert all(bytes(x) == bytes(y) for x, y in
                       zip(a.values.ravel(), b.values.ravel(), strict=True)), (group, name)
        else:
            np.testing.assert_array_equal(a.values, b.values, err_msg=f"{group}/{name}")
    assert got.attrs == want.attrs, group


if __name__ == "__main__":
    if sys.argv[1:2] == ["s3"]:
        _child_s3(*sys.argv[2:5])
