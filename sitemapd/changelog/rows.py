"""A followed table's rows into changes, for the change-stream modes (binlog, logical).

A stream gives each row change as the whole row before and after it. Over one read the
changes fold by primary key into the row as the read found it and as it left it: an
INSERT then an UPDATE, or a rename then an unpublish, end as their last state, and the
intermediate one is never published. lastmod is the commit time of the read's last
change to the fingerprinted columns, the URL or whether the row is a page.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

import xxhash

from sitemapd.config.changelog import ChangelogSpec, ChangeRows, Shape, redact, template_fields
from sitemapd.errors import SourceError

Row = dict[str, Any]
# A row, whether the change deletes it, and the change's time.
Change = tuple[Row, bool, object]
# Columns of the row a Shape reads that no table has: the change's facts.
_DELETED, _CHANGED_AT, _HASH, _URL = "\0deleted", "\0changed_at", "\0hash", "\0url"
# The values a url_template formats here; a row with another goes the slow way.
_URL_TYPES = (str, int, date)
# A fingerprinted value's length, before its bytes.
_LENGTH = struct.Struct("<Q").pack


@dataclass(frozen=True, slots=True)
class Table:
    """The followed table: its columns, key, and what makes a row a page and its URL."""

    schema: str
    name: str
    columns: tuple[str, ...]
    key: str
    url: tuple[str, ...]  # the columns the URL is made of
    fingerprint: tuple[str, ...]  # the columns whose change moves lastmod
    live: tuple[tuple[str, tuple[str, ...]], ...]
    changed_at: str | None  # the column giving a snapshot row's lastmod
    shape: Shape
    # With a url_template: the template, and a Shape reading URLs formatted here.
    template: str | None = None
    fast: Shape | None = None

    def wanted(self, meta: Iterable[str]) -> list[str]:
        """Return the columns a snapshot selects: the key, those a change is made of and
        the `meta` columns."""
        names = [self.key, *self.url, *(column for column, _ in self.live), *self.fingerprint]
        names += [*meta, *([self.changed_at] if self.changed_at else [])]
        return list(dict.fromkeys(names))

    def where(self, quote: Callable[[str], str]) -> tuple[str, list[str]]:
        """Return the SQL condition (" WHERE ...", with %s marks) and its values that
        keep the rows that may be pages, "" when any row may: a CMS's table also holds
        drafts and revisions. The database compares by its collation, so is_live()
        still decides."""
        if not self.live:
            return "", []
        terms = [
            f"{quote(column)} IN ({', '.join(['%s'] * len(accepted))})"
            for column, accepted in self.live
        ]
        return " WHERE " + " AND ".join(terms), [v for _, accepted in self.live for v in accepted]

    def is_live(self, row: Row) -> bool:
        """True when `row` matches every `live` condition."""
        # A loop, not all() over a generator: this runs for every row of a read.
        for column, accepted in self.live:  # noqa: SIM110
            if text(row.get(column)) not in accepted:
                return False
        return True

    def rows(self, changes: list[Change]) -> ChangeRows:
        """Return `changes` as the rows of a read: with a url_template, URLs formatted
        here when every row has one, so that the Shape takes the rows column by column;
        else each row through the template, which says why a row has no URL."""
        shape = self.shape
        if self.fast is not None and self.template is not None:
            urls = [self._url(row) for row, _, _ in changes]
            if None not in urls:
                return self.fast.by_column(self._columns(self.fast, changes, urls))
        return shape.by_column(self._columns(shape, changes, [None] * len(changes)))

    def _columns(
        self, shape: Shape, changes: list[Change], urls: list[str | None]
    ) -> list[list[Any]]:
        """Return the columns `shape` reads of `changes`: their facts, their URLs of
        `urls`, the rows' values."""
        rows = [row for row, _, _ in changes]
        deleted = [gone for _, gone, _ in changes]
        printed = self.fingerprint
        facts: dict[str, list[Any]] = {
            _DELETED: deleted,
            _CHANGED_AT: [when for _, _, when in changes],
            _HASH: [
                None if gone else fingerprint(row, printed)
                for row, gone in zip(rows, deleted, strict=True)
            ],
            _URL: urls,
        }
        return [
            facts[name] if name in facts else [row.get(name) for row in rows]
            for name in shape.columns
        ]

    def _url(self, row: Row) -> str | None:
        """Return the URL url_template makes of `row`, None when it makes none."""
        assert self.template is not None
        args = {}
        for name in self.url:
            value = row.get(name)
            if not isinstance(value, _URL_TYPES):
                return None  # NULL, a BLOB, a float: the template path says why
            args[name] = value
        try:
            return self.template.format_map(args).strip() or None
        except (ValueError, TypeError):
            return None

    def snapshot(self, rows: Iterable[Row], batch: int) -> Iterator[ChangeRows]:
        """Yield the live ones of a snapshot's `rows`, `batch` at a time."""
        changed_at = self.changed_at
        taken: list[Change] = []
        for row in rows:
            if self.is_live(row):
                taken.append((row, False, row.get(changed_at) if changed_at else None))
                if len(taken) >= batch:
                    yield self.rows(taken)
                    taken = []
        if taken:
            yield self.rows(taken)

    def signature(self, row: Row) -> tuple[Any, ...]:
        """Return what decides lastmod: the row's URL, whether it is a page, its fingerprint."""
        return (_pick(row, self.url), self.is_live(row), fingerprint(row, self.fingerprint))


def describe(
    spec: ChangelogSpec, schema: str, name: str, columns: tuple[str, ...], keys: list[str]
) -> Table:
    """Return the Table of `schema.name` with `columns` and primary key `keys` as `spec`
    maps it; raises SourceError naming a mapped column the table lacks."""
    where = f"{schema}.{name}"
    if not columns:
        raise SourceError(
            f"changelog {redact(spec.dsn)}: no table {where}, or the user may not read it"
        )
    key = spec.id_column if spec.id_column in columns else (keys[0] if len(keys) == 1 else "")
    if not key:
        raise SourceError(
            f"changelog {redact(spec.dsn)}: {where} needs a one-column primary key "
            "(or columns.id naming a unique column)"
        )
    url = template_fields(spec.url_template) if spec.url_template else (spec.url_column or "",)
    printed = spec.fingerprint_columns or columns
    needed = [*url, *(c for c, _ in spec.live), *printed, *(c for _, c in spec.meta_columns)]
    if spec.changed_at_column:
        needed.append(spec.changed_at_column)
    missing = [column for column in needed if column not in columns]
    if missing:
        raise SourceError(
            f"changelog {redact(spec.dsn)}: {where} has no column {missing[0]!r} "
            f"(its columns: {', '.join(columns)})"
        )
    shaped = replace(
        spec,
        query=None,
        id_column=key,
        op_column=None,
        deleted_column=_DELETED,
        changed_at_column=_CHANGED_AT,
        hash_column=_HASH,
    )
    fast = None
    if spec.url_template:
        fast = Shape(replace(shaped, url_template=None, url_column=_URL), (key,))
    return Table(
        schema,
        name,
        columns,
        key,
        url,
        printed,
        spec.live,
        spec.changed_at_column or None,
        Shape(shaped, (key,)),
        spec.url_template,
        fast,
    )


@dataclass(slots=True)
class _Fold:
    """One primary key over a read: its row as the read found and left it."""

    before: Row | None  # None: inserted during the read
    after: Row | None  # None: deleted during the read
    last_at: float = 0
    # Commit time of the read's last change to the fingerprint, URL or liveness.
    moved_at: float | None = None


class Folds:
    """The row changes of one read, folded by primary key."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._folds: dict[Any, _Fold] = {}

    def __len__(self) -> int:
        return len(self._folds)

    def add(self, before: Row | None, after: Row | None, when: float) -> None:
        """Fold one row change committed at `when` (epoch seconds)."""
        table = self.table
        key = (after if after is not None else before or {}).get(table.key)
        fold = self._folds.get(key)
        if fold is None:
            fold = self._folds[key] = _Fold(before, after)
        fold.after = after
        fold.last_at = when
        if before is None or after is None or table.signature(before) != table.signature(after):
            fold.moved_at = when

    def add_all(self, changes: Iterable[tuple[Row | None, Row | None]], when: float) -> None:
        """Fold the row changes of one transaction committed at `when`."""
        folds, key = self._folds, self.table.key
        for before, after in changes:
            if before is None and after is not None and (found := after.get(key)) not in folds:
                # An insert of a key the read has not met (a backlog's every row): as add()
                # would fold it, without the lookups.
                folds[found] = _Fold(None, after, when, when)
            else:
                self.add(before, after, when)

    def changes(self) -> ChangeRows:
        """Return the changes the read makes: the URLs that stopped being pages first (a
        URL that one row leaves and another takes is not deleted), then the pages."""
        table = self.table
        upserts: list[Change] = []
        deletes: list[Change] = []
        for fold in self._folds.values():
            after = fold.after if fold.after is not None and table.is_live(fold.after) else None
            if after is not None:
                moved = fold.last_at if fold.moved_at is None else fold.moved_at
                upserts.append((after, False, moved))
            before = fold.before
            if (
                before is not None
                and table.is_live(before)
                and (after is None or _pick(before, table.url) != _pick(after, table.url))
            ):
                deletes.append((before, True, fold.last_at))
        kept = table.rows(upserts)
        if not deletes:
            return kept
        taken = set(kept.urls)
        gone = table.rows(deletes)
        return ChangeRows.of([*(row for row in gone if row.url not in taken), *kept])


def fingerprint(row: Row, columns: tuple[str, ...]) -> str:
    """Return the hash of `columns` of `row`, alike for a snapshot's and a stream's values."""
    # One call over the joined parts: the same digest as an update per part, less work.
    parts: list[bytes] = []
    append = parts.append
    for name in columns:
        value = row.get(name)
        if value is None:
            data = b"\0"
        elif type(value) is str:  # most values: first
            data = value.encode("utf-8", "surrogateescape")
        else:
            data = text(value).encode("utf-8", "surrogateescape")
        append(_LENGTH(len(data)))
        append(data)
    return xxhash.xxh3_128_hexdigest(b"".join(parts))


def text(value: object) -> str:
    """Return a column value as text, the same whether read by query or from a stream."""
    if type(value) is str:  # most values: first
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "surrogateescape")
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _pick(row: Row, columns: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row.get(name) for name in columns)
