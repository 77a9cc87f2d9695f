"""URL list source: the sitemaps.org text format, one URL a line.

A line may add a tab and a W3C datetime: the URL's own lastmod. A line whose datetime
moves forward is a change. Blank lines and lines starting with `#` are ignored; of a URL
listed twice, its last line counts. The file is not read again while its size, mtime and
inode stay the same; when they change, only the chunks of the file the ledger does not
know are parsed (listchunks.py), unless the change is too big or a URL of a changed
chunk is listed elsewhere too: then the whole file is.
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
from sitemapd.ledger import KnownChunk, Ledger
from sitemapd.sources.base import Scan, log, reported

if TYPE_CHECKING:
    from sitemapd.sources.listchunks import LineParser


def scan(source: UrlListSource, policy: URLPolicy, ledger: Ledger) -> Scan:
    """Return a scan of the list, empty and incomplete when the file is unchanged."""
    try:
        handle = open(source.path, "rb")  # noqa: SIM115 - closed by the generator
        key = file_key(os.fstat(handle.fileno()))
    except OSError as exc:
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    cursor = f"urllist:{source.name}"
    if ledger.cursor(cursor) == key:
        handle.close()
        return Scan(source.name, iter(()), complete=False)
    items = _items(source, policy, ledger, handle, key)
    return Scan(source.name, items, complete=True, cursors={cursor: key})


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
    from sitemapd.sources.listchunks import cut

    digests = Counter(chunk.digest for chunk in known)
    rejecting = {chunk.digest for chunk in known if chunk.rejects}
    counts = {chunk.digest: chunk.lines for chunk in known if chunk.lines is not None}
    size = os.fstat(handle.fileno()).st_size
    items: list[Item] = []
    new_locs: list[str] = []
    present: set[bytes] = set()
    new_bytes = 0
    for chunk in cut(handle, counts):
        present.add(chunk.digest)
        is_new = chunk.digest not in digests
        if is_new:
            new_bytes += len(chunk.data)
            if new_bytes * 2 > size:
                log.info("%s: most of the list changed: reading it whole", source.name)
                return None
        elif chunk.digest not in rejecting:
            items.append(ListChunk(source.name, chunk.pos, chunk.first_line, chunk.digest, None))
            continue
        parsed = parser.parse(chunk.data, chunk.first_line, chunk.lines)
        items += map(reported, parsed.rejects)
        lines = parsed.lines if is_new else None
        new_locs += [loc for loc, _ in parsed.lines] if is_new else []
        items.append(
            ListChunk(
                source.name, chunk.pos, chunk.first_line, chunk.digest, lines, len(parsed.rejects)
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
