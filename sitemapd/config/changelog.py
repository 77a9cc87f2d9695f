"""A change log's description, the row a reader yields, and how a database row becomes one."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Any, NamedTuple, overload
from urllib.parse import unquote, urlsplit

from sitemapd.config.urltemplate import template_fields
from sitemapd.core import logs, w3c
from sitemapd.errors import ConfigError, SourceError

log = logs.Logger("sitemapd.changelog")

# backlog() counts at most this many rows: a health figure, not an audit.
MAX_BACKLOG = 1_000_000

_DELETE_OPS = frozenset({"delete", "deleted"})
_UPSERT_OPS = frozenset({"upsert", "insert", "update"})
# Epoch seconds beyond this (year 3000) are milliseconds or nanoseconds, not seconds.
_MAX_EPOCH = 32_503_680_000
_FALSE_TEXT = frozenset({"", "0", "f", "false", "n", "no", "off"})
# A tuple, not a union: isinstance() with `bytes | bytearray` builds the union each call,
# and this runs for several columns of every row.
_BLOBS = (bytes, bytearray, memoryview)
# The replica id a binlog reader registers with when the config names none.
SERVER_ID = 0x5D_0001
_PASSWORD_PARAM = re.compile(r"(?i)(password\s*=\s*)('[^']*'|[^&\s]*)")


@dataclass(frozen=True, slots=True)
class ChangelogSpec:
    """Where a change log lives and which columns mean what; `query` wins over `table`."""

    dsn: str
    table: str | None = "sitemap_changes"
    query: str | None = None
    id_column: str = "id"
    url_column: str | None = "url"
    url_template: str | None = None
    op_column: str | None = "op"
    deleted_column: str | None = None
    changed_at_column: str = "changed_at"
    hash_column: str | None = None
    xid_column: str = "txid"
    meta_columns: tuple[tuple[str, str], ...] = ()
    channel: str = "sitemapd"
    overlap: int = 1000
    # "table": a change table filled by triggers; "binlog": the CMS's own `table`
    # followed through the server's row-based binary log (MySQL, MariaDB); "logical":
    # through PostgreSQL's logical decoding.
    mode: str = "table"
    # Stream modes: (column, accepted values) a row must all match to be a page.
    live: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Stream modes: the columns whose change moves lastmod; empty means every column.
    fingerprint_columns: tuple[str, ...] = ()
    # binlog: the replica id this reader registers with (unique among the server's replicas).
    server_id: int = SERVER_ID
    # logical: the replication slot (created if missing) and the publication of the
    # table (created if missing; default: the slot's name).
    slot: str = "sitemapd"
    publication: str = ""
    # "wordpress": the site of the WordPress tables named by `table_prefix`, followed in
    # mode "binlog" or "poll" and read again in full every `resync` seconds.
    preset: str = ""
    table_prefix: str = "wp_"
    resync: float = 900.0


class ChangeRow(NamedTuple):
    """One change as the database tells it; `problem` says why it cannot be applied."""

    url: str
    deleted: bool
    changed_at: str | None
    content_hash: str | None
    meta: dict[str, str]
    problem: str | None = None
    row_id: str = ""


class ChangeRows(Sequence[ChangeRow]):
    """The rows of one read column by column, so that a backlog's rows need no object
    each; indexing gives a row as a ChangeRow, and a read equals the list of its rows."""

    __slots__ = ("changed_at", "content_hashes", "deleted", "ids", "meta", "problems", "urls")
    __hash__ = None  # type: ignore[assignment]  # a mutable collection, like a list

    def __init__(
        self,
        urls: list[str],
        deleted: list[bool],
        changed_at: list[str | None],
        content_hashes: list[str | None],
        meta: dict[str, list[str | None]],
        problems: list[str | None],
        ids: list[str],
    ) -> None:
        """Hold the columns of a read: `meta` maps a field to its column, None where a
        row has no value."""
        self.urls = urls
        self.deleted = deleted
        self.changed_at = changed_at
        self.content_hashes = content_hashes
        self.meta = meta
        self.problems = problems
        self.ids = ids

    @classmethod
    def of(cls, rows: Sequence[ChangeRow]) -> ChangeRows:
        """Return `rows` column by column."""
        fields = dict.fromkeys(field for row in rows for field in row.meta)
        return cls(
            [row.url for row in rows],
            [row.deleted for row in rows],
            [row.changed_at for row in rows],
            [row.content_hash for row in rows],
            {field: [row.meta.get(field) for row in rows] for field in fields},
            [row.problem for row in rows],
            [row.row_id for row in rows],
        )

    def __len__(self) -> int:
        return len(self.urls)

    @overload
    def __getitem__(self, at: int) -> ChangeRow: ...

    @overload
    def __getitem__(self, at: slice) -> ChangeRows: ...

    def __getitem__(self, at: int | slice) -> ChangeRow | ChangeRows:
        """Return row `at` as a ChangeRow, or the rows of a slice."""
        if isinstance(at, slice):
            return ChangeRows.of([self[n] for n in range(len(self))[at]])
        meta = {
            field: value for field, column in self.meta.items() if (value := column[at]) is not None
        }
        return ChangeRow(
            self.urls[at],
            self.deleted[at],
            self.changed_at[at],
            self.content_hashes[at],
            meta,
            self.problems[at],
            self.ids[at],
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChangeRows | list):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ChangeRows({list(self)!r})"


@dataclass(slots=True)
class Snapshot:
    """A change stream's table as it stands, in batches of rows, and the cursor (stream
    position) to follow it from next."""

    cursor: str
    batches: Iterator[ChangeRows]


class Wakeups:
    """A change stream's wake-ups, each reported once until a read has taken its data:
    the data stays in the stream until then, and would wake the daemon again and again."""

    def __init__(self) -> None:
        self._taken = threading.Event()
        self._taken.set()

    def ready(self, timeout: float) -> bool:
        """Return True once the last wake-up was read (waiting up to `timeout` s for it)."""
        return self._taken.wait(timeout)

    def woke(self) -> None:
        """Note a wake-up reported."""
        self._taken.clear()

    def taken(self) -> None:
        """Note a read."""
        self._taken.set()


class Shape:
    """The columns a reader selects (cursor columns first) and how a fetched row maps."""

    def __init__(self, spec: ChangelogSpec, cursor_columns: tuple[str, ...]) -> None:
        """Plan the select list; raises ConfigError when the spec cannot describe a row."""
        if not spec.query and not spec.table:
            raise ConfigError("changelog: set either table or query")
        if spec.overlap < 0:
            raise ConfigError("changelog: overlap must not be negative")
        columns = list(dict.fromkeys(cursor_columns))

        def place(name: str) -> int:
            if name not in columns:
                columns.append(name)
            return columns.index(name)

        self._template = spec.url_template
        self._fields: tuple[tuple[str, int], ...] = ()
        self._url = -1
        if spec.url_template:
            names = template_fields(spec.url_template)
            self._fields = tuple((name, place(name)) for name in names)
        elif spec.url_column:
            self._url = place(spec.url_column)
        else:
            raise ConfigError("changelog: set either url_column or url_template")
        self._op = place(spec.op_column) if spec.op_column else -1
        self._deleted = place(spec.deleted_column) if spec.deleted_column else -1
        self._changed_at = place(spec.changed_at_column)
        self._hash = place(spec.hash_column) if spec.hash_column else -1
        self._meta = tuple((field, place(column)) for field, column in spec.meta_columns)
        self._id = place(spec.id_column)
        self.columns: tuple[str, ...] = tuple(columns)

    def row(self, values: Sequence[object]) -> ChangeRow:
        """Return the ChangeRow of one fetched row (values in `columns` order)."""
        meta: dict[str, str] = {}
        for field, index in self._meta:
            # A publication time is a time whatever the column's type (text in SQLite).
            text = _meta_time(values[index]) if field in TIME_FIELDS else _text(values[index])
            if text is not None:
                meta[field] = text
        url, problem = self._build_url(values)
        deleted, op_problem = _deleted(values, self._op, self._deleted)
        changed_at: str | None = None
        try:
            changed_at = _when(values[self._changed_at])
        except ValueError as exc:
            # A delete needs no time; an upsert with a wrong one would publish a wrong lastmod.
            op_problem = op_problem or (None if deleted else f"changed_at: {exc}")
        return ChangeRow(
            url,
            deleted,
            changed_at,
            _digest(values[self._hash]) if self._hash >= 0 else None,
            meta,
            problem or op_problem,
            str(values[self._id]),
        )

    def rows(self, fetched: Sequence[Sequence[object]]) -> ChangeRows:
        """Return the rows of a read, each as `row` maps it: a column at a time when
        every row is of the usual kind (its URL text, its op known, its times times)."""
        if self._template is not None or not fetched:
            return ChangeRows.of([self.row(values) for values in fetched])
        # Column by column, not zip(*fetched): that would hold an iterator per row, enough
        # of them to set off the garbage collector's full passes again and again.
        columns = [list(map(itemgetter(at), fetched)) for at in range(len(self.columns))]
        return self.by_column(columns)

    def by_column(self, columns: list[list[Any]]) -> ChangeRows:
        """Return `rows()` of the rows given column by column (in `columns` order)."""
        try:
            usual = self._usual_rows(columns)
        except (ValueError, TypeError):  # a value that is no time, an unhashable op
            usual = None
        if usual is None:
            return ChangeRows.of([self.row(values) for values in zip(*columns, strict=True)])
        return usual

    def _usual_rows(self, columns: list[list[Any]]) -> ChangeRows | None:
        """Return `by_column(columns)` when no row has a problem and none needs a closer
        look, else None. Raises ValueError or TypeError for a value that needs one too."""
        if self._template is not None or not columns[0]:
            return None
        urls = columns[self._url]
        if set(map(type, urls)) != {str}:
            return None
        stripped = list(map(str.strip, urls))
        if not all(stripped):
            return None
        deleted = self._deleted_column(columns)
        if deleted is None:
            return None
        # Before the metadata, whose bad times are logged: a fallback would log them again.
        times = list(map(_when, columns[self._changed_at]))
        meta: dict[str, list[str | None]] = {}
        for field, index in self._meta:
            convert = _meta_time if field in TIME_FIELDS else _text
            meta[field] = _converted(convert, columns[index])
        nothing: list[None] = [None] * len(urls)
        return ChangeRows(
            stripped,
            deleted,
            times,
            _converted(_digest, columns[self._hash]) if self._hash >= 0 else list(nothing),
            meta,
            list(nothing),
            list(map(str, columns[self._id])),
        )

    def _deleted_column(self, columns: list[list[Any]]) -> list[bool] | None:
        """Return whether each row deletes its URL, None when an op is not known. Raises
        TypeError for a value that cannot be a dict key."""
        # Each distinct op, flag or pair of them is judged once: a backlog has a handful.
        keys: list[Any]
        if self._op >= 0 and self._deleted >= 0:
            keys = list(zip(columns[self._op], columns[self._deleted], strict=True))
            verdicts = {key: _deleted(key, 0, 1) for key in set(keys)}
        elif self._op >= 0 or self._deleted >= 0:
            keys = columns[max(self._op, self._deleted)]
            where = (0, -1) if self._op >= 0 else (-1, 0)
            verdicts = {key: _deleted((key,), *where) for key in set(keys)}
        else:
            return [False] * len(columns[0])
        if any(problem for _, problem in verdicts.values()):
            return None
        flags = {key: gone for key, (gone, _) in verdicts.items()}
        return list(map(flags.__getitem__, keys))

    def _build_url(self, values: Sequence[object]) -> tuple[str, str | None]:
        """Return the row's URL, or "" and why there is none."""
        if self._template is None:
            url = values[self._url]
            if (kind := _not_text(url)) is not None:
                return "", f"no URL: the url column holds {kind}"
            text = "" if url is None else str(url).strip()
            return text, None if text else "no URL: the url column is empty"
        args = {name: values[index] for name, index in self._fields}
        empty = [name for name, value in args.items() if value is None]
        if empty:
            return "", f"no URL: url_template needs {', '.join(empty)}, which is NULL"
        odd = [f"{name} ({kind})" for name, value in args.items() if (kind := _not_text(value))]
        if odd:
            return "", f"no URL: url_template needs text, not {', '.join(odd)}"
        try:
            return self._template.format_map(args).strip(), None
        except (ValueError, TypeError, LookupError, AttributeError) as exc:
            # A field that does not fit this row's value: a format spec (`{id:d}` over text),
            # an index past its end (`{slug[0]}` over ""), an attribute it lacks. One row is
            # refused, not the read.
            return "", f"no URL: url_template does not fit this row: {exc!r}"


# Metadata fields holding times, stored in canonical W3C form.
TIME_FIELDS = ("published",)


def _deleted(values: Sequence[object], op: int, deleted: int) -> tuple[bool, str | None]:
    """Return whether the row deletes its URL, and what is wrong with its op, if anything."""
    word = values[op] if op >= 0 else None
    if word is not None or (op >= 0 and deleted < 0):
        text = "" if word is None else str(word).strip().lower()
        if text in _DELETE_OPS:
            return True, None
        if text not in _UPSERT_OPS:
            return False, f"op {word!r} is neither upsert (insert, update) nor delete"
    if deleted < 0:
        return False, None
    flag = values[deleted]
    if isinstance(flag, str):
        return flag.strip().lower() not in _FALSE_TEXT, None
    return bool(flag), None


# Rows of one bulk change share their times: converting each distinct value once pays.
@lru_cache(maxsize=4096, typed=True)
def _when(value: object) -> str | None:
    """Return a database time value in canonical W3C form (naive means UTC), or None.

    Raises ValueError for a value that is not a time (or one out of range).
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return w3c.format_epoch(moment.timestamp())
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00+00:00"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not 0 <= value < _MAX_EPOCH:
            raise ValueError(f"{value!r} is not a time in epoch seconds")
        return w3c.format_epoch(value)
    if isinstance(value, str):
        try:
            return _when(datetime.fromisoformat(value.strip()))
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a time")


def _not_text(value: object) -> str | None:
    """Return what `value` is when it cannot be spelled into a URL (a BLOB, a float that
    is no number), or None: its Python repr would be published as the URL."""
    if isinstance(value, _BLOBS):
        return "a BLOB"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return None


def _meta_time(value: object) -> str | None:
    """Return a metadata time in canonical form; a wrong one is logged and left out."""
    try:
        return _when(value)
    except ValueError as exc:
        log.warning("changelog: ignored a publication time: %s", exc)
        return None


def _converted(convert: Callable[[Any], str | None], values: list[Any]) -> list[str | None]:
    """Return `convert` of each of `values`; text and NULL, which it keeps, as they are."""
    plain = convert is not _meta_time and set(map(type, values)) <= {str, type(None)}
    return values if plain else list(map(convert, values))


def _digest(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, _BLOBS):
        return bytes(value).hex()
    return str(value)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return _meta_time(value)
    if isinstance(value, _BLOBS):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def redact(dsn: str) -> str:
    """Return `dsn` with any password in it replaced by `***`."""
    parts = urlsplit(dsn) if "://" in dsn else None
    if parts is not None and parts.password is not None:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        dsn = parts._replace(netloc=f"{user}:***@{hostport}").geturl()
    return _PASSWORD_PARAM.sub(r"\1***", dsn)


def foreign_cursor(spec: ChangelogSpec, cursor: str) -> None:
    """Log that `cursor` is no position of the spec's mode (the source's mode changed):
    the stream starts again from a snapshot."""
    log.warning(
        "changelog %s: the stored position %r is not one of mode %r (was the mode "
        "changed?): reading the table again in full",
        redact(spec.dsn),
        cursor[:80],
        spec.mode,
    )


def source_error(dsn: str, action: str, exc: BaseException) -> SourceError:
    """Return a one-line SourceError naming the dsn (without password), `action` and cause."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    message = f"changelog {redact(dsn)}: {action}: {detail}"
    for secret in _secrets(dsn):
        message = message.replace(secret, "***")
    return SourceError(message)


def _secrets(dsn: str) -> list[str]:
    found = [match.group(2).strip("'") for match in _PASSWORD_PARAM.finditer(dsn)]
    if "://" in dsn:
        password = urlsplit(dsn).password
        if password:
            found += [password, unquote(password)]
    # Shorter ones would mangle ordinary words in the message; the dsn itself is redacted.
    return [secret for secret in found if len(secret) >= 4]
