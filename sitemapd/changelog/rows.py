"""A followed table's rows into changes, for the change-stream modes (binlog, logical).

A stream gives each row change as the whole row before and after it. Over one read the
changes fold by primary key into the row as the read found it and as it left it: an
INSERT then an UPDATE, or a rename then an unpublish, end as their last state, and the
intermediate one is never published. lastmod is the commit time of the read's last
change to the fingerprinted columns, the URL or whether the row is a page.
"""

from __future__ import annotations

import re
import string
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime
from itertools import compress, repeat
from operator import and_
from typing import Any, cast

import xxhash

from sitemapd.config.changelog import ChangelogSpec, ChangeRows, Shape, redact
from sitemapd.config.urltemplate import template_fields
from sitemapd.errors import SourceError

Row = dict[str, Any]
# A row, whether the change deletes it, and the change's time.
Change = tuple[Row, bool, object]
# Columns of the row a Shape reads that no table has: the change's facts.
_DELETED, _CHANGED_AT, _HASH, _URL = "\0deleted", "\0changed_at", "\0hash", "\0url"
_FACTS = frozenset((_DELETED, _CHANGED_AT, _HASH, _URL))
# The types of value a url_template formats here; a row with another goes the slow way.
_URL_TYPES = frozenset((str, int, date))
_TEXT_OR_NULL = frozenset((str, type(None)))
# A fingerprinted value's length, before its bytes.
_LENGTH = struct.Struct("<Q").pack
_EMPTY_HASH = xxhash.xxh3_128_hexdigest(b"")


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
    # The template with its fields by position (`url` order), for `str.format` over the
    # URL columns; None when it cannot be put so.
    positional: str | None = None

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
        """Return `changes` as the rows of a read."""
        return self.by_row(
            [row for row, _, _ in changes],
            [gone for _, gone, _ in changes],
            [when for _, _, when in changes],
        )

    def by_row(self, rows: list[Row], deleted: list[bool], times: list[object]) -> ChangeRows:
        """Return the rows of a read: `rows`, whether each deletes its URL, and the time
        of each. With a url_template, URLs are formatted here when every row has one, so
        that the Shape takes the rows column by column; else each row goes through the
        template, which says why a row has no URL."""
        shape = self.shape if self.fast is None else self.fast
        names = {*shape.columns, *self.url, *self.fingerprint} - _FACTS
        values = {name: list(map(dict.get, rows, repeat(name))) for name in names}
        urls: list[str] | list[None] | None = None
        if self.fast is not None:
            urls = self._urls(values)
        if urls is None:
            shape, urls = self.shape, [None] * len(rows)
        facts: dict[str, list[Any]] = {
            _DELETED: deleted,
            _CHANGED_AT: times,
            _HASH: self._hashes(values, deleted),
            _URL: urls,
        }
        return shape.by_column(
            [facts[name] if name in facts else values[name] for name in shape.columns]
        )

    def live_rows(self, rows: list[Row]) -> list[bool]:
        """Return `is_live` of each of `rows`, worked out a column at a time when the
        values are text or NULL (a stream's always are)."""
        live = [True] * len(rows)
        for column, accepted in self.live:
            found = list(map(dict.get, rows, repeat(column)))
            if not set(map(type, found)) <= _TEXT_OR_NULL:
                return list(map(self.is_live, rows))
            # is_live compares text: a NULL reads as "".
            kept = {*accepted, None} if "" in accepted else set(accepted)
            live = list(map(and_, live, map(kept.__contains__, found)))
        return live

    def _urls(self, values: dict[str, list[Any]]) -> list[str] | None:
        """Return the URL url_template makes of each row of `values` (by column), None
        when a row makes none or has a value the template's own path must look at."""
        assert self.template is not None
        columns = [values[name] for name in self.url]
        if not all(set(map(type, column)) <= _URL_TYPES for column in columns):
            return None  # NULL, a BLOB, a float: the template path says why
        try:
            if self.positional is not None:
                urls = list(map(str.strip, map(self.positional.format, *columns)))
            else:
                urls = [
                    self.template.format_map(dict(zip(self.url, args, strict=True))).strip()
                    for args in zip(*columns, strict=True)
                ]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None
        return None if "" in urls else urls

    def _hashes(self, values: dict[str, list[Any]], deleted: list[bool]) -> list[str | None]:
        """Return `fingerprint` of each row of `values` (by column), None for a deleted one."""
        parts: list[list[bytes]] = []
        for name in self.fingerprint:
            column = values[name]
            if set(map(type, column)) <= {str}:  # most columns: text
                data = list(map(str.encode, column, repeat("utf-8"), repeat("surrogateescape")))
            else:
                data = list(map(_data, column))
            parts += [list(map(_LENGTH, map(len, data))), data]
        if not parts:
            return [None if gone else _EMPTY_HASH for gone in deleted]
        hashes: list[str | None] = list(
            map(xxhash.xxh3_128_hexdigest, map(b"".join, zip(*parts, strict=True)))
        )
        if True in deleted:
            hashes = [None if gone else found for found, gone in zip(hashes, deleted, strict=True)]
        return hashes

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
        _positional(spec.url_template, url) if spec.url_template else None,
    )


def _positional(template: str, names: tuple[str, ...]) -> str | None:
    """Return `template` with each field's name replaced by its place in `names`, None
    when a format spec holds a field of its own (nested)."""
    made = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        made.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if spec and "{" in spec:
            return None
        name = re.split(r"[.\[]", field, maxsplit=1)[0]
        made.append("{" + str(names.index(name)) + field[len(name) :])
        made.append(f"!{conversion}" if conversion else "")
        made.append(f":{spec}}}" if spec else "}")
    return "".join(made)


@dataclass(slots=True)
class _Fold:
    """One primary key over a read: its row as the read found and left it."""

    before: Row | None  # None: inserted during the read
    after: Row | None  # None: deleted during the read
    last_at: float = 0
    # Commit time of the read's last change to the fingerprint, URL or liveness.
    moved_at: float | None = None


class Folds:
    """The row changes of one read, folded by primary key. A key the read only inserts
    (each of a backlog's) keeps the row it came with, not a _Fold."""

    def __init__(self, table: Table) -> None:
        self.table = table
        # A key's row as inserted, or its _Fold, in the order the read met the keys...
        self._entries: list[Row | _Fold] = []
        # ...the commit time of each inserted row...
        self._times: list[float] = []
        # ...and where each key is among them.
        self._at: dict[Any, int] = {}
        self._folded = 0

    def __len__(self) -> int:
        return len(self._at)

    def add(self, before: Row | None, after: Row | None, when: float) -> None:
        """Fold one row change committed at `when` (epoch seconds)."""
        table = self.table
        key = (after if after is not None else before or {}).get(table.key)
        at = self._at.get(key)
        if at is None:
            fold = _Fold(before, after)
            self._at[key] = len(self._entries)
            self._entries.append(fold)
            self._times.append(when)
            self._folded += 1
        else:
            entry = self._entries[at]
            if isinstance(entry, _Fold):
                fold = entry
            else:  # inserted earlier in the read: as if folded then
                fold = self._entries[at] = _Fold(None, entry, self._times[at], self._times[at])
                self._folded += 1
        fold.after = after
        fold.last_at = when
        if before is None or after is None or table.signature(before) != table.signature(after):
            fold.moved_at = when

    def add_all(self, changes: Iterable[tuple[Row | None, Row | None]], when: float) -> None:
        """Fold the row changes of one transaction committed at `when`."""
        at, entries, times, key = self._at, self._entries, self._times, self.table.key
        for before, after in changes:
            if before is None and after is not None and (found := after.get(key)) not in at:
                # An insert of a key the read has not met (a backlog's every row): kept as
                # it came, without the lookups.
                at[found] = len(entries)
                entries.append(after)
                times.append(when)
            else:
                self.add(before, after, when)

    def changes(self) -> ChangeRows:
        """Return the changes the read makes: the URLs that stopped being pages first (a
        URL that one row leaves and another takes is not deleted), then the pages."""
        table = self.table
        rows: list[Row] = []
        times: list[float] = []
        gone: list[Row] = []
        gone_at: list[float] = []
        if not self._folded:
            rows, times = cast(list[Row], self._entries), self._times
        for entry, when in zip(self._entries, self._times, strict=True) if self._folded else ():
            if not isinstance(entry, _Fold):
                rows.append(entry)
                times.append(when)
                continue
            after = entry.after if entry.after is not None and table.is_live(entry.after) else None
            if after is not None:
                rows.append(after)
                times.append(entry.last_at if entry.moved_at is None else entry.moved_at)
            before = entry.before
            if (
                before is not None
                and table.is_live(before)
                and (after is None or _pick(before, table.url) != _pick(after, table.url))
            ):
                gone.append(before)
                gone_at.append(entry.last_at)
        live = table.live_rows(rows)
        if False in live:
            rows, times = list(compress(rows, live)), list(compress(times, live))
        kept = table.by_row(rows, [False] * len(rows), cast(list[object], times))
        if not gone:
            return kept
        taken = set(kept.urls)
        deleted = table.by_row(gone, [True] * len(gone), cast(list[object], gone_at))
        return ChangeRows.of([*(row for row in deleted if row.url not in taken), *kept])


def fingerprint(row: Row, columns: tuple[str, ...]) -> str:
    """Return the hash of `columns` of `row`, alike for a snapshot's and a stream's values
    (and for `Table.by_row`'s, a column at a time)."""
    parts: list[bytes] = []
    for name in columns:
        data = _data(row.get(name))
        parts += (_LENGTH(len(data)), data)
    return xxhash.xxh3_128_hexdigest(b"".join(parts))


def _data(value: object) -> bytes:
    """Return the bytes a fingerprint takes of a column value."""
    return b"\0" if value is None else text(value).encode("utf-8", "surrogateescape")


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
