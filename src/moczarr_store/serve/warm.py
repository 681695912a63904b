"""Folding the coarse computed orders as the server starts, before a client asks.

On a product whose orders above its shard order are computed, each of their chunks folds
every leaf of a base cell (:mod:`..read.compute`): the first picture of the map viewer,
and every first read of a coarse order, waits for a pass over the hive. ``serve`` makes
that pass at start, in the background on the server's event loop: every chunk of each
field at the finest order whose nodes are at order 0 (every coarser order is folded again
from it), field after field in path order, while the leaves read stay within
``warm_leaves``. A request for a chunk being folded waits for that fold, not another;
the next generation takes the chunks kept (:mod:`.generations`).

Cost: one read of each leaf (stamp, array metadata, chunk) per field warmed, at most
``warm_leaves`` leaf reads in all; memory: the chunks kept, one per base cell and field
(``cache.computed_bytes`` bounds them).
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING

from zarr.core.buffer import default_buffer_prototype

from ..read.compute import coarse_sources

if TYPE_CHECKING:
    from .generations import Generations

LOG = logging.getLogger("moczarr_store.serve")


async def warm(generations: Generations, warm_leaves: int) -> None:
    """Fold the coarse computed orders' chunks (see the module), within ``warm_leaves``
    leaf reads; a failure is logged and ends the warm-up (a request meets it again)."""
    start, left, done = time.perf_counter(), warm_leaves, []
    try:
        session = generations.current().store.session
        view = await session.ensure_levels("")
        for array in coarse_sources(view):
            leaves = array.leaves_folded
            if leaves > left:
                break
            left -= leaves
            for coords in itertools.product(*(range(n) for n in array.grid)):
                key = f"{array.path}/c/{'/'.join(map(str, coords))}"
                await generations.current().store.get(key, default_buffer_prototype())
            done.append(array.path)
    except Exception as err:  # a damaged hive: what it says is the requests' to report
        LOG.warning("warm-up of the computed orders stopped: %s: %s", type(err).__name__, err)
        return
    if done:
        LOG.info("computed orders warmed in %.1f s (%d leaf reads): %s",
                 time.perf_counter() - start, warm_leaves - left, ", ".join(done))
