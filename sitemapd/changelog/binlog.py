"""Follow a MySQL/MariaDB table through the server's row-based binary log.

The binlog holds every committed row change with the whole row before and after it
(`binlog_row_image=FULL`) and the column names (`binlog_row_metadata=FULL`). A read
streams the events after the cursor (a binlog file and offset, always just after a
commit) and folds them by primary key over the read: a row renamed then unpublished by
two statements of one burst yields its end state only (see `rows`). lastmod is the
commit time, the timestamp of the transaction's XID event. A first start (or a position
whose binlog was purged) reads the whole table in a consistent snapshot, then follows
the log from the snapshot's position.
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pymysql
import pymysql.cursors
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import HeartbeatLogEvent, QueryEvent, XidEvent
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from sitemapd.changelog.binrows import Layouts
from sitemapd.changelog.rows import Folds, Table, describe, text
from sitemapd.config.changelog import (
    ChangelogSpec,
    ChangeRows,
    Snapshot,
    Wakeups,
    foreign_cursor,
    redact,
    source_error,
)
from sitemapd.core import logs
from sitemapd.errors import ConfigError, SourceError

log = logs.Logger("sitemapd.changelog")

CONNECT_TIMEOUT = 10
# After a read that found rows, the log is read again once it has been quiet this long,
# so that the statements of one save (an INSERT then an UPDATE, a rename then an
# unpublish) fold into one change even when each commits on its own...
_QUIET = 0.1
# ...but no read waits for quiet more than this many times.
_QUIET_ROUNDS = 10
# Server errors: no such binlog (purged), privilege missing, unknown variable.
_ER_MASTER_FATAL_READING_BINLOG = 1236
_ER_ACCESS_DENIED = (1045, 1142, 1227, 1044)
_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
# A newer dump of the same server_id took this one's place (the server ends the older).
_ER_SLAVE_SAME_ID = 4052
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


class BinlogReader:
    """Reads with a fresh non-blocking binlog dump each time; checks the server once."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Parse the dsn; raises ConfigError or SourceError for an unusable spec or dsn."""
        if not spec.table:
            raise ConfigError("changelog: mode 'binlog' needs the table to follow")
        if not (spec.url_template or spec.url_column):
            raise ConfigError("changelog: set either url_column or url_template")
        self._spec = spec
        self._params = connect_params(spec.dsn)
        schema, _, name = spec.table.rpartition(".")
        schema = schema or str(self._params.get("database") or "")
        if not schema:
            raise ConfigError(
                f"changelog {redact(spec.dsn)}: name the database in the dsn or the table"
            )
        self._schema, self._name = schema, name
        self._table: Table | None = None
        # The position after the last read, where wait() watches from.
        self._seen: Position | None = None
        self._watch: BinLogStreamReader | None = None
        self._wakeups = Wakeups()
        # The time of the scan under way (a later commit waits), and whether one did.
        self._until = math.inf
        self._held = False

    # The Reader protocol ----------------------------------------------------------

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return the changes of up to about `limit` rows after `cursor`, folded by key,
        and the position after the last commit read.

        Raises SourceError when the server cannot be reached, the position is gone or
        the user may not read the binlog.
        """
        table = self._prepare()
        at = self._position(cursor)
        folds = Folds(table)
        self._held = False
        for _ in range(_QUIET_ROUNDS):
            at, found = self._drain(table, at, folds, limit)
            if not found or len(folds) >= limit or self._held:
                break
            time.sleep(_QUIET)
        self._seen = at
        self._wakeups.taken()
        return folds.changes(), at.cursor()

    def wait(self, timeout: float) -> bool:
        """Return True when the table's rows change within about `timeout` s (a blocking
        binlog dump of its own, registered as server_id + 1, that decodes no row)."""
        deadline = time.monotonic() + timeout
        if not self._wakeups.ready(timeout):
            return False
        try:
            watch = self._watch or self._start_watch()
            while time.monotonic() < deadline:
                # Returns at the latest with the heartbeat the server sends every second.
                event = watch.fetchone()
                if event is None:  # the dump ended: start again from where it stood
                    self._stop_watch()
                    return False
                if isinstance(event, TableMapEvent) and (event.schema, event.table) == (
                    self._schema,
                    self._name,
                ):
                    self._wakeups.woke()
                    return True
        except (pymysql.Error, SourceError, OSError, struct.error):
            self._stop_watch()
            time.sleep(max(0.0, deadline - time.monotonic()))
        return False

    def _start_watch(self) -> BinLogStreamReader:
        if self._seen is None:
            try:
                with self._connect(pymysql.cursors.Cursor) as conn, conn.cursor() as cur:
                    self._seen = _master_status(cur)
            except pymysql.Error as exc:
                raise self._error("cannot find the binlog's end", exc) from exc
        self._watch = BinLogStreamReader(
            connection_settings=dict(self._params),
            server_id=self._spec.server_id + 1,
            resume_stream=True,
            log_file=self._seen.file,
            log_pos=self._seen.offset,
            blocking=True,
            slave_heartbeat=1,
            only_events=[TableMapEvent, HeartbeatLogEvent],
            only_tables=[self._name],
            only_schemas=[self._schema],
            enable_logging=False,
        )
        return self._watch

    def _stop_watch(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()

    def backlog(self, cursor: str | None) -> int | None:
        """Return None: a binlog position tells bytes behind, not rows."""
        return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        return query_urls(self._params, self._spec.dsn, query)

    def close(self) -> None:
        """Forget the table's description (the next read checks the server again) and
        stop watching."""
        self._table = None
        self._stop_watch()

    def check(self, cursor: str | None) -> None:
        """Raise SourceError when the log cannot be followed from `cursor` (the server's
        settings, the user's rights, the table, a purged position); read nothing."""
        self._prepare()
        if cursor is not None:
            at = self._position(cursor)
            if at.file not in self._binlogs():
                raise SourceError(
                    f"changelog {redact(self._spec.dsn)}: binlog {at.file} was purged: the "
                    "table will be read again in full"
                )

    # Snapshots ----------------------------------------------------------------------

    def held(self) -> bool:
        """True when the last read stopped at a transaction committed after `until`."""
        return self._held

    def snapshot(self, cursor: str | None, batch: int, until: float) -> Snapshot | None:
        """Return the table's live rows (in batches of `batch`) and the position they
        stand at, when `cursor` is no position to follow from (a first start, or a
        binlog purged before it was read); None when the log can be followed from it.

        Reads until the next call take only transactions committed by `until`. Raises
        SourceError when the server cannot be reached or refuses.
        """
        self._until = until
        table = self._prepare()
        try:
            at = None if cursor is None else self._position(cursor)
        except SourceError:
            foreign_cursor(self._spec, cursor or "")
            at = None
        if at is not None:
            # A read that ended there found the file; one that failed asks the server.
            if at == self._seen or at.file in self._binlogs():
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
        self, table: Table, conn: pymysql.Connection[Any], batch: int
    ) -> Iterator[ChangeRows]:
        """Yield the snapshot's live rows, `batch` at a time; closes `conn` at the end."""
        names = table.wanted(column for _, column in self._spec.meta_columns)
        select = f"SELECT {', '.join(map(quote, names))} FROM {quote(table.schema)}."
        select += quote(table.name)
        where, args = table.where(quote)
        try:
            with conn.cursor() as cur:
                cur.execute(select + where, args)
                yield from table.snapshot(cur, batch)
            conn.commit()
        except pymysql.Error as exc:
            raise self._error("cannot read the table", exc) from exc
        finally:
            conn.close()

    # Reading the log ----------------------------------------------------------------

    def _drain(
        self, table: Table, at: Position, folds: Folds, limit: int, replica: int = 0
    ) -> tuple[Position, bool]:
        """Fold the transactions after `at` into `folds` until the log ends or `limit`
        keys are folded, as replica `replica` (default: server_id); return the position
        after the last commit read and whether any row of the table was."""
        stream = BinLogStreamReader(
            connection_settings=dict(self._params),
            server_id=replica or self._spec.server_id,
            resume_stream=True,
            log_file=at.file,
            log_pos=at.offset,
            blocking=False,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, XidEvent, QueryEvent],
            only_tables=[table.name],
            only_schemas=[table.schema],
            # A table map is decoded once per stream, not once per transaction (most of
            # the time of a read of many small saves): a changed table comes with a new
            # table id (an ALTER opens a new table share), and a new binlog file (a
            # restart) clears the ids. The watch decodes none but needs each table map.
            freeze_schema=True,
            enable_logging=False,
        )
        layouts = Layouts(table.wanted(column for _, column in self._spec.meta_columns))
        pending: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
        found = False
        try:
            for event in stream:
                if isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                    if event.schema == table.schema and event.table == table.name:
                        pending.extend(layouts.images(event))
                    continue
                if isinstance(event, QueryEvent) and _query(event) == "BEGIN":
                    continue
                # A commit: XID for transactional tables, COMMIT or a DDL statement else.
                if pending and event.timestamp > self._until:
                    self._held = True  # read again, from `at`, by the next scan
                    break
                folds.add_all(pending, int(event.timestamp))
                found = found or bool(pending)
                pending = []
                at = Position(str(stream.log_file), int(stream.log_pos))
                if len(folds) >= limit:
                    break
        except pymysql.Error as exc:
            self._seen = None
            raise self._stream_error(at, exc) from exc
        finally:
            stream.close()
        return at, found

    # The server -----------------------------------------------------------------------

    def _prepare(self) -> Table:
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
        # not after a snapshot of the whole table. As the watching replica: a second
        # process (`sitemapd status`) must not end the daemon's reading dump, which a
        # new dump of the same server_id does; the watch just starts again.
        try:
            self._drain(table, position, Folds(table), 1, self._spec.server_id + 1)
        except SourceError as exc:
            # The watch started meanwhile and took the id: the server accepted the dump,
            # which is all the probe asks.
            cause = exc.__cause__
            if not (isinstance(cause, pymysql.Error) and cause.args[:1] == (_ER_SLAVE_SAME_ID,)):
                raise
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
            value = "" if found is None else text(found[0]).upper()
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

    def _describe(self, cur: pymysql.cursors.Cursor) -> Table:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_KEY FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (self._schema, self._name),
        )
        found = [(str(name), str(key)) for name, key in cur.fetchall()]
        columns = tuple(name for name, _ in found)
        keys = [name for name, key in found if key == "PRI"]
        return describe(self._spec, self._schema, self._name, columns, keys)

    def _binlogs(self) -> set[str]:
        """Return the names of the binlog files the server still has."""
        try:
            with self._connect(pymysql.cursors.Cursor) as conn, conn.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                return {text(row[0]) for row in cur.fetchall()}
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


def query_urls(params: dict[str, Any], dsn: str, query: str) -> Iterator[str]:
    """Yield the first column of `query` on the server of `params` (pymysql's connection
    arguments), streamed; raises SourceError naming `dsn`."""
    try:
        connection = pymysql.connect(
            **params, cursorclass=pymysql.cursors.SSCursor, autocommit=True
        )
        with connection as conn, conn.cursor() as cur:
            cur.execute(query)
            for row in cur:
                yield "" if row[0] is None else str(row[0])
    except pymysql.Error as exc:
        raise source_error(dsn, "cannot run reconcile_query", exc) from exc


def connect_params(dsn: str) -> dict[str, Any]:
    """Return pymysql's connection arguments for a mysql:// or mariadb:// URL."""
    parts = urlsplit(dsn)
    if parts.scheme.partition("+")[0] not in ("mysql", "mariadb") or not parts.hostname:
        raise SourceError(f"changelog {redact(dsn)}: needs a mysql://host/db dsn (MySQL, MariaDB)")
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
        if name in ("unix_socket", "ssl_ca", "ssl_cert", "ssl_key"):
            params[name] = value
        elif name in ("ssl_disabled", "ssl_verify_cert", "ssl_verify_identity"):
            params[name] = value.lower() in ("1", "true", "yes", "on")
        else:
            raise SourceError(f"changelog {redact(dsn)}: unknown dsn parameter {name!r}")
    return params


def _master_status(cur: pymysql.cursors.Cursor) -> Position:
    """Return the end of the binlog; raises SourceError when binary logging is off."""
    try:
        cur.execute("SHOW BINARY LOG STATUS")  # MySQL 8.2 and later
    except pymysql.ProgrammingError:
        cur.execute("SHOW MASTER STATUS")
    rows = cur.fetchall()  # all of them: an unbuffered cursor must read to the end
    if not rows:
        raise SourceError("changelog: the server writes no binlog (log_bin is off)")
    values = list(rows[0].values()) if isinstance(rows[0], dict) else list(rows[0])
    return Position(text(values[0]), int(values[1]))


def _query(event: QueryEvent) -> str:
    query = event.query
    text = query.decode("utf-8", "replace") if isinstance(query, bytes) else str(query)
    return text.strip().upper()


def quote(name: str) -> str:
    """Return `name` as a MySQL identifier."""
    return "`" + name.replace("`", "``") + "`"
