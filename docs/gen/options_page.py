"""Writes reference/options.md at build time from ``docs/gen/options.py``'s ``markdown()``
(the store's options, rendered from their one declaration), once that module is there."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

HERE = Path(__file__).parent
INTRO = """\
# Options

This page is generated from the declaration of `MocHiveStore`'s options when the site is
built. Each option is a keyword of `MocHiveStore`, a flag of every subcommand of
`moczarr-store`, and a variable of `serve --workers`.

"""

if (HERE / "options.py").is_file():
    sys.path.insert(0, str(HERE))
    from options import markdown  # noqa: E402

    with mkdocs_gen_files.open("reference/options.md", "w") as page:
        page.write(INTRO + markdown() + "\n")
