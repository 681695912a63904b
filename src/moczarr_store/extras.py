"""Modules of an optional extra, imported when a feature first needs them."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(extra: str, *names: str) -> list[ModuleType]:
    """The modules ``names``, imported; a missing one raises ``ImportError`` saying which
    extra installs it (the CLI exits with its status for a missing dependency)."""
    try:
        return [importlib.import_module(name) for name in names]
    except ImportError as err:
        raise ImportError(f"this needs the [{extra}] extra ({err}): "
                          f"pip install 'moczarr-store[{extra}]'") from err
