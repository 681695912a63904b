"""Renders the benchmark harness's JSON (``benchmarks/latest.json``, written by
``python -m benchmarks.run --json``, and ``benchmarks/targets.json``, written by a
``--targets`` run) into performance.md at build time. Columns come from the JSON, so the
harness may change its rows and columns freely."""

from __future__ import annotations

import json
from pathlib import Path

import mkdocs_gen_files

MARKER = "<!-- performance-table -->"
TARGETS_MARKER = "<!-- targets-table -->"
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "latest.json"
TARGETS = RESULTS.with_name("targets.json")


def cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(doc: dict, columns_key: str = "columns", rows_key: str = "rows") -> str:
    columns = doc[columns_key]
    env = doc.get("environment", {})
    facts = ", ".join(f"{k} {v}" for k, v in env.items())
    lines = [
        f"Measured by `{doc['command']}` on `{doc['hive']}` ({facts}).",
        "",
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in doc[rows_key]:
        values = row if isinstance(row, list) else [row.get(c, "") for c in columns]
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return "\n".join(lines)


def render(page: str, doc: dict, targets: dict | None = None) -> str:
    for marker in (MARKER, TARGETS_MARKER):
        if marker not in page:
            raise ValueError(f"performance.md lost its {marker} marker")
    page = page.replace(MARKER, table(doc))
    if targets is None or not targets.get("targets_table"):
        return page.replace(TARGETS_MARKER, "No run of the targets is recorded yet.")
    return page.replace(TARGETS_MARKER, table(targets, "targets_columns", "targets_table"))


with mkdocs_gen_files.open("performance.md", "r") as source:
    text = source.read()
with mkdocs_gen_files.open("performance.md", "w") as page:
    targets = json.loads(TARGETS.read_text()) if TARGETS.exists() else None
    page.write(render(text, json.loads(RESULTS.read_text()), targets))
