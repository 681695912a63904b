"""The targets' harness reads each plain zarr copy by the very call of the store's row
beside it (``benchmarks/plain_copies.py`` against ``benchmarks/targets.py``)."""

from __future__ import annotations

import xarray as xr
from benchmarks import plain_copies, targets
from support.hives import FIXTURES

from moczarr_store import MocHiveStore


def test_plain_xarray_rows_open_the_copy_as_the_store_rows_open_the_store(tmp_path,
                                                                         monkeypatch):
    """Every ``xr.open_zarr`` of the plain rows has the store rows' arguments (but the
    group), so both get the same dask chunks: a plain copy read without dask beside a
    store read with it compared two different readers."""
    hive, group, field = FIXTURES / "sharded", "atl06/o7", "h_mean"
    store = MocHiveStore(hive)
    names = list(targets._open_xr(store, group).data_vars)
    fields = [n for n in names if n not in targets.COORDS]
    want = targets._reference(hive, group, fields)
    copies = plain_copies.make_copies(hive, group, field, tmp_path)
    calls = []
    real = xr.open_zarr

    def recording(where, *args, **kwargs):
        calls.append((where, args, kwargs))
        return real(where, *args, **kwargs)

    monkeypatch.setattr(xr, "open_zarr", recording)
    theirs = targets._open_xr(store, group)
    (ours_call,) = calls
    calls.clear()
    cells = want[field].shape[0] // 3  # the fixture's three leaves
    plain_copies.time_plain(copies, field, fields, want, cells, rounds=1)
    assert calls
    copy = str(copies["the store's layout"])
    expected = ({k: v for k, v in ours_call[2].items() if k != "group"}, ours_call[1])
    for where, args, kwargs in calls:
        assert where == copy
        assert ({k: v for k, v in kwargs.items() if k != "group"}, args) == expected
    chunks = theirs[field].chunks
    assert chunks is not None  # dask, one chunk per zarr chunk
    assert real(copy)[field].chunks == chunks
