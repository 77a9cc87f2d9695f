"""Read a PostgreSQL change table with a `(xid8, id)` cursor; LISTEN for wake-ups.

`id > last` loses rows whose transactions commit out of order. Rows whose txid is below
the xmin of the current snapshot belong to transactions that have all ended, so that set
can no longer grow: reading only below it, in (txid, id) order, never skips a row.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg2
import psycopg2.extensions
from psycopg2 import sql

from sitemapd.changelog.pgclient import (
    connect,
    connect_params,
    readable,
    stream_first_column,
)
from sitemapd.config.changelog import (
    MAX_BACKLOG,
    TIME_FIELDS,
    ChangelogSpec,
    ChangeRows,
    Shape,
    redact,
    source_error,
)
from sitemapd.errors import SourceError

_Connection = psycopg2.extensions.connection

# The type oids of timestamp and timestamptz. The changed_at column and the metadata
# columns holding times are read as their ISO 8601 text whatever the session's DateStyle
# (JSON's form), which the rows' times are made of once for each distinct value.
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
        self._params = connect_params(spec.dsn)
        if spec.query:
            # psycopg2 reads `%` as a placeholder; the query's own must stay literal.
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
        # The columns read as ISO 8601 text when they hold timestamps.
        self._as_text = {spec.changed_at_column} | {
            column for field, column in spec.meta_columns if field in TIME_FIELDS
        }
        self._conn: _Connection | None = None
        self._listener: _Connection | None = None

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return up to `limit` settled rows after `cursor` and the cursor after them.

        Raises SourceError when the database cannot be reached or the query fails.
        """
        after = _parse_cursor(self._spec.dsn, cursor)
        try:
            conn = self._reading()
            if self._queries is None:
                self._queries = self._plan(conn)
            first, later = self._queries
            if after is None:
                rows = self._fetch(conn, first, (limit,))
            else:
                rows = self._fetch(conn, later, (*after, limit))
        except psycopg2.Error as exc:
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
                self._listener = connect(self._params)
                with self._listener.cursor() as cur:
                    cur.execute(self._listen)
            except psycopg2.Error:
                self._drop_listener()
                # The database is down: wait out the timeout rather than spin on reconnects.
                time.sleep(max(0.0, timeout - (time.monotonic() - started)))
                return False
            return True
        try:
            return _notified(self._listener, timeout)
        except (psycopg2.Error, OSError, ValueError):
            self._drop_listener()
            return True

    def backlog(self, cursor: str | None) -> int | None:
        """Return how many committed rows wait after `cursor` (capped), None when unknown."""
        try:
            after = _parse_cursor(self._spec.dsn, cursor)
            with self._reading().cursor() as cur:
                if after is None:
                    cur.execute(self._count_all, (MAX_BACKLOG,))
                else:
                    cur.execute(self._count_after, (*after, MAX_BACKLOG))
                found = cur.fetchone()
        except (psycopg2.Error, SourceError):
            self._drop_conn()
            return None
        return None if found is None else int(found[0])

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        return stream_first_column(self._params, self._spec.dsn, query)

    def close(self) -> None:
        """Close both connections; the next read or wait opens them again."""
        self._drop_conn()
        self._drop_listener()

    def _reading(self) -> _Connection:
        """Return the connection that reads, opened if need be; raises psycopg2.Error."""
        if self._conn is None:
            self._conn = connect(self._params)
            # A time Python cannot hold ('infinity', a year past 9999) comes back as its
            # text, so the row it is in is rejected, not the whole read.
            for caster in _LENIENT:
                psycopg2.extensions.register_type(caster, self._conn)
            if self._spec.query is None:
                # A change table filled since it was last analysed (a bulk import) looks
                # small to the planner, which then sorts every waiting row for each read
                # instead of walking the (txid, id) index up to the limit. Set for the
                # session, not a transaction a read: each round trip of a read waits for
                # the GIL again while the ledger applies the read before it.
                with self._conn.cursor() as cur:
                    cur.execute("SET enable_sort = off")
        return self._conn

    def _fetch(
        self, conn: _Connection, query: sql.Composed, params: tuple[Any, ...]
    ) -> list[tuple[Any, ...]]:
        """Return the rows of `query`; raises psycopg2.Error."""
        with conn.cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall()

    def _plan(self, conn: _Connection) -> tuple[sql.Composed, sql.Composed]:
        """Return the first and the later read queries: a changed_at or publication
        time column holding timestamps is read as its ISO 8601 text, which the rows'
        times are made of once for each distinct value, where psycopg2 makes a datetime
        a row. Raises psycopg2.Error."""
        columns = self._shape.columns
        # Every statement embedding the source takes parameters (see __init__).
        with conn.cursor() as cur:
            cur.execute(
                sql.SQL("SELECT {} FROM {} LIMIT %s").format(
                    sql.SQL(", ").join(map(sql.Identifier, columns)), self._source
                ),
                (0,),
            )
            types = [column.type_code for column in cur.description or ()]
        select = sql.SQL(", ").join(
            _ISO_TEXT.format(sql.Identifier(column), sql.Identifier(column))
            if kind in _TIMES and column in self._as_text
            else sql.Identifier(column)
            for column, kind in zip(columns, types, strict=True)
        )
        first, later = (sql.SQL("SELECT {} {}").format(select, where) for where in self._where)
        return first, later

    def _drop_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._queries = None  # planned again on the next connection: the types may change

    def _drop_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _notified(conn: _Connection, timeout: float) -> bool:
    """Return True when a notification arrives on `conn` within `timeout` s, having
    taken every one that came: one read covers every change announced so far. Raises
    psycopg2.Error when the connection breaks."""
    deadline = time.monotonic() + timeout
    while True:
        conn.poll()
        if conn.notifies:
            conn.notifies.clear()
            return True
        left = deadline - time.monotonic()
        if left <= 0 or not readable(conn, left):
            return False


def _lenient(base: Any, name: str) -> Any:
    """Return a typecaster like `base` that gives a value Python cannot hold (or holds
    only as datetime.max: 'infinity') as its text."""

    def cast(value: str | bytes | None, cur: psycopg2.extensions.cursor) -> Any:
        if value is None or value in ("infinity", "-infinity"):
            return value
        try:
            return base(value, cur)
        except (ValueError, OverflowError, psycopg2.Error):
            return value

    return psycopg2.extensions.new_type(base.values, name, cast)


_LENIENT = (
    _lenient(psycopg2.extensions.PYDATETIMETZ, "LENIENT_TIMESTAMPTZ"),
    _lenient(psycopg2.extensions.PYDATETIME, "LENIENT_TIMESTAMP"),
    _lenient(psycopg2.extensions.PYDATE, "LENIENT_DATE"),
)


def _parse_cursor(dsn: str, cursor: str | None) -> tuple[str, int] | None:
    """Return (xid8 text, id) of a cursor; raises SourceError for a malformed one."""
    if cursor is None:
        return None
    xid, _, last = cursor.partition(":")
    if xid.isdigit() and last.lstrip("-").isdigit():
        return xid, int(last)
    raise SourceError(f"changelog {redact(dsn)}: bad cursor {cursor!r}")
