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


# fixture, query (product, field, window, view, max_cells), zoom factor, serving options
PAGES = [
    ("pyramid2", {"product": "atl06", "field": "count"}, 4.0, {}),
    ("pyramid2", {"product": "atl06", "field": "h_max"}, None, {"chunking": "shard"}),
    ("windowed", {"product": "atl06", "field": "h_mean", "window": "1"}, None, {}),
    ("windowed", {"product": "atl06", "field": "h_mean", "window": "1"}, None,
     {"window_labels": "index"}),
    ("multiproduct", {"product": "atl06_b", "field": "h_min"}, 8.0, {"chunking": "inner"}),
    ("sharded", {}, None, {"chunking": "span"}),
    ("paged", {"max_cells": "1024"}, 16.0, {"chunking": "inner"}),
    ("pyramid1", {"product": "atl06", "field": "count"}, 4.0, {"geometry": "sphere"}),
    # the default chunking joins each order's leaves in one chunk, over these budgets
    ("pyramid1", {"product": "atl06", "field": "count", "max_cells": "32"}, 4.0, {}),
    ("windowed", {"product": "atl06", "field": "h_max", "window": "1", "max_cells": "32"},
     8.0, {}),
    ("paged", {"max_cells": "1024"}, 16.0, {}),
    # no stored overview read: every coarser order computed from the leaves
    ("pyramid1", {"product": "atl06", "field": "h_max"}, 16.0, {"computed_orders": "all"}),
]
MAX_IN_FLIGHT = 6  # viewer's levels.js
COAST = (64, 64, 64)  # viewer.js's COAST


def _cell_pixels(png, box: dict) -> int:
    """Pixels of the map (``box``) in the cells' colours (viridis: max - min channel
    > 40); the map's background, land, coastlines and graticule are grey."""
    x, y, w, h = (round(box[k]) for k in ("x", "y", "width", "height"))
    rgb = np.asarray(Image.open(png).convert("RGB"))[y : y + h, x : x + w].astype(int)
    return int(((rgb.max(axis=2) - rgb.min(axis=2)) > 40).sum())


def _coast_pixels(png, box: dict) -> int:
    """Pixels of the map (``box``) drawn in the coastlines' colour (within 12 per channel:
    the line's core, not its anti-aliased edge)."""
    x, y, w, h = (round(box[k]) for k in ("x", "y", "width", "height"))
    rgb = np.asarray(Image.open(png).convert("RGB"))[y : y + h, x : x + w].astype(int)
    return int((np.abs(rgb - np.array(COAST)).max(axis=2) <= 12).sum())


def _shown(local: MocHiveStore, state: dict, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids and values (NaN: fill) of the rows the page read at the order it shows:
    the blocks it names, of the rows it says a block holds (a chunk's, or fewer where it
    reads plain chunks in part)."""
    group = f"{state['product']}/o{state['order']}"
    array = zarr.open_array(local, path=f"{group}/{state['field']}", mode="r")
    ids = zarr.open_array(local, path=f"{group}/cell_ids", mode="r")
    values = array[...].astype(np.float64)
    if values.ndim == 2:
        values = values[window]
    values[values == float(array.metadata.fill_value)] = np.nan
    inner = state["unit"]
    taken = np.concatenate([np.arange(k * inner, min((k + 1) * inner, values.size))
                            for k in state["read"]]) if state["read"] else np.array([], int)
    return ids[...][taken], values[taken]


def _absent(store: MocHiveStore, key: str) -> bool:
    return sync(store.get(key, default_buffer_prototype())) is None


class Recorder:
    """ASGI middleware: per request its key, ``Range`` header, status and body bytes, and
    the most requests for keys of the hierarchy (not the page nor ``/.static/``) the server
    was answering at once: what the server saw and sent, whatever the browser reports."""

    def __init__(self, app) -> None:
        self.app, self.seen = app, []
        self.in_flight = self.max_in_flight = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        ranged = dict(scope["headers"]).get(b"range")
        row = {"key": scope["path"][1:], "range": ranged and ranged.decode(), "status": 0,
               "bytes": 0}
        self.seen.append(row)

        async def observed(message) -> None:
            if message["type"] == "http.response.start":
                row["status"] = message["status"]
            elif message["type"] == "http.response.body":
                row["bytes"] += len(message.get("body", b""))
            await send(message)

        key = int(bool(row["key"]) and not row["key"].startswith(".static/"))
        self.in_flight += key
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self.app(scope, receive, observed)
        finally:
            self.in_flight -= key


def _browse(fixture: str, query: dict, zoom, options: dict, tmp_path, root=None,
            recorder: type[Recorder] | None = None) -> dict:
    png, zoomed = tmp_path / "page.png", tmp_path / "zoomed.png"
    app = create_app(root or FIXTURES / fixture, **options)
    if recorder:
        app = recorder(app)
    with Served(app) as server:
        url = server.url + "/?" + "&".join(f"{k}={v}" for k, v in query.items())
        args = [chromium(), url, str(png), *([str(zoom), str(zoomed)] if zoom else [])]
        report = run_node("browse.mjs", *args)
    report["png"], report["zoomed"] = png, zoomed
    report["seen"] = app.seen if recorder else None
    report["server_in_flight"] = app.max_in_flight if recorder else None
    return report


@pytest.mark.parametrize(("fixture", "query", "zoom", "options"), PAGES, ids=lambda v: str(v))
def test_viewer_draws_the_stores_values(fixture, query, zoom, options, tmp_path):
    """The page loads without a console error or a failed request (absent chunks are
    asked as 204), never has more than MAX_IN_FLIGHT requests in flight, reads no
    ``cell_ids``, and draws every cell holding a value in the chunks it read at the order
    it shows (after zooming in, a finer one or the same); the legend spans those values'
    range; the cell under the pointer is named with the store's value."""
    local = MocHiveStore(FIXTURES / fixture, **options)
    report = _browse(fixture, query, zoom, options, tmp_path, recorder=Recorder)
    state = report["state"]
    assert report["errors"] == [] and report["failed"] == []
    # counted by the server and by the page: the browser's events may report a request
    # sent before the one whose body freed its slot is reported finished
    assert 0 < report["server_in_flight"] <= MAX_IN_FLIGHT
    assert state["stats"]["maxInFlight"] <= MAX_IN_FLIGHT
    assert not [k for k in report["keys"] if "cell_ids" in k or "morton" in k]
    assert state["page"] == "drawn", state["status"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths = array_paths(local)
    assert state["tree"] == paths
    product, field = state["product"], state["field"]
    assert (product, field) == (query.get("product", product), query.get("field", field))
    orders = sorted(int(m[1]) for p in paths if (m := re.fullmatch(
        rf"{re.escape(product)}/o(\d+)/{re.escape(field)}", p)))
    assert state["order"] in orders
    if zoom:
        assert (report["before"]["order"] or 0) <= state["order"]  # None: the coverage
    window = int(query.get("window", 0))
    assert state["window"] == window
    if "window" in query:  # the labels shown, read as strings whatever the serving options
        labels = zarr.open_array(MocHiveStore(FIXTURES / fixture), mode="r",
                                 path=f"{product}/o{state['order']}/window")
        assert state["labels"] == [str(s) for s in labels[:]]
    ids, values = _shown(local, state, window)
    valid = np.isfinite(values)
    assert 0 < state["drawn"] <= int(valid.sum())
    if not zoom:
        assert state["drawn"] == int(valid.sum())
    legend = state["legend"]
    assert float(legend["min"]) == values[valid].min()
    assert float(legend["max"]) == values[valid].max()
    assert float(legend["min_text"]) == pytest.approx(values[valid].min(), rel=1e-5)
    assert _cell_pixels(report["zoomed" if zoom else "png"], state["map"]) >= 4 * state["drawn"]
    chunk_keys = {k for k in report["keys"] if "/c/" in k}
    assert all(k.startswith(f"{product}/o") and k.split("/")[2] in (field, "window")
               for k in chunk_keys)  # the field, and a windowed one's labels
    if zoom:  # the pointer rests on the cell zoomed about
        named = re.fullmatch(r"cell (\d+) \(order (\d+)\): (.*)", state["pointer"])
        cell, order, value = named.groups()
        assert int(order) == state["order"]
        row = np.flatnonzero(ids == int(cell))
        assert row.size == 1
        if value == "no value":  # the fill value
            assert np.isnan(values[row[0]])
        else:
            assert float(value) == pytest.approx(values[row[0]], rel=1e-6)


def test_the_map_shows_coastlines_and_cells_at_two_zoom_levels(tmp_path):
    """A product with overview orders (``pyramid2``, orders 1-4, and order 0 computed from
    its leaves): the first picture is the finest order whose cells a map of the world
    shows (order 4, 4 requests), read whole; the view drawn is the world with Natural
    Earth's coastlines and cells; zoomed in 4 times about a cell, the coastlines of the
    North Atlantic and the same order's cells, with no more chunk read. The page reads
    only ``zarr.json`` and chunks of the chosen field."""
    report = _browse("pyramid2", {"product": "atl06", "field": "count"}, 4.0,
                     {"chunking": "leaf"}, tmp_path)  # one chunk per leaf, as counted
    before, after = report["before"], report["state"]
    assert report["errors"] == [] and after["page"] == "drawn"
    assert before["first"]["requests"] == 4  # the root, its tag again, o4's 2 chunks
    assert before["order"] == after["order"] == 4
    for png in (report["png"], report["zoomed"]):
        assert _coast_pixels(png, after["map"]) > 300, png
        assert _cell_pixels(png, after["map"]) > 100, png
    assert set(report["keys"]) == {"zarr.json", "atl06/o4/count/c/0", "atl06/o4/count/c/1"}
    assert report["max_in_flight"] <= MAX_IN_FLIGHT


def test_a_product_too_large_to_read_whole_shows_its_coverage_then_reads_the_view(tmp_path):
    """``paged`` (one order, 5,120 cells in 80 chunks; no computed orders, as for a field
    without a fold) with a page limited to 1,024 cells per view: the first picture is the
    coverage (its 5 leaves' nodes), read from the group's ``coverage_moc`` with no chunk
    request; zoomed in, only the chunks covering the view are read, at most MAX_IN_FLIGHT
    at once."""
    report = _browse("paged", {"max_cells": "1024"}, 16.0,
                     {"chunking": "inner", "computed_orders": "none"}, tmp_path)
    before, after = report["before"], report["state"]
    assert report["errors"] == [] and report["failed"] == []
    assert before["order"] is None and before["drawn"] == 0
    assert "coverage of 5 nodes" in before["status"]
    assert before["requests"] == 3  # zarr.json, and its tag asked again twice
    chunks = [k for k in report["keys"] if "/c/" in k]
    assert MAX_IN_FLIGHT < len(chunks) == len(set(chunks)) == len(after["read"]) <= 1024 // 64
    assert report["max_in_flight"] <= MAX_IN_FLIGHT  # with more chunks than that to read


def test_a_field_the_map_cannot_draw_says_so(tmp_path):
    """A ragged (variable-length) field is listed, and chosen says why it is not drawn;
    nothing of it is read."""
    report = _browse("ragged", {"product": "atl06", "field": "h_tdigest"}, None, {}, tmp_path)
    state = report["state"]
    assert report["errors"] == [] and state["page"] == "drawn"
    assert "atl06/o6/h_tdigest" in state["tree"]
    assert "h_tdigest is not drawn" in state["status"] and "variable-length" in state["status"]
    assert not [k for k in report["keys"] if "h_tdigest" in k]


def test_arrays_named_like_object_properties_are_listed_and_drawn(hive_copy, tmp_path):
    """Arrays named ``constructor`` and ``toString`` (keys every JavaScript object
    inherits) are in the tree and drawn with the store's values."""
    root = hive_copy("bare_versioned")
    renamed = {"h_max": "constructor", "h_min": "toString"}
    for old, new in renamed.items():
        for path in sorted(root.rglob(old)):
            if path.is_dir() and path.parent.name == "7":
                path.rename(path.parent / new)
    for stamp in root.rglob("zarr.json"):
        doc = json.loads(stamp.read_text())
        commit = doc.get("attributes", {}).get("morton_hive_commit", {})
        hashes = commit.get("content_hashes", {}).get("arrays")
        if hashes:
            for old, new in renamed.items():
                hashes[f"7/{new}"] = hashes.pop(f"7/{old}")
            stamp.write_text(json.dumps(doc))
    query = {"product": "atl06", "field": "constructor"}
    report = _browse("", query, None, {}, tmp_path, root=root)
    state = report["state"]
    assert report["errors"] == [] and state["page"] == "drawn", state["status"]
    assert {"atl06/o7/constructor", "atl06/o7/toString"} <= set(state["tree"])
    values = zarr.open_array(MocHiveStore(root), path="atl06/o7/constructor", mode="r")[...]
    assert state["drawn"] == int(np.isfinite(values).sum()) > 0
    assert float(state["legend"]["max"]) == float(np.nanmax(values))


@pytest.mark.parametrize("fixture", ["pyramid1", "pyramid2", "windowed", "paged", "multiproduct"])
def test_level_groups_carry_their_nodes_as_a_moc(fixture):
    """Each level group's ``coverage_moc`` lists its nodes: expanded to the cell order,
    node after node, they are moczarr's ``cell_ids`` of that level, row for row."""
    from moczarr.level import open_level

    root = zarr.open_group(MocHiveStore(FIXTURES / fixture, computed_orders="none"), mode="r")
    checked = 0
    for product, group in root.groups():
        for name, level in group.groups():
            info = level.attrs["morton_hive_store"]
            order, runs = info["coverage_moc"].split("/")
            nodes = np.concatenate([np.arange(int(a), int(b or a) + 1) for a, _, b in
                                    (r.partition("-") for r in runs.split())])
            cells = info["cells_per_node"]
            ids = (nodes[:, None] * cells + np.arange(cells)).ravel()
            cell_order = int(name[1:])
            assert 4 ** (cell_order - int(order)) == cells
            kwargs = {"product": product} if fixture == "multiproduct" else {}
            windows = level["window"][...].tolist() if "window" in level else [None]
            with warnings.catch_warnings():  # a windowed level's rows: every window's nodes
                warnings.simplefilter("ignore")
                refs = [open_level(str(FIXTURES / fixture), cell_order, window=w, **kwargs)
                        for w in windows]
            np.testing.assert_array_equal(
                ids, np.unique(np.concatenate([r["cell_ids"].values for r in refs])))
            checked += 1
    assert checked


def test_an_absent_chunk_asked_as_the_viewer_asks_is_204(tmp_path):
    """``?absent=204`` turns the 404 of an absent chunk (its fill value) into a 204 with
    no body; a present chunk answers as without it."""
    import urllib.error
    import urllib.request

    def get(url: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(url) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as err:
            return err.code, b""

    absent, present = "atl06/o4/count/c/2", "atl06/o4/count/c/0"  # pyramid2's 441: chunk 2
    local = MocHiveStore(FIXTURES / "pyramid2", chunking="inner")
    assert _absent(local, absent) and not _absent(local, present)
    with Served(create_app(FIXTURES / "pyramid2", chunking="inner")) as server:
        assert get(f"{server.url}/{absent}")[0] == 404
        assert get(f"{server.url}/{absent}?absent=204") == (204, b"")
        status, body = get(f"{server.url}/{present}?absent=204")
        stored = sync(local.get(present, default_buffer_prototype()))
        assert status == 200 and body == stored.to_bytes()


def test_a_joined_chunk_asked_by_range_answers_its_bytes_and_absence_as_204():
    """Under the default chunking a chunk joins leaves byte for byte, with the fill value
    where a leaf is absent. A Range request of it answers 206 and those bytes of the whole
    chunk, also within the absent leaf (``windowed``: node 9256 has no leaf in window
    2019); a chunk with no leaf (``pyramid1`` on the sphere: its middle chunk) asked with
    ``?absent=204`` answers 204 with a Range header as without."""
    from support.serving import fetch

    def stored(store: MocHiveStore, key: str) -> bytes:
        return sync(store.get(key, default_buffer_prototype())).to_bytes()

    windowed = MocHiveStore(FIXTURES / "windowed")
    whole = stored(windowed, "atl06/o7/h_max/c/0/0")
    assert len(whole) == 48 * 4  # one chunk of the 3 leaves
    assert np.isnan(np.frombuffer(whole, "<f4")[32:]).all()  # the absent leaf: fill
    sphere = MocHiveStore(FIXTURES / "pyramid1", geometry="sphere")
    assert _absent(sphere, "atl06/o7/count/c/1") and not _absent(sphere, "atl06/o7/count/c/0")
    with Served(create_app(FIXTURES / "windowed")) as server:
        for first, last in ((0, 3), (64, 127), (100, 191), (128, 191)):
            status, headers, body = fetch(server, "/atl06/o7/h_max/c/0/0?absent=204",
                                          Range=f"bytes={first}-{last}")
            assert (status, body) == (206, whole[first : last + 1])
            assert headers["content-range"] == f"bytes {first}-{last}/{len(whole)}"
    with Served(create_app(FIXTURES / "pyramid1", geometry="sphere")) as server:
        assert fetch(server, "/atl06/o7/count/c/1", Range="bytes=0-7")[0] == 404
        assert fetch(server, "/atl06/o7/count/c/1?absent=204", Range="bytes=0-7")[::2] == \
            (204, b"")
        status, _, body = fetch(server, "/atl06/o7/count/c/0?absent=204", Range="bytes=8-15")
        assert (status, body) == (206, stored(sphere, "atl06/o7/count/c/0")[8:16])


def test_a_range_of_a_joined_chunk_reads_only_the_leaves_it_falls_in(hive_copy):
    """``pyramid1``'s order 7 is one chunk of 3 leaves (16 cells each) under the default
    chunking. With the third leaf's chunk truncated, the chunk reads the first two leaves'
    values and the third's rows as the fill value (one bad leaf costs only its own rows),
    and a Range request of the first two leaves' bytes reads only those (206, the store's
    values): a view's rows cost the leaves they are in, not the chunk's."""
    from support.serving import fetch

    root = hive_copy("pyramid1")
    leaf = next(root.glob("-4/1/1/3/3/1/-411331.zarr/run-*/7/count/c/0"))
    leaf.write_bytes(leaf.read_bytes()[:-8])
    pristine = zarr.open_array(MocHiveStore(FIXTURES / "pyramid1"), path="atl06/o7/count",
                               mode="r")
    expected = pristine[:32]
    with Served(create_app(root)) as server:
        status, _, body = fetch(server, "/atl06/o7/count/c/0")
        assert status == 200
        whole = np.frombuffer(body, "<i8")
        np.testing.assert_array_equal(whole[:32], expected)
        assert (whole[32:] == pristine.fill_value).all()
        status, _, body = fetch(server, "/atl06/o7/count/c/0?absent=204", Range="bytes=0-255")
        assert status == 206
        np.testing.assert_array_equal(np.frombuffer(body, "<i8"), expected)


def test_a_joined_chunk_over_the_budget_is_read_by_ranges_to_the_finest_order(tmp_path):
    """``pyramid1`` served with the default chunking: each order's leaves are joined in
    one chunk (order 7: 3 leaves, 48 cells). The page's budget is lowered to 32 cells
    (``max_cells``) so that this chunk exceeds it, as a chunk of 128 leaves exceeds the
    default budget on a large hive. Zoomed in 4 times, the page reads order 7, the finest,
    by Range requests of the visible leaves' rows only: the server sees Range headers on
    order 7's chunk and sends at most 32 cells' bytes of it, no chunk request sends more;
    at most 6 requests in flight; coastlines and cells drawn at both zoom levels."""
    joined = zarr.open_array(MocHiveStore(FIXTURES / "pyramid1"), path="atl06/o7/count",
                             mode="r")
    assert joined.chunks == joined.shape == (48,)
    query = {"product": "atl06", "field": "count", "max_cells": "32"}
    report = _browse("pyramid1", query, 4.0, {}, tmp_path, recorder=Recorder)
    before, after, seen = report["before"], report["state"], report["seen"]
    assert report["errors"] == [] and report["failed"] == [] and after["page"] == "drawn"
    assert before["order"] < 7 == after["order"]
    finest = [r for r in seen if r["key"].startswith("atl06/o7/count/c/")]
    assert finest and all(r["range"] and r["status"] == 206 for r in finest)
    assert sum(r["bytes"] for r in finest) <= 32 * joined.dtype.itemsize
    assert all(r["bytes"] <= 32 * 8 for r in seen if "/c/" in r["key"])
    assert after["stats"]["ranged"] == sum(bool(r["range"]) for r in seen) == len(finest)
    assert 0 < report["server_in_flight"] <= MAX_IN_FLIGHT
    assert after["stats"]["maxInFlight"] <= MAX_IN_FLIGHT
    for png in (report["png"], report["zoomed"]):
        assert _coast_pixels(png, after["map"]) > 300, png
        assert _cell_pixels(png, after["map"]) > 20, png


@pytest.mark.parametrize("field", ["count", "h_mean"])  # int64, float32
def test_ranges_of_big_endian_chunks_are_decoded_in_their_byte_order(hive_copy, field, tmp_path):
    """``bare_versioned`` with every plain leaf array rewritten big-endian (its ``bytes``
    codec says ``"endian": "big"``, its chunks byteswapped: the same values). Under the
    default chunking order 7 is one chunk of 4 leaves; with at most 32 cells a view, the
    zoomed page reads it by a Range request and draws the original fixture's values."""
    root = hive_copy("bare_versioned")
    swapped = 0
    for meta_path in root.rglob("7/*/zarr.json"):
        meta = json.loads(meta_path.read_text())
        if meta.get("codecs") != [{"name": "bytes", "configuration": {"endian": "little"}}]:
            continue
        little = np.dtype(meta["data_type"]).newbyteorder("<")
        meta["codecs"][0]["configuration"]["endian"] = "big"
        meta_path.write_text(json.dumps(meta))
        for chunk in (meta_path.parent / "c").rglob("*"):
            chunk.write_bytes(np.frombuffer(chunk.read_bytes(), little).byteswap().tobytes())
        swapped += 1
    declared = zarr.open_array(MocHiveStore(root), path=f"atl06/o7/{field}", mode="r")
    codecs = list(declared.metadata.to_dict()["codecs"])
    assert swapped and codecs == [{"name": "bytes", "configuration": {"endian": "big"}}]
    assert declared.chunks == declared.shape == (64,)
    query = {"product": "atl06", "field": field, "max_cells": "32"}
    report = _browse("", query, 8.0, {}, tmp_path, root=root, recorder=Recorder)
    state = report["state"]
    assert report["errors"] == [] and state["page"] == "drawn", state["status"]
    assert state["order"] == 7 and state["stats"]["ranged"] > 0
    assert [r["status"] for r in report["seen"] if r["range"]] == [206] * state["stats"]["ranged"]
    ids, values = _shown(MocHiveStore(FIXTURES / "bare_versioned"), state, 0)
    valid = np.isfinite(values)
    assert 0 < state["drawn"] <= int(valid.sum())
    assert float(state["legend"]["min"]) == values[valid].min()
    assert float(state["legend"]["max"]) == values[valid].max()
    named = re.fullmatch(r"cell (\d+) \(order 7\): (.*)", state["pointer"])
    row = np.flatnonzero(ids == int(named[1]))
    assert row.size == 1
    if named[2] == "no value":
        assert np.isnan(values[row[0]])
    else:
        assert float(named[2]) == pytest.approx(values[row[0]], rel=1e-6)


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

    with Served(create_app(root, chunking="leaf")) as server:  # chunk k is leaf k
        port = server.port
        before = page(server.url, meta, first)  # the page reads the metadata and chunk 0
    assert json.loads(before[meta][1])["shape"] == [32]
    land()
    with Served(create_app(root, chunking="leaf"), port=port) as server, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reloaded = page(server.url, meta, first, second)
        store = MocHiveStore(root, chunking="leaf")
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


def test_a_moc_too_long_for_the_group_is_coarsened_to_a_superset():
    """100,000 scattered nodes at order 10 do not fit ``MAX_MOC_CHARS``: the group carries
    their parents at the finest coarser order that fits, every node inside it."""
    from types import SimpleNamespace

    from moczarr_store.hive.level import ranks_to_runs
    from moczarr_store.view.tree import MAX_MOC_CHARS, coverage_moc

    def level_of(nodes: np.ndarray) -> SimpleNamespace:  # what coverage_moc reads of a level
        ranks = (nodes + 4**10).astype(np.uint64)
        return SimpleNamespace(node_order=10, node_ranks=ranks, runs=lambda: ranks_to_runs(ranks))

    rng = np.random.default_rng(1)
    nodes = np.unique(rng.integers(0, 12 * 4**10, 100_000))
    level = level_of(nodes)
    text = coverage_moc(level)["coverage_moc"]
    order, runs = text.split("/")
    assert 0 < int(order) < 10 and len(text) <= MAX_MOC_CHARS
    cells = np.concatenate([np.arange(int(a), int(b or a) + 1) for a, _, b in
                            (r.partition("-") for r in runs.split())])
    np.testing.assert_array_equal(cells, np.unique(nodes >> (2 * (10 - int(order)))))
    assert coverage_moc(level_of(nodes[:100]))["coverage_moc"].startswith("10/")


def test_the_first_view_fits_the_selected_windows_cells(tmp_path):
    """``windowed``: window 2019 holds two neighbouring leaves over Greenland, 2020 also one
    far south. Chosen with 2019, the view fits that window's cells (every centre inside,
    less than 30 degrees wide), not the cells of all windows."""
    from cdshealpix import nested

    report = _browse("windowed", {"product": "atl06", "field": "h_mean", "window": "0"},
                     None, {}, tmp_path)
    state = report["state"]
    assert report["errors"] == [] and state["page"] == "drawn"
    group = zarr.open_group(MocHiveStore(FIXTURES / "windowed"), mode="r")["atl06/o7"]
    values = group["h_mean"][0]
    ids = group["cell_ids"][...][np.isfinite(values)].astype(np.uint64)
    lon, lat = nested.healpix_to_lonlat(ids, 7)
    lon = (lon.deg + 180) % 360 - 180
    view, box = state["view"], state["map"]
    half_w, half_h = box["width"] / 2 / view["scale"], box["height"] / 2 / view["scale"]
    assert 2 * half_w < 30
    assert np.all(np.abs(lon - view["lon"]) < half_w)
    assert np.all(np.abs(lat.deg - view["lat"]) < half_h)
    everywhere = group["cell_ids"][...][np.isfinite(group["h_mean"][...]).any(axis=0)]
    assert len(everywhere) > len(ids)  # the other window holds cells elsewhere


def test_a_constant_field_has_a_one_value_legend(tmp_path):
    """``pyramid2``'s southern node with at most 4 cells per view: order 3, whose one chunk
    there holds one value (count 6). The legend names it once and says it is every value
    (not "6 … 6")."""
    from cdshealpix import nested

    lon, lat = nested.healpix_to_lonlat(np.array([144], dtype=np.uint64), 2)
    view = f"{lon.deg[0]:.4f},{lat.deg[0]:.4f},20"
    query = {"product": "atl06", "field": "count", "max_cells": "4", "view": view}
    state = _browse("pyramid2", query, None, {"chunking": "leaf"}, tmp_path)["state"]
    assert state["page"] == "drawn" and state["order"] == 3 and state["read"] == [1]
    legend = state["legend"]
    assert legend["min"] == legend["max"] == "6"
    assert (legend["min_text"], legend["max_text"]) == ("6", "(every value)")
