"""Hostile metadata: every malformed document has its documented outcome, in bounded work.

The outcomes (README, "Opening, debris and damage"): an unusable root MOC is walked around
with a ``HiveWarning``; a malformed overview declaration is omitted with a warning;
malformed content hashes cost one listing instead; anything else is an error of this
package naming the object and the field. Never a bare ``TypeError``, ``KeyError`` & co.
Expected values come from moczarr or from the fixture files themselves.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import textwrap
import tracemalloc
import warnings
from pathlib import Path

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, copy_leaf
from support.servers import LoopbackServer, StaticFiles, http_options

from moczarr_store import (
    CannotWalk,
    HiveFormatError,
    HiveWarning,
    MalformedMetadataError,
    MocHiveError,
    MocHiveStore,
    NoCoverageError,
    UnusableCoverage,
)
from moczarr_store.hive import coverage, jsonio, template, windows
from moczarr_store.hive.ids import decimal_to_rank, rank_to_decimal
from moczarr_store.hive.jsonio import MAX_DEPTH, load_json
from moczarr_store.hive.paths import validate_node_name
from moczarr_store.hive.runs import RUN_PROBES
from moczarr_store.verify import verify_hive

GROUP = "atl06/o7"
LEAF = "4/4/4/1/1/1/444111.zarr"  # the first listed (template) leaf of bare_versioned
COORDS = ("morton", "cell_ids", "healpix_index", "healpix")  # fabricated at every level
CF_LAYER = ("healpix_index", "lon", "lat", "healpix")  # CF's, beside xdggs's cell_ids
OTHER = "4/4/4/1/1/2/444112.zarr"  # a later leaf of another writer run


# -- helpers ------------------------------------------------------------------------------------


def _edit(path: Path, change) -> None:
    """Rewrite a JSON file with ``change(doc)`` (which mutates ``doc`` or returns a new one)."""
    doc = json.loads(path.read_text())
    new = change(doc)
    path.write_text(json.dumps(doc if new is None else new))


def _data(root: Path, leaf: str = LEAF) -> str:
    """A leaf's data prefix, read from its stamp file."""
    stamp = json.loads((root / leaf / "zarr.json").read_text())["attributes"]
    current = stamp["morton_hive_commit"].get("current")
    return f"{leaf}/{current}" if current else leaf


def _docs(root: Path) -> dict[str, str]:
    """The documents of bare_versioned an open reads, by kind (template leaf ones)."""
    data = _data(root)
    return {
        "manifest": "morton_hive.json",
        "stamp": f"{LEAF}/zarr.json",
        "group": f"{data}/7/zarr.json",
        "array": f"{data}/7/count/zarr.json",
    }


def _open(root, group: str = GROUP, **kw) -> xr.Dataset:
    return xr.open_zarr(MocHiveStore(root, **kw), group=group).load()


def _equal(ref: xr.Dataset, got: xr.Dataset) -> None:
    assert dict(ref.sizes) == dict(got.sizes)
    assert set(ref.data_vars) == set(got.data_vars)
    for name in [*ref.data_vars, "morton", "cell_ids"]:
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


def _walk_copy(root: Path) -> Path:
    """A sibling copy of ``root`` without its root MOC: moczarr walks it."""
    clean = root.with_name(root.name + "_walk")
    shutil.copytree(root, clean)
    (clean / "coverage.moc").unlink()
    return clean


def _raises(error, text: str):
    """``pytest.raises`` matching ``text`` literally."""
    return pytest.raises(error, match=re.escape(text))


@pytest.fixture
def http_root(tmp_path):
    """``serve(root)``: a plain static HTTP server (no listing) over a directory."""
    servers = []

    def serve(root: Path) -> str:
        server = LoopbackServer(StaticFiles(root))
        servers.append(server)
        return server.url

    yield serve
    for server in servers:
        server.stop()


# -- one JSON reader ----------------------------------------------------------------------------

BAD_JSON = {
    "not utf-8": b'{"a": "\xff\xfe"}',
    "truncated": b'{"a": [1, 2',
    "NaN": b'{"a": NaN}',
    "Infinity": b'{"a": [Infinity]}',
    "-Infinity": b'{"a": -Infinity}',
    "overflowing float": b'{"a": 1e999}',
    "nested past the recursion limit": b"[" * 100_000 + b"]" * 100_000,
    "nested past MAX_DEPTH": b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    "an integer past the digit limit": b'{"a": ' + b"7" * 5000 + b"}",
    "utf-16": '{"a": 1}'.encode("utf-16"),
}


@pytest.fixture(params=["msgspec", "standard library"])
def decoder(request, monkeypatch):
    """Each decoder the reader may decode with first: msgspec where installed (zarr 3.4 on
    requires it), the standard library alone where not."""
    if request.param == "msgspec" and jsonio._FAST is None:
        pytest.skip("msgspec is not installed here (zarr < 3.4): the reader decodes with "
                    "the standard library alone, tested beside")
    if request.param != "msgspec":
        monkeypatch.setattr(jsonio, "_FAST", None)
    return request.param


@pytest.mark.parametrize("case", BAD_JSON)
def test_the_json_reader_refuses_naming_the_object(case, decoder):
    with pytest.raises(MalformedMetadataError, match=r"^some/zarr\.json: "):
        load_json(BAD_JSON[case], "some/zarr.json")


def test_the_json_reader_takes_plain_json_and_refuses_a_document_over_its_cap(decoder):
    doc = b'{"a": [1.5, -2, "x", null, true], "b": ' + b"[" * (MAX_DEPTH - 1) + b"]" * (
        MAX_DEPTH - 1) + b"}"
    assert load_json(doc, "x")["a"] == [1.5, -2, "x", None, True]
    with _raises(MalformedMetadataError, "x: the document is larger than the 10-byte limit"):
        load_json(b'{"a": "0123456789"}', "x", max_bytes=10)


@pytest.mark.parametrize("doc", [
    '{"a": 1}', '{"a": 1}\n', '{"a": 1} \t\r\n ', ' {"a": 1}', '{"a": 1}}', '{"a": 1} x',
    '{"a": 1}\x0b', '{"a": 1}\u3000', '{"a": 1}\x00', '{"a": 1} {"b": 2}', '{"a": 1,}',
    '{"a" 1}', "{", "{}", '{"a": [1, 2}', "{'a': 1}", '{"a": "\\ud800"}', '{"a": 1e5}',
    '{"a": 1}\ufeff', '\ufeff{"a": 1}', '{"a": "\\ud83d\\ude00"}', '{"a": 12345678901234567890123}',
    '{"a": -0.0, "b": 2.5e-324, "c": 1.7976931348623157e308, "a": 3}', '{"a": "x\ny"}',
], ids=repr)
def test_the_json_reader_answers_as_the_standard_decoder(doc, decoder):
    """A document is what Python's decoder (with the reader's number checks) makes of it,
    value or refusal, whatever follows its object: the reader scans an object at once and
    leaves anything but JSON whitespace after it to that decoder."""
    want = json.JSONDecoder(parse_float=float)
    try:
        expected = want.decode(doc)
    except ValueError as err:
        with _raises(MalformedMetadataError, f"x: not valid JSON ({err})"):
            load_json(doc.encode("utf-8", "surrogatepass"), "x")
    else:
        assert load_json(doc.encode("utf-8", "surrogatepass"), "x") == expected


def test_the_json_reader_keeps_the_digit_limit_set_now(decoder):
    """An integer past Python's digit limit, as set when read, is refused by either
    decoder (the standard library's words)."""
    digits = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)  # the least Python allows
    try:
        with _raises(MalformedMetadataError, "x: not valid JSON (Exceeds the limit (640"):
            load_json(b'{"a": ' + b"7" * 700 + b"}", "x")
    finally:
        sys.set_int_max_str_digits(digits)


@pytest.mark.parametrize("kind", ["manifest", "stamp", "group", "array"])
@pytest.mark.parametrize("case", ["not utf-8", "NaN", "overflowing float",
                                  "nested past the recursion limit", "nested past MAX_DEPTH",
                                  "an integer past the digit limit", "over the cap"])
def test_every_hive_document_goes_through_the_one_reader(hive_copy, kind, case):
    root = hive_copy("bare_versioned")
    rel = _docs(root)[kind]
    if case == "over the cap":  # valid JSON, padded past 16 MiB
        payload = (root / rel).read_bytes() + b" " * (16 << 20)
    else:
        payload = BAD_JSON[case]
    (root / rel).write_bytes(payload)
    with pytest.raises(MalformedMetadataError, match=re.escape(rel)):
        _open(root)


@pytest.mark.parametrize("case", ["not utf-8", "NaN", "overflowing float",
                                  "nested past MAX_DEPTH", "an integer past the digit limit",
                                  "over the cap"])
def test_verify_reads_coordinate_metadata_through_the_one_reader(hive_copy, case):
    """``verify`` reads a later leaf's coordinate array ``zarr.json`` (not read at open):
    the bounded reader's error names the document, the array fails, the others verify."""
    root = hive_copy("bare_versioned")
    rel = f"{_data(root, OTHER)}/7/morton/zarr.json"
    if case == "over the cap":
        payload = (root / rel).read_bytes() + b" " * (16 << 20)
    else:
        payload = BAD_JSON[case]
    (root / rel).write_bytes(payload)
    report = asyncio.run(verify_hive(MocHiveStore(root)))
    (failure,) = report.to_json()["failures"]
    (problem,) = failure["problems"]
    assert (failure["object"], problem["array"]) == (OTHER, "7/morton")
    assert problem["detail"].startswith(f"MalformedMetadataError: {rel}: ")


_PEAK_RSS = """
import asyncio, resource, sys, warnings
from moczarr_store import MocHiveStore
warnings.simplefilter("ignore")
asyncio.run(MocHiveStore(sys.argv[1]).hive())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _open_peak_rss(root: Path) -> int:
    """The peak resident memory (KiB) of a fresh process that opens ``root``."""
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(root)], capture_output=True,
                          text=True, check=True, timeout=300)
    return int(done.stdout.split()[-1])


def test_another_writer_runs_padded_array_document_is_read_bounded_and_named(hive_copy):
    """The array documents of writer runs other than the template's are read at open (to
    learn their data types) through the one bounded reader: one padded to 200 MiB costs
    one capped read (peak memory within 2x an unpadded open's, not 11x), and a warning
    names it; its leaf's own chunks refuse it when read."""
    plain = hive_copy("bare_versioned")
    root = plain.parent / "padded"
    shutil.copytree(plain, root)
    rel = f"{_data(root, OTHER)}/7/count/zarr.json"
    assert not rel.startswith(_data(root))  # another writer run than the template's
    doc = root / rel
    text = doc.read_bytes()
    with open(doc, "wb") as out:
        out.write(text[:-1])
        for _ in range(200):
            out.write(b" " * (1 << 20))  # still valid JSON: whitespace
        out.write(text[-1:])
    with pytest.warns(HiveWarning, match=re.escape(f"{rel}: the document is larger than the "
                                                   "16,777,216-byte limit")):
        store = MocHiveStore(root)
        asyncio.run(store.hive())
    alone = MocHiveStore(root, chunking="leaf")  # its own chunks (a joined one fills them)
    with _raises(MalformedMetadataError, rel):
        xr.open_zarr(alone, group=GROUP)["count"].values  # noqa: B018
    assert _open_peak_rss(root) < 2 * _open_peak_rss(plain)


def test_a_later_leafs_unreadable_stamp_is_an_error_naming_it_when_read(hive_copy):
    root = hive_copy("bare_versioned")
    (root / OTHER / "zarr.json").write_bytes(b'{"attributes": {"x": NaN}}')
    # its stamp is read lazily; one leaf per chunk (auto: that leaf's rows alone as fill)
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)
    with _raises(MalformedMetadataError, f"leaf {OTHER}/zarr.json: not valid JSON"):
        ds["count"].values  # noqa: B018


@pytest.mark.parametrize("case", ["not utf-8", "NaN", "nested past the recursion limit",
                                  "an integer past the digit limit"])
def test_an_unreadable_root_moc_is_walked_around(hive_copy, case):
    root = hive_copy("bare_versioned")
    (root / "coverage.moc").write_bytes(BAD_JSON[case])
    with pytest.warns(HiveWarning, match="coverage.moc is unusable"):
        got = _open(root, verify="open")
    _equal(moczarr.open_hive(str(_walk_copy(root))), got)


# -- wrong JSON types: the manifest ---------------------------------------------------------------


def _set(*path, value):
    def change(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


MANIFEST_CASES = [
    ("bare_versioned", _set("cell_order", value=7.0), "cell_order 7.0 / shard_order 5"),
    ("bare_versioned", _set("shard_order", value="5"), "shard_order '5' must be ints"),
    ("bare_versioned", _set("cell_order", value=True), "cell_order True"),
    ("bare_versioned", _set("path_grouping", value=1.0), "path_grouping 1.0 must be an int"),
    ("bare_versioned", _set("dataset", value="ATL06"), "field 'dataset' is not a JSON object"),
    ("bare_versioned", _set("spec", value=["morton-hive/1"]), "spec ['morton-hive/1'] is not"),
    ("bare_versioned", lambda doc: [doc], "manifest is not a JSON object"),
    ("windowed_explicit", _set("temporal", "windows", 0, value="early"),
     "field 'temporal.windows[0]' is not a JSON object"),
    ("windowed_explicit", _set("temporal", "windows", value="early"),
     "field 'temporal.windows' 'early' is not a list"),
    ("windowed_explicit", _set("temporal", "windows", 0, "start", value=2019),
     "field temporal.windows[0].start 2019 is not a string"),
    ("windowed_explicit", _set("temporal", "windows", 1, "label", value="early"),
     "field temporal.windows[1].label 'early' repeats"),
    ("windowed_explicit", _set("temporal", "windows", 0, "label", value=7),
     "window label 7 is not a valid window label"),
    ("windowed_explicit", _set("temporal", "schedule", value=["explicit"]),
     "field 'temporal.schedule' ['explicit'] is not a string"),
]


@pytest.mark.parametrize("fixture,change,text", MANIFEST_CASES)
def test_manifest_fields_of_the_wrong_type_are_refused_naming_them(hive_copy, fixture, change,
                                                                   text):
    root = hive_copy(fixture)
    _edit(root / "morton_hive.json", change)
    with pytest.raises(MalformedMetadataError, match=r"^morton_hive\.json: .*" + re.escape(text)):
        zarr.open_group(MocHiveStore(root), mode="r")


# -- wrong JSON types: the root MOC ---------------------------------------------------------------

COVERAGE_CASES = {
    "order a float": _set("order", value=5.0),
    "order a bool": _set("order", value=True),
    "ranges an object": _set("ranges", value={"444111": "444112"}),
    "endpoints numbers": _set("ranges", 0, value=[444111, 444112]),
    "a range of three": _set("ranges", 0, value=["444111", "444112", "444112"]),
    "not an object": lambda doc: [doc],
    "no spec": lambda doc: {k: v for k, v in doc.items() if k != "spec"},
}


@pytest.mark.parametrize("case", COVERAGE_CASES)
def test_a_root_moc_of_the_wrong_shape_is_walked_around(hive_copy, case):
    root = hive_copy("bare_versioned")
    _edit(root / "coverage.moc", COVERAGE_CASES[case])
    with pytest.warns(HiveWarning, match="root coverage coverage.moc is unusable"):
        got = _open(root, verify="open")
    _equal(moczarr.open_hive(str(_walk_copy(root))), got)


def _leaf_windows(root: Path) -> list[str]:
    """Window labels of the leaves on disk (``{id}_{window}.zarr``)."""
    return sorted({p.name[:-5].partition("_")[2] for p in root.rglob("*_*.zarr")})


def _check_windows(root: Path, ds: xr.Dataset) -> None:
    """Each window's rows are moczarr's rows for that window (elsewhere the fill value)."""
    for i, label in enumerate(ds["window"].values):
        ref = moczarr.open_hive(str(root), window=str(label))
        mine = ds.isel(window=i)
        inside = np.isin(mine["morton"].values, ref["morton"].values)
        np.testing.assert_array_equal(mine["count"].values[inside], ref["count"].values)
        assert (mine["count"].values[~inside] == 0).all()


@pytest.mark.parametrize("time_range", [
    [2019, 2020], ["2019-04-21T01:50:57+00:00"], "2019", {"first": "2019"},
    ["10000-01-01T00:00:00+00:00", "10001-01-01T00:00:00+00:00"],
    ["2019-04-21T01:50:57+00:00", "someday"], ["0001-01-01T00:00:00+01:00", "2020"],
], ids=repr)
def test_a_time_range_that_names_no_windows_is_walked_around(hive_copy, time_range):
    root = hive_copy("windowed")
    _edit(root / "coverage.moc", _set("time_range", value=time_range))
    with pytest.warns(HiveWarning, match=r"coverage.moc: time_range .*digit-tree walk"):
        ds = _open(root)
    assert list(ds["window"].values) == _leaf_windows(root) == ["2019", "2020"]
    _check_windows(root, ds)


def test_a_time_range_over_the_window_limit_is_walked_around(hive_copy, monkeypatch):
    root = hive_copy("windowed")
    monkeypatch.setattr(windows, "MAX_WINDOWS", 1)  # the fixture's range spans 2 years
    with pytest.warns(HiveWarning, match="spans more than 1 yearly windows"):
        ds = _open(root)
    assert list(ds["window"].values) == ["2019", "2020"]


def test_a_time_range_up_to_year_9999_ends_there(hive_copy):
    root = hive_copy("windowed")
    _edit(root / "coverage.moc", _set("time_range", value=[
        "2019-04-21T01:50:57+00:00", "9999-12-31T23:59:59+00:00"]))
    ds = xr.open_zarr(MocHiveStore(root), group=GROUP)
    labels = list(ds["window"].values)
    assert labels[:2] == ["2019", "2020"] and labels[-1] == "9999"
    assert len(labels) == 9999 - 2019 + 1
    _check_windows(root, ds.isel(window=[0, 1]).load())


@pytest.mark.parametrize("time_range", [
    ["9999-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"],
    ["2030-01-01T00:00:00+00:00", "2031-06-30T00:00:00+00:00"],
])
def test_a_time_range_naming_no_written_window_is_named(hive_copy, time_range):
    """Windows the coverage's time_range names, and no leaf was written in: the error
    names the time_range (before: only "no committed leaf among the 3 nodes")."""
    root = hive_copy("windowed")
    _edit(root / "coverage.moc", _set("time_range", value=time_range))
    with pytest.raises(NoCoverageError) as refused:
        zarr.open_group(MocHiveStore(root), mode="r")
    text = str(refused.value)
    assert "no committed leaf" in text and time_range[0] in text and "coverage.moc" in text
    assert time_range[0][:4] in text.partition("window(s) looked in")[2]


# -- wrong JSON types: stamps, content hashes, group and array metadata ---------------------------


@pytest.mark.parametrize("current", [7, ["run-x"], {"run": "x"}, True], ids=repr)
def test_a_current_pointer_of_the_wrong_type_is_refused_naming_the_leaf(hive_copy, current):
    root = hive_copy("bare_versioned")
    _edit(root / LEAF / "zarr.json",
          _set("attributes", "morton_hive_commit", "current", value=current))
    with pytest.raises(MalformedMetadataError,
                       match=re.escape(f"leaf {LEAF}: commit stamp 'current' pointer")):
        _open(root)


@pytest.mark.parametrize("change", [
    _set("attributes", "morton_hive_commit", value="yes"),
    _set("attributes", "morton_hive_commit", value=["complete"]),
    _set("attributes", value=["morton_hive_commit"]),
    lambda doc: [doc],
], ids=["stamp a string", "stamp a list", "attributes a list", "document a list"])
def test_a_leaf_without_a_commit_mapping_is_debris_as_moczarr_reads_it(hive_copy, change):
    root = hive_copy("bare_versioned")
    _edit(root / OTHER / "zarr.json", change)
    with pytest.warns(HiveWarning, match="444112.zarr has no commit stamp.*read as missing"):
        lazy = _open(root)
    rows = np.isin(lazy["morton"].values >> np.uint64(6 + 2 * 20 + 4),
                   np.uint64(decimal_to_rank("444112")))
    assert rows.sum() == 16 and (lazy["count"].values[rows] == 0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _equal(moczarr.open_hive(str(root)), _open(root, verify="open"))


HASHES = {
    "a list": [],
    "a string": "x",
    "arrays a list": {"arrays": ["7/count"]},
    "a digest a number": {"arrays": {"7/count": 7, "7/h_max": "ab"}},
    "a dot-dot key": {"arrays": {"7/../count": "ab", "7/count": "ab"}},
    "an empty segment": {"arrays": {"7//count": "ab"}},
    "an empty key": {"arrays": {"": "ab"}},
}


@pytest.mark.parametrize("case", HASHES)
def test_malformed_content_hashes_cost_one_listing_instead(hive_copy, case):
    root = hive_copy("bare_versioned")
    _edit(root / LEAF / "zarr.json",
          _set("attributes", "morton_hive_commit", "content_hashes", value=HASHES[case]))
    store = MocHiveStore(root)
    with pytest.warns(HiveWarning, match=f"leaf {re.escape(LEAF)}: commit stamp field "
                                         "'content_hashes' .*; listing"):
        got = xr.open_zarr(store, group=GROUP).load()
    assert store.request_stats.counts["list"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _equal(moczarr.open_hive(str(root)), got)


def test_malformed_content_hashes_on_plain_http_take_the_names_from_the_run_sample(
        hive_copy, http_root):
    root = hive_copy("bare_versioned")
    _edit(root / LEAF / "zarr.json",
          _set("attributes", "morton_hive_commit", "content_hashes", value="x"))
    store = MocHiveStore(http_root(root), storage_options=http_options())
    with pytest.warns(HiveWarning, match=f"leaf {re.escape(LEAF)}: its commit stamp names no "
                      r"arrays and .* cannot be listed .*; presenting the arrays leaf "
                      r"\S+ commit stamp names"):
        got = xr.open_zarr(store, group=GROUP).load()
    _equal(moczarr.open_hive(str(root)), got)


def test_no_stamp_naming_arrays_on_plain_http_is_an_error_naming_the_leaf(hive_copy, http_root):
    root = hive_copy("bare_versioned")
    for stamp in root.glob("*/*/*/*/*/*/*.zarr/zarr.json"):
        _edit(stamp, _set("attributes", "morton_hive_commit", "content_hashes", value="x"))
    store = MocHiveStore(http_root(root), storage_options=http_options())
    with (pytest.warns(HiveWarning, match="content_hashes"),
          pytest.raises(HiveFormatError, match=f"leaf {re.escape(LEAF)}: cannot list "
                        f"{re.escape(_data(root))}/7 .*neither its commit stamp nor those of "
                        "the writer-run sample name its arrays")):
        zarr.open_group(store, mode="r")


@pytest.mark.parametrize("change,text", [
    (lambda doc: [doc], "zarr.json: not a JSON object"),
    (_set("attributes", value=["dggs"]), "zarr.json: field 'attributes' is not a JSON object"),
], ids=["document a list", "attributes a list"])
def test_a_cell_order_group_of_the_wrong_type_is_refused_naming_it(hive_copy, change, text):
    root = hive_copy("bare_versioned")
    _edit(root / _docs(root)["group"], change)
    with _raises(MalformedMetadataError, f"{_data(root)}/7/{text}"):
        _open(root)


ENDIAN = re.compile(r"not valid zarr v3 array metadata \(ValueError: .*endian")
ARRAY_CASES = [
    ("bare_versioned", lambda doc: [doc], "not a JSON object"),
    ("bare_versioned", _set("shape", value=[16.0]), "field 'shape' [16.0] is not a list of ints"),
    ("bare_versioned", _set("shape", value="16"), "field 'shape' '16'"),
    ("bare_versioned", _set("chunk_grid", value="regular"), "field 'chunk_grid' 'regular'"),
    ("bare_versioned", _set("chunk_grid", "configuration", "chunk_shape", value=[0]),
     "field 'chunk_grid.configuration.chunk_shape' [0] is not a list of 1 ints >= 1"),
    ("bare_versioned", _set("chunk_grid", "configuration", value=[16]),
     "field 'chunk_grid.configuration' [16] is not an object"),
    ("bare_versioned", _set("codecs", value={"name": "bytes"}), "field 'codecs'"),
    ("bare_versioned", _set("codecs", 0, value="bytes"), "field 'codecs[0]' 'bytes'"),
    ("bare_versioned", _set("dimension_names", value=["cells", "x"]),
     "field 'dimension_names' ['cells', 'x'] is not a list of 1 strings"),
    ("bare_versioned", _set("dimension_names", value=None),
     "field 'dimension_names' None is not a list of 1 strings"),
    ("bare_versioned", _set("dimension_names", value=[None]),
     "field 'dimension_names' [None] is not a list of 1 strings"),
    ("bare_versioned", _set("dimension_names", value=[7]), "field 'dimension_names' [7]"),
    ("bare_versioned", _set("attributes", value=[]), "field 'attributes' [] is not an object"),
    ("bare_versioned", _set("chunk_key_encoding", value="default"),
     "field 'chunk_key_encoding' 'default'"),
    ("bare_versioned", _set("chunk_key_encoding", "configuration", "separator", value=0),
     "field 'chunk_key_encoding.configuration.separator' 0 is not a string"),
    ("bare_versioned", _set("fill_value", value="abc"), "not valid zarr v3 array metadata"),
    ("bare_versioned", _set("data_type", value=7), "not valid zarr v3 array metadata"),
    ("bare_versioned", _set("zarr_format", value=2), "not valid zarr v3 array metadata"),
    ("sharded", _set("codecs", 0, "configuration", "index_codecs", value=[]),
     "not valid zarr v3 array metadata"),
    ("sharded", _set("codecs", 0, "configuration", "chunk_shape", value=[0]),
     "field 'codecs[0].configuration.chunk_shape' [0]"),
    ("sharded", _set("codecs", 0, "configuration", "codecs", value=["bytes"]),
     "field 'codecs[0].configuration.codecs[0]'"),
    ("sharded", _set("codecs", 0, "configuration", "index_location", value=0),
     "field 'codecs[0].configuration.index_location' 0 is not 'start' or 'end'"),
    # zarr takes these documents and fails only when it opens or decodes the array
    ("bare_versioned", _set("storage_transformers", value=[[]]),
     "field 'storage_transformers' [[]] is not empty (zarr applies none)"),
    # (zarr 3.1 refuses some of these itself, with its own words)
    ("bare_versioned", _set("codecs", 0, "configuration", "endian", value=None), ENDIAN),
    ("sharded", _set("codecs", 0, "configuration", "index_codecs", 0, "configuration", "endian",
                     value=None), ENDIAN),
    ("sharded", _set("codecs", 0, "configuration", "codecs", 0, "configuration", "endian",
                     value=None), ENDIAN),
]


@pytest.mark.parametrize("fixture,change,text", ARRAY_CASES)
def test_a_leaf_array_of_the_wrong_type_is_refused_naming_it(hive_copy, fixture, change, text):
    root = hive_copy(fixture)
    template = asyncio.run(MocHiveStore(root).hive()).products[0].levels[0].template
    meta = f"{_data(root, template)}/7/count/zarr.json"
    _edit(root / meta, change)
    pattern = text.pattern if isinstance(text, re.Pattern) else re.escape(text)
    with pytest.raises(MalformedMetadataError, match=re.escape(f"{meta}: ") + pattern):
        _open(root)


@pytest.mark.parametrize("dims", [[""], ["x"], ["h_mean"]], ids=repr)
def test_a_template_array_along_no_cells_axis_is_omitted_with_a_warning(hive_copy, dims):
    """Only a dimension coordinate (a raster's ``time``) is served from the template alone;
    any other array off the ``cells`` axis would present one leaf's values as the level's
    (moczarr broadcasts them into a 2-d array along ``cells``)."""
    root = hive_copy("bare_versioned")
    meta = f"{_data(root)}/7/h_variance/zarr.json"
    _edit(root / meta, _set("dimension_names", value=dims))
    with pytest.warns(HiveWarning, match=re.escape(
            f"{_data(root)}/7: 'h_variance' along {dims!r}: no 'cells' axis, and no dimension "
            "coordinate (as a raster's 'time'); omitted")):
        got = _open(root)
    assert "h_variance" not in got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = moczarr.open_hive(str(FIXTURES / "bare_versioned"))
    _equal(ref.drop_vars("h_variance"), got)


@pytest.mark.parametrize("short_name", [[], ["atl06"], "ATL 06", {"x": 1}, ""], ids=repr)
def test_a_short_name_that_makes_no_product_name_is_warned(hive_copy, short_name):
    """The product is named ``"product"``, as ``moczarr.open_store`` names it, and the
    warning says why the group is not the short name."""
    root = hive_copy("sharded")
    _edit(root / "morton_hive.json", _set("dataset", "short_name", value=short_name))
    with pytest.warns(HiveWarning, match=re.escape("morton_hive.json: field "
                                                   "'dataset.short_name'")):
        group = zarr.open_group(MocHiveStore(root), mode="r")
    assert list(group.group_keys()) == ["product"]


def test_a_product_that_lost_its_manifest_is_skipped_with_a_warning(hive_copy):
    """A product directory holding a digit tree but no manifest is named; a directory of
    something else (``scratch``) is passed over in silence, as before."""
    root = hive_copy("multiproduct")
    (root / "atl06_a" / "morton_hive.json").unlink()
    with pytest.warns(HiveWarning, match=re.escape(
            "product 'atl06_a' skipped: atl06_a/morton_hive.json is missing, but atl06_a/ holds "
            "a digit tree")):
        store = MocHiveStore(root)
        group = zarr.open_group(store, mode="r")
    assert list(group.group_keys()) == ["atl06_b"]
    assert "atl06_a" in asyncio.run(store.hive()).skipped


def test_another_runs_array_of_the_wrong_type_is_refused_when_read(hive_copy):
    root = hive_copy("bare_versioned")
    _edit(root / _data(root, OTHER) / "7/count/zarr.json", _set("shape", value=[16.0]))
    # another run: read on first use; one leaf per chunk (auto: its rows alone as fill)
    ds = xr.open_zarr(MocHiveStore(root, chunking="leaf"), group=GROUP)
    with _raises(MalformedMetadataError, f"{_data(root, OTHER)}/7/count/zarr.json: field "
                                         "'shape' [16.0]"):
        ds["count"].values  # noqa: B018


# -- wrong JSON types: pyramid declarations -------------------------------------------------------


def _orders(store) -> list[int]:
    return sorted(int(k[1:]) for k in zarr.open_group(store, mode="r")["atl06"].group_keys())


PYRAMID_CASES = [
    ("pyramid1", _set("pyramid", value="zagg-pyramid/1"), "'pyramid' 'zagg-pyramid/1' is not",
     [7]),
    ("pyramid1", _set("pyramid", "overview", value=[3, 1]), "'overview' [3, 1] is not", [7]),
    # null where zagg writes a mapping (its declared-off form is overview orders []): moczarr
    # reads it as declared off, silently; the same levels, warned
    ("pyramid1", _set("pyramid", value=None), "'pyramid' None is not", [7]),
    ("pyramid1", _set("pyramid", "overview", value=None), "'overview' None is not", [7]),
    ("pyramid1", _set("pyramid", "overview", "orders", value="31"), "orders '31' are not", [7]),
    ("pyramid1", _set("pyramid", "overview", "orders", value=[3.0, 1]), "orders [3.0, 1]", [7]),
    ("pyramid1", _set("pyramid", "overview", "orders", value=[True, 3]), "orders [True, 3]", [7]),
    ("pyramid1", _set("pyramid", "overview", "orders", value={"3": 1}), "orders {'3': 1}", [7]),
    ("pyramid2", _set("pyramid", "overviews", 1, "cells", value=["2"]),
     "ladder entry node 1: cells '2' is not an order between 1 and 4", [1, 3, 4]),
    ("pyramid2", _set("pyramid", "overviews", 1, "cells", value=[2.0]), "cells 2.0", [1, 3, 4]),
    ("pyramid2", _set("pyramid", "overviews", 1, "node", value=1.0), "ladder entry", [4]),
    ("pyramid2", _set("pyramid", "overviews", 1, value="node 1"), "ladder entry 'node 1'", [4]),
]


@pytest.mark.parametrize("fixture,change,text,kept", PYRAMID_CASES)
def test_a_malformed_overview_declaration_is_omitted_with_a_warning(hive_copy, fixture, change,
                                                                    text, kept):
    root = hive_copy(fixture)
    _edit(root / "morton_hive.json", change)
    store = MocHiveStore(root, computed_orders="none")  # the stored orders the hive declares
    with pytest.warns(HiveWarning, match=re.escape("morton_hive.json: product 'atl06' pyramid")
                      + ".*" + re.escape(text) + ".*; omitted"):
        assert _orders(store) == kept
    source = max(kept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        _equal(moczarr.open_hive(str(FIXTURES / fixture)),
               xr.open_zarr(store, group=f"atl06/o{source}").load())


@pytest.mark.parametrize("grouping", [2, 2**64 + 1])
def test_a_path_grouping_that_finds_no_leaf_is_named_in_the_error(hive_copy, grouping):
    # formula-legal (an int >= 1) but not how the leaves were written: every node is looked
    # for under the wrong directories; the error names the manifest's field as the cause
    root = hive_copy("legacy_versioned")
    _edit(root / "morton_hive.json", _set("path_grouping", value=grouping))
    with _raises(NoCoverageError, f"; leaves were looked for at {grouping} digits per "
                                  "directory, the path_grouping of morton_hive.json"):
        zarr.open_group(MocHiveStore(root), mode="r")["atl06/o7"]


def test_an_all_time_flag_of_the_wrong_type_omits_the_folds(hive_copy):
    root = hive_copy("windowed_explicit")
    _edit(root / "morton_hive.json", _set("pyramid", "overview", "all_time", value="yes"))
    store = MocHiveStore(root)
    with pytest.warns(HiveWarning, match="all-time folds: 'all_time' 'yes' is not a boolean"):
        assert "all_time" not in zarr.open_group(store, mode="r")["atl06"].group_keys()
    assert "all_time" in zarr.open_group(MocHiveStore(FIXTURES / "windowed_explicit"),
                                         mode="r")["atl06"].group_keys()


def test_an_overview_storing_a_non_integer_order_is_omitted(hive_copy):
    root = hive_copy("pyramid1")
    stamp = root / "4/4/4/1/all.zarr/zarr.json"  # the o5 level's first object
    _edit(stamp, _set("attributes", "zagg_overview", "cell_order", value="5"))
    with pytest.warns(HiveWarning, match=r"atl06/o5: object .* stores cells at order '5'"):
        assert _orders(MocHiveStore(root, computed_orders="none")) == [3, 7]


# a pyramid object other than the template that is not its level's artifact: moczarr drops it
# with a warning; the store reads its cells as missing, with one warning naming it


OBJECT_CASES = [
    ("pyramid1", "-4/1/1/3/all.zarr", 5, ("role",), 2**64 + 1),
    ("pyramid1", "-4/1/1/3/all.zarr", 5, ("role",), "source"),
    ("pyramid1", "-4/1/1/3/all.zarr", 5, ("zagg_overview",), ["not", "a", "block"]),
    ("pyramid1", "-4/1/1/3/all.zarr", 5, ("zagg_overview", "spec"), "zagg-overview/9"),
    ("pyramid1", "-4/1/1/3/all.zarr", 5, ("zagg_overview", "cell_order"), True),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("role",), "overview"),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column",), None),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column", "spec"), "zagg-column/0"),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column", "node"), "441"),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column", "window"), "2020"),
    # "groups" names the cell orders a column carries: moczarr skips it for an order not
    # named (and fails with a bare TypeError on a number)
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column", "groups"),
     {"2": {"regime": "leaf-column", "merges_from_raw": 1, "n_cells": 1}}),
    ("pyramid2", "-4/1/1/all.pyramid.zarr", 3, ("zagg_column", "groups"), 1.5),
]


def _rows(ds: xr.Dataset) -> dict[int, dict[str, object]]:
    names = list(ds.data_vars)
    return {m: {n: ds[n].values[i] for n in names}
            for i, m in enumerate(ds["morton"].values.tolist())}


@pytest.mark.parametrize("verify", ["lazy", "open"])
@pytest.mark.parametrize("fixture,obj,order,at,value", OBJECT_CASES)
def test_a_pyramid_object_not_its_levels_artifact_reads_as_missing(hive_copy, fixture, obj,
                                                                   order, at, value, verify):
    """Every row is moczarr's (of the undamaged hive) but the object's own, which read as
    the fill value (or leave the domain, with ``verify="open"``), with a warning naming it;
    where moczarr opens the damaged hive (it drops the object; it refuses one naming
    another node, window or cell order), the rows it lacks are exactly the object's."""
    root = hive_copy(fixture)
    _edit(root / obj / "zarr.json", _set("attributes", *at, value=value))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = _rows(moczarr.open_level(str(FIXTURES / fixture), order,
                                          xr_kwargs={"chunks": None}))
        try:
            after = _rows(moczarr.open_level(str(root), order, xr_kwargs={"chunks": None}))
        except (ValueError, TypeError):
            after = None
    store = MocHiveStore(root, verify=verify)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = _rows(xr.open_zarr(store, group=f"atl06/o{order}").load())
    said = [str(w.message) for w in seen if issubclass(w.category, HiveWarning)]
    assert [m for m in said if obj in m and "read as missing" in m], said
    group = zarr.open_group(store, mode="r")[f"atl06/o{order}"]
    fills = {name: group[name].fill_value for name in next(iter(before.values()))}
    dropped = None if after is None else set(before) - set(after)
    lost = set()
    for m, values in before.items():
        for name, want in values.items():
            have = got.get(m, {}).get(name, fills[name])
            if dropped is not None and m not in dropped:
                assert np.array_equal(have, want, equal_nan=True), (m, name, have)
            elif not np.array_equal(have, want, equal_nan=True):
                assert np.array_equal(have, fills[name], equal_nan=True), (m, name, have)
                lost.add(m)
    assert lost, "the object's cells with data read as missing"


# -- array names --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,problem", [
    ("", "empty"), ("a/b", "contains '/'"), (".", "a dot segment"), ("..", "a dot segment"),
    ("__meta", "starts with '__'"), ("a\tb", "not printable"), ("a\x00", "not printable"),
    ("é" * 128, "longer than 255 bytes"), (7, "not a string"),
])
def test_validate_node_name_refuses_what_zarr_cannot_name(name, problem):
    with pytest.raises(HiveFormatError, match=r"^grp: array name .* \(" + re.escape(problem)):
        validate_node_name(name, "grp")


@pytest.mark.parametrize("name", ["count", "_locations", "a.b", "x y", "caf\u00e9", "a" * 255])
def test_validate_node_name_takes_node_names(name):
    assert validate_node_name(name, "grp") == name


def _fixture_arrays() -> list[str]:
    """The template's arrays, from its stamp file (the coordinates are fabricated)."""
    stamp = json.loads((FIXTURES / "bare_versioned" / LEAF / "zarr.json").read_text())
    keys = stamp["attributes"]["morton_hive_commit"]["content_hashes"]["arrays"]
    return sorted(k.split("/")[1] for k in keys if k != "7/morton")


def _add_hash(root: Path, key: str) -> None:
    def change(doc):
        doc["attributes"]["morton_hive_commit"]["content_hashes"]["arrays"][key] = "ab"

    _edit(root / LEAF / "zarr.json", change)


def _drop_hashes(root: Path) -> None:
    def change(doc):
        del doc["attributes"]["morton_hive_commit"]["content_hashes"]

    _edit(root / LEAF / "zarr.json", change)


@pytest.mark.parametrize("name,listed,text", [
    ("__meta", False, "array name '__meta' is not a valid zarr node name (starts with '__'"),
    ("__meta", True, "array name '__meta' is not a valid zarr node name (starts with '__'"),
    ("tab\tname", False, "array name 'tab\\tname' is not a valid zarr node name (not printable"),
    ("tab\tname", True, "array name 'tab\\tname' is not a valid zarr node name (not printable"),
    ("bell\x07", False, "array name 'bell\\x07' is not a valid zarr node name (not printable"),
], ids=repr)
def test_an_array_the_hive_names_invalidly_is_omitted_naming_it(hive_copy, name, listed, text):
    """That array is refused, not the hive (the template's own): every other array reads,
    and one warning names it, escaped."""
    root = hive_copy("bare_versioned")
    group = root / _data(root) / "7"
    shutil.copytree(group / "count", group / name)
    if listed:
        _drop_hashes(root)
    else:
        _add_hash(root, f"7/{name}")
    with pytest.warns(HiveWarning) as caught:
        root_group = zarr.open_group(MocHiveStore(root), mode="r")
        arrays = sorted(root_group[GROUP].array_keys())
    assert arrays == sorted([*_fixture_arrays(), *COORDS])
    said = [str(w.message) for w in caught if text in str(w.message)]
    assert len(said) == 1 and said[0].startswith(f"{_data(root)}/7: ")
    assert not any(ch in str(w.message) for w in caught for ch in "\t\x07")
    want = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group=GROUP)["count"].values
    np.testing.assert_array_equal(
        xr.open_zarr(MocHiveStore(root), group=GROUP)["count"].values, want)


@pytest.mark.parametrize("listed", [False, True], ids=["hashed", "listed"])
def test_an_invalid_name_that_is_no_array_is_skipped(hive_copy, listed):
    root = hive_copy("bare_versioned")
    group = root / _data(root) / "7"
    (group / "__junk").mkdir()
    (group / "__junk" / "notes.txt").write_text("not a zarr node")
    if listed:
        _drop_hashes(root)
    else:
        _add_hash(root, "7/__junk")
        _add_hash(root, "7/sub/array")  # deeper: not an array of the group
    root_group = zarr.open_group(MocHiveStore(root), mode="r")
    assert sorted(root_group[GROUP].array_keys()) == sorted(
        [*_fixture_arrays(), *COORDS])


def test_an_invalid_name_in_the_template_leaf_alone_hides_no_array_of_the_others(hive_copy):
    """Only the first leaf's ``count`` is renamed to a name that is not printable: the
    level's schema is taken from the next leaf, so ``count`` is presented, read from every
    other leaf, and the renamed leaf's rows are the fill value with the warning naming it."""
    root = hive_copy("bare_versioned")
    group = root / _data(root) / "7"
    shutil.move(group / "count", group / "co\x07unt")
    _edit(root / LEAF / "zarr.json", lambda doc: doc["attributes"]["morton_hive_commit"][
        "content_hashes"]["arrays"].update({"7/co\x07unt": doc["attributes"][
            "morton_hive_commit"]["content_hashes"]["arrays"].pop("7/count")}))
    with pytest.warns(HiveWarning, match=re.escape(LEAF) + ".*not a valid zarr node name"):
        got = xr.open_zarr(MocHiveStore(root), group=GROUP)["count"].values
    clean = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group=GROUP)
    mine = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned", aoi=["444111"]),
                        group=GROUP)["morton"].values
    rows = np.isin(clean["morton"].values, mine)
    assert 0 < rows.sum() < rows.size
    np.testing.assert_array_equal(got[~rows], clean["count"].values[~rows])
    assert (got[rows] == 0).all()  # the fill value


def test_a_hashed_name_that_cannot_be_looked_up_is_omitted_naming_it(hive_copy):
    root = hive_copy("bare_versioned")
    _add_hash(root, "7/" + "a" * 300)
    with pytest.warns(HiveWarning, match="longer than 255 bytes"):
        root_group = zarr.open_group(MocHiveStore(root), mode="r")
        assert sorted(root_group[GROUP].array_keys()) == sorted(
            [*_fixture_arrays(), *COORDS])


def test_a_leaf_array_named_like_a_window_coordinate_is_refused(hive_copy):
    root = hive_copy("windowed")
    hive = asyncio.run(MocHiveStore(FIXTURES / "windowed").hive())
    template = hive.products[0].levels[0].template
    group = root / _data(root, template) / "7"
    shutil.copytree(group / "count", group / "window")
    _edit(root / template / "zarr.json", lambda doc: doc["attributes"]["morton_hive_commit"][
        "content_hashes"]["arrays"].update({"7/window": "ab"}))
    with pytest.raises(HiveFormatError, match="array 'window' clashes with the window coordinate"):
        zarr.open_group(MocHiveStore(root), mode="r")


@pytest.mark.parametrize("name", ["lon", "healpix_index", "healpix"])
def test_a_leaf_array_named_like_a_cf_coordinate_is_kept_without_the_cf_layer(hive_copy, name):
    """A field may be named like an array of the CF HEALPix layer: it is presented as it
    is, and its level goes without the layer (xdggs's ``cell_ids`` stays)."""
    root = hive_copy("bare_versioned")
    group = root / _data(root) / "7"
    shutil.copytree(group / "count", group / name)
    _add_hash(root, f"7/{name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the other leaves lack the array: reported elsewhere
        ds = xr.open_zarr(MocHiveStore(root, centres=True), group=GROUP)
        got = ds[name].values
    assert name in ds.data_vars and got.dtype == ds["count"].dtype
    assert not (set(CF_LAYER) - {name}) & set(ds.variables)
    assert "grid_mapping" not in ds["count"].attrs
    assert ds.cell_ids.attrs["grid_name"] == "healpix"


# -- bounded coverage (class 7) -------------------------------------------------------------------


def _tiny_hive(root: Path, shard_order: int, ranges: list, extra: dict | None = None) -> Path:
    """A hive of nothing but a manifest (depth 2) and a root MOC listing ``ranges``."""
    root.mkdir()
    manifest = json.loads((FIXTURES / "bare_versioned/morton_hive.json").read_text())
    manifest.update(cell_order=shard_order + 2, shard_order=shard_order,
                    split_schedule=[1] * shard_order)
    (root / "morton_hive.json").write_text(json.dumps(manifest))
    env = {"spec": "morton-moc/1", "encoding": "ranges", "order": shard_order, "ranges": ranges,
           **(extra or {})}
    (root / "coverage.moc").write_text(json.dumps(env, separators=(",", ":")))
    return root


HUGE = [["1" + "1" * 13, "1" + "4" * 13]]  # one base cell at order 13: 4**13 = 67,108,864 nodes


def test_a_tiny_moc_listing_67m_nodes_is_unusable_before_anything_is_expanded(tmp_path):
    root = _tiny_hive(tmp_path / "huge", 13, HUGE)
    assert (root / "coverage.moc").stat().st_size < 140
    tracemalloc.start()
    try:
        with (pytest.warns(HiveWarning, match="lists 67,108,864 nodes, more than the "
                                              "16,777,216 this reader expands"),
              _raises(NoCoverageError, "no committed leaf among the 0 nodes found by the "
                                              "digit-tree walk")):
            zarr.open_group(MocHiveStore(root), mode="r")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # expanding would take 67 M x 8 bytes = 512 MiB at least


def test_a_moc_listing_too_many_nodes_cannot_be_walked_around_on_plain_http(tmp_path,
                                                                             http_root):
    root = _tiny_hive(tmp_path / "huge", 13, HUGE)
    store = MocHiveStore(http_root(root), storage_options=http_options())
    with (pytest.warns(HiveWarning, match="more than the 16,777,216"),
          _raises(CannotWalk, "root coverage coverage.moc is missing or unusable, and the hive "
                              "cannot be listed to walk its digit tree")):
        zarr.open_group(store, mode="r")


def test_the_node_limit_is_a_module_default_and_a_keyword(hive_copy, monkeypatch):
    root = hive_copy("bare_versioned")
    payload = (root / "coverage.moc").read_bytes()  # 4 nodes
    with _raises(UnusableCoverage, "coverage.moc: lists 4 nodes, more than the 3 this reader"):
        coverage.parse_root_coverage(payload, 5, "coverage.moc", max_nodes=3)
    assert coverage.parse_root_coverage(payload, 5, "coverage.moc", max_nodes=4)[0].size == 4
    with _raises(UnusableCoverage, "coverage.moc: the document is larger than the 10-byte"):
        coverage.parse_root_coverage(payload, 5, "coverage.moc", max_bytes=10)
    monkeypatch.setattr(coverage, "DEFAULT_MAX_COVERAGE_NODES", 3)
    with pytest.warns(HiveWarning, match="more than the 3 this reader expands.*digit-tree walk"):
        got = _open(root, verify="open")
    _equal(moczarr.open_hive(str(_walk_copy(root))), got)


_RSS = textwrap.dedent("""
    import gc, json, sys, warnings
    import xarray, zarr
    import asyncio
    from moczarr_store import MocHiveStore

    def status(key):
        with open("/proc/self/status") as lines:
            return next(int(l.split()[1]) for l in lines if l.startswith(key)) * 1024

    gc.collect()
    with open("/proc/self/clear_refs", "w") as reset:
        reset.write("5")  # the peak RSS (VmHWM) restarts from the current RSS
    before = status("VmRSS:")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        level = asyncio.run(MocHiveStore(sys.argv[1]).hive()).products[0].levels[0]
    print(json.dumps({"peak_mib": (status("VmHWM:") - before) / 2**20, "nodes": level.n_nodes,
                      "source": level.coverage_source, "template": level.template,
                      "warnings": [str(w.message)[:300] for w in caught]}))
""")


def _decimals(order: int, ranks: np.ndarray) -> np.ndarray:
    """Base-4 decimal ids (``bytes``) of order-``order`` ranks of base cell 4."""
    shifts = np.uint64(2) * np.arange(order - 1, -1, -1, dtype=np.uint64)
    digits = ((ranks[:, None] >> shifts) & np.uint64(3)).astype(np.uint8) + ord("1")
    return np.concatenate([np.full((ranks.size, 1), ord("4"), np.uint8), digits], axis=1).view(
        f"S{order + 1}").ravel()


def _big_moc_hive(root: Path, n_ranges: int) -> Path:
    """An order-12 hive whose root MOC lists ``n_ranges`` single nodes (35 bytes each) and
    whose first listed node is a real leaf."""
    ranks = np.arange(n_ranges, dtype=np.uint64) * np.uint64(2)
    ids = _decimals(12, ranks)
    body = b",".join(b'["%s","%s"]' % (d, d) for d in ids)
    _tiny_hive(root, 12, [])
    moc = (root / "coverage.moc").read_bytes().replace(b'"ranges":[]', b'"ranges":[' + body + b"]")
    (root / "coverage.moc").write_bytes(moc)
    _copy_leaf(root, ids[0].decode(), 14)
    return root


def _peak(root: Path) -> dict:
    """What opening ``root`` costs at peak in a fresh process (RSS above the start)."""
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("measuring peak RSS needs Linux's /proc/self/clear_refs")
    done = subprocess.run([sys.executable, "-c", _RSS, str(root)], capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_huge_moc_document_is_parsed_in_bounded_memory(tmp_path):
    root = _big_moc_hive(tmp_path / "big", 750_000)
    size = (root / "coverage.moc").stat().st_size
    assert 20 << 20 < size < coverage.DEFAULT_MAX_COVERAGE_BYTES
    got = _peak(root)
    assert got["source"] == "moc" and got["nodes"] == 750_000
    assert got["peak_mib"] < 16 * size / 2**20, got  # ~12x the document, never GBs


def test_a_moc_document_over_the_byte_cap_is_refused_before_parsing(tmp_path):
    root = _big_moc_hive(tmp_path / "big", 1_150_000)
    assert (root / "coverage.moc").stat().st_size > 36 << 20  # 32 MiB is the cap
    got = _peak(root)
    assert got["source"] == "walk" and got["nodes"] == 1
    assert any("is larger than the 33,554,432-byte limit" in w for w in got["warnings"]), got
    assert got["peak_mib"] < 2 * coverage.DEFAULT_MAX_COVERAGE_BYTES / 2**20, got  # one read


# -- bounded template search --------------------------------------------------------------------


def _copy_leaf(root: Path, decimal: str, cell_order: int, stamped: bool = True) -> str:
    """A copy of bare_versioned's template leaf (16 cells) as the leaf of ``decimal``, its
    group renamed to ``cell_order``; ``stamped=False`` leaves it without a commit stamp."""
    base = decimal[:2] if decimal.startswith("-") else decimal[:1]
    rel = "/".join([base, *decimal[len(base):], f"{decimal}.zarr"])
    source = FIXTURES / "bare_versioned" / LEAF
    copy_leaf(source, root / rel)
    run = _data(FIXTURES / "bare_versioned").rsplit("/", 1)[1]
    (root / rel / run / "7").rename(root / rel / run / str(cell_order))

    def rekey(doc):
        stamp = doc["attributes"]["morton_hive_commit"]
        arrays = stamp["content_hashes"]["arrays"]
        stamp["content_hashes"]["arrays"] = {f"{cell_order}/{k[2:]}": v for k, v in arrays.items()}
        if not stamped:
            del doc["attributes"]["morton_hive_commit"]

    _edit(root / rel / "zarr.json", rekey)
    return rel


N_LISTED = 200_000
FIRST = "4" + "1" * 9  # order 9


def _listed(root: Path) -> Path:
    last = rank_to_decimal(decimal_to_rank(FIRST) + N_LISTED - 1, 9)
    return _tiny_hive(root, 9, [[FIRST, last]])


def _nth(index: int) -> str:
    return rank_to_decimal(decimal_to_rank(FIRST) + index, 9)


def test_the_template_is_found_by_listing_not_by_probing_every_node(tmp_path):
    root = _listed(tmp_path / "listed")
    rel = _copy_leaf(root, _nth(N_LISTED - 1), 11)
    store = MocHiveStore(root)
    ds = xr.open_zarr(store, group="atl06/o11")
    level_ = asyncio.run(store.hive()).products[0].levels[0]
    assert level_.template == rel and level_.n_nodes == N_LISTED
    counts = store.request_stats.counts
    # one LIST per directory on the way to the leaf: the root, its base cell, 9 digits; then
    # one of the template's group
    assert counts["list"] == 11 + 1
    # manifest + aggregation.yaml (absent: no folds declared) + MOC, 9 probed stamps, then
    # the leaf's stamp, group, arrays and stored morton, and the writer-run sample's stamps:
    # RUN_PROBES picks spread over the domain, of which the first (probed) and the last (the
    # template) are known already
    sample = RUN_PROBES - 2
    assert store.request_stats.total == 3 + 9 + 12 + 2 + len(level_.arrays) + 1 + sample
    leaf_count = zarr.open_array(root / _data(root, rel) / "11/count", mode="r")[:]
    np.testing.assert_array_equal(ds["count"][-16:].values, leaf_count)


def test_no_committed_leaf_among_200k_listed_nodes_costs_a_bounded_search(tmp_path):
    root = _listed(tmp_path / "listed")
    leaves = [_copy_leaf(root, _nth(index), 11, stamped=False) for index in range(20)]
    store = MocHiveStore(root)
    with _raises(NoCoverageError, "no committed leaf among the 200,000 nodes listed by the "
                                  "root coverage coverage.moc (the first 9 of 200,000 objects "
                                  "probed, then the digit-tree walk found 11 other existing "
                                  "objects, none committed), so it has no schema; if leaves "
                                  "were written since it was made, regenerate it"):
        zarr.open_group(store, mode="r")
    counts = store.request_stats.counts
    # manifest, aggregation.yaml (absent), MOC, one stamp per existing leaf
    assert counts["get_range"] == 3 + 20
    # one LIST per directory holding leaves: the root and every digit directory on the way
    leaf_dirs = [Path(rel).parent.parts for rel in leaves]
    assert counts["list"] == len({parts[:i] for parts in leaf_dirs for i in range(len(parts) + 1)})


def test_the_template_search_on_plain_http_probes_up_to_a_limit(tmp_path, http_root,
                                                                 monkeypatch):
    monkeypatch.setattr(template, "DEFAULT_TEMPLATE_PROBES", 300)
    root = _listed(tmp_path / "listed")
    store = MocHiveStore(http_root(root), storage_options=http_options())
    with _raises(NoCoverageError, "(the first 300 of 200,000 objects probed (the probe limit); "
                                  "the backend cannot be listed to find existing objects"):
        zarr.open_group(store, mode="r")
    assert store.request_stats.counts["get_range"] == 3 + 300  # with aggregation.yaml
    assert store.request_stats.counts["list"] == 1  # the attempt that told it cannot list


def test_the_template_search_on_plain_http_finds_a_leaf_within_the_limit(tmp_path, http_root):
    root = _listed(tmp_path / "listed")
    rel = _copy_leaf(root, _nth(200), 11)
    store = MocHiveStore(http_root(root), storage_options=http_options())
    zarr.open_group(store, mode="r")
    level_ = asyncio.run(store.hive()).products[0].levels[0]
    assert level_.template == rel
    # batches of 1, 8, 16, 32, 64, 128: the 201st object is in the last
    # then the template's group and arrays (its stored morton too), and the 7 documents of
    # the writer runs' sample: every one a bounded (ranged) read, none read whole
    counts = store.request_stats.counts
    assert "get" not in counts
    assert counts["get_range"] == 3 + 249 + 1 + len(level_.arrays) + 1 + 7  # as above


# -- nothing else escapes -------------------------------------------------------------------------

VALUES = [None, 7.5, "x", [], {"a": []}]  # absent, a non-integer number, and the wrong kinds
SKIP = {"fields", "actuals", "materialized", "zarr_conventions", "dggs", "coverage"}
"""Subtrees this package never reads (passed through as attributes at most)."""


def _paths(doc, prefix=()):
    """Key/index paths into a JSON document, short lists only, skipping ``SKIP``."""
    items = doc.items() if isinstance(doc, dict) else (
        enumerate(doc) if isinstance(doc, list) and len(doc) < 4 else ())
    for key, value in items:
        if key not in SKIP:
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


@pytest.mark.parametrize("fixture,kind,under", [
    ("bare_versioned", "manifest", ""), ("bare_versioned", "stamp", ""),
    ("bare_versioned", "group", ""), ("bare_versioned", "array", ""), ("sharded", "array", ""),
    ("windowed_explicit", "manifest", "temporal"), ("pyramid2", "manifest", "pyramid"),
])
def test_any_field_of_any_type_is_read_or_refused_by_this_package(hive_copy, fixture, kind,
                                                                  under):
    """Every field the package reads, replaced by each kind of JSON value: opening the
    whole hierarchy either works or raises an error of this package (never TypeError,
    KeyError, AttributeError, ...)."""
    root = hive_copy(fixture)
    template = asyncio.run(MocHiveStore(root).hive()).products[0].levels[0]
    data, order = _data(root, template.template), template.cell_order
    rel = {"manifest": "morton_hive.json", "stamp": f"{template.template}/zarr.json",
           "group": f"{data}/{order}/zarr.json", "array": f"{data}/{order}/count/zarr.json"}[kind]
    original = (root / rel).read_text()
    for path in [p for p in _paths(json.loads(original)) if not under or p[0] == under]:
        for value in VALUES:
            _edit(root / rel, lambda doc, p=path, v=value: _set(*p, value=v)(doc))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    zarr.open_group(MocHiveStore(root), mode="r")  # consolidates every level
            except MocHiveError:
                pass
            except Exception as err:  # pragma: no cover - the failure report
                pytest.fail(f"{rel} {list(path)} = {value!r}: {type(err).__name__}: {err}")
            (root / rel).write_text(original)
