"""Time windows of a ``morton-hive/2`` product: labels and their ``[start, end)`` bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .manifest import Manifest
from .paths import validate_window

_FORMATS = {"yearly": "%Y", "monthly": "%Y%m", "daily": "%Y%m%d"}


def schedule(manifest: Manifest) -> str | None:
    """The window schedule, or ``None`` when leaves carry no window label."""
    if not manifest.windowed:
        return None
    value = manifest.raw["temporal"]["schedule"]
    return None if value == "none" else value


def explicit_labels(manifest: Manifest) -> list[str] | None:
    """Labels an ``explicit`` schedule declares, in chronological order."""
    windows = manifest.raw["temporal"].get("windows")
    if schedule(manifest) != "explicit" or not isinstance(windows, list):
        return None
    entries = sorted(windows, key=lambda w: (str(w.get("start")), str(w.get("label"))))
    return [validate_window(w.get("label")) for w in entries]


def _parse(instant: str) -> datetime:
    moment = datetime.fromisoformat(instant.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _advance(moment: datetime, kind: str) -> datetime:
    if kind == "yearly":
        return moment.replace(year=moment.year + 1)
    if kind == "monthly":
        return moment.replace(year=moment.year + moment.month // 12, month=moment.month % 12 + 1)
    return moment + timedelta(days=1)


def _floor(moment: datetime, kind: str) -> datetime:
    moment = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if kind in ("yearly", "monthly"):
        moment = moment.replace(day=1)
    return moment.replace(month=1) if kind == "yearly" else moment


def labels_between(kind: str, time_range: list) -> list[str] | None:
    """Calendar labels from ``time_range[0]`` through ``time_range[1]`` (UTC)."""
    if kind not in _FORMATS or not (isinstance(time_range, list) and len(time_range) == 2):
        return None
    try:
        moment, last = _floor(_parse(time_range[0]), kind), _parse(time_range[1])
    except (TypeError, ValueError):
        return None
    labels = []
    while moment <= last and len(labels) < 100_000:
        labels.append(moment.strftime(_FORMATS[kind]))
        moment = _advance(moment, kind)
    return labels


def bounds(manifest: Manifest, label: str) -> tuple[datetime, datetime] | None:
    """The ``[start, end)`` instants of a window, where the manifest defines them."""
    kind = schedule(manifest)
    if kind == "explicit":
        for entry in manifest.raw["temporal"].get("windows") or []:
            if entry.get("label") == label:
                try:
                    return _parse(entry["start"]), _parse(entry["end"])
                except (KeyError, TypeError, ValueError):
                    return None
        return None
    if kind not in _FORMATS:
        return None
    try:
        start = datetime.strptime(label, _FORMATS[kind]).replace(tzinfo=UTC)
    except ValueError:
        return None
    return start, _advance(start, kind)
