"""The product manifest ``morton_hive.json``: parse and validate."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import HiveWarning, MalformedMetadataError, UnsupportedSpec
from ..io.ranges import BytesLike
from .ids import MAX_ORDER
from .jsonio import is_int, load_json
from .paths import is_product_name, short, validate_window

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
    dataset: dict[str, Any] | None
    raw: dict[str, Any]
    where: str = MANIFEST_NAME
    # D24 regional resolution: ``(cell order, coverage document)`` per source order, the
    # finest (``cell_order``) first; empty for a product whose leaves share one order
    source_orders: tuple[tuple[int, str], ...] = ()

    @property
    def depth(self) -> int:
        """Cell-order levels below a node: each leaf holds ``4**depth`` cells."""
        return self.cell_order - self.shard_order

    @property
    def windowed(self) -> bool:
        return self.spec == SPEC_V2

    def summary(self) -> dict[str, Any]:
        """The manifest summary moczarr publishes as ``attrs["morton_hive"]``."""
        return {k: self.raw.get(k) for k in ("spec", "cell_order", "shard_order", "dataset")}

    def bare_product_name(self) -> str:
        """A bare store's product name, as ``moczarr.open_store`` derives it: the dataset's
        short name lowercased, else ``"product"`` (with a warning when a short name is
        given but makes no product name)."""
        given = (self.dataset or {}).get("short_name")
        name = str(given or "").lower()
        if is_product_name(name):
            return name
        if given is not None:
            warnings.warn(f"{self.where}: field 'dataset.short_name' {short(given)} makes no "
                          "product name; the product is presented as 'product'", HiveWarning,
                          stacklevel=2)
        return "product"


def parse_manifest(payload: BytesLike, where: str) -> Manifest:
    """Parse manifest bytes; any defect raises :class:`MalformedMetadataError` naming
    ``where`` and the field (:class:`UnsupportedSpec` for a later ``morton-hive/N``)."""
    raw = load_json(payload, where)
    if not isinstance(raw, dict):
        raise MalformedMetadataError(f"{where}: manifest is not a JSON object")
    spec = raw.get("spec")
    if spec not in SUPPORTED_SPECS:
        if isinstance(spec, str) and spec.startswith("morton-hive/"):
            raise UnsupportedSpec(f"{where}: spec {spec!r} is not supported {SUPPORTED_SPECS}")
        raise MalformedMetadataError(
            f"{where}: manifest spec {short(spec)} is not a morton-hive spec"
        )
    cell, shard = raw.get("cell_order"), raw.get("shard_order")
    if not (is_int(cell) and is_int(shard) and 0 <= shard <= cell <= MAX_ORDER):
        raise MalformedMetadataError(
            f"{where}: cell_order {short(cell)} / shard_order {short(shard)} must be ints "
            f"with 0 <= shard_order <= cell_order <= {MAX_ORDER}"
        )
    grouping = raw.get("path_grouping", 1)
    if not is_int(grouping) or grouping < 1:
        raise MalformedMetadataError(
            f"{where}: path_grouping {short(grouping)} must be an int >= 1"
        )
    temporal = raw.get("temporal")
    if spec == SPEC_V2:
        _check_temporal(temporal, where)
    elif temporal is not None:
        raise MalformedMetadataError(f"{where}: a {SPEC_V1} manifest must not carry 'temporal'")
    dataset = raw.get("dataset")
    if dataset is not None and not isinstance(dataset, dict):
        raise MalformedMetadataError(
            f"{where}: field 'dataset' is not a JSON object ({type(dataset).__name__})"
        )
    return Manifest(spec, cell, shard, grouping, dataset, raw, where,
                    _source_orders(raw.get("source_orders"), cell, shard, where))


SOURCE_ORDERS = "source_orders"
"""PROVISIONAL (D24 regional resolution; zagg 0.61 writes no such product): the manifest key
listing each cell order the product's leaves sit at, and the coverage document (at the
product root) listing the shards whose leaves are at that order. The guide's page on
computed orders describes the layout; this function is the only code that reads it."""
_COVERAGE_FILE = re.compile(r"^coverage(\.[A-Za-z0-9_-]+)*\.moc$")


def _source_orders(given: object, cell: int, shard: int,
                   where: str) -> tuple[tuple[int, str], ...]:
    """``((cell order, coverage document), ...)`` of manifest key :data:`SOURCE_ORDERS`,
    finest first; ``()`` when absent. Orders are distinct ints from ``shard_order`` to
    ``cell_order`` (which is among them), each document a ``coverage*.moc`` file name at
    the product root; anything else raises :class:`MalformedMetadataError`. No I/O."""
    if given is None:
        return ()
    field = f"{where}: field {SOURCE_ORDERS!r}"
    if not isinstance(given, list) or not 0 < len(given) <= cell - shard + 1:
        raise MalformedMetadataError(
            f"{field} {short(given)} is not a list of 1 to {cell - shard + 1} entries "
            f"(one per cell order from shard_order {shard} to cell_order {cell})")
    found: dict[int, str] = {}
    for i, entry in enumerate(given):
        order = entry.get("cell_order") if isinstance(entry, dict) else None
        name = entry.get("coverage") if isinstance(entry, dict) else None
        if not (is_int(order) and shard <= order <= cell) or order in found:
            raise MalformedMetadataError(
                f"{field}[{i}].cell_order {short(order)} is not a new int from shard_order "
                f"{shard} to cell_order {cell}")
        if not (isinstance(name, str) and _COVERAGE_FILE.match(name)):
            raise MalformedMetadataError(
                f"{field}[{i}].coverage {short(name)} is not a coverage*.moc file name at "
                "the product root")
        found[order] = name
    if cell not in found:
        raise MalformedMetadataError(f"{field} does not list cell_order {cell}, the finest")
    return tuple(sorted(found.items(), reverse=True))


def _check_temporal(temporal: object, where: str) -> None:
    """A ``morton-hive/2`` temporal block: a schedule name, and, where an ``explicit``
    schedule lists its windows, window objects with distinct valid labels."""
    if not (isinstance(temporal, dict) and temporal.get("schedule")):
        raise MalformedMetadataError(f"{where}: a {SPEC_V2} manifest needs a temporal schedule")
    if not isinstance(temporal["schedule"], str):
        raise MalformedMetadataError(
            f"{where}: field 'temporal.schedule' {short(temporal['schedule'])} is not a string"
        )
    windows = temporal.get("windows")
    if temporal["schedule"] != "explicit" or windows is None:
        return
    if not isinstance(windows, list):
        raise MalformedMetadataError(
            f"{where}: field 'temporal.windows' {short(windows)} is not a list"
        )
    seen: set[str] = set()
    for i, entry in enumerate(windows):
        field = f"temporal.windows[{i}]"
        if not isinstance(entry, dict):
            raise MalformedMetadataError(f"{where}: field {field!r} is not a JSON object")
        label = validate_window(entry.get("label"), f"{where}: field {field}.label")
        if label in seen:
            raise MalformedMetadataError(f"{where}: field {field}.label {label!r} repeats")
        seen.add(label)
        for key in ("start", "end"):
            if not isinstance(entry.get(key, ""), str):
                raise MalformedMetadataError(
                    f"{where}: field {field}.{key} {short(entry[key])} is not a string"
                )
