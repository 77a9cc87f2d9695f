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
from sitemapd.core.words import count
from sitemapd.errors import SitemapdError
from sitemapd.ledger.lock import StateLock
from sitemapd.ledger.removals import holds
from sitemapd.publish import robots
from sitemapd.publish.manifest import ADOPTED
from sitemapd.publish.names import OutputNames, partition_index_urls
from sitemapd.render.sitemap import SITEMAP_NS, envelope_size
from sitemapd.status.problems import canonical_elsewhere, crawl_problems, hreflang_problems

_EXAMPLES = 50  # excluded and invalid items listed per report


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
            (_EXAMPLES,),
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
            "SELECT source, item, reason FROM rejects ORDER BY source, item LIMIT ?", (_EXAMPLES,)
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


def _adopted(cursor: str | None) -> dict[str, Any] | None:
    """Return how many published lastmods the last adoption kept, and when (None: never)."""
    if not cursor:
        return None
    moved, _, at = cursor.partition(" ")
    return {"lastmods": int(moved), "at": at}


def _adopted_line(adopted: dict[str, Any] | None) -> list[str]:
    if adopted is None:
        return []
    kept = count(adopted["lastmods"], "published lastmod")
    return [f"adopted:      {kept} kept from the target's manifests at {adopted['at']}"]


def _target_lines(report: dict[str, Any]) -> list[str]:
    """Return what the bucket says: its lease, or why it cannot be read."""
    if report.get("target_error"):
        return [f"target:       CANNOT READ: {report['target_error']}"]
    if "lease" not in report:
        return []
    lease = report["lease"]
    if lease is None:
        return ["lease:        none (nothing published to the bucket yet)"]
    if lease.get("released"):
        return [f"lease:        released by {lease.get('holder')}"]
    return [
        f"lease:        held by {lease.get('holder')} (renewal {lease.get('renewal', 0)} "
        f"at {lease.get('renewed', 'unknown')})"
    ]


def render_text(report: dict[str, Any]) -> str:
    """Return the status report as lines for a terminal."""
    urls = report["urls"]
    # A refused reload: the file's names are not those the daemon publishes under.
    refused = (
        " (the configuration file's: not running)" if report["daemon"].get("reload_error") else ""
    )
    lines = [
        f"index:        {report['index']}{refused}",
        f"daemon:       {_daemon_line(report['daemon'])}",
        f"last publish: {report['last_publish'] or 'never'}",
        *_adopted_line(report["adopted"]),
        *_target_lines(report),
        "URLs:         " + ", ".join(f"{n} {status}" for status, n in urls.items()),
    ]
    lines += [f"HELD:         {h['source']}: {h['reason']}" for h in report["removals_held"]]
    lines += [f"CANONICAL ELSEWHERE: {line}" for line in report["canonical_elsewhere"]]
    lines += [f"warning:      {line}" for line in report["robots_other_sitemaps"]]
    if report["excluded_by_reason"]:
        reasons = ", ".join(f"{n} {r}" for r, n in report["excluded_by_reason"].items())
        lines.append(f"excluded:     {reasons}")
        lines += [f"  {item['loc']}  ({item['reason']})" for item in report["excluded"]]
    for source, n in report["main_content_not_found"].items():
        selector = report["content_selectors"].get(source)
        advice = (
            f"content_selector {selector!r} matches nothing there"
            if selector
            else "set content_selector"
        )
        lines.append(
            f"no main content: {source}: {n} pages fingerprinted whole "
            f"(see 'sitemapd explain'; {advice})"
        )
    invalid = report["invalid"]
    if invalid["count"]:
        lines.append(f"invalid:      {invalid['count']}")
        lines += [f"  {i['source']}: {i['item']}  ({i['reason']})" for i in invalid["items"]]
    for key, title in (
        ("crawl_problems", "crawlers got errors or redirects for"),
        ("hreflang_problems", "hreflang problems"),
    ):
        if report[key]:
            lines.append(f"{title}: {len(report[key])}")
            lines += [f"  {p['message']}" for p in report[key][:_EXAMPLES]]
    if report["crawlers"]:
        lines.append(
            "feed fetched: " + ", ".join(f"{c} {at}" for c, at in report["crawlers"].items())
        )
    for log in report["changelogs"]:
        waiting = "following" if log["waiting"] is None else f"{log['waiting']} rows waiting"
        state = f"CANNOT READ: {log['error']}" if log["error"] else waiting
        line = f"change log:   {log['source']}: {state} (cursor {log['cursor']})"
        if (kept := log.get("retained_wal")) is not None:
            line += f", WAL kept: {kept['bytes'] / 2**20:.0f} MiB"
            line += f" ({kept['problem']})" if kept["problem"] else ""
        lines.append(line)
    if report["news_items"] is not None:
        lines.append(f"news:         {count(report['news_items'], 'article')} in news sitemaps")
    if report["feed_entries"] is not None:
        lines.append(f"feed:         {count(report['feed_entries'], 'update')} on the first page")
    if report["feed_later_pages"]:
        lines.append(f"feed pages:   {report['feed_later_pages'] + 1} (updates not yet fetched)")
    notes = report["notifications"]
    if notes["indexnow_pending"] is not None:
        lines.append(f"indexnow:     {notes['indexnow_pending']} changes waiting")
    if notes["indexnow_key_rejected"]:
        lines.append(f"indexnow:     KEY REFUSED: {notes['indexnow_key_rejected']}")
    lines.append(f"shards:       {len(report['shards'])}")
    lines += [
        f"  {s['file']}: {s['urls']} URLs ({s['url_fill']:.1%}), {s['bytes']} bytes "
        f"({s['byte_fill']:.1%}), lastmod {s['lastmod']}"
        for s in report["shards"]
    ]
    return "\n".join(lines)


def _daemon_line(daemon: dict[str, Any]) -> str:
    """Return the daemon's pid and health, and its last error on a line of its own."""
    if daemon["pid"] is None:
        held = f" (state folder held by pid {daemon['held_by']})" if daemon["held_by"] else ""
        return f"not running{held}"
    health = "healthy" if daemon["healthy"] else "UNHEALTHY: " + "; ".join(daemon["problems"])
    role = f"{daemon['role']}, " if daemon.get("role") else ""
    line = f"pid {daemon['pid']}, {role}{health}"
    if daemon["last_error"]:
        line += f"\nlast error:   {daemon['last_error_at']} {daemon['last_error']}"
    if daemon.get("reload_error"):
        line += f"\nreload failed: {daemon['reload_error']} (running the previous configuration)"
    return line


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
