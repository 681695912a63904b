"""Zarr clients read every array of every fixture through ``moczarr-store serve`` (uvicorn
on loopback) exactly as the in-process store reads it.

Every fixture is served in the default chunking mode, and in each other mode where its
virtual metadata differs (the fixtures with sharded leaves); windowed fixtures once more
scoped to one window.
"""

from __future__ import annotations

import base64
import json
import sys
import warnings
from asyncio import run as sync

import numpy as np
import pytest
import zarr
from support.hives import fixture_roots
from support.jsclients import run_node
from support.serving import (
    FIXTURES,
    Served,
    array_paths,
    assert_same_values,
    expected,
    fsspec_client,
    obstore_client,
    read,
)
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore
from moczarr_store.serve import create_app

ALL = [root.name for root in fixture_roots()]
CLIENTS = {"obstore": obstore_client, "fsspec": fsspec_client}


def _arrays_meta(fixture: str, chunking: str) -> dict:
    store = MocHiveStore(FIXTURES / fixture, chunking=chunking)
    doc = sync(store.get("zarr.json", default_buffer_prototype()))
    return json.loads(doc.to_bytes())["consolidated_metadata"]


def _cases() -> list[tuple[str, dict]]:
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fixture in ALL:
            cases.append((fixture, {"chunking": "leaf"}))
            default = _arrays_meta(fixture, "leaf")
            for mode in ("shard", "inner"):
                if _arrays_meta(fixture, mode) != default:
                    cases.append((fixture, {"chunking": mode}))
    cases.append(("windowed", {"window": "2019"}))
    # spans of 2 leaves: partial last chunks, a window axis, leaves re-encoded (mixed writers)
    # and spans the store maps from the page cache (paged)
    cases += [(fixture, {"chunking": 2})
              for fixture in ("sharded", "windowed", "mixed_writers", "paged")]
    return cases


CASES = _cases()


@pytest.fixture(scope="module", params=CASES,
                ids=lambda c: "-".join(map(str, [c[0], *c[1].values()])))
def served(request):
    fixture, options = request.param
    local = MocHiveStore(FIXTURES / fixture, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = expected(local, array_paths(local))
    with Served(create_app(FIXTURES / fixture, **options)) as server:
        yield server, want


def test_cases_cover_every_chunking_mode():
    """The sharded fixtures are served in all three modes and in spans."""
    modes = {opts.get("chunking") for name, opts in CASES if name == "sharded"}
    assert modes == {"shard", "leaf", "inner", 2}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_client_reads_what_the_store_reads(served, client):
    server, want = served
    assert want
    assert_same_values(CLIENTS[client](server.url), want)


# zarrs-python decodes into fixed-size buffers: no variable-length arrays (the ragged
# digests, the window labels) nor other kinds it lists; in strict mode it refuses them.
ZARRS_CANNOT = frozenset("VSUMmOT")


def test_zarrs_pipeline_reads_what_the_store_reads(served):
    """The zarrs codec pipeline (Rust; strict: no fall-back to zarr-python's codecs) over
    obstore's HTTPStore: every fixed-size array equals the in-process read; the others are
    refused with zarrs' UnsupportedDataTypeError, never read wrong."""
    from zarrs.pipeline import UnsupportedDataTypeError

    server, want = served
    config = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
    remote = obstore_client(server.url)
    with zarr.config.set(config):
        assert_same_values(
            remote, {p: w for p, w in want.items() if w[0].dtype.kind not in ZARRS_CANNOT}
        )
        for path in (p for p, w in want.items() if w[0].dtype.kind in ZARRS_CANNOT):
            with pytest.raises(UnsupportedDataTypeError):
                read(remote, path)
        _, array = read(remote, next(iter(want)))
        assert type(array._async_array.codec_pipeline).__name__ == "ZarrsCodecPipeline"


# zarrita.js has no codec for zarr-python's `variable_length_bytes` data type (the
# `vlen-bytes` codec): it refuses those arrays (the ragged digests) when it opens them.
ZARRITA_CANNOT = frozenset({"variable_length_bytes"})


def _zarrita_values(got: dict, values: np.ndarray) -> np.ndarray:
    little = values.dtype.newbyteorder("<")
    return np.frombuffer(base64.b64decode(got["bytes"]), little).reshape(got["shape"])


def test_zarrita_reads_what_the_store_reads(served):
    """zarrita.js (Node, FetchStore + the root's consolidated metadata) lists every array
    of the hierarchy and reads each one as the in-process store does: data type, shape and
    every value; `variable_length_bytes` arrays are refused by name, never read wrong."""
    server, want = served
    result = run_node("read.mjs", server.url)
    assert result["consolidated"]
    assert sorted(result["arrays"]) == sorted(want)
    for path, (values, meta) in want.items():
        got = result["arrays"][path]
        if meta["data_type"] in ZARRITA_CANNOT:
            assert got == {"error": f"InvalidMetadataError: Unknown or unsupported dataType: "
                                    f"{meta['data_type']}"}, path
            continue
        assert "error" not in got, (path, got)
        assert got["data_type"] == meta["data_type"] and got["shape"] == list(values.shape), path
        if "strings" in got:
            assert got["strings"] == values.ravel().tolist(), path
        else:
            np.testing.assert_array_equal(_zarrita_values(got, values), values, err_msg=path)


def _gdal():
    """rasterio with GDAL >= 3.12 (its wheels bundle GDAL 3.12 from rasterio 1.5, which
    needs Python >= 3.12), or skip."""
    if sys.version_info < (3, 12):
        pytest.skip("rasterio's wheels with GDAL >= 3.12 need Python >= 3.12")
    import rasterio  # in the test extra from Python 3.12: a missing one fails

    assert tuple(int(p) for p in rasterio.__gdal_version__.split(".")[:2]) >= (3, 12), (
        f"rasterio bundles GDAL {rasterio.__gdal_version__}; the test extra asks for >= 3.12")
    return rasterio


@pytest.mark.parametrize("fixture", ["windowed", "windowed_explicit"])
def test_gdal_reads_the_2d_arrays(fixture):
    """GDAL's Zarr driver (>= 3.12, through rasterio) reads every 2-D array (window x
    cells) over ``/vsicurl/`` as the in-process store does, fill values as nodata. The
    server runs in a subprocess: rasterio holds the GIL while GDAL waits for HTTP."""
    from support.processes import served as subprocess_server

    rasterio = _gdal()
    local = MocHiveStore(FIXTURES / fixture)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {p: v for p, v in expected(local, array_paths(local)).items() if v[0].ndim == 2}
    assert want
    with subprocess_server(FIXTURES / fixture) as (url, _), rasterio.Env(
        GDAL_DISABLE_READDIR_ON_OPEN="EMPTY_DIR", GDAL_HTTP_MAX_RETRY="0"
    ):
        for path, (values, meta) in want.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NotGeoreferencedWarning
                with rasterio.open(f'ZARR:"/vsicurl/{url}/":/{path}') as ds:
                    got = ds.read(1)
                    nodata = ds.nodata
            assert got.dtype == values.dtype and got.shape == values.shape, path
            np.testing.assert_array_equal(got, values, err_msg=path)
            fill = np.array(meta["fill_value"], dtype=values.dtype)
            assert np.array_equal(np.array(nodata, values.dtype), fill, equal_nan=True), path
