"""Names a reference format cannot take verbatim, in every export, read back.

zarr names are case-sensitive and may hold ``%``, ``#``, ``?`` or spaces; SQLite
identifiers ignore ASCII case, and URL readers percent-decode paths. Each export of a hive
holding such a name, read back by the format's own reader, must be what the store reads:
``coun%74`` never reads as ``count``, and ``count`` beside ``COUNT`` is two arrays.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import warnings
from pathlib import Path
from urllib.parse import unquote

import pytest
from support.hives import FIXTURES
from support.refs_read import (
    assert_same,
    icechunk_values,
    kerchunk_values,
    local_access,
    mdim_values,
)
from support.refs_read import store_values as read_store

from moczarr_store import HiveWarning
from moczarr_store.refs import export_refs

pytest_plugins = ["support.servers"]

GROUP = "atl06/o7"
NAMES = ["COUNT", "coun%74", "h%2Fmean", "a#b", "a?b=1", "sp ace", "%", "h_mean%"]
FORMATS = ["mdim-refs", "kerchunk-json", "icechunk"]
NEEDS_312 = "kerchunk-json and icechunk need the [export] extra, which needs Python >= 3.12"


def rename_field(root: Path, old: str, new: str) -> None:
    """Rename order-7 array ``old`` of every leaf of the hive at ``root`` to ``new``, in
    its stamps' content hashes too (so the stamps name it)."""
    for directory in sorted(root.rglob(f"7/{old}"), reverse=True):
        shutil.move(directory, directory.with_name(new))
    for stamp in root.rglob("zarr.json"):
        doc = json.loads(stamp.read_text())
        hashes = doc.get("attributes", {}).get("morton_hive_commit", {}).get("content_hashes")
        if hashes and f"7/{old}" in hashes["arrays"]:
            hashes["arrays"][f"7/{new}"] = hashes["arrays"].pop(f"7/{old}")
            stamp.write_text(json.dumps(doc))


def store_values(root: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        return read_store(root)


def read_back(fmt: str, out: Path, root: Path) -> dict:
    if fmt == "mdim-refs":
        return mdim_values(out)
    if fmt == "kerchunk-json":
        return kerchunk_values(out)
    return icechunk_values(out, local_access(root))


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """A copy of the sharded fixture per name: ``h_mean`` renamed to it."""
    made = {}
    for name in NAMES:
        root = tmp_path_factory.mktemp("names") / "sharded"
        shutil.copytree(FIXTURES / "sharded", root)
        rename_field(root, "h_mean", name)
        made[name] = root
    return made


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("chunking", ["auto", "inner"])
def test_an_export_of_a_name_reads_back_as_the_store_reads_it(tmp_path, named, name, fmt,
                                                             chunking):
    if fmt != "mdim-refs" and sys.version_info < (3, 12):
        pytest.skip(NEEDS_312)
    root = named[name]
    want = store_values(root)
    assert f"{GROUP}/{name}" in want and f"{GROUP}/count" in want  # both presented
    out = tmp_path / "refs"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        export_refs(root, fmt, out, chunking=chunking)
    assert_same(read_back(fmt, out, root), want)


def test_mdim_names_a_table_per_array_where_sqlite_would_fold_case(tmp_path, named):
    out = tmp_path / "refs.sqlite"
    export_refs(named["COUNT"], "mdim-refs", out)
    db = sqlite3.connect(out)
    tables = dict(db.execute("SELECT array, chunk_table FROM arrays"))
    assert tables[f"{GROUP}/COUNT"] == f"{GROUP}/COUNT"  # sorted first: keeps its path
    assert tables[f"{GROUP}/count"] == f"{GROUP}/count~1"
    assert len(set(tables.values())) == len(tables)


def test_a_failed_export_leaves_nothing_behind(tmp_path, named, monkeypatch):
    from moczarr_store.refs import mdim

    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(mdim, "_chunk_table", broken)
    out = tmp_path / "refs.sqlite"
    with pytest.raises(sqlite3.OperationalError):
        export_refs(named["COUNT"], "mdim-refs", out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["coun%74", "a#b", "sp ace"])
def test_s3_and_http_references_of_a_name_read_back(tmp_path, named, s3_server, name):
    """Exported from moto's S3 (Icechunk, mdim-refs), and published over its plain HTTP
    (kerchunk JSON, which fsspec requests as written): each reads the array named so."""
    if sys.version_info < (3, 12):
        pytest.skip(NEEDS_312)
    import icechunk
    from support.servers import BUCKET, CREDENTIALS, REGION, s3_options

    prefix = f"names/{NAMES.index(name)}"
    s3_server.upload_tree(named[name], prefix)
    source = f"s3://{BUCKET}/{prefix}"
    options = s3_options(s3_server.url)
    want = store_values(named[name])
    config = icechunk.s3_store(region=REGION, endpoint_url=s3_server.url, allow_http=True,
                               force_path_style=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        export_refs(source, "icechunk", tmp_path / "repo", containers={source + "/": config},
                    **options)
        export_refs(source, "mdim-refs", tmp_path / "refs.sqlite", **options)
        root = named[name].resolve().as_uri() + "/"
        http = f"{s3_server.url}/{BUCKET}/{prefix}/"  # the bucket is public: path-style
        export_refs(named[name], "kerchunk-json", tmp_path / "refs.json", remap={root: http})
    access = icechunk.containers_credentials(
        {source + "/": icechunk.s3_static_credentials(**CREDENTIALS)})
    assert_same(icechunk_values(tmp_path / "repo", access), want)
    assert_same(kerchunk_values(tmp_path / "refs.json", "http"), want)

    def read(url: str, offset: int, size: int) -> bytes:
        key = unquote(url[len(f"s3://{BUCKET}/") :])
        body = s3_server.client.get_object(Bucket=BUCKET, Key=key,
                                           Range=f"bytes={offset}-{offset + size - 1}")
        return body["Body"].read()

    assert_same(mdim_values(tmp_path / "refs.sqlite", read), want)
