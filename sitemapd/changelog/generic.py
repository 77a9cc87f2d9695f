"""Read a change table in any database SQLAlchemy Core reaches, with an id overlap window.

Without a transaction-ordered cursor, a row whose transaction commits late can appear
below ids already read. The cursor keeps the highest id read and the ids inside the
window (max - overlap, max] not seen yet ("gaps"); each read asks for those again, so
a late row is found as long as its id is within `overlap` of the newest one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine, column, create_engine, func, literal, select, table, text
from sqlalchemy.exc import NoSuchModuleError, SQLAlchemyError
from sqlalchemy.sql import FromClause, Select
from sqlalchemy.sql.expression import ColumnClause

from sitemapd.config.changelog import (
    MAX_BACKLOG,
    ChangelogSpec,
    ChangeRows,
    Shape,
    redact,
    source_error,
)
from sitemapd.errors import SourceError


class GenericReader:
    """Each read uses a pooled connection briefly; pre-ping drops connections a restart broke."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Create the engine (it connects lazily); raises SourceError for an unusable URL."""
        self._spec = spec
        self._shape = Shape(spec, (spec.id_column,))
        try:
            self._engine: Engine = create_engine(spec.dsn, pool_pre_ping=True)
        except ImportError as exc:
            raise SourceError(
                f"changelog {redact(spec.dsn)}: the database driver is not installed: {exc}"
            ) from exc
        except NoSuchModuleError as exc:
            raise source_error(spec.dsn, "unknown kind of database", exc) from exc
        except SQLAlchemyError as exc:
            raise source_error(spec.dsn, "not a usable database URL", exc) from exc
        columns: list[ColumnClause[Any]] = [column(name) for name in self._shape.columns]
        source: FromClause
        if spec.query:
            source = text(spec.query).columns(*columns).subquery("q")
        else:
            schema, _, name = (spec.table or "").rpartition(".")
            source = table(name, *columns, schema=schema or None)
        self._key = source.c[spec.id_column]
        self._select = select(*(source.c[name] for name in self._shape.columns))
        self._source = source

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return up to `limit` new rows (late ones in the window first) and the next cursor.

        Raises SourceError when the database cannot be reached or the query fails.
        """
        top, gaps = self._parse(cursor)
        try:
            with self._engine.connect() as conn:
                late = []
                if gaps:
                    wanted = self._select.where(self._key.in_(sorted(gaps)))
                    late = list(conn.execute(wanted.order_by(self._key).limit(limit)))
                fresh = []
                if len(late) < limit:
                    newer = self._select if top is None else self._select.where(self._key > top)
                    fresh = list(conn.execute(newer.order_by(self._key).limit(limit - len(late))))
        except SQLAlchemyError as exc:
            raise source_error(self._spec.dsn, "cannot read", exc) from exc
        if not late and not fresh:
            return ChangeRows.of([]), cursor
        gaps -= {int(values[0]) for values in late}
        # On the first read, ids from 1 below the first row may still be in flight too.
        previous = 0 if top is None else top
        for values in fresh:
            key = int(values[0])
            gaps.update(range(max(previous + 1, key - self._spec.overlap + 1), key))
            previous = key
        top = previous
        return self._shape.rows(late + fresh), self._format(top, gaps)

    def wait(self, timeout: float) -> bool:
        """Return False at once: no notifications through SQLAlchemy."""
        return False

    def backlog(self, cursor: str | None) -> int | None:
        """Return how many rows wait above the cursor's highest id (capped), None if unknown."""
        try:
            top, _ = self._parse(cursor)
            waiting: Select[Any] = select(literal(1)).select_from(self._source)
            if top is not None:
                waiting = waiting.where(self._key > top)
            counted = select(func.count()).select_from(waiting.limit(MAX_BACKLOG).subquery())
            with self._engine.connect() as conn:
                return int(conn.execute(counted).scalar_one())
        except (SQLAlchemyError, SourceError):
            return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`, streamed; raises SourceError."""
        try:
            with self._engine.connect() as conn:
                result = conn.execution_options(stream_results=True).execute(text(query))
                for row in result:
                    yield "" if row[0] is None else str(row[0])
        except SQLAlchemyError as exc:
            raise source_error(self._spec.dsn, "cannot run reconcile_query", exc) from exc

    def close(self) -> None:
        """Close pooled connections; the next read opens new ones."""
        self._engine.dispose()

    def _parse(self, cursor: str | None) -> tuple[int | None, set[int]]:
        """Return (highest id read, gap ids) of a cursor; raises SourceError if malformed."""
        if cursor is None:
            return None, set()
        try:
            state = json.loads(cursor)
            gaps: set[int] = set()
            for low, high in state.get("gaps", []):
                gaps.update(range(int(low), int(high) + 1))
            return int(state["id"]), gaps
        except (ValueError, TypeError, KeyError, AttributeError):
            raise SourceError(
                f"changelog {redact(self._spec.dsn)}: bad cursor {cursor!r}"
            ) from None

    def _format(self, top: int, gaps: set[int]) -> str:
        """Return the cursor text: gaps outside the window are dropped, runs kept as ranges."""
        runs: list[list[int]] = []
        for key in sorted(gap for gap in gaps if gap > top - self._spec.overlap):
            if runs and runs[-1][1] == key - 1:
                runs[-1][1] = key
            else:
                runs.append([key, key])
        return json.dumps({"id": top, "gaps": runs}, separators=(",", ":"))
