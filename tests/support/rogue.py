"""A rogue S3 endpoint on loopback: honest about a directory of files, except where told.

PYTEST_DONT_REWRITE (imported by the test modules before pytest loads it as a plugin).

:class:`RogueS3` answers path-style S3 requests for one bucket (``GET /{bucket}/{key}``
with ``Range``, ``HEAD``, ``ListObjectsV2``) from the files below ``root``, as a real
endpoint does, unless a key (or every listing) is given one of these behaviours:

- ``endless``: every listing page says ``IsTruncated`` with a fresh continuation token
  and ``names`` fresh names, forever;
- ``huge``: the object is ``size`` bytes of JSON whitespace after the file's bytes,
  made as they are sent (never held), ranges honoured;
- ``says-small``: a ranged GET is answered ``206`` with the ``Content-Range`` asked for,
  no ``Content-Length``, and ``size`` bytes before the connection closes;
- ``says-big``: ``Content-Length`` promises the range (or the object), half of it is sent,
  then the connection closes;
- ``drip``: one byte every ``delay`` seconds.

Body bytes sent are counted per key (:attr:`sent`; the most in one response:
:attr:`largest`), listing pages in :attr:`pages`.
The server binds 127.0.0.1 on a free port, runs in daemon threads and drops a connection
idle for :data:`IDLE` seconds; :meth:`stop` ends it.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

IDLE = 20.0
PIECE = 1 << 16
RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")


class RogueS3:
    """See the module docstring. ``behaviours``: key (bucket-relative) or ``"list"`` ->
    ``(name, parameter)``."""

    def __init__(self, root: Path, bucket: str = "hive") -> None:
        self.root, self.bucket = Path(root), bucket
        self.behaviours: dict[str, tuple[str, float]] = {}
        self.sent: Counter = Counter()
        self.largest: Counter = Counter()
        self.pages = 0
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def options(self, **client) -> dict:
        """Unsigned S3 storage options for this endpoint, with bounded retries."""
        return {"endpoint": self.url, "region": "us-east-1", "skip_signature": True,
                "client_options": {"timeout": "10s", "connect_timeout": "5s", **client},
                "retry_config": {"max_retries": 0}}

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    @property
    def rogue(self) -> RogueS3:
        return self.server.owner  # type: ignore[attr-defined]

    def do_HEAD(self):  # noqa: N802
        self.answered = 0
        self._object(head=True)

    def do_GET(self):  # noqa: N802
        self.answered = 0
        parts = urlsplit(self.path)
        if parts.path.strip("/") == self.rogue.bucket:
            self._list(parse_qs(parts.query))
        else:
            self._object(head=False)

    # -- listings ------------------------------------------------------------------------

    def _list(self, query: dict) -> None:
        rogue = self.rogue
        rogue.pages += 1
        prefix = query.get("prefix", [""])[0]
        behaviour = rogue.behaviours.get("list")
        if behaviour is not None and behaviour[0] == "endless":
            page = rogue.pages
            names = "".join(f"<CommonPrefixes><Prefix>{escape(prefix)}d{page}-{i}/</Prefix>"
                            "</CommonPrefixes>" for i in range(int(behaviour[1])))
            tail = f"<IsTruncated>true</IsTruncated><NextContinuationToken>t{page}" \
                   "</NextContinuationToken>"
        else:
            found = self._children(prefix)
            names = "".join(found)
            tail = "<IsTruncated>false</IsTruncated>"
        body = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                f"<Name>{rogue.bucket}</Name><Prefix>{escape(prefix)}</Prefix>"
                f"<KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>{names}{tail}"
                "</ListBucketResult>").encode()
        self._head(200, {"Content-Type": "application/xml", "Content-Length": len(body)})
        self._write("list", body)

    def _children(self, prefix: str) -> list[str]:
        where = self.rogue.root / prefix
        if not prefix.endswith("/") or not where.is_dir():
            return []
        out = []
        for child in sorted(where.iterdir()):
            name = escape(prefix + child.name)
            if child.is_dir():
                out.append(f"<CommonPrefixes><Prefix>{name}/</Prefix></CommonPrefixes>")
            else:
                out.append(f"<Contents><Key>{name}</Key><Size>{child.stat().st_size}</Size>"
                           "<LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                           '<ETag>"e"</ETag></Contents>')
        return out

    # -- objects -------------------------------------------------------------------------

    def _object(self, head: bool) -> None:
        rogue = self.rogue
        path = unquote(urlsplit(self.path).path).lstrip("/")
        bucket, _, key = path.partition("/")
        file = rogue.root / key
        if bucket != rogue.bucket or ".." in key.split("/") or not file.is_file():
            body = b"<Error><Code>NoSuchKey</Code></Error>"
            self._head(404, {"Content-Type": "application/xml", "Content-Length": len(body)})
            self._write(key, b"" if head else body)
            return
        data = file.read_bytes()
        kind, parameter = rogue.behaviours.get(key, ("honest", 0))
        size = len(data) + (int(parameter) if kind == "huge" else 0)
        start, end, status = 0, size, 200
        asked = RANGE_RE.fullmatch(self.headers.get("Range", "").strip())
        if asked is not None and (asked[1] or asked[2]):
            if asked[1]:
                start = int(asked[1])
                end = min(size, int(asked[2]) + 1) if asked[2] else size
            else:
                start = max(0, size - int(asked[2]))
            status = 206
        headers = {"ETag": '"e"', "Last-Modified": "Thu, 01 Jan 2026 00:00:00 GMT",
                   "Accept-Ranges": "bytes"}
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        if kind == "says-small" and not head:
            headers["Connection"] = "close"
            self.close_connection = True
            self._head(status, headers)
            self._spaces(key, data[start:end], int(parameter))
            return
        headers["Content-Length"] = end - start
        self._head(status, headers)
        if head:
            return
        if kind == "says-big":
            self._write(key, _bytes(data, size, start, start + (end - start) // 2))
            self.close_connection = True
        elif kind == "drip":
            for at in range(start, end):
                if rogue._stop.wait(parameter):
                    return
                self._write(key, _bytes(data, size, at, at + 1))
        else:
            for at in range(start, end, PIECE):
                self._write(key, _bytes(data, size, at, min(end, at + PIECE)))

    def _spaces(self, key: str, first: bytes, count: int) -> None:
        self._write(key, first)
        for at in range(0, count, PIECE):
            if not self._write(key, b" " * min(PIECE, count - at)):
                return

    def _head(self, status: int, headers: dict) -> None:
        self.send_response_only(status)
        for name, value in headers.items():
            self.send_header(name, str(value))
        self.end_headers()

    def _write(self, key: str, body: bytes) -> bool:
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True
            return False
        self.answered += len(body)
        self.rogue.sent[key] += len(body)
        self.rogue.largest[key] = max(self.rogue.largest[key], self.answered)
        return True


def _bytes(data: bytes, size: int, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``data`` followed by spaces up to ``size`` bytes."""
    head = data[start:end]
    return head + b" " * max(0, min(end, size) - max(start, len(data)))

