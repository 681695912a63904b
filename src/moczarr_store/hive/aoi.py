"""Areas of interest: morton cells (decimal ids or packed words) at any orders."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .ids import (
    DECIMAL_RE,
    ancestor_ranks,
    decimal_order,
    decimal_to_rank,
    shift,
    word_order,
    words_to_ranks,
)

Cells = list[tuple[int, int]]  # (rank, order)


def aoi_members(aoi: Iterable[str | int] | str | int) -> tuple[str | int, ...]:
    """AOI members as plain ``str`` decimal ids and ``int`` packed words."""
    if isinstance(aoi, str | int | np.integer):
        members = [aoi]
    elif isinstance(aoi, np.ndarray):
        members = list(np.ravel(aoi))
    else:  # item by item: numpy would make the ints of a mixed list strings
        members = list(aoi)
    return tuple(str(m) if isinstance(m, str | np.str_) else m for m in members)


def parse_aoi(aoi: Iterable[str | int] | str | int) -> Cells:
    """``(rank, order)`` of every AOI member; decimal strings or packed uint64 words."""
    cells = []
    for member in aoi_members(aoi):
        if isinstance(member, str | np.str_):
            cells.append((decimal_to_rank(str(member)), decimal_order(str(member))))
        elif isinstance(member, int | np.integer) and not isinstance(member, bool | np.bool_):
            cells.append(_word_cell(int(member)))
        else:
            raise TypeError(f"AOI member {member!r} is neither a decimal id nor a packed word")
    return cells


def _word_cell(word: int) -> tuple[int, int]:
    """``(rank, order)`` of a packed morton word; ``ValueError`` naming the member (and
    the likely mistake, a decimal id given as an int) when it is not one."""
    try:
        if not 0 < word < 2**64:
            raise ValueError("out of the uint64 range")
        order = word_order(word)
        rank = word >> shift(order)
        if not 1 <= rank >> (2 * order) <= 12:
            raise ValueError(f"names no base cell at order {order}")
    except ValueError as err:
        hint = (f"; pass the decimal id as a string ({str(word)!r})"
                if DECIMAL_RE.match(str(word)) else "")
        raise ValueError(f"AOI member {word} is an int, so a packed morton word, but not a "
                         f"valid one ({err}){hint}") from None
    return rank, order


def overlaps(ranks: np.ndarray, order: int, aoi: Cells) -> np.ndarray:
    """Mask of the order-``order`` cells ``ranks`` that overlap any AOI member."""
    ranks = np.asarray(ranks, dtype=np.uint64)
    keep = np.zeros(ranks.size, dtype=bool)
    for rank, member_order in aoi:
        if member_order <= order:  # the member contains whole cells
            keep |= ancestor_ranks(ranks, order - member_order) == np.uint64(rank)
        else:  # the member lies inside one cell
            keep |= ranks == ancestor_ranks(np.uint64(rank), member_order - order)
    return keep


def aoi_mask(morton: np.ndarray, aoi: Iterable[str | int] | str | int) -> np.ndarray:
    """Rows of a ``cells`` axis (its ``morton`` words) that overlap ``aoi``.

    ``ds.isel(cells=aoi_mask(ds.morton.values, aoi))`` cuts an AOI-restricted view (which
    keeps whole node subtrees) down to moczarr's cell-exact rows.
    """
    words = np.asarray(morton)
    if words.ndim != 1 or words.dtype.kind not in "iu":
        raise TypeError("morton is a 1-D array of packed words (integers), got "
                        f"{words.dtype} of shape {words.shape}")
    if words.size == 0:
        return np.zeros(0, dtype=bool)
    words = words.astype(np.uint64, copy=False)  # an int64 view of the words: the same bits
    order = word_order(int(words[0]))
    if np.any(words & np.uint64(0x3F) != np.uint64(order)):
        raise ValueError(f"morton holds words of more than one order (the first is of order "
                         f"{order}): one level's rows are of one order")
    return overlaps(words_to_ranks(words, order), order, parse_aoi(aoi))
