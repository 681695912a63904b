"""Release hygiene: one version, shown by the CLI; the README's set-up is what CI runs;
the license and changelog that a release ships."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import moczarr_store

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
