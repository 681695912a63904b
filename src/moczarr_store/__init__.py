"""moczarr-store: a morton-hive (zagg) presented as one read-only Zarr v3 hierarchy."""

from .hive.level import HiveWarning, NoCoverageError
from .store import ChunkReadError, MocHiveStore

__all__ = ["ChunkReadError", "HiveWarning", "MocHiveStore", "NoCoverageError"]
__version__ = "0.1.0"
