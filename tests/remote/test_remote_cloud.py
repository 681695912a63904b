"""Every fixture reads value-identically through Google Cloud Storage (fake-gcs-server)
and Azure Blob (Azurite) on loopback, as through S3; secrets never reach a message.

The local copy of each fixture is the oracle (values, dtypes, attributes), and its read
counts the requests: the same full read through an emulator makes the same requests, and
the emulator's front saw exactly those.
"""

from __future__ import annotations

import base64
import warnings

import pytest
import zarr
from support.cloud_emulators import AZURE_KEY
from support.hives import fixture_roots
from support.servers import FIXTURES, array_groups, assert_same_read

from moczarr_store import HiveWarning, MocHiveError, MocHiveStore

pytest_plugins = ["support.servers", "support.cloud_emulators"]

ALL = [root.name for root in fixture_roots()]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


def _reads_as_local(server, name: str) -> None:
    local = MocHiveStore(FIXTURES / name)
    remote = MocHiveStore(server.url(name), **server.options())
    server.front.reset()
    groups = array_groups(local)
    assert groups == array_groups(remote)
    for group in groups:
        assert_same_read(remote, local, group)
    counted = MocHiveStore(FIXTURES / name)  # the same reads, counted on the local copy
    array_groups(counted)
    for group in groups:
        assert_same_read(counted, local, group)
    assert remote.request_stats.counts == counted.request_stats.counts
    assert len(server.front.log) == remote.request_stats.total > 0


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_reads_identically_over_gcs(gcs_emulator, name):
    _reads_as_local(gcs_emulator, name)


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_reads_identically_over_azure(azurite, name):
    _reads_as_local(azurite, name)


def test_azure_errors_never_print_the_account_key(azurite):
    """A missing hive, a wrong key and a malformed key fail naming the object or the
    option, never the key."""
    with pytest.raises(MocHiveError) as missing:
        zarr.open_group(MocHiveStore(azurite.url("no_such_hive"), **azurite.options()),
                        mode="r")
    wrong_key = base64.b64encode(b"not the account key, but a key of the right size" * 2)
    malformed_key = "=" + AZURE_KEY[::-1]
    failures = [(missing.value, AZURE_KEY)]
    for key in (wrong_key.decode(), malformed_key):
        with pytest.raises(MocHiveError) as refused:
            zarr.open_group(MocHiveStore(azurite.url("pyramid1"),
                                         **{**azurite.options(), "account_key": key}), mode="r")
        failures.append((refused.value, key))
    for err, key in failures:
        text = f"{err} {err!r} {err.__cause__!r}"
        assert key not in text and key[1:21] not in text, text
    assert "no_such_hive" in str(failures[0][0])
    assert "morton_hive.json" in str(failures[1][0]) and "403" in str(failures[1][0])


def _without_allow_http(options: dict) -> dict:
    client = {k: v for k, v in options["client_options"].items() if k != "allow_http"}
    return {**options, "client_options": client}


def test_an_http_endpoint_needs_no_allow_http_on_gcs_or_azure(gcs_emulator, azurite):
    """A plain ``http://`` endpoint (GCS ``base_url``, Azure ``endpoint``) sets
    ``allow_http`` itself, as it does for S3; before, obstore failed with an opaque
    ``builder error``."""
    local = MocHiveStore(FIXTURES / "pyramid1")
    for server in (gcs_emulator, azurite):
        remote = MocHiveStore(server.url("pyramid1"),
                              storage_options=_without_allow_http(server.options()))
        assert remote.backend.options["client_options"]["allow_http"] is True
        for group in array_groups(local)[:2]:
            assert_same_read(remote, local, group)


def test_the_command_line_endpoint_reaches_gcs_and_azure(gcs_emulator, azurite, capsys):
    """``--endpoint http://...`` on ``gs://`` and ``az://`` sources, no ``allow_http``
    given: the hive is read as the local copy."""
    from moczarr_store.cli import EXIT_OK, main

    assert main(["inspect", str(FIXTURES / "pyramid1")]) == EXIT_OK
    want = [line for line in capsys.readouterr().out.splitlines()
            if not line.startswith(("hive ", "backend requests"))]
    account = azurite.options()
    runs = [["inspect", gcs_emulator.url("pyramid1"), "--anon", "--endpoint",
             gcs_emulator.front.url],
            ["inspect", azurite.url("pyramid1"), "--endpoint", account["endpoint"],
             "-o", f"account_name={account['account_name']}",
             "-o", f"account_key={account['account_key']}"]]
    for argv in runs:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == EXIT_OK, err
        assert [line for line in out.splitlines()
                if not line.startswith(("hive ", "backend requests"))] == want
