"""Inserts of many rows: many rows to a statement.

Each run of a statement opens a cursor on the table and on each of its indexes; for
`urls` (a table and six indexes, five of them partial) that costs more than inserting
the row. One INSERT of many rows pays for it once: a million-URL first build inserts in
half the time. Rows go in statements of 64, then 8, then one by one: a handful of
statement texts, few runs of one row, and SQLite's own work per row the same as from 50
rows a statement up.

The statements say `INSERT OR FAIL`: under the default (ABORT) SQLite keeps a statement
journal of every page a multi-row statement changes, to undo that statement alone, which
writes a million-URL load's pages a second time. Nothing here goes on after a failed
insert: the error rolls back the whole transaction.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any

# Rows of the longest statement; each shorter one holds an eighth of the one before.
_ROWS = 64
_STEP = 8


def insert_values(
    conn: sqlite3.Connection, insert: str, row: str, columns: Sequence[Sequence[Any]]
) -> None:
    """Run `insert` (an INSERT OR FAIL up to VALUES) with `row` (one row's values, a `?` for each
    of `columns`: one or more, of equal length) once for each row, in order."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    for statement, values in _runs(insert, row, columns, limit):
        conn.executemany(statement, values)


def _runs(
    insert: str, row: str, columns: Sequence[Sequence[Any]], limit: int
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
    done, per = 0, min(_ROWS, limit // width)
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
