"""Every fixture reads value-identically through S3 (moto) and plain HTTP."""

from __future__ import annotations

import shutil
import warnings

import pytest
import zarr
from support.hives import fixture_roots
from support.servers import (
    FIXTURES,
    LoopbackServer,
    StaticFiles,
    array_groups,
    assert_same_read,
    http_options,
    s3_options,
    s3_url,
    window_labels,
)

from moczarr_store import HiveWarning, MocHiveStore, ObjectReadError

pytest_plugins = ["support.servers"]

ALL = [root.name for root in fixture_roots()]
BARE = [n for n in ALL if (FIXTURES / n / "morton_hive.json").exists()]
WINDOWED = ["windowed", "windowed_explicit"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


@pytest.mark.parametrize("anonymous", [False, True], ids=["signed", "anonymous"])
@pytest.mark.parametrize("name", ALL)
def test_every_fixture_reads_identically_over_s3(s3_server, name, anonymous):
    local = MocHiveStore(FIXTURES / name)
    remote = MocHiveStore(s3_url(name),
                          storage_options=s3_options(s3_server.url, anonymous=anonymous))
    groups = array_groups(local)
    assert groups == array_groups(remote)
    for group in groups:
        assert_same_read(remote, local, group)
    assert remote.request_stats.counts["get"] > 0


@pytest.mark.parametrize("name", BARE)
def test_every_bare_fixture_reads_identically_over_http(http_server, name):
    local = MocHiveStore(FIXTURES / name)
    remote = MocHiveStore(f"{http_server.url}/{name}", storage_options=http_options())
    for group in array_groups(local):
        assert_same_read(remote, local, group)
    assert remote.request_stats.counts["get"] > 0


@pytest.mark.parametrize("name", WINDOWED)
def test_window_scoped_views_read_identically(s3_server, http_server, name):
    labels = window_labels(MocHiveStore(FIXTURES / name))
    assert len(labels) == 2
    for label in labels:
        local = MocHiveStore(FIXTURES / name, window=label)
        remotes = [
            MocHiveStore(s3_url(name), window=label, storage_options=s3_options(s3_server.url)),
            MocHiveStore(f"{http_server.url}/{name}", window=label, storage_options=http_options()),
        ]
        for group in array_groups(local):
            for remote in remotes:
                assert_same_read(remote, local, group)


def test_anonymous_read_of_a_private_bucket_is_refused_naming_the_object(s3_server):
    s3_server.client.create_bucket(Bucket="private")
    s3_server.put("bare_versioned/morton_hive.json",
                  (FIXTURES / "bare_versioned/morton_hive.json").read_bytes(), bucket="private")
    store = MocHiveStore("s3://private/bare_versioned", storage_options=s3_options(s3_server.url,
                                                                     anonymous=True))
    with pytest.raises(ObjectReadError, match="morton_hive.json from .*: PermissionDenied"):
        zarr.open_group(store, mode="r")


# -- plain HTTP cannot list ---------------------------------------------------------------------


def test_http_multiproduct_root_needs_a_listing(http_server):
    http_server.reset()
    store = MocHiveStore(f"{http_server.url}/multiproduct", storage_options=http_options())
    with pytest.raises(ValueError, match="no morton_hive.json at the root, and the root cannot "
                                         "be listed to find products"):
        zarr.open_group(store, mode="r")
    assert {e.method for e in http_server.log} <= {"GET", "PROPFIND"}


@pytest.fixture
def http_copy(tmp_path):
    """A copy of a fixture behind its own static HTTP server."""
    servers = []

    def make(name: str):
        shutil.copytree(FIXTURES / name, tmp_path / name)
        server = LoopbackServer(StaticFiles(tmp_path))
        servers.append(server)
        return tmp_path / name, server

    yield make
    for server in servers:
        server.stop()


def _open_without_moc(http_copy):
    root, server = http_copy("bare_versioned")
    (root / "coverage.moc").unlink()
    store = MocHiveStore(f"{server.url}/bare_versioned", storage_options=http_options())
    with pytest.warns(HiveWarning, match="root coverage coverage.moc is missing"), \
            pytest.raises(Exception) as caught:
        zarr.open_group(store, mode="r")
    # the manifest, aggregation.yaml (concurrent with the rest), the coverage, the listing
    assert sorted(e.method for e in server.log) == ["GET", "GET", "GET", "PROPFIND"]
    return caught.value


def test_http_without_root_coverage_fails_at_open(http_copy):
    """Without listing, the root coverage.moc is required: the walk cannot run."""
    err = _open_without_moc(http_copy)
    text = str(err)
    assert "PROPFIND" in text and "405" in text and "/bare_versioned" in text


def test_http_without_root_coverage_error_names_the_problem(http_copy):
    err = _open_without_moc(http_copy)
    assert isinstance(err, ValueError)
    assert "coverage.moc" in str(err) and "cannot be listed" in str(err)


def test_http_verify_open_reads_without_listing(http_server):
    local = MocHiveStore(FIXTURES / "bare_versioned", verify="open")
    remote = MocHiveStore(f"{http_server.url}/bare_versioned", verify="open",
                          storage_options=http_options())
    assert_same_read(remote, local, "atl06/o7")
