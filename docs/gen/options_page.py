"""Writes reference/options.md at build time from ``docs/gen/options.py``'s ``markdown()``:
the store's options, rendered from their one declaration."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))  # docs/gen is no package
from options import markdown, settings_markdown  # noqa: E402

from moczarr_store.options import SERVE_OPTIONS  # noqa: E402

INTRO = """\
# Options

This page is generated from the declaration of `MocHiveStore`'s options when the site is
built. Each option is a keyword of `MocHiveStore`; where the table names them, it is also a
flag of every subcommand of `moczarr-store` that opens a hive, and the variable that
`serve --workers N` passes it to its workers in.

"""

SERVE = """\
## The server's options

`moczarr-store serve` takes these as flags and `moczarr_store.serve.run.serve` as
keywords (`create_app` takes `cors` and `stamp_ttl`). Every value is checked before the
hive is opened or a port bound: a bad one exits with status 2 and a message that names
the option, the value and what is allowed. Those with a variable reach the workers of
`serve --workers N`, and an app built by `uvicorn --factory
moczarr_store.serve:app_from_env`.

"""

SETTINGS = """\
## Settings

Bounds that are not part of a store's identity are keys of one configuration object,
`moczarr_store.config` (a donfig `Config`, like `zarr.config`). Set them in code with
`moczarr_store.config.set({"cache.stamps": 10_000})` (also a context manager), in a YAML
file under `~/.config/moczarr_store/`, or in the environment before the package is
imported (`MOCZARR_STORE_CACHE__STAMPS=10000`). A store takes the `cache.*` keys when it
is created; the others apply each time they are used. Each value must be an integer in
its range: anything else (and a key not listed here) stops with a `SettingError` that
names the key, the value and what is allowed; the command line exits with status 2.

"""

with mkdocs_gen_files.open("reference/options.md", "w") as page:
    page.write(INTRO + markdown() + "\n" + SERVE + markdown(SERVE_OPTIONS) + "\n"
               + SETTINGS + settings_markdown() + "\n")
