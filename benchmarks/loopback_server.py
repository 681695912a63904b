"""moto's S3, or a static file server, on loopback in a process of its own (so the timed
client in the harness's process shares no interpreter lock with it).

    python -m benchmarks.loopback_server s3 --port P DIR=PREFIX [...] [--skip NAME ...]
    python -m benchmarks.loopback_server static --port P DIR

``s3``: the tests' keep-alive front for moto's S3 backend (``tests/support/servers.py``),
bucket ``hive`` readable unsigned; each ``DIR``'s files are put at ``s3://hive/PREFIX/...``
(the chunks of the arrays named by ``--skip`` left out: their ``NAME/c/...``), then ``s3://hive/ready/zarr.json``,
so a client knows the uploads are done when that object answers. ``static``: GET/HEAD
with byte ranges of the files below ``DIR``. Both answer ``GET /_requests`` with the
number of requests they have served (not counting those): a server-side count. Runs
until terminated.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COUNT = "/_requests"  # no bucket name starts with "_": no S3 key is shadowed


def _counting(base: type):
    class Counting(base):  # type: ignore[misc, valid-type]
        """Answers ``GET /_requests`` itself; every other request counts."""

        def handle(self, h) -> None:
            from support.servers import _read_body, _respond

            if h.path == COUNT:
                _read_body(h)
                with self._lock:
                    served = len(self.log)
                _respond(h, 200, {"Content-Type": "text/plain"}, str(served).encode())
                return
            super().handle(h)

    return Counting


def _upload(server, root: Path, prefix: str, skip: set[str]) -> int:
    """``root``'s files at ``s3://hive/{prefix}/...`` (but the chunks of the arrays named
    in ``skip``), straight into moto's backend."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from support.servers import BUCKET

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
    n = 0
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        chunk_of = {a for a, c in zip(rel.parts, rel.parts[1:], strict=False) if c == "c"}
        if path.is_file() and not skip & chunk_of:
            backend.put_object(BUCKET, f"{prefix}/{rel.as_posix()}", path.read_bytes())
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loopback_server",
                                     description=__doc__)
    parser.add_argument("kind", choices=("s3", "static"))
    parser.add_argument("trees", nargs="+", help="s3: DIR=PREFIX; static: DIR")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--skip", action="append", default=[],
                        help="s3: leave out the chunks of arrays of this name (repeatable)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "tests"))
    from support import servers

    servers._Threading.server_bind = _bind_to(args.port)  # type: ignore[method-assign]
    if args.kind == "static":
        server = _counting(servers.LoopbackServer)(servers.StaticFiles(Path(args.trees[0])),
                                                   max_requests=10_000_000)
    else:
        server = _counting(servers.S3Server)()
        server.max_requests = 10_000_000
        server.make_public()
        for tree in args.trees:
            root, _, prefix = tree.rpartition("=")
            n = _upload(server, Path(root), prefix, set(args.skip))
            print(f"uploaded {n:,} objects of {root} to s3://hive/{prefix}", flush=True)
        server.put("ready/zarr.json", b"{}")
        server.reset()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


def _bind_to(port: int):
    """``server_bind`` on ``port`` rather than the free port the tests' servers take."""
    from http.server import ThreadingHTTPServer

    def bind(self) -> None:
        self.server_address = ("127.0.0.1", port)
        ThreadingHTTPServer.server_bind(self)

    return bind


if __name__ == "__main__":
    sys.exit(main())
