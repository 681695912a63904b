"""Release hygiene: one version, shown by the CLI; the README's set-up is what CI runs;
the license and changelog that a release ships."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import moczarr_store
from moczarr_store import sample

ROOT = Path(__file__).resolve().parents[1]


def test_one_version_shown_by_the_cli():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/moczarr_store/__init__.py"
    shown = subprocess.run([sys.executable, "-m", "moczarr_store.cli", "--version"],
                           capture_output=True, text=True, check=True).stdout
    assert shown == f"moczarr-store {moczarr_store.__version__}\n"
    assert importlib.metadata.version("moczarr-store") == moczarr_store.__version__


def test_the_readme_set_up_is_what_ci_runs():
    """.ci/run's setup() repeats the README's set-up command for its VENV and PYTHON."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    documented = re.search(r"^python3 -m venv \.venv && .*$", readme, re.M)
    run = re.search(r'^\s*"\$python" -m venv "\$venv" && .*$', ci, re.M)
    assert documented and run
    as_ci = re.sub(r'"\$venv(/[^"]*)?"', r".venv\1", run[0].strip().rstrip("\\ "))
    as_ci = as_ci.replace('"$python"', "python3").replace(' -q "$@"', "")
    assert as_ci.split(" && ")[:4] == documented[0].split(" && ")


def test_license_and_changelog():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    assert f"## [{moczarr_store.__version__}]" in changelog


def test_the_sample_hive_is_the_fixture_the_wheel_packages():
    """In a clone the sample is ``fixtures/windowed_explicit``, which the wheel carries as
    package data (.ci/smoke.py reads it from the installed wheel)."""
    hatch = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]
    packaged = hatch["build"]["targets"]["wheel"]["force-include"]
    assert packaged == {"fixtures/windowed_explicit": f"moczarr_store/{sample.PACKAGED}"}
    assert Path(moczarr_store.sample_hive()) == ROOT / "fixtures" / "windowed_explicit"


def test_the_sample_hive_reads_as_moczarr_reads_it():
    import moczarr
    import xarray as xr

    hive = moczarr_store.sample_hive()
    ds = xr.open_zarr(moczarr_store.MocHiveStore(hive), group="atl06/o4")
    for i, window in enumerate(ds["window"].values):
        ref = moczarr.open_hive(hive, window=str(window))
        assert int(ds["count"][i].sum()) == int(ref["count"].sum()) > 0


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moczarr_store.cli", *args],
                          capture_output=True, text=True, timeout=120, cwd="/")


def test_the_cli_opens_the_sample_hive():
    done = cli("inspect", "--sample")
    assert done.returncode == 0, done.stderr
    assert f"hive {Path(moczarr_store.sample_hive()).as_uri()}" in done.stdout
    assert "/atl06/o4" in done.stdout


@pytest.mark.parametrize("args", [["inspect"], ["verify", "--sample", "fixtures/windowed"]])
def test_the_cli_wants_a_source_or_the_sample(args):
    done = cli(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {args[0]} reads one hive: give its PATH_OR_URL, "
                                  "or --sample"), done.stderr
