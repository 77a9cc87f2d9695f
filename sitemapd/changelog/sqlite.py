"""Read a change table in an SQLite database (stdlib sqlite3, read-only)."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import quote

from sitemapd.config.changelog import MAX_BACKLOG, ChangelogSpec, ChangeRows, Shape, source_error
from sitemapd.errors import SourceError

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

# How long a read waits for a writer's lock before it reports the database busy.
BUSY_TIMEOUT = 5.0


def quote_name(name: str) -> str:
    """Return `name` (optionally `schema.name`) as quoted SQL identifiers."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


class SqliteReader:
    """An `id > last` cursor: SQLite has one writer, so ids become visible in order."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Plan the queries; raises ConfigError for an impossible spec."""
        self._spec = spec
        self._shape = Shape(spec, (spec.id_column,))
        # sqlite:///abs/path and SQLAlchemy's sqlite:////abs/path both name /abs/path.
        self._path = "/" + spec.dsn.split("://", 1)[1].lstrip("/")
        source = f"({spec.query}) q" if spec.query else quote_name(spec.table or "")
        select = ", ".join(quote_name(column) for column in self._shape.columns)
        key = quote_name(spec.id_column)
        self._first = f"SELECT {select} FROM {source} ORDER BY {key} LIMIT ?"
        self._after = f"SELECT {select} FROM {source} WHERE {key} > ? ORDER BY {key} LIMIT ?"
        self._count = (
            f"SELECT count(*) FROM (SELECT 1 FROM {source} WHERE {key} > ? LIMIT {MAX_BACKLOG})"
        )
        self._conn: sqlite3.Connection | None = None
        # (device, inode) of the file the connection reads: a restore from backup renames
        # a new file over it, and the old connection would read the old one for ever.
        self._file: tuple[int, int] | None = None
        # Set when the database or its WAL file is written (a commit), by an inotify
        # watch on their folder made at the first wait().
        self._changed = threading.Event()
        self._observer: BaseObserver | None = None
        self._watch_lock = threading.Lock()

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return up to `limit` rows after `cursor` and the cursor after them.

        Raises SourceError when the file is missing or the query fails.
        """
        after = self._last_id(cursor)
        try:
            conn = self._connect()
            if after is None:
                rows = conn.execute(self._first, (limit,)).fetchall()
            else:
                rows = conn.execute(self._after, (after, limit)).fetchall()
        except sqlite3.Error as exc:
            self.close()
            raise source_error(self._spec.dsn, "cannot read", exc) from exc
        if not rows:
            return ChangeRows.of([]), cursor
        return self._shape.rows(rows), str(rows[-1][0])

    def wait(self, timeout: float) -> bool:
        """Return True when the database or its WAL file was written within `timeout` s:
        SQLite has no notifications, but a commit writes one of them. Raises SourceError
        when their folder cannot be watched."""
        self._watch()
        if self._changed.wait(timeout):
            self._changed.clear()
            return True
        return False

    def _watch(self) -> None:
        """Start watching the database's folder unless a watch runs."""
        from watchdog.events import (
            FileClosedEvent,
            FileCreatedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer

        with self._watch_lock:
            if self._observer is not None and self._observer.is_alive():
                return
            names = {self._path, self._path + "-wal"}
            changed = self._changed

            class Commits(FileSystemEventHandler):
                def on_any_event(self, event: FileSystemEvent) -> None:
                    paths = {os.fsdecode(event.src_path), os.fsdecode(event.dest_path or "")}
                    if paths & names:
                        changed.set()

            observer = Observer()
            kinds = [FileModifiedEvent, FileClosedEvent, FileCreatedEvent, FileMovedEvent]
            folder = os.path.dirname(self._path)
            try:
                observer.schedule(Commits(), folder, recursive=False, event_filter=kinds)
                observer.start()
            except OSError as exc:
                observer.stop()
                raise SourceError(
                    f"changelog {self._spec.dsn}: cannot watch {folder} ({exc.strerror})"
                ) from exc
            self._observer = observer

    def backlog(self, cursor: str | None) -> int | None:
        """Return how many rows wait after `cursor` (capped), None when unreadable."""
        after = self._last_id(cursor)
        try:
            found = self._connect().execute(self._count, (-(2**63) if after is None else after,))
            return int(found.fetchone()[0])
        except (sqlite3.Error, SourceError):
            self.close()
            return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`; raises SourceError."""
        try:
            for row in self._connect().execute(query):
                yield "" if row[0] is None else str(row[0])
        except sqlite3.Error as exc:
            self.close()
            raise source_error(self._spec.dsn, "cannot run reconcile_query", exc) from exc

    def close(self) -> None:
        """Close the connection and stop watching; the next read or wait starts again."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        with self._watch_lock:
            if self._observer is not None:
                self._observer.stop()
                self._observer = None

    def _connect(self) -> sqlite3.Connection:
        """Return the connection, opened again when the file was replaced; raises
        SourceError while the file is missing."""
        try:
            status = os.stat(self._path)
        except OSError:
            status = None
        if status is None or not stat.S_ISREG(status.st_mode):
            self.close()
            raise SourceError(f"changelog {self._spec.dsn}: no such database file")
        if (status.st_dev, status.st_ino) != self._file:
            self.close()
        if self._conn is None:
            self._file = (status.st_dev, status.st_ino)
            self._conn = sqlite3.connect(
                f"file:{quote(self._path)}?mode=ro",
                uri=True,
                timeout=BUSY_TIMEOUT,
                isolation_level=None,
                check_same_thread=False,
            )
        return self._conn

    def _last_id(self, cursor: str | None) -> int | None:
        if cursor is None:
            return None
        try:
            return int(cursor)
        except ValueError:
            raise SourceError(f"changelog {self._spec.dsn}: bad cursor {cursor!r}") from None
