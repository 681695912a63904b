"""Folds for a product whose manifest declares none, from the writer's ``aggregation.yaml``:
exactly zagg's own declaration (asked of zagg), and only from the document the manifest's
``semantic_hash`` names; any other document gives no computed orders and one warning."""

from __future__ import annotations

import hashlib
import json
import warnings

import pytest
import yaml
import zarr
from support.writer import zagg_declarations

from moczarr_store import HiveWarning, MocHiveStore
from moczarr_store.hive.aggregation import writer_folds

VARIABLES = {
    "n": {"function": "len", "source": "h", "dtype": "int64", "fill_value": 0},
    "total": {"function": "np.nansum", "source": "h"},
    "lo": {"function": "numpy.nanmin", "source": "h", "dtype": "float64"},
    "hi": {"function": "max", "source": "h", "dtype": "float32", "fill_value": -9999.0},
    "k": {"function": "count", "source": "h", "dtype": "uint32", "fill_value": 0},
    "twice": {"function": "np.numpy.min", "source": "h"},
    "mean": {"function": "average", "source": "h"},
    "median": {"function": "np.median", "source": "h"},
    "spread": {"expression": "hi - lo", "function": "max"},
    "vec": {"function": "max", "source": "h", "kind": "vector", "trailing_shape": 3},
    "per_chunk": {"function": "max", "source": "h", "resolution": "chunk"},
    "stamped": {"function": "max", "source": "h", "temporal": "per-cell"},
    "digest": {"function": "zagg.stats.tdigest.build_tdigest", "source": "h",
               "kind": "ragged", "inner_shape": 2},
}


def test_the_folds_are_those_zagg_declares(tmp_path):
    """Every exact field zagg would declare, with its method, dtype and fill, and no other;
    the all-time fold where the config declares windows."""
    for windowing in (None, {"schedule": "yearly", "time_field": "t"}):
        core = {"aggregation": {"variables": VARIABLES},
                "output": {"aoi_mask": False} | ({"windowing": windowing} if windowing else {})}
        config = tmp_path / f"{windowing is None}.yaml"
        config.write_text(yaml.safe_dump(core))
        zagg = zagg_declarations(config)[config]
        folds, all_time = writer_folds(core, str(config))
        want = {n: d for n, d in zagg["fields"].items() if d["class"] == "exact"}
        assert {"n", "total", "lo", "hi", "k"} == set(want)
        assert {n: f.declaration() for n, f in folds.items()} == want
        assert all_time == zagg["all_time"] == (windowing is not None)


def _open(root) -> tuple[zarr.Group, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        group = zarr.open_group(MocHiveStore(root), mode="r")
    said = [str(w.message) for w in caught if issubclass(w.category, HiveWarning)]
    return group, said


def _rehash(root) -> None:
    """The manifest's ``semantic_hash`` made that of the (edited) ``aggregation.yaml``."""
    core = yaml.safe_load((root / "aggregation.yaml").read_text())
    manifest = json.loads((root / "morton_hive.json").read_text())
    manifest["semantic_hash"] = hashlib.sha256(json.dumps(
        core, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()).hexdigest()
    (root / "morton_hive.json").write_text(json.dumps(manifest))


def test_a_changed_config_that_still_hashes_is_followed(hive_copy):
    """The derivation reads the document (not a fixed list): ``h_max`` made a mean in a
    config the manifest's hash names is absent at computed orders."""
    root = hive_copy("sharded")
    text = (root / "aggregation.yaml").read_text()
    (root / "aggregation.yaml").write_text(text.replace(
        "function: max", "function: average"))
    _rehash(root)
    group, said = _open(root)
    assert not said
    assert sorted(group["atl06/o5"].array_keys()) == [
        "cell_ids", "count", "h_min", "healpix", "healpix_index", "morton"]


ALIASES = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
SELF = "a: &a [1, *a]\n"  # a list that holds itself


@pytest.mark.parametrize(("content", "why"), [
    (b"aggregation: {variables: " + b"x" * (65 << 10) + b"}\n", "byte limit"),
    (ALIASES.encode(), "aliases are refused"),
    (SELF.encode(), "aliases are refused"),
    (b"aggregation: [unclosed\n", "not a document zagg writes"),
    (b"!!python/object/apply:os.system [echo hi]\n", "not a document zagg writes"),
    (b"[" * 60_000, "not a document zagg writes"),
    (b"- a list\n", "not a mapping"),
    (b"a: \xc3\x28 not utf-8\n", "not a document zagg writes"),
    (None, "does not hash to morton_hive.json's semantic_hash"),
    ("unhashed", "records no semantic_hash"),
])
def test_a_document_not_the_products_own_gives_no_computed_orders(hive_copy, content, why):
    """Oversized, unsafe or malformed YAML, an edited config (``h_max`` folded by ``min``:
    a fold the product was not written with), or a manifest without a hash to check it
    against: one warning naming the document and why; the source order reads as ever."""
    root = hive_copy("sharded")
    config = root / "aggregation.yaml"
    if content is None:
        config.write_text(config.read_text().replace("function: max", "function: min"))
    elif content == "unhashed":
        manifest = json.loads((root / "morton_hive.json").read_text())
        del manifest["semantic_hash"]
        (root / "morton_hive.json").write_text(json.dumps(manifest))
    else:
        config.write_bytes(content)
    group, said = _open(root)
    assert len(said) == 1 and said[0].startswith("aggregation.yaml: ") and why in said[0], said
    assert list(group["atl06"].group_keys()) == ["o7"]
    assert group["atl06/o7/count"][:].sum() > 0


def test_a_document_that_cannot_be_read_gives_no_computed_orders(hive_copy, monkeypatch):
    """A GET the server refuses (a bucket that answers 403 for a missing key): the product
    opens with its stored order, and one warning says why it has no computed orders."""
    from moczarr_store.hive import aggregation

    async def denied(backend, key, max_bytes):
        raise PermissionError(f"403 on {key}")

    monkeypatch.setattr(aggregation, "read_document", denied)
    group, said = _open(hive_copy("sharded"))
    assert said == ["aggregation.yaml: cannot be read (PermissionError); the product has no "
                    "computed orders"]
    assert list(group["atl06"].group_keys()) == ["o7"]


def test_a_new_store_of_the_product_parses_its_config_once(hive_copy, monkeypatch):
    """The folds derived from a document are kept by its bytes and the hash they matched: a
    second store of the product parses no YAML; a changed document is parsed and checked
    again (and refused here: it no longer hashes to the manifest's)."""
    from moczarr_store.hive import aggregation

    root, parsed, real = hive_copy("sharded"), [], aggregation._load

    def counted(payload, manifest):
        parsed.append(payload)
        return real(payload, manifest)

    monkeypatch.setattr(aggregation, "_load", counted)
    first, _ = _open(root)
    second, said = _open(root)
    assert len(parsed) == 1 and not said
    assert sorted(second["atl06/o5"].array_keys()) == sorted(first["atl06/o5"].array_keys())
    config = root / "aggregation.yaml"
    config.write_text(config.read_text().replace("function: max", "function: min"))
    third, said = _open(root)
    assert len(parsed) == 2 and len(said) == 1 and "does not hash" in said[0]
    assert list(third["atl06"].group_keys()) == ["o7"]
