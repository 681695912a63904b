"""Root ``coverage.moc``: the JSON ranges MOC that names a product's shards."""

from __future__ import annotations

import json

import numpy as np

from .ids import DECIMAL_RE, decimal_order, decimal_to_rank

COVERAGE_NAME = "coverage.moc"
MOC_SPEC = "morton-moc/1"


class UnusableCoverage(ValueError):
    """The root MOC is absent in effect: unparsable, or of an unknown spec/encoding."""


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
    parts = []
    for pair in ranges:
        lo, hi = _range_ranks(pair, order, where)
        parts.append(np.arange(lo, hi + 1, dtype=np.uint64))
    ranks = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    return np.unique(ranks), env


def _range_ranks(pair: object, order: int, where: str) -> tuple[int, int]:
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
        raise ValueError(f"{where}: range {pair!r} is not a [first, last] pair of decimal strings")
    lo, hi = pair
    for end in (lo, hi):
        if not DECIMAL_RE.match(end) or decimal_order(end) != order:
            raise ValueError(f"{where}: range endpoint {end!r} is not an order-{order} id")
    base = DECIMAL_RE.match(lo).group(1)
    if DECIMAL_RE.match(hi).group(1) != base:
        raise ValueError(f"{where}: range {pair!r} crosses base cells")
    r_lo, r_hi = decimal_to_rank(lo), decimal_to_rank(hi)
    if r_lo > r_hi:
        raise ValueError(f"{where}: range {pair!r} is descending")
    return r_lo, r_hi

