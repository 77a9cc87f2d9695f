"""Notifications owed to search engines: IndexNow for changed URLs, WebSub for feeds.

What is owed lives in the ledger, so a restart or an outage delays notifications and
loses none (at least once): IndexNow has a journal cursor that moves only after the
endpoint accepted the URLs up to it, and each hub and feed a record of the feed bytes it
was last told about. `pending()` reads what is owed after a publish; a Courier thread
sends it, retrying with backoff and honouring Retry-After, so publishing never waits on
the network; `settle()` records the outcomes, on the writer thread, in the ledger.
"""

from __future__ import annotations

import heapq
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapd.config import Config
from sitemapd.core import logs, w3c
from sitemapd.ledger.model import BASELINE_CURSOR, PUBLISHED_CURSOR

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger
    from sitemapd.notify import Outcome

log = logs.Logger("sitemapd.outbox")

INDEXNOW = "indexnow"
WEBSUB = "websub"
# Why IndexNow refused the key (403), until a request succeeds again.
KEY_REJECTED = "indexnow_key_rejected"
ANSWER_PREFIX = "answer "
_MAX_BACKOFF = 3600.0
_MAX_RETRY_AFTER = 86400.0


@dataclass(frozen=True, slots=True)
class Delivery:
    """One request owed: its target, what it announces, and what to record once sent."""

    kind: str
    target: str  # IndexNow endpoint or WebSub hub
    urls: tuple[str, ...]  # changed URLs, or the feed's URL (the WebSub topic)
    cursor: str  # ledger cursor recording the delivery
    value: str  # its value once delivered

    @property
    def key(self) -> tuple[str, str, str]:
        """Return what identifies the delivery while in flight (one per IndexNow target)."""
        return (self.kind, self.target, "" if self.kind == INDEXNOW else self.urls[0])


def websub_cursor(hub: str, topic: str) -> str:
    """Return the name of the cursor holding the feed bytes `hub` last heard of for
    `topic` (the published feed's digest as recorded, `core/docdigest.py`)."""
    return f"websub {hub} {topic}"


def websub_owed(
    config: Config, hub: str, cursors: dict[str, str], feed_sha: dict[str, str]
) -> list[str]:
    """Return the feeds (their URLs) published since `hub` last heard of them, given the
    ledger's `cursors` and the digest of each published feed file by name."""
    feed = config.feed
    if feed is None:
        return []
    return [
        topic
        for name, topic in ((feed.atom, feed.atom_url), (feed.rss, feed.rss_url))
        if (sha := feed_sha.get(name)) is not None and cursors.get(websub_cursor(hub, topic)) != sha
    ]


def answer_cursor(kind: str, target: str) -> str:
    """Return the name of the cursor holding the last answer of `target` (an IndexNow
    endpoint or a WebSub hub) as JSON `{at, outcome, status, detail}`."""
    return f"{ANSWER_PREFIX}{kind} {target}"


def last_answer(cursors: dict[str, str], kind: str, target: str) -> dict[str, Any] | None:
    """Return the last answer of `target` the ledger's `cursors` record, or None."""
    text = cursors.get(answer_cursor(kind, target))
    return None if text is None else dict(json.loads(text))


def pending(ledger: Ledger, config: Config) -> list[Delivery]:
    """Return the notifications owed now: one IndexNow batch, one ping per hub and feed."""
    found: list[Delivery] = []
    settings = config.indexnow
    published = int(ledger.cursor(PUBLISHED_CURSOR) or 0)
    if settings is not None:
        # The HTTP client loads only for a site that notifies: a `build` starts faster.
        from sitemapd.notify import indexnow

        start = ledger.cursor(INDEXNOW)
        if start is None:
            # Announcing a whole site at once would only exhaust the quota: IndexNow
            # hears of changes from the first publish after it is configured.
            start = ledger.cursor(PUBLISHED_CURSOR) or ledger.cursor(BASELINE_CURSOR) or "0"
            ledger.set_cursor(INDEXNOW, start)
        rows = ledger.changed_urls(int(start), published, indexnow.MAX_URLS)
        if rows:
            # Batches go one at a time, in journal order, so the cursor never skips one.
            # Every ledger URL is on the site's one host.
            [(_, urls)] = indexnow.requests(loc for _, loc in rows)
            found.append(
                Delivery(INDEXNOW, settings.endpoint, tuple(urls), INDEXNOW, str(rows[-1][0]))
            )
    feed = config.feed
    if feed is not None:
        for hub in config.websub.hubs:
            for name, topic in ((feed.atom, feed.atom_url), (feed.rss, feed.rss_url)):
                record = ledger.published(name)
                cursor = websub_cursor(hub, topic)
                if record is not None and ledger.cursor(cursor) != record[0]:
                    found.append(Delivery(WEBSUB, hub, (topic,), cursor, record[0]))
    return found


def send(delivery: Delivery, config: Config, timeout: float) -> Outcome:
    """Make the request of `delivery`; never raises for network or HTTP errors."""
    from sitemapd.notify import indexnow, websub

    if delivery.kind == WEBSUB:
        return websub.publish(delivery.target, delivery.urls[0], timeout)
    assert config.indexnow is not None
    host = indexnow.requests(delivery.urls)[0][0]
    return indexnow.submit(
        delivery.target,
        host,
        config.indexnow.key,
        config.indexnow.key_location,
        delivery.urls,
        timeout,
    )


def settle(ledger: Ledger, results: list[tuple[Delivery, Outcome]]) -> None:
    """Record sent and refused deliveries; a refused one is logged, never retried."""
    for delivery, outcome in results:
        what = f"{delivery.kind} {delivery.target}: {len(delivery.urls)} URLs"
        if outcome.kind == "done":
            log.info("%s sent (%s)", what, outcome.status)
        else:
            log.error("%s refused, not retried: %s", what, outcome.detail)
        if delivery.kind == INDEXNOW:
            if outcome.status == 403:
                ledger.set_cursor(KEY_REJECTED, outcome.detail)
            elif outcome.kind == "done" and ledger.cursor(KEY_REJECTED):
                ledger.set_cursor(KEY_REJECTED, "")
        ledger.set_cursor(delivery.cursor, delivery.value)
        answer = {"at": w3c.now(), "outcome": outcome.kind, "status": outcome.status}
        ledger.set_cursor(
            answer_cursor(delivery.kind, delivery.target),
            json.dumps(answer | {"detail": outcome.detail}, sort_keys=True),
        )


def deliver_now(ledger: Ledger, config: Config, timeout: float = 10.0) -> int:
    """Send what is owed once, without retries (for `build`); return how many failed."""
    failed = 0
    sent: set[tuple[str, str, str]] = set()
    while deliveries := [d for d in pending(ledger, config) if d.key not in sent]:
        results = []
        for delivery in deliveries:
            sent.add(delivery.key)
            outcome = send(delivery, config, timeout)
            if outcome.kind == "retry":
                failed += 1
                log.warning(
                    "%s %s: %s; kept for the next run",
                    delivery.kind,
                    delivery.target,
                    outcome.detail,
                )
            else:
                results.append((delivery, outcome))
                if delivery.kind == INDEXNOW:
                    sent.discard(delivery.key)  # the next batch may follow
        settle(ledger, results)
    return failed


@dataclass(order=True)
class _Due:
    """A delivery due at `at` (monotonic seconds), and the attempts it had."""

    at: float
    delivery: Delivery = field(compare=False)
    attempts: int = field(default=0, compare=False)


class Courier:
    """A thread that sends deliveries, retrying failures with backoff; never writes SQLite.

    Outcomes wait in `results()` for the writer; `on_result` tells it there are some.
    """

    def __init__(self, config: Config, on_result: Callable[[], None], timeout: float = 30.0):
        self.config = config
        self.timeout = timeout
        self._on_result = on_result
        self._cond = threading.Condition()
        self._due: list[_Due] = []
        self._keys: set[tuple[str, str, str]] = set()
        self._results: list[tuple[Delivery, Outcome]] = []
        self._stopping = False
        # The last failure per target, shown in status until a delivery succeeds.
        self.failing: dict[str, str] = {}
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name="sitemapd-courier", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop after the request in progress; unsent deliveries stay owed in the ledger."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():  # a daemon that failed to start never started it
            self._thread.join(timeout=self.timeout + 5)

    def offer(self, deliveries: list[Delivery]) -> None:
        """Queue deliveries that are not already queued or in flight."""
        with self._cond:
            for delivery in deliveries:
                if delivery.key not in self._keys:
                    self._keys.add(delivery.key)
                    heapq.heappush(self._due, _Due(time.monotonic(), delivery))
            self._cond.notify_all()

    def results(self) -> list[tuple[Delivery, Outcome]]:
        """Take the outcomes of finished deliveries (sent or refused).

        A delivery counts as in flight until its outcome is taken: until then the ledger
        still owes it, and `offer()` must not queue it a second time.
        """
        with self._cond:
            taken, self._results = self._results, []
            for delivery, _ in taken:
                self._keys.discard(delivery.key)
            return taken

    def waiting(self) -> int:
        """Return how many deliveries are queued or in flight."""
        with self._cond:
            return len(self._keys)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (not self._due or self._due[0].at > time.monotonic()):
                    wait = self._due[0].at - time.monotonic() if self._due else None
                    self._cond.wait(wait)
                if self._stopping:
                    return
                due = heapq.heappop(self._due)
            outcome = send(due.delivery, self.config, self.timeout)
            target = f"{due.delivery.kind} {due.delivery.target}"
            with self._cond:
                if outcome.kind == "retry":
                    due.attempts += 1
                    delay = min(5.0 * 2 ** (due.attempts - 1), _MAX_BACKOFF)
                    if outcome.retry_after is not None:
                        # The server's word wins over our own ceiling, within reason.
                        delay = max(delay, min(outcome.retry_after, _MAX_RETRY_AFTER))
                    log.warning("%s: %s; retrying in %.0fs", target, outcome.detail, delay)
                    self.failing[target] = outcome.detail
                    due.at = time.monotonic() + delay
                    heapq.heappush(self._due, due)
                    continue
                self.failing.pop(target, None)
                self.sent += 1
                self._results.append((due.delivery, outcome))
            self._on_result()
