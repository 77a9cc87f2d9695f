"""Follow a MySQL/MariaDB table by its modification-time column, where the server gives
no binlog access (managed hosting): each read takes the rows modified since the cursor.

What polling cannot see: a row deleted outright, the URL a row had before a change of
its URL columns, a change that does not touch the modification time, and a save whose
time its commit lags by more than SETTLE seconds. A caller re-reads the whole table
(snapshot) now and then to catch those.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pymysql
import pymysql.cursors

from sitemapd.changelog.binlog import connect_params, query_urls, quote
from sitemapd.changelog.rows import Change, Table, describe, text
from sitemapd.config.changelog import ChangelogSpec, ChangeRows, Snapshot, redact, source_error
from sitemapd.errors import ConfigError, SourceError

# Rows modified this many seconds before the database's clock are read again by every
# poll: a save committed a little after its modification time is not passed over.
SETTLE = 10
_START = "0000-00-00 00:00:00"
_FAR = "9999-12-31 23:59:59"
_END = 253_402_300_799  # 9999-12-31T23:59:59Z in epoch seconds


class PollReader:
    """Reads `spec.table` by `spec.changed_at_column` (a UTC DATETIME) and its key: a
    live row is an upsert, any other row a delete of the URL it makes now."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Parse the dsn; raises ConfigError or SourceError for an unusable spec or dsn."""
        if not spec.table or not spec.changed_at_column:
            raise ConfigError("changelog: polling needs the table and its changed_at column")
        self._spec = spec
        self._params = connect_params(spec.dsn)
        schema, _, name = spec.table.rpartition(".")
        self._schema = schema or str(self._params.get("database") or "")
        if not self._schema:
            raise ConfigError(
                f"changelog {redact(spec.dsn)}: name the database in the dsn or the table"
            )
        self._name = name
        self._table: Table | None = None
        # The time of the scan under way: a row modified later waits for the next scan,
        # as the ledger would hold that time to the scan's.
        self._until = _FAR
        self._held = False

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return the changes of up to `limit` rows modified after `cursor`, in order of
        modification, and the cursor after the last one that has settled.

        Raises SourceError when the server cannot be reached or the query fails.
        """
        table = self._prepare()
        since, after_id = _position(cursor)
        modified, key = quote(self._spec.changed_at_column), quote(table.key)
        select = (
            f"SELECT {self._select(table)} FROM {self._from(table)} "
            f"WHERE {modified} > %s OR ({modified} = %s AND {key} > %s) "
            f"ORDER BY {modified}, {key} LIMIT %s"
        )
        try:
            with self._connect() as conn, conn.cursor() as cur:
                settled = _settled(cur)
                cur.execute(select, (since, since, after_id, limit))
                found: list[dict[str, Any]] = list(cur.fetchall())
        except pymysql.Error as exc:
            raise source_error(self._spec.dsn, "cannot read the table", exc) from exc
        changes: list[Change] = []
        at = (since, after_id)
        self._held = False
        for row in found:
            when = _stamp(row[self._spec.changed_at_column])
            if when > self._until:
                self._held = True
                continue
            changes.append((row, not table.is_live(row), row[self._spec.changed_at_column]))
            # The cursor passes settled rows only: younger ones are read again next time.
            if when <= settled or len(found) >= limit:
                at = (when, int(row[table.key]))
        return table.rows(changes), json.dumps({"at": at[0], "id": at[1]}, separators=(",", ":"))

    def snapshot(self, cursor: str | None, batch: int, until: float) -> Snapshot | None:
        """Return the table's live rows in batches of `batch`, and the cursor of the
        time they were read at; None when `cursor` is one to follow from.

        Raises SourceError when the server cannot be reached or the query fails.
        """
        self._until = _FAR if until >= _END else _stamp(datetime.fromtimestamp(int(until), UTC))
        if cursor is not None:
            try:
                _position(cursor)
                return None
            except SourceError:
                pass  # not a polling cursor: read the table again
        table = self._prepare()
        try:
            conn = self._connect(pymysql.cursors.SSDictCursor)
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                settled = _settled(cur)
        except pymysql.Error as exc:
            raise source_error(self._spec.dsn, "cannot start a snapshot", exc) from exc
        position = json.dumps({"at": settled, "id": 0}, separators=(",", ":"))
        return Snapshot(position, self._snapshot_rows(table, conn, batch))

    def _snapshot_rows(
        self, table: Table, conn: pymysql.Connection[Any], batch: int
    ) -> Iterator[ChangeRows]:
        where, args = table.where(quote)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT {self._select(table)} FROM {self._from(table)}{where}", args)
                yield from table.snapshot(cur, batch)
            conn.commit()
        except pymysql.Error as exc:
            raise source_error(self._spec.dsn, "cannot read the table", exc) from exc
        finally:
            conn.close()

    def held(self) -> bool:
        """True when the last read left a row modified after the scan began."""
        return self._held

    def check(self, cursor: str | None) -> None:
        """Raise SourceError when the table cannot be read."""
        self._prepare()

    def wait(self, timeout: float) -> bool:
        """Return False: polling has no wake-up (notifies() is False for it)."""
        return False

    def backlog(self, cursor: str | None) -> int | None:
        """Return None: not counted."""
        return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        return query_urls(self._params, self._spec.dsn, query)

    def close(self) -> None:
        """Forget the table's description; the next read looks it up again."""
        self._table = None

    def _prepare(self) -> Table:
        """Return the table's description; raises SourceError naming what is missing."""
        if self._table is None:
            try:
                with self._connect(pymysql.cursors.Cursor) as conn, conn.cursor() as cur:
                    cur.execute(
                        "SELECT COLUMN_NAME, COLUMN_KEY FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                        (self._schema, self._name),
                    )
                    found = [(text(name), text(key)) for name, key in cur.fetchall()]
            except pymysql.Error as exc:
                raise source_error(self._spec.dsn, "cannot describe the table", exc) from exc
            columns = tuple(name for name, _ in found)
            keys = [name for name, key in found if key == "PRI"]
            self._table = describe(self._spec, self._schema, self._name, columns, keys)
        return self._table

    def _select(self, table: Table) -> str:
        return ", ".join(map(quote, table.wanted(c for _, c in self._spec.meta_columns)))

    def _from(self, table: Table) -> str:
        return f"{quote(table.schema)}.{quote(table.name)}"

    def _connect(
        self, cursor: type[pymysql.cursors.Cursor] = pymysql.cursors.DictCursor
    ) -> pymysql.Connection[Any]:
        return pymysql.connect(**self._params, cursorclass=cursor, autocommit=True)


def _position(cursor: str | None) -> tuple[str, int]:
    """Return (modification time, key) of a cursor; the start for None. Raises
    SourceError for a cursor of another kind."""
    if cursor is None:
        return _START, 0
    try:
        state = json.loads(cursor)
        return str(state["at"]), int(state["id"])
    except (ValueError, TypeError, KeyError):
        raise SourceError(f"changelog: not a polling cursor: {cursor[:80]!r}") from None


def _settled(cur: pymysql.cursors.Cursor) -> str:
    """Return the time SETTLE seconds before the database's clock."""
    cur.execute("SELECT UTC_TIMESTAMP() - INTERVAL %s SECOND AS at", (SETTLE,))
    found = cur.fetchall()  # all of them: an unbuffered cursor must read to the end
    value = found[0]["at"] if isinstance(found[0], dict) else found[0][0]
    return _stamp(value)


def _stamp(value: object) -> str:
    """Return a DATETIME value as MariaDB compares it ('YYYY-MM-DD HH:MM:SS')."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return text(value)[:19] or _START
