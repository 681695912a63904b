"""The app from environment variables: one per worker process, for servers that import a
factory (``uvicorn --factory moczarr_store.serve:app_from_env``, gunicorn's uvicorn
worker, ``moczarr-store serve --workers N``).

``MOCZARR_STORE_SOURCE`` (required: path or URL), ``MOCZARR_STORE_CHUNKING``,
``MOCZARR_STORE_VERIFY``, ``MOCZARR_STORE_WINDOW``, ``MOCZARR_STORE_GEOMETRY``,
``MOCZARR_STORE_MAX_CONCURRENCY``, ``MOCZARR_STORE_CORS`` (origins separated by spaces or
commas),
``MOCZARR_STORE_STAMP_TTL`` (seconds),
``MOCZARR_STORE_STORAGE_OPTIONS`` (JSON; ``moczarr-store serve --workers N`` passes its
storage options this way; obstore also reads its own ``AWS_*``, ... variables),
``MOCZARR_STORE_VIEW`` (a file holding the pickled hive every worker presents, written
by ``moczarr-store serve --workers N``, which opened it once: the workers then agree on
what each key names; a pickle, so only a file of that command).
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.applications import Starlette

from ..errors import OptionError
from ..storage import from_json, to_json
from ..store import MocHiveStore
from .app import create_app

PREFIX = "MOCZARR_STORE_"
VIEW = f"{PREFIX}VIEW"
_STORE_OPTIONS = ("chunking", "verify", "window", "geometry", "max_concurrency")


def to_env(
    source: str,
    *,
    cors: Iterable[str] = (),
    stamp_ttl: float | None = None,
    **store_options: Any,
) -> dict[str, str]:
    """The variables that make :func:`app_from_env` build ``create_app(source, ...)``."""
    storage = store_options.pop("storage_options", None)
    unknown = set(store_options) - set(_STORE_OPTIONS)
    if unknown:
        raise OptionError(f"options {sorted(unknown)} cannot be passed to worker processes")
    env = {f"{PREFIX}SOURCE": str(source)}
    env.update({f"{PREFIX}{k.upper()}": str(v) for k, v in store_options.items() if v})
    if storage:
        env[f"{PREFIX}STORAGE_OPTIONS"] = to_json(storage)
    if cors:
        env[f"{PREFIX}CORS"] = " ".join(cors)
    if stamp_ttl is not None:
        env[f"{PREFIX}STAMP_TTL"] = repr(float(stamp_ttl))
    return env


def app_from_env(environ: Mapping[str, str] | None = None) -> Starlette:
    """``create_app`` configured by the ``MOCZARR_STORE_*`` variables (see the module)."""
    environ = os.environ if environ is None else environ
    source = environ.get(f"{PREFIX}SOURCE")
    if not source:
        raise OptionError(f"{PREFIX}SOURCE is not set: it names the hive to serve")
    given = {k: environ.get(f"{PREFIX}{k.upper()}") for k in _STORE_OPTIONS}
    options: dict[str, Any] = {k: v for k, v in given.items() if v}
    if cap := options.get("max_concurrency"):
        if not cap.isdigit():
            raise OptionError(f"{PREFIX}MAX_CONCURRENCY={cap!r}: expected an int >= 1")
        options["max_concurrency"] = int(cap)
    cors = [o for o in re.split(r"[\s,]+", environ.get(f"{PREFIX}CORS", "")) if o]
    if storage := environ.get(f"{PREFIX}STORAGE_OPTIONS"):
        options["storage_options"] = from_json(storage)
    ttl: dict[str, Any] = {"stamp_ttl": t} if (t := environ.get(f"{PREFIX}STAMP_TTL")) else {}
    if not (view := environ.get(VIEW)):
        return create_app(source, cors=cors, **ttl, **options)
    store = MocHiveStore(source, **options)
    try:
        with open(view, "rb") as kept:
            hive = pickle.load(kept)
    except (OSError, pickle.UnpicklingError, EOFError) as err:
        raise OptionError(f"{VIEW}={view!r} cannot be read ({type(err).__name__}: {err}); "
                          "it is written by moczarr-store serve --workers N") from None
    store.session.adopt(hive)
    return create_app(store, cors=cors, **ttl)
