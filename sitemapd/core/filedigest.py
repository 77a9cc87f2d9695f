"""The digest of a whole file's bytes (what tells a `touch` from a change), or of each of
its pieces in turn (which tells a change at its first changed piece), and the opening of
a file to be hashed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from sitemapd.core.fileread import BLOCK, FileBytes

if TYPE_CHECKING:
    from xxhash import xxh3_128

# Bytes of a piece, each with its own digest.
_PIECE = 8 << 20


def open_regular(path: str | os.PathLike[str]) -> BinaryIO | None:
    """Return the file at `path` open for reading, or None when it is not a regular file;
    raises OSError."""
    # Not blocking: a FIFO in the file's place would hang the open until written.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def file_digest(handle: BinaryIO) -> str:
    """Return the xxh3-128 of the bytes of the open file `handle`, in hex; raises OSError
    (FileShrank when the file is cut short meanwhile)."""
    # Loaded here: a build that finds its lists as noted hashes none.
    import xxhash

    hasher = xxhash.xxh3_128()
    size = os.fstat(handle.fileno()).st_size
    read = FileBytes(handle.fileno(), size)
    try:
        _feed(hasher, read, 0, size)
    finally:
        read.close()
    return hasher.hexdigest()


def piece_digests(handle: BinaryIO, skip: int = 0) -> Iterator[str]:
    """Yield the xxh3-128 in hex of each 8 MiB piece of the open file `handle` in turn
    (one, of no bytes, for an empty file), the first `skip` left out (not read); raises
    OSError (FileShrank when the file is cut short meanwhile)."""
    import xxhash

    size = os.fstat(handle.fileno()).st_size
    if size == 0 and not skip:
        yield xxhash.xxh3_128_hexdigest(b"")
    read = FileBytes(handle.fileno(), size)
    try:
        for start in range(skip * _PIECE, size, _PIECE):
            hasher = xxhash.xxh3_128()
            _feed(hasher, read, start, min(size, start + _PIECE))
            yield hasher.hexdigest()
    finally:
        read.close()


def _feed(hasher: xxh3_128, read: FileBytes, start: int, end: int) -> None:
    """Feed bytes `start` to `end` of `read` to `hasher`; raises FileShrank."""
    for at in range(start, end, BLOCK):
        hasher.update(read.view(at, min(end, at + BLOCK)))
