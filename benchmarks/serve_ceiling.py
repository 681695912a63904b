"""The fastest an HTTP server on this machine answers one field, beside ``serve``.

    python -m benchmarks.serve_ceiling HIVE GROUP [FIELD] [--rounds N]

Three reads of the same field by zarr over obstore's ``HTTPStore``, timed in turn in one
run (best of ``--rounds``), against the same read in process (a store with default
options): ``moczarr-store serve`` with its defaults, and a server that does no work per
request: uvicorn (httptools) answering each key from a dict of bytes read through the
store beforehand. The second is the ceiling of the ``serve`` row of ``benchmarks.run
--targets``: what is left is the client's and the loopback's cost. Values are checked
equal to the in-process read.
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
    proto = default_buffer_prototype()

    async def get(key: str) -> bytes | None:
        got = await store.get(key, proto)
        return None if got is None else got.to_bytes()

    array = zarr.open_array(store, path=f"{group}/{field}", mode="r")
    keys = ["zarr.json", f"{group}/zarr.json", f"{group}/{field}/zarr.json"]
    parts = group.split("/")
    keys += [f"{'/'.join(parts[:i])}/zarr.json" for i in range(1, len(parts))]
    keys += [f"{group}/{field}/c/{i}" for i in range(array.nchunks)]

    async def all_of() -> dict[str, bytes]:
        got = await asyncio.gather(*(get(k) for k in keys))
        return {k: v for k, v in zip(keys, got, strict=True) if v is not None}

    return asyncio.run(all_of())


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
