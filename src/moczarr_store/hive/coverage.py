"""Root ``coverage.moc``: the JSON ranges MOC that names a product's nodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MalformedMetadataError, UnusableCoverage
from ..io.ranges import BytesLike
from .ids import DECIMAL_RE, match_rank
from .jsonio import is_int, load_json, load_members_but
from .paths import short

COVERAGE_NAME = "coverage.moc"
MOC_SPEC = "morton-moc/1"
DEFAULT_MAX_COVERAGE_BYTES = 32 << 20
"""A larger root MOC is unusable (walked around): parsing one costs up to ~12x its size in
memory (the ranges as Python lists of strings), so at most ~400 MiB."""
DEFAULT_MAX_COVERAGE_NODES = 1 << 24
"""A root MOC listing more nodes is unusable: the domain costs 8 bytes per node."""


def parse_root_coverage(
    payload: BytesLike,
    shard_order: int,
    where: str,
    *,
    max_nodes: int | None = None,
    max_bytes: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Node ranks listed by a root MOC, ascending (= packed-word order) and unique, and
    the envelope without its ranges.

    An envelope that is absent in effect (not JSON, an unknown spec, another order,
    over ``max_bytes``, or listing more than ``max_nodes`` nodes, counted from the
    range bounds before anything is expanded) raises :class:`UnusableCoverage` (the
    caller walks instead); a malformed range raises :class:`MalformedMetadataError`
    naming ``where``. The limits default to the module's ``DEFAULT_MAX_COVERAGE_*``.
    Cost: up to ~12x the payload in memory while parsing (singleton ranges: Python lists
    of strings), then 8 bytes per listed node.
    """
    max_nodes = DEFAULT_MAX_COVERAGE_NODES if max_nodes is None else max_nodes
    max_bytes = DEFAULT_MAX_COVERAGE_BYTES if max_bytes is None else max_bytes
    quick = _parsed_at_once(payload, shard_order, where, max_bytes)
    if quick is not None:
        return _ranks(quick[0], where, max_nodes), quick[1]
    env = load_json(payload, where, max_bytes, max_depth=None, error=UnusableCoverage)
    if not isinstance(env, dict):
        raise UnusableCoverage(f"{where}: not a JSON object")
    if env.get("spec") != MOC_SPEC or env.get("encoding") != "ranges":
        raise UnusableCoverage(
            f"{where}: spec {short(env.get('spec'))} / encoding {short(env.get('encoding'))} "
            "unknown"
        )
    order, ranges = env.get("order"), env.pop("ranges", None)
    if not is_int(order) or order != shard_order:
        raise UnusableCoverage(
            f"{where}: order {short(order)} != manifest shard_order {shard_order}"
        )
    if not isinstance(ranges, list):
        raise UnusableCoverage(f"{where}: 'ranges' is not a list")
    bounds = _bounds_at_once(ranges, order)
    if bounds is None:  # something is off: the exact path names the range
        bounds = np.array([_range_ranks(pair, order, where) for pair in ranges], dtype=np.uint64)
    del ranges
    return _ranks(bounds, where, max_nodes), env


def _ranks(bounds: np.ndarray, where: str, max_nodes: int) -> np.ndarray:
    """The ranks of ``[lo, hi]`` rows, unless they are more than ``max_nodes``."""
    bounds = merge_bounds(bounds.reshape(-1, 2))
    total = float((bounds[:, 1] - bounds[:, 0] + np.uint64(1)).sum(dtype=np.float64))
    if total > max_nodes:
        raise UnusableCoverage(
            f"{where}: lists {total:,.0f} nodes, more than the {max_nodes:,} this reader "
            "expands (max_nodes)"
        )
    return expand_bounds(bounds)


_CLASS = np.zeros(256, dtype=np.uint8)  # 0: not in a well-formed MOC's ranges
_CLASS[list(b"-0123456789")] = 1  # an endpoint's characters
_CLASS[list(b'[]"')] = 2  # the structure
_CLASS[list(b", \t\n\r")] = 3  # what may stand between
_RANGE = np.frombuffer(b'[""""]', dtype=np.uint8)


def _parsed_at_once(payload: BytesLike, shard_order: int, where: str,
                    max_bytes: int) -> tuple[np.ndarray, dict[str, Any]] | None:
    """``(range rows, envelope)`` of a well-formed MOC of ``shard_order`` read from its
    bytes: the envelope's members decoded, the ranges not (a 10 M-node MOC holds ~10^6
    endpoint strings). ``None`` for anything else, which the JSON path then reads or
    refuses with its own words: msgspec not installed, not a JSON object, another spec,
    encoding or order, or ranges other than ``[["first", "last"], ...]`` of digits.

    Cost: a few passes over the bytes of the ranges and arrays of 8 bytes per endpoint.
    """
    parts = load_members_but(payload, where, "ranges", max_bytes, UnusableCoverage)
    if parts is None:
        return None
    env, ranges = parts
    if ranges is None:
        return None
    if (env.get("spec"), env.get("encoding")) != (MOC_SPEC, "ranges") or not (
            is_int(env.get("order")) and env["order"] == shard_order):
        return None
    data = np.frombuffer(ranges, dtype=np.uint8)
    kind = _CLASS[data]
    if not kind.all():
        return None  # an escape, a letter, a point, non-ASCII: not the digits expected
    structure = np.flatnonzero(kind == 2)
    shape = data[structure]  # JSON already: "[", then '[""""]' a range, then "]"
    body = shape[1:-1]
    if (shape.size < 8 or shape[0] != ord("[") or shape[-1] != ord("]") or body.size % 6
            or (body.reshape(-1, 6) != _RANGE).any()):
        return None
    quotes = structure[shape == ord('"')]
    opening, closing = quotes[0::2], quotes[1::2]
    if np.count_nonzero(kind == 1) != int((closing - opening - 1).sum()):
        return None  # a number between the strings
    bounds = _endpoint_bounds(data, opening + 1, closing, shard_order)
    return None if bounds is None else (bounds, env)


def _bounds_at_once(ranges: list[Any], order: int) -> np.ndarray | None:
    """The ``[lo, hi]`` rank rows of well-formed ranges, parsed as one byte string (a
    million-node MOC has ~10^5 ranges); ``None`` if any range is not well formed.

    Cost: the endpoints' characters twice (a string and its bytes) and a few arrays of
    8 bytes per endpoint; no string or array per endpoint or per digit.
    """
    if set(map(type, ranges)) - {list} or set(map(len, ranges)) - {2}:  # no Python loop
        return None
    try:  # endpoints "[-]B" + ``order`` digits, separated by "|" (no endpoint holds one)
        data = np.frombuffer("|".join([e for pair in ranges for e in pair]).encode("ascii"),
                             dtype=np.uint8)
    except (TypeError, UnicodeEncodeError):
        return None
    ends = np.append(np.flatnonzero(data == ord("|")), data.size)
    starts = np.concatenate(([0], ends[:-1] + 1))
    if ends.size != 2 * len(ranges):
        return None
    return _endpoint_bounds(data, starts, ends, order)


def _endpoint_bounds(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                     order: int) -> np.ndarray | None:
    """The ``[lo, hi]`` rank rows of the endpoints ``data[starts[i]:ends[i]]`` (two a
    range, in order), or ``None`` if one is not an order-``order`` id or a range is not
    one ascending run of a base cell."""
    south = ends - starts == order + 2
    if not (south | (ends - starts == order + 1)).all():
        return None
    if (data[starts[south]] != ord("-")).any():
        return None
    first = ends - (order + 1)  # the base digit, then ``order`` quaternary digits
    base = data[first]
    if not ((base >= ord("1")) & (base <= ord("6"))).all():
        return None
    cell = (base - np.uint8(ord("1"))).astype(np.uint64)  # 0..5, then 6..11 south
    cell[south] += np.uint64(6)
    bounds = cell + np.uint64(1)
    for column in range(1, order + 1):  # rank digits, most significant first
        digit = data[first + column]
        if not ((digit >= ord("1")) & (digit <= ord("4"))).all():
            return None
        bounds <<= np.uint64(2)
        bounds += digit - np.uint8(ord("1"))
    cell, bounds = cell.reshape(-1, 2), bounds.reshape(-1, 2)
    if (cell[:, 0] != cell[:, 1]).any() or (bounds[:, 0] > bounds[:, 1]).any():
        return None
    return bounds


def merge_bounds(bounds: np.ndarray) -> np.ndarray:
    """Inclusive ``[lo, hi]`` rows sorted, with overlapping or adjacent rows joined."""
    if not bounds.size:
        return bounds
    bounds = bounds[np.argsort(bounds[:, 0], kind="stable")]
    reach = np.maximum.accumulate(bounds[:, 1])
    starts = np.concatenate(([True], bounds[1:, 0] > reach[:-1] + np.uint64(1)))
    ends = np.concatenate((starts[1:], [True]))
    return np.stack([bounds[starts, 0], reach[ends]], axis=1)


def expand_bounds(bounds: np.ndarray) -> np.ndarray:
    """Every rank of sorted, disjoint inclusive ``[lo, hi]`` rows, ascending.

    Cost: one array of 8 bytes per rank, made by one cumulative sum (a step of 1 within
    a row, the gap to the row before at its first rank).
    """
    lengths = (bounds[:, 1] - bounds[:, 0] + np.uint64(1)).astype(np.int64)
    ranks = np.ones(int(lengths.sum()), dtype=np.uint64)
    if ranks.size:
        ranks[np.cumsum(lengths) - lengths] = bounds[:, 0] - np.concatenate(
            ([np.uint64(0)], bounds[:-1, 1]))
        np.cumsum(ranks, out=ranks)
    return ranks


def _range_ranks(pair: object, order: int, where: str) -> tuple[int, int]:
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
        raise MalformedMetadataError(
            f"{where}: range {short(pair)} is not a [first, last] pair of decimal strings"
        )
    (base_lo, r_lo), (base_hi, r_hi) = (_endpoint(end, order, where) for end in pair)
    if base_lo != base_hi:
        raise MalformedMetadataError(f"{where}: range {short(pair)} crosses base cells")
    if r_lo > r_hi:
        raise MalformedMetadataError(f"{where}: range {short(pair)} is descending")
    return r_lo, r_hi


def _endpoint(end: str, order: int, where: str) -> tuple[str, int]:
    """An endpoint's base component and rank (one regex match, on the hot path of open)."""
    match = DECIMAL_RE.match(end)
    if match is None or len(match.group(2)) != order:
        raise MalformedMetadataError(
            f"{where}: range endpoint {short(end)} is not an order-{order} id"
        )
    return match.group(1), match_rank(match)
