"""Tests of the conformance runner: it passes on good hives and reports every difference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr

from conformance import check
from moczarr_store import MocHiveStore

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "fixtures"
PEER = REPO.parent / "shared" / "peer-fixtures"  # the external corpus, beside the clone
PEER_HIVES = ["moczarr/serc_hive", "moczarr/serc_hive_pg3", "moczarr/multiproduct_hive",
              "moczarr/overview_hive", "moczarr/strata_hive", "moczarr/spec/minimal",
              "moczarr/spec/kitchen_sink", "moczarr/spec/temporal", "zagg-spec/column",
              "zagg-spec/flux", "zagg-spec/raster_toc"]
SERC = str(OWN / "bare_versioned")


# _d24: moczarr 0.10 reads no product whose leaves sit at several cell orders (it looks for
# every leaf's arrays at the manifest's order); tests/store/test_d24_compose.py checks it
# against moczarr leaf by leaf
SWEPT = sorted(p.name for p in OWN.iterdir() if p.is_dir() and p.name != "_d24")


@pytest.mark.parametrize("name", SWEPT)
@pytest.mark.parametrize(
    "options",
    [["--verify", "lazy"], ["--verify", "open"], ["--chunking", "shard"], ["--chunking", "inner"]],
)
def test_runner_passes_on_every_fixture(name: str, options: list[str], capsys) -> None:
    assert check.main([str(OWN / name), *options]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("PASS ") for line in lines)
    assert all(line.startswith(("PASS ", "SKIP ")) for line in lines), lines


@pytest.mark.skipif(not PEER.is_dir(), reason="the peer corpus (shared/peer-fixtures) is not "
                    "beside this clone")
@pytest.mark.parametrize("name", PEER_HIVES)
def test_runner_passes_on_the_peer_corpus(name: str, capsys) -> None:
    """Every order stored, and every stored overview order computed (the peer hives with
    overviews: ``overview_hive``, and the leaf columns of ``spec/temporal``)."""
    assert check.main([str(PEER / name), "--computed"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("PASS ") for line in lines), lines
    if name in ("moczarr/overview_hive", "moczarr/spec/temporal"):
        assert any(" (computed) " in line for line in lines), lines


@pytest.mark.parametrize("name", ["pyramid1", "pyramid2", "windowed_explicit"])
def test_runner_computes_every_stored_overview_order(name: str, capsys) -> None:
    assert check.main([str(OWN / name), "--computed"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("PASS ") for line in lines), lines
    assert sum(" (computed) " in line for line in lines) >= 2


def test_runner_fails_on_a_computed_order_that_differs(monkeypatch, capsys) -> None:
    """A fold that is not the writer's (``max`` folded as ``min``) fails the computed
    orders, and only them."""
    from moczarr_store.hive import folds

    monkeypatch.setitem(folds.METHODS, "max", np.minimum)
    path = str(OWN / "pyramid1")
    assert check.main([path, "--computed"]) == 1
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    assert failed and all(" (computed): h_max: " in line for line in failed), failed


def test_runner_reports_every_product(capsys) -> None:
    """A line per served product/order, and a SKIP line per product the store skips."""
    path = str(OWN / "multiproduct")
    info = zarr.open_group(MocHiveStore(path), mode="r").attrs["morton_hive_store"]
    check.main([path])
    out = capsys.readouterr().out
    for name in info["products"]:
        assert f" {path} {name}/o" in out, name
    for name, reason in (info.get("skipped") or {}).items():
        assert f"SKIP {path} {name}: {reason}" in out


def test_runner_prints_skips(monkeypatch, capsys) -> None:
    """A product the store skips is a visible SKIP line, not a failure."""

    class Root:
        attrs = {"morton_hive_store": {"products": [], "bare": False, "skipped": {"p": "why"}}}

    monkeypatch.setattr(check.zarr, "open_group", lambda *args, **kwargs: Root())
    assert check.main([SERC]) == 0
    assert capsys.readouterr().out.strip() == f"SKIP {SERC} p: why"


def test_runner_cli(tmp_path: Path) -> None:
    """``python -m conformance.check`` from the repo root: 0 on a good hive, 1 on a bad path."""
    run = [sys.executable, "-m", "conformance.check"]
    good = subprocess.run([*run, SERC], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.startswith(f"PASS {SERC} atl06/o7 cells=64 vars=9")
    missing = str(tmp_path / "no_such_hive")
    bad = subprocess.run([*run, SERC, missing], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 1
    assert f"FAIL {missing}: cannot open the store" in bad.stdout
    assert "PASS " in bad.stdout  # the good hive is still checked


def test_runner_fails_on_a_difference(monkeypatch, capsys) -> None:
    """A reference that differs from the store gives a FAIL line and exit status 1."""
    real = moczarr.open_hive

    def perturbed(*args, **kwargs):
        ds = real(*args, **kwargs).load()
        ds["h_mean"][5] = 1234.5
        return ds

    monkeypatch.setattr(check.moczarr, "open_hive", perturbed)
    assert check.main([SERC]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL {SERC} atl06/o7: h_mean: 1 values differ, first at (5,)")


# -- compare() on perturbed datasets ---------------------------------------------------------


@pytest.fixture(scope="module")
def pair() -> tuple[xr.Dataset, xr.Dataset]:
    ref = moczarr.open_hive(SERC).load()
    got = xr.open_zarr(MocHiveStore(SERC), group="atl06/o7").load()
    return ref, got


def test_compare_equal(pair) -> None:
    ref, got = pair
    assert check.compare(ref, got) == []


def _changed(ds: xr.Dataset, how) -> xr.Dataset:
    out = ds.copy(deep=True)
    return how(out) or out


def _set(name, index, value):
    def how(ds):
        ds[name].values[index] = value

    return how


def _replace_coord(name, index, value):
    def how(ds):
        values = ds[name].values.copy()
        values[index] = value
        return ds.drop_vars(name).assign_coords({name: ("cells", values)})

    return how


PERTURBATIONS = {
    "value": (_set("h_mean", 7, 42.0), ["h_mean: 1 values differ, first at (7,)"]),
    "nan": (_set("h_max", 0, np.nan), ["h_max: 1 values differ, first at (0,)"]),
    "int value": (_set("count", 3, -1), ["count: 1 values differ, first at (3,)"]),
    "dropped variable": (
        lambda ds: ds.drop_vars("h_q50"),
        ["data variables: missing ['h_q50'], extra []"],
    ),
    "extra variable": (
        lambda ds: ds.assign(bonus=ds["count"]),
        ["data variables: missing [], extra ['bonus']"],
    ),
    "dtype": (
        lambda ds: ds.assign(h_sigma=ds["h_sigma"].astype("float64")),
        ["h_sigma: dtype float32 != float64"],
    ),
    "variable attrs": (
        lambda ds: ds["h_min"].attrs.update(units="m"),
        ["h_min: attrs {} != {'units': 'm'}"],
    ),
    "morton": (_replace_coord("morton", 10, 1), ["morton: 1 values differ, first at (10,)"]),
    "morton dtype": (
        lambda ds: ds.drop_vars("morton").assign_coords(
            morton=("cells", ds["morton"].values.astype("int64"))
        ),
        ["morton: dtype uint64 != int64"],
    ),
    "cell_ids": (_replace_coord("cell_ids", 0, 0), ["cell_ids: 1 values differ, first at (0,)"]),
    "cell_ids not a coordinate": (
        lambda ds: ds.reset_coords("cell_ids"),
        ["data variables: missing [], extra ['cell_ids']", "cell_ids: not a coordinate of ours"],
    ),
    "morton_hive attrs": (
        lambda ds: ds.attrs.update(morton_hive={**ds.attrs["morton_hive"], "cell_order": 9}),
        ["attrs['morton_hive']"],
    ),
    "sizes": (
        lambda ds: ds.isel(cells=slice(1, None)),
        ["sizes {'cells': 64} != {'cells': 63}", "shape (64,) != (63,)"],
    ),
}


@pytest.mark.parametrize("case", sorted(PERTURBATIONS))
def test_compare_reports(pair, case: str) -> None:
    ref, got = pair
    how, expected = PERTURBATIONS[case]
    diffs = check.compare(ref, _changed(got, how))
    assert diffs, f"{case} went unnoticed"
    for text in expected:
        assert any(text in d for d in diffs), (text, diffs)


def test_compare_nan_equal_and_objects() -> None:
    """NaN equals NaN; object (vlen bytes) arrays compare elementwise."""
    cells = {"morton": ("cells", np.arange(3, dtype="u8")),
             "cell_ids": ("cells", np.arange(3, dtype="u8"))}

    def ds(floats, blobs):
        return xr.Dataset(
            {"f": ("cells", np.array(floats, dtype="f4")),
             "b": ("cells", np.array(blobs, dtype=object))},
            coords=cells, attrs={"morton_hive": {"spec": "morton-hive/1"}},
        )

    ref = ds([1.0, np.nan, 3.0], [b"", b"ab", b"c"])
    assert check.compare(ref, ds([1.0, np.nan, 3.0], [b"", b"ab", b"c"])) == []
    assert check.compare(ref, ds([1.0, 2.0, 3.0], [b"", b"ab", b"c"])) == [
        "f: 1 values differ, first at (1,): np.float32(nan) != np.float32(2.0)"
    ]
    assert check.compare(ref, ds([1.0, np.nan, 3.0], [b"", b"ax", b"c"])) == [
        "b: 1 values differ, first at (1,): b'ab' != b'ax'"
    ]


def test_compare_window() -> None:
    """A windowed group matches each window's reference on its cells, NaN elsewhere."""
    words = np.arange(4, dtype="u8")
    ours = xr.Dataset(
        {"h": (("window", "cells"), np.array([[1.0, 2.0, np.nan, np.nan], [5, 6, 7, 8]]))},
        coords={"window": ["2019", "2020"], "morton": ("cells", words),
                "cell_ids": ("cells", words)},
        attrs={"morton_hive": {"spec": "morton-hive/2"}},
    )
    slices = dict(check.window_slices(ours))
    assert list(slices) == ["2019", "2020"]
    ref = xr.Dataset({"h": ("cells", [1.0, 2.0])},
                     coords={"morton": ("cells", words[:2]), "cell_ids": ("cells", words[:2])},
                     attrs=ours.attrs)
    assert check.compare_window(ref, slices["2019"]) == []
    assert check.compare_window(ref, slices["2020"]) == [
        "h: 2 values differ, first at (0,): np.float64(1.0) != np.float64(5.0)",
        "h: data in cells outside the window's domain",
    ]
    zeros = ours.assign(h=ours["h"].fillna(0.0))
    assert check.compare_window(ref, dict(check.window_slices(zeros))["2019"], {"h": 0.0}) == []
