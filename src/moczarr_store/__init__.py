"""moczarr-store: a morton-hive (zagg) presented as one read-only Zarr v3 hierarchy."""

import sys as _sys

from .errors import (
    CannotWalk,
    ChunkReadError,
    EncodingError,
    HiveFormatError,
    HiveReadError,
    HiveWarning,
    LeafMovedError,
    LeafSchemaError,
    MalformedMetadataError,
    MocHiveError,
    NoCoverageError,
    NotAHiveError,
    ObjectReadError,
    OptionError,
    OutsideRootError,
    SettingError,
    SphereTooLarge,
    TranscodeReadError,
    TruncatedChunkError,
    UnsupportedSpec,
    UnusableCoverage,
)
from .hive.aoi import aoi_mask
from .io import mapped as mapped
from .sample import sample_hive
from .store import MocHiveStore
from .tunables import config

__all__ = [
    "CannotWalk",
    "ChunkReadError",
    "EncodingError",
    "HiveFormatError",
    "HiveReadError",
    "HiveWarning",
    "LeafMovedError",
    "LeafSchemaError",
    "MalformedMetadataError",
    "MocHiveError",
    "MocHiveStore",
    "NoCoverageError",
    "NotAHiveError",
    "ObjectReadError",
    "OptionError",
    "OutsideRootError",
    "SettingError",
    "SphereTooLarge",
    "TranscodeReadError",
    "TruncatedChunkError",
    "UnsupportedSpec",
    "UnusableCoverage",
    "aoi_mask",
    "config",
    "cell_ranges",
    "decode_cells",
    "open_cells",
    "sample_hive",
]
__version__ = "0.2.0"

# The chunking guide documents ``moczarr_store.mapped.release()``: the module lives in io/,
# and this name (also for ``import moczarr_store.mapped``) stays the same module.
_sys.modules[f"{__name__}.mapped"] = mapped


def __getattr__(name: str) -> object:
    if name in ("cell_ranges", "decode_cells", "open_cells"):  # need xarray (and xdggs)
        from . import cells

        return getattr(cells, name)
    raise AttributeError(f"module 'moczarr_store' has no attribute {name!r}")
