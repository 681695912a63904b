"""The app from environment variables: one per worker process, for servers that import a
factory (``uvicorn --factory moczarr_store.serve:app_from_env``, gunicorn's uvicorn
worker, ``moczarr-store serve --workers N``).

``MOCZARR_STORE_SOURCE`` (required: path or URL); one variable per store option that has
one (``options.OPTIONS``: ``MOCZARR_STORE_CHUNKING``, ``MOCZARR_STORE_AOI``,
``MOCZARR_STORE_STORAGE_OPTIONS`` as JSON, ...; obstore also reads its own ``AWS_*``, ...
variables) and per serve option that has one (``options.SERVE_OPTIONS``:
``MOCZARR_STORE_CORS``, origins separated by spaces or commas, ...);
``MOCZARR_STORE_OPENED_HIVE`` (a file holding the pickled
hive every worker presents, written by ``moczarr-store serve --workers N``, which opened
it once: the workers then agree on what each key names; a pickle, so only a file of that
command).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from typing import Any

from ..errors import OptionError
from ..options import BY_NAME, ENV_PREFIX, OPTIONS, SERVE_BY_NAME, SERVE_OPTIONS, Option
from ..store import MocHiveStore
from .app import HiveApp, create_app, tiles_module

PREFIX = ENV_PREFIX
OPENED_HIVE = f"{PREFIX}OPENED_HIVE"


def to_env(source: str, **options: Any) -> dict[str, str]:
    """The variables that make :func:`app_from_env` build ``create_app(source, **options)``
    (store options and serve options that have a variable)."""
    env = {f"{PREFIX}SOURCE": str(source)}
    for name, value in options.items():
        option = BY_NAME.get(name) or SERVE_BY_NAME.get(name)
        if option is None or option.env_name is None:
            raise OptionError(f"option {name!r} cannot be passed to worker processes")
        if value is not None and value != option.default and value != {}:
            env[option.env_name] = option.show(value)
    return env


def options_from_env(environ: Mapping[str, str],
                     declared: tuple[Option, ...] = OPTIONS) -> dict[str, Any]:
    """Keyword arguments from the variables :func:`to_env` writes, of the ``declared``
    options (the store's, or ``SERVE_OPTIONS``); an empty variable is unset, a bad value
    an ``OptionError`` naming the variable."""
    return {o.name: o.from_text(text, o.env_name) for o in declared
            if o.env_name is not None and (text := environ.get(o.env_name))}


def app_from_env(environ: Mapping[str, str] | None = None) -> HiveApp:
    """``create_app`` configured by the ``MOCZARR_STORE_*`` variables (see the module)."""
    environ = os.environ if environ is None else environ
    source = environ.get(f"{PREFIX}SOURCE")
    if not source:
        raise OptionError(f"{PREFIX}SOURCE is not set: it names the hive to serve")
    options = options_from_env(environ)
    served = options_from_env(environ, SERVE_OPTIONS)
    if served.get("tiles"):
        tiles_module().warm_up_in_background()  # this worker's renderer
    if not (opened := environ.get(OPENED_HIVE)):
        return create_app(source, **served, **options)
    store = MocHiveStore(source, **options)
    try:
        with open(opened, "rb") as kept:
            hive = pickle.load(kept)
    except (OSError, pickle.UnpicklingError, EOFError) as err:
        raise OptionError(f"{OPENED_HIVE}={opened!r} cannot be read ({type(err).__name__}: "
                          f"{err}); it is written by moczarr-store serve --workers N") from None
    store.session.adopt(hive)
    return create_app(store, **served)
