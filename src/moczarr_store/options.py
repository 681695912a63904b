"""``OpenOptions``: the choices that shape a store's view of a hive, as one frozen value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Literal, cast, get_args

from .errors import OptionError
from .hive.aoi import Cells, aoi_members, parse_aoi
from .hive.paths import validate_window

Verify = Literal["lazy", "open"]
Chunking = Literal["auto", "shard", "leaf", "inner", "span"]
Geometry = Literal["covered", "sphere"]
VERIFY_MODES: tuple[str, ...] = get_args(Verify)
CHUNKINGS: tuple[str, ...] = get_args(Chunking)
REFERENCE_CHUNKINGS = ("auto", "shard", "leaf", "inner")
"""The chunkings an export takes: every chunk one byte range of one object (what a
reference names); ``auto`` chooses ``leaf`` or ``shard`` per group."""
GEOMETRIES: tuple[str, ...] = get_args(Geometry)


def parse_chunking(value: object) -> str | int:
    """A chunking: one of ``CHUNKINGS``, or a count of leaves per chunk (an int >= 1, or
    its decimal digits, as the CLI and environment variables spell it)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise OptionError(f"chunking={value}: leaves per chunk must be >= 1")
        return value
    _choice("chunking", value, CHUNKINGS)
    return cast(str, value)


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise OptionError(f"{name}={value!r}: expected one of {choices}")


@dataclass(frozen=True)
class OpenOptions:
    """How a hive is presented: equal options give identical views of the same hive.

    ``verify``: ``"lazy"`` reads a leaf's stamp when its chunk is first asked for;
    ``"open"`` reads every stamp at open and drops debris, as ``moczarr.open_hive`` does.
    ``chunking``: how a leaf array is chunked in the view (``"auto"``, the default: chosen
    per level, see ``view.arrays.leaves_per_chunk``; ``"shard"``, ``"leaf"``, ``"inner"``;
    ``"span"`` or an int ``k``: ``k`` consecutive leaves per chunk, ``k`` chosen from the
    leaf size for ``"span"``). ``window``: scope windowed products to this
    one window. ``aoi``: keep the nodes whose subtrees overlap these cells (decimal ids or
    packed words).
    ``geometry``: ``"covered"`` (rows are the covered nodes' cells) or ``"sphere"`` (every
    array at order ``o`` spans the ``12 * 4**o`` cells of the sphere in NESTED order).
    """

    verify: Verify = "lazy"
    chunking: Chunking | int = "auto"
    window: str | None = None
    aoi: tuple[str | int, ...] | None = None
    aoi_cells: Cells | None = field(default=None, compare=False, repr=False)
    geometry: Geometry = "covered"

    def __post_init__(self) -> None:
        _choice("verify", self.verify, VERIFY_MODES)
        if isinstance(self.chunking, str) and self.chunking.isdigit():
            raise OptionError(f"chunking={self.chunking!r}: pass a count as an int")
        parse_chunking(self.chunking)
        _choice("geometry", self.geometry, GEOMETRIES)
        if self.window is not None:
            try:
                validate_window(self.window)
            except ValueError as err:
                raise OptionError(f"window={self.window!r}: {err}") from None

    @classmethod
    def make(
        cls,
        verify: str = "lazy",
        chunking: str | int = "auto",
        window: str | None = None,
        aoi: Iterable[str | int] | str | int | None = None,
        geometry: str = "covered",
    ) -> OpenOptions:
        """Options from loose arguments: the AOI is normalised and parsed once."""
        members = None if aoi is None else aoi_members(aoi)
        try:
            cells = None if members is None else parse_aoi(members)
        except (TypeError, ValueError) as err:
            raise OptionError(f"aoi: {err}") from None
        if isinstance(window, int) and not isinstance(window, bool):
            window = str(window)  # window=2019 means the label "2019"
        # verify is checked against its choices in __post_init__
        return cls(cast(Verify, verify), cast(Chunking, parse_chunking(chunking)), window,
                   members, cells, cast(Geometry, geometry))

    def describe(self) -> str:
        """The options that differ from the defaults, as keyword arguments (for ``repr``);
        an AOI of more than 4 members is shortened."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if not f.repr or value == f.default:
                continue
            if isinstance(value, tuple) and len(value) > 4:
                shown = ", ".join(map(repr, value[:3]))
                parts.append(f"{f.name}=({shown}, ... {len(value)} members)")
            else:
                parts.append(f"{f.name}={value!r}")
        return ", ".join(parts)

    def view_attrs(self) -> dict[str, object]:
        """What the root group's ``morton_hive_store`` attribute records of these options."""
        attrs: dict[str, object] = {"verify": self.verify, "chunking": self.chunking}
        if self.window is not None:
            attrs["window"] = self.window
        if self.aoi is not None:
            attrs["aoi"] = [str(a) for a in self.aoi]
        if self.geometry != "covered":
            attrs["geometry"] = self.geometry
        return attrs


def store_keywords() -> tuple[str, ...]:
    """The keyword arguments ``MocHiveStore`` takes besides storage options."""
    view = tuple(f.name for f in fields(OpenOptions) if f.repr)
    return (*view, "max_concurrency", "read_only", "follow_links", "storage_options")
