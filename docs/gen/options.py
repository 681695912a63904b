"""The documentation's table of ``MocHiveStore``'s options, rendered from their one
declaration (``moczarr_store.options.OPTIONS``): ``python docs/gen/options.py`` prints it."""

from __future__ import annotations

from moczarr_store.options import OPTIONS, SERVE_OPTIONS, Option
from moczarr_store.tunables import SETTINGS, env_name


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(o: Option) -> str:
    what = o.help
    if o.choices:
        what += f" Values: {', '.join(f'`{c}`' for c in o.choices)}."
    if o.note:
        what += f" {o.note}"
    flag = f"`{o.flag}`" if o.flag else "none"
    env = f"`{o.env_name}`" if o.env_name else "none"
    return f"| `{o.name}` | `{o.default!r}` | {_cell(what)} | {flag} | {env} |"


def markdown(options: tuple[Option, ...] = OPTIONS) -> str:
    """The options (the store's, or ``SERVE_OPTIONS``) as a Markdown table: keyword,
    default, what it does, the command line's flag and the variable ``serve --workers N``
    passes it in."""
    return "\n".join([
        "| Keyword | Default | What it does | Command line | `serve --workers` variable |",
        "|---|---|---|---|---|",
        *map(_row, options),
    ]) + "\n"


def settings_markdown() -> str:
    """The tunables (``moczarr_store.tunables.SETTINGS``) as a Markdown table: key,
    default, the values allowed, what it bounds and its environment variable."""
    return "\n".join([
        "| Key | Default | Allowed | What it bounds | Environment variable |",
        "|---|---|---|---|---|",
        *(f"| `{key}` | `{s.default:_}` | {s.least:_} to {s.most:_} | {_cell(s.help)} | "
          f"`{env_name(key)}` |" for key, s in SETTINGS.items()),
    ]) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
    print(markdown(SERVE_OPTIONS), end="")
    print(settings_markdown(), end="")
