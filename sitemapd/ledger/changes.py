"""Change-log rows into the ledger a read at a time, without an object per row: all of
them into an empty ledger, the URLs it lacks into one that has some.

What `Run` would make of each row as an Observation or a Gone on its bulk path, worked
out for the whole read: the same rows, ids, shards and counts. Rows of a backlog mostly
share everything but their URL (a bulk import commits them at the same time, with the
same facts): each stretch of such rows is inserted by one statement. Into a ledger with
URLs, the rows naming a URL it lacks, that no other row of the read names, are inserted
alike (as `Decisions.update_chunk` would insert them); the others take the row path.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from itertools import compress, groupby, pairwise
from operator import itemgetter, ne
from typing import Any

from sitemapd.core.observation import Changes
from sitemapd.ledger.model import ROBOTS_REASON
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.render.sitemap import entry_size_sql, entry_sizes

# Below this many rows on average per stretch, rows go one by one (`executemany`).
_STRETCH = 32


def load_changes(run: Run, changes: Changes) -> None:
    """Insert the rows of `changes` into the empty ledger of `run`, in order; a deleted
    URL is noted in `run.bulk_gone` as a Gone item is."""
    if not changes.locs:
        return
    run.observed.add(changes.source)
    deleted = changes.deleted
    start = 0
    for end in [at for at, gone in enumerate(deleted) if gone] if any(deleted) else []:
        _insert(run, changes, start, end)
        (last,) = run.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        run.bulk_gone[changes.locs[end]] = last
        start = end + 1
    _insert(run, changes, start, len(deleted))


def insert_new(run: Run, changes: Changes) -> Changes:
    """Insert the rows of `changes` that upsert a URL the ledger (which has URLs) lacks
    and that no other of its rows names; return the other rows, for the row path."""
    locs = changes.locs
    if not locs:
        return changes
    run.observed.add(changes.source)
    # Loaded for change logs alone: a build of URL lists starts without it.
    import json

    known = {
        loc
        for (loc,) in run.conn.execute(
            "SELECT loc FROM urls WHERE loc IN (SELECT value FROM json_each(?))",
            (json.dumps(locs),),
        )
    }
    named = Counter(locs) if len(set(locs)) < len(locs) else None
    if not known and named is None and not any(changes.deleted):
        new, rest = changes, Changes(changes.source, [], [], [], [], [], [])  # a backlog's
    else:
        fresh = {
            loc
            for loc, gone in zip(locs, changes.deleted, strict=True)
            if not gone and loc not in known and (named is None or named[loc] == 1)
        }
        new, rest = changes.only(fresh.__contains__), changes.only(lambda loc: loc not in fresh)
    if new.locs:
        last = "SELECT coalesce(max(id), 0) FROM urls"
        (before,) = run.conn.execute(last).fetchone()
        _insert(run, new, 0, len(new.locs))
        (after,) = run.conn.execute(last).fetchone()
        run.note_new(before + 1, after)
    return rest


def _insert(run: Run, changes: Changes, start: int, end: int) -> None:
    """Insert rows `start` to `end` of `changes`, upserts all, as new URLs in order."""
    if start == end:
        return
    allows = run.robots.allows
    if run.robots.fingerprint == "none" or all(map(allows, changes.locs[start:end])):
        _insert_run(run, changes, start, end, live=True)
        return
    at = start
    for live, run_of in groupby(map(allows, changes.locs[start:end])):
        length = sum(1 for _ in run_of)
        _insert_run(run, changes, at, at + length, live)
        at += length


def _insert_run(run: Run, changes: Changes, start: int, end: int, live: bool) -> None:
    """Insert rows `start` to `end` of `changes`: upserts, all `live` or all disallowed
    by robots.txt."""
    locs = changes.locs[start:end]
    sizes = entry_sizes(locs)
    columns = _values(changes, start, end, live, run.now)
    source_id = run.source_id(changes.source)
    if not live:
        _write(run.conn, _into(source_id, run.now, None), locs, sizes, columns)
        return
    run.changes.new += len(locs)
    lastmods = columns["lastmod"]
    at = 0
    for shard, count in run.shards.fill(sizes, lambda a, b: max(lastmods[a:b])):
        part = {name: values[at : at + count] for name, values in columns.items()}
        into = _into(source_id, run.now, shard)
        _write(run.conn, into, locs[at : at + count], sizes[at : at + count], part)
        if run.spool is not None:
            # The manifest's fingerprint: the row's content hash, else its time.
            fingerprints = [
                time if fingerprint is None else fingerprint
                for fingerprint, time in zip(part["content_hash"], part["source_time"], strict=True)
            ]
            run.spool.add(shard, locs[at : at + count], fingerprints, part["lastmod"])
        at += count


def _values(changes: Changes, start: int, end: int, live: bool, now: str) -> dict[str, list[Any]]:
    """Return the values of rows `start` to `end` of `changes` by column, but `loc` and
    `entry_bytes`."""
    hashes = changes.content_hashes[start:end]
    titles = changes.titles[start:end]
    lastmods = [when if when < now else now for when in changes.source_times[start:end]]
    metas = changes.metas[start:end]
    count = len(metas)
    # The facts column by column (`ArticleMeta` is a tuple: its fields by position).
    language = list(map(itemgetter(1), metas))
    news_title = list(map(itemgetter(2), metas))
    article: list[int | None] = list(map(int, map(itemgetter(3), metas)))
    # A live row with no fact at all stores none, as the bare insert of `Run` does.
    if live and None in hashes and None in titles:
        if hashes.count(None) == titles.count(None) == count and metas.count(metas[0]) == count:
            # Rows alike but for their URL and times (a backlog without a title or hash):
            # the facts of one are those of all.
            if not (language[0] or news_title[0] or article[0]):
                language = news_title = [None] * count
                article = [None] * count
        else:
            for at, (content_hash, title) in enumerate(zip(hashes, titles, strict=True)):
                own = content_hash is not None or title is not None
                if not (own or language[at] or news_title[at] or article[at]):
                    language[at] = news_title[at] = article[at] = None
    published: list[str | None] = [None] * count
    stated: list[int | None] = [None] * count
    if live and 1 in article:
        # An article's publication time: the one its row states, else its change.
        for at, meta in enumerate(metas):
            if meta.article:
                published[at], stated[at] = (
                    (lastmods[at], 0) if meta.published is None else (min(meta.published, now), 1)
                )
    return {
        "content_hash": hashes,
        "source_time": changes.source_times[start:end],
        "lastmod": lastmods,
        "title": titles,
        "published": published,
        "language": language,
        "news_title": news_title,
        "article": article,
        "published_stated": stated,
    }


def _write(
    conn: sqlite3.Connection,
    into: tuple[str, str],
    locs: list[str],
    sizes: list[int],
    columns: dict[str, list[Any]],
) -> None:
    """Insert rows of `locs` with `sizes` and `columns`, sharing the columns and values
    `into`: each stretch of rows alike but for their URL by one statement, or one by
    one when stretches are short."""
    shared, literals = into
    count = len(locs)
    cuts: set[int] = set()
    for values in columns.values():
        if values.count(values[0]) != count:
            cuts.update(compress(range(1, count), map(ne, values[1:], values[:-1])))
    if len(cuts) * _STRETCH > count:
        # A column NULL in every row is left to its default: binding None costs sqlite3 a
        # failed adapter lookup each time, more than the rest of the insert.
        bound = {name: values for name, values in columns.items() if values.count(None) != count}
        conn.executemany(
            f"INSERT INTO urls ({shared}, {', '.join(bound)}, loc, entry_bytes) "
            f"VALUES ({literals}, {'?, ' * len(bound)}?, ?)",
            zip(*bound.values(), locs, sizes, strict=True),
        )
        return
    import json  # as in `insert_new`

    for start, end in pairwise([0, *sorted(cuts), count]):
        stretch = json.dumps(locs[start:end])
        size = entry_size_sql("value", escaped="&" in stretch or "'" in stretch)
        # OR FAIL: no statement journal (bulk.py says why).
        conn.execute(
            f"INSERT OR FAIL INTO urls ({shared}, {', '.join(columns)}, loc, entry_bytes) "
            f"SELECT {literals}, {'?, ' * len(columns)}value, {size} FROM json_each(?)",
            [*(values[start] for values in columns.values()), stretch],
        )


def _into(source_id: int, now: str, shard: int | None) -> tuple[str, str]:
    """Return the columns and SQL values that new URLs of `source_id`, first seen `now`,
    share in `shard` (None: excluded by robots.txt)."""
    status, reason = (LIVE, "NULL") if shard is not None else (EXCLUDED, f"'{ROBOTS_REASON}'")
    return (
        "source_id, status, reason, first_seen, change_count, shard",
        f"{source_id}, '{status}', {reason}, '{now}', 0, {'NULL' if shard is None else shard}",
    )
