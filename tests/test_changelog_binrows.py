"""The binlog's rows read by `binrows` hold the values mysql-replication decodes, for
every column type a CMS table has, on a real MariaDB."""

from __future__ import annotations

from typing import Any

import pytest
from mariadb import MariaDB
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from sitemapd.changelog.binlog import connect_params
from sitemapd.changelog.binrows import Layouts

COLUMNS = {
    "id": "BIGINT UNSIGNED PRIMARY KEY AUTO_INCREMENT",
    "tiny": "TINYINT",
    "utiny": "TINYINT UNSIGNED",
    "small": "SMALLINT",
    "medium": "MEDIUMINT",
    "umedium": "MEDIUMINT UNSIGNED",
    "regular": "INT",
    "big": "BIGINT",
    "real4": "FLOAT",
    "real8": "DOUBLE",
    "money": "DECIMAL(12, 3)",
    "yr": "YEAR",
    "day": "DATE",
    "at0": "DATETIME",
    "at3": "DATETIME(3)",
    "at6": "DATETIME(6)",
    "stamp": "TIMESTAMP(2) NULL",
    "clock": "TIME(3)",
    "code": "CHAR(10)",
    "slug": "VARCHAR(300)",
    "short": "VARCHAR(20)",
    "latin": "VARCHAR(40) CHARACTER SET latin1",
    "title": "TEXT",
    "body": "LONGTEXT",
    "raw": "BLOB",
    "bin": "VARBINARY(30)",
    "kind": "ENUM('post', 'page')",
    "tags": "SET('a', 'b', 'c')",
    "flags": "BIT(10)",
    "doc": "JSON",
}
ROWS = [
    "(1, -5, 250, -300, -8000000, 16000000, -2000000000, -9000000000000000000, 1.5, 2.25,"
    " 123456789.125, 2024, '2024-02-29', '2024-02-29 23:59:59', '2001-01-01 00:00:00.123',"
    " '1999-12-31 12:34:56.654321', '2020-05-05 05:05:05.5', '-12:00:00.25', 'abc',"
    " REPEAT('é', 300), 'short', 'café', 'Title ☃', REPEAT('body ', 1000), 0x00ff10,"
    " 0x8081, 'page', 'a,c', b'1010101010', '{\"k\": [1, 2]}')",
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL)",
    "(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '0000-00-00', '0000-00-00 00:00:00',"
    " '1000-01-01 00:00:00.001', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01',"
    " '00:00:00', '', '', '', '', '', '', '', '', 'post', '', b'0', 'null')",
]
# Stepped over, not decoded: a layout must still find where the next value starts.
SKIPPED = {"money", "clock", "kind", "tags", "flags", "doc", "medium", "real4", "bin"}


Start = tuple[str, int, str]  # the binlog file and offset before the rows, the database


def _images(server: MariaDB, start: Start, wanted: set[str] | None) -> list[Any]:
    """Return the images of the table's row events after `start`, read by
    Layouts(wanted), or by the library when `wanted` is None."""
    file, offset, database = start
    stream = BinLogStreamReader(
        connection_settings=connect_params(server.dsn(database)),
        server_id=77,
        resume_stream=True,
        log_file=file,
        log_pos=offset,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_tables=["kinds"],
        only_schemas=[database],
    )
    layouts = None if wanted is None else Layouts(wanted)
    found: list[Any] = []
    try:
        for event in stream:
            if layouts is not None:
                found.extend(layouts.images(event))
                continue
            for row in event.rows:
                if isinstance(event, UpdateRowsEvent):
                    found.append((row["before_values"], row["after_values"]))
                elif isinstance(event, WriteRowsEvent):
                    found.append((None, row["values"]))
                else:
                    found.append((row["values"], None))
    finally:
        stream.close()
    return found


def _only(images: list[Any], wanted: set[str]) -> list[Any]:
    return [
        tuple(None if row is None else {k: row[k] for k in wanted} for row in image)
        for image in images
    ]


@pytest.fixture(scope="module")
def kinds(mariadb: MariaDB) -> Start:
    """Return where the binlog stood before the `kinds` rows of a new database were
    inserted, updated and deleted."""
    database = "binrows"
    mariadb.create_database(database)
    with mariadb.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # zero dates, as old WordPress sites have
        cur.execute(
            "CREATE TABLE kinds (" + ", ".join(f"{n} {t}" for n, t in COLUMNS.items()) + ")"
        )
        cur.execute("SHOW MASTER STATUS")
        file, offset = cur.fetchone()[:2]
        cur.execute("INSERT INTO kinds VALUES " + ", ".join(ROWS))
        cur.execute("UPDATE kinds SET slug = 'moved', at6 = NULL, body = 'short' WHERE id < 3")
        cur.execute("DELETE FROM kinds WHERE id = 2")
        conn.commit()
    return str(file), int(offset), database


def test_layout_reads_the_values_the_library_decodes(mariadb: MariaDB, kinds: Start) -> None:
    everything = _images(mariadb, kinds, None)
    wanted = set(COLUMNS) - SKIPPED
    fast = _images(mariadb, kinds, wanted)
    assert len(everything) == 3 + 2 + 1
    assert fast == _only(everything, wanted)
    # Read here, not by the library: no column but the wanted ones.
    assert all(set(row) == wanted for image in fast for row in image if row is not None)


def test_a_column_it_cannot_decode_leaves_the_event_to_the_library(
    mariadb: MariaDB, kinds: Start
) -> None:
    everything = _images(mariadb, kinds, None)
    wanted = {"id", "money", "slug"}  # DECIMAL is decoded by the library only
    assert _images(mariadb, kinds, wanted) == everything
