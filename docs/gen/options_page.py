"""Writes reference/options.md at build time from ``docs/gen/options.py``'s ``markdown()``:
the store's options, rendered from their one declaration."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))  # docs/gen is no package
from options import markdown  # noqa: E402

INTRO = """\
# Options

This page is generated from the declaration of `MocHiveStore`'s options when the site is
built. Each option is a keyword of `MocHiveStore`; where the table names them, it is also a
flag of every subcommand of `moczarr-store` that opens a hive, and the variable that
`serve --workers N` passes it to its workers in.

"""

with mkdocs_gen_files.open("reference/options.md", "w") as page:
    page.write(INTRO + markdown() + "\n")
