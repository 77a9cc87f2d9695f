"""The ledger opened to be read alone (`status`, `explain`, `verify`), by a connection
that writes nothing: after a build killed in its first load, once the load's writes are
rolled back, as the next build would roll them back."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_readonly(path: Path) -> sqlite3.Connection:
    """Return a read-only connection to the ledger at `path`; raises sqlite3.Error.

    A first load writes through a rollback journal (`Ledger._first_load_journal`): killed, it
    leaves a hot journal, which a read-only connection cannot roll back
    (SQLITE_READONLY_ROLLBACK, "attempt to write a readonly database"). A connection
    that may write rolls it back as it first reads, and writes nothing else: the ledger
    is then as its last commit left it, as the next build or daemon finds it."""
    try:
        return _reading(f"{path.as_uri()}?mode=ro")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode != sqlite3.SQLITE_READONLY_ROLLBACK:
            raise
    _reading(f"{path.as_uri()}?mode=rw").close()
    return _reading(f"{path.as_uri()}?mode=ro")


def _reading(uri: str) -> sqlite3.Connection:
    """Return a connection to `uri` that has read the schema (the first read takes the
    shared lock, and finds a hot journal); raises sqlite3.Error."""
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn
