"""Inserts of many rows: many rows to a statement, and a first load's on a thread of
their own.

Each run of a statement opens a cursor on the table and on each of its indexes; for
`urls` (a table and six indexes, five of them partial) that costs more than inserting
the row. One INSERT of many rows pays for it once: a million-URL first build inserts in
half the time. Rows go in statements of 64 (or more, as the caller says), then 8, then
one by one: a handful of statement texts, few runs of one row, and SQLite's own work per
row the same as from 50 rows a statement up.

The statements say `INSERT OR FAIL`: under the default (ABORT) SQLite keeps a statement
journal of every page a multi-row statement changes, to undo that statement alone, which
writes a million-URL load's pages a second time. Nothing here goes on after a failed
insert: the error rolls back the whole transaction.
"""

from __future__ import annotations

import functools
import sqlite3
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

# Rows of the longest statement, by default; each shorter one holds an eighth of the
# one before.
_ROWS = 64
_STEP = 8
# Pieces of work `Inserts` may lag behind by (a list chunk's rows: about 1,000).
_QUEUE = 8
# `sqlite3.threadsafety` of an SQLite that locks a connection around each call.
_SERIALIZED = 3


def insert_values(
    conn: sqlite3.Connection,
    insert: str,
    row: str,
    columns: Sequence[Sequence[Any]],
    rows: int = _ROWS,
) -> None:
    """Run `insert` (an INSERT OR FAIL up to VALUES) with `row` (one row's values, a `?` for each
    of `columns`: one or more, of equal length) once for each row, in order, at most `rows`
    rows a statement."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    for statement, values in _runs(insert, row, columns, rows, limit):
        conn.executemany(statement, values)


def _runs(
    insert: str, row: str, columns: Sequence[Sequence[Any]], rows: int, limit: int
) -> list[tuple[str, list[list[Any]]]]:
    """Return the statements of `insert_values` and the values each run of them binds,
    at most `limit` values a run. A column given twice (the same list) is bound once."""
    count = len(columns[0])
    bound: list[Sequence[Any]] = []
    slots: list[int] = []  # the bound column of each `?` of `row`
    # (Only where each `?` of `row` is a value: a literal may hold one too.)
    alike = row.count("?") == len(columns)
    for column in columns:
        slot = next((n for n, seen in enumerate(bound) if seen is column and alike), len(bound))
        if slot == len(bound):
            bound.append(column)
        slots.append(slot)
    width = len(bound)
    # Row by row, each column's values put in place at once: no Python code per value
    # (a column of another length raises ValueError).
    flat: list[Any] = [None] * (count * width)
    for at, column in enumerate(bound):
        flat[at::width] = column
    runs: list[tuple[str, list[list[Any]]]] = []
    done, per = 0, min(rows, limit // width)
    while done < count:
        per = max(1, per)
        whole = done + (count - done) // per * per
        if whole > done:
            step = per * width
            runs.append(
                (
                    _statement(insert, row, per, tuple(slots)),
                    [flat[at : at + step] for at in range(done * width, whole * width, step)],
                )
            )
            done = whole
        per //= _STEP
    return runs


@functools.lru_cache(maxsize=32)
def _statement(insert: str, row: str, rows: int, slots: tuple[int, ...]) -> str:
    """Return `insert` with `rows` rows of values, each `row` with its `?`s bound to the
    columns `slots` says (each numbered, where a column is named twice)."""
    width = max(slots) + 1
    if width == len(slots):
        return f"{insert} VALUES {', '.join([row] * rows)}"
    # Binding a value costs SQLite a copy of it: one a row of the lastmod and the time
    # a list gives (almost always the same) saves a tenth of a first load's inserts.
    parts = row.split("?")
    return f"{insert} VALUES " + ", ".join(
        parts[0]
        + "".join(
            f"?{at * width + slot + 1}{part}" for slot, part in zip(slots, parts[1:], strict=True)
        )
        for at in range(rows)
    )


class Inserts:
    """Statements of a first load run in order on a thread of their own, while the
    caller prepares the next: SQLite lets go of the GIL while it works, so its inserts
    and the Python that turns a list's lines into rows and entries share two cores.

    The connection is shared: while work is pending, no other write may use it; `settle`
    waits for it all. A read on it meanwhile (a source asking a cursor) waits for the
    statement running: SQLite built serialized (`sqlite3.threadsafety` 3) locks the
    connection around each call. Built otherwise, the work runs on the caller's thread.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self._thread: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._failed = False  # the thread's work stops at its first error

    def values(
        self, insert: str, row: str, columns: Sequence[Sequence[Any]], rows: int = _ROWS
    ) -> None:
        """`insert_values` on the thread, its values laid out here."""
        self._submit(self._run_all, _runs(insert, row, columns, rows, self._limit))

    def execute(self, statement: str, values: Sequence[Any]) -> None:
        """Run `statement` with `values` on the thread."""
        self._submit(self.conn.execute, statement, values)

    def _run_all(self, runs: list[tuple[str, list[list[Any]]]]) -> None:
        for statement, values in runs:
            self.conn.executemany(statement, values)

    def _submit(self, job: Callable[..., object], *args: Any) -> None:
        """Run `job(*args)` on the thread, after the work submitted before; raises the
        error of earlier work (sqlite3.Error) once it is known."""
        if sqlite3.threadsafety != _SERIALIZED:
            job(*args)
            return
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="sitemapd-insert")
        while len(self._pending) >= _QUEUE:
            self._pending.popleft().result()
        self._pending.append(self._thread.submit(self._run, job, args))

    def _run(self, job: Callable[..., object], args: tuple[Any, ...]) -> None:
        if self._failed:
            return
        try:
            job(*args)
        except BaseException:
            self._failed = True
            raise

    def settle(self) -> None:
        """Wait for the work submitted; raises its first error (sqlite3.Error)."""
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Wait for the work submitted to end, its errors unheard (the caller's own
        error is on its way)."""
        if self._thread is not None:
            self._thread.shutdown()
            self._thread = None
        self._pending.clear()
        self._failed = False
