"""Every remote answer is bounded: listings by time and names, documents by their size
limit, whatever the endpoint sends (a rogue S3 endpoint on loopback, ``support.rogue``).

The oracle for values is the local copy of the fixture read by moczarr; what is checked
here is what reached the client: the bytes the endpoint sent, the pages it was asked for,
and the error a reader gets (naming the object or the endpoint and the cap, no secret).
"""

from __future__ import annotations

import shutil
import threading
import time
import warnings

import pytest
import zarr
from support.rogue import RogueS3
from support.servers import FIXTURES

from moczarr_store import HiveWarning, MocHiveError, MocHiveStore, config
from moczarr_store.hive.jsonio import DEFAULT_MAX_JSON_BYTES

SECRET = "do-not-print-this-secret"
LEAF = "4/4/4/1/1/2/444112.zarr"  # a stamped leaf of bare_versioned


@pytest.fixture
def rogue(tmp_path):
    root = tmp_path / "bucket"
    root.mkdir()
    server = RogueS3(root)
    try:
        yield server
    finally:
        server.stop()


def _bounded(fn, seconds: float):
    """``fn()`` in a thread: its result or exception, or a failure if it is still running
    after ``seconds`` (a read that never ends fails the test instead of hanging it)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _signed(server: RogueS3, **client) -> dict:
    options = server.options(**client)
    del options["skip_signature"]
    return {**options, "access_key_id": "AKIDEXAMPLE", "secret_access_key": SECRET}


def test_an_endless_listing_stops_at_the_time_cap(rogue):
    """An endpoint whose every page says ``IsTruncated``: refused at the cap, naming the
    endpoint and the cap, and no page is asked for after it."""
    rogue.behaviours["list"] = ("endless", 200)
    store = MocHiveStore("s3://hive/nothing", storage_options=_signed(rogue))
    started = time.monotonic()
    with config.set({"listing.seconds": 1.5}), pytest.raises(MocHiveError) as refused:
        _bounded(lambda: zarr.open_group(store, mode="r"), 30)
    assert time.monotonic() - started < 15
    text = str(refused.value)
    assert "listing.seconds" in text and "1.5 s" in text and rogue.url in text, text
    assert SECRET not in f"{text} {refused.value!r} {refused.value.__cause__!r}"
    pages = rogue.pages
    assert pages > 1
    time.sleep(0.5)
    assert rogue.pages <= pages + 1  # the listing was stopped, not left running


def test_a_listing_past_the_key_cap_is_refused(rogue):
    for i in range(30):
        (rogue.root / "many" / f"d{i}").mkdir(parents=True)
        (rogue.root / "many" / f"d{i}" / "x").write_bytes(b"x")
    store = MocHiveStore("s3://hive/many", storage_options=rogue.options())
    with config.set({"listing.keys": 20}), pytest.raises(MocHiveError) as refused:
        zarr.open_group(store, mode="r")
    assert "more than 20 names" in str(refused.value) and "listing.keys" in str(refused.value)
    again = MocHiveStore("s3://hive/many", storage_options=rogue.options())
    with config.set({"listing.keys": 30}), pytest.raises(MocHiveError) as other:
        zarr.open_group(again, mode="r")  # at the cap: listed, and not a hive
    assert "listing.keys" not in str(other.value)


def _hive(rogue: RogueS3, name: str = "bare_versioned") -> MocHiveStore:
    shutil.copytree(FIXTURES / name, rogue.root / name)
    return MocHiveStore(f"s3://hive/{name}", storage_options=rogue.options())


def _read_all(store: MocHiveStore) -> tuple[dict, list[str]]:
    """Every array of every group: its values or its error's text; and the warnings."""
    out = {}

    def walk(group) -> None:
        for _, array in group.arrays():
            try:
                out[array.path] = array[...]
            except MocHiveError as err:
                out[array.path] = str(err)
        for _, sub in group.groups():
            walk(sub)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HiveWarning)
        walk(zarr.open_group(store, mode="r"))
    return out, [str(w.message) for w in caught]


@pytest.mark.parametrize("size", [64 << 20, 1 << 30], ids=["64MiB", "1GiB"])
def test_a_huge_stamp_is_never_downloaded_whole(rogue, size):
    """A leaf stamp followed by ``size`` bytes of whitespace (valid JSON, far over the
    limit): no response carries more than the limit plus one byte, and the leaf is
    named where its rows are read."""
    store = _hive(rogue)
    key = f"bare_versioned/{LEAF}/zarr.json"
    rogue.behaviours[key] = ("huge", size)
    got, caught = _bounded(lambda: _read_all(store), 120)
    assert rogue.largest[key] <= DEFAULT_MAX_JSON_BYTES + 1, rogue.largest[key]
    # an error where the chunking reads the leaf alone, a warning naming it where its rows
    # read as fill in a joined chunk (the neighbours' rows are read)
    told = [v for v in got.values() if isinstance(v, str)] + caught
    named = [m for m in told if f"{LEAF}/zarr.json" in m]
    assert named and all("limit" in m for m in named), told
    assert rogue.sent[key] < 64 * (DEFAULT_MAX_JSON_BYTES + 1)


def test_a_huge_array_document_is_never_downloaded_whole(rogue):
    """An array ``zarr.json`` of a leaf version (read at open to learn the writer runs,
    and when its chunks are read) is cut at the limit too."""
    store = _hive(rogue)
    version = next(p.name for p in (rogue.root / "bare_versioned" / LEAF).iterdir()
                   if p.name.startswith("run-"))
    key = f"bare_versioned/{LEAF}/{version}/7/count/zarr.json"
    assert (rogue.root / key).is_file()
    rogue.behaviours[key] = ("huge", 64 << 20)
    _bounded(lambda: _read_all(store), 120)
    assert rogue.largest[key] <= DEFAULT_MAX_JSON_BYTES + 1, rogue.largest[key]


@pytest.mark.parametrize("kind", ["says-small", "says-big"])
def test_a_lying_length_is_an_error_naming_the_object(rogue, kind):
    """``Content-Range`` of the range asked, no ``Content-Length`` and a gigabyte after it;
    or a ``Content-Length`` of the whole answer and half of it: the manifest's read fails
    naming it, and the client stops reading."""
    store = _hive(rogue)
    key = "bare_versioned/morton_hive.json"
    rogue.behaviours[key] = (kind, 1 << 30)
    with pytest.raises(MocHiveError) as refused:
        _bounded(lambda: zarr.open_group(store, mode="r"), 60)
    assert "morton_hive.json" in str(refused.value)
    assert rogue.largest[key] < 1 << 30


def test_a_dripping_stamp_fails_in_bounded_time_naming_its_leaf(rogue):
    """One byte a second: the client's timeout ends the read, and the leaf's rows are
    refused naming it."""
    store = _hive(rogue)
    options = rogue.options(timeout="2s")
    count = next(p for p in _read_all(store)[0] if p.endswith("/count"))
    rogue.behaviours[f"bare_versioned/{LEAF}/zarr.json"] = ("drip", 1.0)
    fresh = MocHiveStore("s3://hive/bare_versioned", storage_options=options)
    started = time.monotonic()
    with pytest.raises(MocHiveError) as refused:
        _bounded(lambda: zarr.open_group(fresh, mode="r")[count][...], 60)
    assert time.monotonic() - started < 30
    assert LEAF in str(refused.value)
