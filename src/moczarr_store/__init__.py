"""moczarr-store: a morton-hive (zagg) presented as one read-only Zarr v3 hierarchy."""

from .hive.aoi import aoi_mask
from .hive.level import HiveWarning, NoCoverageError
from .store import ChunkReadError, MocHiveStore

__all__ = ["aoi_mask", "ChunkReadError", "HiveWarning", "MocHiveStore", "NoCoverageError"]
__version__ = "0.1.0"
