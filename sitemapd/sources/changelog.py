"""Change-log source: rows of a database change table (or change stream) become observations.

Each read returns the rows after the source's cursor; the rows and the cursor after them
go to the ledger in one transaction (a Checkpoint item), so a crash or an outage loses
nothing and applies nothing twice. A `reconcile_query` listing every live URL catches
deletions the log missed. A change stream starts from a snapshot of its table: one
complete scan, whose checkpoint is the stream position the snapshot stands at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache, partial
from itertools import count, islice, repeat
from typing import cast

from sitemapd.changelog import ChangeRow, ChangeRows, Reader, Snapshot, Stream
from sitemapd.config.sources import ChangelogSource
from sitemapd.core.observation import (
    ArticleMeta,
    Changes,
    Checkpoint,
    Item,
    Observation,
    Rejected,
    Seen,
)
from sitemapd.core.workers import Workers
from sitemapd.errors import InvalidURL
from sitemapd.sources.base import Context, Scan, rejected, with_defaults

# Reads per scan: one scan is one transaction and one publish, so a backlog drains in
# large steps while a single read stays small enough to hold in memory. A first load (an
# empty ledger) reads on: one transaction on the ledger's bulk path, whose indexes are
# built once, where each further scan would go a row at a time.
_READS_PER_SCAN = 10
_FIRST_LOAD_READS = 1000
_RECONCILE_BATCH = 2000
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # RFC 3986 section 3.1


def cursor_name(source: ChangelogSource) -> str:
    """Return the ledger cursor that holds the source's change-log position."""
    return f"changelog:{source.name}"


def scan(source: ChangelogSource, ctx: Context, reader: Reader) -> Scan:
    """Return the changes after the stored cursor, with checkpoints; never complete.

    `more` is set after reading when rows were left for the next scan. A change stream
    with no position to follow from gives its table's snapshot instead: a complete scan.
    """
    if isinstance(reader, Stream):
        until = datetime.fromisoformat(ctx.now).timestamp()
        snapshot = reader.snapshot(ctx.ledger.cursor(cursor_name(source)), source.batch_size, until)
        if snapshot is not None:
            taken = Scan(source.name, _snapshot(source, ctx, snapshot), complete=True)
            taken.more = True  # the stream from the snapshot's position
            return taken
    result = Scan(source.name, iter(()), complete=False)
    result.items = _changes(source, ctx, reader, result)
    return result


def reconcile(source: ChangelogSource, ctx: Context, reader: Reader) -> Scan:
    """Return a complete scan from `reconcile_query`: what it does not list is gone."""
    assert source.reconcile_query is not None
    return Scan(source.name, _reconciled(source, ctx, reader), complete=True)


def _changes(source: ChangelogSource, ctx: Context, reader: Reader, result: Scan) -> Iterator[Item]:
    name, limit = cursor_name(source), source.batch_size
    cursor = ctx.ledger.cursor(name)
    reads = _FIRST_LOAD_READS if ctx.ledger.empty() else _READS_PER_SCAN
    rows, after = reader.read(cursor, limit)
    # While the rows of one read are applied, the next read runs (the database works in
    # a process of its own): a backlog drains at the pace of the slower of the two.
    # Leaving the block waits for a read under way: the reader is never used twice at once.
    with Workers(1, f"read:{source.name}") as ahead:
        for read in count(1):
            full = len(rows) == limit
            following = (
                ahead.submit(partial(reader.read, after, limit)) if full and read < reads else None
            )
            yield from _read_items(source, ctx, rows)
            if after is not None and after != cursor:
                yield Checkpoint(name, after)
                cursor = after
            if not full:
                # A transaction committed after the scan began: the next scan takes it.
                result.more = isinstance(reader, Stream) and reader.held()
                return
            if following is None:
                break
            rows, after = following.result()
    result.more = True


def _snapshot(source: ChangelogSource, ctx: Context, snapshot: Snapshot) -> Iterator[Item]:
    for rows in snapshot.batches:
        yield from _read_items(source, ctx, rows)
    yield Checkpoint(cursor_name(source), snapshot.cursor)


def _loc(source: ChangelogSource, ctx: Context, url: str) -> str:
    """Return the canonical URL of a row's `url` (absolute, or a path on the site).

    Raises InvalidURL, also for an empty one: it would name the site root.
    """
    if not url:
        raise InvalidURL("no URL")
    if _SCHEME.match(url):
        return ctx.policy.normalise(url)
    if url.startswith("//"):
        return ctx.policy.normalise(f"{ctx.policy.origin.scheme}:{url}")
    # A path on the site, taken as it is: resolving it would turn `/news/../../etc/x` into
    # `/etc/x`, where the policy refuses any '.' or '..' segment.
    return ctx.policy.normalise(ctx.policy.origin.root + url.removeprefix("/"))


def _read_items(
    source: ChangelogSource, ctx: Context, rows: ChangeRows
) -> Iterator[Rejected | Changes]:
    """Yield the rows of one read in order: those that cannot be applied as Rejected
    items, the others as Changes (one, unless rejected rows come between)."""
    if not rows:
        return
    locs = _plain_locs(ctx, rows)
    if locs is not None:
        yield _changes_of(source, ctx, rows, locs)
        return
    kept: list[ChangeRow] = []
    found: list[str] = []
    for row in rows:
        located = _located(source, ctx, row)
        if isinstance(located, str):
            kept.append(row)
            found.append(located)
            continue
        if kept:
            yield _changes_of(source, ctx, ChangeRows.of(kept), found)
            kept, found = [], []
        yield located
    if kept:
        yield _changes_of(source, ctx, ChangeRows.of(kept), found)


def _plain_locs(ctx: Context, rows: ChangeRows) -> list[str] | None:
    """Return the canonical URL of every row, found for the whole read at once: the
    common case, paths on the site or URLs already canonical. None when a row needs a
    closer look (a problem, a URL to normalise)."""
    if any(rows.problems):
        return None
    root = ctx.policy.origin.root
    paths = rows.urls
    # A path ("/news/a") is on the site; "//host/a" is a URL without its scheme.
    lines = "\n" + "\n".join(paths)
    if root.endswith("/") and lines.count("\n/") == len(paths) and "\n//" not in lines:
        # Every row a path (a backlog's usual kind): joined to the site without a
        # Python step a row. A line break in a URL is never canonical: checked below.
        urls = list(map(root[:-1].__add__, paths))
    else:
        urls = [root + url[1:] if url[:1] == "/" and url[1:2] != "/" else url for url in paths]
    return urls if ctx.policy.canonical(urls) else None


def _located(source: ChangelogSource, ctx: Context, row: ChangeRow) -> str | Rejected:
    """Return the canonical URL of `row`, or the Rejected item saying why it has none."""
    if row.problem:
        return rejected(source.name, f"row {row.row_id}"[:200], row.problem)
    try:
        return _loc(source, ctx, row.url)
    except InvalidURL as exc:
        return rejected(source.name, row.url[:200], str(exc))


def _changes_of(
    source: ChangelogSource, ctx: Context, rows: ChangeRows, locs: list[str]
) -> Changes:
    """Return `rows` (none with a problem), whose URLs are `locs`, as a Changes item."""
    nothing: list[str | None] = [None] * len(rows)
    meta = rows.meta
    titles = meta.get("title", nothing)
    news_titles = titles
    if "news_title" in meta:
        news_titles = [own or title for own, title in zip(meta["news_title"], titles, strict=True)]
    if "published" in meta or "language" in meta:
        metas = list(
            map(
                _meta,
                meta.get("published", nothing),
                meta.get("language", nothing),
                news_titles,
                repeat(source.articles),
                repeat(source.language),
            )
        )
    else:
        # Rows alike but for their news title (a backlog's usual kind): the source's
        # defaults worked out once, not once a row.
        alike = _meta(None, None, None, source.articles, source.language)
        published, language, _, article, _, _ = alike
        metas = (
            [alike] * len(rows)
            if news_titles.count(None) == len(rows)
            # Made as `ArticleMeta._make` makes them, without a Python call a row.
            else list(
                map(
                    partial(tuple.__new__, ArticleMeta),
                    zip(
                        repeat(published),
                        repeat(language),
                        news_titles,
                        repeat(article),
                        repeat(()),
                        repeat(()),
                    ),
                )
            )
        )
    return Changes(
        source.name,
        locs,
        rows.deleted,
        rows.content_hashes,
        # Every row is a change: one without a time is one happening now.
        _or_now(rows.changed_at, ctx.now),
        titles,
        metas,
    )


def _or_now(times: list[str | None], now: str) -> list[str]:
    """Return `times` with `now` for each None (or empty) one."""
    if None in times or "" in times:
        return [changed or now for changed in times]
    return cast(list[str], times)


@lru_cache(maxsize=1024)
def _meta(
    published: str | None,
    language: str | None,
    news_title: str | None,
    articles: str,
    default_language: str | None,
) -> ArticleMeta:
    """Return the article data of a row: made once for the rows that share it (often
    all of a backlog's), as it is immutable."""
    return with_defaults(
        ArticleMeta(
            published=published,
            language=language,
            news_title=news_title,
            article=published is not None,
            alternates=(),
            images=(),
        ),
        articles,
        default_language,
    )


def _reconciled(source: ChangelogSource, ctx: Context, reader: Reader) -> Iterator[Item]:
    urls = iter(reader.live_urls(source.reconcile_query or ""))
    while batch := list(islice(urls, _RECONCILE_BATCH)):
        located: dict[str, str] = {}
        for url in batch:
            try:
                located[_loc(source, ctx, url)] = url
            except InvalidURL as exc:
                yield rejected(source.name, url[:200], str(exc))
        owners = ctx.ledger.owners(list(located))
        for loc in located:
            owner = owners.get(loc)
            if owner == source.name:
                yield Seen(loc, source.name)
            elif owner is None:
                # Listed as live but never logged: its upsert was missed.
                yield Observation(loc, source.name, None, ctx.now)
            # Another source's URL stays that source's, with its lastmod.
