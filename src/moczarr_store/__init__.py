"""moczarr-store: a morton-hive (zagg) presented as one read-only Zarr v3 hierarchy."""

from .errors import (
    CannotWalk,
    ChunkReadError,
    EncodingError,
    HiveFormatError,
    HiveReadError,
    HiveWarning,
    LeafSchemaError,
    MalformedMetadataError,
    MocHiveError,
    NoCoverageError,
    NotAHiveError,
    ObjectReadError,
    OptionError,
    OutsideRootError,
    TranscodeReadError,
    TruncatedChunkError,
    UnsupportedSpec,
    UnusableCoverage,
)
from .hive.aoi import aoi_mask
from .store import MocHiveStore

__all__ = [
    "CannotWalk",
    "ChunkReadError",
    "EncodingError",
    "HiveFormatError",
    "HiveReadError",
    "HiveWarning",
    "LeafSchemaError",
    "MalformedMetadataError",
    "MocHiveError",
    "MocHiveStore",
    "NoCoverageError",
    "NotAHiveError",
    "ObjectReadError",
    "OptionError",
    "OutsideRootError",
    "TranscodeReadError",
    "TruncatedChunkError",
    "UnsupportedSpec",
    "UnusableCoverage",
    "aoi_mask",
]
__version__ = "0.1.0"
