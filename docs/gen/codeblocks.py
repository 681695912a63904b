"""The code examples of a Markdown page, as the docs' tests run them and as the build
renders the tutorial's figures.

The convention (docs/contributing.md says it for writers):

- A ```python block runs; the page's blocks run in order in one namespace, from the
  repository root. A ```output block right after it is what the block prints: compared
  with its stdout line by line, where ``...`` stands for any text in a line and a line of
  ``...`` alone for any number of lines.
- A ```bash block whose command starts with ``moczarr-store`` runs (as ``python -m
  moczarr_store.cli``), its output checked the same way. ``moczarr-store serve ...`` is
  started in the background on a free port of 127.0.0.1 instead, stopped at the end of
  the page, and ``127.0.0.1:8000`` in the page's later blocks names that port.
- ``<!-- requires: MODULE[, MODULE] -->`` right before a block: run only where those
  modules import (icechunk and virtualizarr need Python 3.12).
- Image links after a python block (before the next block) name the figures it draws:
  the open matplotlib figures are saved under those names, in order.
- Any other block (```text, ```bash without moczarr-store) is shown, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
REQUIRES = re.compile(r"<!--\s*requires:\s*([\w., -]+?)\s*-->\s*$")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")


@dataclass
class Block:
    kind: str  # "python", "bash" or "javascript"
    code: str
    line: int
    output: str | None = None
    requires: tuple[str, ...] = ()
    images: list[str] = field(default_factory=list)


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of a page, with their expected output, requirements and images."""
    text = path.read_text()
    found: list[Block] = []
    last_end = 0
    open_images = False  # image links still belong to the last runnable block
    for match in FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        between = text[last_end:match.start()]
        last_end = match.end()
        if open_images:
            found[-1].images += IMAGE.findall(between)
        if lang == "output":
            if found and found[-1].output is None and not between.strip():
                found[-1].output = body
            continue
        runnable = lang in ("python", "javascript") or (
            lang == "bash" and body.lstrip().startswith("moczarr-store"))
        open_images = runnable
        if not runnable:
            continue
        requires: tuple[str, ...] = ()
        tail = between.rstrip().splitlines()[-1:]
        if tail and (m := REQUIRES.search(tail[0])):
            requires = tuple(n.strip() for n in m.group(1).split(",") if n.strip())
        line = text.count("\n", 0, match.start()) + 2
        found.append(Block(lang, body, line, None, requires))
    if open_images:
        found[-1].images += IMAGE.findall(text[last_end:])
    return found


def matches(expected: str, actual: str) -> bool:
    """``actual`` printed what ``expected`` shows (trailing spaces ignored, ``...`` any
    text in a line, a line of ``...`` any number of lines)."""
    want = [line.rstrip() for line in expected.rstrip("\n").splitlines()]
    got = [line.rstrip() for line in actual.rstrip("\n").splitlines()]
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == "..." else
        "[^\n]*?".join(map(re.escape, line.split("..."))) + r"\n"
        for line in want
    )
    return re.fullmatch(pattern, "\n".join(got) + "\n", re.S) is not None
