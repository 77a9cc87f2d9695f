"""The digest of a whole file's bytes (what tells a `touch` from a change), the chunks of a
file's last read found unchanged in it (which tells a change at its first changed chunk),
and the opening of a file to be hashed. Files are read, never mapped (`fileread`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import BinaryIO, NamedTuple

from sitemapd.core.fileread import BLOCK, FileBytes


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
    with FileBytes(handle.fileno(), size) as read:
        for at in range(0, size, BLOCK):
            hasher.update(read.view(at, min(size, at + BLOCK)))
    return hasher.hexdigest()


class Place(NamedTuple):
    """A chunk of a file's last read: its bytes' digest and the offset after them."""

    digest: bytes
    end: int


# What `matching` found, by the status of the file it hashed (device, inode, size, mtime,
# ctime) and the digest of the chunks it was given: a file not written since holds the
# same bytes (its ctime would have moved), and a build's early check and its scan ask the
# same of the same list. A few files' worth.
_FOUND: dict[tuple[int, ...], tuple[bytes, int]] = {}
_KEPT = 8


def matching(handle: BinaryIO, known: Sequence[Place]) -> int:
    """Return how many of the chunks `known` of the file's last read start the open file
    `handle` with the same bytes, hashed in place up to the first that differs: all of
    them when the file is as it was; none when its size changed. Asked again of a file
    not written since, it answers without hashing. Raises OSError (FileShrank when the
    file is cut short meanwhile)."""
    import xxhash

    st = os.fstat(handle.fileno())
    if not known or st.st_size != known[-1].end:
        return 0
    status = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    asked = xxhash.xxh3_128_digest(b"".join(p.digest + p.end.to_bytes(8, "little") for p in known))
    found = _FOUND.get(status)
    if found is not None and found[0] == asked:
        return found[1]
    count = _matching(handle, known, st.st_size)
    # Written while it was hashed, the file has another status: this one is not asked for.
    if len(_FOUND) >= _KEPT:
        del _FOUND[next(iter(_FOUND))]
    _FOUND[status] = (asked, count)
    return count


def _matching(handle: BinaryIO, known: Sequence[Place], size: int) -> int:
    """Return how many of `known` start the file of `size` bytes with the same bytes."""
    import xxhash

    with FileBytes(handle.fileno(), size) as read:
        start = 0
        for index, place in enumerate(known):
            if xxhash.xxh3_128_digest(read.view(start, place.end)) != place.digest:
                return index
            start = place.end
        return len(known)
