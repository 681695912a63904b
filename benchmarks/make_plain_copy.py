"""Copy one group of a ``MocHiveStore`` view into ONE plain zarr v3 group: the anchor.

    python benchmarks/make_plain_copy.py HIVE OUTDIR [--group PRODUCT/oN]
        [--chunking leaf|shard|inner] [--force]

Every array of the group (``morton``, ``cell_ids`` and every field): its ``zarr.json``
copied VERBATIM from the store (shape, dtype, chunk grid, codecs, a ``sharding_indexed``
codec included, fill value, dimension names, attributes), then every chunk the store
serves, byte for byte (a chunk it reports missing is left absent: fill value, as a reader
of the store sees it). The group's attributes are copied and its metadata consolidated,
so ``xr.open_zarr(OUTDIR)`` needs no listing. ``--chunking`` is passed to the store: the
default, ``shard``, copies the layout zagg wrote (one chunk per leaf, the leaves' own
codecs); ``leaf`` the store's default view. Without ``--group``: the first product's
finest order.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
    encoding = meta["chunk_key_encoding"]
    assert encoding["name"] == "default", encoding
    sep = encoding.get("configuration", {}).get("separator", "/")
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    grid = [range(math.ceil(s / c)) for s, c in zip(meta["shape"], chunks, strict=True)]
    return [sep.join(["c", *map(str, at)]) for at in itertools.product(*grid)]


async def copy_group(store, group: str, out: Path, concurrency: int = 64,
                     quiet: bool = False) -> dict:
    """Every array of ``group`` of ``store`` written under ``out`` (created): the counts of
    chunks, missing chunks and bytes, and per array its shape, codecs and chunks."""
    listed = await _get_json(store, f"{group}/zarr.json")
    members = listed.pop("consolidated_metadata", {}).get("metadata", {})
    arrays = sorted(n for n, m in members.items() if "/" not in n and m["node_type"] == "array")
    if not arrays:
        raise SystemExit(f"no arrays in virtual group {group!r}")
    out.mkdir(parents=True)
    (out / "zarr.json").write_text(json.dumps(listed, indent=1))
    cap = asyncio.Semaphore(concurrency)
    stats: dict = {"arrays": {}, "bytes": 0, "chunks": 0, "missing": 0}

    async def one(name: str, key: str) -> None:
        async with cap:
            buf = await store.get(f"{group}/{name}/{key}", PROTO)
        if buf is None:
            stats["missing"] += 1
            return
        data = buf.to_bytes()
        (out / name / key).parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread((out / name / key).write_bytes, data)
        stats["bytes"] += len(data)
        stats["chunks"] += 1

    for name in arrays:
        meta = await _get_json(store, f"{group}/{name}/zarr.json")
        (out / name).mkdir()
        (out / name / "zarr.json").write_text(json.dumps(meta, indent=1))
        keys, before = _chunk_keys(meta), stats["bytes"]
        await asyncio.gather(*(one(name, k) for k in keys))
        stats["arrays"][name] = {
            "shape": meta["shape"], "chunks": meta["chunk_grid"]["configuration"]["chunk_shape"],
            "codecs": [c["name"] for c in meta["codecs"]], "n_chunks": len(keys),
            "bytes": stats["bytes"] - before}
        if not quiet:
            print(f"  {name}: {stats['arrays'][name]}", flush=True)
    return stats


def main(argv: list[str] | None = None) -> int:
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
    if (group := args.group) is None:
        root = zarr.open_group(store, mode="r")
        product = sorted(root.group_keys())[0]
        group = f"{product}/{max(root[product].group_keys(), key=lambda g: int(g[1:]))}"
    start = time.time()
    print(f"copy {args.hive} [{group}, chunking={store.chunking}] -> {out}", flush=True)
    stats = asyncio.run(copy_group(store, group, out, args.concurrency))
    zarr.consolidate_metadata(zarr.storage.LocalStore(str(out)))
    print(f"done: {len(stats['arrays'])} arrays, {stats['chunks']} chunks written, "
          f"{stats['missing']} missing (fill), {stats['bytes'] / 2**20:.1f} MiB in "
          f"{time.time() - start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
