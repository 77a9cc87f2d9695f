"""URL list source: the sitemaps.org text format, one URL a line.

A line may add a tab and a W3C datetime: the URL's own lastmod. A line whose datetime
moves forward is a change. Blank lines and lines starting with `#` are ignored; of a URL
listed twice, its last line counts. The file is not read again while its size, mtime and
inode stay the same; when they change but its digest does not (a `touch`, an export that
wrote the same bytes), it is not parsed either: the chunks the ledger knows, hashed in
place, say so in the same read that finds the changed ones. Otherwise only the chunks of
the file the ledger does not know are parsed (listchunks.py), unless the change is too
big or a URL of a changed chunk is listed elsewhere too: then the whole file is.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from sitemapd.config.sources import UrlListSource
from sitemapd.core import logs
from sitemapd.core.filedigest import Place, file_digest, matching, open_regular
from sitemapd.core.fileread import FileShrank
from sitemapd.core.observation import Item, ListChunk, file_key
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import SourceError
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.listqueries import KnownChunk
from sitemapd.sources.base import Scan, log, reported

if TYPE_CHECKING:
    from sitemapd.sources.listchunks import LineParser

# New chunks' bytes a re-read parses and holds at most; past them it reads the whole list,
# as a first read does, a chunk at a time. The lines held grow with the change (45% of a
# million-line list re-dated took 255 MB by chunks); a whole read costs a staging of every
# line instead (150,000 lines of a million re-dated: 8.3 s whole, 3.0 s by chunks, which
# held 100 MB at their peak). 12 MiB are some 150,000 lines.
PARSED_MOST = 12 << 20


def scan(source: UrlListSource, policy: URLPolicy, ledger: Ledger, now: str) -> Scan:
    """Return a scan of the list read at `now`, empty and incomplete when the file is
    unchanged."""
    handle = _open(source)
    key = file_key(os.fstat(handle.fileno()))
    # The cursor: the file's key, then the digest of its bytes (or of its chunks').
    cursor = f"urllist:{source.name}"
    known_key, _, known_digest = (ledger.cursor(cursor) or "").partition(" ")
    if known_key == key:
        handle.close()
        return Scan(source.name, iter(()), complete=False)
    try:
        known = ledger.list_chunks(source.name)
        places = _places(known)
        # One read of the bytes: the known chunks hashed in place say whether anything
        # changed (a `touch`, an export that wrote the same bytes), and what did.
        verified = 0 if places is None else matching(handle, places)
        if known and verified == len(known):
            handle.close()
            _check_key(source, key)
            state = {cursor: f"{key} {_chunks_digest([chunk.digest for chunk in known])}"}
            return Scan(source.name, iter(()), complete=False, cursors=state)
        changed = _changed_chunks(source, ledger, handle, policy, known, places) if known else None
        if changed is not None:
            size = os.fstat(handle.fileno()).st_size
            handle.close()
            _check_key(source, key)
            digests = [item.digest for item in changed if isinstance(item, ListChunk)]
            state = {cursor: f"{key} {_chunks_digest(digests)}"}
            # Chunks recorded before their ends were are recorded again, with them: the
            # next read (and a quiet build's note) can then hash them in place.
            if _same_chunks(changed, known) and all(chunk.end is not None for chunk in known):
                return Scan(source.name, iter(()), complete=False, cursors=state)
            _log_chunks(source, changed, size)
            return Scan(source.name, iter(changed), True, state)
        digest = file_digest(handle)
    except FileShrank as exc:
        handle.close()
        raise _changed(source) from exc
    except OSError as exc:
        handle.close()
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    except BaseException:
        handle.close()
        raise
    state = {cursor: f"{key} {digest}"}
    if digest == known_digest:
        handle.close()
        return Scan(source.name, iter(()), complete=False, cursors=state)
    return Scan(source.name, _items(source, policy, handle, key, now), True, state)


def _open(source: UrlListSource) -> BinaryIO:
    """Return the list's file, open for reading; raises SourceError when it cannot be
    read or is not a regular file."""
    try:
        handle = open_regular(source.path)
    except OSError as exc:
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    if handle is None:
        # Its size says nothing of what it holds: read as one, a pipe is an empty list.
        raise SourceError(f"{source.name}: {source.path} is not a regular file")
    return handle


def _chunks_digest(digests: list[bytes]) -> str:
    """Return the digest of a file read by chunks of `digests`, in order: their xxh3-128,
    in hex, marked `c` (the whole file's has no mark)."""
    import xxhash

    return "c" + xxhash.xxh3_128_hexdigest(b"".join(digests))


def _places(known: list[KnownChunk]) -> list[Place] | None:
    """Return where each of the `known` chunks ends and its digest; None when one was
    recorded without its end."""
    places = [Place(chunk.digest, chunk.end) for chunk in known if chunk.end is not None]
    return places if len(places) == len(known) else None


def _same_chunks(items: list[Item], known: list[KnownChunk]) -> bool:
    """True when the chunks read (`items`) are those `known`, in order: the same bytes."""
    chunks = [item for item in items if isinstance(item, ListChunk)]
    return len(chunks) == len(known) and all(
        chunk.digest == was.digest and (was.end is None or chunk.end == was.end)
        for chunk, was in zip(chunks, known, strict=True)
    )


def _check_key(source: UrlListSource, key: str) -> None:
    """Raise SourceError unless the list's file still has `key`: rewritten in place while
    being read, what was read may be a fraction of the list."""
    try:
        unchanged = file_key(os.stat(source.path)) == key
    except OSError:
        unchanged = False
    if not unchanged:
        raise _changed(source)


def _changed(source: UrlListSource) -> SourceError:
    """Return the error of a list rewritten in place while it was read."""
    return SourceError(
        f"{source.name}: {source.path} changed while being read; it will be read "
        "again (write the list to a temporary file and rename it into place)"
    )


def _items(
    source: UrlListSource, policy: URLPolicy, handle: BinaryIO, key: str, now: str
) -> Iterator[Item]:
    # Imported on a read: an unchanged list (the common build) needs no parser and no
    # worker.
    from sitemapd.sources.listchunks import LineParser

    try:
        yield from _every_chunk(source, LineParser(source.name, policy, now), handle)
        _check_key(source, key)
    except FileShrank as exc:
        raise _changed(source) from exc
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
    ledger: Ledger,
    handle: BinaryIO,
    policy: URLPolicy,
    known: list[KnownChunk],
    places: list[Place] | None,
) -> list[Item] | None:
    """Return the items of a re-read that parses only the chunks the ledger does not
    know (and those holding rejected lines, whose line numbers may have moved), given
    their `places` (see `_places`); None when the whole file must be read."""
    from sitemapd.sources.listchunks import LineParser, cut, recut

    parser: LineParser | None = None  # compiled for the first chunk parsed

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
    present: Counter[bytes] = Counter()
    kept: list[bytes] = []  # the known chunks found, in their order now
    new_bytes = 0
    # Chunks recorded before their ends were: the whole file is cut.
    chunks = cut(handle, counts) if places is None else recut(handle, places, counts)
    for chunk in chunks:
        present[chunk.digest] += 1
        is_new = chunk.digest not in digests
        if is_new:
            new_bytes += len(chunk.data)
            if new_bytes * 2 > size or new_bytes > PARSED_MOST:
                log.info(
                    "%s: %s of the list changed: reading it whole",
                    source.name,
                    "most" if new_bytes * 2 > size else f"more than {PARSED_MOST:,} bytes",
                )
                return None
        else:
            kept.append(chunk.digest)
            if chunk.digest not in rejecting:
                items.append(
                    ListChunk(
                        source.name, chunk.pos, chunk.first_line, chunk.digest, chunk.end, None
                    )
                )
                continue
        parser = parser or LineParser(source.name, policy)
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
    if any(present[digest] not in (0, count) for digest, count in digests.items()):
        # A block of lines the list holds more than once gained or lost a copy: its URLs'
        # last lines may be another chunk's now, and which URLs the list repeats is known
        # of the lines a read parsed alone.
        log.info("%s: a repeated block gained or lost a copy: reading it whole", source.name)
        return None
    removed = [digest for digest in digests if digest not in present]
    if (new_locs or removed) and ledger.list_conflicts(source.name, new_locs, removed):
        log.info("%s: a changed URL is listed more than once: reading the whole list", source.name)
        return None
    if _reordered(known, kept) and ledger.list_repeats(source.name):
        # A URL listed twice takes its last line: which one that is may have changed
        # with no line of it parsed.
        log.info("%s: chunks moved in a list that repeats URLs: reading it whole", source.name)
        return None
    return items


def _reordered(known: list[KnownChunk], kept: list[bytes]) -> bool:
    """True when the chunks of the last read found again (`kept`, in their order now)
    stand in another order than they did."""
    left = Counter(kept)
    before: list[bytes] = []
    for chunk in known:
        if left[chunk.digest]:
            left[chunk.digest] -= 1
            before.append(chunk.digest)
    return before != kept


def _log_chunks(source: UrlListSource, items: list[Item], size: int) -> None:
    """Log what a re-read by chunks parsed."""
    if not log.isEnabledFor(logs.INFO):  # what it sums is not looked at
        return
    chunks = [item for item in items if isinstance(item, ListChunk)]
    # Each chunk starts where the one before it ended (none: an emptied list).
    starts = [0, *(chunk.end for chunk in chunks)][: len(chunks)]
    parsed = [
        (chunk, start)
        for chunk, start in zip(chunks, starts, strict=True)
        if chunk.lines is not None
    ]
    log.info(
        "%s: %d of %d chunks changed (%d bytes of %d): %d lines parsed",
        source.name,
        len(parsed),
        len(chunks),
        sum(chunk.end - start for chunk, start in parsed),
        size,
        sum(len(chunk.lines or ()) for chunk, _ in parsed),
    )
