"""Read a change table in an SQLite database (stdlib sqlite3, read-only)."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from urllib.parse import quote

from ..errors import SourceError
from .spec import MAX_BACKLOG, ChangelogSpec, ChangeRows, Shape, source_error

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
        """Return False at once: SQLite has no change notifications."""
        return False

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
        """Close the connection; the next read opens it again."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
