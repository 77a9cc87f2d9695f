"""One write transaction on the ledger's connection, and what query modules build on."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path


class Transaction(AbstractContextManager[None]):
    """BEGIN IMMEDIATE on entry; COMMIT, or ROLLBACK when the block raises."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


class Transactions:
    """A ledger part: the writer connection and its transactions, and a reader."""

    conn: sqlite3.Connection
    path: Path
    _reader: sqlite3.Connection | None = None

    def _read(self) -> sqlite3.Connection:
        """Return a second connection that sees the last committed state only."""
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, check_same_thread=False)
        return self._reader

    def transaction(self) -> Transaction:
        """Return a context manager: one write transaction (BEGIN IMMEDIATE), rolled back
        when its block raises."""
        return Transaction(self.conn)
