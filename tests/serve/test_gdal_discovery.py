"""GDAL (>= 3.12) finds the whole hierarchy from the server's root URL.

GDAL's Zarr driver lists a group by listing its directory (``/vsicurl/`` reads an
Apache-style ``Index of`` page); it does not read the inline consolidated metadata. The
server answers ``GET /{group}/`` (and ``GET /`` for a client that does not ask for HTML)
with such an index. Through GDAL's C API (rasterio's bundled libgdal, see
:mod:`support.gdal_mdim`), against a real server on loopback: every group and array is listed,
every array GDAL can decode reads as the in-process store reads it (whose equality with
moczarr the conformance tests hold), ``gdalmdimtranslate`` of a group and of the root
copies them, and each array GDAL cannot decode comes with GDAL's message saying why.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import zarr
from support.gdal_mdim import gdal
from support.serving import FIXTURES, Served, array_paths, expected, fetch

from moczarr_store import MocHiveStore
from moczarr_store.serve import create_app

# why GDAL 3.12 cannot decode an array, by the kind of its values (its own messages)
UNDECODABLE = {
    "T": "unsupported format for data_type: string",  # window labels (vlen-utf8)
    "O": "unsupported format for data_type: variable_length_bytes",  # ragged fields
}
SHARDING = "Unsupported codec: sharding_indexed"  # read from GDAL 3.13


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """GDAL looks for an array named after each dimension in every directory above a
    group, up past the server's root (``http://cells/zarr.json``): libcurl sends such a
    request to a closed loopback proxy port instead of resolving the name."""
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1")


def _hierarchy(local: MocHiveStore) -> tuple[list[str], dict]:
    """Every group path and every array's values and metadata, read in process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(local, mode="r")
        groups = sorted(p for p, node in root.members(max_depth=None)
                        if isinstance(node, zarr.Group))
        return groups, expected(local, array_paths(local))


def _check(g, root, want: dict, prefix: str = "") -> set[str]:
    """Each array of ``want`` (paths below ``prefix``) read by GDAL under ``root``: equal
    values, or undecodable with GDAL's reason among its messages. The paths read."""
    read = set()
    for path, (values, _) in want.items():
        got = g.read(root, path.removeprefix(prefix))
        if isinstance(got, str):
            reason = UNDECODABLE.get(values.dtype.kind)
            assert reason is not None, (path, got, g.messages)
            assert any(reason in m for m in g.messages), (path, reason, g.messages)
            continue
        assert got.dtype == values.dtype and got.shape == values.shape, path
        np.testing.assert_array_equal(got, values, err_msg=path)
        read.add(path)
    return read


@pytest.mark.parametrize(
    "fixture", ["pyramid1", "windowed", "ragged", "multiproduct", "sharded", "pyramid2"]
)
def test_gdal_lists_and_reads_everything_from_the_root(fixture):
    g = gdal()
    local = MocHiveStore(FIXTURES / fixture)
    groups, want = _hierarchy(local)
    with Served(create_app(FIXTURES / fixture, static_dir=None)) as server:
        g.config(GDAL_HTTP_MAX_RETRY="0")
        with g.open(f"/vsicurl/{server.url}") as root:
            got_groups, got_arrays = g.listing(root)
            assert sorted(got_groups) == groups
            assert sorted(got_arrays) == sorted(want)
            assert _check(g, root, want)


def test_gdalmdimtranslate_copies_a_group_and_the_root(tmp_path):
    """``gdalmdimtranslate -group /atl06/o5`` and a whole-root translate write every array
    (to local Zarr, read back by GDAL) equal to the in-process reads; the root's ``window``
    (strings) is left out with GDAL's reason. A group holding ``window`` is refused
    whole by GDAL 3.12 ("Cannot find array window", after the reason); served with
    ``window_labels="index"`` it copies (``test_gdal_messages``)."""
    g = gdal()
    for fixture, group in (("pyramid1", "atl06/o5"), ("windowed", "atl06/o7")):
        local = MocHiveStore(FIXTURES / fixture)
        _, want = _hierarchy(local)
        decodable = {p for p, (v, _) in want.items() if v.dtype.kind not in UNDECODABLE}
        whole, part = tmp_path / f"{fixture}.zarr", tmp_path / f"{fixture}_group.zarr"
        with Served(create_app(FIXTURES / fixture, static_dir=None)) as server:
            g.config(GDAL_HTTP_MAX_RETRY="0")
            source = f"/vsicurl/{server.url}"
            assert g.translate(source, str(whole), "-of", "Zarr")
            g.messages.clear()
            copied = g.translate(source, str(part), "-of", "Zarr", "-group", f"/{group}")
        with g.open(str(whole)) as root:
            assert sorted(g.listing(root)[1]) == sorted(decodable)
            assert _check(g, root, {p: want[p] for p in decodable}) == decodable
        below = {p: v for p, v in want.items() if p.startswith(group + "/")}
        if decodable >= set(below):
            assert copied
            with g.open(str(part)) as root:
                assert sorted(g.listing(root)[1]) == sorted(p.split("/")[-1] for p in below)
                assert _check(g, root, below, prefix=group + "/") == set(below)
        else:
            assert not copied and "Cannot find array window" in g.messages
            assert any(UNDECODABLE["T"] in m for m in g.messages)


def test_gdal_says_why_it_cannot_read_shard_mode():
    """Served with ``chunking="shard"``, arrays are ``sharding_indexed``: GDAL 3.12 lists
    them but cannot open them ("Cannot find array" from the CLI); its message naming the
    codec is the cause. From GDAL 3.13 they read as the in-process store reads them."""
    g = gdal()
    local = MocHiveStore(FIXTURES / "sharded", chunking="shard")
    _, want = _hierarchy(local)
    with Served(create_app(FIXTURES / "sharded", static_dir=None, chunking="shard")) as server:
        g.config(GDAL_HTTP_MAX_RETRY="0")
        with g.open(f"/vsicurl/{server.url}") as root:
            assert sorted(g.listing(root)[1]) == sorted(want)
            for path, (values, meta) in want.items():
                got = g.read(root, path)
                sharded = any(c["name"] == "sharding_indexed" for c in meta["codecs"])
                if sharded and tuple(int(p) for p in g.version.split(".")[:2]) < (3, 13):
                    assert got == "cannot open" and any(SHARDING in m for m in g.messages)
                else:
                    np.testing.assert_array_equal(got, values, err_msg=path)


def test_directory_index_of_groups():
    """``GET /{group}/`` names ``zarr.json`` and each child (a directory) in child order;
    ``GET /`` is the root's index for a client that does not ask for HTML and the viewer
    for one that does; arrays, unknown paths and hostile ones are 404. Listing reads
    nothing once the hive is open."""
    with Served(create_app(FIXTURES / "pyramid1")) as server:
        status, headers, body = fetch(server, "/atl06/")
        assert status == 200 and headers["content-type"].startswith("text/html")
        page = body.decode()
        assert "<title>Index of /atl06/</title>" in page
        links = [line for line in page.splitlines() if line.startswith("<a href=")]
        # the stored orders 7, 5 and 3 and the computed ones between, finest first
        assert links == ['<a href="zarr.json">zarr.json</a>',
                         *(f'<a href="o{k}/">o{k}/</a>' for k in range(7, -1, -1))]
        store = server.store
        store.request_stats.reset()
        root = fetch(server, "/")[2].decode()
        assert "<title>Index of /</title>" in root and '<a href="atl06/">' in root
        assert b"viewer.js" in fetch(server, "/", Accept="text/html,*/*;q=0.8")[2]
        level = fetch(server, "/atl06/o7/")[2].decode()
        assert '<a href="h_mean/">h_mean/</a>' in level and '<a href="c/">' not in level
        for path in ("/atl06/o7/h_mean/", "/atl06/o7/h_mean/c/", "/nope/", "//", "/atl06//",
                     "/atl06/./", "/atl06/%2E%2E/", "/atl06%2Fo7/", "/.static/"):
            assert fetch(server, path)[0] == 404, path
        assert fetch(server, "/atl06/", "POST")[0] == 405
        assert store.request_stats.total == 0


def test_index_page_escapes_names_and_is_bounded():
    """Names are percent-encoded in links and escaped in text (a name cannot open a tag
    or end the attribute); past ``MAX_ENTRIES`` the page says how many it left out."""
    from moczarr_store.serve.listing import MAX_ENTRIES, index_page

    page = index_page('/a"<b>/', ['x"><script>', "a b&c", "é"]).decode()
    assert "<script>" not in page and '"<b>' not in page
    assert '<a href="x%22%3E%3Cscript%3E/">x&quot;&gt;&lt;script&gt;/</a>' in page
    assert '<a href="a%20b%26c/">a b&amp;c/</a>' in page
    assert '<a href="%C3%A9/">é/</a>' in page
    many = index_page("/", [f"n{i}" for i in range(MAX_ENTRIES + 5)]).decode()
    assert many.count("<a href=") == MAX_ENTRIES + 1 and "(5 more not listed)" in many
