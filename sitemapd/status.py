"""`sitemapd status`: what the ledger holds, read without taking the writer's lock."""

from __future__ import annotations

import sqlite3
from typing import Any

from .config import Config
from .publish import OutputNames
from .render.sitemap import SHARD_OVERHEAD

_EXAMPLES = 50  # excluded and invalid items listed per report


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
            "SELECT CASE WHEN reason LIKE 'canonical:%' THEN 'canonical' ELSE reason END AS r, "
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
    shards = [
        {
            "file": names.shard(shard_id),
            "urls": url_count,
            "bytes": size + SHARD_OVERHEAD,
            "url_fill": round(url_count / limits.max_urls, 4),
            "byte_fill": round((size + SHARD_OVERHEAD) / limits.max_bytes, 4),
            "lastmod": lastmod,
        }
        for shard_id, url_count, size, lastmod in conn.execute(
            "SELECT id, url_count, bytes, lastmod FROM shards WHERE url_count > 0 ORDER BY id"
        )
    ]
    (last_publish,) = conn.execute("SELECT max(at) FROM published").fetchone()
    return {
        "urls": url_counts(conn),
        "excluded_by_reason": by_reason,
        "excluded": excluded,
        "invalid": {"count": invalid_count, "items": invalid},
        "shards": shards,
        "index": names.index_url,
        "last_publish": last_publish,
    }


def render_text(report: dict[str, Any]) -> str:
    """Return the status report as lines for a terminal."""
    urls = report["urls"]
    lines = [
        f"index:        {report['index']}",
        f"last publish: {report['last_publish'] or 'never'}",
        "URLs:         " + ", ".join(f"{n} {status}" for status, n in urls.items()),
    ]
    if report["excluded_by_reason"]:
        reasons = ", ".join(f"{n} {r}" for r, n in report["excluded_by_reason"].items())
        lines.append(f"excluded:     {reasons}")
        lines += [f"  {item['loc']}  ({item['reason']})" for item in report["excluded"]]
    invalid = report["invalid"]
    if invalid["count"]:
        lines.append(f"invalid:      {invalid['count']}")
        lines += [f"  {i['source']}: {i['item']}  ({i['reason']})" for i in invalid["items"]]
    lines.append(f"shards:       {len(report['shards'])}")
    lines += [
        f"  {s['file']}: {s['urls']} URLs ({s['url_fill']:.1%}), {s['bytes']} bytes "
        f"({s['byte_fill']:.1%}), lastmod {s['lastmod']}"
        for s in report["shards"]
    ]
    return "\n".join(lines)
