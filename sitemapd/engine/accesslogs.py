"""Access logs in a batch: what crawlers fetched since each log was last read, recorded
in the ledger (a feed fetched moves the feed window)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sitemapd.config import Config
from sitemapd.config.sources import AccessLogSource
from sitemapd.core import logs
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL, SourceError

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger

log = logs.Logger("sitemapd.engine")


def read_access_log(
    config: Config, ledger: Ledger, policy: URLPolicy, source: AccessLogSource
) -> bool:
    """Record what crawlers fetched since the log was last read; return True when a
    crawler fetched a feed (its window may move). Raises SourceError."""
    # Imported here: a site without access logs reads none, in every batch.
    from sitemapd.publish.feedwindow import feed_page_of
    from sitemapd.sources import accesslog

    fetched = False
    feed = config.feed
    name = f"accesslog:{source.name}"
    cursor = ledger.cursor(name)
    while True:
        chunk = accesslog.read_new(source.path, cursor)
        facts = accesslog.crawl_facts(
            chunk.hits, config.crawlers, functools.partial(feed_page_of, feed)
        )
        answers = []
        for target, (status, crawler, at) in facts.answers.items():
            try:
                loc = policy.normalise(policy.origin.root + target.lstrip("/"))
            except InvalidURL:
                continue
            answers.append((loc, status, crawler, at))
        if chunk.bad_lines:
            log.warning("%s: %d lines not in combined log format", source.name, chunk.bad_lines)
        if chunk.hits or chunk.cursor != cursor:
            ledger.record_crawls(facts.feed_fetches, answers, {name: chunk.cursor})
        fetched = fetched or bool(facts.feed_fetches)
        cursor = chunk.cursor
        if not chunk.more:
            return fetched


def read_access_logs(
    config: Config,
    ledger: Ledger,
    policy: URLPolicy,
    paths: Mapping[str, set[str]],
    rescan: set[str],
    strict: bool,
    failed: dict[str, str],
) -> bool:
    """Read the access logs a batch names; return True when a crawler fetched a feed.

    A log that cannot be read goes into `failed` (raises SourceError when `strict`).
    """
    fetched = False
    for source in access_logs(config, paths, rescan).values():
        try:
            fetched = read_access_log(config, ledger, policy, source) or fetched
        except SourceError as exc:
            if strict:
                raise
            failed[source.name] = exc.reason(source.name)
            log.error("%s", exc)
    return fetched


def access_logs(
    config: Config, paths: Mapping[str, set[str]], rescan: set[str]
) -> dict[str, AccessLogSource]:
    """Return the access logs a batch names, by name."""
    return {
        source.name: source
        for source in config.sources
        if isinstance(source, AccessLogSource) and (source.name in rescan or paths.get(source.name))
    }
