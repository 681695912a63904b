"""Credentials never leave in a message: URLs' user-info and query values, and the values
of secret-keyed storage options, replaced by ``***``."""

from __future__ import annotations

import re
from typing import Any

_URL_BODY_RE = re.compile(r"[^\s\"'<>`]*")
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_PARAM_RE = re.compile(r"([^&;=#]*)(=?)[^&;#]*")


def _redact_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    cut = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    tail, hash_, fragment = tail.partition("#")  # a fragment may hold a token, query or not
    path, question, query = tail.partition("?")
    if question:
        query = _PARAM_RE.sub(lambda m: m[1] + "=***" if m[2] else ("***" if m[1] else ""), query)
        tail = f"{path}?{query}"
    return f"{scheme}://{authority}{tail}{hash_}{'***' if fragment else ''}"


def redact(text: str) -> str:
    """``text`` with every URL's user-info, query values and fragment replaced by ``***``.
    Cost: linear in ``len(text)``.

    ``s3://key:secret@bucket/hive?X-Amz-Signature=abc`` becomes
    ``s3://***@bucket/hive?X-Amz-Signature=***``; text outside URLs is unchanged.
    """
    # A URL is a letter, then letters, digits, "+", "." or "-", then "://" and a body
    # without space, quote or angle bracket. A regex for it retries every letter of a long
    # run of scheme characters (quadratic); here each "://" is looked for once, and its
    # scheme is the run before it from its first letter (runs end at ":").
    out, done, at = [], 0, text.find("://")
    while at >= 0:
        start = at
        while start > done and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < at and not ("A" <= text[start] <= "Z" or "a" <= text[start] <= "z"):
            start += 1
        if start == at:  # no scheme: not a URL
            at = text.find("://", at + 3)
            continue
        end = _URL_BODY_RE.match(text, at + 3).end()  # type: ignore[union-attr]
        out += [text[done:start], _redact_url(text[start:end])]
        done = end
        at = text.find("://", end)
    return "".join(out) + text[done:]


_SECRET_KEY_RE = re.compile(r"secret|token|password|passwd|credential|signature|sas|auth|key",
                            re.IGNORECASE)
_PLAIN = frozenset({"true", "false", "none", "null"})  # flags, not secrets


def _secret_values(options: Any, secret: bool = False) -> set[str]:
    """String values of storage options under a key that names a secret (at any depth)."""
    if isinstance(options, dict):
        return set().union(*(_secret_values(v, secret or bool(_SECRET_KEY_RE.search(str(k))))
                             for k, v in options.items()))
    if isinstance(options, (list, tuple)):
        return set().union(*(_secret_values(v, secret) for v in options))
    plain = not isinstance(options, str) or len(options) < 4 or options.lower() in _PLAIN
    return set() if not secret or plain else {options}


def scrub(text: str, options: dict[str, Any] | None = None) -> str:
    """:func:`redact`, and every secret-keyed storage option value replaced by ``***``."""
    text = redact(text)
    for value in sorted(_secret_values(options or {}), key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def first_paragraph(err: BaseException) -> str:
    """An exception's message without obstore's multi-line ``Debug source`` dump."""
    text = str(err).split("\n\nDebug source:", 1)[0].strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
