"""Follow a change table that a CMS fills by trigger, or a table through the database's
own change stream (a MySQL/MariaDB binlog, PostgreSQL logical decoding), or a WordPress
site (preset "wordpress"): read changes after a cursor, wait for more.

Readers open their connections lazily inside read(), so a database that is down at
start or restarts mid-run works again on the next read() once it is back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
    "missing_driver",
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
    scheme = _scheme(spec)
    if not scheme:
        raise SourceError(f"changelog {redact(spec.dsn)}: not a database URL (scheme://...)")
    try:
        reader = _reader_class(spec, scheme)
    except ImportError as exc:
        raise SourceError(_needs(spec)[0]) from exc
    return reader(spec)


def missing_driver(spec: ChangelogSpec) -> str | None:
    """Return the message naming the driver the reader of `spec` needs and that cannot
    be imported, None when every one can. Only looked up (importlib.util.find_spec),
    never imported: check-config stays as quick as before."""
    import importlib.util

    message, modules = _needs(spec)
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ValueError:  # in sys.modules as None: blocked
            found = False
        if not found:
            return message
    return None


def _scheme(spec: ChangelogSpec) -> str:
    return spec.dsn.partition("://")[0].lower() if "://" in spec.dsn else ""


def _needs(spec: ChangelogSpec) -> tuple[str, tuple[str, ...]]:
    """Return the message telling what the reader of `spec` needs and how to install it,
    and the modules it imports beyond sitemapd's own dependencies (none for SQLite)."""
    where = f"changelog {redact(spec.dsn)}"
    scheme = _scheme(spec)
    if spec.preset == "wordpress" or spec.mode == "binlog":
        what = "preset 'wordpress'" if spec.preset == "wordpress" else "mode 'binlog'"
        return (
            f"{where}: {what} needs PyMySQL and mysql-replication: pip install 'sitemapd[mysql]'",
            ("pymysql", "pymysqlreplication"),
        )
    if spec.mode == "logical":
        return (
            f"{where}: mode 'logical' needs psycopg 3 and psycopg2: "
            "pip install 'sitemapd[postgres-logical]'",
            ("psycopg", "psycopg2"),
        )
    if scheme == "sqlite":
        return "", ()
    if scheme in ("postgresql", "postgres"):
        return (
            f"{where}: PostgreSQL needs psycopg2: pip install 'sitemapd[postgres]'",
            ("psycopg2",),
        )
    return (
        f"{where}: {scheme} databases need SQLAlchemy 2: pip install 'sitemapd[sql]'",
        ("sqlalchemy",),
    )


def _reader_class(spec: ChangelogSpec, scheme: str) -> Callable[[ChangelogSpec], Reader]:
    """Return the class of the reader of `spec`; raises ImportError when its driver is
    missing."""
    if spec.preset == "wordpress":
        from sitemapd.changelog.wordpress import WordPressReader

        return WordPressReader
    if spec.mode == "binlog":
        from sitemapd.changelog.binlog import BinlogReader

        return BinlogReader
    if spec.mode == "logical":
        from sitemapd.changelog.logical import LogicalReader

        return LogicalReader
    if scheme == "sqlite":
        from sitemapd.changelog.sqlite import SqliteReader

        return SqliteReader
    if scheme in ("postgresql", "postgres"):
        from sitemapd.changelog.postgres import PostgresReader

        return PostgresReader
    from sitemapd.changelog.generic import GenericReader

    return GenericReader
