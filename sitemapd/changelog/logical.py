"""Follow a PostgreSQL table through logical decoding: a publication of the table and a
logical replication slot decoded by `pgoutput`, PostgreSQL's own plugin (no extension
to install, changes of the published table only, whole rows as text).

psycopg 3 has no client for the replication protocol (its COPY BOTH streams cannot be
read or answered), so the stream is read with psycopg2's LogicalReplicationConnection,
as is the reconcile query; psycopg 3 checks the server and takes the snapshot. The
slot's confirmed position moves only to a cursor the ledger has committed (each scan
confirms the one it starts from): after a crash the server sends again what the ledger
lacks, and what it has is skipped by position.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any, LiteralString

import psycopg
import psycopg2
import psycopg2.extensions
import psycopg2.extras
from psycopg import sql
from psycopg.rows import dict_row

from sitemapd.changelog.pgclient import connect_params, readable, stream_first_column
from sitemapd.changelog.pgoutput import (
    Commit,
    Relation,
    begin_time,
    decode,
    lsn_text,
    parse_lsn,
)
from sitemapd.changelog.rows import Folds, Row, Table, describe
from sitemapd.changelog.walretention import QUERY, Retention, measure
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

# How long a read waits for the first message when none is buffered: the stream is
# live, so this only bounds a poll that finds nothing.
_IDLE = 0.05
# After rows arrive, the stream must stay quiet this long before a read ends, so that
# the statements of one save made in separate transactions fold together...
_QUIET = 0.1
# ...but a read lasts no longer than this.
_LONGEST = 1.0
# Text forms of times, the same in the snapshot and the stream.
_SESSION = "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres"


class LogicalReader:
    """One replication stream kept open across reads; restarted when a read asks for a
    cursor other than where the stream stands (a rolled-back batch, a reconnect)."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Parse the dsn; raises ConfigError or SourceError for an unusable spec or dsn."""
        if not spec.table:
            raise ConfigError("changelog: mode 'logical' needs the table to follow")
        self._spec = spec
        params = connect_params(spec.dsn)
        params["options"] = f"{params.get('options', '')} {_SESSION}".strip()
        self._params = params
        schema, _, name = spec.table.rpartition(".")
        self._schema, self._name = schema or "public", name
        self._slot = spec.slot
        self._publication = spec.publication or spec.slot
        self._table: Table | None = None
        self._stream: Any = None  # psycopg2's ReplicationCursor
        self._stream_conn: Any = None
        self._stream_at: str | None = None
        # The last cursor confirmed to the slot: one the ledger has committed.
        self._confirmed: str | None = None
        self._relations: dict[int, Relation] = {}
        self._wakeups = Wakeups()
        # The time of the scan under way; the Begin of a transaction committed later,
        # kept for the next scan (the stream does not send it again).
        self._until = math.inf
        self._waiting: Any = None

    # The Reader protocol ----------------------------------------------------------

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return the changes of up to about `limit` rows committed after `cursor`, folded
        by key, and the position after the last commit read.

        Raises SourceError when the server cannot be reached or the stream fails.
        """
        table = self._prepare()
        if cursor is None:
            raise SourceError(f"changelog {redact(self._spec.dsn)}: no slot position to read from")
        try:
            stream = self._follow(cursor)
            folds, at, idle = self._drain(table, stream, cursor, limit)
            if idle and not folds and at == cursor == self._confirmed:
                # All the server sent is in the ledger, and it sent nothing since: the
                # WAL up to its end holds no change of the table. Confirming it lets the
                # server recycle that WAL, and shut down (it waits for its walsenders
                # to be confirmed up to the end).
                end = int(stream.wal_end)
                if end > parse_lsn(cursor):
                    stream.send_feedback(flush_lsn=end, force=True)
        except (psycopg2.Error, ValueError) as exc:
            self._drop_stream()
            raise source_error(self._spec.dsn, "cannot read the slot", exc) from exc
        self._stream_at = at
        self._wakeups.taken()
        return folds.changes(), at

    def wait(self, timeout: float) -> bool:
        """Return True when the stream has data within `timeout` s: the server sends
        only the published table's changes (and a keepalive now and then)."""
        deadline = time.monotonic() + timeout
        if not self._wakeups.ready(timeout):
            return False
        stream = self._stream
        left = max(0.0, deadline - time.monotonic())
        if stream is None:  # no read started it yet
            time.sleep(left)
            return False
        try:
            ready = readable(stream, left)
        except (OSError, ValueError, psycopg2.Error):  # closed by a read on the writer
            return False
        if ready:
            self._wakeups.woke()
        return ready

    def backlog(self, cursor: str | None) -> int | None:
        """Return None: a slot tells bytes of WAL behind, not rows."""
        return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        return stream_first_column(self._params, self._spec.dsn, query)

    def close(self) -> None:
        """Close the stream; the next read checks the server and starts it again."""
        self._drop_stream()
        self._table = None

    def check(self, cursor: str | None) -> None:
        """Raise SourceError when the stream cannot be followed from `cursor` (wal_level,
        rights, replica identity, a gone or lost slot); read nothing: a running daemon
        holds the slot."""
        self._prepare()
        state = self._slot_state()
        if cursor is not None and (state is None or state == "lost"):
            raise SourceError(
                f"changelog {redact(self._spec.dsn)}: replication slot {self._slot} is "
                f"{'gone' if state is None else 'lost'}: the table will be read again in full"
            )

    # Snapshots ----------------------------------------------------------------------

    def held(self) -> bool:
        """True when the last read stopped at a transaction committed after `until`."""
        return self._waiting is not None

    def snapshot(self, cursor: str | None, batch: int, until: float) -> Snapshot | None:
        """Confirm `cursor` (committed by the ledger) to the slot and return None; or,
        when there is no cursor or no usable slot, create the slot and return the table
        as it stood at the slot's start, in batches of `batch`, and the slot's position.

        Reads until the next call take only transactions committed by `until`. Raises
        SourceError when the server cannot be reached or refuses.
        """
        self._until = until
        table = self._prepare()
        if cursor is not None and not _is_lsn(cursor):
            foreign_cursor(self._spec, cursor)
            cursor = None
        # A slot we stream from is there; else the server says (a new connection).
        state = "streaming" if self._stream is not None else self._slot_state()
        if cursor is not None and state is not None and state != "lost":
            self._confirm(cursor)
            return None
        if cursor is not None:
            log.error(
                "changelog %s: replication slot %s is %s: reading %s.%s again in full, then "
                "following a new slot (bound the WAL a slot keeps: max_slot_wal_keep_size)",
                redact(self._spec.dsn),
                self._slot,
                "gone" if state is None else "lost (its WAL was removed)",
                table.schema,
                table.name,
            )
        self._drop_stream()
        try:
            return self._start_slot(table, state is not None, batch)
        except (psycopg.Error, psycopg2.Error) as exc:
            raise source_error(self._spec.dsn, "cannot create the replication slot", exc) from exc

    def _start_slot(self, table: Table, exists: bool, batch: int) -> Snapshot:
        """Create the slot (again) and open a transaction on the snapshot it exports."""
        with psycopg.connect(**self._params, autocommit=True) as conn:
            if exists:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (self._slot,))
        maker = psycopg2.connect(
            connection_factory=psycopg2.extras.LogicalReplicationConnection, **self._params
        )
        reader = psycopg.connect(**self._params, row_factory=dict_row)
        try:
            with maker.cursor() as cur:
                cur.execute(
                    f"CREATE_REPLICATION_SLOT {_ident(self._slot)} LOGICAL pgoutput EXPORT_SNAPSHOT"
                )
                found = cur.fetchone()
                assert found is not None
                _, start, exported, _ = found
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            reader.execute(
                sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(str(exported)))
            )
        except BaseException:
            reader.close()
            raise
        finally:
            # The snapshot lives on in the transaction that imported it.
            maker.close()
        return Snapshot(str(start), self._snapshot_rows(table, reader, batch))

    def _snapshot_rows(
        self, table: Table, conn: psycopg.Connection[Row], batch: int
    ) -> Iterator[ChangeRows]:
        """Yield the snapshot's live rows; closes `conn` at the end."""
        names = table.wanted(column for _, column in self._spec.meta_columns)
        # As text, as the stream gives them: the fingerprints of both must agree.
        query = sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(
                sql.SQL("{}::text AS {}").format(sql.Identifier(n), sql.Identifier(n))
                for n in names
            ),
            sql.Identifier(table.schema, table.name),
        )
        try:
            with conn.cursor(name="sitemapd_snapshot") as cur:
                cur.execute(query)
                yield from table.snapshot(cur, batch)
            conn.commit()
        except psycopg.Error as exc:
            raise source_error(self._spec.dsn, "cannot read the table", exc) from exc
        finally:
            conn.close()

    # The stream -----------------------------------------------------------------------

    def _follow(self, cursor: str) -> Any:
        """Return the stream, started at `cursor` unless it already stands there."""
        if self._stream is not None and self._stream_at == cursor:
            return self._stream
        self._drop_stream()
        conn = psycopg2.connect(
            connection_factory=psycopg2.extras.LogicalReplicationConnection, **self._params
        )
        try:
            stream = conn.cursor()
            stream.start_replication(
                slot_name=self._slot,
                decode=False,
                start_lsn=parse_lsn(cursor),
                options={"proto_version": "1", "publication_names": self._publication},
            )
        except BaseException:
            conn.close()
            raise
        self._stream_conn, self._stream, self._stream_at = conn, stream, cursor
        self._relations = {}
        return stream

    def _drain(self, table: Table, stream: Any, at: str, limit: int) -> tuple[Folds, str, bool]:
        """Fold the transactions the stream has until it is quiet or `limit` keys are
        folded; return them, the position after the last commit read, and whether the
        stream went quiet between transactions."""
        folds = Folds(table)
        wanted = frozenset(table.wanted(column for _, column in self._spec.meta_columns))
        pending: list[tuple[Row | None, Row | None]] = []
        # The relation ids of the followed table (a Relation message precedes its changes).
        name = (table.schema, table.name)
        followed = {oid for oid, r in self._relations.items() if (r.schema, r.name) == name}
        inside = False  # between a transaction's Begin and its Commit
        started = time.monotonic()
        quiet = _IDLE
        while True:
            message, self._waiting = self._waiting or stream.read_message(), None
            if message is None:
                left = _LONGEST - (time.monotonic() - started)
                if left <= 0 or not readable(stream, min(quiet, left)):
                    break
                continue
            found = decode(message.payload, self._relations, wanted)
            if isinstance(found, tuple):  # a Change
                relation, before, after = found
                if relation in followed:
                    pending.append((before, after))
            elif isinstance(found, Relation):
                if (found.schema, found.name) == name:
                    followed.add(found.oid)
                else:
                    followed.discard(found.oid)
            elif isinstance(found, Commit):
                at = lsn_text(found.end_lsn)
                inside = False
                if pending:
                    folds.add_all(pending, found.committed)
                    quiet = _QUIET
                    pending = []
                    if len(folds) >= limit:
                        break
            elif (begun := begin_time(message.payload)) is not None:
                if math.floor(begun) > self._until:  # lastmods count whole seconds
                    self._waiting = message  # for the next scan
                    break
                inside = True
        return folds, at, not inside and len(folds) < limit and self._waiting is None

    def _confirm(self, cursor: str) -> None:
        """Tell the slot the ledger holds everything up to `cursor`: the server may
        recycle the WAL before it."""
        try:
            stream = self._follow(self._stream_at or cursor)
            stream.send_feedback(flush_lsn=parse_lsn(cursor), force=True)
            self._confirmed = cursor
        except (psycopg2.Error, ValueError) as exc:
            self._drop_stream()
            raise source_error(self._spec.dsn, "cannot confirm the slot's position", exc) from exc

    def _drop_stream(self) -> None:
        if self._stream_conn is not None:
            self._stream_conn.close()
        self._stream = self._stream_conn = self._stream_at = self._confirmed = None
        self._waiting = None  # the server sends it again from the restart

    # The server -----------------------------------------------------------------------

    def _prepare(self) -> Table:
        """Return the table's description, checking wal_level, the user's right to
        replicate, the table's replica identity and the publication once; raises
        SourceError naming what is wrong and the fix."""
        if self._table is not None:
            return self._table
        try:
            with psycopg.connect(**self._params, autocommit=True) as conn:
                self._check_server(conn)
                table = self._describe(conn)
                self._check_publication(conn)
        except psycopg.Error as exc:
            raise source_error(self._spec.dsn, "cannot check the server", exc) from exc
        self._table = table
        return table

    def _check_server(self, conn: psycopg.Connection[Any]) -> None:
        where = f"changelog {redact(self._spec.dsn)}"
        level = _one(conn, "SHOW wal_level")
        if level != "logical":
            raise SourceError(
                f"{where}: the server's wal_level is {level}; mode 'logical' needs "
                "wal_level = logical in postgresql.conf (and a restart)"
            )
        if not _one(
            conn, "SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user"
        ):
            user = _one(conn, "SELECT current_user")
            raise SourceError(
                f"{where}: the user may not replicate: ALTER ROLE {user} REPLICATION "
                "(and a 'replication' line for it in pg_hba.conf)"
            )

    def _describe(self, conn: psycopg.Connection[Any]) -> Table:
        spec = self._spec
        qualified = f"{self._schema}.{self._name}"
        found = conn.execute(
            "SELECT c.relreplident FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            (self._schema, self._name),
        ).fetchone()
        if found is None:
            return describe(spec, self._schema, self._name, (), [])
        if found[0] != "f":
            raise SourceError(
                f"changelog {redact(spec.dsn)}: {qualified} must log whole rows (deletes and "
                f"renames need the old URL, unchanged TOASTed columns their value): "
                f"ALTER TABLE {qualified} REPLICA IDENTITY FULL"
            )
        oid = sql.SQL("{}::regclass").format(sql.Literal(qualified))
        columns = conn.execute(
            sql.SQL(
                "SELECT attname FROM pg_attribute WHERE attrelid = {} AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attnum"
            ).format(oid)
        ).fetchall()
        keys = conn.execute(
            sql.SQL(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = {} AND i.indisprimary"
            ).format(oid)
        ).fetchall()
        return describe(
            spec,
            self._schema,
            self._name,
            tuple(str(name) for (name,) in columns),
            [str(name) for (name,) in keys],
        )

    def _check_publication(self, conn: psycopg.Connection[Any]) -> None:
        """Create the publication of the table when missing; raises SourceError when one
        of that name exists without the table."""
        if _one(conn, "SELECT count(*) FROM pg_publication WHERE pubname = %s", self._publication):
            if not _one(
                conn,
                "SELECT count(*) FROM pg_publication_tables WHERE pubname = %s "
                "AND schemaname = %s AND tablename = %s",
                self._publication,
                self._schema,
                self._name,
            ):
                raise SourceError(
                    f"changelog {redact(self._spec.dsn)}: publication {self._publication} "
                    f"does not publish {self._schema}.{self._name}: ALTER PUBLICATION "
                    f"{self._publication} ADD TABLE {self._schema}.{self._name}"
                )
            return
        conn.execute(
            sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(
                sql.Identifier(self._publication), sql.Identifier(self._schema, self._name)
            )
        )

    def retention(self) -> Retention | None:
        """Return the WAL the slot keeps on the server, None when there is no slot;
        raises SourceError when the server cannot be asked."""
        try:
            with psycopg.connect(**self._params, autocommit=True) as conn:
                row = conn.execute(QUERY, (self._slot,)).fetchone()
        except psycopg.Error as exc:
            raise source_error(self._spec.dsn, "cannot measure the slot's WAL", exc) from exc
        return measure(row, self._slot)

    def _slot_state(self) -> str | None:
        """Return the slot's wal_status ("reserved", "lost", ...), None when it is gone."""
        try:
            with psycopg.connect(**self._params, autocommit=True) as conn:
                found = conn.execute(
                    "SELECT coalesce(wal_status, 'reserved') FROM pg_replication_slots "
                    "WHERE slot_name = %s",
                    (self._slot,),
                ).fetchone()
        except psycopg.Error as exc:
            raise source_error(self._spec.dsn, "cannot find the replication slot", exc) from exc
        return None if found is None else str(found[0])


def _is_lsn(text: str) -> bool:
    try:
        parse_lsn(text)
    except ValueError:
        return False
    return True


def _one(conn: psycopg.Connection[Any], query: LiteralString, *params: object) -> Any:
    found = conn.execute(query, params or None).fetchone()
    return None if found is None else found[0]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
