"""``moczarr-store serve``: the app under uvicorn, logging through :mod:`logging`."""

from __future__ import annotations

import logging
import logging.config
import os
import pickle
import tempfile
from collections.abc import Iterable
from typing import Any

import uvicorn
from zarr.core.sync import sync  # internal: zarr exports no runner on its event loop

from ..hive.roster import Hive
from ..store import MocHiveStore
from .app import create_app
from .env import VIEW, to_env
from .guard import accept_batch, raise_descriptor_limit
from .protocols import http_protocol

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_config(access_log: bool) -> dict[str, Any]:
    """The logging configuration applied in every worker process: INFO and up on stderr;
    the access log (one line per request, ``moczarr_store.serve.access``) only with
    ``access_log``. A zarr read asks for every chunk, so those lines would come in
    hundreds a read, each costing the server about as much as planning its chunk."""
    access = "INFO" if access_log else "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": FORMAT}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
        "root": {"handlers": ["stderr"], "level": "INFO"},
        "loggers": {"moczarr_store.serve.access": {"level": access}},
    }


def serve(
    source: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    cors: Iterable[str] = (),
    stamp_ttl: float | None = None,
    access_log: bool = False,
    **store_options: Any,
) -> None:
    """Serve ``source`` until interrupted. One worker runs the app in this process; more
    start ``workers`` processes, each building its own app from the environment.
    ``access_log``: log one line per request."""
    logging.captureWarnings(True)  # HiveWarnings (damage read as missing) go to the log
    config = log_config(access_log)
    logging.config.dictConfig(config)
    before, after = raise_descriptor_limit()  # inherited by the workers
    if after != before:
        logging.getLogger("moczarr_store.serve").info(
            "open-file limit raised from %d to %d (the hard limit)", before, after)
    common: dict[str, Any] = {
        "host": host, "port": port, "log_config": config, "access_log": False,
        "http": http_protocol(), "backlog": accept_batch(after),
    }
    if workers <= 1:
        ttl: dict[str, Any] = {} if stamp_ttl is None else {"stamp_ttl": stamp_ttl}
        app = create_app(source, cors=cors, **ttl, **store_options)
        uvicorn.run(app, **common)
        return
    with tempfile.TemporaryDirectory(prefix="moczarr-store-") as kept:
        view = os.path.join(kept, "view.pickle")  # read by every worker, restarted ones too
        with open(view, "wb") as out:
            pickle.dump(opened_view(source, store_options), out)
        env = to_env(source, cors=cors, stamp_ttl=stamp_ttl, **store_options)
        os.environ.update({**env, VIEW: view})
        uvicorn.run("moczarr_store.serve:app_from_env", factory=True, workers=workers, **common)


def opened_view(source: str, store_options: dict[str, Any]) -> Hive:
    """The hive with every level read, as the workers will all present it: each opens
    nothing itself, so a leaf a writer adds between two workers' first requests cannot
    give them different views. Cost: the open and every level's schema, once."""
    store = MocHiveStore(source, **store_options)
    sync(store.session.ensure_levels(""))
    return store.session.hive
