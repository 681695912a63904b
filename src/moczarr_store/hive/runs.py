"""Writer runs: the array encodings a level's objects were written with, learned at open.

One product can be written by several writer runs, and runs of different writer releases
encode a field differently (zagg up to 0.55 writes ``count`` as int32, 0.60 on as int64).
The reference reader concatenates every leaf, so it reports their numpy promotion; the
view must declare that dtype before any chunk is read.

What the hive records about its runs names no encoding: an old writer records no run at
all (no run id in its in-place leaves, no telemetry, no ``semantic_hash``), a new one
records its runs in parquet telemetry without dtypes, and ``aggregation.yaml`` is written
only by the run that creates the store. So the runs are sampled: the stamps of up to
``RUN_PROBES`` objects spread evenly over the level within the AOI (every object of one
of at most ``RUN_PROBES``), then the array metadata of one object per writer run among them that the
template's run does not already cover. A versioned object's run is named by its
``current`` version; an unversioned object is its own run.

Cost: at most ``RUN_PROBES - 1`` stamp GETs and one ranged ``zarr.json`` GET (of at most
the document cap) per array per further run seen (at most ``RUN_PROBES - 1`` runs), all
concurrent. A document that cannot be used (larger than the cap, malformed) is named in a
warning and learns nothing; its leaves' chunks refuse it when read. A run the sample
misses is met when its chunks are read, where each leaf's own metadata is the authority:
a narrower dtype is cast safely, a wider one is an ``EncodingError`` naming the leaf array.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import HiveFormatError, HiveWarning, OutsideRootError
from .arraymeta import ArrayMeta, parse_array
from .jsonio import read_document
from .leaves import Leaf, LeafCache, parse_leaf

if TYPE_CHECKING:
    from ..io.reader import HiveIO
    from .level import Level

RUN_PROBES = 8


@dataclass(frozen=True)
class RunEncoding:
    """The array metadata one object of a writer run holds, by field name."""

    leaf: str  # the object's path
    prefix: str  # where its arrays live (``{leaf}/{current}`` for a versioned object)
    arrays: dict[str, ArrayMeta]

    @property
    def immutable(self) -> bool:
        """A ``run-*`` version, never rewritten: what was read of it stays true."""
        return self.prefix != self.leaf


def probe_paths(level: Level, count: int = RUN_PROBES) -> list[str]:
    """Up to ``count`` object paths spread evenly over the level's (node, window) pairs,
    the first and the last included; computed, not listed (no request)."""
    windows = level.windows or (None,)
    total = level.n_nodes * len(windows)
    if total <= count:
        picks = list(range(total))
    else:
        picks = sorted({round(i * (total - 1) / (count - 1)) for i in range(count)})
    return [level.object_path(i // len(windows), windows[i % len(windows)]) for i in picks]


async def _stamped(backend: HiveIO, leaves: LeafCache, path: str) -> Leaf | None:
    """The object's leaf when it is stamped; a malformed stamp, or one behind a link out of
    the hive root, is left for its reads to report (``None`` here): one object, not the
    hive. A stamp not cached yet is read without caching it: the cache keeps only a slim
    leaf, and a later full read (``drop_unstamped``) needs its attributes."""
    leaf = leaves.peek(path)
    if not isinstance(leaf, Leaf):
        try:
            leaf = parse_leaf(path, await read_document(backend, f"{path}/zarr.json"))
        except (ValueError, OutsideRootError):
            return None
    return leaf if leaf.state == "stamped" else None


async def _array_meta(backend: HiveIO, key: str) -> ArrayMeta | None:
    payload = await read_document(backend, key)
    if payload is None:
        return None
    try:
        return parse_array(payload, key)
    except HiveFormatError as err:  # refused again when the leaf's chunks are read
        warnings.warn(f"{err}; this writer run's encoding is not learned from it",
                      HiveWarning, stacklevel=2)
        return None


async def _run_encoding(backend: HiveIO, leaf: Leaf, names: list[str],
                        cell_order: int) -> RunEncoding:
    prefix = leaf.data_prefix or leaf.path
    metas = await asyncio.gather(
        *(_array_meta(backend, f"{prefix}/{cell_order}/{name}/zarr.json") for name in names)
    )
    return RunEncoding(
        leaf.path, prefix, {n: m for n, m in zip(names, metas, strict=True) if m is not None}
    )


async def learn_runs(
    backend: HiveIO, leaves: LeafCache, scoped: Level, template: Leaf,
    arrays: dict[str, ArrayMeta],
) -> list[RunEncoding]:
    """The template's encodings, then one object's per further writer run sampled from
    ``scoped`` (the level within the AOI; see the module docstring for the sample and its cost)."""
    found = [RunEncoding(template.path, template.data_prefix or template.path, arrays)]
    probed = await asyncio.gather(
        *(_stamped(backend, leaves, path) for path in probe_paths(scoped))
    )
    seen, others = {template.run}, []
    for leaf in probed:
        if leaf is not None and leaf.run not in seen:
            seen.add(leaf.run)
            others.append(leaf)
    names = sorted(arrays)
    learned = await asyncio.gather(
        *(_run_encoding(backend, leaf, names, scoped.cell_order) for leaf in others)
    )
    return found + [run for run in learned if run.arrays]
