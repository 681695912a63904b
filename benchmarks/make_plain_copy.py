"""Copy one group of a ``MocHiveStore`` view into ONE plain zarr v3 group.

Usage (dev venv with moczarr_store)::

    .venv/bin/python benchmarks/make_plain_copy.py HIVE OUTDIR \
        [--group PRODUCT/oN] [--chunking leaf|shard|inner] [--force]

For every array of the chosen virtual group (``morton``, ``cell_ids`` and every
field) the array's ``zarr.json`` is copied VERBATIM from the virtual store (same
shape, dtype, chunk grid, codecs -- a ``sharding_indexed`` codec included when
the view presents one, e.g. ``--chunking shard`` -- fill value, dimension names
and attributes), and then every chunk: the bytes the virtual store serves for
key ``{array}/c/{k}`` are written to ``OUTDIR/{array}/c/{k}`` (a chunk the store
reports missing is left absent, i.e. fill value -- exactly what a zarr reader
of the virtual store sees). The group's own attributes are copied too, and
metadata is consolidated (``zarr.consolidate_metadata``) so that
``xr.open_zarr(OUTDIR)`` works without listing.

``--chunking`` is passed to ``MocHiveStore``. The default, ``shard``, makes the
copy the layout zagg wrote: one chunk per leaf, with the leaves' own
``sharding_indexed`` codec (inner chunks, index, crc32c) -- the shard objects are
copied byte for byte. ``--chunking leaf`` copies the store's default view instead
(one plain ``bytes`` chunk per leaf), ``inner`` one chunk per inner chunk.
Without ``--group`` the first product's finest order (``{product}/o{cell_order}``)
is copied.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import sys
import time
from pathlib import Path

import zarr
from zarr.core.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore

PROTO = default_buffer_prototype()


async def _get_json(store, key: str) -> dict:
    buf = await store.get(key, PROTO)
    if buf is None:
        raise KeyError(f"{key} not found in the virtual store")
    return json.loads(buf.to_bytes())


def _chunk_keys(meta: dict) -> list[str]:
    shape = meta["shape"]
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    enc = meta["chunk_key_encoding"]
    assert enc["name"] == "default", enc
    sep = enc.get("configuration", {}).get("separator", "/")
    grid = [math.ceil(s / c) for s, c in zip(shape, chunks, strict=True)]
    keys = []

    def rec(prefix, dims):
        if not dims:
            keys.append(sep.join(["c", *map(str, prefix)]))
            return
        for i in range(dims[0]):
            rec((*prefix, i), dims[1:])

    rec((), grid)
    return keys


async def copy_group(store, group: str, out: Path, concurrency: int = 64) -> dict:
    gmeta = await _get_json(store, f"{group}/zarr.json")
    names = sorted(gmeta.get("consolidated_metadata", {}).get("metadata", {}))
    arrays = [
        n
        for n in names
        if "/" not in n and gmeta["consolidated_metadata"]["metadata"][n]["node_type"] == "array"
    ]
    if not arrays:
        raise SystemExit(f"no arrays in virtual group {group!r}")
    out.mkdir(parents=True)
    root = {k: v for k, v in gmeta.items() if k != "consolidated_metadata"}
    (out / "zarr.json").write_text(json.dumps(root, indent=1))
    sem = asyncio.Semaphore(concurrency)
    stats = {"arrays": {}, "bytes": 0, "chunks": 0, "missing": 0}

    async def one(name: str, key: str):
        async with sem:
            buf = await store.get(f"{group}/{name}/{key}", PROTO)
        if buf is None:
            stats["missing"] += 1
            return
        data = buf.to_bytes()
        path = out / name / key
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(path.write_bytes, data)
        stats["bytes"] += len(data)
        stats["chunks"] += 1

    for name in arrays:
        t0 = time.time()
        meta = await _get_json(store, f"{group}/{name}/zarr.json")
        (out / name).mkdir()
        (out / name / "zarr.json").write_text(json.dumps(meta, indent=1))
        keys = _chunk_keys(meta)
        before = stats["bytes"]
        await asyncio.gather(*(one(name, k) for k in keys))
        stats["arrays"][name] = {
            "shape": meta["shape"],
            "chunks": meta["chunk_grid"]["configuration"]["chunk_shape"],
            "codecs": [c["name"] for c in meta["codecs"]],
            "n_chunks": len(keys),
            "bytes": stats["bytes"] - before,
            "seconds": round(time.time() - t0, 1),
        }
        print(f"  {name}: {stats['arrays'][name]}", flush=True)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hive")
    ap.add_argument("outdir")
    ap.add_argument("--group", default=None, help="virtual group, e.g. atl06/o12")
    ap.add_argument("--chunking", choices=("leaf", "shard", "inner"), default="shard")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--force", action="store_true", help="delete OUTDIR first")
    args = ap.parse_args(argv)
    out = Path(args.outdir).resolve()
    if out.exists():
        if not args.force:
            sys.exit(f"{out} exists (use --force to delete it)")
        shutil.rmtree(out)
    store = MocHiveStore(args.hive, chunking=args.chunking)
    group = args.group
    if group is None:
        root = zarr.open_group(store, mode="r")
        product = sorted(root.group_keys())[0]
        orders = sorted(root[product].group_keys(), key=lambda g: -int(g[1:]))
        group = f"{product}/{orders[0]}"
    t0 = time.time()
    print(f"copy {args.hive} [{group}, chunking={store.chunking}] -> {out}", flush=True)
    stats = asyncio.run(copy_group(store, group, out, args.concurrency))
    zarr.consolidate_metadata(zarr.storage.LocalStore(str(out)))
    dt = time.time() - t0
    print(
        f"done: {len(stats['arrays'])} arrays, {stats['chunks']} chunks written, "
        f"{stats['missing']} missing (fill), {stats['bytes'] / 2**20:.1f} MiB in {dt:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
