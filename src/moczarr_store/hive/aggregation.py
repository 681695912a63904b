"""The folds zagg would declare for a product whose manifest declares none.

zagg writes a product's manifest with a pyramid block only when its pyramid is on; with it
off (``{"orders": []}``) the manifest declares no folds. Beside the manifest it writes
``aggregation.yaml``: the output-defining part of its config, the very document whose
SHA-256 (of its canonical JSON: sorted keys, compact, ASCII) is the manifest's
``semantic_hash``. When zagg declares a pyramid it derives each field's fold from that
config alone, and the store derives the same declaration (:func:`writer_folds`): a field
is ``exact`` when it is one value per cell (no ``kind`` but ``scalar``, no ``resolution``
but ``cell``, no ``expression``, no per-cell ``temporal`` companion) and its ``function``
(less an ``np.``/``numpy.`` prefix) is one of :data:`EXACT_FUNCTIONS`; its fold is that
function's merge law in the field's ``dtype`` (``float32`` when unset) and ``fill_value``
(``"NaN"`` when unset), NaN and the fill skipped; a windowed product declares the
all-time fold too. Every other field (means, t-digests, expressions) is one zagg would
not fold exactly, and is absent.

The document is used only when it is the product's own: it must hash to the manifest's
``semantic_hash``. Anything else (larger than :data:`MAX_YAML_BYTES`, YAML that does not
parse safely or uses aliases, a hash that differs or a manifest without one) gives no
computed orders and one warning naming the object and why.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import replace

import yaml

from .. import state
from ..cache import Lru
from ..errors import HiveWarning
from .folds import Fold, declared_folds
from .jsonio import read_document
from .manifest import Manifest

AGGREGATION_NAME = "aggregation.yaml"
MAX_YAML_BYTES = 64 << 10
"""Largest ``aggregation.yaml`` read: 64 KiB (zagg's are a few KiB)."""

EXACT_FUNCTIONS = {"len": "sum", "count": "sum", "sum": "sum", "nansum": "sum",
                   "min": "min", "nanmin": "min", "max": "max", "nanmax": "max"}
"""zagg's exact merge laws: a field's aggregating function and the fold it composes by."""


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML has it

DERIVED_KEPT = 16
"""Distinct documents whose derived folds a process keeps: a process opens a few products."""
Folds = tuple[dict[str, Fold], bool]
# the folds of each document used, by its bytes, the hash it matched and its key: a new
# store of the same product parses no YAML (about 1 to 3 ms)
DERIVED: state.Part[Lru[Folds]] = state.Part("folds derived from aggregation documents",
                                             lambda: Lru(DERIVED_KEPT))


def _tree(value: object) -> bool:
    """Whether no list or mapping occurs twice in ``value``: YAML aliases make shared
    ones, a few bytes of which expand without bound when walked (the hash walks it).
    Cost: one pass over its containers."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            if id(node) in seen:
                return False
            seen.add(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
    return True


async def read_writer_folds(backend, root: str, manifest: Manifest) -> Folds:
    """``({field: Fold}, all_time)`` from the product's ``aggregation.yaml`` (``root``: the
    product's directory, ``""`` for a bare hive); nothing when it is absent, and nothing
    with one warning when it is not the product's own or cannot be read (a denied GET).
    Cost: one GET of at most :data:`MAX_YAML_BYTES` + 1 bytes; its parse once a process
    (:data:`DERIVED`, keyed by the bytes and the hash they matched)."""
    key = f"{root}/{AGGREGATION_NAME}" if root else AGGREGATION_NAME
    try:
        payload = await read_document(backend, key, MAX_YAML_BYTES)
        if payload is None:
            return {}, False
        content, want = bytes(payload), manifest.raw.get("semantic_hash")
        known = (content, want, key) if isinstance(want, str) else None  # else _load refuses
        found = None if known is None else DERIVED().get(known)
        if found is not None:
            return dict(found[0]), found[1]  # a caller's own dict (the folds are frozen)
        core = _load(content, manifest)
    except ValueError as err:
        warnings.warn(f"{key}: {err}; the product has no computed orders", HiveWarning,
                      stacklevel=2)
        return {}, False
    except Exception as err:  # a denied or failed GET: the product opens without them
        warnings.warn(f"{key}: cannot be read ({type(err).__name__}); the product has no "
                      "computed orders", HiveWarning, stacklevel=2)
        return {}, False
    folds, all_time = DERIVED().setdefault(known, writer_folds(core, key))
    return dict(folds), all_time


def _load(payload: bytes, manifest: Manifest) -> dict:
    """The document, when it parses safely and hashes to the manifest's
    ``semantic_hash``; else ``ValueError`` saying why."""
    if len(payload) > MAX_YAML_BYTES:
        raise ValueError(f"larger than the {MAX_YAML_BYTES:,}-byte limit")
    try:
        core = yaml.load(payload, Loader=_LOADER)  # noqa: S506 (a safe loader)
    except (yaml.YAMLError, RecursionError, ValueError) as err:
        raise ValueError(f"not a document zagg writes ({str(err)[:200]})") from None
    if not isinstance(core, dict):
        raise ValueError("not a mapping of zagg's config")
    if not _tree(core):
        raise ValueError("YAML aliases are refused")
    try:
        canonical = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (RecursionError, TypeError, ValueError) as err:
        raise ValueError(f"not a document zagg writes ({str(err)[:200]})") from None
    want = manifest.raw.get("semantic_hash")
    if not isinstance(want, str):
        raise ValueError(f"{manifest.where} records no semantic_hash to check it against")
    if hashlib.sha256(canonical.encode()).hexdigest() != want:
        raise ValueError(f"it does not hash to {manifest.where}'s semantic_hash (not the "
                         "config this product was written with)")
    return core


def writer_folds(core: dict, where: str) -> tuple[dict[str, Fold], bool]:
    """``({field: Fold}, all_time)``: the declaration zagg derives from its config ``core``
    when it writes a pyramid, its exact fields only (checked as a manifest's are). No
    I/O."""
    aggregation = core.get("aggregation")
    variables = aggregation.get("variables") if isinstance(aggregation, dict) else None
    fields = {}
    for name, meta in (variables if isinstance(variables, dict) else {}).items():
        method = _exact_method(meta)
        if isinstance(name, str) and method is not None:
            assert isinstance(meta, dict)
            fill = meta.get("fill_value", "NaN")
            fields[name] = {"class": "exact", "method": method, "nan_policy": "skip",
                            "dtype": meta.get("dtype", "float32"),
                            "fill_value": "NaN" if fill != fill else fill}
    output = core.get("output")
    windowed = isinstance(output, dict) and isinstance(output.get("windowing"), dict)
    block = {"pyramid": {"overview": {"fields": fields, "all_time": windowed}}}
    declared = declared_folds(block, where)
    assert declared is not None  # a fields mapping is declared
    folds, all_time = declared
    return {n: replace(f, declared_in=AGGREGATION_NAME) for n, f in folds.items()}, all_time


def _exact_method(meta: object) -> str | None:
    """The fold law of a field zagg classes ``exact``, else ``None``."""
    if not isinstance(meta, dict) or meta.get("expression") is not None:
        return None
    if (meta.get("kind", "scalar") != "scalar" or meta.get("resolution", "cell") != "cell"
            or meta.get("temporal") == "per-cell"):
        return None
    function = meta.get("function")
    if not isinstance(function, str):
        return None
    prefix = next((p for p in ("np.", "numpy.") if function.startswith(p)), "")
    return EXACT_FUNCTIONS.get(function.removeprefix(prefix))
