"""Exports read back where the source was: each format records the endpoint, region and
anonymous access the export read the hive with (never a secret), and a fresh process
with no AWS variable reads every array back from moto's S3 on loopback with that and its
own credentials, given in code."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import pytest

if sys.version_info < (3, 12):  # where it installs, a missing extra fails the imports below
    pytest.skip("the [export] extra needs Python >= 3.12", allow_module_level=True)

from support.hives import FIXTURES  # noqa: E402
from support.refs_read import assert_same, store_values  # noqa: E402
from support.servers import BUCKET, CREDENTIALS, REGION, http_options, s3_options  # noqa: E402

from moczarr_store import HiveWarning  # noqa: E402
from moczarr_store.refs import export_refs  # noqa: E402
from moczarr_store.refs.access import ATTRIBUTE, source_access  # noqa: E402

pytest_plugins = ["support.servers"]

# A reader that knows only the export and its credentials (argv[4], argv[5]): no AWS
# variable, no test helper. Each format's arrays are pickled to the file named by argv[3].
READER = r"""
import json, pickle, sqlite3, sys
from urllib.parse import unquote, urlsplit

import obstore, zarr
from zarr.buffer import cpu
from zarr.storage import MemoryStore

fmt, out, dump, key, secret = sys.argv[1:6]


def walk(group, prefix=""):
    found = {}
    for name, node in group.members():
        if isinstance(node, zarr.Array):
            found[prefix + name] = node[...]
        else:
            found.update(walk(node, prefix + name + "/"))
    return found


def s3(access):
    # obstore reaches the bucket with what the export recorded
    return obstore.store.S3Store(
        urlsplit(access["url"]).netloc, endpoint=access.get("endpoint"),
        region=access.get("region"), skip_signature=access["anonymous"],
        access_key_id=key, secret_access_key=secret, client_options={"allow_http": True})


def ranged(store, url, offset, size):
    key = unquote(urlsplit(url).path.lstrip("/"))
    return bytes(obstore.get_range(store, key, start=offset, length=size))


if fmt == "icechunk":
    import icechunk

    storage = icechunk.local_filesystem_storage(out)
    prefixes = icechunk.Repository.fetch_config(storage).virtual_chunk_containers
    s3_access = icechunk.s3_static_credentials(access_key_id=key, secret_access_key=secret)
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=(
        icechunk.containers_credentials({
            p: s3_access if p.startswith("s3://") else icechunk.credentials.HttpAccess
            for p in prefixes})))
    values = walk(zarr.open_group(repo.readonly_session("main").store, mode="r"))
elif fmt == "kerchunk-json":
    refs = json.load(open(out))["refs"]
    access = json.loads(refs["zarr.json"])["attributes"]["moczarr_store_source"]
    store = s3(access)
    docs = {}
    for key, value in refs.items():
        if isinstance(value, list):
            docs[key] = ranged(store, *value)
        elif value.startswith("base64:"):
            import base64
            docs[key] = base64.b64decode(value[len("base64:"):])
        else:
            docs[key] = value.encode()
    group = MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in docs.items()})
    values = walk(zarr.open_group(group, mode="r"))
else:
    db = sqlite3.connect(out)
    attrs = db.execute("SELECT attrs FROM groups WHERE path = ''").fetchone()[0]
    store = s3(json.loads(attrs)["moczarr_store_source"])
    values = {}
    for array, zarr_json, table in db.execute(
            "SELECT array, zarr_json, chunk_table FROM arrays").fetchall():
        ndim = len(json.loads(zarr_json)["shape"])
        docs = {"zarr.json": zarr_json.encode()}
        for row in db.execute(f'SELECT * FROM "refs_{table}"').fetchall():
            coords, (_, url, offset, size, _, data) = row[:ndim], row[ndim:]
            key = "c/" + "/".join(map(str, coords))
            docs[key] = data if url is None else ranged(store, url, offset, size)
        chunks = MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in docs.items()})
        values[array] = zarr.open_array(chunks, mode="r")[...]
pickle.dump(values, open(dump, "wb"))
"""


def read_back(fmt: str, out, tmp_path) -> dict:
    """The export's arrays, read by :data:`READER` in a process with no AWS variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # never probe the metadata address
    dump = tmp_path / f"{fmt}.pickle"
    secrets = [CREDENTIALS["access_key_id"], CREDENTIALS["secret_access_key"]]
    done = subprocess.run([sys.executable, "-c", READER, fmt, str(out), str(dump), *secrets],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return pickle.loads(dump.read_bytes())


@pytest.mark.parametrize("fmt", ["icechunk", "kerchunk-json", "mdim-refs"])
def test_an_s3_export_reads_back_from_a_fresh_process(tmp_path, s3_server, fmt):
    name = "windowed_explicit"
    source = f"s3://{BUCKET}/pre/{name}"
    out = tmp_path / fmt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        report = export_refs(source, fmt, out, storage_options=s3_options(s3_server.url))
    recorded = {"url": source, "endpoint": s3_server.url, "region": REGION,
                "anonymous": False}
    assert report.access == recorded
    assert_same(read_back(fmt, out, tmp_path), store_values(FIXTURES / name))


def test_an_http_export_to_icechunk_reads_back_from_a_fresh_process(tmp_path, http_server):
    """An HTTP hive's container needs nothing recorded: the reader authorizes HttpAccess."""
    name = "windowed_explicit"
    source = f"{http_server.url}/{name}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        report = export_refs(source, "icechunk", tmp_path / "repo",
                             storage_options=http_options())
    assert report.access == {"url": source}
    assert_same(read_back("icechunk", tmp_path / "repo", tmp_path),
                store_values(FIXTURES / name))


def test_the_record_holds_no_secret_and_takes_the_environment(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://user:pw@127.0.0.1:9000")
    options = {**CREDENTIALS, "session_token": "t0ken"}
    access = source_access("s3://key:secret@bucket/hive?X-Amz-Signature=abc", options)
    assert access == {"url": "s3://bucket/hive", "endpoint": "http://127.0.0.1:9000",
                      "region": "eu-north-1", "anonymous": False}
    assert source_access("https://host/hive?token=x", {"client_options": {
        "default_headers": {"Authorization": "Bearer x"}}}) == {"url": "https://host/hive"}
    assert ATTRIBUTE == "moczarr_store_source"
