"""`sitemapd status`: what the ledger holds, read without taking the writer's lock."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sitemapd.config import Config
from sitemapd.config.sources import ChangelogSource, DirectorySource
from sitemapd.errors import SitemapdError
from sitemapd.ledger.lock import StateLock
from sitemapd.ledger.model import PUBLISH_FAILED_CURSOR
from sitemapd.ledger.removals import holds
from sitemapd.publish import robots
from sitemapd.publish.manifest import ADOPTED
from sitemapd.publish.names import OutputNames, partition_index_urls
from sitemapd.render.sitemap import SITEMAP_NS, envelope_size
from sitemapd.status.problems import canonical_elsewhere, crawl_problems, hreflang_problems

EXAMPLES = 50  # excluded and invalid items listed per report


# A running daemon's health, which it rewrites in the state folder when it changes.
DAEMON_FILE = "daemon.json"


STATES = ("live", "excluded", "gone", "seeded")


def url_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Return how many URLs the ledger holds in each state."""
    counts = dict.fromkeys(STATES, 0)
    counts.update(conn.execute("SELECT status, count(*) FROM urls GROUP BY status"))
    return counts


def collect(config: Config, conn: sqlite3.Connection, names: OutputNames) -> dict[str, Any]:
    """Return the status report as plain data (what `status --json` prints)."""
    excluded = [
        {"loc": loc, "reason": reason}
        for loc, reason in conn.execute(
            "SELECT loc, reason FROM urls WHERE status = 'excluded' ORDER BY loc LIMIT ?",
            (EXAMPLES,),
        )
    ]
    by_reason = dict(
        conn.execute(
            "SELECT CASE WHEN reason LIKE 'canonical:%' THEN 'canonical' "
            "WHEN reason LIKE 'redirect:%' THEN 'redirect' ELSE reason END AS r, "
            "count(*) FROM urls WHERE status = 'excluded' GROUP BY r ORDER BY r"
        ).fetchall()
    )
    (invalid_count,) = conn.execute("SELECT count(*) FROM rejects").fetchone()
    invalid = [
        {"source": source, "item": item, "reason": reason}
        for source, item, reason in conn.execute(
            "SELECT source, item, reason FROM rejects ORDER BY source, item LIMIT ?", (EXAMPLES,)
        )
    ]
    limits = config.sitemap
    extended = {
        row[0] for row in conn.execute("SELECT DISTINCT shard FROM urls WHERE extra IS NOT NULL")
    }
    shards = []
    for shard_id, url_count, size, lastmod in conn.execute(
        "SELECT id, url_count, bytes, lastmod FROM shards WHERE url_count > 0 ORDER BY id"
    ):
        total = size + envelope_size(shard_id in extended)
        shards.append(
            {
                "file": names.shard(shard_id),
                "urls": url_count,
                "bytes": total,
                "url_fill": round(url_count / limits.max_urls, 4),
                "byte_fill": round(total / limits.max_bytes, 4),
                "lastmod": lastmod,
            }
        )
    (last_publish,) = conn.execute("SELECT max(at) FROM published").fetchone()
    cursors = dict(conn.execute("SELECT name, value FROM cursors"))
    return {
        "crawl_problems": crawl_problems(conn),
        "hreflang_problems": hreflang_problems(conn, config.site.origin.root)
        if config.sitemap.alternates
        else [],
        "crawlers": dict(
            conn.execute("SELECT crawler, fetched_at FROM crawls WHERE page = 1 ORDER BY crawler")
        ),
        "feed_later_pages": conn.execute("SELECT count(*) FROM feed_pages").fetchone()[0],
        **published_counts(config, names),
        "changelogs": [
            _changelog(source, cursors)
            for source in config.sources
            if isinstance(source, ChangelogSource)
        ],
        "notifications": {
            "indexnow_key_rejected": cursors.get("indexnow_key_rejected") or None,
            "indexnow_pending": _indexnow_pending(conn, cursors),
            "websub": _websub(config, conn, cursors),
        },
        "urls": url_counts(conn),
        "removals_held": [
            {"source": h.source, "removing": h.removing, "live": h.live, "since": h.since}
            | {"reason": h.reason()}
            for h in holds(conn)
        ],
        "main_content_not_found": dict(
            conn.execute(
                "SELECT s.name, count(*) FROM urls u JOIN sources s ON s.id = u.source_id "
                "WHERE u.fp_fallback = 1 AND u.status IN ('live', 'excluded') "
                "GROUP BY s.name ORDER BY s.name"
            )
        ),
        "content_selectors": {
            source.name: source.content_selector
            for source in config.sources
            if isinstance(source, DirectorySource) and source.content_selector
        },
        "excluded_by_reason": by_reason,
        "canonical_elsewhere": canonical_elsewhere(conn, config.site.origin.root),
        "robots_other_sitemaps": robots_other_sitemaps(config),
        "excluded": excluded,
        "invalid": {"count": invalid_count, "items": invalid},
        "shards": shards,
        "index": names.index_url,
        "last_publish": last_publish,
        "publish_failed": _publish_failed(cursors.get(PUBLISH_FAILED_CURSOR)),
        "adopted": _adopted(cursors.get(ADOPTED)),
        "daemon": daemon_health(config.site.state_dir),
    }


def robots_other_sitemaps(config: Config, data: bytes | None = None) -> list[str]:
    """Return a message per `Sitemap:` line for this site that sitemapd did not write in
    robots.txt (its bytes `data`, else read from site.robots_txt on disk)."""
    path = config.site.robots_txt
    if data is None:
        if path is None or config.publish.s3 is not None:
            return []
        try:
            data = path.read_bytes()
        except OSError:
            return []
    ours = partition_index_urls(config)
    return [
        f"robots.txt names another sitemap of this site: {url} (crawlers read its URLs with "
        'other lastmods: remove the line, or set site.robots_other_sitemaps = "remove")'
        for url in robots.other_sitemaps(data, config.site.origin.root, ours)
    ]


def daemon_health(state_dir: Path) -> dict[str, Any]:
    """Return the daemon holding the state folder, with its health and last error; `pid`
    None when no daemon holds it (`held_by` then names a `build` holding it, if any)."""
    holder = StateLock(state_dir).holder()
    found: dict[str, Any] = {
        "pid": None,
        "held_by": holder,
        # "publisher" or "standby" when daemons share a target.
        "role": None,
        "healthy": None,
        "problems": [],
        "last_error": None,
        "last_error_at": None,
        # Why the last reload was refused (the daemon runs its previous configuration).
        "reload_error": None,
    }
    try:
        saved = json.loads((state_dir / DAEMON_FILE).read_text())
    except (OSError, ValueError):
        return found
    if holder and isinstance(saved, dict) and saved.get("pid") == holder:
        found.update({key: saved.get(key) for key in found if key != "held_by"})
    return found


def _publish_failed(cursor: str | None) -> dict[str, str] | None:
    """Return when the last publish failed and why (None: it did not)."""
    if not cursor:
        return None
    at, _, error = cursor.partition(" ")
    return {"at": at, "error": error}


def _adopted(cursor: str | None) -> dict[str, Any] | None:
    """Return how many published lastmods the last adoption kept, and when (None: never)."""
    if not cursor:
        return None
    moved, _, at = cursor.partition(" ")
    return {"lastmods": int(moved), "at": at}


def published_counts(config: Config, names: OutputNames) -> dict[str, Any]:
    """Return the items of the published news sitemaps and of the first Atom feed page
    (None when the site has none, or nothing is published yet), read where they are
    published: the output folder or the bucket; for a bucket, its lease too."""
    found: dict[str, Any] = {"news_items": None, "feed_entries": None}
    try:
        published, read, lease = _target(config)
    except SitemapdError as exc:
        return found | {"target_error": str(exc)}
    if config.news is not None and published:
        news = [name for name in published if names.is_news(name)]
        found["news_items"] = sum(_count(read(name), f"{{{SITEMAP_NS}}}url") for name in news)
    if config.feed is not None and config.feed.atom in published:
        from sitemapd.render.feedpage import ATOM_NS  # the feeds' module, for feeds only

        found["feed_entries"] = _count(read(config.feed.atom), f"{{{ATOM_NS}}}entry")
    return found | ({"lease": lease} if config.publish.s3 is not None else {})


def _target(config: Config) -> tuple[list[str], Callable[[str], bytes], dict[str, Any] | None]:
    """Return the names published, a reader of one by name, and the lease (a bucket's);
    raises SitemapdError when the bucket cannot be read."""
    target = config.publish.s3
    if target is None:
        out = config.site.output_dir
        names = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
        return names, lambda name: _read(out / name), None
    from sitemapd.publish.lease import lease_key
    from sitemapd.publish.s3store import S3Store

    store = S3Store(target)
    store.prepare(write=False)
    raw = store.read(lease_key(target.prefix, config.sitemap.index_name))
    try:
        lease = json.loads(raw) if raw else None
    except ValueError:
        lease = None
    return store.names(), lambda name: store.read(store.key(name)), lease


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _count(data: bytes, tag: str) -> int:
    """Return how many `tag` elements the XML document `data` holds (0 when unreadable)."""
    from lxml import etree  # loaded for `status` only, not for the `build` that uses this module

    try:
        return sum(1 for _ in etree.iterparse(io.BytesIO(data), tag=tag, no_network=True))
    except etree.XMLSyntaxError:
        return 0


def _indexnow_pending(conn: sqlite3.Connection, cursors: dict[str, str]) -> int | None:
    if "indexnow" not in cursors:
        return None
    # Loaded for IndexNow sites alone: the journal's module brings the ledger's model.
    from sitemapd.ledger.journal import count_between

    return count_between(conn, int(cursors["indexnow"]), int(cursors.get("published_seq") or 0))


def _websub(config: Config, conn: sqlite3.Connection, cursors: dict[str, str]) -> list[Any]:
    """Return each WebSub hub with the feeds published since it last heard of them, and
    its last answer (as the ledger records them)."""
    if not config.websub.hubs:
        return []
    # Loaded for WebSub sites alone: the outbox brings its threads and dataclasses.
    from sitemapd.notify.outbox import WEBSUB, last_answer, websub_owed

    feed = config.feed
    names = (feed.atom, feed.rss) if feed is not None else ("", "")
    feed_sha = dict(conn.execute("SELECT name, sha256 FROM published WHERE name IN (?, ?)", names))
    return [
        {
            "hub": hub,
            "owed": websub_owed(config, hub, cursors, feed_sha),
            "last_answer": last_answer(cursors, WEBSUB, hub),
        }
        for hub in config.websub.hubs
    ]


def _changelog(source: ChangelogSource, cursors: dict[str, str]) -> dict[str, Any]:
    """Return a change log's position, the rows waiting after it, and why it cannot be
    read, if it cannot (asked of the database itself)."""
    # The change-log readers load for a site with a change log only: a `status` of files
    # and URL lists starts faster without them.
    from sitemapd.changelog import Stream, open_reader
    from sitemapd.changelog.walretention import retention
    from sitemapd.sources.changelog import cursor_name

    cursor = cursors.get(cursor_name(source))
    found: dict[str, Any] = {"source": source.name, "cursor": cursor, "waiting": None}
    try:
        reader = open_reader(source.spec)
        try:
            if isinstance(reader, Stream):
                reader.check(cursor)  # a stream read would take it from the daemon
            else:
                reader.read(cursor, 1)  # raises in the database's own words
            found["waiting"] = reader.backlog(cursor)
            kept = retention(reader)
            found["retained_wal"] = None if kept is None else kept.data()
        finally:
            reader.close()
    except SitemapdError as exc:
        found["error"] = str(exc)
    else:
        found["error"] = None
    return found
