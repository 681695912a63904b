"""The benchmark harnesses run as a user runs them (``python -m benchmarks.…``), short."""

from __future__ import annotations

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
