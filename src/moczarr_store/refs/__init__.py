"""Publish a hive as byte references: Icechunk, kerchunk JSON or mdim-refs/0.2 SQLite.

``export_refs(source, format, out, ...)`` plans every chunk with the store's read plan
(``collect``) and writes one format. References point at the hive's own objects;
what cannot be a byte reference (fabricated coordinates, transcoded mixed-writer chunks,
re-framed chunks with gaps) is written inline. ``icechunk`` and ``kerchunk-json`` need the
``[export]`` extra (Python >= 3.12); ``mdim-refs`` needs only the standard library.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from ..diagnostics import first_names
from ..errors import HiveWarning, OptionError
from ..io.redact import redact
from ..options import REFERENCE_CHUNKINGS
from ..verify import public_source
from .access import ATTRIBUTE, source_access
from .collect import Collected, collect, published

Format = Literal["icechunk", "kerchunk-json", "mdim-refs"]
FORMATS: tuple[str, ...] = get_args(Format)
"""The formats ``export_refs`` writes: ``icechunk``, ``kerchunk-json``, ``mdim-refs``."""

__all__ = ["FORMATS", "ExportReport", "export_refs", "export_refs_async", "parse_remap"]


@dataclass
class ExportReport:
    """What an export wrote."""

    format: str
    out: str
    source: str
    chunking: str
    counts: dict[str, int] = field(default_factory=dict)
    layouts: dict[str, str] = field(default_factory=dict)  # chunking="auto": group -> layout
    remap: list[tuple[str, str]] = field(default_factory=list)
    checksums: bool = True
    access: dict[str, Any] = field(default_factory=dict)  # refs.access.source_access
    seconds: float = 0.0
    bytes_on_disk: int = 0
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (what ``refs --json`` prints)."""
        return {
            "format": self.format, "out": self.out, "source": self.source,
            "chunking": self.chunking, **self.counts,
            **({"layouts": self.layouts} if self.layouts else {}),
            "remap": [{"prefix": p, "replacement": n} for p, n in self.remap],
            "checksums": self.checksums, "access": self.access,
            "seconds": round(self.seconds, 3),
            "bytes_on_disk": self.bytes_on_disk, "problems": self.problems,
        }


def parse_remap(rules: Iterable[str] | Mapping[str, str] | None) -> list[tuple[str, str]]:
    """``PREFIX=NEW`` strings (or a mapping) as ``(prefix, new)`` pairs."""
    if rules is None:
        return []
    if isinstance(rules, Mapping):
        pairs = list(rules.items())
    else:
        pairs = []
        for rule in rules:
            prefix, sep, new = rule.partition("=")
            if not sep or not prefix:
                raise OptionError(f"remap {rule!r}: expected PREFIX=NEW")
            pairs.append((prefix, new))
    if len({p for p, _ in pairs}) != len(pairs):
        raise OptionError("remap: a prefix is given twice")
    return pairs


def _disk_size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


async def export_refs_async(
    source: Any,
    format: str,
    out: str | os.PathLike[str],
    *,
    group: Iterable[str] | str | None = None,
    remap: Iterable[str] | Mapping[str, str] | None = None,
    chunking: str = "auto",
    checksums: bool = True,
    containers: Mapping[str, Any] | None = None,
    progress: Any = None,
    **store_options: Any,
) -> ExportReport:
    """Export the hive at ``source`` (a path, URL or ``MocHiveStore``, which is
    exported with its own options) as ``format`` at the local path ``out`` (which must not
    exist). See ``export_refs``."""
    from ..store import MocHiveStore

    if format not in FORMATS:
        raise OptionError(f"format={format!r}: expected one of {FORMATS}")
    out = os.fspath(out)
    if os.path.exists(out):
        raise FileExistsError(f"{out} exists: remove it or choose another output")
    if format != "mdim-refs":
        from .manifest import require_export

        require_export()
    groups = [group] if isinstance(group, str) else list(group or [])
    rules = parse_remap(remap)
    relayout = chunking == "auto" and not isinstance(source, MocHiveStore)
    store = source if isinstance(source, MocHiveStore) else MocHiveStore(
        source, chunking="shard" if relayout else chunking, **store_options)
    session = store.session
    if session.options.chunking == "auto":  # the store's view may join leaves; an
        # export's "auto" (leaf or shard per group) is planned from the leaves' shards
        from ..session import HiveSession

        session = HiveSession(session.backend, replace(session.options, chunking="shard"))
        relayout = True
    if session.options.chunking not in REFERENCE_CHUNKINGS:
        raise OptionError(
            f"chunking={session.options.chunking!r}: a chunk that joins several leaves "
            f"is not a byte range of one object, which a reference names; export with one of "
            f"{REFERENCE_CHUNKINGS}"
        )
    backend = session.backend
    if backend.url is None:
        raise OptionError("an export needs the hive's URL (not an obstore store instance)")
    start = time.perf_counter()
    collected: Collected = await collect(session, backend.url, groups, progress, relayout)
    access = source_access(backend.url, backend.options)
    collected.groups[""] = {**collected.groups.get("", {}), ATTRIBUTE: access}
    _check_remap(collected, rules)
    _warn_unchecked(collected, format, checksums)
    if backend.ignores_ranges and not rules:
        warnings.warn(HiveWarning(
            f"{backend} ignores HTTP Range requests (it answered a ranged GET with the whole "
            "object), and the references name byte ranges of its objects: a reader of them "
            "asks it for those ranges. Publish the hive where ranges are served and --remap "
            "the references there"), stacklevel=3)
    publish = published(rules)
    report = ExportReport(format, out, public_source(backend.url), str(collected.chunking),
                          collected.counts(), collected.layouts, rules, checksums, access)
    if format == "mdim-refs":
        from .mdim import write_mdim

        write_mdim(collected, out, rules, report.source)
    elif format == "kerchunk-json":
        from .kerchunk import write_kerchunk

        write_kerchunk(collected, out, publish)
    else:
        from .icechunk import write_icechunk

        await write_icechunk(collected, out, publish, rules, checksums=checksums,
                             configs=containers)
    report.seconds = time.perf_counter() - start
    report.bytes_on_disk = _disk_size(out)
    report.problems = session.problems.lines()
    return report


def _check_remap(collected: Collected, rules: list[tuple[str, str]]) -> None:
    """Refuse a remap rule that matches no referenced object (a mistyped prefix would
    otherwise publish the source URLs unchanged, silently)."""
    urls = [collected.url(key) for key in collected.sources]
    for prefix, new in rules:
        if not any(url.startswith(prefix) for url in urls):
            raise OptionError(
                f"remap {redact(prefix)}={redact(new)}: the prefix matches no referenced "
                f"object (their URLs start with {public_source(collected.root)})")


def _warn_unchecked(collected: Collected, format: str, checksums: bool) -> None:
    """One ``HiveWarning`` when references name objects a later run rewrites in place
    (unversioned leaves) and the format records no checksum a reader would compare: such a
    reader would then get other bytes at the referenced ranges."""
    rewritable = collected.rewritable()
    if not rewritable or (format != "kerchunk-json" and checksums):
        return
    why = "kerchunk JSON has no checksum" if format == "kerchunk-json" else "--no-checksums"
    warnings.warn(HiveWarning(
        f"{len(rewritable)} referenced object(s) belong to unversioned leaves, which a later "
        f"run rewrites in place ({first_names(rewritable)}); {why}, so a reader of the "
        "references would then read other bytes, unchecked: export again after such a run, "
        "or export to icechunk with checksums"), stacklevel=3)


def export_refs(
    source: Any,
    format: str,
    out: str | os.PathLike[str],
    *,
    group: Iterable[str] | str | None = None,
    remap: Iterable[str] | Mapping[str, str] | None = None,
    chunking: str = "auto",
    checksums: bool = True,
    containers: Mapping[str, Any] | None = None,
    progress: Any = None,
    **store_options: Any,
) -> ExportReport:
    """Publish the hive at ``source`` as byte references in ``format`` (``icechunk``,
    ``kerchunk-json``, ``mdim-refs``) at local path ``out``.

    ``group``: only the arrays under these virtual paths (``"atl06/o7"``). ``remap``:
    ``PREFIX=NEW`` rules; a published path is the source URL with the longest matching
    prefix replaced (the mdim-refs sources table keeps the source URLs). ``chunking``: how
    sharded leaf arrays are referenced (``shard``: whole objects; ``inner``: one reference
    per inner chunk; ``leaf``: the payload as one range, inline where a shard has gaps;
    ``auto``: per group, ``leaf`` where every shard is whole and in order, else ``shard``:
    every chunk a reference either way; a ``MocHiveStore`` source is exported with its
    own chunking). ``checksums`` (Icechunk): each
    reference carries its object's ETag, else its modification time; turn off when
    publishing to a copy whose objects were re-uploaded (their own ETag and time differ).
    ``containers`` (Icechunk): object store configurations by container prefix (the hive
    root's defaults to the endpoint, region and anonymous access of ``source``). Every
    format records these in its root group's attribute ``moczarr_store_source`` (never a
    secret), so a reader elsewhere reaches the objects.
    ``store_options`` go to ``MocHiveStore`` (storage options, ``window``, ``aoi``).

    Cost: the store's read plan for every chunk (one GET per leaf stamp, one per leaf
    array metadata not yet known), then one request per referenced object that also gives
    its size and time: the ranged GET of a shard's index, or a HEAD of a plain chunk
    (``auto`` adds only the open of a leaf-chunked view, a few requests); fabricated and
    inline chunks are computed or read whole. Memory: the references and the inline bytes.

    Raises
    ------
    OptionError
        An unknown format, a chunking that joins leaves, a group that names nothing or a
        remap rule that matches nothing.
    FileExistsError
        When ``out`` exists.
    ImportError
        For ``icechunk`` and ``kerchunk-json`` without the ``export`` extra.

    Examples
    --------
    ``export_refs(sample_hive(), "mdim-refs", "refs.sqlite").to_json()["chunks_referenced"]``
    """
    from zarr.core.sync import sync

    return sync(export_refs_async(
        source, format, out, group=group, remap=remap, chunking=chunking, checksums=checksums,
        containers=containers, progress=progress, **store_options,
    ))
