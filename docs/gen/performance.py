"""Renders the benchmark harness's JSON (``benchmarks/latest.json``, written by
``python -m benchmarks.run --json``) into performance.md at build time. Columns come
from the JSON, so the harness may change its rows and columns freely."""

from __future__ import annotations

import json
from pathlib import Path

import mkdocs_gen_files

MARKER = "<!-- performance-table -->"
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "latest.json"


def cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(doc: dict) -> str:
    columns = doc["columns"]
    env = doc.get("environment", {})
    facts = ", ".join(f"{k} {v}" for k, v in env.items())
    lines = [
        f"Measured by `{doc['command']}` on `{doc['hive']}` ({facts}).",
        "",
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in doc["rows"]:
        values = row if isinstance(row, list) else [row.get(c, "") for c in columns]
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return "\n".join(lines)


def render(page: str, doc: dict) -> str:
    if MARKER not in page:
        raise ValueError(f"performance.md lost its {MARKER} marker")
    return page.replace(MARKER, table(doc))


with mkdocs_gen_files.open("performance.md", "r") as source:
    text = source.read()
with mkdocs_gen_files.open("performance.md", "w") as page:
    page.write(render(text, json.loads(RESULTS.read_text())))
