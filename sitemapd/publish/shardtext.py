"""A shard's document to store, and what gives its manifest: as the first load spooled
it, as published with the few members changed since spliced in, or rendered from the
ledger."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice

from sitemapd.core import logs
from sitemapd.ledger.edits import Edit
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.spool import SpooledShard
from sitemapd.publish.atomic import Unsynced
from sitemapd.publish.manifest import Reader, lines_of, shard_rows
from sitemapd.publish.manifestfile import (
    encode,
    manifest_name,
    repack,
    splice,
    unpack,
    with_header,
)
from sitemapd.publish.splicefile import found_lines
from sitemapd.publish.store import LocalStore, Record
from sitemapd.render.extensions import without_alternates
from sitemapd.render.sitemap import URLSET_HEAD, column_entries, plain_urlset, url_entry, urlset

log = logs.Logger("sitemapd.publish")


def shard_document(
    ledger: Ledger, shard_id: int, spooled: SpooledShard | None, reader: Reader, manifest: bool
) -> tuple[bytes, Callable[[], bytes] | None]:
    """Return the document of shard `shard_id`, as `spooled` (read, then deleted) or else
    rendered from the ledger, and, with `manifest`, what gives its manifest file."""
    if spooled is not None:
        try:
            document = spooled.path.read_bytes()
            spooled.path.unlink()
        except OSError as exc:
            log.debug("%s: rendered from the ledger instead (%s)", spooled.path, exc)
        else:
            return document, partial(
                reader.spooled, spooled.manifest, shard_id
            ) if manifest else None
    if not ledger.shard_has_extras(shard_id):
        document, text = plain_shard(ledger.conn, shard_id, manifest)
        # The manifest is compressed by the thread that stores the shard.
        return document, None if text is None else partial(encode, text)
    file_of = reader.ahead(shard_id) if manifest else None  # read as this renders
    return extended_shard(ledger, shard_id), file_of


def plain_shard(
    conn: sqlite3.Connection, shard_id: int, manifest: bool
) -> tuple[bytes, str | None]:
    """Return the document of shard `shard_id` of plain entries (the ledger open on
    `conn`) and, with `manifest`, the lines of its manifest (else None): both from one
    read of its rows. A second read, on a connection of its own, cost more than the
    formatting it spares."""
    lines: list[str] = []

    def texts() -> Iterator[str]:
        # A thousand entries at a time: the rows of a shard are never all held.
        for rows in shard_rows(conn, shard_id):
            if manifest:
                lines.append(lines_of(rows))
            yield column_entries([row[0] for row in rows], [row[1] for row in rows])

    document = b"".join(text.encode() for text in plain_urlset(texts()))
    return document, "\n".join(filter(None, lines)) if manifest else None


def extended_shard(ledger: Ledger, shard_id: int) -> bytes:
    """Return the document of shard `shard_id` whose members carry alternates or images,
    without alternates that left, rendered in pieces of a thousand entries."""
    rows: Iterable[tuple[str, str, str | None]] = ledger.shard_rows(shard_id)
    unlisted = ledger.unlisted_alternates(shard_id)
    if unlisted:
        rows = (
            (loc, lastmod, extra and without_alternates(extra, unlisted))
            for loc, lastmod, extra in rows
        )
    entries = urlset(rows, extended=True)
    texts = ("".join(batch) for batch in iter(lambda: list(islice(entries, 1000)), []))
    return b"".join(text.encode() for text in texts)


# A shard with more members changed than this since its publish is rendered in full: the
# splice looks each one up in the published bytes.
SPLICED_MOST = 2000
_HEAD = URLSET_HEAD.encode()


def spliced_shard(
    ledger: Ledger,
    store: LocalStore,
    shard_id: int,
    name: str,
    record: Record | None,
    reader: Reader,
) -> tuple[bytearray | Unsynced, Callable[[], bytes], str] | None:
    """Return the document of plain shard `shard_id` (stored as `name`, published as
    `record`) made of its published bytes with the entries of the members changed since
    spliced in, what gives its manifest, and the document's digest (`docdigest.of`); None
    when it must be rendered in full (see edits.py; its stored bytes are not those
    published, an entry is not found). A document of other bytes than those published is
    the temp file it was written to as the published ones were read (splicefile.py).

    Byte for byte what `plain_shard` renders: a plain shard is its members' entries in
    order, and only these members changed."""
    if record is None or name.endswith(".gz"):
        return None
    edits = ledger.edits.of(shard_id, SPLICED_MOST)
    if edits is None or ledger.shard_has_extras(shard_id):
        return None
    changes = [
        (url_entry(e.loc, e.old_lastmod).encode(), url_entry(e.loc, e.lastmod).encode())
        for e in edits
    ]
    spliced = store.spliced(name, _HEAD, changes, record[0])
    if spliced is None:
        return None
    # Its manifest on the reader's thread, while the shard's temp file is synced.
    members = ledger.conn.execute("SELECT url_count FROM shards WHERE id = ?", (shard_id,))
    full = partial(reader.file, shard_id)
    manifest = reader.soon(
        partial(_spliced_manifest, store, name, edits, members.fetchone()[0], full, spliced.numbers)
    )
    log.debug("%s: %d changed entries spliced into its published bytes", name, len(edits))
    return spliced.document, manifest, spliced.digest


def _spliced_manifest(
    store: LocalStore,
    name: str,
    edits: list[Edit],
    members: int,
    full: Callable[[], bytes],
    numbers: list[int],
) -> bytes:
    """Return the manifest file of shard `name`: the published one with the lines of
    `edits` (rows `numbers`, as in the shard) replaced, when it holds a line for each of
    its `members` and the lines of `edits` as published; else `full()`, read from the
    ledger."""
    stored = store.read(manifest_name(name))
    lines = [
        (
            f"{e.loc}\t{e.old_fp}\t{e.old_lastmod}\t{e.old_raw}\n".encode(),
            f"{e.loc}\t{e.fp}\t{e.lastmod}\t{e.raw}\n".encode(),
        )
        for e in edits
    ]
    if stored is not None and all(len(old) == len(new) for old, new in lines):
        # Each line where it was: its member alone is inflated and packed again.
        rows = [(n, old, new) for n, (old, new) in zip(numbers, lines, strict=True)]
        spliced = splice(stored, rows, members)
        if spliced is not None:
            log.debug("%s: %d manifest lines spliced into their members", name, len(rows))
            return spliced
    packed = None if stored is None else unpack(stored)
    if packed is None or packed.rows.count(b"\n") != members:
        log.debug("%s: its manifest is read from the ledger (the stored one differs)", name)
        return full()
    places = _places(packed.rows, [old for old, _ in lines])
    if places is None:
        log.debug("%s: its manifest is read from the ledger (a changed line differs)", name)
        return full()
    # Lines of other lengths move the line ends after them, and maybe where members end.
    changes = [(at, old, new) for at, (old, new) in zip(places, lines, strict=True)]
    return with_header(repack(packed, _replaced(packed.rows, changes)))


def _places(text: bytes, lines: Sequence[bytes]) -> list[int] | None:
    """Return where each of the whole `lines` (each ending in a newline) starts in `text`,
    each found after the one before; None when one is not."""
    places = found_lines(text, 0, len(text), lines)
    return places if len(places) == len(lines) else None


def _replaced(text: bytes | bytearray, changes: Sequence[tuple[int, bytes, bytes]]) -> bytes:
    """Return `text` with the bytes `old` at each offset of `changes` (in order, apart)
    replaced by `new`."""
    view = memoryview(text)  # its slices copy nothing: the join alone copies the text
    pieces: list[bytes | memoryview] = []
    done = 0
    for at, old, new in changes:
        pieces += (view[done:at], new)
        done = at + len(old)
    pieces.append(view[done:])
    return b"".join(pieces)
