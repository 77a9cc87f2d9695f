"""URL list source: the sitemaps.org text format, one URL a line.

A line may add a tab and a W3C datetime: the URL's own lastmod. A line whose datetime
moves forward is a change. Blank lines and lines starting with `#` are ignored; of a URL
listed twice, its last line counts. The file is not read again while its size, mtime and
inode stay the same; when they change but its digest does not (a `touch`, an export that
wrote the same bytes), it is not parsed either. Otherwise only the chunks of the file the
ledger does not know are parsed (listchunks.py), unless the change is too big or a URL
of a changed chunk is listed elsewhere too: then the whole file is.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from sitemapd.config.sources import UrlListSource
from sitemapd.core.observation import Item, ListChunk, file_key
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import SourceError
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.lists import KnownChunk
from sitemapd.sources.base import Scan, log, reported

if TYPE_CHECKING:
    from sitemapd.sources.listchunks import LineParser

# Bytes of the list hashed, then handed back, at a time (clean file pages count as
# resident until then: a 10M-line list is 800 MB).
_PIECE = 8 << 20


def scan(source: UrlListSource, policy: URLPolicy, ledger: Ledger) -> Scan:
    """Return a scan of the list, empty and incomplete when the file is unchanged."""
    try:
        handle = open(source.path, "rb")  # noqa: SIM115 - closed by the generator
        key = file_key(os.fstat(handle.fileno()))
    except OSError as exc:
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    # The cursor: the file's key, then the digest of its bytes.
    cursor = f"urllist:{source.name}"
    known_key, _, known_digest = (ledger.cursor(cursor) or "").partition(" ")
    if known_key == key:
        handle.close()
        return Scan(source.name, iter(()), complete=False)
    try:
        digest = _digest(handle)
    except OSError as exc:
        handle.close()
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    state = {cursor: f"{key} {digest}"}
    if digest == known_digest:
        handle.close()
        return Scan(source.name, iter(()), complete=False, cursors=state)
    return Scan(source.name, _items(source, policy, ledger, handle, key), True, state)


def _digest(handle: BinaryIO) -> str:
    """Return the xxh3-128 of the bytes of the open file `handle`, in hex."""
    import mmap

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


def _items(
    source: UrlListSource, policy: URLPolicy, ledger: Ledger, handle: BinaryIO, key: str
) -> Iterator[Item]:
    # Imported on a read: an unchanged list (the common build) needs no chunking, no
    # parser and no worker.
    from sitemapd.sources.listchunks import LineParser

    parser = LineParser(source.name, policy)
    try:
        known = ledger.list_chunks(source.name)
        changed = _changed_chunks(source, parser, ledger, handle, known) if known else None
        yield from _every_chunk(source, parser, handle) if changed is None else changed
        try:
            unchanged = file_key(os.stat(source.path)) == key
        except OSError:
            unchanged = False
        if not unchanged:
            # Being rewritten in place: what we read may be a fraction of the list.
            raise SourceError(
                f"{source.name}: {source.path} changed while being read; it will be read "
                "again (write the list to a temporary file and rename it into place)"
            )
    finally:
        handle.close()


def _every_chunk(source: UrlListSource, parser: LineParser, handle: BinaryIO) -> Iterator[Item]:
    from sitemapd.sources.listworker import parsed_chunks

    for chunk in parsed_chunks(parser, handle):
        for reject in chunk.parsed.rejects:
            yield reported(reject)
        yield ListChunk(
            source.name,
            chunk.pos,
            chunk.first_line,
            chunk.digest,
            chunk.end,
            chunk.parsed.lines,
            len(chunk.parsed.rejects),
        )


def _changed_chunks(
    source: UrlListSource,
    parser: LineParser,
    ledger: Ledger,
    handle: BinaryIO,
    known: list[KnownChunk],
) -> list[Item] | None:
    """Return the items of a re-read that parses only the chunks the ledger does not
    know (and those holding rejected lines, whose line numbers may have moved); None
    when the whole file must be read."""
    from sitemapd.sources.listchunks import Place, cut, recut

    digests = Counter(chunk.digest for chunk in known)
    rejecting = {chunk.digest for chunk in known if chunk.rejects}
    # Chunks read again (for their rejects' line numbers) need their bytes.
    counts = {
        chunk.digest: chunk.lines
        for chunk in known
        if chunk.lines is not None and chunk.digest not in rejecting
    }
    size = os.fstat(handle.fileno()).st_size
    items: list[Item] = []
    new_locs: list[str] = []
    present: set[bytes] = set()
    new_bytes = 0
    places = [Place(chunk.digest, chunk.end) for chunk in known if chunk.end is not None]
    # Chunks recorded before their ends were: the whole file is cut.
    chunks = recut(handle, places, counts) if len(places) == len(known) else cut(handle, counts)
    for chunk in chunks:
        present.add(chunk.digest)
        is_new = chunk.digest not in digests
        if is_new:
            new_bytes += len(chunk.data)
            if new_bytes * 2 > size:
                log.info("%s: most of the list changed: reading it whole", source.name)
                return None
        elif chunk.digest not in rejecting:
            items.append(
                ListChunk(source.name, chunk.pos, chunk.first_line, chunk.digest, chunk.end, None)
            )
            continue
        parsed = parser.parse(chunk.data, chunk.first_line, chunk.lines)
        items += map(reported, parsed.rejects)
        lines = parsed.lines if is_new else None
        new_locs += [loc for loc, _ in parsed.lines] if is_new else []
        items.append(
            ListChunk(
                source.name,
                chunk.pos,
                chunk.first_line,
                chunk.digest,
                chunk.end,
                lines,
                len(parsed.rejects),
            )
        )
    removed = [digest for digest in digests if digest not in present]
    if ledger.list_conflicts(source.name, new_locs, removed):
        log.info("%s: a changed URL is listed more than once: reading the whole list", source.name)
        return None
    log.info(
        "%s: %d of %d chunks changed (%d bytes of %d): %d lines parsed",
        source.name,
        sum(1 for item in items if isinstance(item, ListChunk) and item.lines is not None),
        sum(1 for item in items if isinstance(item, ListChunk)),
        new_bytes,
        size,
        len(new_locs),
    )
    return items
