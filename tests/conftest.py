"""Shared test helpers: the committed zagg-written fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_roots() -> list[Path]:
    """Every committed hive root (bare or multi-product)."""
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_"))


@pytest.fixture
def hive_copy(tmp_path):
    """A writable copy of a committed fixture, to damage in a test."""

    def copy(name: str) -> Path:
        return Path(shutil.copytree(FIXTURES / name, tmp_path / name))

    return copy
