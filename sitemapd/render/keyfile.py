"""The IndexNow key file: published beside the sitemaps, so that search engines can check
that the notifications sent for the site come from its owner."""

from __future__ import annotations

import re

_KEY = re.compile(r"[A-Za-z0-9-]{8,128}")


def valid_key(key: str) -> bool:
    """Return whether `key` is an IndexNow key: 8-128 characters of a-z, A-Z, 0-9 and '-'."""
    return _KEY.fullmatch(key) is not None


def key_file(key: str) -> tuple[str, bytes]:
    """Return the name and content of the key file the site must serve.

    Raises ValueError for an invalid key.
    """
    if not valid_key(key):
        raise ValueError(f"invalid IndexNow key: {key!r}")
    return f"{key}.txt", key.encode("ascii")
