"""The digest of a whole file's bytes: what tells a `touch` from a change."""

from __future__ import annotations

import mmap
import os
from typing import BinaryIO

# Bytes hashed, then handed back, at a time (clean file pages count as resident until
# then: a 10M-line list is 800 MB).
_PIECE = 8 << 20


def file_digest(handle: BinaryIO) -> str:
    """Return the xxh3-128 of the bytes of the open file `handle`, in hex; raises OSError."""
    # Loaded here: a build that finds its lists as noted hashes none.
    import xxhash

    hasher = xxhash.xxh3_128()
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        return hasher.hexdigest()
    with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as whole:
        view = memoryview(whole)
        try:
            for start in range(0, size, _PIECE):
                hasher.update(view[start : start + _PIECE])
                whole.madvise(mmap.MADV_DONTNEED, start, min(_PIECE, size - start))
        finally:
            view.release()
    return hasher.hexdigest()
