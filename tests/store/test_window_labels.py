"""``window_labels``: a windowed level's ``window`` coordinate as strings (the default, for
xarray users) or as positions with the labels in an attribute (``"index"``, for clients
that decode no Zarr string, GDAL 3.12 among them). Either way window ``i`` of every field
is moczarr's read of the window its label names."""

from __future__ import annotations

import warnings

import moczarr
import numpy as np
import pytest
import xarray as xr
from support.hives import FIXTURES

from moczarr_store import MocHiveStore, OptionError

HIVE = FIXTURES / "windowed"
LABELS = ["2019", "2020"]  # the fixture's windows, in chronological order


def _open(**options) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return xr.open_zarr(MocHiveStore(HIVE, **options), group="atl06/o7")


def test_strings_by_default():
    ds = _open()
    assert ds["window"].values.tolist() == LABELS and "labels" not in ds["window"].attrs
    assert float(ds["h_mean"].sel(window="2020").sum()) == pytest.approx(
        float(moczarr.open_hive(str(HIVE), window="2020")["h_mean"].sum()))


def test_index_numbers_the_windows_and_keeps_the_labels():
    ds = _open(window_labels="index")
    window = ds["window"]
    assert window.dtype == np.int32 and window.values.tolist() == [0, 1]
    assert window.attrs["labels"] == LABELS
    for i, label in enumerate(window.attrs["labels"]):
        want = moczarr.open_hive(str(HIVE), window=label).load()
        ids = ds["cell_ids"].values
        assert set(want["cell_ids"].values) <= set(ids)
        rows = np.searchsorted(ids, want["cell_ids"].values)
        for name in ("count", "h_mean"):
            np.testing.assert_array_equal(ds[name].values[i, rows], want[name].values,
                                          err_msg=f"{label} {name}")


def test_an_unknown_form_is_named():
    with pytest.raises(OptionError, match="window_labels='bytes'"):
        MocHiveStore(HIVE, window_labels="bytes")
