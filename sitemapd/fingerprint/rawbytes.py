"""The fingerprint of a file's bytes (`page` mode, non-HTML files), and the source's
`ignore` patterns taken out of them."""

from __future__ import annotations

import re

# hashlib's own blake2b, without hashlib's start loading OpenSSL (11 M instructions).
from _blake2 import blake2b


def bytes_digest(data: bytes, ignore: tuple[re.Pattern[bytes], ...] = ()) -> str:
    """Return the hex digest of `data` with every `ignore` match removed."""
    return bytes_hasher(without_ignored(data, ignore)).hexdigest()


def bytes_hasher(data: bytes) -> blake2b:
    """Return the hash `bytes_digest` takes of `data` (nothing ignored), to which the
    bytes that follow can be added."""
    return blake2b(data, digest_size=16)


def without_ignored(data: bytes, ignore: tuple[re.Pattern[bytes], ...]) -> bytes:
    """Return `data` with every match of the `ignore` patterns removed."""
    for pattern in ignore:
        data = pattern.sub(b"", data)
    return data
