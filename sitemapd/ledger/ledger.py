"""`Ledger`: the URL ledger in one SQLite file, its writer connection and its reads.

Its queries by job live in the modules it is made of (rendering, journal, crawls, lists);
`apply` decides what observations change.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from sitemapd.core import logs, w3c
from sitemapd.core.durable import freeing, fsync_dir
from sitemapd.core.observation import Item
from sitemapd.errors import LedgerError
from sitemapd.ledger.apply import Apply
from sitemapd.ledger.crawls import CrawlRecords
from sitemapd.ledger.journal import JournalQueries
from sitemapd.ledger.listqueries import ListQueries
from sitemapd.ledger.model import (
    ALLOW_ALL,
    ChangeSet,
    KnownFile,
    RobotsRules,
)
from sitemapd.ledger.prime import Primer, wal_is_empty
from sitemapd.ledger.removals import Hold, RemovalGuard, holds
from sitemapd.ledger.rendering import RenderQueries
from sitemapd.ledger.schema import EXCLUDED, LIVE, SEEDED, URL_SELECT, migrate
from sitemapd.ledger.shards import Limits
from sitemapd.ledger.spool import SpooledShard
from sitemapd.ledger.transaction import Transaction
from sitemapd.ledger.writeback import EarlyWriteback
from sitemapd.render.sitemap import entry_size

log = logs.Logger("sitemapd.ledger")
# SQLite's default: the commit that takes the WAL past this many pages copies it back.
_AUTOCHECKPOINT = 1000
# How long a write waits for another connection's lock.
_BUSY_MS = 5000
# Bytes of a new ledger's pages.
_PAGE_SIZE = 16384
# The largest empty ledger copied for the reads during its first load.
_SNAPSHOT_BYTES = 16 << 20


def is_published(conn: sqlite3.Connection, name: str) -> bool:
    """True when the ledger open on `conn` records output file `name` as published.

    For readers in other threads and processes, on a connection of their own.
    """
    row = conn.execute("SELECT 1 FROM published WHERE name = ?", (name,)).fetchone()
    return row is not None


def _create(path: Path) -> None:
    """Create an empty ledger at `path`, whole: made under another name and renamed into
    place, so that a process killed meanwhile leaves no empty file at `path` (which
    would stand for a lost history); raises sqlite3.Error or OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(path.name + ".new")
    for leftover in (fresh, *(fresh.with_name(fresh.name + end) for end in ("-wal", "-shm"))):
        leftover.unlink(missing_ok=True)  # of a creation killed before its rename
    conn = sqlite3.connect(fresh, isolation_level=None)
    try:
        # A new ledger only (an existing one keeps its own): a million-URL first build
        # spends a quarter less on its B-trees in 16 KiB pages than in 4 KiB ones.
        conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
        # Nothing is synced until the file is whole: the switch to WAL and each
        # migration's commit synced (22 syncs, 80 ms of a cold build before its first
        # line was read), and a file killed half-made is never used (deleted above, by the
        # next creation).
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn, path)
    finally:
        conn.close()  # the last connection: the WAL is checkpointed and removed
    _fsync(fresh)
    os.replace(fresh, path)
    fsync_dir(path.parent)


def _fsync(path: Path) -> None:
    """Flush the file `path` to disk; raises OSError."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Ledger(RenderQueries, JournalQueries, CrawlRecords, ListQueries):
    """The URL ledger in one SQLite file. Not thread-safe: one writer at a time."""

    def __init__(self, path: Path, limits: Limits, alone: bool = False) -> None:
        """Open (creating and migrating) the ledger at `path`. `alone`: no other process
        reads it while this one loads an empty ledger (a `build`, not the daemon, whose
        sidecar and metrics read it meanwhile)."""
        self.path = path
        self.limits = limits
        self.alone = alone
        # Shards a first load rendered as it filled them (spool.py), until the next write.
        self.spool_folder = path.with_name(path.name + ".spool")
        self._spooled: dict[int, SpooledShard] = {}
        self._writeback = EarlyWriteback(path)
        if path.is_file() and path.stat().st_size == 0:
            # SQLite would take it for a new database: every lastmod would start over.
            raise LedgerError(
                f"{path} is empty (0 bytes): the ledger's history is lost; to start over, "
                "delete it and run sitemapd again"
            )
        try:
            if not path.exists():
                _create(path)
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode never corrupts; a crash loses at most the last commit,
            # which the next scan observes again.
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self._settings()
            self.conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            migrate(self.conn, path)
            self._checkpointer: threading.Thread | None = None
            # A build's new WAL is started while its sources are read (prime.py).
            started = alone and wal_is_empty(path) and not self.empty()
            self._primer = Primer(path) if started else None
        except (sqlite3.Error, OSError) as exc:
            raise LedgerError(f"{path}: cannot open the ledger ({exc})") from exc

    def close(self) -> None:
        """Close the connections; the ledger file stays consistent at any point."""
        if self._checkpointer is not None:
            self._checkpointer.join()
        if self._reader is not None:
            self._reader.close()
        # The last connection's close deletes the WAL: freed on a thread of its own.
        with freeing(self.path.with_name(self.path.name + "-wal")):
            self.conn.close()
            if self._primer is not None:
                self._primer.close()  # the last: see prime.py
        self._writeback.close()  # after SQLite's descriptors: see writeback.py
        self._forget_spooled()

    def transaction(self) -> Transaction:
        """Return a context manager: one write transaction (BEGIN IMMEDIATE), rolled back
        when its block raises. Shards spooled by a first load are forgotten: any write
        may change what they hold."""
        self._primed()
        self._forget_spooled()
        return super().transaction()

    def _primed(self) -> None:
        """Wait for the WAL started ahead, if it was."""
        if self._primer is not None:
            self._primer.wait()

    def _forget_spooled(self) -> None:
        if self._spooled or self.spool_folder.exists():
            self._spooled = {}
            import shutil  # here: most builds spool nothing and do not load it

            shutil.rmtree(self.spool_folder, ignore_errors=True)

    def spooled_shard(self, shard_id: int) -> SpooledShard | None:
        """Return shard `shard_id` as the first load that committed last spooled it (its
        files there until the next write, or until moved away), or None: render it from
        the ledger."""
        spooled = self._spooled.pop(shard_id, None)
        if spooled is not None:
            log.debug("shard %d: entries as the first load rendered them", shard_id)
        return spooled

    # -- reads ---------------------------------------------------------------------

    def _owned(self, source: str, locs: list[str], columns: str) -> list[tuple[Any, ...]]:
        """Return `(loc, *columns)` of present (not gone) URLs of `source` among `locs`."""
        marks = ",".join("?" * len(locs))
        return (
            self._read()
            .execute(
                f"SELECT loc, {columns} FROM urls WHERE loc IN ({marks}) "
                "AND source_id = (SELECT id FROM sources WHERE name = ?) "
                f"AND status IN ('{LIVE}', '{EXCLUDED}')",
                [*locs, source],
            )
            .fetchall()
        )

    def known_files(self, source: str, locs: list[str]) -> dict[str, KnownFile]:
        """Return what is recorded of present URLs of `source` among `locs` read from files."""
        return {
            row[0]: KnownFile(*row[1:])
            for row in self._owned(source, locs, "file_key, bytes_hash, content_hash, fp_settings")
            if row[1] is not None
        }

    def owners(self, locs: list[str]) -> dict[str, str]:
        """Return `{loc: source name}` for the present (not gone) URLs among `locs`."""
        marks = ",".join("?" * len(locs))
        return dict(
            self._read()
            .execute(
                f"SELECT u.loc, s.name FROM urls u JOIN sources s ON s.id = u.source_id "
                f"WHERE u.loc IN ({marks}) AND u.status IN ('{LIVE}', '{EXCLUDED}')",
                locs,
            )
            .fetchall()
        )

    def empty(self) -> bool:
        """True when the ledger holds no URL: an apply now loads it on the bulk path."""
        return self.conn.execute("SELECT 1 FROM urls LIMIT 1").fetchone() is None

    def live_count(self) -> int:
        """Return how many URLs are published."""
        (count,) = self.conn.execute(
            "SELECT count(*) FROM urls WHERE status = ?", (LIVE,)
        ).fetchone()
        return int(count)

    def holds(self) -> list[Hold]:
        """Return the removals the mass-removal guard holds."""
        return holds(self.conn)

    def cursor(self, name: str) -> str | None:
        """Return the stored value of cursor `name`, or None."""
        row = self.conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def url(self, loc: str) -> dict[str, Any] | None:
        """Return the ledger row of `loc` as a dict, or None."""
        cursor = self.conn.execute(f"SELECT {URL_SELECT} FROM urls WHERE loc = ?", (loc,))
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def set_cursor(self, name: str, value: str) -> None:
        """Store cursor `name` on its own (cursors of sources commit with `apply`)."""
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)", (name, value)
            )

    def seed(self, entries: Iterable[tuple[str, str | None]], now: str | None = None) -> int:
        """Remember `(loc, lastmod)` from an existing sitemap; return how many were kept.

        Seeded URLs are not published until a source observes them; then they keep the
        seeded lastmod unless their content changes later. Entries without a lastmod, or
        with one in the future, teach nothing: the source's own time serves better.
        """
        now = now or w3c.now()
        added = 0
        with self.transaction():
            for loc, lastmod in entries:
                if lastmod is None or lastmod > now:
                    continue
                cursor = self.conn.execute(
                    "INSERT INTO urls (loc, status, source_time, lastmod, first_seen, "
                    "change_count, entry_bytes) VALUES (?, ?, ?, ?, ?, 0, ?) "
                    "ON CONFLICT (loc) DO UPDATE SET lastmod = excluded.lastmod, "
                    "source_time = excluded.source_time WHERE urls.status = ?",
                    (loc, SEEDED, lastmod, lastmod, now, entry_size(loc), SEEDED),
                )
                added += cursor.rowcount
        return added

    def apply(
        self,
        items: Iterable[Item],
        *,
        complete: Collection[str] = (),
        robots: RobotsRules = ALLOW_ALL,
        cursors: Mapping[str, str] | None = None,
        now: str | None = None,
        configured: Collection[str] | None = None,
        complete_before: Collection[str] = (),
        guard: RemovalGuard | None = None,
        present: Mapping[str, Callable[[list[str]], set[str]]] | None = None,
    ) -> ChangeSet:
        """Apply observations in one transaction with `cursors`; return what changed.

        `complete` names sources whose items were a full scan: any URL they own that
        was not among the items is gone. With `configured`, when every configured source
        was read in full (here, or by an earlier apply of the same run: `complete_before`),
        URLs still owned by a source no longer in it (renamed or removed) are gone too.
        A `guard` holds the removals of its sources that take too much at once, and the
        cursors of a held source or one found empty, so that it is read again in full.
        `present` tells, of a source's URLs a full scan did not see, those a page is there
        for now: they are not gone.
        """
        guard = guard or RemovalGuard()
        spooled: dict[int, SpooledShard] = {}
        try:
            with self._first_load_journal() as through_wal, self.transaction():
                run = Apply(self, robots, now or w3c.now(), guard, present or {})
                run.start(complete)
                run.consume(items)
                self._writeback.hurry()
                run.finish(complete, configured, complete_before)
                # Read again in full next time: a held removal, or a source found empty
                # (an outage is told by every build until it ends, not by the first alone).
                kept_back = guard.cursors_of(
                    [hold.source for hold in run.changes.held] + run.changes.empty_scans
                )
                self.conn.executemany(
                    "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                    sorted(i for i in (cursors or {}).items() if i[0] not in kept_back),
                )
            spooled = run.spooled  # committed
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: applying changes failed ({exc})") from exc
        finally:
            self._settings()
            if not spooled:  # what a load that did not commit spooled goes too
                self._forget_spooled()
        self._spooled = spooled
        if run.bulk and through_wal:
            self._checkpoint_behind()
        return run.changes

    @contextlib.contextmanager
    def _first_load_journal(self) -> Iterator[bool]:
        """Load an empty ledger with a rollback journal when it is `alone`: the rows then
        go straight into the database file, where WAL would write them twice (the WAL,
        then the checkpoint) and look each page up in a WAL-index as large as the site.
        Yields whether the rows go through the WAL all the same (a checkpoint follows)."""
        if not self.alone or not self.empty():
            yield True
            return
        (pages,) = self.conn.execute("PRAGMA page_count").fetchone()
        (page_size,) = self.conn.execute("PRAGMA page_size").fetchone()
        if pages * page_size > _SNAPSHOT_BYTES:
            yield True  # an empty ledger this large is a rare thing: not worth copying
            return
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        # Leaving WAL needs every other connection closed: when one is open, stay, at once.
        self.conn.execute("PRAGMA busy_timeout = 0")
        try:
            (mode,) = self.conn.execute("PRAGMA journal_mode = DELETE").fetchone()
        except sqlite3.OperationalError:
            mode = "wal"
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
        if str(mode).lower() != "delete":
            yield True
            return
        # A crash leaves a hot journal that the next open rolls back: the empty ledger.
        self.conn.execute("PRAGMA synchronous = FULL")
        # Once the load spills pages into the file it holds an exclusive lock, which shuts
        # out a second connection until the commit. What sources ask meanwhile (files and
        # chunks known, owners) is asked of the last committed state: this process alone
        # writes it, so a copy taken now is that state, to the commit.
        snapshot = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            self.conn.backup(snapshot)
            self._reader = snapshot
            with self._writeback.running():
                yield False
        finally:
            self._reader = None
            snapshot.close()
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")

    def _settings(self) -> None:
        """Set the writer's cache, sort threads and checkpoints (a first build changes them)."""
        # 16 MiB: a million-URL build stays under 100 MiB, and more buys no speed.
        self.conn.execute("PRAGMA cache_size = -16384")
        self.conn.execute("PRAGMA threads = 0")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT}")

    def _checkpoint_behind(self) -> None:
        """Copy the WAL into the database file on a thread of its own: after a first build
        that is the whole ledger, which the renderers meanwhile read from the WAL."""

        def checkpoint() -> None:
            conn = sqlite3.connect(self.path)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # the next commits checkpoint instead
                log.warning("%s: checkpoint failed (%s)", self.path, exc)
            finally:
                conn.close()

        self._checkpointer = threading.Thread(target=checkpoint, name="ledger-checkpoint")
        self._checkpointer.start()
