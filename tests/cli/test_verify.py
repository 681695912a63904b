"""``verify_hive`` / ``moczarr-store verify``: content hashes recomputed through the store.

Expected verdicts come from the fixtures themselves: every stamped object found by
walking a fixture directory, and ``moczarr.stats.hash_arrays`` (the reference recipe,
reading the object directly) compared with the object's commit stamp.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from moczarr.stats import combined_hash, hash_arrays
from support.hives import FIXTURES, fixture_roots, swap

from moczarr_store import MocHiveStore
from moczarr_store.cli import main
from moczarr_store.verify import (
    VerifyReport,
    as_leaf_dtype,
    printable,
    public_source,
    verify_hive,
)

pytest_plugins = ["support.servers"]
FIXTURE_NAMES = [p.name for p in fixture_roots()]
OLD_WRITER = "mixed_writers"  # its zagg 0.38 leaves record no content hashes
NO_INDEX = 2**64 - 1


def stamped_objects(root: Path) -> dict[str, dict]:
    """``{hive-relative object path: commit stamp}`` of every stamped object under ``root``."""
    found = {}
    for doc in sorted(root.rglob("*.zarr/zarr.json")):
        rel = doc.parent.relative_to(root).as_posix()
        if "/run-" in f"/{rel}" or rel.startswith("icechunk/"):
            continue
        stamp = json.loads(doc.read_text()).get("attributes", {}).get("morton_hive_commit")
        if isinstance(stamp, dict):
            found[rel] = stamp
    return found


def product_root(root: Path, rel: str) -> tuple[Path, str]:
    """The product root holding object ``rel`` (its manifest's directory), and ``rel``
    relative to it."""
    parts = rel.split("/")
    for cut in range(len(parts)):
        base = root.joinpath(*parts[:cut])
        if (base / "morton_hive.json").exists():
            return base, "/".join(parts[cut:])
    raise AssertionError(f"no manifest above {rel}")


def oracle_mismatches(root: Path, rel: str, stamp: dict) -> list[str]:
    """Arrays whose reference hash differs from the stamp's record (moczarr reads the object
    directly)."""
    base, inner = product_root(root, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            computed = hash_arrays(str(base), inner)
        except Exception:  # the reference reader cannot decode it at all
            return sorted(stamp["content_hashes"]["arrays"])
    recorded = stamp["content_hashes"]["arrays"]
    return sorted(k for k in set(computed) | set(recorded) if computed.get(k) != recorded.get(k))


def run(root: Path, **options) -> VerifyReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(verify_hive(MocHiveStore(root, **options)))


def cli(capsys, *args: str) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["verify", *map(str, args)])
    return code, capsys.readouterr().out


# -- clean fixtures ------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", ["leaf", "shard", "inner"])
@pytest.mark.parametrize("name", [n for n in FIXTURE_NAMES if n != OLD_WRITER])
def test_every_fixture_verifies_clean(name, chunking):
    root = FIXTURES / name
    stamps = stamped_objects(root)
    assert stamps, f"{name} has no stamped object"
    assert all("content_hashes" in s for s in stamps.values())  # zagg 0.61 records them
    assert {rel: oracle_mismatches(root, rel, s) for rel, s in stamps.items()} == dict.fromkeys(
        stamps, []
    )
    report = run(root, chunking=chunking)
    assert report.ok, [(v.object, v.problems) for v in report.failures]
    assert report.objects == report.clean == len(stamps)
    assert report.n_unverifiable == report.n_not_stamped == 0
    recorded = {
        k
        for s in stamps.values()
        for k in s["content_hashes"]["arrays"]
    }
    assert report.arrays > 0 and recorded


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner", 2])
def test_an_old_writers_leaves_are_unverifiable_and_the_new_ones_clean(chunking):
    root = FIXTURES / OLD_WRITER
    stamps = stamped_objects(root)
    hashed = {rel for rel, s in stamps.items() if "content_hashes" in s}
    assert len(hashed) == 2 and len(stamps) == 4  # zagg 0.61's two leaves, 0.38's two
    assert {rel: oracle_mismatches(root, rel, stamps[rel]) for rel in hashed} == dict.fromkeys(
        hashed, []
    )
    report = run(root, chunking=chunking)
    assert report.ok and report.clean == 2 and report.n_unverifiable == 2


def test_fields_and_coordinates_are_checked_per_object():
    """bare_versioned records 9 fields + morton in each of its 4 leaves: all 40 checked."""
    root = FIXTURES / "bare_versioned"
    stamps = stamped_objects(root)
    report = run(root)
    assert report.arrays == sum(len(s["content_hashes"]["arrays"]) for s in stamps.values()) == 40


def test_unserved_arrays_are_listed_not_failed():
    """pyramid2's leaf columns hold a 2/ node-order partial beside the 3/ level: the store
    serves only 3/, so 2/ is listed as not checked."""
    root = FIXTURES / "pyramid2"
    columns = {
        rel: sorted(k for k in s["content_hashes"]["arrays"] if k.startswith("2/"))
        for rel, s in stamped_objects(root).items()
        if rel.endswith("all.pyramid.zarr")
    }
    assert len(columns) == 2 and all(columns.values())
    report = run(root)
    assert report.ok
    assert {v.object: v.unserved for v in report.unserved} == columns


def test_group_restricts_to_one_level():
    root = FIXTURES / "pyramid1"
    at_o5 = sorted(
        rel for rel, s in stamped_objects(root).items()
        if any(k.startswith("5/") for k in s["content_hashes"]["arrays"])
    )
    assert len(at_o5) == 2
    report = asyncio.run(verify_hive(MocHiveStore(root), group="atl06/o5"))
    assert report.objects == report.clean == 2


def test_group_naming_no_level_is_an_error(capsys):
    code = main(["verify", str(FIXTURES / "sharded"), "--group", "atl06/o99",
                 "--computed-orders", "none"])  # the stored order only
    assert code == 2  # a usage error, not a verification failure (1)
    assert ("group 'atl06/o99' names no group of the hive (did you mean 'atl06/o7' or "
            "'atl06'?); its groups: atl06, atl06/o7") in capsys.readouterr().err


# -- damage --------------------------------------------------------------------------------


def leaf_array_dir(root: Path, rel: str, key: str) -> Path:
    stamp = stamped_objects(root)[rel]
    base = root / rel
    return (base / stamp["current"] if stamp.get("current") else base) / key


def flip_payload_byte(array_dir: Path) -> None:
    """Flip one byte of the first chunk's values: inside an inner chunk's payload (never
    the shard index) for a sharded array, else the first byte of a plain chunk."""
    meta = json.loads((array_dir / "zarr.json").read_text())
    codec = meta["codecs"][0]
    chunk = array_dir / "c" / "0"
    data = bytearray(chunk.read_bytes())
    if codec["name"] == "sharding_indexed":
        conf = codec["configuration"]
        n = meta["chunk_grid"]["configuration"]["chunk_shape"][0] // conf["chunk_shape"][0]
        crc = conf["index_codecs"][-1]["name"] == "crc32c"
        index = data[-(16 * n + 4 * crc):]
        entries = np.frombuffer(bytes(index[: 16 * n]), dtype="<u8").reshape(n, 2)
        offset, length = next((int(o), int(n)) for o, n in entries if o != NO_INDEX)
        assert length > 0 and offset + length <= len(data) - len(index)
        position = offset + length // 2
    else:
        assert [c["name"] for c in meta["codecs"]] == ["bytes"]
        position = 0
    data[position] ^= 0x01
    chunk.write_bytes(bytes(data))


CASES = [  # (fixture, object, array): plain, sharded, ragged, transcoded, overview, column
    ("bare_versioned", "4/4/4/1/1/2/444112.zarr", "7/h_mean"),
    ("sharded", "4/4/4/1/1/44411.zarr", "7/count"),
    ("sharded", "-4/1/1/3/3/-41133.zarr", "7/h_max"),
    ("ragged", "4/4/4/1/1/44411.zarr", "6/count"),
    ("mixed", "4/4/4/1/1/2/444112.zarr", "7/count"),  # int32 leaf, int64 virtual
    ("mixed", "4/4/4/1/1/3/444113.zarr", "7/h_min"),  # the sharded leaf of a plain hive
    ("legacy", "-4/1/1/3/3/1/-411331.zarr", "7/count"),
    ("windowed", "4/4/4/1/1/1/444111_2020.zarr", "7/h_min"),
    ("pyramid1", "4/4/4/1/all.zarr", "5/count"),
    ("pyramid2", "4/4/1/all.pyramid.zarr", "3/h_max"),
    ("multiproduct", "atl06_b/-4/1/1/3/3/1/-411331.zarr", "7/h_mean"),
]


@pytest.mark.parametrize(("name", "rel", "key"), CASES)
def test_flipped_byte_is_named(hive_copy, capsys, name, rel, key):
    root = hive_copy(name)
    flip_payload_byte(leaf_array_dir(root, rel, key))
    stamps = stamped_objects(root)
    expected = {r: m for r, s in stamps.items() if (m := oracle_mismatches(root, r, s))}
    assert expected == {rel: [key]}
    report = run(root)
    assert not report.ok
    assert [(v.object, v.status) for v in report.failures] == [(rel, "mismatch")]
    assert [(p.array, p.kind) for p in report.failures[0].problems] == [(key, "mismatch")]
    assert report.clean == len(stamps) - 1
    code, out = cli(capsys, root)
    assert code == 1
    assert "MISMATCH" in out and rel in out and f"  {key}: mismatch" in out


@pytest.mark.parametrize("chunking", ["shard", "inner"])
@pytest.mark.parametrize(("name", "rel", "key"), [
    ("sharded", "4/4/4/1/1/44411.zarr", "7/count"),  # plain inner chunks: numpy
    ("ragged", "4/4/4/1/1/44411.zarr", "6/count"),
    ("ragged", "4/4/4/1/1/44411.zarr", "6/h_tdigest"),  # vlen + zstd: zarr's codecs
])
def test_flipped_byte_is_named_whatever_the_chunking(hive_copy, name, rel, key, chunking):
    """A leaf array served as one shard, or as many inner chunks, is decoded whole: the
    flipped byte is named against that object and array alone (a compressed chunk may
    decode to other values or not at all)."""
    root = hive_copy(name)
    flip_payload_byte(leaf_array_dir(root, rel, key))
    report = run(root, chunking=chunking)
    assert [v.object for v in report.failures] == [rel]
    assert [p.array for p in report.failures[0].problems] == [key]
    assert report.failures[0].status == "mismatch" or key.endswith("h_tdigest")
    assert report.clean == len(stamped_objects(root)) - 1


def test_corrupt_compressed_ragged_chunk_is_named(hive_copy, capsys):
    """A flipped byte inside a zstd-compressed ragged inner chunk: decoded garbage or a
    decode failure, either way that object and array are named and the exit is non-zero."""
    root = hive_copy("ragged")
    rel, key = "4/4/4/1/1/44411.zarr", "6/h_tdigest"
    flip_payload_byte(leaf_array_dir(root, rel, key))
    assert oracle_mismatches(root, rel, stamped_objects(root)[rel]) != []
    report = run(root, chunking="shard")
    assert [v.object for v in report.failures] == [rel]
    assert [p.array for p in report.failures[0].problems] == [key]
    assert report.failures[0].status in ("mismatch", "error")
    code, out = cli(capsys, root)
    assert code == 1 and key in out


def test_truncated_chunk_is_an_error_naming_the_array(hive_copy, capsys):
    root = hive_copy("bare_versioned")
    rel, key = "-4/1/1/3/4/2/-411342.zarr", "7/h_max"
    chunk = leaf_array_dir(root, rel, key) / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:-4])
    report = run(root)
    assert [(v.object, v.status) for v in report.failures] == [(rel, "error")]
    problem = report.failures[0].problems[0]
    assert (problem.array, problem.kind) == (key, "error")
    assert rel in problem.detail  # the store's own error names the leaf object
    code, out = cli(capsys, root)
    assert code == 1 and f"ERROR atl06/o7 {rel}" in out


SWAPPED = ["4/4/4/1/1/1/444111.zarr", "4/4/4/1/1/2/444112.zarr"]


def test_misplaced_leaf_is_reported_from_its_stamp(hive_copy, capsys):
    """Two leaves swapped on disk: each stamp's coverage box names cells of its own node,
    not the one its new path names, so each is reported misplaced without being read (the
    store serves it as the fill value)."""
    root = hive_copy("bare_versioned")
    swap(root, *SWAPPED)
    report = run(root)
    assert sorted(v.object for v in report.failures) == SWAPPED
    for verdict in report.failures:
        assert verdict.status == "mismatch"
        assert [(p.array, p.kind) for p in verdict.problems] == [("zarr.json", "misplaced")]
        assert "another node" in verdict.problems[0].detail
    code, out = cli(capsys, root)
    assert code == 1 and f"MISMATCH atl06/o7 {SWAPPED[0]}" in out and "misplaced" in out


def test_an_object_its_level_refuses_is_reported_not_read(hive_copy, capsys):
    """Two overview objects swapped on disk: each ``zagg_overview`` block names the other's
    node, so the store refuses each at its new place (serving the fill value); verify says
    so once per object instead of an error per array."""
    root = hive_copy("pyramid1")
    a, b = "-4/1/all.zarr", "4/4/all.zarr"
    swap(root, a, b)
    report = run(root)
    assert sorted(v.object for v in report.failures) == [a, b]
    for verdict in report.failures:
        assert [(p.array, p.kind) for p in verdict.problems] == [("zarr.json", "refused")]
        assert "another node" in verdict.problems[0].detail
    code, out = cli(capsys, root)
    assert code == 1 and f"MISMATCH atl06/o3 {a}" in out


def test_misplaced_leaf_without_a_coverage_box_is_a_coordinate_mismatch(hive_copy):
    """The same swap with stamps that record no coverage (older writers): each now serves
    the other's values at its own rows. Its fields still match their records (the values
    moved with them); the morton recorded for each (its original node) is not the morton
    of the rows it now fills."""
    root = hive_copy("bare_versioned")
    for rel in SWAPPED:
        edit_stamp(root, rel, lambda stamp: stamp.pop("coverage"))
    swap(root, *SWAPPED)
    report = run(root)
    assert sorted(v.object for v in report.failures) == SWAPPED
    for verdict in report.failures:
        assert [(p.array, p.kind) for p in verdict.problems] == [("7/morton", "mismatch")]
        assert "misplaced" in verdict.problems[0].detail


def edit_stamp(root: Path, rel: str, change) -> None:
    doc_path = root / rel / "zarr.json"
    doc = json.loads(doc_path.read_text())
    change(doc["attributes"]["morton_hive_commit"])
    doc_path.write_text(json.dumps(doc))


def test_tampered_record_is_named(hive_copy):
    root = hive_copy("sharded")
    rel = "4/4/4/1/2/44412.zarr"

    def tamper(stamp):
        stamp["content_hashes"]["arrays"]["7/h_min"] = "0" * 64
        stamp["content_hashes"]["combined"] = combined_hash(stamp["content_hashes"]["arrays"])

    edit_stamp(root, rel, tamper)
    report = run(root)
    assert [(v.object, [p.array for p in v.problems]) for v in report.failures] == [
        (rel, ["7/h_min"])
    ]


def test_combined_hash_disagreeing_with_the_record_is_named(hive_copy):
    root = hive_copy("sharded")
    rel = "-4/1/1/3/3/-41133.zarr"
    edit_stamp(root, rel, lambda s: s["content_hashes"].update(combined="f" * 64))
    report = run(root)
    assert [(v.object, [p.kind for p in v.problems]) for v in report.failures] == [
        (rel, ["combined"])
    ]


@pytest.mark.parametrize("rel", ["4/4/4/1/1/1/444111.zarr", "-4/1/1/3/4/2/-411342.zarr"])
def test_stamp_without_hashes_is_unverifiable(hive_copy, capsys, rel):
    """The first (template) and last leaf of bare_versioned lose their record."""
    root = hive_copy("bare_versioned")
    edit_stamp(root, rel, lambda s: s.pop("content_hashes"))
    report = run(root)
    assert report.ok
    assert [v.object for v in report.unverifiable] == [rel]
    assert report.clean == len(stamped_objects(root)) - 1
    code, out = cli(capsys, root)
    assert code == 0 and f"UNVERIFIABLE atl06/o7 {rel}" in out


def test_debris_in_the_domain_is_skipped_and_counted(hive_copy):
    """A leaf listed by the root MOC whose stamp is gone reads as fill: not a stamped
    object, so counted as not stamped, never failed."""
    root = hive_copy("legacy")
    rel = "4/4/4/1/1/3/444113.zarr"
    edit_stamp(root, rel, lambda s: s.clear())
    doc = json.loads((root / rel / "zarr.json").read_text())
    doc["attributes"].pop("morton_hive_commit")
    (root / rel / "zarr.json").write_text(json.dumps(doc))
    report = run(root)
    assert report.ok and report.not_stamped == [rel]
    assert report.clean == len(stamped_objects(root))


def test_hive_names_are_escaped_in_text(hive_copy, capsys):
    """A record key is hive-supplied text: control characters reach the terminal escaped."""
    root = hive_copy("sharded")
    rel = "4/4/4/1/1/44411.zarr"
    evil = "7/\x1b[2Jevil\u202e"

    def add(stamp):
        stamp["content_hashes"]["arrays"][evil] = "0" * 64
        stamp["content_hashes"]["combined"] = combined_hash(stamp["content_hashes"]["arrays"])

    edit_stamp(root, rel, add)
    code, out = cli(capsys, root)
    assert "\x1b" not in out and "\u202e" not in out
    assert "7/\\x1b[2Jevil\\u202e" in out
    assert code == 0  # a recorded array the store does not serve is not checked
    assert printable("a\\b\n") == "a\\\\b\\n"


# -- interfaces ----------------------------------------------------------------------------


def test_cli_json_output_parses(capsys):
    root = FIXTURES / "windowed_explicit"
    code, out = cli(capsys, root, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["ok"] is True
    assert summary["objects"] == summary["clean"] == len(stamped_objects(root))
    assert summary["failures"] == [] and summary["unverifiable"] == 0
    assert summary["bytes_hashed"] > 0


def test_cli_json_names_failures(hive_copy, capsys):
    root = hive_copy("sharded")
    rel, key = "4/4/4/1/2/44412.zarr", "7/count"
    flip_payload_byte(leaf_array_dir(root, rel, key))
    code, out = cli(capsys, root, "--json")
    summary = json.loads(out)
    assert code == 1 and summary["ok"] is False and summary["mismatch"] == 1
    [failure] = summary["failures"]
    assert failure["object"] == rel and [p["array"] for p in failure["problems"]] == [key]


def test_progress_counts_every_object():
    class Bar:
        total, done = None, 0

        def reset(self, total=None):
            self.total = total

        def update(self, n=1):
            self.done += n

    bar = Bar()
    asyncio.run(verify_hive(MocHiveStore(FIXTURES / "windowed"), progress=bar))
    # 3 nodes x 2 windows: 4 stamped leaves and 2 (node, window) pairs with no leaf
    assert bar.total == bar.done == 6


def test_no_progress_output_off_a_terminal(capsys):
    code = main(["verify", str(FIXTURES / "sharded")])
    assert code == 0 and capsys.readouterr().err == ""


def test_session_is_accepted(tmp_path):
    store = MocHiveStore(shutil.copytree(FIXTURES / "ragged", tmp_path / "r"))
    report = asyncio.run(verify_hive(store.session, jobs=1))
    assert report.ok and report.clean == 2


@pytest.mark.parametrize("name", ["sharded", "pyramid1", "ragged"])
def test_verifies_over_plain_http(http_server, name):
    """Plain HTTP cannot list: the stamps' own records name the arrays to check."""
    from support.servers import http_options

    store = MocHiveStore(f"{http_server.url}/{name}", storage_options=http_options())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = asyncio.run(verify_hive(store))
    assert report.ok and report.objects == report.clean == len(stamped_objects(FIXTURES / name))
    assert store.request_stats.counts["get"] > 0


def test_flat_record_shape_is_read(hive_copy):
    """A flat ``{array: hash, "combined": hash}`` record verifies like the nested one; one
    holding only ``combined`` records no array, so it is unverifiable."""
    root = hive_copy("legacy")
    flat, bare = "444111", "-411331"
    rel_flat = next(r for r in stamped_objects(root) if r.endswith(f"/{flat}.zarr"))
    rel_bare = next(r for r in stamped_objects(root) if r.endswith(f"/{bare}.zarr"))

    def flatten(stamp):
        content = stamp["content_hashes"]
        stamp["content_hashes"] = {**content["arrays"], "combined": content["combined"]}

    edit_stamp(root, rel_flat, flatten)
    edit_stamp(root, rel_bare, lambda s: s.update(content_hashes={"combined": "0" * 64}))
    report = run(root)
    assert report.ok and report.clean == len(stamped_objects(root)) - 1
    assert [v.object for v in report.unverifiable] == [rel_bare]


def test_values_are_cast_back_exactly():
    """The virtual dtype may be a promotion of the leaf's: values go back to the leaf's
    dtype bit for bit, and a value that cannot is an error, never rounded into a match."""
    wide = np.array([1, -2, 2**31 - 1], dtype="int64")
    assert as_leaf_dtype(wide, np.dtype("int32"), "x").tobytes() == np.array(
        [1, -2, 2**31 - 1], dtype="<i4"
    ).tobytes()
    halves = np.array([0.5, np.nan], dtype="float64")
    assert as_leaf_dtype(halves, np.dtype("float32"), "x").dtype == np.float32
    with pytest.raises(ValueError, match="not all representable"):
        as_leaf_dtype(np.array([0.1]), np.dtype("float32"), "x")
    with pytest.raises(ValueError, match="not all representable"):
        as_leaf_dtype(np.array([2**40]), np.dtype("int32"), "x")


def test_progress_bar_on_a_terminal(monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    code = main(["verify", str(FIXTURES / "pyramid1")])
    assert code == 0
    assert "/7 " in err.getvalue() and "obj/s" in err.getvalue()  # 7 objects to verify
    assert "7 stamped objects" in capsys.readouterr().out


def test_report_source_carries_no_credentials():
    assert public_source("s3://AKIA:secret@bucket/hive?X-Amz-Signature=abc#f") == "s3://bucket/hive"
    assert public_source("https://u:p@example.org:8443/h?sig=1") == "https://example.org:8443/h"
    assert public_source("file:///data/hive") == "file:///data/hive"


# -- checking nothing is not success -------------------------------------------------------


def strip_hashes(root: Path) -> int:
    """Remove ``content_hashes`` from every commit stamp under ``root``; how many."""
    stripped = 0
    for path in root.rglob("zarr.json"):
        doc = json.loads(path.read_text())
        stamp = doc.get("attributes", {}).get("morton_hive_commit")
        if isinstance(stamp, dict) and stamp.pop("content_hashes", None) is not None:
            path.write_text(json.dumps(doc))
            stripped += 1
    return stripped


def test_a_run_that_checked_nothing_is_not_a_success(hive_copy, capsys):
    """Values altered, then every stamp's hashes stripped: nothing can be checked, which
    verify must not report as ``ok`` (exit 7, status ``unchecked``); ``--strict`` fails
    every unverifiable object (exit 1)."""
    from moczarr_store.cli import EXIT_DIFFERS, EXIT_UNCHECKED

    root = hive_copy("sharded")
    flip_payload_byte(leaf_array_dir(root, "4/4/4/1/2/44412.zarr", "7/count"))
    assert strip_hashes(root) >= len(stamped_objects(root)) > 0  # versions' stamps too
    assert not any("content_hashes" in s for s in stamped_objects(root).values())
    report = run(root)
    assert report.status == "unchecked" and not report.ok and report.clean == 0
    code, out = cli(capsys, root, "--json")
    summary = json.loads(out)
    assert code == EXIT_UNCHECKED and summary["status"] == "unchecked"
    assert summary["ok"] is False and summary["unverifiable"] == len(stamped_objects(root))
    code, out = cli(capsys, root)
    assert code == EXIT_UNCHECKED and "UNCHECKED: no object was verified" in out
    assert cli(capsys, root, "--strict")[0] == EXIT_DIFFERS


def test_strict_fails_unverifiable_objects_beside_clean_ones(capsys):
    root = FIXTURES / OLD_WRITER  # two leaves with hashes, two without
    code, out = cli(capsys, root, "--json")
    assert code == 0 and json.loads(out)["status"] == "verified"
    code, out = cli(capsys, root, "--json", "--strict")
    summary = json.loads(out)
    assert code == 1 and summary["strict"] is True and summary["unverifiable"] == 2


def test_the_help_says_the_hashes_are_integrity_not_authenticity(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "integrity, not authenticity" in text and "7 when nothing could be checked" in text
