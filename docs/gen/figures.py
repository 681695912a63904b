"""Renders the tutorial's figures at build time: runs the page's python blocks, as the
docs' tests do, and saves the figures each block draws under the names of the image
links that follow it (see codeblocks.py)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
from codeblocks import blocks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["tutorial.md"]


def render(page: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__docs__"}
    here = os.getcwd()
    os.chdir(ROOT)  # examples run from the repository root
    try:
        for block in blocks(ROOT / "docs" / page):
            if block.kind != "python":
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block.code, f"docs/{page}:{block.line}", "exec"), namespace)
            figures = plt.get_fignums()
            if len(figures) != len(block.images):
                raise ValueError(f"docs/{page}:{block.line} draws {len(figures)} figure(s) "
                                 f"but {len(block.images)} image link(s) follow it")
            for number, name in zip(figures, block.images, strict=True):
                target = (Path(page).parent / name).as_posix()
                with mkdocs_gen_files.open(target, "wb") as out:
                    plt.figure(number).savefig(out, format="png", dpi=90,
                                               bbox_inches="tight")
            plt.close("all")
    finally:
        os.chdir(here)


for page in PAGES:
    render(page)
