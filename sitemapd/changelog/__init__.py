"""Follow a change table that a CMS fills by trigger, or a table through the database's
own change stream (a MySQL/MariaDB binlog, PostgreSQL logical decoding), or a WordPress
site (preset "wordpress"): read changes after a cursor, wait for more.

Readers open their connections lazily inside read(), so a database that is down at
start or restarts mid-run works again on the next read() once it is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from sitemapd.config.changelog import ChangelogSpec, ChangeRow, ChangeRows, Snapshot, redact
from sitemapd.errors import SourceError

__all__ = [
    "ChangeRow",
    "ChangeRows",
    "ChangelogSpec",
    "Reader",
    "Snapshot",
    "Stream",
    "notifies",
    "open_reader",
]


class Reader(Protocol):
    """A cursor over one change log."""

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return up to `limit` rows after `cursor` in cursor order and the cursor after them.

        The cursor comes back unchanged when nothing is new. Raises SourceError when the
        database cannot be reached or the query fails.
        """
        ...

    def wait(self, timeout: float) -> bool:
        """Return True when a change notification arrives within `timeout` s."""
        ...

    def backlog(self, cursor: str | None) -> int | None:
        """Return how many rows wait after `cursor` (capped at 1e6), None when unknown."""
        ...

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query` (every live URL), streamed.

        Raises SourceError when the database cannot be reached or the query fails.
        """
        ...

    def close(self) -> None:
        """Close connections; the reader stays usable and reopens them on demand."""
        ...


@runtime_checkable
class Stream(Reader, Protocol):
    """A reader of a database's change stream, which starts from a snapshot of the table."""

    def snapshot(self, cursor: str | None, batch: int, until: float) -> Snapshot | None:
        """Return the table's live rows and the stream position they stand at when
        `cursor` cannot be followed (none yet, or purged); None when it can.

        Called as a scan starts, at `until` (epoch seconds): its reads return only what
        committed by then, as the ledger would hold a later time to it; the rest waits
        for the next scan. Raises SourceError when the database cannot be reached or
        refuses.
        """
        ...

    def held(self) -> bool:
        """True when the last read stopped at a transaction committed after `until`."""
        ...

    def check(self, cursor: str | None) -> None:
        """Raise SourceError when the stream cannot be followed from `cursor`; reads
        nothing (a running daemon follows it)."""
        ...


def notifies(spec: ChangelogSpec) -> bool:
    """True when the reader's wait() can wake on a change: PostgreSQL LISTEN/NOTIFY, an
    SQLite file written, a change stream."""
    return spec.mode in ("binlog", "logical") or spec.dsn.partition("://")[0].lower() in (
        "postgresql",
        "postgres",
        "sqlite",
    )


def open_reader(spec: ChangelogSpec) -> Reader:
    """Return the reader for the dsn's scheme; it does not connect yet.

    Raises SourceError for an unknown scheme or a missing driver, ConfigError for a spec
    that cannot describe a row.
    """
    scheme = spec.dsn.partition("://")[0].lower() if "://" in spec.dsn else ""
    if not scheme:
        raise SourceError(f"changelog {redact(spec.dsn)}: not a database URL (scheme://...)")
    if spec.preset == "wordpress":
        try:
            from sitemapd.changelog.wordpress import WordPressReader
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: preset 'wordpress' needs mysql-replication: "
                "pip install 'sitemapd[mysql]'"
            ) from exc
        return WordPressReader(spec)
    if spec.mode == "binlog":
        try:
            from sitemapd.changelog.binlog import BinlogReader
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: mode 'binlog' needs mysql-replication: "
                "pip install 'sitemapd[mysql]'"
            ) from exc
        return BinlogReader(spec)
    if spec.mode == "logical":
        try:
            from sitemapd.changelog.logical import LogicalReader
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: mode 'logical' needs psycopg 3 and psycopg2: "
                "pip install 'sitemapd[postgres-logical]'"
            ) from exc
        return LogicalReader(spec)
    if scheme == "sqlite":
        from sitemapd.changelog.sqlite import SqliteReader

        return SqliteReader(spec)
    if scheme in ("postgresql", "postgres"):
        try:
            from sitemapd.changelog.postgres import PostgresReader
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: PostgreSQL needs psycopg2: "
                "pip install 'sitemapd[postgres]'"
            ) from exc
        return PostgresReader(spec)
    try:
        from sitemapd.changelog.generic import GenericReader
    except ImportError as exc:
        raise SourceError(
            f"changelog {redact(spec.dsn)}: {scheme} databases need SQLAlchemy 2: "
            "pip install 'sitemapd[sql]'"
        ) from exc
    return GenericReader(spec)
