"""The digest of a whole file's bytes (what tells a `touch` from a change), or of each of
its pieces in turn (which tells a change at its first changed piece), and the opening of
a file to be hashed."""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

# Bytes hashed, then handed back, at a time (clean file pages count as resident until
# then: a 10M-line list is 800 MB).
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
    """Return the xxh3-128 of the bytes of the open file `handle`, in hex; raises OSError."""
    # Loaded here: a build that finds its lists as noted hashes none.
    import xxhash

    hasher = xxhash.xxh3_128()
    for piece in _pieces(handle):
        hasher.update(piece)
    return hasher.hexdigest()


def piece_digests(handle: BinaryIO, skip: int = 0) -> Iterator[str]:
    """Yield the xxh3-128 in hex of each 8 MiB piece of the open file `handle` in turn
    (one, of no bytes, for an empty file), the first `skip` left out (not read); raises
    OSError."""
    import xxhash

    empty = True
    for piece in _pieces(handle, skip * _PIECE):
        empty = False
        yield xxhash.xxh3_128_hexdigest(piece)
    if empty and not skip:
        yield xxhash.xxh3_128_hexdigest(b"")


def _pieces(handle: BinaryIO, first: int = 0) -> Iterator[memoryview]:
    """Yield the bytes of the open file `handle` from offset `first` in pieces of
    `_PIECE`, each handed back once the next is asked for; raises OSError."""
    size = os.fstat(handle.fileno()).st_size
    if size <= first:
        return
    with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as whole:
        view = memoryview(whole)
        try:
            for start in range(first, size, _PIECE):
                piece = view[start : start + _PIECE]
                try:
                    yield piece
                finally:
                    piece.release()  # else the view cannot be released
                whole.madvise(mmap.MADV_DONTNEED, start, min(_PIECE, size - start))
        finally:
            view.release()
