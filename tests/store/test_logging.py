"""The package logs what it does on the ``moczarr_store`` logger and installs no handler;
damage is one aggregated warning per (level, kind), every object at DEBUG."""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
import warnings

import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES

import moczarr_store
from moczarr_store import HiveWarning, MocHiveStore

LOGGER = "moczarr_store"


# a module of an extra this Python may lack: the packages it needs
OPTIONAL = {  # [tiles]: Python 3.12 or newer (morecantile comes with xpublish-tiles)
    "moczarr_store.serve.tiles": {"xpublish", "xpublish_tiles", "morecantile"},
    "moczarr_store.serve.tile_zooms": {"morecantile", "pyproj"}}


def test_no_handler_is_installed():
    for module in pkgutil.walk_packages(moczarr_store.__path__, "moczarr_store."):
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as err:
            if err.name not in OPTIONAL.get(module.name, ()):
                raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.open_group(MocHiveStore(FIXTURES / "pyramid1"), mode="r")
    names = [LOGGER, *(n for n in logging.root.manager.loggerDict if n.startswith(LOGGER + "."))]
    for name in names:
        logger = logging.getLogger(name)
        assert logger.handlers == [] and logger.propagate, name
    assert logging.getLogger(LOGGER).level == logging.NOTSET


def test_open_and_levels_are_logged_with_request_counts(caplog):
    store = MocHiveStore(FIXTURES / "pyramid1", chunking="inner")
    with caplog.at_level(logging.DEBUG, logger=LOGGER), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.open_group(store, mode="r")  # the root document: every level is read
    records = [r for r in caplog.records if r.name == LOGGER]
    opened = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert len(opened) == 1 and opened[0].startswith("opened file://")
    assert "chunking='inner'" in opened[0] and "atl06/o7 (3 nodes)" in opened[0]
    assert "2 more declared" in opened[0] and " requests {'get" in opened[0]
    read = {r.getMessage().split("read level ")[1].split(" ")[0]: r for r in records
            if "read level" in r.getMessage()}
    overviews = [lv.path for p in store.session.hive.products for lv in p.levels[1:]
                 if lv.artifact != "computed"]
    assert sorted(read) == sorted(overviews) and len(overviews) == 2
    assert all(r.levelno == logging.DEBUG and "requests so far" in r.getMessage()
               for r in read.values())


def test_damage_is_one_warning_per_kind_and_every_object_at_debug(hive_copy, caplog):
    root = hive_copy("bare_versioned")
    moc = json.loads((root / "coverage.moc").read_text())
    moc["ranges"].append(["411111", "411144"])  # 16 listed nodes without a leaf
    (root / "coverage.moc").write_text(json.dumps(moc))
    with caplog.at_level(logging.DEBUG, logger=LOGGER), pytest.warns(HiveWarning) as caught:
        store = MocHiveStore(root)
        xr.open_zarr(store, group="atl06/o7")["count"].load()
    assert store.problems()[("atl06/o7", "absent")].count == 16
    hive_warnings = [w for w in caught if issubclass(w.category, HiveWarning)]
    assert len(hive_warnings) == 1 and "/4111" in str(hive_warnings[0].message)
    # the 16 are learned together (one listing of the chunk's directories): one DEBUG line
    # names the first and counts the rest
    logged = [r for r in caplog.records if "read as missing" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelno == logging.DEBUG
    assert "and 15 more of the same chunk" in logged[0].getMessage()
