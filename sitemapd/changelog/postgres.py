"""Read a PostgreSQL change table with a `(xid8, id)` cursor; LISTEN for wake-ups.

`id > last` loses rows whose transactions commit out of order. Rows whose txid is below
the xmin of the current snapshot belong to transactions that have all ended, so that set
can no longer grow: reading only below it, in (txid, id) order, never skips a row.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql
from psycopg.adapt import Buffer, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.datetime import DateLoader, TimestampLoader, TimestamptzLoader

from sitemapd.config.changelog import (
    MAX_BACKLOG,
    ChangelogSpec,
    ChangeRows,
    Shape,
    redact,
    source_error,
)
from sitemapd.errors import SourceError

CONNECT_TIMEOUT = 10

# The type oids of timestamp and timestamptz, and their ISO 8601 text whatever the
# session's DateStyle (JSON's form), as `_when` reads it.
_TIMES = (1114, 1184)
_ISO_TEXT = sql.SQL("to_json({}) #>> '{{}}' AS {}")
_SETTLED = sql.SQL("{xid} < pg_snapshot_xmin(pg_current_snapshot())")
_AFTER = sql.SQL("({xid}, {id}) > (%s::xid8, %s)")


class PostgresReader:
    """Reads in autocommit, so no snapshot is held between reads to hold back xmin."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Plan the queries; raises ConfigError or SourceError for an unusable spec or dsn."""
        self._spec = spec
        self._shape = Shape(spec, (spec.xid_column, spec.id_column))
        try:
            self._params: dict[str, Any] = conninfo_to_dict(spec.dsn)
        except psycopg.Error as exc:
            raise source_error(spec.dsn, "bad dsn", exc) from exc
        self._params.setdefault("connect_timeout", CONNECT_TIMEOUT)
        self._params.setdefault("application_name", "sitemapd")
        if spec.query:
            # psycopg reads `%` as a placeholder; the query's own must stay literal.
            source: sql.Composable = sql.SQL("({}) q").format(
                sql.SQL(spec.query.replace("%", "%%"))
            )
        else:
            source = sql.Identifier(*(spec.table or "").split("."))
        names = {"xid": sql.Identifier(spec.xid_column), "id": sql.Identifier(spec.id_column)}
        self._source = source
        settled = _SETTLED.format(**names)
        after = _AFTER.format(**names)
        # What the read queries select from and where (their select list: `_plan`).
        self._where = (
            sql.SQL("FROM {} WHERE {} ORDER BY {xid}, {id} LIMIT %s").format(
                source, settled, **names
            ),
            sql.SQL("FROM {} WHERE {} AND {} ORDER BY {xid}, {id} LIMIT %s").format(
                source, after, settled, **names
            ),
        )
        # The read queries of the connection open.
        self._queries: tuple[sql.Composed, sql.Composed] | None = None
        # Every statement embedding `source` takes parameters, so its `%%` read back as `%`.
        self._count_all = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} LIMIT %s) s").format(
            source
        )
        self._count_after = sql.SQL(
            "SELECT count(*) FROM (SELECT 1 FROM {} WHERE {} LIMIT %s) s"
        ).format(source, after)
        self._listen = sql.SQL("LISTEN {}").format(sql.Identifier(spec.channel))
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._listener: psycopg.Connection[tuple[Any, ...]] | None = None

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return up to `limit` settled rows after `cursor` and the cursor after them.

        Raises SourceError when the database cannot be reached or the query fails.
        """
        after = _parse_cursor(self._spec.dsn, cursor)
        try:
            if self._conn is None:
                self._conn = self._connect()
            if self._queries is None:
                self._queries = self._plan(self._conn)
            first, later = self._queries
            if after is None:
                rows = self._fetch(self._conn, first, (limit,))
            else:
                rows = self._fetch(self._conn, later, (*after, limit))
        except psycopg.Error as exc:
            self._drop_conn()
            raise source_error(self._spec.dsn, "cannot read", exc) from exc
        if not rows:
            return ChangeRows.of([]), cursor
        last = rows[-1]
        return self._shape.rows(rows), f"{last[0]}:{last[1]}"

    def wait(self, timeout: float) -> bool:
        """Return True when a NOTIFY arrives within `timeout` s, False when none does.

        Also True right after (re)starting to LISTEN and when the listening connection
        breaks: what was committed meanwhile was announced to no one, so read once more.
        """
        if self._listener is None:
            started = time.monotonic()
            try:
                self._listener = self._connect()
                self._listener.execute(self._listen)
            except psycopg.Error:
                self._drop_listener()
                # The database is down: wait out the timeout rather than spin on reconnects.
                time.sleep(max(0.0, timeout - (time.monotonic() - started)))
                return False
            return True
        try:
            woken = any(True for _ in self._listener.notifies(timeout=timeout, stop_after=1))
            if woken:
                # One read covers every change announced so far.
                for _ in self._listener.notifies(timeout=0):
                    pass
        except psycopg.Error:
            self._drop_listener()
            return True
        return woken

    def backlog(self, cursor: str | None) -> int | None:
        """Return how many committed rows wait after `cursor` (capped), None when unknown."""
        try:
            after = _parse_cursor(self._spec.dsn, cursor)
            if self._conn is None:
                self._conn = self._connect()
            if after is None:
                found = self._conn.execute(self._count_all, (MAX_BACKLOG,)).fetchone()
            else:
                found = self._conn.execute(self._count_after, (*after, MAX_BACKLOG)).fetchone()
        except (psycopg.Error, SourceError):
            self._drop_conn()
            return None
        return None if found is None else int(found[0])

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed row by row; raises SourceError."""
        try:
            if self._conn is None:
                self._conn = self._connect()
            # Without parameters psycopg sends the query as written: `%` stays literal.
            for row in self._conn.cursor().stream(query):
                yield "" if row[0] is None else str(row[0])
        except psycopg.Error as exc:
            self._drop_conn()
            raise source_error(self._spec.dsn, "cannot run reconcile_query", exc) from exc

    def close(self) -> None:
        """Close both connections; the next read or wait opens them again."""
        self._drop_conn()
        self._drop_listener()

    def _fetch(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        query: sql.Composed,
        params: tuple[Any, ...],
    ) -> list[tuple[Any, ...]]:
        """Return the rows of `query`; a time Python cannot hold comes back as its text."""
        with conn.transaction():
            if self._spec.query is None:
                # A change table filled since it was last analysed (a bulk import) looks
                # small to the planner, which then sorts every waiting row for each read
                # instead of walking the (txid, id) index up to the limit.
                conn.execute("SET LOCAL enable_sort = off")
            try:
                return conn.execute(query, params).fetchall()
            except psycopg.DataError:
                # Rare: read the batch again through the slower loaders that keep such values.
                cursor = conn.cursor()
                for name, loader in _LENIENT_LOADERS.items():
                    cursor.adapters.register_loader(name, loader)
                return cursor.execute(query, params).fetchall()

    def _plan(self, conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[sql.Composed, sql.Composed]:
        """Return the first and the later read queries. A changed_at column holding
        timestamps is read as its ISO 8601 text, which the rows' times are made of once
        for each distinct value, where psycopg makes a datetime a row. Raises
        psycopg.Error."""
        changed_at = sql.Identifier(self._spec.changed_at_column)
        # Every statement embedding the source takes parameters (see __init__).
        probe = conn.execute(
            sql.SQL("SELECT {} FROM {} LIMIT %s").format(changed_at, self._source), (0,)
        )
        as_text = probe.description is not None and probe.description[0].type_code in _TIMES
        select = sql.SQL(", ").join(
            _ISO_TEXT.format(sql.Identifier(column), sql.Identifier(column))
            if as_text and column == self._spec.changed_at_column
            else sql.Identifier(column)
            for column in self._shape.columns
        )
        first, later = (sql.SQL("SELECT {} {}").format(select, where) for where in self._where)
        return first, later

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(**self._params, autocommit=True)

    def _drop_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._queries = None  # planned again on the next connection: the types may change

    def _drop_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _lenient(base: type[Loader]) -> type[Loader]:
    """Return a loader like `base` that gives a value Python cannot hold ('infinity', a
    year past 9999) as its text, so the row it is in is rejected, not the whole read."""

    def load(self: Loader, data: Buffer) -> Any:
        try:
            return base.load(self, data)
        except psycopg.DataError:
            return bytes(data).decode("utf-8", "replace")

    return type(f"Lenient{base.__name__}", (base,), {"load": load})


_LENIENT_LOADERS = {
    "timestamptz": _lenient(TimestamptzLoader),
    "timestamp": _lenient(TimestampLoader),
    "date": _lenient(DateLoader),
}


def _parse_cursor(dsn: str, cursor: str | None) -> tuple[str, int] | None:
    """Return (xid8 text, id) of a cursor; raises SourceError for a malformed one."""
    if cursor is None:
        return None
    xid, _, last = cursor.partition(":")
    if xid.isdigit() and last.lstrip("-").isdigit():
        return xid, int(last)
    raise SourceError(f"changelog {redact(dsn)}: bad cursor {cursor!r}")
