"""kerchunk JSON and Icechunk exports (the [export] extra, Python >= 3.12): every fixture
reads back value for value; sharding survives; a changed object fails the Icechunk read;
remapped exports read from a copy of the hive (local, and moto S3 on loopback)."""

from __future__ import annotations

import json
import shutil
import sys
import warnings

import pytest

if sys.version_info < (3, 12):  # where it installs, a missing extra fails the imports below
    pytest.skip("the [export] extra needs Python >= 3.12", allow_module_level=True)

import icechunk  # noqa: E402
import virtualizarr  # noqa: E402, F401
import xarray as xr  # noqa: E402
import zarr  # noqa: E402
from support.hives import FIXTURES, fixture_roots  # noqa: E402
from support.refs_read import (  # noqa: E402
    assert_same,
    icechunk_store,
    icechunk_values,
    kerchunk_values,
    local_access,
    mdim_values,
    store_values,
    walk,
)
from support.servers import BUCKET, CREDENTIALS, REGION, s3_options  # noqa: E402

from moczarr_store import HiveWarning, MocHiveStore  # noqa: E402
from moczarr_store.refs import export_refs  # noqa: E402

pytest_plugins = ["support.servers"]
NAMES = [p.name for p in fixture_roots()]
CHUNKINGS = ["auto", "shard", "leaf", "inner"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("name", NAMES)
def test_kerchunk_json_reads_back_identically(tmp_path, name, chunking):
    out = tmp_path / "refs.json"
    export_refs(FIXTURES / name, "kerchunk-json", out, chunking=chunking)
    assert_same(kerchunk_values(out), store_values(FIXTURES / name))


@pytest.mark.parametrize("name", ["multiproduct", "pyramid2", "windowed_explicit"])
def test_kerchunk_json_reads_back_without_listing(tmp_path, name):
    """Each group's ``zarr.json`` carries its members' metadata (consolidated), so zarr reads
    the whole hierarchy through a store that cannot list (zarr 3.2 and 3.3 find no member
    below the root when they list fsspec's reference file system)."""
    import fsspec
    from zarr.storage import FsspecStore

    class Unlisted(FsspecStore):
        supports_listing = False

        def list(self):
            raise AssertionError("listed")

        def list_prefix(self, prefix):
            raise AssertionError(f"listed {prefix!r}")

        def list_dir(self, prefix):
            raise AssertionError(f"listed {prefix!r}")

    out = tmp_path / "refs.json"
    export_refs(FIXTURES / name, "kerchunk-json", out)
    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file", asynchronous=True)
    group = zarr.open_group(Unlisted(fs, read_only=True, path=""), mode="r", zarr_format=3)
    assert_same({p: a[...] for p, a in walk(group).items()}, store_values(FIXTURES / name))


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("name", NAMES)
def test_icechunk_reads_back_identically(tmp_path, name, chunking):
    out = tmp_path / "repo"
    export_refs(FIXTURES / name, "icechunk", out, chunking=chunking)
    assert_same(icechunk_values(out, local_access(FIXTURES / name)),
                store_values(FIXTURES / name))


@pytest.mark.parametrize("name", NAMES)
def test_icechunk_reads_through_xarray(tmp_path, name):
    out = tmp_path / "repo"
    export_refs(FIXTURES / name, "icechunk", out)
    store = icechunk_store(out, local_access(FIXTURES / name))
    hive = MocHiveStore(FIXTURES / name)
    levels = sorted({p.rsplit("/", 1)[0] for p in store_values(FIXTURES / name)})
    for level in levels:
        got = xr.open_zarr(store, group=level, consolidated=False).load()
        want = xr.open_zarr(hive, group=level).load()
        xr.testing.assert_equal(got, want)


def test_sharding_is_declared_in_published_metadata(tmp_path):
    export_refs(FIXTURES / "sharded", "kerchunk-json", tmp_path / "refs.json")
    refs = json.loads((tmp_path / "refs.json").read_text())["refs"]
    doc = json.loads(refs["atl06/o7/count/zarr.json"])
    assert [c["name"] for c in doc["codecs"]] == ["sharding_indexed"]
    assert doc["codecs"][0]["configuration"]["chunk_shape"] == [4]
    export_refs(FIXTURES / "sharded", "icechunk", tmp_path / "repo")
    group = zarr.open_group(icechunk_store(tmp_path / "repo", local_access(FIXTURES / "sharded")),
                            mode="r")
    meta = group["atl06/o7/count"].metadata.to_dict()
    assert [c["name"] for c in meta["codecs"]] == ["sharding_indexed"]


def test_a_changed_object_fails_the_icechunk_read(tmp_path):
    hive = shutil.copytree(FIXTURES / "sharded", tmp_path / "hive")  # copy2: mtimes kept
    out = tmp_path / "repo"
    export_refs(hive, "icechunk", out)
    access = local_access(hive)
    assert_same(icechunk_values(out, access), store_values(hive))
    changed = next(hive.rglob("7/count/c/0"))
    changed.write_bytes(changed.read_bytes())  # the same bytes, written again
    group = zarr.open_group(icechunk_store(out, access), mode="r")
    with pytest.raises(icechunk.IcechunkError, match="checksum of the object .* has changed"):
        group["atl06/o7/count"][...]
    group["atl06/o7/h_mean"][...]  # untouched objects still read


def test_without_checksums_a_changed_object_reads(tmp_path):
    hive = shutil.copytree(FIXTURES / "bare_versioned", tmp_path / "hive")
    out = tmp_path / "repo"
    export_refs(hive, "icechunk", out, checksums=False)
    for path in hive.rglob("7/count/c/0"):
        path.write_bytes(path.read_bytes())
    assert_same(icechunk_values(out, local_access(hive)), store_values(hive))


def _unchecked_warnings(export) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export()
    return [str(w.message) for w in caught if "unversioned leaves" in str(w.message)]


def test_references_into_objects_rewritten_in_place_warn_where_nothing_checks_them(tmp_path):
    """An unversioned leaf is rewritten in place by a later run: kerchunk JSON (or Icechunk
    without checksums) would then hand a reader other bytes at the same ranges, unchecked.
    One warning names those objects; run-* versions never change, and Icechunk's checksums
    refuse a changed object."""
    legacy = FIXTURES / "legacy"
    (message,) = _unchecked_warnings(
        lambda: export_refs(legacy, "kerchunk-json", tmp_path / "a.json"))
    assert message.startswith("12 referenced object(s) belong to unversioned leaves, which a "
                              "later run rewrites in place (-4/1/1/3/3/1/-411331.zarr/7/count/")
    assert "kerchunk JSON has no checksum" in message
    (message,) = _unchecked_warnings(
        lambda: export_refs(legacy, "icechunk", tmp_path / "b", checksums=False))
    assert "--no-checksums" in message
    assert not _unchecked_warnings(lambda: export_refs(legacy, "icechunk", tmp_path / "c"))
    assert not _unchecked_warnings(
        lambda: export_refs(FIXTURES / "bare_versioned", "kerchunk-json", tmp_path / "d.json"))
    report = export_refs(FIXTURES / "legacy_versioned", "mdim-refs", tmp_path / "e.sqlite")
    counts = report.counts
    assert 0 < counts["chunks_referenced_rewritable"] < counts["chunks_referenced"]


@pytest.mark.parametrize("fmt", ["kerchunk-json", "icechunk"])
def test_remap_to_a_local_copy_reads_there(tmp_path, fmt):
    first = shutil.copytree(FIXTURES / "windowed", tmp_path / "a" / "hive")
    copy = tmp_path / "b" / "hive"
    out = tmp_path / "export"
    export_refs(first, fmt, out, remap=[f"{first.resolve().as_uri()}/={copy.resolve().as_uri()}/"])
    shutil.copytree(first, copy)  # mtimes kept: the Icechunk checksums hold
    want = store_values(copy)
    shutil.rmtree(first)
    got = kerchunk_values(out) if fmt == "kerchunk-json" else icechunk_values(
        out, local_access(copy))
    assert_same(got, want)


@pytest.mark.parametrize("name", ["sharded", "windowed_explicit", "mixed"])
def test_remap_to_s3_reads_there(tmp_path, s3_server, name):
    """Exported from the local hive, published at its copy in moto's S3 (uploaded after
    the files were written, so without checksums); read there by each format's reader."""
    root = (FIXTURES / name).resolve().as_uri() + "/"
    target = f"s3://{BUCKET}/pre/{name}/"
    want = store_values(FIXTURES / name)
    config = icechunk.s3_store(region=REGION, endpoint_url=s3_server.url, allow_http=True,
                               force_path_style=True)
    export_refs(FIXTURES / name, "icechunk", tmp_path / "repo", remap={root: target},
                checksums=False, containers={target: config})
    creds = icechunk.containers_credentials({target: icechunk.s3_static_credentials(**CREDENTIALS)})
    assert_same(icechunk_values(tmp_path / "repo", creds), want)
    http = f"{s3_server.url}/{BUCKET}/pre/{name}/"  # the bucket is public: path-style HTTP
    export_refs(FIXTURES / name, "kerchunk-json", tmp_path / "refs.json", remap={root: http})
    assert_same(kerchunk_values(tmp_path / "refs.json", "http"), want)
    export_refs(FIXTURES / name, "mdim-refs", tmp_path / "refs.sqlite", remap={root: target})

    def read(url: str, offset: int, size: int) -> bytes:
        key = url[len(f"s3://{BUCKET}/") :]
        body = s3_server.client.get_object(Bucket=BUCKET, Key=key,
                                           Range=f"bytes={offset}-{offset + size - 1}")
        return body["Body"].read()

    assert_same(mdim_values(tmp_path / "refs.sqlite", read), want)


@pytest.mark.parametrize(("name", "changed", "layouts", "chunk"), [
    ("sharded", "atl06/o7/count", {"atl06/o7": "shard"}, "/7/count/c/0"),
    ("multiproduct", "atl06_a/o6/count", {"atl06_a/o6": "leaf", "atl06_b/o7": "shard"},
     "/6/count/c/0"),  # a leaf-layout reference: a payload range of the changed object
])
def test_s3_source_refs_carry_etags_and_a_changed_object_fails(tmp_path, s3_server, name,
                                                               changed, layouts, chunk):
    prefix = f"refs-etag/{name}"
    s3_server.upload_tree(FIXTURES / name, prefix)
    source = f"s3://{BUCKET}/{prefix}"
    options = {"storage_options": s3_options(s3_server.url)}
    config = icechunk.s3_store(region=REGION, endpoint_url=s3_server.url, allow_http=True,
                               force_path_style=True)
    report = export_refs(source, "mdim-refs", tmp_path / "refs.sqlite", **options)
    assert report.layouts == layouts  # decided on S3 as locally
    import sqlite3

    etags = sqlite3.connect(tmp_path / "refs.sqlite").execute(
        "SELECT count(*), count(etag) FROM sources").fetchone()
    assert etags[0] > 0 and etags[0] == etags[1]
    export_refs(source, "icechunk", tmp_path / "repo", containers={source + "/": config},
                **options)
    access = icechunk.containers_credentials(
        {source + "/": icechunk.s3_static_credentials(**CREDENTIALS)})
    assert_same(icechunk_values(tmp_path / "repo", access), store_values(FIXTURES / name))
    key = next(k for k in s3_server.keys(prefix) if k.endswith(chunk))
    data = s3_server.get(key)
    s3_server.put(key, data[:-1] + bytes([data[-1] ^ 1]))  # a new ETag (the last byte flipped)
    group = zarr.open_group(icechunk_store(tmp_path / "repo", access), mode="r")
    with pytest.raises(icechunk.IcechunkError, match="checksum"):
        group[changed][...]
