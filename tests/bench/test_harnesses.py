"""The benchmark harnesses run as a user runs them (``python -m benchmarks.…``), short."""

from __future__ import annotations

import json
import math
import re

from support.hives import FIXTURES
from support.processes import run_benchmark


def test_short_load_test():
    """The load test at 20 clients x 10 requests: every answer right (each checked against
    the in-process store), and the mix has full reads, ranges and unknown keys."""
    status, out = run_benchmark("serve_load", "--hive", str(FIXTURES / "sharded"),
                                "--clients", "20", "--requests", "10")
    assert status == 0, out
    assert "| 0 errors;" in out, out
    statuses = re.search(r"statuses \{([^}]*)\}", out)
    assert statuses, out
    seen = {int(code) for code in re.findall(r"(\d+):", statuses.group(1))}
    assert {200, 206, 404} <= seen, out


def test_target_rows_the_quick_run_leaves_out(tmp_path):
    """``--onecell`` and ``--computed`` (target rows ``--quick`` does not measure) on the small
    fixtures: each row measured (its values checked inside against moczarr), written as
    JSON, and every printed row as wide as the columns the docs' page renders."""
    out = tmp_path / "targets.json"
    status, text = run_benchmark("run", "--onecell", f"{FIXTURES / '_onecell'}:atl06/o10",
                                 "--computed", f"{FIXTURES / 'pyramid1'}:atl06", "--rounds",
                                 "1", "--json", str(out))
    assert status == 0, text
    doc = json.loads(out.read_text())
    rows = [(r["hive"], r["row"].split(":")[0]) for r in doc["targets"]]
    assert rows == [("_onecell", "one-cell leaves")] * 4 + [("pyramid1", "o6 (between shard "
                    "and source order)"), ("pyramid1", "o4 (one coarser than the shard "
                    "order)"), ("pyramid1", "o4")], rows
    assert all(r["ms"] > 0 and math.isfinite(r["ratio"]) for r in doc["targets"]), doc
    assert all(len(r) == len(doc["targets_columns"]) for r in doc["targets_table"]), doc
    assert doc["hive"] == "_onecell, pyramid1" and str(FIXTURES) not in doc["command"], doc


def test_damage_rss_on_a_small_synthetic_hive():
    """``damage_bench rss`` on 300 listed shards, one with a leaf: the clean hive (every
    leaf path read as that one leaf) meets no problem, the damaged one each absent leaf."""
    status, out = run_benchmark("damage_bench", "rss", "--shards", "300")
    assert status == 0, out
    clean, missing = (line for line in out.splitlines() if line.startswith("| scan of"))
    assert "clean (every leaf present)" in clean and clean.endswith("| no problems |"), out
    assert "{'atl06/o11 absent': 299}" in missing, out


def test_damage_absent_on_a_small_synthetic_hive():
    """``damage_bench absent`` on 2,000 listed shards, the first 10 with a leaf: a row per
    chunking, each read costing what exists, not a request per listed shard."""
    status, out = run_benchmark("damage_bench", "absent", "--shards", "2000", "--leaves",
                                "10", "--window", "256")
    assert status == 0, out
    rows = [line for line in out.splitlines() if line.startswith("| h_mean, first 256")]
    assert len(rows) == 5, out
    for row in rows:  # 10 leaves: a stamp, metadata and a chunk each, and a few listings
        assert int(row.split(" | ")[1].removesuffix(" requests").replace(",", "")) < 100, out


def test_the_harness_imports_form_no_cycle():
    """Each ``benchmarks`` module imports only modules below it (read from the sources:
    nothing is imported)."""
    import ast

    graph: dict[str, set[str]] = {}
    for path in (FIXTURES.parent / "benchmarks").glob("*.py"):
        deps = graph.setdefault(path.stem, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                parts = (node.module or "").split(".")
                deps.update(parts[1:2] or [alias.name for alias in node.names])
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module not in done:
            for dep in graph.get(module, ()):
                visit(dep, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())


def test_centres_bench_on_the_fixture():
    """``centres_bench`` on a small fixture: the field checked against moczarr inside, a
    row per read, each timed for the three ways of opening."""
    status, out = run_benchmark("centres_bench", f"{FIXTURES / 'sharded'}:atl06/o7",
                                "--rounds", "1")
    assert status == 0, out
    timed = {line.split("  ")[0]: line.count(" ms") for line in out.splitlines()
             if " ms" in line}
    assert timed == {"open": 3, "first [field].values": 3, "first [field].load()": 3,
                     "first ds.load()": 3, "first lon.values": 2}, out
