"""``moczarr-store serve``: the command, its worker processes, its logs, its load test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import warnings
from asyncio import run as sync
from pathlib import Path

import psutil
import pytest
from support import processes
from support.serving import CHUNK, FIXTURES
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore


def local_bytes(hive, key: str) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sync(MocHiveStore(hive).get(key, default_buffer_prototype())).to_bytes()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def test_bad_source_fails_before_serving(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "moczarr_store.cli", "serve", str(tmp_path / "nothing"),
         "--port", str(processes.free_port())],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 3  # no hive at the source
    assert done.stderr.startswith("error: ") and "nothing" in done.stderr


def test_a_port_in_use_is_a_usage_error_not_a_missing_hive():
    """uvicorn ends with status 3 when it cannot listen, which is this command's "no hive
    at the source"."""
    with processes.served(FIXTURES / "sharded") as (url, _):
        port = url.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-m", "moczarr_store.cli", "serve", str(FIXTURES / "sharded"),
             "--port", port], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"error: the server did not start on 127.0.0.1:{port} (the reason is logged above)")
    assert "address already in use" in done.stderr.lower()


def test_serves_on_loopback_with_an_access_log(tmp_path):
    log = tmp_path / "serve.log"
    hive = FIXTURES / "sharded"
    with processes.served(hive, "--access-log", log=log) as (url, pid):
        assert get(f"{url}/{CHUNK}") == local_bytes(hive, CHUNK)
        listening = {c.laddr.ip for c in psutil.Process(pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN}
        assert listening == {"127.0.0.1"}
    text = log.read_text()
    assert f'"GET /{CHUNK}" 200' in text and "moczarr_store.serve.access" in text


def test_no_access_log_by_default(tmp_path):
    """Without ``--access-log`` requests are not logged; what goes wrong still is."""
    log = tmp_path / "serve.log"
    hive = tmp_path / "hive"
    shutil.copytree(FIXTURES / "sharded", hive)
    for chunk in hive.glob("**/run-*/7/h_mean/c/*"):  # a shard's index fails its crc32c
        data = bytearray(chunk.read_bytes())
        data[-1] ^= 0xFF
        chunk.write_bytes(bytes(data))
    with processes.served(hive, "--chunking", "leaf", log=log) as (url, _pid):
        assert json.loads(get(f"{url}/atl06/zarr.json"))["node_type"] == "group"
        with pytest.raises(urllib.error.HTTPError) as failed:
            get(f"{url}/{CHUNK}")
        assert failed.value.code == 502
    text = log.read_text()
    assert "moczarr_store.serve.access" not in text and "atl06/zarr.json" not in text
    assert f"ERROR moczarr_store.serve: {CHUNK}: " in text


def test_several_workers(tmp_path):
    """Each worker process builds its own app from the environment, presenting the hive
    the command opened (a file they all read)."""
    hive = FIXTURES / "bare_versioned"
    with processes.served(hive, "--workers", "2", log=tmp_path / "log") as (url, pid):
        for _ in range(4):
            assert get(f"{url}/{CHUNK}") == local_bytes(hive, CHUNK)
            assert get(f"{url}/zarr.json") == local_bytes(hive, "zarr.json")
        workers = [p for p in psutil.Process(pid).children(recursive=True)
                   if "multiprocessing" in " ".join(p.cmdline())]
        assert len(workers) >= 2
        kept = {p.environ().get("MOCZARR_STORE_OPENED_HIVE") for p in workers}  # one, adopted
        (opened,) = kept
        assert opened is not None and Path(opened).is_file()
    assert not Path(opened).exists()  # removed when the server stops


def test_sphere_geometry_reaches_every_worker(tmp_path):
    """``--geometry sphere`` (chunk indices that survive a restart on a grown hive) is
    what each worker presents."""
    hive = FIXTURES / "bare_versioned"
    with processes.served(hive, "--geometry", "sphere", "--workers", "2",
                           log=tmp_path / "log") as (url, pid):
        for _ in range(4):
            root = json.loads(get(f"{url}/zarr.json"))
            assert root["attributes"]["morton_hive_store"]["geometry"] == "sphere"
            count = json.loads(get(f"{url}/atl06/o7/count/zarr.json"))
            assert count["shape"] == [12 * 4**7]  # the sphere's cells at order 7
        workers = [p for p in psutil.Process(pid).children(recursive=True)
                   if "multiprocessing" in " ".join(p.cmdline())]
        assert {p.environ().get("MOCZARR_STORE_GEOMETRY") for p in workers} == {"sphere"}


def test_uvicorn_factory_command():
    """The deployment the README documents: uvicorn's own command, the app from the
    environment, this package's protocol."""
    import os

    hive = FIXTURES / "sharded"
    port = processes.free_port()
    env = {**os.environ, "MOCZARR_STORE_SOURCE": str(hive), "MOCZARR_STORE_CHUNKING": "shard"}
    command = [sys.executable, "-m", "uvicorn", "--factory", "moczarr_store.serve:app_from_env",
               "--http", "moczarr_store.serve.protocols:BoundedHttpToolsProtocol",
               "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with processes.running(command, url, env=env):
        root = json.loads(get(f"{url}/zarr.json"))
        assert root["attributes"]["morton_hive_store"]["chunking"] == "shard"
