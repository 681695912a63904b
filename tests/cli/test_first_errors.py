"""The first mistakes a user makes each get one line that says what to do."""

from __future__ import annotations

import http.server
import logging
import os
import socket
import subprocess
import sys
import threading

import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES

from moczarr_store import MocHiveStore, NotAHiveError, ObjectReadError
from moczarr_store.hints import CREDENTIALS, credentials


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moczarr_store.cli", *args],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


class _Refusing(http.server.BaseHTTPRequestHandler):
    """An instance-metadata service (and S3) that refuses everything with a 403."""

    asked: list[str] = []

    def _refuse(self) -> None:
        type(self).asked.append(f"{self.command} {self.path}")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = _refuse

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def metadata_service(monkeypatch):
    """A loopback stand-in for the instance-metadata address, which tests never contact;
    no AWS variable is set, so obstore asks it for credentials."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    _Refusing.asked = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_s3_without_credentials_names_anon_and_the_variables(metadata_service):
    store = MocHiveStore("s3://bucket/hive", endpoint=metadata_service, region="us-east-1",
                         metadata_endpoint=metadata_service, retry_config={"max_retries": 0})
    with pytest.raises(ObjectReadError) as caught:
        zarr.open_group(store, mode="r")
    assert any("/latest/api/token" in a for a in _Refusing.asked)  # the path under test
    message = str(caught.value)
    assert message.startswith("reading morton_hive.json from s3://bucket/hive: no credentials")
    assert "--anon" in message and "AWS_ACCESS_KEY_ID" in message and "\n" not in message


def test_s3_without_credentials_on_the_command_line(metadata_service):
    done = cli("inspect", "s3://bucket/hive", "--endpoint", metadata_service, "--region",
               "us-east-1", "--retries", "0", "-o", f"metadata_endpoint={metadata_service}")
    assert done.returncode == 4
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--anon" in lines[0]


def test_the_credentials_hint_is_for_metadata_errors_only():
    real = ("Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token "
            "in 1.2ms - Server returned non-2xx status code: 403 Forbidden")
    assert credentials(real) == CREDENTIALS
    assert credentials("Generic S3 error: 403 Forbidden: AccessDenied") is None


def test_a_file_as_the_hive_root_names_the_directory():
    manifest = FIXTURES / "windowed" / "morton_hive.json"
    with pytest.raises(NotAHiveError, match="is a file, not a directory: give .*windowed, "
                       "the directory holding it"):
        zarr.open_group(MocHiveStore(manifest), mode="r")
    done = cli("inspect", str(FIXTURES / "README.md"))
    assert done.returncode == 3
    assert done.stderr.strip().endswith(
        "is a file, not a directory: give the directory that holds the hive's "
        "morton_hive.json (or its products)")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        zarr.open_group(MocHiveStore(FIXTURES / "no-such-hive"), mode="r")


def test_a_misspelt_group_logs_the_groups_there_are(caplog):
    store = MocHiveStore(FIXTURES / "windowed", computed_orders="none")  # one order
    with caplog.at_level(logging.WARNING, logger="moczarr_store"):
        for _ in range(2):
            with pytest.raises(FileNotFoundError):
                zarr.open_group(store, path="atl06/o8", mode="r")
        with pytest.raises(FileNotFoundError):
            zarr.open_array(store, path="atl06/o7/h_maen", mode="r")
    hints = [r.getMessage() for r in caplog.records if r.name == "moczarr_store"]
    assert hints == [
        f"{store!r}: no group or array 'atl06/o8' in this hive (did you mean 'atl06/o7'?); "
        "its groups: atl06, atl06/o7",
        f"{store!r}: no group or array 'atl06/o7/h_maen' in this hive (did you mean "
        "'atl06/o7/h_mean'?); its groups: atl06, atl06/o7",
    ]  # once per node, however often zarr asks


def test_a_misspelt_group_through_xarray_names_the_groups_there_are(caplog):
    # xarray's default open asks the store for the group (not the root's consolidated
    # metadata, where zarr raised a bare KeyError without asking): the hint is logged,
    # every level is named, read or not, and zarr's error follows
    store = MocHiveStore(FIXTURES / "pyramid2")
    with (caplog.at_level(logging.WARNING, logger="moczarr_store"),
          pytest.raises(FileNotFoundError, match="'atl06/o3x'")):
        xr.open_zarr(store, group="atl06/o3x")
    hints = [r.getMessage() for r in caplog.records if r.name == "moczarr_store"]
    assert hints == [
        f"{store!r}: no group or array 'atl06/o3x' in this hive (did you mean 'atl06/o3'?); "
        "its groups: atl06, atl06/o0, atl06/o1, atl06/o2, atl06/o3, atl06/o4",
    ]


def test_the_root_without_group_says_which_group_to_open():
    store = MocHiveStore(FIXTURES / "multiproduct")
    ds = xr.open_zarr(store)
    assert not ds.data_vars
    assert ds.attrs["hint"].startswith("open a group: group='atl06_a/o6' (all: ")
    product = xr.open_zarr(store, group="atl06_b")
    assert product.attrs["hint"].startswith("open a group: group='atl06_b/o7'")
    assert "hint" not in xr.open_zarr(store, group="atl06_b/o7").attrs


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason="Icechunk exports need Python 3.12 (icechunk 2, VirtualiZarr 2.6)")
def test_an_icechunk_export_prints_one_line_and_no_rust_warnings(tmp_path):
    done = cli("refs", str(FIXTURES / "sharded"), "--format", "icechunk",
               str(tmp_path / "repo"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("icechunk ") and done.stdout.count("\n") == 1


def test_refs_offers_the_formats_this_python_can_write():
    usage = cli("refs", "--help").stdout
    offered = usage.split("--format {", 1)[1].split("}", 1)[0].split(",")
    if sys.version_info >= (3, 12):
        assert offered == ["icechunk", "kerchunk-json", "mdim-refs"]
        return
    assert offered == ["mdim-refs"]
    done = cli("refs", str(FIXTURES / "sharded"), "--format", "icechunk", "out")
    assert done.returncode == 2
    assert "icechunk needs Python 3.12 or newer" in done.stderr


@pytest.fixture
def closed_port() -> int:
    """A loopback port where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_http_url_where_nothing_listens_says_so(closed_port):
    url = f"http://127.0.0.1:{closed_port}/hive"
    store = MocHiveStore(url, storage_options={"retry_config": {"max_retries": 0}})
    with pytest.raises(ObjectReadError) as caught:
        zarr.open_group(store, mode="r")
    assert str(caught.value).endswith(
        f"error sending request; nothing is listening at 127.0.0.1:{closed_port} (connection "
        "refused): is the server running, and are the host and port right?")
    done = cli("inspect", url, "--retries", "0")
    assert done.returncode == 4
    assert f"nothing is listening at 127.0.0.1:{closed_port}" in done.stderr


def test_the_unreachable_hint_is_for_send_errors_only(closed_port):
    from moczarr_store.hints import unreachable

    assert unreachable(f"http://127.0.0.1:{closed_port}/h", {}, "HTTP 404 Not Found") is None
    assert unreachable("s3://bucket/h", {}, "error sending request") is None  # no endpoint
    assert "connection refused" in unreachable(
        "s3://bucket/h", {"endpoint": f"http://127.0.0.1:{closed_port}"},
        "error sending request")


@pytest.mark.parametrize("command", [["verify", "--sample"],
                                     ["refs", "--format", "mdim-refs", "SAMPLE", "OUT"]])
def test_a_misspelt_group_on_the_command_line_names_the_closest(command, tmp_path):
    from moczarr_store import sample_hive

    args = [sample_hive() if a == "SAMPLE" else str(tmp_path / "x") if a == "OUT" else a
            for a in command]
    done = cli(*args, "--group", "atl06/o5")
    assert done.returncode == 2
    assert done.stderr == (
        "error: group 'atl06/o5' names no group of the hive (did you mean 'atl06/o4' or "
        "'atl06/o3' or 'atl06/o2'?); its groups: atl06, atl06/all_time, atl06/all_time/o0, "
        "atl06/all_time/o1, atl06/all_time/o2, atl06/all_time/o3, atl06/all_time/o4, "
        "atl06/o0, atl06/o1, atl06/o2, atl06/o3, atl06/o4\n")
