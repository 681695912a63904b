"""The store's options are declared once (``moczarr_store.options.OPTIONS``): the
constructor, pickling, every subcommand's flags, ``serve``'s worker environment and the
documentation's table all take every option from there."""

from __future__ import annotations

import argparse
import inspect
import pickle

import pytest
from docs.gen.options import markdown
from support.hives import FIXTURES

from moczarr_store import MocHiveStore, OptionError
from moczarr_store.cli import build_parser, store_options
from moczarr_store.hive.ids import decimal_to_word
from moczarr_store.options import OPTIONS, VIEW_OPTIONS, OpenOptions, store_keywords
from moczarr_store.serve.env import app_from_env, options_from_env, to_env

SOURCE = FIXTURES / "windowed"
WORD = decimal_to_word("4441")
GIVEN = {  # a value other than the default for every option
    "verify": "open", "chunking": 4, "window": "2019", "aoi": ("444112", WORD),
    "geometry": "sphere", "computed_orders": "all", "centres": True, "window_labels": "index",
    "max_concurrency": 3,
    "read_only": True, "follow_links": True,
    "storage_options": {"automatic_cleanup": True},
}
FLAGS = {  # the same values as command-line arguments
    "verify": ["--verify", "open"], "chunking": ["--chunking", "4"],
    "window": ["--window", "2019"], "aoi": ["--aoi", "444112", "--aoi", hex(WORD)],
    "geometry": ["--geometry", "sphere"], "computed_orders": ["--computed-orders", "all"],
    "centres": ["--centres"], "window_labels": ["--window-labels", "index"],
    "max_concurrency": ["--max-concurrency", "3"],
    "follow_links": ["--follow-links"], "storage_options": ["-o", "automatic_cleanup=true"],
}


def _taken(store: MocHiveStore) -> dict:
    """Every option as the store holds it."""
    return {**{o.name: getattr(store.options, o.name) for o in VIEW_OPTIONS},
            "max_concurrency": store.backend.max_concurrency, "read_only": store.read_only,
            "follow_links": store.backend.follow_links,
            "storage_options": store.backend.options}


def test_the_examples_cover_every_option():
    assert set(GIVEN) == set(store_keywords())
    assert set(FLAGS) == {o.name for o in OPTIONS if o.flag}


def test_the_constructor_signature_is_the_declaration():
    params = list(inspect.signature(MocHiveStore.__init__).parameters.values())[2:-1]
    assert [(p.name, p.default) for p in params] == [(o.name, o.default) for o in OPTIONS]
    fields = OpenOptions.__dataclass_fields__
    assert [(n, f.default) for n, f in fields.items() if f.repr] == [
        (o.name, o.default) for o in VIEW_OPTIONS]
    for o in OPTIONS:
        assert f"\n{o.name}\n    {o.help[:30]}" in MocHiveStore.__doc__


def test_every_option_reaches_the_store_and_survives_pickling():
    store = MocHiveStore(SOURCE, **GIVEN)
    assert _taken(store) == GIVEN
    for o in VIEW_OPTIONS:  # each view option is a property of the store
        assert getattr(store, o.name) == GIVEN[o.name]
    copy = pickle.loads(pickle.dumps(store))
    assert _taken(copy) == GIVEN and copy == store


@pytest.mark.parametrize("command", ["inspect", "verify", "serve", "refs"])
def test_every_subcommand_takes_every_option(command, tmp_path):
    own = {"refs": ["--format", "mdim-refs", str(tmp_path / "out")]}.get(command, [])
    skip = {"refs": {"chunking"}}.get(command, set())  # refs: the export's own --chunking
    argv = [command, str(SOURCE), *own,
            *(arg for name, args in FLAGS.items() if name not in skip for arg in args)]
    options = store_options(build_parser().parse_args(argv))
    assert set(options) == {o.name for o in OPTIONS if o.flag} - skip
    default = {o.name: o.default for o in OPTIONS if o.name in skip}  # what refs leaves as is
    want = {**GIVEN, "read_only": False, **default}
    assert _taken(MocHiveStore(SOURCE, **options)) == want


def test_every_cli_argument_has_help():
    """The CLI reference is generated from the parser."""
    def walk(parser: argparse.ArgumentParser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)
            else:
                yield parser.prog, action

    for prog, action in walk(build_parser()):
        assert action.help, f"{prog} {action.option_strings or action.dest} has no help"


def test_every_option_but_read_only_reaches_serve_workers():
    given = {k: v for k, v in GIVEN.items() if k != "read_only"}
    env = to_env(str(SOURCE), **given)
    assert _taken(MocHiveStore(SOURCE, **options_from_env(env))) == {
        **GIVEN, "read_only": False}
    with pytest.raises(OptionError, match="'read_only' cannot be passed to worker"):
        to_env(str(SOURCE), read_only=True)


def test_serve_workers_carry_follow_links_and_an_aoi():
    """Before, ``serve --workers N`` could pass neither."""
    app = app_from_env(to_env(str(FIXTURES / "bare_versioned"), follow_links=True,
                              aoi=["444112"]))
    store = app.state.generations.current().store
    assert store.backend.follow_links is True and store.aoi == ("444112",)


@pytest.mark.parametrize("name,text,want", [
    ("MOCZARR_STORE_AOI", " , ", "expected decimal ids"),
    ("MOCZARR_STORE_FOLLOW_LINKS", "maybe", "expected true or false"),
    ("MOCZARR_STORE_CHUNKING", "leafs", "expected one of auto, shard, leaf"),
    ("MOCZARR_STORE_STORAGE_OPTIONS", "{", "expected a JSON object"),
])
def test_a_bad_variable_is_an_error_naming_it(name, text, want):
    with pytest.raises(OptionError, match=f"{name}='{text}': {want}"):
        options_from_env({name: text})


def test_storage_options_as_keywords_still_work_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"\(region\) are deprecated"):
        old = MocHiveStore("s3://bucket/hive", region="eu-west-1")
    assert old == MocHiveStore("s3://bucket/hive", storage_options={"region": "eu-west-1"})


def test_the_docs_table_lists_every_option():
    rows = {line.split("|")[1].strip(): line for line in markdown().splitlines()[2:]}
    assert list(rows) == [f"`{o.name}`" for o in OPTIONS]
    for o in OPTIONS:
        row = rows[f"`{o.name}`"]
        assert o.help in row and f"`{o.default!r}`" in row
        assert (f"`{o.flag}`" if o.flag else "none") in row
        assert (f"`{o.env_name}`" if o.env_name else "none") in row
