"""The publish manifest: each published URL's fingerprint, lastmod and file hash, so that
a ledger that lacks them (a publisher taking over, a lost state folder) keeps every
lastmod that was published.

Daemons watching copies of the same content see the same fingerprints but may have
first seen a URL at different times; the lastmod of a URL whose fingerprint matches the
manifest is the published one, and a takeover moves none of them. A file read byte for
byte as when it was published matches too, whatever the fingerprint settings now.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from sitemapd.errors import LedgerError
from sitemapd.ledger.schema import LIVE, source_time
from sitemapd.publish.manifestfile import Row, encode

if TYPE_CHECKING:
    from sitemapd.core.workers import Workers
    from sitemapd.ledger.ledger import Ledger

# The cursor naming the manifest format every published shard has a manifest in.
WRITTEN = "manifests_written"
# The cursor that keeps, for `status`, how many lastmods the last adoption moved, and when.
ADOPTED = "adopted_lastmods"

# What identifies a URL's content across machines: its fingerprint, or for a source that
# gives no content, its own timestamp.
_FINGERPRINT = f"coalesce(content_hash, {source_time('')}, '')"
# A URL of the ledger (`{u}`) whose content is as the manifest row `a` says it was
# published: the same fingerprint, or the same file bytes (the fingerprint settings may
# have changed since: they change no lastmod).
_SAME = (
    f"(a.fp = coalesce({{u}}.content_hash, {source_time('{u}')}, '') "
    "OR (a.raw != '' AND a.raw = {u}.bytes_hash))"
)


def shard_manifest(conn: sqlite3.Connection, shard_id: int) -> bytes:
    """Return the manifest file of the live URLs in shard `shard_id` of the ledger open
    on `conn`."""
    # Joined by SQLite, which lets go of the GIL while it steps: a manifest read on a
    # thread of its own costs the rendering thread nothing. The subquery names the columns
    # it needs: each of its rows is copied out whole.
    (lines,) = conn.execute(
        f"SELECT group_concat(loc || char(9) || {_FINGERPRINT} || char(9) || lastmod || "
        "char(9) || coalesce(bytes_hash, ''), char(10)) FROM (SELECT loc, content_hash, "
        "source_time, lastmod, bytes_hash FROM urls WHERE shard = ? AND status = ? "
        "ORDER BY id)",
        (shard_id, LIVE),
    ).fetchone()
    return encode(lines or "")


# `(loc, lastmod, fingerprint, file hash or "", live)` of a shard's member.
ShardRow = tuple[str, str, str, str, int]


def shard_rows(
    conn: sqlite3.Connection, shard_id: int, batch: int = 1000
) -> Iterator[list[ShardRow]]:
    """Yield the members of shard `shard_id` of the ledger open on `conn` in stable order,
    `batch` at a time: what both its document and its manifest are made of."""
    rows = conn.execute(
        f"SELECT loc, lastmod, {_FINGERPRINT}, coalesce(bytes_hash, ''), status = ? FROM urls "
        "WHERE shard = ? ORDER BY id",
        (LIVE, shard_id),
    )
    while taken := rows.fetchmany(batch):
        yield taken


def lines_of(rows: Iterable[ShardRow]) -> str:
    """Return the manifest lines of the live `rows`, joined by newlines (as
    `shard_manifest` joins them)."""
    return "\n".join(
        [f"{loc}\t{fp}\t{lastmod}\t{raw}" for loc, lastmod, fp, raw, live in rows if live]
    )


class Reader:
    """Reads shard manifests through read-only connections of its own, one per thread
    (SQLite reads a committed WAL ledger from any number of connections): on a thread of
    its own while the publishing thread renders the shard, or on the storing threads."""

    def __init__(self, path: Path) -> None:
        self._uri = f"{path.as_uri()}?mode=ro"
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._ahead: Workers | None = None

    def ahead(self, shard_id: int) -> Callable[[], bytes]:
        """Start reading the manifest file of shard `shard_id` on the reader's thread;
        return what waits for it (and raises LedgerError)."""
        return self.soon(partial(self.file, shard_id))

    def soon(self, job: Callable[[], bytes]) -> Callable[[], bytes]:
        """Start `job` (which gives a manifest file) on the reader's thread; return what
        waits for it (and raises what it raises)."""
        if self._ahead is None:
            # Loaded here: `status` imports this module for a cursor's name.
            from sitemapd.core.workers import Workers

            self._ahead = Workers(1, "sitemapd-manifest")
        return self._ahead.submit(job).result

    def file(self, shard_id: int) -> bytes:
        """Return the manifest file of shard `shard_id`. Raises LedgerError."""
        try:
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
                self._local.conn = conn
                with self._lock:
                    self._conns.append(conn)
            return shard_manifest(conn, shard_id)
        except sqlite3.Error as exc:
            raise LedgerError(
                f"{self._uri}: cannot read the manifest of shard {shard_id} ({exc})"
            ) from exc

    def spooled(self, path: Path, shard_id: int) -> bytes:
        """Return the manifest file a first load spooled for shard `shard_id` at `path`
        (read here, on the storing thread, then deleted), or the ledger's when it cannot
        be read. Raises LedgerError."""
        try:
            data = path.read_bytes()
        except OSError:
            return self.file(shard_id)
        path.unlink(missing_ok=True)
        return data

    def close(self) -> None:
        """Wait for the reads started, then close every connection (once the threads that
        used them are done)."""
        if self._ahead is not None:
            self._ahead.close()
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()


def adopt(ledger: Ledger, rows: Iterable[Row]) -> int:
    """Give each live URL whose fingerprint (or file hash) matches a manifest row that
    row's lastmod, re-dating and marking dirty the shards touched; return how many moved."""
    conn = ledger.conn
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return 0
    rows = chain([first], rows)
    with ledger.transaction():
        # No key: appended as read, then scanned once, each row finding its URL through
        # the ledger's unique loc index (a URL is in one shard, so in one manifest).
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS adopted (loc TEXT, fp, lastmod, raw)")
        conn.execute("DELETE FROM temp.adopted")
        conn.executemany("INSERT INTO temp.adopted VALUES (?, ?, ?, ?)", rows)
        shards = [
            shard
            for (shard,) in conn.execute(
                f"SELECT DISTINCT u.shard FROM urls u JOIN temp.adopted a ON a.loc = u.loc "
                f"WHERE u.status = ? AND {_SAME.format(u='u')} AND u.lastmod != a.lastmod",
                (LIVE,),
            )
        ]
        moved = conn.execute(
            f"UPDATE urls SET lastmod = a.lastmod, source_time = {source_time()} "
            "FROM temp.adopted a WHERE a.loc = urls.loc "
            f"AND urls.status = ? AND {_SAME.format(u='urls')} AND a.lastmod != urls.lastmod",
            (LIVE,),
        ).rowcount
        conn.executemany(
            "UPDATE shards SET dirty = 1, lastmod = coalesce((SELECT max(lastmod) FROM urls "
            "WHERE shard = shards.id AND status = ?), lastmod) WHERE id = ?",
            [(LIVE, shard) for shard in shards if shard is not None],
        )
        conn.execute("DELETE FROM temp.adopted")
    return int(moved)
