"""Follow a change table that a CMS fills by trigger: read changes after a cursor, wait for more.

Readers open their connections lazily inside read(), so a database that is down at
start or restarts mid-run works again on the next read() once it is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..errors import SourceError
from .spec import ChangelogSpec, ChangeRow, ChangeRows, redact

__all__ = ["ChangeRow", "ChangeRows", "ChangelogSpec", "Reader", "notifies", "open_reader"]


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


def notifies(spec: ChangelogSpec) -> bool:
    """True when the reader's wait() can wake on a change: PostgreSQL LISTEN/NOTIFY, an
    SQLite file written."""
    return spec.dsn.partition("://")[0].lower() in ("postgresql", "postgres", "sqlite")


def open_reader(spec: ChangelogSpec) -> Reader:
    """Return the reader for the dsn's scheme; it does not connect yet.

    Raises SourceError for an unknown scheme or a missing driver, ConfigError for a spec
    that cannot describe a row.
    """
    scheme = spec.dsn.partition("://")[0].lower() if "://" in spec.dsn else ""
    if not scheme:
        raise SourceError(f"changelog {redact(spec.dsn)}: not a database URL (scheme://...)")
    if scheme == "sqlite":
        from .sqlite import SqliteReader

        return SqliteReader(spec)
    if scheme in ("postgresql", "postgres"):
        try:
            from .postgres import PostgresReader
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: PostgreSQL needs psycopg 3: "
                "pip install 'sitemapd[postgres]'"
            ) from exc
        return PostgresReader(spec)
    try:
        from .generic import GenericReader
    except ImportError as exc:
        raise SourceError(
            f"changelog {redact(spec.dsn)}: {scheme} databases need SQLAlchemy 2: "
            "pip install 'sitemapd[sql]'"
        ) from exc
    return GenericReader(spec)
