"""`sitemapd status` as lines for a terminal (the report `report.collect` gathers)."""

from __future__ import annotations

from typing import Any

from sitemapd.core.words import count
from sitemapd.status.report import EXAMPLES


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
    failed = report["publish_failed"]
    if failed is not None:
        daemon = report["daemon"]
        retry = (
            "the daemon tries again with its next batch"
            if daemon["pid"] is not None
            else "a build under way tries again"
            if daemon.get("held_by")
            else "the next build tries again"
        )
        lines.append(f"PUBLISH FAILED: at {failed['at']}: {failed['error']} ({retry})")
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
            lines += [f"  {p['message']}" for p in report[key][:EXAMPLES]]
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
    for hub in notes["websub"]:
        if hub["owed"]:
            lines.append(f"websub:       {hub['hub']}: not told of {', '.join(hub['owed'])} yet")
        answer = hub["last_answer"]
        if answer is not None and answer["outcome"] != "done":
            lines.append(
                f"websub:       {hub['hub']}: REFUSED at {answer['at']}: {answer['detail']}"
            )
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
