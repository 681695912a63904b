"""Other engines read through the store: Cubed, and xarray with ``chunks=None`` (numpy)
and ``chunks="auto"`` (dask). Expected values come from ``moczarr.open_hive``."""

from __future__ import annotations

import warnings

import dask.array
import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, assert_values

from moczarr_store import MocHiveStore

HIVE, GROUP = FIXTURES / "sharded", "atl06/o7"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture(scope="module")
def reference():
    return moczarr.open_hive(str(HIVE))


def test_cubed_sums_a_field_as_numpy_does(tmp_path, reference):
    import cubed  # in the test extra on every supported Python: a missing one fails
    import cubed.array_api as xp

    spec = cubed.Spec(work_dir=str(tmp_path), allowed_mem="200MB")
    store = MocHiveStore(HIVE, chunking="leaf")  # several chunks: one per leaf
    count = cubed.from_zarr(store, path=f"{GROUP}/count", spec=spec)
    assert count.shape == reference["count"].shape and len(count.chunks[0]) > 1
    assert int(xp.sum(count).compute()) == int(np.sum(reference["count"].values)) > 0
    h_mean = cubed.from_zarr(store, path=f"{GROUP}/h_mean", spec=spec)
    np.testing.assert_array_equal(h_mean.compute(), reference["h_mean"].values)


@pytest.mark.parametrize("chunks", [None, "auto"])
def test_xarray_open_zarr_chunk_choices(chunks, reference):
    ds = xr.open_zarr(MocHiveStore(HIVE), group=GROUP, chunks=chunks)
    lazy = isinstance(ds["count"].data, dask.array.Array)
    assert lazy == (chunks == "auto")
    for name in ["count", "h_mean", "morton", "cell_ids"]:
        np.testing.assert_array_equal(ds[name].values, reference[name].values, err_msg=name)
    if chunks == "auto":  # dask's "auto" chunks are whole multiples of the leaf chunks
        leaf = xr.open_zarr(MocHiveStore(HIVE), group=GROUP)["count"].chunks[0][0]
        assert all(c % leaf == 0 for c in ds["count"].chunks[0][:-1])


def _fused_pipeline() -> str | None:
    """The fused codec pipeline's config path (zarr >= 3.4), or ``None``."""
    from zarr.core import codec_pipeline

    path = "zarr.core.codec_pipeline.FusedCodecPipeline"
    return path if hasattr(codec_pipeline, "FusedCodecPipeline") else None


# zarr's synchronous store surface. The store has none: zarr's fused pipeline calls it on
# its shared worker threads, and a ``get_sync`` waiting for the asynchronous read (which
# decodes re-encoded leaves through zarr, on that same pool) hung on ``ragged``, "leaf" mode.
_SYNC_IO = ("get_sync", "set_sync", "delete_sync")


@pytest.mark.skipif(_fused_pipeline() is None,
                    reason="zarr < 3.4 has no fused codec pipeline to opt into")
@pytest.mark.parametrize("name,group", [("sharded", "atl06/o7"), ("legacy", "atl06/o7"),
                                        ("ragged", "atl06/o6"), ("mixed", "atl06/o7"),
                                        ("paged", "atl06/o8")])
@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner", "span"])
def test_zarr_fused_codec_pipeline_reads_as_moczarr(name, group, chunking):
    """zarr's opt-in fused pipeline (its synchronous fast path needs a store with
    synchronous I/O, which this store has not, so zarr reads it through its asynchronous
    fallback) gives every array moczarr's values and dtype, in every chunking mode."""
    assert not any(hasattr(MocHiveStore, name) for name in _SYNC_IO)
    reference = moczarr.open_hive(str(FIXTURES / name))
    with zarr.config.set({"codec_pipeline.path": _fused_pipeline()}):
        got = zarr.open_group(MocHiveStore(FIXTURES / name, chunking=chunking), path=group,
                              mode="r")
        assert type(got[str(next(iter(reference.data_vars)))].async_array.codec_pipeline
                    ).__name__ == "FusedCodecPipeline"
        for array_name in [*reference.data_vars, "morton", "cell_ids"]:
            want = reference[array_name].values
            values = got[str(array_name)][:]
            assert values.dtype == want.dtype, array_name
            assert_values(values, want, array_name)
