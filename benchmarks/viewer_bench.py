"""The viewer's first picture on a served hive, in headless Chromium.

    python -m benchmarks.viewer_bench --hive PATH [--query "product=atl06&field=count"]
        [--zoom 8] [--out DIR] [-- SERVE_ARGS...]

Starts ``moczarr-store serve PATH SERVE_ARGS`` (a subprocess on loopback), opens the page
with ``clients/js/browse.mjs`` (Debian's Chromium through puppeteer-core, ``npm ci`` in
``clients/js``) and prints one JSON line: the time from the page's start to its first
picture and the requests it had sent by then (the page's own count), the requests until
the view was complete, the most in flight (the browser's count), the order shown, the
cells drawn, the Range requests and the body bytes received (the page's count); with
``--zoom`` the same after zooming in about a cell with a value, and the time that took.
The screenshots go to ``--out``. Times are printed, never asserted.
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


def browse(url: str, out: Path, zoom: float | None) -> dict:
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if chromium is None:
        sys.exit("Chromium is not installed (apt-get install chromium)")
    args = [str(out / "page.png"), *([str(zoom), str(out / "zoomed.png")] if zoom else [])]
    t0 = time.perf_counter()
    done = subprocess.run(["node", str(JS / "browse.mjs"), chromium, url, *args], cwd=JS,
                          capture_output=True, text=True, timeout=900, check=False)
    if done.returncode:
        sys.exit(done.stderr[-4000:])
    report = json.loads(done.stdout)
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    return report


def summary(report: dict) -> dict:
    def one(state: dict, since: dict | None = None) -> dict:
        """A view: its order and cells; when it was complete, how long its reading took,
        and the requests, Range requests and bytes the page sent for it (since ``since``)."""
        done = state.get("complete") or {}
        out = {"status": state["status"], "order": state["order"], "drawn": state["drawn"],
               "blocks_read": len(state["read"] or []), "block_rows": state.get("unit"),
               "complete_ms": done.get("ms"), "view_ms": done.get("view_ms")}
        for k in ("requests", "ranged", "bytes"):
            out[k] = done.get(k, 0) - (since or {}).get(k, 0)
        return out

    first = report.get("before") or report["state"]
    out = {
        "first_picture_ms": first["first"]["ms"] if first["first"] else None,
        "first_picture_requests": first["first"]["requests"] if first["first"] else None,
        "first_picture_bytes": first["first"].get("bytes") if first["first"] else None,
        "view": one(first),
        "max_in_flight": report["max_in_flight"],
        "errors": len(report["errors"]), "failed": len(report["failed"]),
        "wall_s": report["wall_s"],
    }
    if report.get("before"):
        out["zoomed"] = one(report["state"], first.get("complete"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hive", type=Path, required=True)
    ap.add_argument("--query", default="", help="the page's query, e.g. product=atl06&field=count")
    ap.add_argument("--zoom", type=float, default=None)
    ap.add_argument("--out", type=Path, default=Path("viewer-bench"))
    ap.add_argument("serve", nargs="*", help="arguments for moczarr-store serve (after --)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with served(args.hive, *args.serve) as (url, _):
        report = browse(f"{url}/?{args.query}", args.out, args.zoom)
    print(json.dumps(summary(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
