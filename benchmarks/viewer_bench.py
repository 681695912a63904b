"""The viewer on a served hive, in headless Chromium: its first picture, and each zoom.

    python -m benchmarks.viewer_bench --hive PATH [--query "product=atl06&field=count"]
        [--zoom 2 --steps 8] [--out DIR] [-- SERVE_ARGS...]

Starts ``moczarr-store serve PATH SERVE_ARGS`` (a subprocess on loopback), opens the page
with ``clients/js/viewer_steps.mjs`` (Debian's Chromium through puppeteer-core, ``npm ci``
in ``clients/js``) and prints one JSON line: the time from the page's start to its first
picture, the requests and chunk bytes sent by then, and to its first view drawn whole; for
the first view and after each of ``--steps`` zooms by ``--zoom`` (about the first cell
with a value) the order shown, the cells drawn, how long the view took to read and draw
whole, and the requests, Range requests and bytes it sent (the page's counts); the most
requests in flight. The screenshots go to ``--out``. Times are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.processes import served

JS = Path(__file__).resolve().parent.parent / "clients" / "js"


def browse(url: str, out: Path, steps: list[dict]) -> dict:
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if chromium is None:
        sys.exit("Chromium is not installed (apt-get install chromium)")
    t0 = time.perf_counter()
    done = subprocess.run(
        ["node", str(JS / "viewer_steps.mjs"), chromium, url, json.dumps(steps),
         str(out / "view")], cwd=JS, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode:
        sys.exit(done.stderr[-4000:])
    report = json.loads(done.stdout)
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    return report


def summary(report: dict) -> dict:
    def one(state: dict, since: dict | None) -> dict:
        """A view: its order and cells; how long its reading and drawing took, and the
        requests, Range requests and bytes the page sent for it (since ``since``)."""
        done = state.get("complete") or {}
        out = {"order": state["order"], "drawn": state["drawn"], "view_ms": done.get("view_ms"),
               "status": state["status"]}
        for k in ("requests", "ranged", "bytes"):
            out[k] = done.get(k, 0) - (since or {}).get(k, 0)
        return out

    views = report["steps"]
    first = views[0]["first"] or {}
    return {
        "first_picture_ms": first.get("ms"), "first_picture_requests": first.get("requests"),
        "first_picture_bytes": first.get("bytes"),
        "first_view_complete_ms": (views[0].get("complete") or {}).get("ms"),
        "views": [one(v, views[i - 1].get("complete") if i else None)
                  for i, v in enumerate(views)],
        "max_in_flight": max(v["stats"]["maxInFlight"] for v in views),
        "errors": report["errors"], "wall_s": report["wall_s"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hive", type=Path, required=True)
    ap.add_argument("--query", default="", help="the page's query, e.g. product=atl06&field=count")
    ap.add_argument("--zoom", type=float, default=2.0, help="zoom factor of each step")
    ap.add_argument("--steps", type=int, default=0, help="zoom steps after the first view")
    ap.add_argument("--out", type=Path, default=Path("viewer-bench"))
    ap.add_argument("serve", nargs="*", help="arguments for moczarr-store serve (after --)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with served(args.hive, *args.serve) as (url, _):
        report = browse(f"{url}/?{args.query}", args.out, [{"zoom": args.zoom}] * args.steps)
    print(json.dumps(summary(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
