"""Reading a key while a writer commits: plan it, use the plan, and plan it again when a
leaf's commit stamp moved under the read.

A writer commits a leaf's new ``run-*`` version by swapping the leaf's stamp, then may
remove the old version. A plan made from a cached stamp can therefore name a version that
is gone; the executor finds that out (:class:`~moczarr_store.errors.LeafMovedError`,
after reading the stamp again) and the key is planned again from the new stamp, so a
chunk's bytes (and, through ``serve``, its size and entity tag) always come from one
version, read under that version's own metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ..errors import LeafMovedError
from .plan import Plan, plan_key

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest

    from ..session import HiveSession

MOVES = 4  # moves of one key's stamps met in a row before the read gives up
T = TypeVar("T")
logger = logging.getLogger("moczarr_store")


async def planned(
    session: HiveSession,
    key: str,
    use: Callable[[Plan], Awaitable[T]],
    byte_range: ByteRequest | None = None,
) -> T:
    """``use(plan_key(session, key, byte_range))``, planned and used again while a leaf's
    stamp moved under it (at most ``MOVES`` times, then the last ``LeafMovedError``, which
    names the leaf, is raised). Cost: nothing more unless a stamp moved; each move, one
    more plan and read."""
    for attempt in range(MOVES + 1):
        plan = await plan_key(session, key, byte_range)
        try:
            return await use(plan)
        except LeafMovedError as err:
            if attempt == MOVES:
                raise LeafMovedError(f"{key}: read {MOVES + 1} times while its leaf's "
                                     f"commit stamp kept moving; last: {err}") from err
            logger.debug("%s: planned again: %s", key, err)
    raise AssertionError("unreachable")
