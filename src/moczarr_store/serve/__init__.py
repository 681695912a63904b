"""Serve a hive over HTTP as a read-only Zarr v3 hierarchy (``pip install
'moczarr-store[serve]'``).

``create_app(source, ...)`` builds the ASGI app; ``moczarr-store serve`` runs it under
uvicorn; ``app_from_env`` is a factory for ``uvicorn --factory`` and other servers that
start one app per worker.
"""

from ..options import DEFAULT_STAMP_TTL
from .app import create_app
from .env import app_from_env

__all__ = ["DEFAULT_STAMP_TTL", "app_from_env", "create_app"]
