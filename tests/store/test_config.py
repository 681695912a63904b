"""``moczarr_store.config``: the package's tunables, one donfig configuration, set in code
or in the environment; a session takes its caches' bounds when it is created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.hives import FIXTURES

from moczarr_store import MocHiveStore, config
from moczarr_store.tunables import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


def _bounds(store: MocHiveStore) -> dict[str, int]:
    session = store.session
    return {"stamps": session.leaves.max_entries, "leaf_metas": session.leaf_metas.max_entries,
            "shard_indexes": session.indexes.max_entries,
            "version_groups": session.groups.max_entries,
            "absences": session.absences.max_entries,
            "span_parts": session.span_plans.limit}


def test_a_session_takes_its_cache_bounds_when_created():
    assert _bounds(MocHiveStore(FIXTURES / "sharded")) == DEFAULTS["cache"]
    small = dict.fromkeys(DEFAULTS["cache"], 3)
    with config.set({f"cache.{key}": value for key, value in small.items()}):
        tuned = MocHiveStore(FIXTURES / "sharded")
    assert _bounds(tuned) == small  # kept after the setting is undone
    assert _bounds(MocHiveStore(FIXTURES / "sharded")) == DEFAULTS["cache"]


def test_the_environment_sets_keys_at_import():
    code = ("import moczarr_store as m; "
            "print(m.config.get('mapped.bytes'), m.config.get('cache.stamps'))")
    env = {**os.environ, "MOCZARR_STORE_MAPPED__BYTES": "0", "MOCZARR_STORE_CACHE__STAMPS": "7",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["0", "7"]
