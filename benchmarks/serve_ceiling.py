"""The fastest an HTTP server on this machine answers one field, beside ``serve``.

    python -m benchmarks.serve_ceiling HIVE GROUP [FIELD] [--rounds N]

One field by zarr over obstore's ``HTTPStore`` from ``moczarr-store serve`` (defaults) and
from uvicorn answering each key from a dict of bytes read through the store beforehand (no
work per request: the ceiling of the ``serve`` row), against the read in process; timed in
turn, best of ``--rounds``, values checked equal.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np
import zarr
from tests.support.processes import free_port, http_store, running, served
from zarr.core.buffer import default_buffer_prototype

from benchmarks.common import alternate
from moczarr_store import MocHiveStore

_APP = """
import pickle, sys
import uvicorn

with open(sys.argv[1], "rb") as f:
    objects = pickle.load(f)

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = objects.get(scope["path"].lstrip("/"))
    status = 404 if body is None else 200
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body or b"")).encode())]})
    await send({"type": "http.response.body", "body": body or b""})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), http="httptools",
            log_level="warning", access_log=False)
"""


def _objects(store: MocHiveStore, group: str, field: str) -> dict[str, bytes]:
    """The metadata documents a zarr read of ``field`` asks for, and its chunks."""
    nchunks = zarr.open_array(store, path=f"{group}/{field}", mode="r").nchunks
    parts = group.split("/")
    keys = ["zarr.json", f"{group}/zarr.json", f"{group}/{field}/zarr.json",
            *(f"{'/'.join(parts[:i])}/zarr.json" for i in range(1, len(parts))),
            *(f"{group}/{field}/c/{i}" for i in range(nchunks))]

    async def all_of() -> list:
        return await asyncio.gather(*(store.get(k, default_buffer_prototype()) for k in keys))

    return {k: v.to_bytes() for k, v in zip(keys, asyncio.run(all_of()), strict=True)
            if v is not None}


def measure(hive: Path, group: str, field: str, rounds: int) -> dict[str, float]:
    """Seconds per read (best of ``rounds``): in process, ``serve``, the in-memory server."""
    import pickle
    import tempfile

    path = f"{group}/{field}"
    local = zarr.open_array(MocHiveStore(hive), path=path, mode="r")
    want = local[:]
    with tempfile.TemporaryDirectory() as tmp:
        dump, script = Path(tmp) / "objects.pickle", Path(tmp) / "app.py"
        dump.write_bytes(pickle.dumps(_objects(MocHiveStore(hive), group, field)))
        script.write_text(_APP)
        port = free_port()
        command = [sys.executable, str(script), str(dump), str(port)]
        with served(hive) as (url, _pid), running(command, f"http://127.0.0.1:{port}"):
            reads = {"serve": zarr.open_array(http_store(url), path=path, mode="r"),
                     "in-memory server": zarr.open_array(
                         http_store(f"http://127.0.0.1:{port}"), path=path, mode="r")}
            for name, array in reads.items():
                np.testing.assert_array_equal(array[:], want, err_msg=name)
            return alternate({"in process": lambda: local[:],
                              **{name: (lambda a=a: a[:]) for name, a in reads.items()}},
                             rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_ceiling",
                                     description=__doc__)
    parser.add_argument("hive", type=Path)
    parser.add_argument("group")
    parser.add_argument("field", nargs="?", default="h_mean")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    took = measure(args.hive, args.group, args.field, args.rounds)
    base = took["in process"]
    for name, seconds in took.items():
        print(f"{name}: {seconds * 1e3:,.1f} ms ({seconds / base:.2f}x in process)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
