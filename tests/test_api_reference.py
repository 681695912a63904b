"""The API reference documents the API: every public name is rendered by
docs/reference/api.md, and has a docstring without raw Sphinx roles (mkdocstrings shows
them as typed). CI's ``mkdocs build --strict`` checks that each directive renders."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import moczarr_store

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "reference" / "api.md"
# the documented submodules, beside the package's own __all__
MODULES = ["moczarr_store", "moczarr_store.refs", "moczarr_store.verify", "moczarr_store.serve"]
VERIFY = ["verify_hive", "VerifyReport"]  # moczarr_store.verify's public names
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):`")
DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.M)


def public_names() -> list[str]:
    names = []
    for name in MODULES:
        module = importlib.import_module(name)
        listed = VERIFY if name.endswith(".verify") else module.__all__
        names += [f"{name}.{n}" for n in listed]
    return names


def resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:
        return importlib.import_module(dotted)


def rendered() -> list:
    """The objects api.md renders: each directive's, and a module directive's members."""
    found = []
    for target in DIRECTIVE.findall(API.read_text()):
        obj = resolve(target)
        found.append(obj)
        if inspect.ismodule(obj):
            found += [v for k, v in vars(obj).items() if not k.startswith("_")
                      and getattr(v, "__module__", None) == obj.__name__]
    return found


@pytest.mark.parametrize("name", public_names())
def test_every_public_name_is_in_the_reference(name):
    obj = resolve(name)
    if name == "moczarr_store.config":  # a donfig instance: its own section, in prose
        assert "`moczarr_store.config`" in API.read_text()
        return
    assert any(obj is r for r in rendered()), f"{name} is not in {API.relative_to(ROOT)}"


def documented(name: str) -> list[tuple[str, object]]:
    """The public object and, for a class, its public methods and properties."""
    obj = resolve(name)
    found = [(name, obj)]
    if inspect.isclass(obj):
        found += [(f"{name}.{k}", v) for k, v in vars(obj).items() if not k.startswith("_")
                  and (inspect.isfunction(v) or isinstance(v, property | classmethod))]
    return found


@pytest.mark.parametrize("name", [n for n in public_names() if not n.endswith(".config")])
def test_every_public_name_has_a_docstring_without_raw_roles(name):
    for what, obj in documented(name):
        if isinstance(obj, str | int | float | tuple):
            continue  # a constant: griffe reads the string below its assignment
        doc = inspect.getdoc(obj)
        assert doc, f"{what} has no docstring"
        assert not ROLE.search(doc), f"{what}'s docstring has a raw role: {ROLE.search(doc)}"


def test_rendered_modules_have_no_raw_roles():
    """A module directive renders the module's docstring too."""
    for obj in rendered():
        if inspect.ismodule(obj):
            assert not ROLE.search(obj.__doc__ or ""), obj.__name__


def test_the_check_can_fail():
    """A name the reference does not render, and a docstring with a role, are caught."""
    assert not any(obj is inspect for obj in rendered())
    assert ROLE.search("see :func:`export_refs`")
    assert set(moczarr_store.__all__) <= {n.rpartition(".")[2] for n in public_names()}
