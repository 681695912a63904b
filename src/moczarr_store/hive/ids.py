"""Morton id arithmetic: decimal ids, packed uint64 words, ranks and NESTED ids.

Packed word layout (mortie spec §1): bits 63..60 hold ``base_cell + 1``, then 27
two-bit digit tuples (stored value = digit - 1), then a 6-bit order suffix. At a
fixed order ``c`` the word is ``(K << shift(c)) | c`` with the unit-stride global
rank ``K = (base + 1) * 4**c + rank``, and ``NESTED = K - 4**c``.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import numpy.typing as npt

MAX_ORDER = 27
DECIMAL_RE = re.compile(r"^(-?[1-6])([1-4]{0,27})\Z")
_U64 = np.uint64


def shift(order: int) -> int:
    """Bit position of rank ``K`` inside a packed word of ``order``."""
    check_order(order)
    return 6 + 2 * (MAX_ORDER - order)


def check_order(order: int) -> int:
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= MAX_ORDER:
        raise ValueError(f"cell order {order!r} is unsupported (0..{MAX_ORDER})")
    return order


def decimal_order(decimal: str) -> int:
    match = DECIMAL_RE.match(decimal)
    if match is None:
        raise ValueError(f"{decimal!r} is not a morton decimal id")
    return len(match.group(2))


def decimal_to_rank(decimal: str) -> int:
    """Global rank ``K`` of a decimal id at its own order."""
    match = DECIMAL_RE.match(decimal)
    if match is None:
        raise ValueError(f"{decimal!r} is not a morton decimal id")
    return match_rank(match)


def match_rank(match: re.Match[str]) -> int:
    """Global rank ``K`` of a :data:`DECIMAL_RE` match (a parser that has matched already)."""
    base, tail = match.groups()
    base_cell = int(base) - 1 if base[0] != "-" else 5 - int(base)
    rank = int(tail.translate(_DIGIT_TO_QUAT), 4) if tail else 0
    return ((base_cell + 1) << (2 * len(tail))) + rank


def decimal_to_word(decimal: str) -> int:
    order = decimal_order(decimal)
    return (decimal_to_rank(decimal) << shift(order)) | order


def word_order(word: int) -> int:
    return check_order(int(word) & 0x3F)


def word_to_decimal(word: int) -> str:
    order = word_order(word)
    return rank_to_decimal(int(word) >> shift(order), order)


def rank_to_decimal(rank: int, order: int) -> str:
    base1, tail = rank >> (2 * order), rank & ((1 << (2 * order)) - 1)
    if not 1 <= base1 <= 12:
        raise ValueError(f"rank {rank} at order {order} names no base cell")
    base = str(base1) if base1 <= 6 else f"-{base1 - 6}"
    if not order:
        return base
    # two digits per hex digit (one per bit pair); an odd order drops the leading pad digit
    pairs = format(tail, f"0{(order + 1) // 2}x").translate(_HEX_TO_DIGITS)
    return base + pairs[len(pairs) - order :]


def words_to_ranks(words: np.ndarray, order: int) -> np.ndarray:
    return np.asarray(words, dtype=_U64) >> _U64(shift(order))


def ranks_to_words(ranks: np.ndarray, order: int) -> np.ndarray:
    words = np.array(ranks, dtype=_U64)  # a fresh array, computed in place
    words <<= _U64(shift(order))
    words |= _U64(order)
    return words


def ranks_to_nested(ranks: np.ndarray, order: int) -> np.ndarray:
    nested = np.array(ranks, dtype=_U64)  # a fresh array, computed in place
    nested -= _U64(4**order)
    return nested


def child_values_into(out: np.ndarray, node_ranks: np.ndarray, depth: int, start: int,
                      stop: int, order: int, nested: bool) -> np.ndarray:
    """Rows ``[start, stop)`` of the concatenated node subtrees (row ``r`` is child
    ``r % 4**depth`` of node ``r // 4**depth``) as packed words of ``order`` (``nested``:
    NESTED ids), written into ``out[: stop - start]`` (contiguous uint64) and returned.
    A row is ``high(node) | low(child)``: whole subtrees are one OR of the nodes' bits
    with a kept table of the children's (read-only, up to 1 Mi rows), a part of one a
    slice of it. Cost: one pass over the rows, no temporary as large as them.
    """
    per, bits = 4**depth, 2 * depth
    low_shift = 0 if nested else shift(order)
    first, last = start // per, -(-stop // per)
    nodes = np.asarray(node_ranks[first:last], dtype=_U64)
    if nested:  # a node's NESTED id: its rank less the order's leading one
        high = (nodes - _U64(4 ** (order - depth))) << _U64(bits)
    else:
        high = nodes << _U64(bits + low_shift)
    tag = 0 if nested else order
    at, row = 0, start  # where the next row goes in out, and its row number
    while row < stop:
        node, child = divmod(row, per)
        take = min(per - child, stop - row)
        into, h = out[at : at + take], high[node - first]
        if take == per and per <= 1 << 20:  # whole subtrees: all of them in one OR
            whole = (stop - row) // per
            block = out[at : at + whole * per].reshape(whole, per)
            np.bitwise_or(high[node - first : node - first + whole, None],
                          _low_table(per, low_shift, tag), out=block)
            at, row = at + whole * per, row + whole * per
            continue
        if per <= 1 << 20:
            np.bitwise_or(h, _low_table(per, low_shift, tag)[child : child + take], out=into)
        else:  # a part of a subtree too large to keep a table of
            np.left_shift(np.arange(child, child + take, dtype=_U64), _U64(low_shift), out=into)
            into |= h | _U64(tag)
        at, row = at + take, row + take
    return out[:at]


@functools.lru_cache(maxsize=8)
def _low_table(per: int, low_shift: int, tag: int) -> np.ndarray:
    """``(arange(per) << low_shift) | tag`` as uint64, read-only (kept: at most 8 MB)."""
    table = (np.arange(per, dtype=_U64) << _U64(low_shift)) | _U64(tag)
    table.flags.writeable = False
    return table


def ancestor_ranks(ranks: npt.ArrayLike, depth: int) -> np.ndarray:
    """Ranks of the ancestors ``depth`` orders above ``ranks`` (a node's parent at 1)."""
    return np.asarray(ranks, dtype=_U64) >> _U64(2 * depth)


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for values that are ascending already, as ranks and their
    ancestors are (equal ones are neighbours): ``values`` itself when no two are equal,
    else the first of each. Cost: one comparison pass, O(n) (numpy's ``unique`` hashes or
    sorts: ~80x longer on 10 M ranks); values out of order are sorted first."""
    if values.size < 2:
        return values
    rising = values[1:] > values[:-1]
    if rising.all():
        return values
    if not (values[1:] >= values[:-1]).all():
        values = np.sort(values)
        rising = values[1:] > values[:-1]
    return values[np.concatenate(([True], rising))]


_DIGIT_TO_QUAT = str.maketrans("1234", "0123")
_HEX_TO_DIGITS = {ord(f"{v:x}"): "1234"[v >> 2] + "1234"[v & 3] for v in range(16)}
