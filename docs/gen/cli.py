"""Writes reference/cli.md from the argparse parser of ``moczarr_store.cli`` (run by
mkdocs-gen-files at build time), so the page lists exactly what ``--help`` does."""

from __future__ import annotations

import argparse
import os

import mkdocs_gen_files

from moczarr_store.cli import build_parser

INTRO = """\
# Command line

This page is generated from the parser of `moczarr-store` at build time: it is what
`moczarr-store COMMAND --help` prints.
"""


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def markdown() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal's width
    parser = build_parser()
    parts = [INTRO, "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subcommands(parser).items():
        parts += [f"## `moczarr-store {name}`", "", "```text", sub.format_help().rstrip(),
                  "```", ""]
    return "\n".join(parts)


with mkdocs_gen_files.open("reference/cli.md", "w") as page:
    page.write(markdown())
