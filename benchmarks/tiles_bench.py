"""Map tiles from ``moczarr-store serve --tiles``: the first tile, and tiles after it.

    python -m benchmarks.tiles_bench --hive PATH [--dataset atl06] [--field h_mean]
        [--range MIN,MAX] [--zooms 0,3,6,9] [-- SERVE_ARGS...]

Two servers in turn (subprocesses on loopback, Python 3.12 with the ``tiles`` extra):

- **at start**: the first zoom's tile asked as soon as the server answers, while the
  renderer's warm-up (numba compiling datashader's kernels, per value type) still runs:
  the longest a user's first tile waits;
- **warm**: once the server logs that the warm-up is done (its duration is printed),
  the dataset's TileJSON, then at each zoom of ``--zooms`` the tile over the first cell
  holding a value at the finest order: the first time (its order's metadata and cell ids
  read once, then the chunks of its cells) and again (the store's caches warm).

Each tile is checked to be a PNG holding drawn pixels. Prints one JSON line of seconds.
Times are printed, never asserted; on a shared machine they vary.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import urllib.request
from pathlib import Path

from tests.support.processes import served

READY = "tiles: the renderer is ready"


def get(url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=900) as answer:
        body = answer.read()
    return time.perf_counter() - start, body


def drawn(png: bytes) -> int:
    """Pixels a tile draws (not transparent)."""
    import numpy as np
    from PIL import Image

    return int((np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))[..., 3] > 0).sum())


def a_valued_cell(args: argparse.Namespace) -> tuple[float, float]:
    """The centre (lon, lat) of the first cell of the finest order holding a value of the
    field (its last window). Cost: the field's chunks up to that cell."""
    import numpy as np
    import zarr

    from moczarr_store import MocHiveStore

    store = MocHiveStore(args.hive, centres=True)
    product = args.dataset.split(".")[0]
    orders = [k for k in zarr.open_group(store, path=product, mode="r").group_keys()
              if k[:1] == "o" and k[1:].isdigit()]
    level = zarr.open_group(store, path=f"{product}/{max(orders, key=lambda k: int(k[1:]))}",
                            mode="r")
    field = level[args.field]
    step = field.chunks[-1]
    for start in range(0, field.shape[-1], step):
        values = np.asarray(field[..., start:start + step]).reshape(-1, min(
            step, field.shape[-1] - start))[-1]
        if (valued := np.flatnonzero(np.isfinite(values))).size:
            row = start + int(valued[0])
            return float(level["lon"][row]), float(level["lat"][row])
    sys.exit(f"{args.field} holds no value")


def tile_urls(base: str, args: argparse.Namespace, at: tuple[float, float]) -> list:
    """The TileJSON's URL, and the tile over ``at`` (lon, lat) at each zoom."""
    import morecantile

    query = f"variables={args.field}&colorscalerange={args.range}"
    tms = morecantile.tms.get("WebMercatorQuad")
    urls = [(None, f"{base}/.tiles/datasets/{args.dataset}/tiles/WebMercatorQuad/"
                   f"tilejson.json?{query}")]
    for z in args.zooms:
        tile = tms.tile(*at, z)
        urls.append((z, f"{base}/.tiles/datasets/{args.dataset}/tiles/WebMercatorQuad/"
                        f"{z}/{tile.y}/{tile.x}?{query}"))
    return urls


def wait_ready(log: Path, timeout: float = 900) -> float:
    """Seconds the server's warm-up took, from its log line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if READY in line:
                return float(line.rsplit("(", 1)[1].split(" s)")[0])
        time.sleep(0.5)
    sys.exit(f"the server's warm-up did not end in {timeout:.0f} s (log: {log})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hive", type=Path, required=True)
    ap.add_argument("--dataset", default="atl06", help="a product, or PRODUCT.oN")
    ap.add_argument("--field", default="h_mean")
    ap.add_argument("--range", default="0,3000", help="the colour scale, MIN,MAX")
    ap.add_argument("--zooms", default="0,3,6,9",
                    type=lambda text: [int(z) for z in text.split(",")])
    ap.add_argument("--log", type=Path, default=Path("tiles-bench.log"))
    ap.add_argument("serve", nargs="*", help="arguments for moczarr-store serve (after --)")
    args = ap.parse_args(argv)
    result: dict = {"hive": str(args.hive), "dataset": args.dataset, "field": args.field}
    at = a_valued_cell(args)
    result["cell_lon_lat"] = [round(at[0], 4), round(at[1], 4)]
    with served(args.hive, "--tiles", *args.serve) as (base, _):
        (_, tilejson), (z, url), *_ = tile_urls(base, args, at)
        seconds, png = get(url)
        assert drawn(png) > 0, f"an empty tile ({url})"
        result["at_start_first_tile_s"] = round(seconds, 3)
    with served(args.hive, "--tiles", *args.serve, log=args.log) as (base, _):
        result["warm_up_s"] = wait_ready(args.log)
        (_, tilejson), *urls = tile_urls(base, args, at)
        result["tilejson_s"] = round(get(tilejson)[0], 3)
        rows = []
        for z, url in urls:
            first, png = get(url)
            again, same = get(url)
            assert same == png and drawn(png) > 0, f"zoom {z}: an empty tile ({url})"
            rows.append({"z": z, "first_s": round(first, 3), "again_s": round(again, 3),
                         "drawn_px": drawn(png)})
            print(json.dumps(rows[-1]), file=sys.stderr)
        result["tiles"] = rows
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
