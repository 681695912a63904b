"""zagg 0.61.0, the writer, in its own interpreter (``$MOCZARR_ZAGG_PYTHON``; ``.ci/run``
makes one): for the tests that have it write a hive, or ask it what it would declare."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest

_DECLARE = """
import json, logging, sys, types, yaml
logging.disable(logging.WARNING)
from zagg.config import get_pyramid
from zagg.pyramid import declared_fields
out = {}
for path in sys.argv[1:]:
    core = yaml.safe_load(open(path))
    config = types.SimpleNamespace(aggregation=core["aggregation"],
                                   output={**(core.get("output") or {}), "pyramid": {}})
    out[path] = {"fields": declared_fields(config)[0],
                 "all_time": get_pyramid(config).get("all_time", False)}
print(json.dumps(out))
"""


@functools.cache
def zagg_python() -> str:
    """The writer's interpreter; the test is skipped without one (failed where CI asks for
    it: ``MOCZARR_STORE_REQUIRE_WRITER=1``)."""
    python = os.environ.get("MOCZARR_ZAGG_PYTHON", "")
    found = bool(python) and subprocess.run(
        [python, "-c", "import zagg, mortie"], capture_output=True, check=False
    ).returncode == 0
    if not found:
        why = ("no interpreter with zagg 0.61.0: set MOCZARR_ZAGG_PYTHON "
               "(.ci/run makes .venv-zagg)")
        if os.environ.get("MOCZARR_STORE_REQUIRE_WRITER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return python


@functools.cache
def zagg_declarations(*configs: Path) -> dict[Path, dict]:
    """``{config: {"fields", "all_time"}}``: the pyramid declaration zagg makes from each
    aggregation config (a product's ``aggregation.yaml``) when its pyramid is on
    (``zagg.pyramid.declared_fields``, ``zagg.config.get_pyramid``). Kept: ask for
    several at once."""
    done = subprocess.run([zagg_python(), "-c", _DECLARE, *map(str, configs)],
                          capture_output=True, text=True, check=True, timeout=120)
    found = json.loads(done.stdout)
    return {path: found[str(path)] for path in configs}
