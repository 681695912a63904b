"""The viewer page (``GET /``) in headless Chromium, its HEALPix geometry and its
vendored modules.

The page reads through the server with zarrita; the tests compare what it shows (cells
drawn, the legend's range, the order) with the in-process store's values.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import warnings
from asyncio import run as sync
from urllib.parse import urlsplit

import numpy as np
import pytest
import zarr
from PIL import Image
from support.hives import grown_after_open
from support.jsclients import JS, chromium, node, run_node
from support.serving import FIXTURES, Served, array_paths
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore
from moczarr_store.serve import create_app
from moczarr_store.serve.app import STATIC_DIR

VENDOR = STATIC_DIR / "vendor"
NOT_FOUND = "console: Failed to load resource: the server responded with a status of 404"


def test_vendored_modules_are_the_locked_packages():
    """Every vendored file is listed with its hash, and its package's version is the one
    ``clients/js/package-lock.json`` pins; the page's import map names vendored files."""
    manifest = json.loads((VENDOR / "VENDORED.json").read_text())
    lock = json.loads((JS / "package-lock.json").read_text())["packages"]
    listed = set()
    for package, entry in manifest.items():
        assert entry["version"] == lock[f"node_modules/{package}"]["version"], package
        for name, digest in entry["files"].items():
            data = (VENDOR / package / name).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest, (package, name)
            listed.add(f"{package}/{name}")
    on_disk = {p.relative_to(VENDOR).as_posix() for p in VENDOR.rglob("*") if p.is_file()}
    assert on_disk - {"VENDORED.json"} == listed
    page = (STATIC_DIR / "index.html").read_text()
    imports = json.loads(re.search(r'<script type="importmap">(.*?)</script>', page, re.S)[1])
    for target in imports["imports"].values():
        assert (STATIC_DIR / target.removeprefix("./.static/")).is_file(), target


def test_vendored_modules_equal_the_installed_packages():
    """The vendored files are byte for byte the ones ``npm ci`` installs."""
    run_node("vendor.mjs", "--check")


def test_healpix_geometry_matches_cdshealpix():
    """Centres and corners of NESTED cells (the page's healpix.js) equal cdshealpix's."""
    from cdshealpix import nested

    rng = np.random.default_rng(7)
    for order in (0, 1, 4, 12, 29):
        ids = np.unique(rng.integers(0, 12 * 4**order, 200, dtype=np.uint64))
        got = run_node("healpix_check.mjs", str(order), *map(str, ids))
        centres, corners = np.array(got["centres"]), np.array(got["corners"])
        lon, lat = nested.healpix_to_lonlat(ids, order)
        vlon, vlat = nested.vertices(ids, order)  # south, east, north, west
        corners = corners.reshape(len(ids), 4, 2)
        polar = np.abs(vlat.deg) > 90 - 1e-9  # a pole's longitude is arbitrary
        np.testing.assert_allclose((centres[:, 0] - lon.deg + 180) % 360 - 180, 0, atol=1e-9)
        np.testing.assert_allclose(centres[:, 1], lat.deg, atol=1e-9)
        dlon = np.where(polar, 0, (corners[..., 0] - vlon.deg + 180) % 360 - 180)
        np.testing.assert_allclose(dlon, 0, atol=1e-9)
        np.testing.assert_allclose(corners[..., 1], vlat.deg, atol=1e-9)


# fixture, query (product, field, window), zoom factor
PAGES = [
    ("pyramid2", {"product": "atl06", "field": "count"}, 4.0),
    ("pyramid2", {"product": "atl06", "field": "h_max"}, None),
    ("windowed", {"product": "atl06", "field": "h_mean", "window": "1"}, None),
    ("multiproduct", {"product": "atl06_b", "field": "h_min"}, None),
    ("sharded", {}, None),
]


def _cell_pixels(png, box: dict) -> int:
    """Pixels of the map (``box``) in the cells' colours (viridis: max - min channel
    > 40); the map's background and graticule are grey."""
    x, y, w, h = (round(box[k]) for k in ("x", "y", "width", "height"))
    rgb = np.asarray(Image.open(png).convert("RGB"))[y : y + h, x : x + w].astype(int)
    return int(((rgb.max(axis=2) - rgb.min(axis=2)) > 40).sum())


def _absent(store: MocHiveStore, key: str) -> bool:
    return sync(store.get(key, default_buffer_prototype())) is None


@pytest.mark.parametrize(("fixture", "query", "zoom"), PAGES, ids=lambda v: str(v))
def test_viewer_draws_the_stores_values(fixture, query, zoom, tmp_path):
    """The page loads without errors (the only failed requests are 404s for chunks the
    store has none of); it draws every cell holding a value at the product's coarsest
    order (a finer one after zooming in), the legend spans those values' range, and the
    screenshot shows coloured cells."""
    local = MocHiveStore(FIXTURES / fixture)
    png = tmp_path / "page.png"
    with Served(create_app(FIXTURES / fixture)) as server:
        url = server.url + "/?" + "&".join(f"{k}={v}" for k, v in query.items())
        args = [chromium(), url, str(png), *([str(zoom)] if zoom else [])]
        report = run_node("browse.mjs", *args)
    state = report["state"]
    failed = {f["url"]: f["status"] for f in report["failed"]}
    assert [e for e in report["errors"] if not e.startswith(NOT_FOUND)] == []
    assert all(e.split()[-1] in failed for e in report["errors"]), report["errors"]
    for url, status in failed.items():
        key = urlsplit(url).path.lstrip("/")
        assert status == 404 and "/c/" in key and _absent(local, key), url
    assert state["page"] == "drawn", state["status"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths = array_paths(local)
    assert state["tree"] == paths
    product, field = state["product"], state["field"]
    assert (product, field) == (query.get("product", product), query.get("field", field))
    orders = sorted(int(m[1]) for p in paths if (m := re.fullmatch(
        rf"{re.escape(product)}/o(\d+)/{re.escape(field)}", p)))
    if zoom:
        assert report["before"]["order"] == orders[0] < state["order"] <= orders[-1]
    else:
        assert state["order"] == orders[0]
    array = zarr.open_array(local, path=f"{product}/o{state['order']}/{field}", mode="r")
    values = array[...].astype(np.float64)
    fill = float(array.metadata.fill_value)
    valid = np.isfinite(values) & (values != fill)
    window = int(query.get("window", 0))
    assert state["window"] == window
    assert state["drawn"] == int((valid[window] if values.ndim == 2 else valid).sum()) > 0
    legend = state["legend"]
    assert float(legend["min"]) == values[valid].min()
    assert float(legend["max"]) == values[valid].max()
    assert float(legend["min_text"]) == pytest.approx(values[valid].min(), rel=1e-5)
    assert float(legend["max_text"]) == pytest.approx(values[valid].max(), rel=1e-5)
    assert _cell_pixels(png, state["map"]) >= 4 * state["drawn"]  # fixtures' cells: 10-20 px


def test_a_browser_reloading_after_a_restart_on_a_grown_hive_reads_the_grown_hive(
    hive_copy, tmp_path
):
    """Chromium's HTTP cache across a restart of the server (same URL) on a hive a writer
    grew by a leaf between two others: with answers reusable unasked (``max-age``, the
    policy before), the reloaded page took the array metadata from its cache (2 chunks)
    and chunk 1 from the restarted server, where it is the new leaf's node: that node's
    values at the next node's place. Answers saying ``no-cache`` are asked for again."""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    meta, first, second = (f"atl06/o7/count/{k}" for k in ("zarr.json", "c/0", "c/1"))

    def page(url: str, *keys: str) -> dict:
        got = run_node("cached_fetch.mjs", chromium(), url, str(tmp_path / "profile"), *keys)
        return {key: (got[key]["cache_control"], bytes(got[key]["bytes"])) for key in keys}

    with Served(create_app(root)) as server:
        port = server.port
        before = page(server.url, meta, first)  # the page reads the metadata and chunk 0
    assert json.loads(before[meta][1])["shape"] == [32]
    land()
    with Served(create_app(root), port=port) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reloaded = page(server.url, meta, first, second)
        store = MocHiveStore(root)
        for key, (_, body) in reloaded.items():
            assert body == sync(store.get(key, default_buffer_prototype())).to_bytes(), key
    assert json.loads(reloaded[meta][1])["shape"] == [48]
    assert {cache for cache, _ in before.values()} == {"public, no-cache"}


def test_a_page_held_open_across_a_restart_on_a_grown_hive_refuses_to_draw(hive_copy, tmp_path):
    """The page holds the metadata it opened (the root's consolidated metadata); a server
    restarted on a hive a writer grew by a leaf maps that metadata's chunk indices after
    the leaf to other nodes. Asked for another field, the page sees the root document's
    tag has changed and says so instead of drawing."""
    root = hive_copy("pyramid1_resweep")
    land = grown_after_open(root, tmp_path)
    signal, log = tmp_path / "restarted", tmp_path / "node.log"
    with Served(create_app(root)) as server, open(log, "w") as errors:
        port = server.port
        page = subprocess.Popen(
            [node(), str(JS / "held_page.mjs"), chromium(), f"{server.url}/", str(signal),
             "atl06/o7/h_max"], cwd=JS, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert page.stdout.readline() == "opened\n", log.read_text()
    land()
    with Served(create_app(root), port=port):
        signal.touch()
        out, _ = page.communicate(timeout=120)
    assert page.returncode == 0, log.read_text()
    report = json.loads(out)
    assert report["page"] == "error", report
    assert "the hive on the server changed since this page opened it" in report["status"]
