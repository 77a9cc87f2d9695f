"""What the status page shows, as plain data: one read-only snapshot of the ledger joined
with what the running daemon knows (health, lag, notifications in flight).

Every query is bounded whatever the site's size: counts come from the shards table, the
changes from the newest journal rows, one URL's history from the journal's index by URL.
The chart counts journal rows once, as they arrive: finished hours are kept, and a request
counts at most `COUNT_STEP` new rows. Nothing secret is returned: DSN passwords and the
IndexNow key are masked in every message, the key shown only as its file's name.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sitemapd.config import Config
from sitemapd.config.changelog import redact
from sitemapd.core import w3c
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL
from sitemapd.ledger import history
from sitemapd.ledger.journal import first_seq_since
from sitemapd.ledger.model import BASELINE_CURSOR, NEW, PUBLISHED_CURSOR, UPDATED
from sitemapd.ledger.removals import holds
from sitemapd.ledger.schema import GONE
from sitemapd.notify.outbox import (
    ANSWER_PREFIX,
    INDEXNOW,
    KEY_REJECTED,
    WEBSUB,
    last_answer,
    websub_owed,
)
from sitemapd.publish.names import OutputNames
from sitemapd.status.report import published_counts

# The version of the `/status.json` layout: fields are only ever added within it.
SCHEMA = 1
CHANGES_SHOWN = 100
HISTORY_SHOWN = 100
CHART_HOURS = 48
KINDS = (NEW, UPDATED, GONE)
# Journal rows a request counts into the chart at most; the rest on the next requests.
COUNT_STEP = 25_000
_HOUR = 3600


@dataclass(frozen=True, slots=True)
class LiveState:
    """What the running daemon knows that its ledger does not."""

    # Readiness: why what is published may not be current (empty when it is).
    problems: list[str] = field(default_factory=list)
    # Liveness, as /livez: the daemon's own loops that stopped or stuck (empty while
    # they turn).
    faults: list[str] = field(default_factory=list)
    # "publisher" or "standby" when daemons share a target; None for a daemon alone.
    role: str | None = None
    # When the last batch that wrote files ended, and why the last batch failed.
    last_publish: str | None = None
    publish_error: str | None = None
    errors: int = 0
    # Per source: Unix time of its last read without error; why its last read failed.
    read_at: dict[str, float] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    # Per change log: rows waiting, and since when (Unix time) some have waited.
    backlogs: dict[str, int] = field(default_factory=dict)
    waiting_since: dict[str, float] = field(default_factory=dict)
    # Notifications queued or being retried, and per "kind target" the failure retried.
    notifications_waiting: int = 0
    retrying: dict[str, str] = field(default_factory=dict)


class _Masker:
    """Masks what must not be shown in free text: DSN passwords, the IndexNow key."""

    def __init__(self, config: Config) -> None:
        self._key = config.indexnow.key if config.indexnow is not None else None

    def text(self, text: str) -> str:
        """Return `text` with passwords and the IndexNow key replaced by `***`."""
        # Word by word: a database URL or a `password=` anywhere in a message.
        text = " ".join(redact(word) for word in text.split(" "))
        return text.replace(self._key, "***") if self._key else text

    def __call__(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def all(self, texts: list[str]) -> list[str]:
        return [self.text(text) for text in texts]


class ChangeChart:
    """Journalled changes per hour over the last `CHART_HOURS` hours, counted
    incrementally (the first build's rows, the site as it was, are not changes)."""

    def __init__(self) -> None:
        self._hours: dict[str, Counter[str]] = {}
        self._through = 0  # the last journal seq counted
        # The first hour shown (Unix time) and the first journal seq at or after it.
        self._window = (0, 0)

    def read(
        self, conn: sqlite3.Connection, now: float, last: int, baseline: int
    ) -> dict[str, Any]:
        """Return `{hours: [{hour, new, updated, gone}], complete}`, oldest hour first,
        for a journal whose newest seq is `last` and whose first build ended at seq
        `baseline`; `complete` False while rows remain to be counted."""
        first = int(now) // _HOUR * _HOUR - (CHART_HOURS - 1) * _HOUR
        labels = [w3c.format_epoch(first + n * _HOUR)[:13] for n in range(CHART_HOURS)]
        if self._through > last:  # a new ledger: start over
            self._hours.clear()
            self._through, self._window = 0, (0, 0)
        if self._window[0] != first:  # a binary search, once an hour
            self._window = (first, first_seq_since(conn, w3c.format_epoch(first), last))
        # From past the first build: its entries, the journal's runs among them, are the
        # site's baseline, not changes (and the rows below are all there is after it).
        start = max(self._window[1], baseline + 1)
        if self._through + 1 < start:
            self._hours.clear()
            self._through = start - 1
        upto = min(last, self._through + COUNT_STEP)
        (counted,) = conn.execute(
            "SELECT json_group_array(json_array(hour, kind, n)) FROM ("
            "SELECT substr(at, 1, 13) AS hour, kind, count(*) AS n FROM journal "
            "WHERE seq > ? AND seq <= ? GROUP BY 1, 2)",
            (self._through, upto),
        ).fetchone()
        for hour, kind, n in json.loads(counted):
            self._hours.setdefault(hour, Counter())[kind] += n
        self._through = max(self._through, upto)
        self._hours = {hour: self._hours[hour] for hour in labels if hour in self._hours}
        return {
            "hours": [
                {"hour": f"{label}:00:00+00:00"}
                | {kind: self._hours.get(label, Counter())[kind] for kind in KINDS}
                for label in labels
            ],
            "complete": self._through >= last,
        }


class StatusData:
    """Reads the status page's data through a read-only connection of its own; callable
    from any thread (one reader at a time)."""

    def __init__(self, ledger_path: Path) -> None:
        self._uri = f"{ledger_path.as_uri()}?mode=ro"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._chart = ChangeChart()

    def report(self, config: Config, live: LiveState) -> dict[str, Any]:
        """Return the whole status report (what `/status.json` serves). Raises
        sqlite3.Error when the ledger cannot be read."""
        with self._lock:
            conn = self._snapshot()
            try:
                return _report(conn, self._chart, config, live)
            finally:
                conn.execute("ROLLBACK")

    def url(self, config: Config, text: str) -> dict[str, Any]:
        """Return what the ledger remembers of the URL `text` names (a URL of the site or
        a path on it). Raises sqlite3.Error when the ledger cannot be read."""
        loc = _url_of(config, text)
        with self._lock:
            conn = self._snapshot()
            try:
                url = history.url_state(conn, loc)
                changes = [] if url is None else history.changes(conn, url, HISTORY_SHOWN)
            finally:
                conn.execute("ROLLBACK")
        found: dict[str, Any] = {
            "schema": SCHEMA,
            "generated_at": w3c.now(),
            "url": loc,
            "found": url is not None,
        }
        if url is not None:
            found |= {
                "status": url.status,
                "why_not_live": history.exclusion(url.reason) if url.reason else None,
                "title": url.title,
                "first_seen": url.first_seen,
                "lastmod": url.lastmod,
                "content_changes": url.change_count,
                "changes": changes,
            }
        return found

    def _snapshot(self) -> sqlite3.Connection:
        """Return the connection inside a read transaction: one consistent snapshot,
        which never blocks the writer (WAL)."""
        if self._conn is None:
            self._conn = sqlite3.connect(
                self._uri, uri=True, check_same_thread=False, isolation_level=None
            )
        self._conn.execute("BEGIN")
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _url_of(config: Config, text: str) -> str:
    """Return the ledger's spelling of the URL `text` names, or `text` as given."""
    text = text.strip()
    if text.startswith("/"):
        text = config.site.origin.root + text.lstrip("/")
    try:
        return URLPolicy(config.site.origin).normalise(text)
    except InvalidURL:
        return text


# The figures and cursors of a report in one row: each row a statement steps through
# lets the daemon's writer thread take the GIL for a switch interval (5 ms) meanwhile.
_FIGURES = (
    "SELECT (SELECT coalesce(sum(url_count), 0) FROM shards WHERE url_count > 0), "
    "(SELECT count(*) FROM shards WHERE url_count > 0), "
    "(SELECT max(at) FROM published), "
    "(SELECT coalesce(max(seq), 0) FROM journal), "
    "(SELECT json_group_object(name, value) FROM cursors WHERE name IN (?, ?, ?, ?) "
    "OR name GLOB ? OR name GLOB 'websub *'), "
    "(SELECT json_group_object(name, sha256) FROM published WHERE name IN (?, ?))"
)


def _report(
    conn: sqlite3.Connection, chart: ChangeChart, config: Config, live: LiveState
) -> dict[str, Any]:
    now = w3c.now()
    epoch = w3c.to_epoch(now)
    mask = _Masker(config)
    names = OutputNames(config)
    feeds = (config.feed.atom, config.feed.rss) if config.feed is not None else ("", "")
    live_urls, shards, published_at, last, cursors, feed_sha = conn.execute(
        _FIGURES,
        (BASELINE_CURSOR, PUBLISHED_CURSOR, INDEXNOW, KEY_REJECTED, ANSWER_PREFIX + "*", *feeds),
    ).fetchone()
    cursors, feed_sha = json.loads(cursors), json.loads(feed_sha)
    partition = config.site.partition
    s3 = config.publish.s3
    held = [
        {
            "source": hold.source,
            "removing": hold.removing,
            "live": hold.live,
            "since": hold.since,
            "reason": hold.reason(),
            "confirm_command": f"sitemapd build -c {config.path} --confirm-removal",
        }
        for hold in holds(conn)
    ]
    return {
        "schema": SCHEMA,
        "generated_at": now,
        "site": {
            "base_url": config.site.base_url,
            "index": names.index_url,
            "target": s3.url if s3 is not None else str(config.site.output_dir),
            "partition": f"{partition.number}/{partition.total}" if partition else None,
            "role": live.role,
        },
        "health": {
            # A hold the ledger shows is one whatever the loop has noted yet.
            "ready": not live.problems and not held,
            "live": not live.faults,
            "problems": mask.all(live.problems),
            "faults": mask.all(live.faults),
        },
        "publish": {
            "last_at": live.last_publish or published_at,
            "outcome": "failed" if live.publish_error else "ok" if published_at else "never",
            "error": mask(live.publish_error),
            "errors": live.errors,
        },
        "sources": [
            _source(source.name, type(source).__name__, live, epoch, mask)
            for source in config.sources
        ],
        "holds": held,
        "counts": {"live_urls": int(live_urls), "shards": int(shards)}
        | _entries(published_counts(config, names)),
        "chart": chart.read(conn, epoch, last, int(cursors.get(BASELINE_CURSOR) or 0)),
        "changes": _changes(conn),
        "notifications": _notifications(config, cursors, feed_sha, live, mask),
    }


def _entries(counts: dict[str, int | None]) -> dict[str, int | None]:
    return {"news_entries": counts["news_items"], "feed_entries": counts["feed_entries"]}


def _source(name: str, kind: str, live: LiveState, now: float, mask: _Masker) -> dict[str, Any]:
    """Return a source's last read, its lag behind now, its failure and backlog."""
    read = live.read_at.get(name)
    since = live.waiting_since.get(name)
    return {
        "name": name,
        "type": kind.removesuffix("Source").lower(),
        "last_read_at": w3c.format_epoch(read) if read is not None else None,
        "lag_seconds": round(now - read, 1) if read is not None else None,
        "failing": mask(live.failing.get(name)),
        "backlog": live.backlogs.get(name),
        "waiting_since": w3c.format_epoch(since) if since is not None else None,
    }


def _changes(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Return the newest journalled changes, newest first, with why each happened."""
    (rows,) = conn.execute(
        f"SELECT json_group_array(json_array(seq, kind, at, {history.STATE})) FROM ("
        f"SELECT j.seq, j.kind, j.at, {history.state_columns('u')} FROM journal j "
        "JOIN urls u ON u.id = j.url_id ORDER BY j.seq DESC LIMIT ?)",
        (CHANGES_SHOWN,),
    ).fetchone()
    newest = json.loads(rows) + history.first_load_changes(conn, CHANGES_SHOWN)
    seen: set[int] = set()
    found = []
    for seq, kind, at, *row in sorted(newest, reverse=True)[:CHANGES_SHOWN]:
        url = history.UrlState(*row)
        # Newer changes of the URL would be among these: its first here is its latest.
        latest = url.id not in seen
        seen.add(url.id)
        found.append(
            {
                "seq": seq,
                "url": url.loc,
                "title": url.title,
                "kind": kind,
                "at": at,
                "why": history.why(kind, at, url, latest),
            }
        )
    return found


def _answer(cursors: dict[str, str], kind: str, target: str, mask: _Masker) -> Any:
    """Return the last answer recorded of `target`, its detail masked, or None."""
    answer = last_answer(cursors, kind, target)
    return None if answer is None else answer | {"detail": mask(answer.get("detail"))}


def _notifications(
    config: Config,
    cursors: dict[str, str],
    feed_sha: dict[str, str],
    live: LiveState,
    mask: _Masker,
) -> dict[str, Any]:
    """Return what is owed to IndexNow and each WebSub hub, and their last answers."""
    indexnow = None
    settings = config.indexnow
    if settings is not None:
        published = int(cursors.get(PUBLISHED_CURSOR) or 0)
        sent = cursors.get(INDEXNOW)
        indexnow = {
            "endpoint": mask.text(settings.endpoint),
            "key_file": Path(urlsplit(settings.key_location).path).name,
            # Journal rows published and not yet accepted (the cursor starts at the
            # first publish after IndexNow is configured).
            "owed": max(0, published - int(sent)) if sent is not None else 0,
            "key_rejected": mask(cursors.get(KEY_REJECTED) or None),
            "last_answer": _answer(cursors, INDEXNOW, settings.endpoint, mask),
            "retrying": mask(live.retrying.get(f"{INDEXNOW} {settings.endpoint}")),
        }
    hubs = []
    for hub in config.websub.hubs:
        hubs.append(
            {
                "hub": mask.text(hub),
                "owed": websub_owed(config, hub, cursors, feed_sha),
                "last_answer": _answer(cursors, WEBSUB, hub, mask),
                "retrying": mask(live.retrying.get(f"{WEBSUB} {hub}")),
            }
        )
    return {"waiting": live.notifications_waiting, "indexnow": indexnow, "websub": hubs}
