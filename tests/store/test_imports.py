"""The package's import graph has no cycle: every import a module makes at run time (at
its top or inside a function; ``if TYPE_CHECKING:`` blocks are for the type checker only)
points one way. The I/O layer (``moczarr_store.io``) imports nothing that reads hives."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "moczarr_store"


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _runtime_nodes(tree: ast.AST):
    """Every node outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not _type_checking(c))


def imports(name: str) -> set[str]:
    """The package modules ``name`` imports at run time."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] \
                if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            found.update(subs if len(subs) == len(node.names) else [target, *subs])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def _cycle_from(start: str) -> list[str] | None:
    """A path of imports from ``start`` back to itself, if there is one."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in GRAPH[node]:
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_graph_sees_the_imports():
    """The test's own check: the parser finds what the modules import."""
    assert "moczarr_store.io.backend" in GRAPH["moczarr_store.store"]
    assert "moczarr_store.io.reader" in GRAPH["moczarr_store.io.local"]
    assert "moczarr_store.session" not in GRAPH["moczarr_store.read.plan"]  # TYPE_CHECKING


def test_no_module_imports_itself_back():
    cycles = [c for name in sorted(GRAPH) if (c := _cycle_from(name))]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_the_io_layer_reads_no_hive():
    allowed = {"moczarr_store.errors", "moczarr_store.options", "moczarr_store.diagnostics",
               "moczarr_store.hints", "moczarr_store.tunables", "moczarr_store.state",
               "moczarr_store.hive.aoi",
               "moczarr_store.hive.paths", "moczarr_store.hive.ids"}
    for name, imported in GRAPH.items():
        if name.startswith("moczarr_store.io"):
            outside = {m for m in imported if not m.startswith("moczarr_store.io")}
            assert outside <= allowed, (name, outside - allowed)


def test_the_process_state_imports_nothing_of_the_package():
    """Every module may declare its part of the process state: ``state`` is a leaf."""
    assert GRAPH["moczarr_store.state"] == set()


def test_the_documented_moczarr_store_mapped_is_the_io_module():
    """The chunking guide names ``moczarr_store.mapped.release()``; the module lives in
    ``io/``, and the old name, imported either way, is that same module (one state)."""
    import importlib

    import moczarr_store
    from moczarr_store.io import mapped

    assert moczarr_store.mapped is mapped
    assert importlib.import_module("moczarr_store.mapped") is mapped
    assert callable(moczarr_store.mapped.release)
