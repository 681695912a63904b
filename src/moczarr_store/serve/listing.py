"""Directory indexes of the virtual hierarchy's groups, for clients that find a hierarchy
by listing directories (GDAL's Zarr driver over ``/vsicurl/`` parses an Apache-style
``Index of`` page: one link a line, a trailing ``/`` for a directory).

A group's index names its ``zarr.json`` and each child group or array as a directory;
arrays and chunk directories have none (clients read ``{array}/zarr.json``). Names are
percent-encoded in links and HTML-escaped everywhere; an index names at most
:data:`MAX_ENTRIES` children and says how many it left out.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from ..session import HiveSession

MAX_ENTRIES = 10_000


def index_page(url_path: str, children: list[str]) -> bytes:
    """The HTML index of one group at ``url_path`` (as requested, ending in ``/``).
    Cost: O(children)."""
    title = escape(url_path)
    lines = [
        "<!DOCTYPE html>",
        f'<html><head><meta charset="utf-8"><title>Index of {title}</title></head>',
        f"<body><h1>Index of {title}</h1>",
        "<pre>",
        '<a href="zarr.json">zarr.json</a>',
    ]
    for name in children[:MAX_ENTRIES]:
        lines.append(f'<a href="{escape(quote(name, safe=""))}/">{escape(name)}/</a>')
    if len(children) > MAX_ENTRIES:
        lines.append(f"({len(children) - MAX_ENTRIES} more not listed)")
    lines += ["</pre>", "</body></html>", ""]
    return "\n".join(lines).encode()


async def group_children(session: HiveSession, path: str) -> list[str] | None:
    """The child names of group ``path`` (``""``: the root), every level below it read
    first; ``None`` when ``path`` is not a group."""
    view = await session.ensure_levels(path)
    return view.children(path)
