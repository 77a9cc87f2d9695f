"""What the ledger says is wrong with URLs: canonicals pointing elsewhere, crawler
fetches that failed, hreflang alternates that do not answer each other, imported URLs
that no source matched."""

from __future__ import annotations

import sqlite3
from typing import Any

_WHY = {
    "no alternates": "does not list alternates",
    "not published": "is not a published URL",
    "no link back": "does not link back",
}


def canonical_elsewhere(conn: sqlite3.Connection, site_root: str) -> list[str]:
    """Return a plain statement per source most of whose pages name a canonical URL off
    the site at `site_root`: almost always a generator's site URL that is not base_url."""
    found = []
    # Excluded rows first (a partial index holds them): only a source with pages
    # canonicalised elsewhere needs its pages counted.
    for name, source_id, foreign, example in conn.execute(
        "SELECT s.name, s.id, count(*), max(substr(u.reason, 12)) "
        "FROM urls u JOIN sources s ON s.id = u.source_id "
        "WHERE u.status = 'excluded' AND u.reason LIKE 'canonical: %' "
        "AND substr(u.reason, 12, length(?1)) != ?1 GROUP BY s.id ORDER BY s.name",
        (site_root,),
    ).fetchall():
        (present,) = conn.execute(
            "SELECT count(*) FROM urls WHERE source_id = ? AND status IN ('live', 'excluded')",
            (source_id,),
        ).fetchone()
        if 2 * foreign > present:
            found.append(
                f"{name}: {foreign} of {present} pages name their canonical URL on another "
                f"site (e.g. {example}), so they are in no sitemap: is the generator's site "
                f"URL (MkDocs site_url, Hugo baseURL, Sphinx html_baseurl) {site_root}?"
            )
    return found


def crawl_problems(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Return `{loc, crawler, status, at, message}` per published URL that crawlers last
    got as an error or redirect."""
    return [
        {
            "loc": loc,
            "crawler": crawler,
            "status": status,
            "at": at,
            "message": f"{loc}: {crawler} got {status} at {at}",
        }
        for loc, status, crawler, at in conn.execute(
            "SELECT a.loc, a.status, a.crawler, a.at FROM crawl_answers a "
            "JOIN urls u ON u.loc = a.loc WHERE u.status = 'live' ORDER BY a.loc"
        )
    ]


def hreflang_problems(conn: sqlite3.Connection, site_root: str) -> list[dict[str, str]]:
    """Return `{loc, lang, href, problem, message}` per hreflang alternate on the site at
    `site_root` that is not published or not reciprocal (another site's pages are beyond
    what the ledger knows); `problem` is "not published", "no alternates" or "no link
    back"."""
    groups: dict[str, dict[str, str]] = {}
    for loc, text in conn.execute(
        "SELECT loc, alternates FROM urls WHERE alternates IS NOT NULL AND status = 'live'"
    ):
        groups[loc] = dict(line.split("\t", 1) for line in text.splitlines())
    problems = []
    for loc, alternates in sorted(groups.items()):
        for lang, href in alternates.items():
            if href == loc or not href.startswith(site_root):
                continue
            if href not in groups:
                live = conn.execute(
                    "SELECT 1 FROM urls WHERE loc = ? AND status = 'live'", (href,)
                ).fetchone()
                problem = "no alternates" if live else "not published"
            elif loc not in groups[href].values():
                problem = "no link back"
            else:
                continue
            problems.append(
                {
                    "loc": loc,
                    "lang": lang,
                    "href": href,
                    "problem": problem,
                    "message": f"{loc}: hreflang {lang} -> {href}, which {_WHY[problem]}",
                }
            )
    return problems


def seeded_count(conn: sqlite3.Connection) -> int:
    """Return how many imported URLs no source has matched yet (from a partial index)."""
    (count,) = conn.execute("SELECT count(*) FROM urls WHERE status = 'seeded'").fetchone()
    return int(count)
