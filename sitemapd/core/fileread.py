"""A file's bytes read by offset into one reused buffer, never mapped.

A mapped file that another process truncates kills the reader: touching a page past the
new end raises SIGBUS, which Python cannot catch. URL lists are often rewritten in place
(`>` in a shell, an export that truncates first) while a build reads them, so the bytes
are copied with `preadv` instead: a file that shrinks gives a short read, `FileShrank`.
"""

from __future__ import annotations

import errno
import os

# Bytes read at a time: two hundred system calls for a million-line list, little memory
# (a 10M-line list is 800 MB), and a quarter of it read twice at most where a 256 KiB
# chunk being cut runs past its end. A buffer's fresh pages cost a page fault each as
# they are first written: a changed line's build hashing its list from both ends took
# 3-4 ms less CPU with 1 MiB than with 2 MiB (a tenth more of the list read twice).
BLOCK = 1 << 20
# Buffers of BLOCK bytes that reads let go of, for the next: a changed line's build reads
# the list from both ends at once, then its changed chunk, then the published shard. Two:
# what two threads read at once.
_SPARE: list[bytearray] = []
_SPARE_MOST = 2


class FileShrank(OSError):
    """The file ended before the bytes asked for: it was truncated while being read."""

    def __init__(self, size: int) -> None:
        super().__init__(errno.ENODATA, f"cut short while being read (it had {size} bytes)")


class FileBytes:
    """The first `size` bytes of an open file (its size when opened), by offset."""

    def __init__(self, fd: int, size: int, block: int = BLOCK) -> None:
        self.fd = fd
        self.size = size
        self._buffer = _taken(size) if block == BLOCK else bytearray(min(block, size))
        self._view = memoryview(self._buffer)
        self._start = 0
        self._end = 0  # the buffer holds bytes `_start` to `_end`

    def view(self, start: int, end: int) -> memoryview:
        """Return bytes `start` to `end` (at most `size`), valid until the next call;
        raises FileShrank (an OSError) when the file no longer holds them."""
        if start < self._start or end > self._end:
            self._fill(start, end)
        return self._view[start - self._start : end - self._start]

    def find_line_end(self, at: int) -> int:
        """Return the offset of the first `\\n` at or after `at`, or -1 when none is
        before `size`; raises FileShrank."""
        while at < self.size:
            if not self._start <= at < self._end:
                self._fill(at, at + 1)
            found = self._buffer.find(b"\n", at - self._start, self._end - self._start)
            if found >= 0:
                return self._start + found
            at = self._end
        return -1

    def lines(self, start: int) -> tuple[bytearray, int, int]:
        """Return the buffer holding the bytes from `start` up to the last line end a
        buffer's worth of them holds (or up to the end of the file), and where they are in
        it: whole lines when `start` starts one, valid and unchanged until the next call.
        A line longer than the buffer is handed back whole. Raises FileShrank."""
        reach = len(self._buffer)
        while True:
            end = min(self.size, start + reach)
            self.view(start, end)
            lo, hi = start - self._start, end - self._start
            if end == self.size:
                return self._buffer, lo, hi
            cut = self._buffer.rfind(b"\n", lo, hi)
            if cut >= 0:
                return self._buffer, lo, cut + 1
            reach *= 2

    def close(self) -> None:
        """Release the buffer (for the next read, if of BLOCK bytes)."""
        self._view.release()
        if len(self._buffer) == BLOCK and len(_SPARE) < _SPARE_MOST:
            _SPARE.append(self._buffer)
        self._buffer = bytearray()
        self._view = memoryview(self._buffer)
        self._start = self._end = 0

    def __enter__(self) -> FileBytes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fill(self, start: int, end: int) -> None:
        """Read a buffer's worth around bytes `start` to `end`: onwards from `start`,
        or back from `end` when reading backwards (a file's tail, chunk by chunk)."""
        if end - start > len(self._buffer):
            self._view.release()
            self._buffer = bytearray(end - start)
            self._view = memoryview(self._buffer)
        length = min(len(self._buffer), self.size)
        first = start if start >= self._start else max(0, end - length)
        first = min(first, self.size - length)
        read = os.preadv(self.fd, [self._view[:length]], first)
        self._start, self._end = first, first + read
        if read < end - first:
            raise FileShrank(self.size)


def _taken(size: int) -> bytearray:
    """Return a buffer for reading a file of `size` bytes: one a read let go of, else a
    new one of BLOCK bytes at most."""
    try:
        return _SPARE.pop()  # atomic: two threads never take the same one
    except IndexError:
        return bytearray(min(BLOCK, size))
