"""Follow a MySQL/MariaDB table through the server's row-based binary log.

The binlog holds every committed row change with the whole row before and after it
(`binlog_row_image=FULL`) and the column names (`binlog_row_metadata=FULL`). A read
streams the events after the cursor (a binlog file and offset, always just after a
commit) and folds them by primary key over the read: a row renamed then unpublished by
two statements of one burst yields its end state only. lastmod is the commit time of
the last event that changed what the fingerprint covers, the URL or whether the row is
a page. A first start (or a position whose binlog was purged) reads the whole table in
a consistent snapshot, then follows the log from the snapshot's position.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pymysql
import pymysql.cursors
import xxhash
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import QueryEvent, XidEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from ..errors import ConfigError, SourceError
from .spec import (
    ChangelogSpec,
    ChangeRows,
    Shape,
    Snapshot,
    redact,
    source_error,
    template_fields,
)

log = logging.getLogger("sitemapd.changelog")

CONNECT_TIMEOUT = 10
# After a read that found rows, the log is read again once it has been quiet this long,
# so that the statements of one save (an INSERT then an UPDATE, a rename then an
# unpublish) fold into one change even when each commits on its own...
_QUIET = 0.2
# ...but no read waits for quiet more than this many times.
_QUIET_ROUNDS = 5
# Columns of the row a Shape reads that no table has: the change's facts.
_DELETED, _CHANGED_AT, _HASH = "\0deleted", "\0changed_at", "\0hash"
# Server errors: no such binlog (purged), privilege missing, unknown variable.
_ER_MASTER_FATAL_READING_BINLOG = 1236
_ER_ACCESS_DENIED = (1045, 1142, 1227, 1044)
_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
_SETTINGS = {
    "log_bin": ("1", "ON"),
    "binlog_format": ("ROW",),
    "binlog_row_image": ("FULL",),
    "binlog_row_metadata": ("FULL",),
}


@dataclass(frozen=True, slots=True)
class Position:
    """A place in the binlog just after a commit."""

    file: str
    offset: int

    def cursor(self) -> str:
        """Return the position as the ledger's cursor text."""
        return json.dumps({"file": self.file, "pos": self.offset}, separators=(",", ":"))


@dataclass(slots=True)
class _Fold:
    """One primary key over a read: its row as the read found and left it."""

    before: dict[str, Any] | None  # None: inserted during the read
    after: dict[str, Any] | None  # None: deleted during the read
    last_at: int = 0
    # Commit time of the read's last change to the fingerprint, URL or liveness.
    moved_at: int | None = None


@dataclass(slots=True)
class _Table:
    """The followed table as the server describes it."""

    schema: str
    name: str
    columns: tuple[str, ...]
    key: str
    # The columns the URL is made of; those that decide lastmod.
    url: tuple[str, ...]
    fingerprint: tuple[str, ...]
    shape: Shape


class BinlogReader:
    """Reads with a fresh non-blocking binlog dump each time; checks the server once."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Parse the dsn; raises ConfigError or SourceError for an unusable spec or dsn."""
        if not spec.table:
            raise ConfigError("changelog: mode 'binlog' needs the table to follow")
        if not (spec.url_template or spec.url_column):
            raise ConfigError("changelog: set either url_column or url_template")
        self._spec = spec
        self._params = _connect_params(spec.dsn)
        schema, _, name = spec.table.rpartition(".")
        schema = schema or str(self._params.get("database") or "")
        if not schema:
            raise ConfigError(
                f"changelog {redact(spec.dsn)}: name the database in the dsn or the table"
            )
        self._schema, self._name = schema, name
        self._table: _Table | None = None

    # The Reader protocol ----------------------------------------------------------

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return the changes of up to about `limit` rows after `cursor`, folded by key,
        and the position after the last commit read.

        Raises SourceError when the server cannot be reached, the position is gone or
        the user may not read the binlog.
        """
        table = self._prepare()
        at = self._position(cursor)
        folds: dict[Any, _Fold] = {}
        for _ in range(_QUIET_ROUNDS):
            at, found = self._drain(table, at, folds, limit)
            if not found or len(folds) >= limit:
                break
            time.sleep(_QUIET)
        return self._emit(table, folds), at.cursor()

    def wait(self, timeout: float) -> bool:
        """Return False at once: the log is polled."""
        return False

    def backlog(self, cursor: str | None) -> int | None:
        """Return None: a binlog position tells bytes behind, not rows."""
        return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        try:
            with self._connect(pymysql.cursors.SSCursor) as conn, conn.cursor() as cur:
                cur.execute(query)
                for row in cur:
                    yield "" if row[0] is None else str(row[0])
        except pymysql.Error as exc:
            raise source_error(self._spec.dsn, "cannot run reconcile_query", exc) from exc

    def close(self) -> None:
        """Forget the table's description: the next read checks the server again."""
        self._table = None

    # Snapshots ----------------------------------------------------------------------

    def snapshot(self, cursor: str | None, batch: int) -> Snapshot | None:
        """Return the table's live rows (in batches of `batch`) and the position they
        stand at, when `cursor` is no position to follow from (a first start, or a
        binlog purged before it was read); None when the log can be followed from it.

        Raises SourceError when the server cannot be reached or refuses.
        """
        table = self._prepare()
        if cursor is not None:
            at = self._position(cursor)
            if at.file in self._binlogs():
                return None
            log.error(
                "changelog %s: binlog %s was purged before sitemapd read it: reading %s.%s "
                "again in full, then following the log (keep binlogs longer: "
                "binlog_expire_logs_seconds)",
                redact(self._spec.dsn),
                at.file,
                table.schema,
                table.name,
            )
        try:
            conn = self._connect(pymysql.cursors.SSDictCursor)
        except pymysql.Error as exc:
            raise self._error("cannot connect", exc) from exc
        try:
            position = self._snapshot_start(conn)
        except pymysql.Error as exc:
            conn.close()
            raise self._error("cannot start a snapshot", exc) from exc
        return Snapshot(position.cursor(), self._snapshot_rows(table, conn, batch))

    def _snapshot_start(self, conn: pymysql.Connection[Any]) -> Position:
        """Open a consistent snapshot on `conn`; return the binlog position it stands at."""
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            # MySQL has no binlog_snapshot_* status: the position read just before the
            # snapshot is then at or before it, and replaying the changes between them
            # ends in the same rows (each event carries the whole row).
            before = _master_status(cur)
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            found = {str(row["Variable_name"]).lower(): row["Value"] for row in cur.fetchall()}
        file, offset = found.get("binlog_snapshot_file"), found.get("binlog_snapshot_position")
        if file and offset:
            return Position(str(file), int(offset))
        return before

    def _snapshot_rows(
        self, table: _Table, conn: pymysql.Connection[Any], batch: int
    ) -> Iterator[ChangeRows]:
        """Yield the snapshot's live rows, `batch` at a time; closes `conn` at the end."""
        wanted = self._wanted(table)
        select = f"SELECT {', '.join(map(_quote, wanted))} FROM {_quote(table.schema)}."
        select += _quote(table.name)
        changed_at = self._spec.changed_at_column or None
        try:
            with conn.cursor() as cur:
                cur.execute(select)
                rows: list[tuple[Any, ...]] = []
                for values in cur:
                    if not self._live(values):
                        continue
                    when = values.get(changed_at) if changed_at else None
                    rows.append(self._values(table, values, False, when))
                    if len(rows) >= batch:
                        yield table.shape.rows(rows)
                        rows = []
                if rows:
                    yield table.shape.rows(rows)
            conn.commit()
        except pymysql.Error as exc:
            raise self._error("cannot read the table", exc) from exc
        finally:
            conn.close()

    # Reading the log ----------------------------------------------------------------

    def _drain(
        self, table: _Table, at: Position, folds: dict[Any, _Fold], limit: int
    ) -> tuple[Position, bool]:
        """Fold the transactions after `at` into `folds` until the log ends or `limit`
        keys are folded; return the position after the last commit read and whether any
        row of the table was."""
        stream = BinLogStreamReader(
            connection_settings=dict(self._params),
            server_id=self._spec.server_id,
            resume_stream=True,
            log_file=at.file,
            log_pos=at.offset,
            blocking=False,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, XidEvent, QueryEvent],
            only_tables=[table.name],
            only_schemas=[table.schema],
            enable_logging=False,
        )
        pending: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
        found = False
        try:
            for event in stream:
                if isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                    if event.schema == table.schema and event.table == table.name:
                        pending.extend(_images(event))
                    continue
                if isinstance(event, QueryEvent) and _query(event) == "BEGIN":
                    continue
                # A commit: XID for transactional tables, COMMIT or a DDL statement else.
                for before, after in pending:
                    self._fold(table, folds, before, after, int(event.timestamp))
                found = found or bool(pending)
                pending = []
                at = Position(str(stream.log_file), int(stream.log_pos))
                if len(folds) >= limit:
                    break
        except pymysql.Error as exc:
            raise self._stream_error(at, exc) from exc
        finally:
            stream.close()
        return at, found

    def _fold(
        self,
        table: _Table,
        folds: dict[Any, _Fold],
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        when: int,
    ) -> None:
        """Fold one row change committed at `when` (epoch seconds) into `folds`."""
        key = (after if after is not None else before or {}).get(table.key)
        fold = folds.get(key)
        if fold is None:
            fold = folds[key] = _Fold(before, after)
        fold.after = after
        fold.last_at = when
        if (
            before is None
            or after is None
            or self._signature(table, before) != self._signature(table, after)
        ):
            fold.moved_at = when

    def _emit(self, table: _Table, folds: dict[Any, _Fold]) -> ChangeRows:
        """Return the changes `folds` make: the URLs that stopped being pages first (a
        URL that one row leaves and another takes is not deleted), then the pages."""
        upserts: list[tuple[Any, ...]] = []
        deletes: list[tuple[Any, ...]] = []
        for fold in folds.values():
            after = fold.after if fold.after is not None and self._live(fold.after) else None
            if after is not None:
                moved = fold.last_at if fold.moved_at is None else fold.moved_at
                upserts.append(self._values(table, after, False, moved))
            before = fold.before
            if (
                before is not None
                and self._live(before)
                and (after is None or _pick(before, table.url) != _pick(after, table.url))
            ):
                deletes.append(self._values(table, before, True, fold.last_at))
        if not deletes:
            return table.shape.rows(upserts)
        kept = table.shape.rows(upserts)
        gone = table.shape.rows(deletes)
        taken = set(kept.urls)
        return ChangeRows.of([*(row for row in gone if row.url not in taken), *kept])

    # Rows -----------------------------------------------------------------------------

    def _values(
        self, table: _Table, row: dict[str, Any], deleted: bool, when: object
    ) -> tuple[Any, ...]:
        """Return `row` as the values the table's Shape reads, with its change's facts."""
        facts = {_DELETED: deleted, _CHANGED_AT: when, _HASH: None}
        if not deleted:
            facts[_HASH] = _fingerprint(row, table.fingerprint)
        return tuple(
            facts[name] if name in facts else row.get(name) for name in table.shape.columns
        )

    def _live(self, row: dict[str, Any]) -> bool:
        """True when `row` matches every `live` condition."""
        return all(_text(row.get(column)) in accepted for column, accepted in self._spec.live)

    def _signature(self, table: _Table, row: dict[str, Any]) -> tuple[Any, ...]:
        """Return what decides lastmod: the row's URL, whether it is a page, its fingerprint."""
        return (_pick(row, table.url), self._live(row), _fingerprint(row, table.fingerprint))

    def _wanted(self, table: _Table) -> list[str]:
        """Return the columns a snapshot selects: those a change is made of."""
        spec = self._spec
        names = [table.key, *table.url, *(column for column, _ in spec.live), *table.fingerprint]
        names += [column for _, column in spec.meta_columns]
        if spec.changed_at_column:
            names.append(spec.changed_at_column)
        return list(dict.fromkeys(names))

    # The server -----------------------------------------------------------------------

    def _prepare(self) -> _Table:
        """Return the table's description, checking the server's binlog settings, the
        user's rights and the columns once; raises SourceError naming what is wrong."""
        if self._table is not None:
            return self._table
        try:
            with self._connect(pymysql.cursors.Cursor) as conn, conn.cursor() as cur:
                self._check_settings(cur)
                position = self._check_rights(cur)
                table = self._describe(cur)
        except pymysql.Error as exc:
            raise self._error("cannot check the server", exc) from exc
        # A dump from the end of the log reads nothing: it proves REPLICATION SLAVE now,
        # not after a snapshot of the whole table.
        self._drain(table, position, {}, 1)
        self._table = table
        return table

    def _check_settings(self, cur: pymysql.cursors.Cursor) -> None:
        for name, wanted in _SETTINGS.items():
            try:
                cur.execute(f"SELECT @@GLOBAL.{name}")
            except pymysql.OperationalError as exc:
                if exc.args[0] != _ER_UNKNOWN_SYSTEM_VARIABLE:
                    raise
                raise SourceError(
                    f"changelog {redact(self._spec.dsn)}: the server has no {name} setting: "
                    "mode 'binlog' needs MariaDB 10.5 or MySQL 8.0.14 or later"
                ) from None
            found = cur.fetchone()
            value = "" if found is None else _text(found[0]).upper()
            if value not in wanted:
                fix = "log_bin (a binlog file name)" if name == "log_bin" else f"{name}=FULL"
                if name == "binlog_format":
                    fix = "binlog_format=ROW"
                raise SourceError(
                    f"changelog {redact(self._spec.dsn)}: the server's {name} is {value or 'off'}; "
                    f"mode 'binlog' needs {fix} in the [mysqld] section of its configuration"
                )

    def _check_rights(self, cur: pymysql.cursors.Cursor) -> Position:
        """Return the end of the log; raises SourceError when the user may not see it."""
        try:
            return _master_status(cur)
        except pymysql.Error as exc:
            if exc.args[0] not in _ER_ACCESS_DENIED:
                raise
            raise SourceError(
                f"changelog {redact(self._spec.dsn)}: the user may not read the binlog's "
                "position: GRANT REPLICATION CLIENT (MariaDB: BINLOG MONITOR) and "
                "REPLICATION SLAVE ON *.* to it"
            ) from None

    def _describe(self, cur: pymysql.cursors.Cursor) -> _Table:
        spec = self._spec
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_KEY FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (self._schema, self._name),
        )
        found = [(_text(name), _text(key)) for name, key in cur.fetchall()]
        where = f"{self._schema}.{self._name}"
        if not found:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: no table {where}, or the user may not read it"
            )
        columns = tuple(name for name, _ in found)
        keys = [name for name, key in found if key == "PRI"]
        key = spec.id_column if spec.id_column in columns else (keys[0] if len(keys) == 1 else "")
        if not key:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: {where} needs a one-column primary key "
                "(or columns.id naming a unique column)"
            )
        url = template_fields(spec.url_template) if spec.url_template else (spec.url_column or "",)
        fingerprint = spec.fingerprint_columns or columns
        needed = [
            *url,
            *(c for c, _ in spec.live),
            *fingerprint,
            *(c for _, c in spec.meta_columns),
        ]
        if spec.changed_at_column:
            needed.append(spec.changed_at_column)
        missing = [name for name in needed if name not in columns]
        if missing:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: {where} has no column {missing[0]!r} "
                f"(its columns: {', '.join(columns)})"
            )
        shaped = replace(
            spec,
            query=None,
            id_column=key,
            op_column=None,
            deleted_column=_DELETED,
            changed_at_column=_CHANGED_AT,
            hash_column=_HASH,
        )
        return _Table(
            self._schema, self._name, columns, key, url, fingerprint, Shape(shaped, (key,))
        )

    def _binlogs(self) -> set[str]:
        """Return the names of the binlog files the server still has."""
        try:
            with self._connect(pymysql.cursors.Cursor) as conn, conn.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                return {_text(row[0]) for row in cur.fetchall()}
        except pymysql.Error as exc:
            raise self._error("cannot list the binlogs", exc) from exc

    def _position(self, cursor: str | None) -> Position:
        """Return the position of a cursor; raises SourceError for none or a bad one."""
        try:
            state = json.loads(cursor or "")
            return Position(str(state["file"]), int(state["pos"]))
        except (ValueError, TypeError, KeyError):
            raise SourceError(
                f"changelog {redact(self._spec.dsn)}: bad binlog cursor {cursor!r}"
            ) from None

    def _connect(self, cursor: type[pymysql.cursors.Cursor]) -> pymysql.Connection[Any]:
        return pymysql.connect(**self._params, cursorclass=cursor, autocommit=True)

    def _error(self, action: str, exc: BaseException) -> SourceError:
        return source_error(self._spec.dsn, action, exc)

    def _stream_error(self, at: Position, exc: pymysql.Error) -> SourceError:
        code = exc.args[0] if exc.args else None
        if code == _ER_MASTER_FATAL_READING_BINLOG:
            # Reported here; the next scan finds the file gone and reads the table again.
            return self._error(f"binlog position {at.file}:{at.offset} is gone", exc)
        if code in _ER_ACCESS_DENIED:
            return SourceError(
                f"changelog {redact(self._spec.dsn)}: the user may not read the binlog: "
                "GRANT REPLICATION SLAVE ON *.* to it"
            )
        return self._error("cannot read the binlog", exc)


def _connect_params(dsn: str) -> dict[str, Any]:
    """Return pymysql's connection arguments for a mysql:// or mariadb:// URL."""
    parts = urlsplit(dsn)
    if parts.scheme.partition("+")[0] not in ("mysql", "mariadb") or not parts.hostname:
        raise SourceError(f"changelog {redact(dsn)}: mode 'binlog' needs a mysql://host/db dsn")
    params: dict[str, Any] = {
        "host": parts.hostname,
        "port": parts.port or 3306,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "connect_timeout": CONNECT_TIMEOUT,
        "charset": "utf8mb4",
    }
    database = unquote(parts.path.lstrip("/"))
    if database:
        params["database"] = database
    for name, value in parse_qsl(parts.query):
        if name == "unix_socket":
            params["unix_socket"] = value
    return params


def _master_status(cur: pymysql.cursors.Cursor) -> Position:
    """Return the end of the binlog; raises SourceError when binary logging is off."""
    try:
        cur.execute("SHOW BINARY LOG STATUS")  # MySQL 8.2 and later
    except pymysql.ProgrammingError:
        cur.execute("SHOW MASTER STATUS")
    row = cur.fetchone()
    if not row:
        raise SourceError("changelog: the server writes no binlog (log_bin is off)")
    values = list(row.values()) if isinstance(row, dict) else list(row)
    return Position(_text(values[0]), int(values[1]))


def _images(
    event: WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent,
) -> Iterator[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Yield (before, after) of each row an event changes."""
    for row in event.rows:
        if isinstance(event, UpdateRowsEvent):
            yield row["before_values"], row["after_values"]
        elif isinstance(event, WriteRowsEvent):
            yield None, row["values"]
        else:
            yield row["values"], None


def _pick(row: dict[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row.get(name) for name in columns)


def _query(event: QueryEvent) -> str:
    query = event.query
    text = query.decode("utf-8", "replace") if isinstance(query, bytes) else str(query)
    return text.strip().upper()


def _fingerprint(row: dict[str, Any], columns: tuple[str, ...]) -> str:
    """Return the hash of `columns` of `row`, alike for a snapshot's and the log's values."""
    digest = xxhash.xxh3_128()
    for name in columns:
        data = _text(row.get(name), None).encode("utf-8", "surrogateescape")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _text(value: object, none: str | None = "") -> str:
    """Return a column value as text, the same whether read by query or from the log."""
    if value is None:
        return "\0" if none is None else none
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
