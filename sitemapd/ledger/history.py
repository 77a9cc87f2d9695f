"""What the ledger remembers of a URL, and why each journalled change happened.

The journal records what happened (new, updated, gone) and when; why is read from the
URL's row: what its source gives (content or only a time) and, for its latest change,
its present state (the exclusion that took it out, a return after a removal). `explain`
and the status page both word changes through `why`.
"""

# Annotations evaluated, not text: see core/observation.py.
import json
import sqlite3
from typing import Any, NamedTuple

from sitemapd.ledger.journal import run_of, runs
from sitemapd.ledger.model import (
    FIRST_LOAD_CURSOR,
    FIRST_LOAD_SEEN,
    NEW,
    ROBOTS_REASON,
    UPDATED,
)
from sitemapd.ledger.schema import EXCLUDED, GONE, source_time

# The columns of `urls` a `UrlState` holds, in its field order.
_COLUMNS = (
    "id",
    "loc",
    "status",
    "reason",
    "first_seen",
    "lastmod",
    "change_count",
    "content_hash",
    "source_time",
    "fp_settings",
    "fp_fallback",
    "title",
)


# The columns unqualified, for selecting from a subquery of `state_columns()`.
STATE = ", ".join(_COLUMNS)
# A first load's rows hold FIRST_LOAD_SEEN: they were first seen when it ran.
_FIRST_SEEN = (
    f"coalesce(nullif({{table}}.first_seen, '{FIRST_LOAD_SEEN}'), (SELECT value FROM cursors "
    f"WHERE name = '{FIRST_LOAD_CURSOR}'), {{table}}.first_seen) AS first_seen"
)


def state_columns(table: str = "urls") -> str:
    """Return the select list of a `UrlState`, each column qualified by `table`."""
    read = {
        "first_seen": _FIRST_SEEN.format(table=table),
        "source_time": f"{source_time(table)} AS source_time",
    }
    return ", ".join(read.get(column, f"{table}.{column}") for column in _COLUMNS)


class UrlState(NamedTuple):
    """A URL's row as the reasons for its changes need it."""

    id: int
    loc: str
    status: str
    reason: str | None
    first_seen: str
    lastmod: str
    change_count: int
    content_hash: str | None
    source_time: str | None
    fp_settings: str | None
    fp_fallback: int | None
    title: str | None


def exclusion(reason: str) -> str:
    """Return why a URL with exclusion `reason` (as the ledger records it) is in no
    sitemap, as a sentence."""
    if reason == ROBOTS_REASON:
        return "the site's robots.txt disallows it"
    if reason.startswith("canonical:"):
        return f"its page names another canonical URL ({reason.partition(':')[2].strip()})"
    if reason == "noindex":
        return "its page says noindex"
    return f"excluded ({reason})"


def why(kind: str, at: str, url: UrlState, latest: bool) -> str:
    """Return why the change `kind` journalled at `at` happened to `url`; `latest` when
    it is the URL's newest change, which its present state explains."""
    if kind == NEW:
        if at == url.first_seen:
            return "first seen in its source"
        return "back in the sitemaps after a removal or an exclusion"
    if kind == UPDATED:
        if url.content_hash is None:
            return "its source's time for it moved forward"
        if url.fp_fallback:
            return "its page's text changed (main content not found: the whole text counts)"
        return "its significant content changed (main text, title, description or metadata)"
    if not latest:
        return "left the sitemaps: removed from its source or excluded"
    if url.status == EXCLUDED and url.reason:
        return exclusion(url.reason)
    if url.status == GONE:
        return "no longer in its source (file deleted or URL dropped)"
    return "left the sitemaps: removed from its source or excluded"


def url_state(conn: sqlite3.Connection, loc: str) -> UrlState | None:
    """Return the row of `loc`, or None when the ledger does not hold it."""
    row = conn.execute(f"SELECT {state_columns()} FROM urls WHERE loc = ?", (loc,)).fetchone()
    return None if row is None else UrlState(*row)


def changes(conn: sqlite3.Connection, url: UrlState, limit: int) -> list[dict[str, Any]]:
    """Return the newest `limit` journalled changes of `url`, newest first, each
    `{seq, kind, at, why}`."""
    # One row of JSON: a reader in the daemon steps once, not once per change, so the
    # writer thread cannot hold the GIL between its rows.
    (rows,) = conn.execute(
        "SELECT json_group_array(json_array(seq, kind, at)) FROM ("
        "SELECT seq, kind, at FROM journal WHERE url_id = ? ORDER BY seq DESC LIMIT ?)",
        (url.id, limit),
    ).fetchone()
    found = json.loads(rows)
    run = run_of(conn, url.id)
    if run is not None:  # its first load's entry, the oldest it can have
        found.append([run.seq + url.id - run.first_id, NEW, run.at])
    return [
        {"seq": seq, "kind": kind, "at": at, "why": why(kind, at, url, n == 0)}
        for n, (seq, kind, at) in enumerate(sorted(found, reverse=True)[:limit])
    ]


def first_load_changes(conn: sqlite3.Connection, limit: int) -> list[list[Any]]:
    """Return the newest `limit` entries of first loads (journal runs), newest first,
    each `[seq, kind, at, *UrlState]`."""
    found: list[list[Any]] = []
    for run in reversed(runs(conn, 0)):
        if len(found) >= limit:
            break
        (rows,) = conn.execute(
            f"SELECT json_group_array(json_array(? + id, ?, ?, {STATE})) FROM ("
            f"SELECT {state_columns()} FROM urls WHERE id BETWEEN ? AND ? "
            "ORDER BY id DESC LIMIT ?)",
            (run.seq - run.first_id, NEW, run.at, run.first_id, run.last_id, limit - len(found)),
        ).fetchone()
        found += json.loads(rows)
    return found
