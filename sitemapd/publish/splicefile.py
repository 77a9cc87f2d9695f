"""A published plain shard streamed into its successor: read a buffer's worth of whole
lines at a time (`core/fileread.py`, whose buffer the list's read left), checked against
the digest its record holds, its changed entries replaced, and written to a temp file
beside it as it goes. Read whole into fresh memory, a 6 MB shard cost about 1,500 page
faults (5 ms of a VM's CPU) before a byte of it was compared."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from sitemapd.core import docdigest
from sitemapd.core.fileread import FileBytes
from sitemapd.publish.atomic import Unsynced

# An entry's start: its row number in the shard's manifest is how many come before it.
_ENTRY = b"<url>"
_NEWLINE = ord("\n")


class Spliced:
    """A shard's new document and what the splice found of it."""

    __slots__ = ("digest", "document", "numbers")

    # The published bytes themselves when no entry changes them, else the temp file
    # written with the new document.
    document: bytearray | Unsynced
    digest: str  # `docdigest.of` of the new document
    numbers: list[int]  # the entry number (from 0) of each change, in order

    def __init__(self, document: bytearray | Unsynced, digest: str, numbers: list[int]) -> None:
        self.document = document
        self.digest = digest
        self.numbers = numbers


def spliced(
    handle: io.FileIO,
    head: bytes,
    changes: Sequence[tuple[bytes, bytes]],
    recorded: str,
    temp: Callable[[], Unsynced],
) -> Spliced | None:
    """Return the document of the published shard open as `handle` with each entry `old`
    of `changes` (whole lines, in order) replaced by its `new`, written to the temp file
    `temp()` gives unless no entry changes; None when the shard does not start with `head`,
    its bytes are not those `recorded` (a digest, see `docdigest`), an entry is not found
    after the one before where a line starts, or the shard cannot be read (no temp file
    is left then). Raises PublishError when the temp file cannot be written."""
    size = _size(handle)
    same = all(old == new for old, new in changes)
    out = None if same else temp()
    try:
        found = _streamed(handle.fileno(), size, head, changes, recorded, out)
    except OSError:  # cut short, or unreadable
        found = None
    except BaseException:
        if out is not None:
            out.discard()
        raise
    if found is None:
        if out is not None:
            out.discard()
        return None
    kept, digest, numbers = found
    return Spliced(kept if out is None else out, digest, numbers)


def _size(handle: io.FileIO) -> int:
    handle.seek(0, 2)
    return handle.tell()


def _streamed(
    fd: int,
    size: int,
    head: bytes,
    changes: Sequence[tuple[bytes, bytes]],
    recorded: str,
    out: Unsynced | None,
) -> tuple[bytearray, str, list[int]] | None:
    """Stream the `size` bytes of `fd` into `out` with `changes` made (else keep them:
    then no entry changes them); return the bytes kept (none with `out`), the new
    document's digest and the changes' entry numbers, or None (see `spliced`). Raises
    OSError when the file cannot be read."""
    check = docdigest.checker(recorded)
    # The document's digest: a copy of the check's where they part when it is of the same
    # kind (the bytes before the first change are hashed once), else taken throughout.
    digest = None if docdigest.is_current(recorded) else docdigest.hasher()
    kept = bytearray(size if out is None else 0)
    numbers: list[int] = []
    entries = 0  # entries before `pos`
    pos = 0
    with FileBytes(fd, size) as read:
        while pos < size:
            buffer, lo, hi = read.lines(pos)
            if pos == 0 and not buffer.startswith(head, lo, hi):
                return None
            left = changes[len(numbers) :]
            places = found_lines(buffer, lo, hi, [old for old, _ in left])
            found = [(at, *change) for at, change in zip(places, left, strict=False)]
            view = memoryview(buffer)
            done = lo  # entries counted up to here
            for at, _, _ in found:
                entries += buffer.count(_ENTRY, done, at)
                numbers.append(entries)
                done = at
            if len(numbers) < len(changes):  # (counting the rest costs 3 instructions a byte)
                entries += buffer.count(_ENTRY, done, hi)
            if found and digest is None and out is not None:
                digest = check.copy()
            check.update(view[lo:hi])
            if out is not None:
                for piece in _pieces(view, lo, hi, found):
                    if digest is not None:
                        digest.update(piece)
                    out.write(piece)
            else:
                kept[pos : pos + hi - lo] = view[lo:hi]
                if digest is not None:
                    digest.update(view[lo:hi])
            pos += hi - lo
    if len(numbers) < len(changes) or check.hexdigest() != recorded:
        return None
    return kept, (digest or check).hexdigest(), numbers


def found_lines(text: bytes | bytearray, lo: int, hi: int, lines: Sequence[bytes]) -> list[int]:
    """Return where the first of the whole `lines` (each ending in a newline) start in
    bytes `lo` to `hi` of `text` (`lo` starting a line), each found after the one before:
    as many as are found so."""
    places: list[int] = []
    done = lo
    for line in lines:
        at = text.find(line, done, hi)
        while at > lo and text[at - 1] != _NEWLINE:  # inside a line: not it
            at = text.find(line, at + 1, hi)
        if at < 0:
            break
        places.append(at)
        done = at + len(line)
    return places


def _pieces(
    view: memoryview, lo: int, hi: int, found: Sequence[tuple[int, bytes, bytes]]
) -> list[memoryview | bytes]:
    """Return bytes `lo` to `hi` of `view` with the `found` entries replaced, in pieces."""
    pieces: list[memoryview | bytes] = []
    done = lo
    for at, old, new in found:
        pieces += (view[done:at], new)
        done = at + len(old)
    pieces.append(view[done:hi])
    return pieces
