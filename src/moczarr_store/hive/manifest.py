"""The product manifest ``morton_hive.json``: parse and validate."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import UnsupportedSpec
from .ids import MAX_ORDER
from .paths import is_product_name

SPEC_V1 = "morton-hive/1"
SPEC_V2 = "morton-hive/2"
SUPPORTED_SPECS = (SPEC_V1, SPEC_V2)
MANIFEST_NAME = "morton_hive.json"



@dataclass(frozen=True)
class Manifest:
    spec: str
    cell_order: int
    shard_order: int
    path_grouping: int
    dataset: dict | None
    raw: dict

    @property
    def depth(self) -> int:
        """Cell-order levels below a shard: each leaf holds ``4**depth`` cells."""
        return self.cell_order - self.shard_order

    @property
    def windowed(self) -> bool:
        return self.spec == SPEC_V2

    def summary(self) -> dict:
        """The manifest summary moczarr publishes as ``attrs["morton_hive"]``."""
        return {k: self.raw[k] for k in ("spec", "cell_order", "shard_order", "dataset")}

    def bare_product_name(self) -> str:
        """A bare store's product name, as ``moczarr.open_store`` derives it."""
        name = str((self.dataset or {}).get("short_name") or "").lower()
        return name if is_product_name(name) else "product"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_manifest(payload: bytes, where: str) -> Manifest:
    """Parse manifest bytes; any defect raises ``ValueError`` naming ``where``."""
    try:
        raw = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{where}: manifest is not valid JSON ({err})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: manifest is not a JSON object")
    spec = raw.get("spec")
    if spec not in SUPPORTED_SPECS:
        if isinstance(spec, str) and spec.startswith("morton-hive/"):
            raise UnsupportedSpec(f"{where}: spec {spec!r} is not supported {SUPPORTED_SPECS}")
        raise ValueError(f"{where}: manifest spec {spec!r} is not a morton-hive spec")
    cell, shard = raw.get("cell_order"), raw.get("shard_order")
    if not (_is_int(cell) and _is_int(shard) and 0 <= shard <= cell <= MAX_ORDER):
        raise ValueError(
            f"{where}: cell_order {cell!r} / shard_order {shard!r} must be ints with "
            f"0 <= shard_order <= cell_order <= {MAX_ORDER}"
        )
    grouping = raw.get("path_grouping", 1)
    if not _is_int(grouping) or grouping < 1:
        raise ValueError(f"{where}: path_grouping {grouping!r} must be an int >= 1")
    temporal = raw.get("temporal")
    if spec == SPEC_V2 and not (isinstance(temporal, dict) and temporal.get("schedule")):
        raise ValueError(f"{where}: a {SPEC_V2} manifest needs a temporal schedule")
    if spec == SPEC_V1 and temporal is not None:
        raise ValueError(f"{where}: a {SPEC_V1} manifest must not carry 'temporal'")
    dataset = raw.get("dataset")
    return Manifest(
        spec=spec,
        cell_order=cell,
        shard_order=shard,
        path_grouping=grouping,
        dataset=dataset if isinstance(dataset, dict) else None,
        raw=raw,
    )
