"""mdim-refs/0.2 exports (standard sqlite3; every Python): read back value for value."""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.hives import FIXTURES, fixture_roots
from support.jsclients import missing
from support.refs_read import assert_same, mdim_values, store_values
from zarr.core.buffer import default_buffer_prototype
from zarr.core.metadata.v3 import ArrayV3Metadata

from moczarr_store import HiveWarning, MocHiveStore, TruncatedChunkError
from moczarr_store.cli import EXIT_MISSING, EXIT_USAGE, main
from moczarr_store.io.local import LocalReader
from moczarr_store.options import OptionError
from moczarr_store.refs import export_refs
from moczarr_store.refs.collect import published
from moczarr_store.view.arrays import FabricatedArray

NAMES = [p.name for p in fixture_roots()]
collect_module = importlib.import_module("moczarr_store.refs.collect")  # the package's
# ``collect`` attribute is the function
COMPUTED_IDS = ("morton", "cell_ids", "healpix_index")  # per-cell uint64 coordinates


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


@pytest.mark.parametrize("chunking", ["auto", "shard", "leaf", "inner"])
@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_reads_back_identically(tmp_path, name, chunking):
    out = tmp_path / "refs.sqlite"
    report = export_refs(FIXTURES / name, "mdim-refs", out, chunking=chunking)
    if (name, chunking) == ("ragged", "leaf"):
        # each leaf misses an inner chunk (re-framed with fill, inline) and the digests are
        # encoded anew one chunk per leaf (inline): nothing is a byte range of an object
        assert report.counts["chunks_referenced"] == 0 < report.counts["chunks_inline"]
    else:
        assert report.counts["chunks_referenced"] > 0
    assert_same(mdim_values(out), store_values(FIXTURES / name))


@pytest.mark.parametrize("name", NAMES)
def test_auto_publishes_the_leaf_layout_where_every_shard_is_whole(tmp_path, name):
    """The default ``auto``: a group is published as ``leaf`` exactly where the ``leaf``
    export references every field chunk (no gap re-framed inline, nothing transcoded),
    else as ``shard``; each array carries the metadata of the view its group follows, and
    no chunk is re-framed or re-encoded inline (only what ``shard`` inlines: transcoded)."""
    report = export_refs(FIXTURES / name, "mdim-refs", tmp_path / "auto.sqlite")
    export_refs(FIXTURES / name, "mdim-refs", tmp_path / "leaf.sqlite", chunking="leaf")
    expected: dict[str, str] = {}
    for array, kind, storage in sqlite3.connect(tmp_path / "leaf.sqlite").execute(
            "SELECT array, kind, storage FROM arrays"):
        group = array.rpartition("/")[0]
        expected.setdefault(group, "leaf")
        if kind == "field" and storage not in ("referenced", "empty"):
            expected[group] = "shard"
    assert report.chunking == "auto" and report.layouts == expected
    views = {c: asyncio.run(MocHiveStore(FIXTURES / name, chunking=c).session.ensure_levels(""))
             for c in ("leaf", "shard")}
    db = sqlite3.connect(tmp_path / "auto.sqlite")
    assert dict(db.execute("SELECT key, value FROM meta"))["chunking"] == "auto"
    for array, kind, zarr_json in db.execute(
            "SELECT array, kind, zarr_json FROM arrays").fetchall():
        meta = views[expected[array.rpartition("/")[0]]].arrays[array].meta.to_json()
        published = json.loads(zarr_json)
        if kind == "coordinate":  # a compressor may follow the codecs served
            published["codecs"] = published["codecs"][: len(meta["codecs"])]
        else:
            infos = {i for (i,) in db.execute(f'SELECT DISTINCT info FROM "refs_{array}"')}
            layout = expected[array.rpartition("/")[0]]
            assert infos <= ({"ref"} if layout == "leaf" else {"ref", "transcoded"}), array
        assert published == meta, array


@pytest.mark.parametrize("name", NAMES)
def test_auto_publishes_exactly_what_the_layout_it_chose_publishes(tmp_path, name):
    """Each array of an ``auto`` export holds the same metadata and the same rows
    (references, inline bytes, absent chunks) as the export forced into its group's
    layout."""
    report = export_refs(FIXTURES / name, "mdim-refs", tmp_path / "auto.sqlite")
    forced = {}
    for layout in ("leaf", "shard"):
        export_refs(FIXTURES / name, "mdim-refs", tmp_path / f"{layout}.sqlite",
                    chunking=layout)
        forced[layout] = sqlite3.connect(tmp_path / f"{layout}.sqlite")
    auto = sqlite3.connect(tmp_path / "auto.sqlite")
    arrays = [a for (a,) in auto.execute("SELECT array FROM arrays")]
    assert arrays
    for array in arrays:
        other = forced[report.layouts[array.rpartition("/")[0]]]
        query = "SELECT zarr_json FROM arrays WHERE array = ?"
        assert auto.execute(query, (array,)).fetchone() == other.execute(
            query, (array,)).fetchone(), array
        rows = f'SELECT * FROM "refs_{array}" ORDER BY 1, 2'
        assert auto.execute(rows).fetchall() == other.execute(rows).fetchall(), array


def test_schema_sources_and_journal_mode(tmp_path):
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "sharded", "mdim-refs", out)
    db = sqlite3.connect(out)
    assert dict(db.execute("SELECT key, value FROM meta"))["format_version"] == "mdim-refs/0.2"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not (tmp_path / "refs.sqlite-journal").exists()
    root = (FIXTURES / "sharded").resolve().as_uri() + "/"
    sources = db.execute("SELECT source, size, mtime, etag FROM sources").fetchall()
    assert sources
    for source, size, mtime, etag in sources:
        path = source[len("file://") :]
        assert source.startswith(root) and size == os.path.getsize(path)
        assert mtime and etag is None
    count = db.execute("SELECT * FROM arrays WHERE array = 'atl06/o7/count'").fetchone()
    cols = [d[0] for d in db.execute("SELECT * FROM arrays").description]
    row = dict(zip(cols, count, strict=True))
    assert row["kind"] == "field" and row["storage"] == "referenced"
    assert json.loads(row["dims"]) == ["cells"]
    codec = json.loads(row["codec"])
    assert codec[0]["name"] == "sharding_indexed"
    morton = dict(zip(cols, db.execute(
        "SELECT * FROM arrays WHERE array = 'atl06/o7/morton'").fetchone(), strict=True))
    assert morton["kind"] == "coordinate" and morton["storage"] == "inline"
    types = {r[1]: r[2] for r in db.execute('PRAGMA table_info("atl06/o7/count")')}
    assert types["offset"] == "BIGINT" and types["size"] == "BIGINT"


def test_remap_publishes_longest_prefix_and_leaves_sources(tmp_path):
    root = (FIXTURES / "sharded").resolve().as_uri() + "/"
    out = tmp_path / "refs.sqlite"
    rules = [f"{root}=s3://short/", f"{root}4/4/=s3://long/"]
    export_refs(FIXTURES / "sharded", "mdim-refs", out, remap=rules)
    db = sqlite3.connect(out)
    rows = db.execute(
        'SELECT c.source, v.path FROM "atl06/o7/count" c JOIN "refs_atl06/o7/count" v '
        "ON c.dim_0 = v.dim_0"
    ).fetchall()
    assert rows
    for source, path in rows:
        assert source.startswith(root)
        rel = source[len(root) :]
        want = f"s3://long/{rel[4:]}" if rel.startswith("4/4/") else f"s3://short/{rel}"
        assert path == want
    assert all(s.startswith(root) for (s,) in db.execute("SELECT source FROM sources"))


def test_remap_to_a_copy_reads_there(tmp_path):
    first = shutil.copytree(FIXTURES / "bare_versioned", tmp_path / "a" / "hive")
    out = tmp_path / "refs.sqlite"
    copy = tmp_path / "b" / "hive"
    export_refs(first, "mdim-refs", out,
                remap={first.resolve().as_uri() + "/": copy.resolve().as_uri() + "/"})
    shutil.copytree(first, copy)
    want = store_values(copy)
    shutil.rmtree(first)
    assert_same(mdim_values(out), want)


def test_mixed_writers_chunks_are_inline_and_say_why(tmp_path):
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "mixed", "mdim-refs", out)
    db = sqlite3.connect(out)
    infos = {i for (i,) in db.execute('SELECT info FROM "atl06/o7/count"')}
    assert infos == {"ref", "transcoded"}
    assert db.execute(
        "SELECT storage FROM arrays WHERE array = 'atl06/o7/count'").fetchone()[0] == "mixed"


def test_group_narrows_the_export(tmp_path):
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "multiproduct", "mdim-refs", out, group=["atl06_a"])
    arrays = {a for (a,) in sqlite3.connect(out).execute("SELECT array FROM arrays")}
    assert arrays and all(a.startswith("atl06_a/") for a in arrays)
    with pytest.raises(OptionError, match="names no group of the hive; its groups: atl06_a"):
        export_refs(FIXTURES / "multiproduct", "mdim-refs", tmp_path / "x.sqlite",
                    group=["nothing"])
    # a typo beside a good group is refused, naming the closest groups, not left out (the
    # stored orders only: computed ones are never exported)
    with pytest.raises(OptionError, match=r"'atl06_c/o6' names no group of the hive \(did "
                       r"you mean 'atl06_a/o6' or 'atl06_b/o7'"):
        export_refs(MocHiveStore(FIXTURES / "multiproduct", computed_orders="none"),
                    "mdim-refs", tmp_path / "x.sqlite", group=["atl06_a", "atl06_c/o6"])
    assert not (tmp_path / "x.sqlite").exists()


def test_refuses_an_existing_output_and_a_bad_remap(tmp_path):
    out = tmp_path / "refs.sqlite"
    out.write_bytes(b"")
    with pytest.raises(FileExistsError):
        export_refs(FIXTURES / "sharded", "mdim-refs", out)
    with pytest.raises(OptionError, match="PREFIX=NEW"):
        export_refs(FIXTURES / "sharded", "mdim-refs", tmp_path / "y.sqlite", remap=["nope"])


def test_a_remap_rule_that_matches_nothing_is_refused_naming_it(tmp_path, capsys):
    root = (FIXTURES / "sharded").resolve().as_uri() + "/"
    rules = [f"{root}=s3://bucket/hive/", "file:///no/such/hive/=s3://typo/"]
    with pytest.raises(OptionError, match="remap file:///no/such/hive/=s3://typo/"):
        export_refs(FIXTURES / "sharded", "mdim-refs", tmp_path / "x.sqlite", remap=rules)
    assert not (tmp_path / "x.sqlite").exists()
    code = main(["refs", str(FIXTURES / "sharded"), "--format", "mdim-refs",
                 str(tmp_path / "y.sqlite"), "--remap", "s3://elsewhere/=s3://x/"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "s3://elsewhere/" in err and "matches no" in err
    export_refs(FIXTURES / "sharded", "mdim-refs", tmp_path / "z.sqlite", remap=rules[:1])


def test_refs_onto_an_existing_output_is_a_usage_error(tmp_path, capsys):
    out = tmp_path / "refs.sqlite"
    out.write_bytes(b"keep")
    code = main(["refs", str(FIXTURES / "sharded"), "--format", "mdim-refs", str(out)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert str(out) in err and "exists" in err
    assert out.read_bytes() == b"keep"


def test_cli_json_summary(tmp_path, capsys):
    out = tmp_path / "refs.sqlite"
    assert main(["refs", str(FIXTURES / "sharded"), "--format", "mdim-refs", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "mdim-refs" and summary["chunks_referenced"] == 12
    assert summary["sources"] == 12 and summary["bytes_on_disk"] == out.stat().st_size
    # the default: some shards of this fixture have gaps, so its one group stays sharded
    assert summary["chunking"] == "auto" and summary["layouts"] == {"atl06/o7": "shard"}
    out = tmp_path / "pyramid1.sqlite"
    assert main(["refs", str(FIXTURES / "pyramid1"), "--format", "mdim-refs", str(out),
                 "--json", "--chunking", "shard"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["chunking"] == "shard" and "layouts" not in summary


def test_gdal_ogr_opens_tables_and_views(tmp_path):
    if shutil.which("ogrinfo") is None:
        missing("GDAL's ogrinfo is not installed (apt-get install gdal-bin)")
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "sharded", "mdim-refs", out)
    layers = subprocess.run(["ogrinfo", "-ro", "-q", str(out)], capture_output=True, text=True,
                            check=True).stdout
    for layer in ("meta", "sources", "arrays", "remap", "atl06/o7/count",
                  "refs_atl06/o7/count"):
        assert f": {layer} (" in layers, layer
    shown = subprocess.run(["ogrinfo", "-ro", str(out), "refs_atl06/o7/count"],
                           capture_output=True, text=True, check=True).stdout
    assert "Feature Count: 3" in shown
    assert "offset: Integer64" in shown and "size: Integer64" in shown
    assert shown.count("info (String) = ref") == 3


def test_reference_formats_without_the_extra_say_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "virtualizarr", None)  # as on Python 3.12 without it
    import moczarr_store.cli
    from moczarr_store.refs import FORMATS

    # the parser offers every format there (Python 3.11's refuses these first: see
    # tests/cli/test_first_errors.py)
    monkeypatch.setattr(moczarr_store.cli, "runnable_formats", lambda: FORMATS)
    out = tmp_path / "refs.json"
    assert main(["refs", str(FIXTURES / "sharded"), "--format", "kerchunk-json",
                 str(out)]) == EXIT_MISSING
    err = capsys.readouterr().err
    assert "needs the [export] extra" in err and "Python >= 3.12" in err
    assert not out.exists()


def _count_shards() -> list[int]:
    """Present inner chunks of each ``count`` shard object of the sharded fixture, read
    from its index (16 entries of two little-endian uint64, then a crc32c)."""
    present = []
    for path in sorted((FIXTURES / "sharded").rglob("7/count/c/0")):
        index = np.frombuffer(path.read_bytes()[-(16 * 16 + 4):-4], dtype="<u8").reshape(-1, 2)
        present.append(int((index[:, 0] != np.uint64(2**64 - 1)).sum()))
    return present


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
def test_leaf_and_inner_references_follow_the_shard_index(tmp_path, chunking):
    present = _count_shards()
    full = sum(n == 16 for n in present)
    assert 0 < full < len(present)  # the fixture has shards with gaps and without
    want = {
        "shard": {("ref", len(present))},  # whole shard objects
        "leaf": {("ref", full), ("reframed", len(present) - full)},  # gaps: inline
        "inner": {("ref", sum(present))},  # one reference per present inner chunk
    }[chunking]
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "sharded", "mdim-refs", out, chunking=chunking)
    db = sqlite3.connect(out)
    assert set(db.execute('SELECT info, count(*) FROM "atl06/o7/count" GROUP BY info')) == want


def test_shard_mode_coordinates_are_one_inline_shard_per_leaf(tmp_path):
    """In ``"shard"`` mode the coordinates are sharded as the fields: an export carries one
    inline chunk of each per leaf chunk of the fields, not one per inner chunk."""
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "sharded", "mdim-refs", out, chunking="shard")
    db = sqlite3.connect(out)
    count = db.execute('SELECT count(*) FROM "atl06/o7/count"').fetchone()[0]
    for name in COMPUTED_IDS:
        assert db.execute(f'SELECT count(*) FROM "atl06/o7/{name}"').fetchone()[0] == count
    assert_same(mdim_values(out), store_values(FIXTURES / "sharded"))


@pytest.mark.parametrize("chunking", ["shard", "leaf"])
def test_the_cell_coordinates_are_published_compressed(tmp_path, monkeypatch, chunking):
    """``morton``, ``cell_ids`` and ``healpix_index`` are computed, so an export carries
    their bytes: unsharded ones (in chunks of at least ``COMPRESS_MIN_ROWS``, lowered here:
    the fixtures' leaves are small) are published with Blosc after ``bytes``, smaller than
    their values, and read back equal; sharded ones and the other coordinates keep the
    store's codecs."""
    monkeypatch.setattr(collect_module, "COMPRESS_MIN_ROWS", 1)
    for name in ("windowed", "sharded"):
        out = tmp_path / f"{name}.sqlite"
        export_refs(FIXTURES / name, "mdim-refs", out, chunking=chunking)
        db = sqlite3.connect(out)
        served = MocHiveStore(FIXTURES / name, chunking=chunking)
        for array, codec, shape in db.execute(
                "SELECT array, codec, shape FROM arrays WHERE kind = 'coordinate'"):
            names = [c["name"] for c in json.loads(codec)]
            doc = asyncio.run(served.get(f"{array}/zarr.json", default_buffer_prototype()))
            declared = [c["name"] for c in json.loads(doc.to_bytes())["codecs"]]
            if array.rsplit("/", 1)[1] in COMPUTED_IDS and declared == ["bytes"]:
                assert names == ["bytes", "blosc"], array
                stored = db.execute(f'SELECT sum(length(data)) FROM "{array}"').fetchone()[0]
                assert stored < 8 * json.loads(shape)[0], array
            else:
                assert names == declared, array
        assert_same(mdim_values(out), store_values(FIXTURES / name, chunking=chunking))


@pytest.mark.parametrize("compress_min_rows", [None, 1], ids=["default", "compressing"])
@pytest.mark.parametrize("chunking", ["auto", "shard", "leaf", "inner"])
@pytest.mark.parametrize("name", ["sharded", "ragged", "windowed"])
def test_published_coordinates_are_chunked_as_the_fields(
        tmp_path, monkeypatch, name, chunking, compress_min_rows):
    """zarr sees the published coordinates chunked as the fields along ``cells`` (what
    xarray takes as dask chunks, so ``ds.chunks`` holds), compressed or not; with the
    fixtures' small leaves and at the default threshold nothing is compressed."""
    if compress_min_rows is not None:
        monkeypatch.setattr(collect_module, "COMPRESS_MIN_ROWS", compress_min_rows)
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / name, "mdim-refs", out, chunking=chunking)
    db = sqlite3.connect(out)
    by_level: dict[str, set[int]] = {}
    for array, zarr_json in db.execute("SELECT array, zarr_json FROM arrays"):
        doc = json.loads(zarr_json)
        dims = doc.get("dimension_names") or []
        if "cells" in dims:
            chunks = ArrayV3Metadata.from_dict(doc).chunks[dims.index("cells")]
            by_level.setdefault(array.rsplit("/", 1)[0], set()).add(chunks)
        assert compress_min_rows or "blosc" not in json.dumps(doc["codecs"]), array
    assert by_level and all(len(sizes) == 1 for sizes in by_level.values()), by_level


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
def test_a_shard_source_is_stated_by_its_index_read(tmp_path, monkeypatch, chunking):
    """A shard object's size and mtime in the sources table come from the ranged read of
    its index, so the index verified and the stat recorded describe one version of the
    object: no HEAD of it."""
    heads: list[str] = []
    real_stat = LocalReader.stat

    async def stat(self, path):
        heads.append(path)
        return await real_stat(self, path)

    monkeypatch.setattr(LocalReader, "stat", stat)
    out = tmp_path / "refs.sqlite"
    export_refs(FIXTURES / "sharded", "mdim-refs", out, chunking=chunking)
    sources = sqlite3.connect(out).execute("SELECT source, size, mtime FROM sources").fetchall()
    root = (FIXTURES / "sharded").resolve().as_uri() + "/"
    assert sources and not {s[len(root) :] for s, _, _ in sources} & set(heads)
    for source, size, mtime in sources:
        info = os.stat(source[len("file://") :])
        assert size == info.st_size
        assert mtime == datetime.fromtimestamp(info.st_mtime, UTC).isoformat()


@functools.cache
def _coordinates(name: str, chunking: str) -> list[FabricatedArray]:
    view = asyncio.run(MocHiveStore(FIXTURES / name, chunking=chunking).session.ensure_levels(""))
    return [a for a in view.arrays.values() if isinstance(a, FabricatedArray) and a.grid]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["sharded", "windowed", "ragged"]), st.sampled_from(["shard", "leaf"]),
       st.data())
def test_a_run_of_coordinate_chunks_equals_them_one_by_one(name, chunking, data):
    """The export computes coordinate chunks in runs: each equals the chunk the store
    serves (``fabricate``), including the zero-padded last one and the window labels."""
    array = data.draw(st.sampled_from(_coordinates(name, chunking)))
    total = array.grid[0]
    first = data.draw(st.integers(0, total - 1))
    stop = data.draw(st.integers(first + 1, total))
    want = [bytes(array.fabricate((i,))) for i in range(first, stop)]
    assert array.fabricate_run(first, stop) == want


def test_published_takes_the_longest_prefix_whatever_the_order():
    rules = [("file:///h/", "s3://a/"), ("file:///h/4/", "s3://b/"), ("file:///x", "s3://c/")]
    for order in (rules, rules[::-1]):
        publish = published(order)
        assert publish("file:///h/4/1.zarr/c/0") == "s3://b/1.zarr/c/0"
        assert publish("file:///h/-4/1.zarr/c/0") == "s3://a/-4/1.zarr/c/0"
        assert publish("file:///other/c/0") == "file:///other/c/0"


def test_a_truncated_chunk_fails_the_export_naming_it(hive_copy, tmp_path):
    hive = hive_copy("bare_versioned")
    chunk = next(hive.rglob("7/count/c/0"))
    chunk.write_bytes(chunk.read_bytes()[:-8])
    rel = chunk.relative_to(hive).as_posix()
    with pytest.raises(TruncatedChunkError, match=f"{rel}: an uncompressed chunk of"):
        export_refs(hive, "mdim-refs", tmp_path / "refs.sqlite")
    assert not (tmp_path / "refs.sqlite").exists()


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
def test_a_corrupt_shard_index_fails_the_export_naming_it(hive_copy, tmp_path, chunking):
    hive = hive_copy("sharded")
    chunk = next(hive.rglob("7/count/c/0"))
    data = bytearray(chunk.read_bytes())
    data[-20] ^= 0xFF  # inside the index: its crc32c no longer checks
    chunk.write_bytes(bytes(data))
    rel = chunk.relative_to(hive).as_posix()
    with pytest.raises(TruncatedChunkError, match=f"{rel}: the shard index does not check"):
        export_refs(hive, "mdim-refs", tmp_path / "refs.sqlite", chunking=chunking)
