"""References as VirtualiZarr manifests (``ChunkManifest`` / ``ManifestArray``): the
in-memory form the kerchunk and Icechunk writers publish from. Needs the ``[export]``
extra (Python >= 3.12)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .collect import ArrayRefs, Collected

EXTRA_HINT = "pip install 'moczarr-store[export]' (Python >= 3.12)"


def require_export() -> None:
    """Import the ``[export]`` libraries, or fail saying how to install them."""
    try:
        import icechunk  # noqa: F401
        import virtualizarr  # noqa: F401
    except ImportError as err:
        raise ImportError(f"this format needs the [export] extra ({err}): {EXTRA_HINT}") from None


def manifest_array(refs: ArrayRefs, collected: Collected, publish: Callable[[str], str]) -> Any:
    """The array as a ``ManifestArray``: references at their published URLs, inline chunks
    as VirtualiZarr's inlined chunks, absent chunks as empty paths."""
    from virtualizarr.manifests import ChunkManifest, ManifestArray
    from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH
    from zarr.core.metadata.v3 import ArrayV3Metadata

    paths = np.full(refs.grid, "", dtype=np.dtypes.StringDType())
    offsets = np.zeros(refs.grid, dtype=np.uint64)
    lengths = np.zeros(refs.grid, dtype=np.uint64)
    inlined: dict[tuple[int, ...], bytes] = {}
    for chunk in refs.chunks:
        if chunk.source is None:
            inlined[chunk.coords] = chunk.data or b""
            paths[chunk.coords] = INLINED_CHUNK_PATH
            lengths[chunk.coords] = len(chunk.data or b"")
        else:
            paths[chunk.coords] = publish(collected.url(chunk.source))
            offsets[chunk.coords] = chunk.offset
            lengths[chunk.coords] = chunk.length
    manifest = ChunkManifest.from_arrays(
        paths=paths, offsets=offsets, lengths=lengths, validate_paths=False, inlined=inlined
    )
    return ManifestArray(metadata=ArrayV3Metadata.from_dict(refs.meta.to_json()),
                         chunkmanifest=manifest)


def group_doc(attrs: dict[str, Any]) -> dict[str, Any]:
    """A group's ``zarr.json``: its attributes (the kerchunk writer adds its members'
    metadata)."""
    return {"zarr_format": 3, "node_type": "group", "attributes": attrs}
