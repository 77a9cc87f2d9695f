"""A `urls` row as the ledger reads and writes it: its columns in order, and the values
the statements of whole rows bind."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

# The columns of `urls`, in the order every statement of whole rows names them.
COLUMNS = (
    "id",
    "loc",
    "source_id",
    "status",
    "reason",
    "page_reason",
    "content_hash",
    "source_time",
    "lastmod",
    "first_seen",
    "change_count",
    "title",
    "file_key",
    "shard",
    "entry_bytes",
    "published",
    "language",
    "news_title",
    "article",
    "alternates",
    "extra",
    "bytes_hash",
    "fp_settings",
    "fp_fallback",
    "published_stated",
)


class UrlRow:
    """One `urls` row, in `URLCOLUMNS` order; `id` is None until it is inserted."""

    # A plain class: a dataclass costs every command that loads the ledger its generated
    # methods, and `dataclasses` its import (with `inspect`). Rows are built positionally.
    __slots__ = COLUMNS

    def __init__(
        self,
        id: int | None,
        loc: str,
        source_id: int | None,
        status: str,
        reason: str | None,
        page_reason: str | None,
        content_hash: str | None,
        source_time: str | None,
        lastmod: str,
        first_seen: str,
        change_count: int,
        title: str | None,
        file_key: str | None,
        shard: int | None,
        entry_bytes: int,
        published: str | None,
        language: str | None,
        news_title: str | None,
        article: int | None,
        alternates: str | None,
        extra: str | None,
        bytes_hash: str | None,
        fp_settings: str | None,
        fp_fallback: int | None,
        published_stated: int | None,
    ) -> None:
        self.id = id
        self.loc = loc
        self.source_id = source_id
        self.status = status
        self.reason = reason
        self.page_reason = page_reason
        self.content_hash = content_hash
        self.source_time = source_time
        self.lastmod = lastmod
        self.first_seen = first_seen
        self.change_count = change_count
        self.title = title
        self.file_key = file_key
        self.shard = shard
        self.entry_bytes = entry_bytes
        self.published = published
        self.language = language
        self.news_title = news_title
        self.article = article
        self.alternates = alternates
        self.extra = extra
        self.bytes_hash = bytes_hash
        self.fp_settings = fp_settings
        self.fp_fallback = fp_fallback
        self.published_stated = published_stated

    def insert_params(self) -> tuple[Any, ...]:
        """Return the values `INSERT_URL` binds: every column but `id`."""
        return inserted_values(self)

    def update_params(self) -> tuple[Any, ...]:
        """Return the values an UPDATE of the row binds (`update_rows`): every column but `id`
        and `loc`, then `id`."""
        return _UPDATED(self)

    @property
    def bare(self) -> bool:
        """True for a listed URL: no reason, hash, title, file or facts (stored as NULL,
        as the bulk load of change-log reads stores them)."""
        return (
            self.reason is None
            and self.content_hash is None
            and self.title is None
            and self.file_key is None
            and not any(_FACTS(self))
        )


# Attribute getters run in C: these are called for every row a build writes.
inserted_values = attrgetter(*COLUMNS[1:])
_UPDATED = attrgetter(*COLUMNS[2:], "id")
_FACTS = attrgetter(*COLUMNS[15:])
_LISTED = attrgetter(*COLUMNS[1:15])
_NO_FACTS = (None,) * (len(COLUMNS) - 15)


def bare_values(row: UrlRow) -> tuple[Any, ...]:
    """Return the values `INSERT_URL` binds for a bare row: its facts as NULL."""
    return _LISTED(row) + _NO_FACTS
