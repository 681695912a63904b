"""The package's errors and its one warning.

Every error the store raises on purpose derives from ``MocHiveError``, and
from one of two standard roots so that generic handlers keep working:

- ``HiveReadError`` (an ``OSError``): an object could not be read, or its bytes
  cannot be right (truncated, a shard index that lies, a link out of the hive root).
- ``HiveFormatError`` (a ``ValueError``): the hive's metadata is malformed or
  describes something this reader cannot present (manifest, coverage, stamps, leaf
  schemas, encodings that cannot be converted safely).

Messages name the object (and, for metadata, the field); they never carry
credentials.
"""

from __future__ import annotations


class MocHiveError(Exception):
    """Root of every error this package raises on purpose."""


class HiveReadError(MocHiveError, OSError):
    """An object of the hive could not be read, or its bytes cannot be right."""


class HiveFormatError(MocHiveError, ValueError):
    """The hive's metadata is malformed, or cannot be presented as declared."""


class HiveWarning(UserWarning):
    """Something in the hive was damaged or stale, and how it was read."""


# -- read failures ---------------------------------------------------------------------


class ObjectReadError(HiveReadError):
    """An object's response body could not be read in full."""


class ChunkReadError(HiveReadError):
    """A leaf chunk object could not be read."""


class TruncatedChunkError(HiveReadError):
    """A leaf chunk object is shorter than, or inconsistent with, its metadata or shard
    index."""


class TranscodeReadError(HiveReadError):
    """A leaf array read for re-encoding failed."""


class LeafMovedError(HiveReadError):
    """A leaf's commit stamp moved to another version while a chunk was read from the one
    it named (a writer committed and removed the old version): the key is planned and
    read again under the new stamp; raised to the caller only when the stamp keeps moving,
    or by a consumer that does not read again."""


class OutsideRootError(HiveReadError):
    """An object's real path lies outside the hive root (a link leaving the tree)."""


# -- format and schema problems --------------------------------------------------------


class MalformedMetadataError(HiveFormatError):
    """A metadata document of the hive has a field of the wrong type or value."""


class OptionError(HiveFormatError):
    """An option given to the store (or the command line) is not one it understands."""


class SettingError(OptionError):
    """A key of ``moczarr_store.config`` has a value it does not allow (wrong type, out of
    range, or an unknown key): the message names the key, the value and what is allowed."""


class NotAHiveError(HiveFormatError):
    """The source holds no morton-hive: no manifest at its root and no products below."""


class UnsupportedSpec(HiveFormatError):
    """A well-formed ``morton-hive/N`` spec this reader does not open."""


class UnusableCoverage(HiveFormatError):
    """The root MOC is absent in effect: unparsable, of an unknown spec, or too large."""


class NoCoverageError(HiveFormatError):
    """A product has no committed leaf anywhere, so it has no schema."""


class CannotWalk(HiveFormatError):
    """The digit tree had to be walked, and the backend cannot list it (plain HTTP)."""


class LeafSchemaError(HiveFormatError):
    """A leaf array's metadata cannot be presented as a slice of a virtual array."""


class EncodingError(HiveFormatError):
    """A leaf's values cannot be presented under the virtual array's encoding."""


class SphereTooLarge(HiveFormatError):
    """``geometry="sphere"`` would present a level in more chunks than the store allows."""
