"""``moczarr-store serve``: the app under uvicorn, logging through :mod:`logging`."""

from __future__ import annotations

import inspect
import logging
import logging.config
import os
import pickle
import tempfile
from typing import Any

import uvicorn
from zarr.core.sync import sync  # internal: zarr exports no runner on its event loop

from ..hive.roster import Hive
from ..options import SERVE_BY_NAME, SERVE_OPTIONS, check_serve
from ..store import MocHiveStore
from .app import create_app, tiles_module
from .env import OPENED_HIVE, to_env
from .guard import accept_batch, raise_descriptor_limit
from .protocols import http_protocol

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# seconds a worker process may take to start (its imports, the hive it unpickles) before
# uvicorn takes it for dead and starts another: its 5 s default made a loaded machine
# restart every worker, over and over
WORKER_START = 60


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


def serve(source: str, **options: Any) -> None:
    """Serve ``source`` until interrupted. ``options``: serve's own
    (``options.SERVE_OPTIONS``: ``host``, ``port``, ``workers``, ``cors``, ``stamp_ttl``,
    ``warm_leaves``, ``tiles``, ``access_log``), checked before anything is opened, and the
    store's, checked as the store is made, before the port is bound. One worker runs the
    app in this process; more start ``workers`` processes, each building its own app from
    the environment."""
    served = check_serve({k: options.pop(k) for k in list(options) if k in SERVE_BY_NAME})
    if served["tiles"]:
        tiles_module()  # an ImportError naming the extra before anything is opened
    logging.captureWarnings(True)  # HiveWarnings (damage read as missing) go to the log
    config = log_config(served["access_log"])
    logging.config.dictConfig(config)
    before, after = raise_descriptor_limit()  # inherited by the workers
    if after != before:
        logging.getLogger("moczarr_store.serve").info(
            "open-file limit raised from %d to %d (the hard limit)", before, after)
    common: dict[str, Any] = {
        "host": served["host"], "port": served["port"], "log_config": config,
        "access_log": False, "http": http_protocol(), "backlog": accept_batch(after),
    }
    app_options = {o.name: served[o.name] for o in SERVE_OPTIONS if o.env}  # cors, stamp_ttl
    if served["workers"] == 1:
        app = create_app(source, **app_options, **options)
        if served["tiles"]:
            tiles_module().warm_up_in_background()
        uvicorn.run(app, **common)
        return
    with tempfile.TemporaryDirectory(prefix="moczarr-store-") as kept:
        opened = os.path.join(kept, "hive.pickle")  # read by every worker, restarted ones too
        with open(opened, "wb") as out:
            pickle.dump(opened_hive(source, options), out)
        os.environ.update({**to_env(source, **app_options, **options), OPENED_HIVE: opened})
        if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:
            common["timeout_worker_healthcheck"] = WORKER_START  # where uvicorn has it
        uvicorn.run("moczarr_store.serve:app_from_env", factory=True,
                    workers=served["workers"], **common)


def opened_hive(source: str, store_options: dict[str, Any]) -> Hive:
    """The hive with every level read, as the workers will all present it: each opens
    nothing itself, so a leaf a writer adds between two workers' first requests cannot
    give them different hierarchies. Cost: the open and every level's schema, once."""
    store = MocHiveStore(source, **store_options)
    sync(store.session.ensure_levels(""))
    return store.session.hive
