"""Problems met while reading, aggregated: one warning per (level, kind), bounded memory.

A scan over a damaged hive can meet hundreds of thousands of missing leaves. Each kind of
problem of a level is warned about once (naming the first object); every object is logged
at DEBUG on the ``moczarr_store`` logger; the counts and the first few names are kept in
:class:`Problems` (``MocHiveStore.problems()``) in memory independent of the count.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

from .errors import HiveWarning

logger = logging.getLogger("moczarr_store")

FIRST_NAMES = 5
MAX_KEYS = 4096  # distinct (level, kind) pairs remembered; past it problems are only counted

KINDS = {
    "debris": "has no commit stamp (unstamped debris)",
    "absent": "has no commit stamp (no root zarr.json)",
    "linked": "lies behind a link out of the hive root (refused; follow_links=True reads "
              "through links)",
    "dangling": "points at a version that is missing",
    "no-group": "has no group for this cell order",
    "no-array": "holds chunk bytes but no array metadata for them",
    "unwritten": "hashes this array in its commit stamp but has no metadata for it",
    "provenance": "declares a role or provenance block that is not this pyramid level's",
    "misplaced": "was written for another node or window (its commit stamp's coverage box or "
                 "window says so)",
    "unswept": "has no stamped object at this pyramid level",
    "unreadable": "cannot be read (damaged or too large), so its rows in a chunk it shares "
                  "with other leaves read as missing",
}


def first_names(names: list[str]) -> str:
    """The first ``FIRST_NAMES`` of ``names``, with `` ...`` when there are more (pass
    ``FIRST_NAMES + 1`` of a longer list to say so)."""
    more = " ..." if len(names) > FIRST_NAMES else ""
    return ", ".join(names[:FIRST_NAMES]) + more


@dataclass
class Problem:
    """How often one kind of problem was met on one level, and the first objects."""

    count: int = 0
    first: list[str] = field(default_factory=list)


class Problems:
    """Counts of problems by ``(level, kind)``; warns on the first of each."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], Problem] = {}
        self.overflow = 0  # problems of pairs past MAX_KEYS: counted only

    def note(self, level: str, kind: str, obj: str, source: str = "", what: str = "",
             noun: str = "leaf", count: int = 1) -> None:
        """Record that ``obj`` (a ``noun``) of ``level`` has problem ``kind`` (``what``, if
        given, says it more precisely): it reads as missing; ``count``: so do ``count - 1``
        more met in the same chunk (counted, not named)."""
        what = what or KINDS[kind]
        more = f", and {count - 1:,} more of the same chunk" if count > 1 else ""
        logger.debug("%s: object %s %s%s: read as missing (fill value)", level, obj, what, more)
        key = (level, kind)
        problem = self._by_key.get(key)
        if problem is None:
            if len(self._by_key) >= MAX_KEYS:
                self.overflow += 1
                return
            problem = self._by_key[key] = Problem()
        first = problem.count == 0
        problem.count += count
        if len(problem.first) < FIRST_NAMES:
            problem.first.append(obj)
        if first:
            listed = f", listed by the {source}" if source else ""
            warnings.warn(
                f"{level}: {noun} {obj} {what}{listed}{more}: read as missing (fill value); "
                f"further objects of {level} with this problem are counted, not warned about "
                "(MocHiveStore.problems(), DEBUG log of 'moczarr_store')",
                HiveWarning,
                stacklevel=4,
            )

    def summary(self) -> dict[tuple[str, str], Problem]:
        """``{(level, kind): Problem}``: counts and the first few objects."""
        return {key: Problem(p.count, list(p.first)) for key, p in self._by_key.items()}

    def lines(self) -> list[str]:
        """One human-readable line per (level, kind)."""
        out = []
        for (level, kind), p in sorted(self._by_key.items()):
            more = " ..." if p.count > len(p.first) else ""
            out.append(f"{level}: {p.count} object(s) {KINDS[kind]}: {', '.join(p.first)}{more}")
        if self.overflow:
            out.append(f"{self.overflow} more problem(s) on further levels")
        return out
