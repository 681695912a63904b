"""Package frames between ``MocHiveStore.get`` and the system call, on a warm local read.

A measure of how deep the chunk path is, not of time. The chunk is read once (stamps,
leaf metadata and the page cache warm), then again while ``os.preadv``, ``os.pread`` and
``os.stat`` (what a mapped span checks) are watched: at the first of them, the logical
call chain is taken (the current stack, and for a task the stack that created it, so a
``gather`` does not cut it) and the frames of ``moczarr_store`` from ``get`` on are
counted. Cases: one leaf's chunk (``chunking="leaf"``) and a chunk joining leaves (the
default ``chunking="auto"``).

    python -m tests.support.frames [HIVE] [--key KEY] [--chain]

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import weakref
from pathlib import Path
from types import FrameType
from typing import Any

import moczarr_store
from moczarr_store import MocHiveStore

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = str(Path(moczarr_store.__file__).resolve().parent)
WATCHED = ("preadv", "pread", "stat")
Chain = list[tuple[str, str]]  # (file, function), outermost first

_CREATED: weakref.WeakKeyDictionary[asyncio.Task[Any], Chain] = weakref.WeakKeyDictionary()


def _stack(frame: FrameType | None) -> Chain:
    """``frame`` and its callers, outermost first, prefixed by the chain of the task that
    created the running task (if recorded)."""
    chain: Chain = []
    while frame is not None:
        chain.append((frame.f_code.co_filename, frame.f_code.co_name))
        frame = frame.f_back
    chain.reverse()
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop (a thread)
        task = None
    return _CREATED.get(task, []) + chain if task is not None else chain


def _factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    task = asyncio.Task(coro, loop=loop, **kwargs)
    _CREATED[task] = _stack(sys._getframe(1))
    return task


def package_frames(chain: Chain) -> Chain:
    """The package's frames of ``chain`` from the last ``MocHiveStore.get`` on."""
    starts = [i for i, (file, name) in enumerate(chain)
              if name == "get" and file.endswith(os.path.join("moczarr_store", "store.py"))]
    if not starts:
        return []
    return [(file, name) for file, name in chain[starts[-1]:]
            if file.startswith(PACKAGE) and not name.startswith("<")]


async def measure(store: MocHiveStore, key: str) -> tuple[str, Chain] | None:
    """The first watched call of a warm ``get(key)`` and its package frames."""
    from zarr.core.buffer import default_buffer_prototype

    proto = default_buffer_prototype()
    asyncio.get_running_loop().set_task_factory(_factory)
    assert await store.get(key, proto) is not None, f"{key}: no chunk to measure"  # warm
    seen: list[tuple[str, Chain]] = []
    originals = {name: getattr(os, name) for name in WATCHED}

    def watch(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not seen:
                seen.append((name, _stack(sys._getframe(1))))
            return originals[name](*args, **kwargs)
        return call

    for name in WATCHED:
        setattr(os, name, watch(name))
    try:
        await store.get(key, proto)
    finally:
        for name, original in originals.items():
            setattr(os, name, original)
    return None if not seen else (seen[0][0], package_frames(seen[0][1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hive", nargs="?", default=str(ROOT / "fixtures" / "pyramid1"))
    parser.add_argument("--key", default="atl06/o7/h_mean/c/0")
    parser.add_argument("--chain", action="store_true", help="print each frame")
    args = parser.parse_args(argv)
    for chunking in ("leaf", "auto"):
        store = MocHiveStore(args.hive, chunking=chunking)
        found = asyncio.run(measure(store, args.key))
        if found is None:
            print(f"chunking={chunking!r}: no watched system call (a mapped span kept?)")
            continue
        call, frames = found
        modules = {os.path.relpath(file, PACKAGE) for file, _ in frames}
        print(f"chunking={chunking!r} {args.key}: {len(frames)} package frames in "
              f"{len(modules)} modules from get to os.{call}")
        if args.chain:
            for file, name in frames:
                print(f"    {os.path.relpath(file, PACKAGE)}:{name}")


if __name__ == "__main__":
    main()
