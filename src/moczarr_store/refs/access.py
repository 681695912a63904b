"""What a reader of an export needs to reach the hive's objects, never a secret.

An export records it in its root group's attributes (:data:`ATTRIBUTE`) in every format,
and an Icechunk export also in the virtual chunk container of the hive's root, so that
a reader in another process (without the exporter's environment) reaches the objects
with only its own credentials, or none for a public bucket.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..io.urls import family
from ..verify import public_source

ATTRIBUTE = "moczarr_store_source"
# obstore's spellings of an S3 endpoint and region, then the variables its builder reads
_ENDPOINT = ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url")
_REGION = ("region", "aws_region", "aws_default_region")
_ENDPOINT_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT")
_REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION")


def _first(options: Mapping[str, Any], keys: tuple[str, ...], env: tuple[str, ...]) -> Any:
    found = next((options[k] for k in keys if options.get(k)), None)
    return found or next((os.environ[k] for k in env if os.environ.get(k)), None)


def _true(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true")


def source_access(url: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The hive root ``url`` (credentials stripped) and, for S3 and GCS, how to reach it:
    ``endpoint``, ``region`` and ``anonymous`` (unsigned requests), from the store's
    obstore ``options`` or else the environment the export ran in. Pure: no I/O."""
    access: dict[str, Any] = {"url": public_source(url)}
    kind = family(url)
    if kind not in ("s3", "gs"):
        return access
    if kind == "s3":
        endpoint = _first(options, _ENDPOINT, _ENDPOINT_ENV)
        region = _first(options, _REGION, _REGION_ENV)
    else:
        endpoint, region = options.get("base_url") or options.get("google_base_url"), None
    if endpoint:
        access["endpoint"] = public_source(str(endpoint))
    if region:
        access["region"] = str(region)
    skip = options.get("skip_signature", options.get("aws_skip_signature"))
    access["anonymous"] = _true(skip) or _true(options.get("google_skip_signature"))
    return access


def icechunk_config(prefix: str, access: Mapping[str, Any] | None = None) -> Any:
    """Icechunk's object store configuration for a virtual chunk container at ``prefix``;
    ``access`` (:func:`source_access`) where the container is the hive's root, else
    Icechunk's defaults (the reader's environment)."""
    import icechunk

    from ..errors import HiveFormatError

    access = access or {}
    if prefix.startswith("file://"):
        from urllib.parse import unquote

        return icechunk.local_filesystem_store(unquote(prefix[len("file://") :]))
    if prefix.startswith("s3://"):
        endpoint = access.get("endpoint")
        return icechunk.s3_store(
            region=access.get("region"), endpoint_url=endpoint,
            allow_http=str(endpoint or "").startswith("http://"),
            anonymous=bool(access.get("anonymous")),
            force_path_style=endpoint is not None,  # obstore's default with an endpoint
        )
    if prefix.startswith("gs://"):
        return icechunk.gcs_store()
    if prefix.startswith(("http://", "https://")):
        return icechunk.http_store()
    raise HiveFormatError(f"no Icechunk virtual chunk container for {prefix!r}")
