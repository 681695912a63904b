"""Time windows of a ``morton-hive/2`` product: labels and their ``[start, end)`` bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import OptionError, UnusableCoverage
from .manifest import Manifest
from .paths import short, validate_window

_FORMATS = {"yearly": "%Y", "monthly": "%Y%m", "daily": "%Y%m%d"}
MAX_WINDOWS = 100_000
"""A ``time_range`` spanning more calendar windows is unusable (the walk names them)."""


def schedule(manifest: Manifest) -> str | None:
    """The window schedule, or ``None`` when leaves carry no window label."""
    if not manifest.windowed:
        return None
    value = manifest.raw["temporal"]["schedule"]
    return None if value == "none" else value


def explicit_windows(manifest: Manifest) -> list[dict[str, Any]] | None:
    """The window objects an ``explicit`` schedule lists (checked by ``parse_manifest``)."""
    windows = manifest.raw["temporal"].get("windows")
    return windows if schedule(manifest) == "explicit" and isinstance(windows, list) else None


def explicit_labels(manifest: Manifest) -> list[str] | None:
    """Labels an ``explicit`` schedule declares, in chronological order."""
    windows = explicit_windows(manifest)
    if windows is None:
        return None
    entries = sorted(windows, key=lambda w: (str(w.get("start")), str(w.get("label"))))
    return [validate_window(w.get("label"), manifest.where) for w in entries]


def _parse(instant: object) -> datetime:
    """An ISO instant (UTC when it names no offset); ``ValueError`` if it is not one."""
    if not isinstance(instant, str):
        raise ValueError(f"{short(instant)} is not an ISO date string")
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


def labels_between(kind: str | None, time_range: object, where: str) -> list[str] | None:
    """Calendar labels from ``time_range[0]`` through ``time_range[1]`` (UTC); ``None``
    when the schedule is not a calendar or there is no ``time_range``.

    A malformed ``time_range`` (not two ISO strings, out of the calendar's years, or
    spanning more than :data:`MAX_WINDOWS` windows) raises :class:`UnusableCoverage`
    naming ``where``.
    """
    if kind not in _FORMATS or time_range is None:
        return None
    if not (isinstance(time_range, list) and len(time_range) == 2):
        raise UnusableCoverage(f"{where}: time_range {short(time_range)} is not [first, last]")
    try:
        moment, last = _floor(_parse(time_range[0]), kind), _parse(time_range[1])
    except (ValueError, OverflowError) as err:
        raise UnusableCoverage(f"{where}: time_range {short(time_range)}: {err}") from None
    labels: list[str] = []
    while moment <= last:
        if len(labels) == MAX_WINDOWS:
            raise UnusableCoverage(
                f"{where}: time_range {short(time_range)} spans more than {MAX_WINDOWS:,} "
                f"{kind} windows"
            )
        labels.append(moment.strftime(_FORMATS[kind]))
        try:
            moment = _advance(moment, kind)
        except (ValueError, OverflowError):  # past year 9999: no later window exists
            break
    return labels


def bounds(manifest: Manifest, label: str) -> tuple[datetime, datetime] | None:
    """The ``[start, end)`` instants of a window, where the manifest defines them."""
    kind = schedule(manifest)
    if kind == "explicit":
        for entry in explicit_windows(manifest) or []:
            if entry.get("label") == label:
                try:
                    return _parse(entry["start"]), _parse(entry["end"])
                except (KeyError, ValueError, OverflowError):
                    return None
        return None
    if kind not in _FORMATS:
        return None
    try:
        start = datetime.strptime(label, _FORMATS[kind]).replace(tzinfo=UTC)
        return start, _advance(start, kind)
    except (ValueError, OverflowError):  # not a calendar label, or the window ends past 9999
        return None


def known_labels(manifest: Manifest, envelope: dict[str, Any] | None,
                 walked: dict[int, set[str | None]] | None, where: str) -> list[str] | None:
    """A windowed product's labels where they cost no request: the manifest's
    (``explicit``), the root coverage's ``time_range``, or a walk already made; ``None``
    when only a walk would tell."""
    labels = explicit_labels(manifest)
    if labels is None and walked is not None:
        labels = sorted({label for found in walked.values() for label in found if label})
    if labels is None and envelope is not None:
        try:
            labels = labels_between(schedule(manifest), envelope.get("time_range"), where)
        except UnusableCoverage:
            return None
    return labels


def check_window(window: str, labels: list[str] | None, product: str) -> None:
    """Refuse a ``window`` the product does not have, listing the ones it has (unknown
    labels: nothing to check against)."""
    if labels is None or window in labels:
        return
    shown = labels if len(labels) <= 24 else [*labels[:12], "...", *labels[-6:]]
    raise OptionError(
        f"window={window!r}: product {product!r} has no such window; its {len(labels)} "
        f"window(s): {', '.join(shown) or 'none'}"
    )
