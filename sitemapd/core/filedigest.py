"""The digest of a whole file's bytes (what tells a `touch` from a change), the chunks of a
file's last read found unchanged in it (which tells a change at its first changed chunk),
and the opening of a file to be hashed. Files are read, never mapped (`fileread`)."""

# Annotations evaluated, not text: see core/observation.py.
import os
import stat
import threading
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


class Found(NamedTuple):
    """What the chunks of a file's last read find in it now: how many start it with the
    same bytes (`head`), and how many end it with the same bytes, each where its last
    read had it but for the file's change of size (`tail`). A file as it was: all of
    them at the head, none at the tail."""

    head: int
    tail: int


# What `ends` found, by the status of the file it hashed (device, inode, size, mtime,
# ctime) and the digest of the chunks it was given: a file not written since holds the
# same bytes (its ctime would have moved), and a build's early check and its scan ask the
# same of the same list. A few files' worth.
_FOUND: dict[tuple[int, ...], tuple[bytes, Found]] = {}
_KEPT = 8
# Files smaller than this are hashed from both ends on one thread: a second would start
# for less than it saves.
_BOTH_AT_ONCE = 4 * BLOCK


def matching(handle: BinaryIO, known: Sequence[Place]) -> int:
    """Return how many of the chunks `known` of the file's last read start the open file
    `handle` with the same bytes, hashed in place up to the first that differs: all of
    them when the file is as it was; none when its size changed. Asked again of a file
    not written since, it answers without hashing. Raises OSError (FileShrank when the
    file is cut short meanwhile)."""
    if not known or os.fstat(handle.fileno()).st_size != known[-1].end:
        return 0
    return ends(handle, known).head


def ends(handle: BinaryIO, known: Sequence[Place]) -> Found:
    """Return how many of the chunks `known` of the file's last read start and end the
    open file `handle` with the same bytes (`Found`), hashed in place from both ends at
    once (the tail on a thread: reading lets go of the GIL) up to the first that differs
    at each, or until they meet. Asked again of a file not written since, it answers
    without hashing. Raises OSError (FileShrank when the file is cut short meanwhile)."""
    import xxhash

    st = os.fstat(handle.fileno())
    if not known:
        return Found(0, 0)
    status = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    # The chunks' digests say where they end too: their bytes' lengths.
    asked = xxhash.xxh3_128_digest(b"".join([place.digest for place in known]))
    found = _FOUND.get(status)
    if found is not None and found[0] == asked:
        return found[1]
    result = _Ends(handle.fileno(), known, st.st_size).found()
    # Written while it was hashed, the file has another status: this one is not asked for.
    if len(_FOUND) >= _KEPT:
        del _FOUND[next(iter(_FOUND))]
    _FOUND[status] = (asked, result)
    return result


class _Ends:
    """The chunks of a file's last read hashed in place from its head and from its tail,
    each side stopping at the first that differs or where the other side got to (both
    may take the chunk they meet at: a file of another size then finds it at both ends,
    and `listchunks.recut` takes it once)."""

    def __init__(self, fd: int, known: Sequence[Place], size: int) -> None:
        self.fd, self.known, self.size = fd, known, size
        self.starts = [0, *(place.end for place in known[:-1])]
        self.shift = size - known[-1].end
        self.head = 0  # chunks before this one found at the head
        self.tail = len(known)  # chunks from this one on found at the tail

    def found(self) -> Found:
        """Return what both sides found; raises OSError."""
        failed: list[OSError] = []
        if self.size < _BOTH_AT_ONCE:
            self._from_head()
            self._from_tail()
        else:
            tail = threading.Thread(target=self._guarded, args=(failed,), daemon=True)
            tail.start()
            try:
                self._from_head()
            finally:
                tail.join()
        if failed:
            raise failed[0]
        if self.shift == 0 and self.head >= self.tail:  # they met: the file as it was
            return Found(len(self.known), 0)
        return Found(self.head, len(self.known) - self.tail)

    def _guarded(self, failed: list[OSError]) -> None:
        try:
            self._from_tail()
        except OSError as exc:
            failed.append(exc)

    def _from_head(self) -> None:
        import xxhash

        with FileBytes(self.fd, self.size) as read:
            for index, place in enumerate(self.known):
                if index >= self.tail or place.end > self.size:
                    return
                if xxhash.xxh3_128_digest(read.view(self.starts[index], place.end)) != place.digest:
                    return
                self.head = index + 1

    def _from_tail(self) -> None:
        import xxhash

        with FileBytes(self.fd, self.size) as read:
            for index in range(len(self.known) - 1, -1, -1):
                start, place = self.starts[index] + self.shift, self.known[index]
                if index < self.head or start < 0:
                    return
                if xxhash.xxh3_128_digest(read.view(start, place.end + self.shift)) != place.digest:
                    return
                self.tail = index
