"""Inserts of many rows: many rows to a statement.

Each run of a statement opens a cursor on the table and on each of its indexes; for
`urls` (a table and six indexes, five of them partial) that costs more than inserting
the row. One INSERT of 50 rows pays for it once: a million-URL first build inserts in
half the time.

The statements say `INSERT OR FAIL`: under the default (ABORT) SQLite keeps a statement
journal of every page a multi-row statement changes, to undo that statement alone, which
writes a million-URL load's pages a second time. Nothing here goes on after a failed
insert: the error rolls back the whole transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

_ROWS = 50
# SQLite's limit on bound values before 3.32 (later ones allow 32,766).
_MAX_VALUES = 999


def insert_values(
    conn: sqlite3.Connection, insert: str, row: str, columns: Sequence[Sequence[Any]]
) -> None:
    """Run `insert` (an INSERT OR FAIL up to VALUES) with `row` (one row's values, a `?` for each
    of `columns`: one or more, of equal length) once for each row, in order."""
    count, width = len(columns[0]), len(columns)
    per = max(1, min(_ROWS, _MAX_VALUES // width))
    whole = count - count % per
    # Row by row, each column's values put in place at once: no Python code per value
    # (a column of another length raises ValueError).
    flat: list[Any] = [None] * (count * width)
    for at, column in enumerate(columns):
        flat[at::width] = column
    if whole:
        step = per * width
        conn.executemany(
            f"{insert} VALUES {', '.join([row] * per)}",
            [flat[at : at + step] for at in range(0, whole * width, step)],
        )
    if whole < count:  # the rest one by one: a statement of its own for each size
        conn.executemany(
            f"{insert} VALUES {row}",
            [flat[at : at + width] for at in range(whole * width, count * width, width)],
        )
