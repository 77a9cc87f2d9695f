"""Connecting to PostgreSQL through psycopg2: a dsn's parameters, and a query streamed.

psycopg2 reads the change table and the logical replication stream: it loads in a
fifth of psycopg 3's time (which loads asyncio, importlib.metadata and a module a type),
a cost each daemon's start-up pays before its first read.
"""

from __future__ import annotations

import math
import select
from collections.abc import Iterator
from typing import Any

import psycopg2
import psycopg2.extensions

from sitemapd.config.changelog import source_error

CONNECT_TIMEOUT = 10
# Rows a streamed query fetches at a time.
_STREAM_ROWS = 2000


def readable(conn: Any, timeout: float) -> bool:
    """Return True when `conn` (a connection or a replication cursor) has something to
    read within `timeout` seconds; raises psycopg2.Error when it is closed."""
    # poll, not select: select refuses a descriptor past 1023, and a daemon raises its
    # open-files limit to keep thousands of files open.
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    return bool(poller.poll(math.ceil(max(0.0, timeout) * 1000)))


def connect_params(dsn: str) -> dict[str, Any]:
    """Return the connection parameters of `dsn` (a URL or key=value pairs), with a
    connect timeout and the application name unless it sets them; raises SourceError
    for a malformed one."""
    try:
        params: dict[str, Any] = psycopg2.extensions.parse_dsn(dsn)
    except psycopg2.Error as exc:
        raise source_error(dsn, "bad dsn", exc) from exc
    params.setdefault("connect_timeout", CONNECT_TIMEOUT)
    params.setdefault("application_name", "sitemapd")
    return params


def connect(params: dict[str, Any]) -> psycopg2.extensions.connection:
    """Return a new connection in autocommit; raises psycopg2.Error."""
    conn: psycopg2.extensions.connection = psycopg2.connect(**params)
    conn.autocommit = True
    return conn


def stream_first_column(params: dict[str, Any], dsn: str, query: str) -> Iterator[str]:
    """Yield the first column of `query` as text ("" for NULL), fetched in batches by a
    server-side cursor of a connection of its own; raises SourceError."""
    try:
        conn = psycopg2.connect(**params)
        try:
            # A named cursor lives in a transaction: this connection is not in autocommit.
            with conn.cursor(name="sitemapd_live_urls") as cur:
                cur.itersize = _STREAM_ROWS
                # Without parameters psycopg2 sends the query as written: `%` stays literal.
                cur.execute(query)
                for row in cur:
                    yield "" if row[0] is None else str(row[0])
        finally:
            conn.close()
    except psycopg2.Error as exc:
        raise source_error(dsn, "cannot run reconcile_query", exc) from exc
