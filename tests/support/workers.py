"""What a dask worker runs (``client.run``) to count the requests of the store copies
it unpickles.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations


def keep_backends() -> None:
    """On a dask worker (``client.run``): keep every backend made from now on, so that the
    requests of the store copies it unpickles can be summed after those are gone."""
    from moczarr_store.io import backend

    if hasattr(backend.Backend, "made"):
        return
    made: list = []
    init = backend.Backend.__init__

    def kept(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    backend.Backend.made = made  # type: ignore[attr-defined]
    backend.Backend.__init__ = kept  # type: ignore[method-assign]


def requests_made() -> int:
    """On a dask worker: requests of every backend made since :func:`keep_backends`."""
    from moczarr_store.io import backend

    return sum(b.stats.total for b in getattr(backend.Backend, "made", []))
