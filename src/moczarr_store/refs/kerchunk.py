"""kerchunk JSON references (version 1, Zarr v3 keys) through VirtualiZarr's kerchunk
writer: one ``zarr.json`` per node, ``[url, offset, length]`` per referenced chunk and
``base64:`` data per inline chunk. A ``file://`` URL is written as its path (kerchunk's
convention); it and ``s3://``/``gs://`` URLs are written decoded, as fsspec's file
systems take a key verbatim, ``http(s)://`` URLs percent-encoded, as fsspec requests them.
Each group's ``zarr.json`` carries its descendants' metadata inline
(zarr-python's consolidated metadata, ``must_understand: false``), so zarr opens the
hierarchy without listing the references (zarr 3.2 and 3.3 list no member below the root
through fsspec's reference file system)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from .collect import Collected
from .manifest import group_doc, manifest_array


def kerchunk_refs(collected: Collected, publish: Callable[[str], str]) -> dict[str, Any]:
    """The reference dict ``{"version": 1, "refs": {...}}``."""
    import xarray as xr
    from virtualizarr.writers.kerchunk import variable_to_kerchunk_arr_refs

    def fsspec_url(url: str) -> str:
        url = publish(url)
        return url if url.startswith(("http://", "https://")) else unquote(url)

    refs: dict[str, object] = {}
    for path, array in collected.arrays.items():
        marr = manifest_array(array, collected, fsspec_url)
        dims = list(array.meta.dimension_names) or [f"dim_{i}" for i in range(len(array.grid))]
        var = xr.Variable(dims, marr, attrs=dict(array.meta.attributes))
        for key, value in variable_to_kerchunk_arr_refs(var, path, zarr_format=3).items():
            refs[f"{path}/{key}"] = value
    docs = {path: json.loads(refs[f"{path}/zarr.json"])  # type: ignore[arg-type]
            for path in collected.arrays}
    docs.update((path, group_doc(attrs)) for path, attrs in collected.groups.items() if path)
    for path, attrs in collected.groups.items():
        prefix = f"{path}/" if path else ""
        inner = {node[len(prefix):]: doc for node, doc in sorted(docs.items())
                 if node.startswith(prefix)}
        doc = {**group_doc(attrs), "consolidated_metadata": {
            "kind": "inline", "must_understand": False, "metadata": inner}}
        refs[f"{prefix}zarr.json"] = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    return {"version": 1, "refs": refs}


def write_kerchunk(collected: Collected, out: str, publish: Callable[[str], str]) -> None:
    """Write the references as JSON at ``out`` (through a temporary file, then renamed;
    a failed write leaves no file behind)."""
    doc = kerchunk_refs(collected, publish)
    partial = f"{out}.partial"
    try:
        with open(partial, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    os.replace(partial, out)
