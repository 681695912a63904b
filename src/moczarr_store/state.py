"""What this process keeps across stores, in one owner: the process state.

Each module that keeps something for the whole process (spans it mapped, inotify watches,
parsed documents, what unpickled copies learned) declares it as a :class:`Part`: how to
make it, and how to let it go. Calling the part gives the current process's instance,
made on first use. :func:`reset` lets every part go and starts a new state (tests do it
after each test); a forked child starts a new one at once (``os.register_at_fork``), so
it never uses its parent's locks, memory maps or inotify instance: what the parent made
is dropped in the child (or handed to the part's ``forked``, which closes the child's
copy of a descriptor), never closed as at :func:`reset`, which could undo the parent's
watches.
:func:`parts` names the parts made so far, :func:`declared` every part declared.
Nothing here imports the rest of the package.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Part(Generic[T]):
    """One module's share of the process state (declared once, at import): ``make()``
    builds it in a process; ``close(it)``, if given, lets it go at :func:`reset`;
    ``forked(it)``, if given, is what a forked child does with its parent's."""

    def __init__(self, name: str, make: Callable[[], T],
                 close: Callable[[T], None] | None = None,
                 forked: Callable[[T], None] | None = None) -> None:
        self.name, self._make, self._close, self._forked = name, make, close, forked
        _declared.append(self)

    def __call__(self) -> T:
        """This process's instance, made now if need be. Cost: a dict lookup."""
        held = _current.held
        found = held.get(self)
        if found is None:
            found = held.setdefault(self, self._make())  # a racing thread's, if first
        return found

    def __repr__(self) -> str:
        return f"Part({self.name!r})"


class _State:
    """The parts one process made, by declaration."""

    def __init__(self) -> None:
        self.held: dict[Part[Any], Any] = {}


_current = _State()
_lock = threading.Lock()
_declared: list[Part[Any]] = []  # appended to at import only


def declared() -> list[str]:
    """The names of every part the modules imported so far declare."""
    return [part.name for part in _declared]


def parts() -> list[str]:
    """The names of the parts this process has made, in the order they were made."""
    return [part.name for part in list(_current.held)]


def reset() -> None:
    """Let every part go (each one's ``close``) and start with none: the next use of a
    part makes it afresh. Cost: what each ``close`` costs."""
    global _current
    with _lock:
        old, _current = _current, _State()
    for part, held in old.held.items():
        if part._close is not None:
            part._close(held)


def _forked() -> None:
    """In a forked child: a new state; the parent's is dropped, not closed."""
    global _current, _lock
    old, _current, _lock = _current, _State(), threading.Lock()
    for part, held in old.held.items():
        if part._forked is not None:
            with contextlib.suppress(Exception):  # never fail a fork
                part._forked(held)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
