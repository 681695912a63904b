"""``moczarr_store.config``: the package's tunables, one donfig configuration, set in code
or in the environment; a session takes its caches' bounds when it is created."""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import moczarr
import numpy as np
import pytest
import zarr
from docs.gen.options import settings_markdown
from support.hives import FIXTURES, assert_values

from moczarr_store import MocHiveStore, SettingError, config
from moczarr_store.cli import EXIT_USAGE
from moczarr_store.cli import main as cli_main
from moczarr_store.tunables import DEFAULTS, SETTINGS, Setting, check_settings, setting

ROOT = Path(__file__).resolve().parents[2]


def _bounds(store: MocHiveStore) -> dict[str, int]:
    session = store.session
    return {"stamps": session.leaves.max_entries, "leaf_metas": session.leaf_metas.max_entries,
            "shard_indexes": session.indexes.max_entries,
            "version_groups": session.groups.max_entries,
            "absences": session.absences.max_entries,
            "span_parts": session.span_plans.limit, "computed_bytes": session.computed.limit,
            "centre_bytes": session.centre_bytes}


SESSION_CACHES = ("stamps", "leaf_metas", "shard_indexes", "version_groups", "absences",
                  "span_parts", "computed_bytes", "centre_bytes")


def test_a_session_takes_its_cache_bounds_when_created():
    defaults = {key: DEFAULTS["cache"][key] for key in SESSION_CACHES}
    assert _bounds(MocHiveStore(FIXTURES / "sharded")) == defaults
    small = dict.fromkeys(SESSION_CACHES, 3)
    with config.set({f"cache.{key}": value for key, value in small.items()}):
        tuned = MocHiveStore(FIXTURES / "sharded")
    assert _bounds(tuned) == small  # kept after the setting is undone
    assert _bounds(MocHiveStore(FIXTURES / "sharded")) == defaults


def test_the_environment_sets_keys_at_import():
    code = ("import moczarr_store as m; "
            "print(m.config.get('mapped.bytes'), m.config.get('cache.stamps'))")
    env = {**os.environ, "MOCZARR_STORE_MAPPED__BYTES": "0", "MOCZARR_STORE_CACHE__STAMPS": "7",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["0", "7"]


# -- every setting is checked where it is read ------------------------------------------------


def _bad_values(key: str) -> list[object]:
    """A wrong type, a negative and a value past the most allowed, for ``key``."""
    return ["spam", -1, SETTINGS[key].most + 1]


def _refused_message(key: str, value: object) -> str:
    kind = "an integer" if type(SETTINGS[key].default) is int else "a number"  # seconds
    return (f"setting {key!r} is {value!r} (from {{}}): expected {kind} from "
            f"{SETTINGS[key].least:,} to {SETTINGS[key].most:,}")


BAD = [(key, value) for key in SETTINGS for value in _bad_values(key)]


@pytest.mark.parametrize(("key", "value"), BAD)
def test_a_bad_setting_is_refused_naming_key_value_and_range(key, value):
    with config.set({key: value}), pytest.raises(SettingError) as refused:
        MocHiveStore(FIXTURES / "sharded")  # every key checked when a session is created
    assert str(refused.value) == _refused_message(key, value).format(
        "moczarr_store.config.set or a config file")
    with config.set({key: value}), pytest.raises(SettingError):
        setting(key)  # and where each is read
    _reads_as_moczarr()  # nothing kept from the refusal


@pytest.mark.parametrize("value", [True, 2.0, None, "1"])
def test_only_an_integer_is_a_count(value):
    with config.set({"cache.stamps": value}), pytest.raises(SettingError, match="an integer"):
        setting("cache.stamps")


def test_the_least_and_the_most_allowed_are_taken():
    for key, declared in SETTINGS.items():
        for value in (declared.least, declared.most):
            with config.set({key: value}):
                assert setting(key) == value
    least = {key: declared.least for key, declared in SETTINGS.items()}
    assert sum(value == 0 for value in least.values()) > len(least) // 2
    with config.set(least):
        assert check_settings() == least
        _reads_as_moczarr()  # no cache at all (mapped.bytes 0: nothing mapped) reads the same


def test_a_mistyped_key_or_a_section_that_is_not_one_is_refused():
    with config.set({"cache.stamp": 5}), pytest.raises(SettingError) as refused:
        check_settings()
    assert "unknown setting 'cache.stamp' (known: cache.stamps," in str(refused.value)
    with config.set({"mapped": 5}), pytest.raises(SettingError, match="'mapped' is 5"):
        check_settings()


def test_a_bad_process_wide_setting_is_refused_where_it_is_applied():
    """``mapped.*`` is read each time a span is mapped: set after the store was made, a bad
    value is refused by the read that applies it (not a bare TypeError), and the next read
    under a good one is served as before."""
    store = MocHiveStore(FIXTURES / "paged", chunking=2)
    array = zarr.open_array(store, path="atl06/o8/h_mean", mode="r")
    want = array[:]
    array[:]  # warm: mapped from the page cache
    with config.set({"mapped.bytes": "spam"}), pytest.raises(SettingError, match="mapped.bytes"):
        array[:]
    np.testing.assert_array_equal(array[:], want)


@functools.cache
def _paged_by_moczarr() -> np.ndarray:
    return moczarr.open_hive(str(FIXTURES / "paged"))["h_mean"].values


def _reads_as_moczarr() -> None:
    """A new store reads ``paged``'s ``h_mean`` (spans of 2 leaves, mapped once warm) as
    moczarr does, twice."""
    array = zarr.open_array(MocHiveStore(FIXTURES / "paged", chunking=2),
                            path="atl06/o8/h_mean", mode="r")
    for _ in range(2):
        assert_values(array[:], _paged_by_moczarr(), "h_mean")


@pytest.fixture
def environment(monkeypatch):
    """``environment(NAME=value)``: the variables set and read as at import (the config
    collected again), undone after the test."""
    yield lambda **env: ([monkeypatch.setenv(k, v) for k, v in env.items()], config.refresh())
    monkeypatch.undo()
    config.refresh()


@pytest.mark.parametrize(("key", "value"), BAD)
def test_the_cli_refuses_a_bad_setting_of_the_environment_with_exit_2(key, value, environment,
                                                                      capsys):
    name = "MOCZARR_STORE_" + key.upper().replace(".", "__")
    environment(**{name: str(value)})
    assert cli_main(["inspect", str(FIXTURES / "sharded")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "error: " + _refused_message(key, value).format(
        f"the environment variable {name}") + "\n"


def test_a_bad_setting_in_the_environment_exits_2_and_the_next_good_run_works():
    def run(**env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "moczarr_store.cli", "inspect", str(FIXTURES / "paged")],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, **env,
                 "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])})

    for key in ("cache.stamps", "mapped.bytes"):
        name = "MOCZARR_STORE_" + key.upper().replace(".", "__")
        bad = run(**{name: "spam"})
        told = _refused_message(key, "spam").format(f"the environment variable {name}")
        assert (bad.returncode, bad.stdout, bad.stderr) == (EXIT_USAGE, "", f"error: {told}\n")
    good = run()
    assert good.returncode == 0 and "atl06/o8" in good.stdout, good.stderr


def test_the_docs_table_lists_every_setting():
    rows = [line.split("|")[1].strip() for line in settings_markdown().splitlines()[2:]]
    assert rows == [f"`{key}`" for key in SETTINGS]


def test_a_number_setting_takes_finite_numbers_only():
    seconds = Setting(60.0, "seconds", most=3600)
    assert seconds.allowed() == "a number from 0 to 3,600"
    assert [seconds.admits(v) for v in (0, 1.5, 3600)] == [True] * 3
    assert not any(seconds.admits(v) for v in (math.nan, math.inf, -0.5, 3601, True, "1"))


def test_the_reader_level_and_serve_bounds_are_taken_from_config():
    """``cache.object_paths`` (a level's paths), ``cache.directories`` (a local reader's)
    and ``serve.*`` (a serve generation's caches) bound what they keep."""
    from moczarr_store.serve.generations import Generation

    small = {"cache.object_paths": 2, "cache.directories": 1, "serve.object_sizes": 3,
             "serve.span_tags": 4}
    with config.set(small):
        store = MocHiveStore(FIXTURES / "paged", chunking="leaf")
        array = zarr.open_array(store, path="atl06/o8/h_mean", mode="r")
        assert_values(array[:], _paged_by_moczarr(), "h_mean")  # 5 leaves, 5 paths
        level = store.session.hive.products[0].levels[0]
        reader = store.session.backend._reader
        assert 0 < len(level._paths) <= 2 and 0 < len(reader._dirs) <= 1
        generation = Generation(store, 0.0)
        assert (generation.sizes.max_entries, generation.span_tags.max_entries) == (3, 4)


@pytest.fixture
def settings_file(tmp_path):
    """``settings_file(text)``: the settings read from a YAML file holding ``text``, as at
    import; the usual ones read again after the test."""
    def read(text: str) -> None:
        path = tmp_path / "settings.yaml"
        path.write_text(text)
        config.refresh(paths=[str(path)])

    yield read
    config.refresh()


def test_a_bad_value_in_a_settings_file_exits_2_naming_it(settings_file, capsys):
    settings_file("cache:\n  stamps: -5\n")
    assert cli_main(["inspect", str(FIXTURES / "sharded")]) == EXIT_USAGE
    assert capsys.readouterr().err == "error: " + _refused_message("cache.stamps", -5).format(
        "moczarr_store.config.set or a config file") + "\n"


def test_a_malformed_settings_file_is_refused_not_a_traceback(settings_file, tmp_path, capsys):
    settings_file("cache:\n  stamps: [unclosed\n")
    with pytest.raises(SettingError) as refused:
        MocHiveStore(FIXTURES / "sharded")
    path = tmp_path / "settings.yaml"
    assert str(refused.value) == (
        f"A config file at {str(path)!r} is malformed: fix or remove it (settings are read "
        "from the YAML files in ~/.config/moczarr_store/ and MOCZARR_STORE_CONFIG)")
    assert cli_main(["inspect", str(FIXTURES / "sharded")]) == EXIT_USAGE
    assert "is malformed: fix or remove it" in capsys.readouterr().err
    settings_file("cache:\n  stamps: 5\n")  # mended: read as usual
    assert MocHiveStore(FIXTURES / "sharded").session.leaves.max_entries == 5
