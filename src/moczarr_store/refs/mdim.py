"""mdim-refs/0.2: the byte-reference table as one SQLite file (standard ``sqlite3``).

Tables: ``meta`` (``format_version = mdim-refs/0.2``), ``sources`` (every referenced object:
size, mtime, ETag at export time), ``arrays`` (one row per virtual array), ``groups``,
``remap`` (prefix -> replacement), and one chunk table per array (64-bit ``BIGINT``
offsets and sizes), keyed on its chunk indices ``dim_0..dim_{n-1}``. The table is named by
the array's path in the virtual hierarchy (quoted), unless that name is taken already:
SQLite compares identifiers without regard to ASCII case, zarr names with it, so of
``count`` and ``COUNT`` the second in sorted order becomes ``COUNT~1``; the ``arrays``
table's ``chunk_table`` column names each array's table.
Source URLs are percent-encoded (a ``file://`` URL too: decode its path to open it).
The view ``refs_<chunk_table>`` publishes each chunk's path: its source URL with the
longest matching ``remap`` prefix replaced (so the sources table keeps the true locations).
Written in DELETE journal mode to a temporary file, then renamed into place (a failed
write leaves no file behind).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from .collect import ArrayRefs, Collected

FORMAT_VERSION = "mdim-refs/0.2"
FIXED = frozenset({"meta", "sources", "arrays", "groups", "remap"})
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def quote(name: str) -> str:
    """An SQL identifier for ``name``, used verbatim."""
    return '"' + name.replace('"', '""') + '"'


def _dims(n: int) -> list[str]:
    return [f"dim_{i}" for i in range(n)]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _schema(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sources (source TEXT PRIMARY KEY, size BIGINT NOT NULL, mtime TEXT,
                              etag TEXT);
        CREATE TABLE arrays (array TEXT PRIMARY KEY, kind TEXT NOT NULL, storage TEXT NOT NULL,
                             dims TEXT NOT NULL, shape TEXT NOT NULL, chunks TEXT NOT NULL,
                             dtype TEXT NOT NULL, fill TEXT, codec TEXT NOT NULL,
                             attrs TEXT NOT NULL, zarr_json TEXT NOT NULL,
                             chunk_table TEXT NOT NULL UNIQUE);
        CREATE TABLE groups (path TEXT PRIMARY KEY, attrs TEXT NOT NULL);
        CREATE TABLE remap (prefix TEXT PRIMARY KEY, replacement TEXT NOT NULL);
        """
    )


def _array_row(refs: ArrayRefs, table: str) -> tuple[object, ...]:
    meta = refs.meta
    return (
        refs.path, refs.kind, refs.storage, _json(list(meta.dimension_names)),
        _json(list(meta.shape)), _json(list(meta.chunk_shape)), _json(meta.data_type),
        _json(meta.fill_value), _json([c.to_json() for c in meta.codecs]),
        _json(dict(meta.attributes)), _json(meta.to_json()), table,
    )


def _chunk_table(db: sqlite3.Connection, refs: ArrayRefs, name: str,
                 url: Callable[[str], str]) -> None:
    dims = _dims(len(refs.grid))  # none for a scalar (its one value: the fill value)
    table, view = quote(name), quote(f"refs_{name}")
    columns = "".join(f"{d} INTEGER NOT NULL, " for d in dims)
    unique = f", UNIQUE ({', '.join(dims)})" if dims else ""
    db.execute(
        f"CREATE TABLE {table} ({columns}present INTEGER NOT NULL, "
        "source TEXT REFERENCES sources(source), offset BIGINT, size BIGINT, info TEXT, "
        f"data BLOB{unique})"
    )
    marks = ", ".join("?" for _ in range(len(dims) + 6))
    db.executemany(
        f"INSERT INTO {table} VALUES ({marks})",
        (
            (*c.coords, 1, None if c.source is None else url(c.source),
             c.offset if c.source is not None else None,
             c.length if c.source is not None else len(c.data or b""), c.info, c.data)
            for c in refs.chunks
        ),
    )
    picked = "".join(f"c.{d}, " for d in dims)
    db.execute(
        f"CREATE VIEW {view} AS SELECT {picked}c.present, CASE WHEN c.source IS NULL THEN "
        "NULL ELSE COALESCE((SELECT r.replacement || substr(c.source, length(r.prefix) + 1) "
        "FROM remap r WHERE substr(c.source, 1, length(r.prefix)) = r.prefix "
        "ORDER BY length(r.prefix) DESC LIMIT 1), c.source) END AS path, "
        f"c.offset, c.size, c.info, c.data FROM {table} c"
    )


def table_names(paths: list[str]) -> dict[str, str]:
    """Each array's chunk table name: its path, or ``path~N`` (the least ``N`` free) where
    the path or its ``refs_`` view would match a name taken already (the fixed tables, or
    an array sorted before it) as SQLite matches identifiers, ignoring ASCII case."""
    taken = {name.translate(_ASCII_LOWER) for name in FIXED}
    out = {}
    for path in sorted(paths):
        name, n = path, 0
        while {name.translate(_ASCII_LOWER), f"refs_{name}".translate(_ASCII_LOWER)} & taken:
            n += 1
            name = f"{path}~{n}"
        taken |= {name.translate(_ASCII_LOWER), f"refs_{name}".translate(_ASCII_LOWER)}
        out[path] = name
    return out


def write_mdim(collected: Collected, out: str, remap: list[tuple[str, str]],
               source: str) -> None:
    """Write ``collected`` as an mdim-refs/0.2 SQLite file at ``out`` (which must not
    exist). Cost: one pass over the references; the file holds inline chunks in full."""
    partial = f"{out}.partial"
    if os.path.exists(partial):
        os.remove(partial)
    tables = table_names(list(collected.arrays))
    db = sqlite3.connect(partial)
    try:
        db.execute("PRAGMA journal_mode=DELETE")
        _schema(db)
        meta = {
            "format_version": FORMAT_VERSION,
            "generator": "moczarr-store refs",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": source,
            "chunking": collected.chunking,
            **({"layouts": json.dumps(collected.layouts)} if collected.layouts else {}),
        }
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        db.executemany(
            "INSERT INTO sources VALUES (?, ?, ?, ?)",
            (
                (collected.url(key), s.size,
                 None if s.mtime is None else s.mtime.isoformat(), s.etag)
                for key, s in sorted(collected.sources.items())
            ),
        )
        db.executemany("INSERT INTO groups VALUES (?, ?)",
                       ((p, _json(a)) for p, a in sorted(collected.groups.items())))
        db.executemany("INSERT INTO remap VALUES (?, ?)", remap)
        for refs in collected.arrays.values():
            db.execute("INSERT INTO arrays VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       _array_row(refs, tables[refs.path]))
            _chunk_table(db, refs, tables[refs.path], collected.url)
        db.commit()
    except BaseException:
        db.close()
        os.remove(partial)
        raise
    db.close()
    os.replace(partial, out)
