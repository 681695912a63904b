"""Storage options: what zarr's and xarray's users write, as obstore's store configuration.

``storage_options`` may be written as for fsspec (s3fs, gcsfs, HTTP: ``anon``, ``key``,
``secret``, ``token``, ``endpoint_url``, ``client_kwargs``, ``headers``, ...) or with
obstore's own keys (``endpoint``, ``region``, ``skip_signature``, ``client_options``,
``retry_config``, ...); :func:`obstore_options` turns either into obstore's. A plain
``http://`` URL (or S3, GCS or Azure endpoint) sets ``client_options["allow_http"]``: the
scheme says so.
:func:`check_options` builds the obstore store once (no I/O) so that a misspelt key is
refused when the store is constructed, naming the valid ones. :data:`FAIL_FAST` is the
command line's bounded timeouts and retries.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..errors import OptionError
from .redact import first_paragraph, scrub
from .urls import family

# fsspec spellings -> obstore config keys, per scheme family
_S3_NAMES = {
    "key": "access_key_id",
    "aws_access_key_id": "access_key_id",
    "secret": "secret_access_key",
    "aws_secret_access_key": "secret_access_key",
    "token": "session_token",
    "aws_session_token": "session_token",
    "endpoint_url": "endpoint",
    "region_name": "region",
}
_NO_EQUIVALENT = {  # fsspec keys with no obstore meaning: refused, not silently dropped
    "config_kwargs", "s3_additional_kwargs", "use_listings_cache", "listings_expiry_time",
    "default_block_size", "default_fill_cache", "cache_regions", "version_aware",
    "session", "asynchronous", "loop", "project", "access", "consistency",
}
_OBSTORE_EXTRA = ("client_options", "retry_config", "credential_provider", "config")
_STUBS = {"s3": ("_aws.pyi", "S3Config"), "gs": ("_gcs.pyi", "GCSConfig"),
          "az": ("_azure.pyi", "AzureConfig")}
_LOCAL_KEYS = ("automatic_cleanup", "mkdir")


def _bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true")


def _s3(options: dict[str, Any]) -> dict[str, Any]:
    client_kwargs = options.pop("client_kwargs", None) or {}
    if not isinstance(client_kwargs, Mapping):
        raise OptionError(f"storage option client_kwargs: expected a dict, got {client_kwargs!r}")
    out: dict[str, Any] = {}
    for key, value in [*client_kwargs.items(), *options.items()]:
        if key == "anon":
            if _bool(value):
                out["skip_signature"] = True
        elif key == "requester_pays":
            if _bool(value):
                out["request_payer"] = True
        elif key == "use_ssl":
            if not _bool(value):
                out.setdefault("client_options", {})["allow_http"] = True
        else:
            out[_S3_NAMES.get(str(key), str(key))] = value
    return out


def _gs(options: dict[str, Any]) -> dict[str, Any]:
    token = options.pop("token", None)
    if _bool(options.pop("anon", False)):
        token = "anon"
    if isinstance(token, Mapping):
        options["service_account_key"] = json.dumps(dict(token))
    elif token == "anon":
        options["skip_signature"] = True
    elif isinstance(token, str | os.PathLike) and Path(token).is_file():
        options["service_account"] = os.fspath(token)
    elif token not in (None, "google_default", "cache"):
        raise OptionError(
            "storage option token: gcsfs's 'anon', a service-account file or its JSON dict "
            "are understood (obstore reads application default credentials by itself); "
            "for a bearer token use bearer_token=..."
        )
    if "endpoint_url" in options:
        options["base_url"] = options.pop("endpoint_url")
    return options


def _http(options: dict[str, Any]) -> dict[str, Any]:
    headers = options.pop("headers", None)
    if headers:
        client = dict(options.get("client_options") or {})
        client["default_headers"] = {**dict(headers), **client.get("default_headers", {})}
        options["client_options"] = client
    return options


def obstore_options(url: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` (fsspec or obstore spellings) as keyword arguments of
    ``obstore.store.from_url(url, ...)``. Pure: no I/O, the caller's dict is not changed."""
    out = dict(options or {})
    refused = sorted(set(out) & _NO_EQUIVALENT)
    if refused:
        raise OptionError(
            f"storage option(s) {refused} have no obstore equivalent; see obstore's store "
            "configuration for what can be set"
        )
    kind = family(url)
    out = {"s3": _s3, "gs": _gs, "http": _http, "https": _http}.get(kind, dict)(out)
    if "client_options" in out:
        out["client_options"] = dict(out["client_options"])
    if kind == "http" or _http_endpoint(out):
        client = out.setdefault("client_options", {})
        client.setdefault("allow_http", True)
    return out


# the options naming where an S3, GCS or Azure store sends its requests (obstore's keys,
# with and without their environment prefix); not the credential services' endpoints
_ENDPOINT_KEYS = frozenset({
    "endpoint", "aws_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3", "endpoint_url_s3",
    "base_url", "google_base_url", "gcs_base_url", "azure_storage_endpoint", "azure_endpoint",
})


def _http_endpoint(options: Mapping[str, Any]) -> bool:
    """Whether an endpoint option names a plain ``http://`` URL (obstore then needs
    ``allow_http``; the URL says so)."""
    return any(str(key).lower() in _ENDPOINT_KEYS
               and str(value).strip().lower().startswith("http://")
               for key, value in options.items())


def storage_arguments(
    storage_options: Mapping[str, Any], more: Mapping[str, Any]
) -> dict[str, Any]:
    """``storage_options=`` and further keyword arguments (deprecated) as one dict; a key
    given both ways is an error."""
    both = sorted(set(storage_options) & set(more))
    if both:
        raise OptionError(f"storage option(s) {both} given both in storage_options and as "
                          "keyword arguments")
    return {**storage_options, **more}


@functools.cache
def _stub_keys(kind: str) -> tuple[str, ...]:
    """The config keys obstore's type stubs declare for a store kind (read only to name the
    valid keys in an error; empty if the stubs are not there)."""
    if kind not in _STUBS:
        return ()
    try:
        import obstore

        stub, name = _STUBS[kind]
        tree = ast.parse((Path(obstore.__file__).parent / "_store" / stub).read_text())
    except (OSError, SyntaxError, ImportError):
        return ()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return tuple(n.target.id for n in node.body
                         if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
    return ()


def valid_keys(url: str) -> tuple[str, ...]:
    """The storage option names a store for ``url`` takes (obstore's keys)."""
    kind = family(url)
    if kind == "file":
        return _LOCAL_KEYS
    if kind in ("http", "https"):
        return ("client_options", "retry_config", "headers")
    return (*_stub_keys(kind), *_OBSTORE_EXTRA) if kind in _STUBS else ()


def unknown_keyword(url: str | None, key: str, own: tuple[str, ...],
                    detail: str = "") -> OptionError:
    """The error for a keyword that is neither the store's own nor a storage option
    (``url`` ``None``: the source is an obstore store instance, which takes none)."""
    storage = () if url is None else valid_keys(url)
    guess = difflib.get_close_matches(key, [*own, *storage], n=1, cutoff=0.6)
    hint = f" (did you mean {guess[0]!r}?)" if guess else ""
    if url is None:
        where = "an obstore store instance takes no storage options (configure the instance)"
    else:
        listed = ", ".join(storage) if storage else "see obstore's store configuration"
        where = f"storage options for {family(url)}:// (storage_options={{...}}) are {listed}"
    return OptionError(f"unknown keyword {key!r}{hint}: MocHiveStore takes {', '.join(own)}; "
                       f"{where}" + (f" ({detail})" if detail else ""))


def check_options(url: str, options: dict[str, Any], own: tuple[str, ...]) -> Any:
    """Refuse keys obstore would not take for ``url`` now, naming the valid ones: builds
    and returns the obstore store (no request is made; ``None`` for a local hive, which
    takes only ``automatic_cleanup`` and ``mkdir``)."""
    if family(url) == "file":
        for key in options:
            if key not in _LOCAL_KEYS:
                raise unknown_keyword(url, key, own)
        return None
    import obstore.store

    try:
        return obstore.store.from_url(url, **options)
    except Exception as err:
        detail = scrub(first_paragraph(err), options)
        bad = next((k for k in options if repr(k) in detail), None)
        if bad is None:
            bad = next((k for k in options if k not in valid_keys(url)), None)
        if bad is not None:
            raise unknown_keyword(url, bad, own, detail) from None
        raise OptionError(f"storage options for {scrub(url)}: {detail}") from None


# -- the command line's fail-fast defaults ---------------------------------------------------

FAIL_FAST = {"connect_timeout": 5.0, "read_timeout": 5.0, "retries": 2, "retry_timeout": 10.0}
"""Command-line defaults: a connection within 5 s, no 5 s without a byte, at most 2
retries within 10 s. A silent endpoint is reported after ~10 s."""


def fail_fast(
    connect_timeout: float = FAIL_FAST["connect_timeout"],
    read_timeout: float = FAIL_FAST["read_timeout"],
    retries: int = int(FAIL_FAST["retries"]),
    retry_timeout: float = FAIL_FAST["retry_timeout"],
) -> dict[str, Any]:
    """``client_options`` and ``retry_config`` bounding how long a dead endpoint takes to
    report: each request must connect within ``connect_timeout`` s and never wait
    ``read_timeout`` s for a byte; failures are retried at most ``retries`` times while
    less than ``retry_timeout`` s have passed."""
    return {
        "client_options": {"connect_timeout": f"{connect_timeout}s",
                           "read_timeout": f"{read_timeout}s"},
        "retry_config": {
            "max_retries": int(retries),
            "retry_timeout": timedelta(seconds=retry_timeout),
            "backoff": {"init_backoff": timedelta(milliseconds=100),
                        "max_backoff": timedelta(seconds=2), "base": 2},
        },
    }


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, one level of nested dicts merged (``client_options``)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def to_json(options: Mapping[str, Any]) -> str:
    """Storage options as JSON (durations as ``{"seconds": s}``), for worker processes."""
    def encode(value: Any) -> Any:
        if isinstance(value, timedelta):
            return {"__seconds__": value.total_seconds()}
        raise OptionError(f"storage option value {type(value).__name__} cannot be passed on")

    return json.dumps(options, default=encode)


def from_json(text: str) -> dict[str, Any]:
    """The inverse of :func:`to_json`."""
    def decode(obj: dict[str, Any]) -> Any:
        return timedelta(seconds=obj["__seconds__"]) if set(obj) == {"__seconds__"} else obj

    decoded: dict[str, Any] = json.loads(text, object_hook=decode)
    return decoded
