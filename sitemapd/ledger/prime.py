"""A build's new WAL started on a thread of its own, while the sources are read.

The last connection to close a ledger deletes its WAL, so each build's first commit
starts a new one: SQLite writes its header and syncs it, then (the file being new) syncs
its folder, two waits for the disk inside the apply, on the build's path. A write that
changes nothing (the schema version set to itself), committed on a connection of its own
as soon as the ledger is open, does both there instead; the apply's commit then appends
to a WAL already started, which `synchronous = NORMAL` does not sync.

A connection syncs the WAL's folder at its own first sync of the WAL: this connection,
closed last, makes the checkpoint that ends the build, so that the writer's connection
never syncs the WAL at all.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from sitemapd.core import logs

log = logs.Logger("sitemapd.ledger")


class Primer:
    """The start of the WAL of the ledger at `path` (whose WAL is empty), on a thread;
    its connection stays open until `close`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._prime, name="ledger-prime")
        self._thread.start()

    def _prime(self) -> None:
        """Commit the ledger's schema version as it is, starting its WAL."""
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:  # nothing lost: the apply's commit starts the WAL
            log.debug("%s: cannot start the WAL ahead (%s)", self.path, exc)
            return
        try:
            conn.execute("PRAGMA synchronous = NORMAL")  # as the writer's: no commit sync
            conn.execute("BEGIN IMMEDIATE")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.debug("%s: cannot start the WAL ahead (%s)", self.path, exc)
            conn.close()  # rolled back
            return
        self._conn = conn

    def wait(self) -> None:
        """Wait until the WAL is started (or its start failed: the next commit starts it)."""
        self._thread.join()

    def close(self) -> None:
        """Close the connection (once the WAL is started): after the writer's, it is the
        last, which checkpoints the WAL and deletes it."""
        self.wait()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def wal_is_empty(path: Path) -> bool:
    """True when the ledger at `path` has a WAL file with nothing in it (a new one)."""
    try:
        return os.stat(path.with_name(path.name + "-wal")).st_size == 0
    except OSError:
        return False
