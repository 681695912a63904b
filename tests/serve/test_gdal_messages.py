"""Where GDAL 3.12's error lines come from when it reads a served hive, and how a windowed
level copies: its arrays named one by one, or whole once served with numbered windows.

GDAL's Zarr driver looks for an array named after each dimension of an array, in the
group's directory and then in every directory above it. No array is named ``cells``, so
the search walks past the server's root, where ``/vsicurl/`` cannot parse the paths it
forms: ``ERROR 5: Missing url parameter``. These tests hold that every one of GDAL's
messages is that walk or the string labels it cannot decode, and that the server answered
every request GDAL made to it as it should (no error status).
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from support.gdal_mdim import gdal
from support.serving import FIXTURES, Served

from moczarr_store import MocHiveStore
from moczarr_store.serve import create_app

ABOVE_THE_ROOT = ("cells/zarr.json: 0", "Missing url parameter", "Unsupported option: http")
STRINGS = "unsupported format for data_type: string"


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """The walk's lookups above the root (``http://cells/zarr.json``) go to a closed
    loopback proxy port instead of a name lookup."""
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1")


class Answers:
    """An ASGI app recording the status of every answer it gives."""

    def __init__(self, app) -> None:
        self.app, self.seen = app, []

    async def __call__(self, scope, receive, send):
        async def sending(message):
            if message["type"] == "http.response.start":
                self.seen.append((scope["path"], message["status"]))
            await send(message)

        await self.app(scope, receive, sending)


@pytest.mark.parametrize("fixture", ["windowed", "pyramid1"])
def test_every_gdal_error_line_is_its_search_above_the_root(fixture):
    g = gdal()
    answers = Answers(create_app(FIXTURES / fixture, static_dir=None))
    with Served(answers) as server:
        g.config(GDAL_HTTP_MAX_RETRY="0")
        with g.open(f"/vsicurl/{server.url}") as root:
            _, arrays = g.listing(root)
            for path in arrays:
                g.read(root, path)
    assert any("Missing url parameter" in m for m in g.messages)  # the ERROR 5 lines
    for message in g.messages:
        assert any(part in message for part in (*ABOVE_THE_ROOT, STRINGS)), message
    assert answers.seen and all(status in (200, 206, 404) for _, status in answers.seen)
    missing = {path for path, status in answers.seen if status == 404}
    # besides the walk and GDAL's side files: the grid mapping's one chunk, absent since
    # its value is its fill value (0)
    odd = {p for p in missing if not p.endswith((
        "/cells/zarr.json", ".gmac", "/.zarray", "/.zgroup", "/.zmetadata", "/healpix/c"))}
    assert all(_all_fill(FIXTURES / fixture, path) for path in odd), odd


def _all_fill(hive, path: str) -> bool:
    """A chunk answered 404 is zarr's fill value: a computed order's chunk with no source
    value beneath it (no other array chunk may be missing)."""
    array_path, _, indices = path.strip("/").partition("/c/")
    array = zarr.open_array(MocHiveStore(hive), path=array_path, mode="r")
    if "computed" not in str(array.attrs.get("morton_hive_store", "")) or not indices:
        return False
    where = tuple(slice(int(i) * n, (int(i) + 1) * n)
                  for i, n in zip(indices.split("/"), array.chunks, strict=True))
    values = array[where]
    fill = array.fill_value
    return bool(np.all(np.isnan(values)) if np.isnan(fill) else np.all(values == fill))


def test_a_windowed_level_copies_with_its_arrays_named(tmp_path):
    """``gdalmdimtranslate -group`` of a windowed level stops at the string labels (GDAL
    3.12 decodes no string type); naming the arrays with ``-array`` copies the fields and
    the labels' numeric bounds, equal to the in-process reads."""
    g = gdal()
    names = ("count", "h_mean", "window_start", "window_end", "cell_ids")
    local = zarr.open_group(MocHiveStore(FIXTURES / "windowed"), mode="r")["atl06/o7"]
    out = tmp_path / "o7.zarr"
    with Served(create_app(FIXTURES / "windowed", static_dir=None)) as server:
        g.config(GDAL_HTTP_MAX_RETRY="0")
        arrays = [arg for name in names for arg in ("-array", f"/atl06/o7/{name}")]
        assert g.translate(f"/vsicurl/{server.url}", str(out), "-of", "Zarr", *arrays)
    with g.open(str(out)) as root:
        for name in names:
            np.testing.assert_array_equal(g.read(root, name), local[name][:], err_msg=name)


def test_a_windowed_level_copies_whole_with_numbered_windows(tmp_path):
    """Served with ``window_labels="index"``, ``gdalmdimtranslate -group`` copies a whole
    windowed level: ``window`` holds 0, 1, ... and its ``labels`` attribute the labels,
    which GDAL carries into the copy; every array equals the in-process read of a store
    opened with the strings (the default), labels included."""
    g = gdal()
    text = zarr.open_group(MocHiveStore(FIXTURES / "windowed"), mode="r")["atl06/o7"]
    out = tmp_path / "o7.zarr"
    app = create_app(FIXTURES / "windowed", static_dir=None, window_labels="index")
    with Served(app) as server:
        g.config(GDAL_HTTP_MAX_RETRY="0")
        assert g.translate(f"/vsicurl/{server.url}", str(out), "-of", "Zarr",
                           "-group", "/atl06/o7"), g.messages
    assert not any(STRINGS in m for m in g.messages), g.messages
    with g.open(str(out)) as root:
        _, names = g.listing(root)
        assert sorted(names) == sorted(text.array_keys())
        for name in names:
            want = text[name][...]
            if name == "window":
                want = np.arange(want.size, dtype="int32")
            np.testing.assert_array_equal(g.read(root, name), want, err_msg=name)
    copied = zarr.open_group(out, mode="r")["window"]
    assert copied.attrs["labels"] == [str(s) for s in text["window"][:]]
