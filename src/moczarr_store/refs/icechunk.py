"""An Icechunk repository of virtual references, one commit on ``main``.

Metadata and references come from the same ``ManifestArray``s the kerchunk writer uses.
The references are written with icechunk's per-chunk ``VirtualChunkSpec`` rather than
VirtualiZarr's Icechunk writer, which records one checksum per array (the time of the
write): here each reference carries its object's checksum at export time (the ETag where
the storage gives one, else its modification time rounded up to the second, Icechunk's
precision), so reading an object changed since fails instead of returning other bytes.
Inline chunks (fabricated, transcoded, re-framed) are written as native chunks.

One virtual chunk container is declared per published root (the hive root, or each
``--remap`` replacement used); readers authorize them when they open the repository. The
hive root's container carries the endpoint, region and anonymous access the export read
the hive with (:mod:`.access`).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from zarr.core.buffer import default_buffer_prototype

from ..errors import HiveFormatError
from ..io.reader import ObjectStat
from .access import ATTRIBUTE, icechunk_config
from .collect import Collected
from .manifest import group_doc, manifest_array

NATIVE_BATCH = 256  # native chunks written concurrently (Icechunk takes one store.set each)


def checksum(stat: ObjectStat | None) -> dict[str, Any]:
    """A ``VirtualChunkSpec``'s checksum keywords for an object as it was exported."""
    if stat is None:
        return {}
    if stat.etag:
        return {"etag_checksum": stat.etag}
    if stat.mtime is not None:  # Icechunk keeps whole seconds: round up, never down
        whole = stat.mtime.replace(microsecond=0)
        up = whole + timedelta(seconds=1) if stat.mtime != whole else whole
        return {"last_updated_at_checksum": up}
    return {}


def containers(collected: Collected, publish: Callable[[str], str],
               remap: list[tuple[str, str]]) -> list[str]:
    """The published URL prefixes the references live under."""
    news = sorted({new for _, new in remap}, key=len, reverse=True)
    found = set()
    for key in collected.sources:
        url = publish(collected.url(key))
        found.add(next((n for n in news if url.startswith(n)), publish(collected.root)))
    return sorted(found)


async def write_icechunk(
    collected: Collected,
    out: str,
    publish: Callable[[str], str],
    remap: list[tuple[str, str]],
    *,
    checksums: bool = True,
    configs: Mapping[str, Any] | None = None,
    message: str = "moczarr-store refs",
) -> None:
    """Create an Icechunk repository at local path ``out`` holding every group, array
    and reference of ``collected``. ``configs`` maps a container prefix to icechunk's
    object store configuration (e.g. an ``s3_store(endpoint_url=...)``). A failed write
    removes the repository it began."""
    try:
        await _write(collected, out, publish, remap, checksums, configs, message)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # ``out`` did not exist: the caller checked
        raise


async def _write(collected: Collected, out: str, publish: Callable[[str], str],
                 remap: list[tuple[str, str]], checksums: bool,
                 configs: Mapping[str, Any] | None, message: str) -> None:
    import icechunk

    from ..hints import quiet_icechunk_logs

    quiet_icechunk_logs(icechunk)
    config = icechunk.RepositoryConfig.default()
    access = collected.groups.get("", {}).get(ATTRIBUTE, {})
    for prefix in containers(collected, publish, remap):
        source = access if prefix == publish(collected.root) else None
        conf = (configs or {}).get(prefix) or icechunk_config(prefix, source)
        config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, conf))
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(out), config)
    session = repo.writable_session("main")
    store = session.store
    buffer = default_buffer_prototype().buffer
    for path, attrs in collected.groups.items():
        doc = group_doc(attrs)
        await store.set(f"{path}/zarr.json" if path else "zarr.json",
                        buffer.from_bytes(json.dumps(doc, allow_nan=False).encode()))
    for path, refs in collected.arrays.items():
        marr = manifest_array(refs, collected, publish)
        prototype = default_buffer_prototype()
        await store.set(f"{path}/zarr.json", marr.metadata.to_buffer_dict(prototype)["zarr.json"])
        specs, native = [], []
        for chunk in refs.chunks:
            key = f"{path}/c/" + "/".join(map(str, chunk.coords))
            if chunk.source is None:
                native.append((key, chunk.data or b""))
                if len(native) == NATIVE_BATCH:
                    await _set_native(store, native)
                    native.clear()
                continue
            marks = checksum(collected.sources.get(chunk.source)) if checksums else {}
            specs.append(icechunk.VirtualChunkSpec(
                list(chunk.coords), publish(collected.url(chunk.source)), chunk.offset,
                chunk.length, **marks,
            ))
        await _set_native(store, native)
        if specs:
            failed = store.set_virtual_refs(path, specs, validate_containers=True)
            if failed:
                raise HiveFormatError(
                    f"{path}: {len(failed)} references match no virtual chunk container "
                    f"(first chunk {failed[0]})"
                )
    session.commit(message)


async def _set_native(store: Any, chunks: list[tuple[str, bytes]]) -> None:
    """Write ``(key, bytes)`` native chunks concurrently."""
    buffer = default_buffer_prototype().buffer
    await asyncio.gather(*(store.set(key, buffer.from_bytes(data)) for key, data in chunks))
