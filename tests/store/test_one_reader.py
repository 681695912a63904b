"""The one-reader rule: a hive's JSON is decoded by ``hive/jsonio.py`` alone (bounded,
strict, naming the object), and a leaf array's ``zarr.json`` becomes metadata through
``hive/arraymeta.py`` alone. Kept by a scan of the package, not by discipline: any other
module that calls a JSON decoder fails this test unless it is allowed below, with why."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "moczarr_store"

DECODERS = {"loads", "load", "JSONDecoder", "raw_decode", "Decoder"}
"""What decodes JSON: ``json``'s functions and its decoder class (and the same names of
``simplejson``, ``orjson``, ``ujson``, and msgspec's decoder class)."""
JSON_MODULES = {"json", "simplejson", "orjson", "ujson", "msgspec"}

ALLOWED = {
    "hive/jsonio.py": "the reader itself",
    "io/storage.py": "storage options a user gives as JSON text (never hive bytes)",
    "refs/kerchunk.py": "the array documents VirtualiZarr writes for an export (never hive "
                        "bytes)",
    "serve/tiles.py": "the tile app's own TileJSON and tileset replies, whose zoom ranges it "
                      "rewrites (never hive bytes)",
}


def decoder_calls(path: Path) -> list[int]:
    """Lines of ``path`` that call a JSON decoder (``json.loads(...)``, ``json.load(...)``,
    ``json.JSONDecoder(...)``, or such a name imported from a JSON module)."""
    tree = ast.parse(path.read_text())
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[0] in JSON_MODULES
        for alias in node.names if alias.name in DECODERS
    }
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _decodes(node.func, imported)]


def _decodes(func: ast.expr, imported: set[str]) -> bool:
    if isinstance(func, ast.Attribute):
        return (func.attr in DECODERS and isinstance(func.value, ast.Name)
                and func.value.id in JSON_MODULES)
    return isinstance(func, ast.Name) and func.id in imported


def test_the_scan_finds_decoder_calls(tmp_path):
    """The test's own check: every spelling of a decode is found, none of an encode."""
    source = tmp_path / "m.py"
    source.write_text("import json\nfrom json import loads as parse\n"
                      "json.loads(b'1')\nparse('1')\njson.load(f)\njson.JSONDecoder()\n"
                      "json.dumps(1)\nfrom msgspec.json import Decoder\nDecoder()\n")
    assert decoder_calls(source) == [3, 4, 5, 6, 9]
    assert decoder_calls(PACKAGE / "hive" / "jsonio.py")  # the reader is seen decoding


def test_no_module_but_the_reader_decodes_json():
    offenders = {
        rel: lines for path in sorted(PACKAGE.rglob("*.py"))
        if (rel := path.relative_to(PACKAGE).as_posix()) not in ALLOWED
        and (lines := decoder_calls(path))
    }
    assert not offenders, (
        f"JSON decoded outside hive/jsonio.py: {offenders}; read hive JSON with "
        "jsonio.load_json / read_document (array metadata with arraymeta.parse_array), or "
        "allow the module here with the reason it never decodes hive bytes")


def test_every_allowed_module_still_decodes():
    """An allowance that is no longer needed goes: the list stays what is true."""
    assert all(decoder_calls(PACKAGE / rel) for rel in ALLOWED)
