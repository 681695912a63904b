"""Root ``coverage.moc``: the JSON ranges MOC that names a product's shards."""

from __future__ import annotations

import json

import numpy as np

from ..errors import UnusableCoverage
from .ids import DECIMAL_RE

COVERAGE_NAME = "coverage.moc"
MOC_SPEC = "morton-moc/1"



def parse_root_coverage(payload: bytes, shard_order: int, where: str) -> tuple[np.ndarray, dict]:
    """Shard ranks listed by a root MOC, ascending (= packed-word order) and unique, and
    the envelope itself.

    An unknown envelope raises :class:`UnusableCoverage` (the caller walks instead);
    a malformed range raises ``ValueError`` naming ``where``.
    """
    try:
        env = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UnusableCoverage(f"{where}: not valid JSON ({err})") from None
    if not isinstance(env, dict):
        raise UnusableCoverage(f"{where}: not a JSON object")
    if env.get("spec") != MOC_SPEC or env.get("encoding") != "ranges":
        raise UnusableCoverage(
            f"{where}: spec {env.get('spec')!r} / encoding {env.get('encoding')!r} unknown"
        )
    order, ranges = env.get("order"), env.get("ranges")
    if order != shard_order or isinstance(order, bool):
        raise UnusableCoverage(f"{where}: order {order!r} != manifest shard_order {shard_order}")
    if not isinstance(ranges, list):
        raise UnusableCoverage(f"{where}: 'ranges' is not a list")
    bounds = _bounds_at_once(ranges, order)
    if bounds is None:  # something is off: the exact path names the range
        bounds = np.array([_range_ranks(pair, order, where) for pair in ranges], dtype=np.uint64)
    return _expand(bounds.reshape(-1, 2)), env


def _bounds_at_once(ranges: list, order: int) -> np.ndarray | None:
    """The ``[lo, hi]`` rank rows of well-formed ranges, parsed as one byte matrix (a
    million-shard MOC has ~10^5 ranges); ``None`` if any range is not well formed."""
    if not all(type(pair) is list and len(pair) == 2 for pair in ranges):
        return None
    try:  # sign, base digit, then ``order`` quaternary digits: one fixed-width row each
        rows = "".join(e if e[:1] == "-" else "+" + e for pair in ranges for e in pair)
        matrix = np.frombuffer(rows.encode("ascii"), dtype=np.uint8)
    except (TypeError, UnicodeEncodeError):
        return None
    if matrix.size != 2 * len(ranges) * (order + 2):
        return None
    matrix = matrix.reshape(-1, order + 2).astype(np.int64)
    sign, base, digits = matrix[:, 0], matrix[:, 1] - ord("0"), matrix[:, 2:] - ord("1")
    if not (
        np.isin(sign, (ord("+"), ord("-"))).all()
        and ((base >= 1) & (base <= 6)).all()
        and ((digits >= 0) & (digits <= 3)).all()
    ):
        return None
    cell = np.where(sign == ord("-"), base + 5, base - 1).reshape(-1, 2)
    rank = (digits.astype(np.uint64) @ (np.uint64(4) ** np.arange(order, dtype=np.uint64)[::-1]))
    bounds = ((cell.astype(np.uint64) + np.uint64(1)) << np.uint64(2 * order)) + rank.reshape(-1, 2)
    if (cell[:, 0] != cell[:, 1]).any() or (bounds[:, 0] > bounds[:, 1]).any():
        return None
    return bounds


def _expand(bounds: np.ndarray) -> np.ndarray:
    """Every rank of the inclusive ``[lo, hi]`` rows, ascending and unique."""
    lengths = (bounds[:, 1] - bounds[:, 0] + np.uint64(1)).astype(np.int64)
    starts = np.repeat(bounds[:, 0], lengths)
    steps = np.arange(int(lengths.sum()), dtype=np.uint64) - np.repeat(
        (np.cumsum(lengths) - lengths).astype(np.uint64), lengths
    )
    ranks = np.sort(starts + steps)
    return ranks[np.concatenate(([True], ranks[1:] != ranks[:-1]))] if ranks.size else ranks


def _range_ranks(pair: object, order: int, where: str) -> tuple[int, int]:
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
        raise ValueError(f"{where}: range {pair!r} is not a [first, last] pair of decimal strings")
    (base_lo, r_lo), (base_hi, r_hi) = (_endpoint(end, order, where) for end in pair)
    if base_lo != base_hi:
        raise ValueError(f"{where}: range {pair!r} crosses base cells")
    if r_lo > r_hi:
        raise ValueError(f"{where}: range {pair!r} is descending")
    return r_lo, r_hi


def _endpoint(end: str, order: int, where: str) -> tuple[str, int]:
    """An endpoint's base component and rank (one regex match, on the hot path of open)."""
    match = DECIMAL_RE.match(end)
    if match is None or len(match.group(2)) != order:
        raise ValueError(f"{where}: range endpoint {end!r} is not an order-{order} id")
    base, tail = match.groups()
    base_cell = int(base) - 1 if base[0] != "-" else 5 - int(base)
    rank = int(tail.translate(_QUATERNARY), 4) if tail else 0
    return base, ((base_cell + 1) << (2 * order)) + rank


_QUATERNARY = str.maketrans("1234", "0123")
