"""IndexNow: tell participating search engines which URLs changed, one host per request."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from sitemapd.notify.http import USER_AGENT, Outcome, post
from sitemapd.render.keyfile import valid_key

MAX_URLS = 10_000
DEFAULT_ENDPOINT = "https://api.indexnow.org/indexnow"
CONTENT_TYPE = "application/json; charset=utf-8"


def requests(urls: Iterable[str], max_urls: int = MAX_URLS) -> list[tuple[str, list[str]]]:
    """Return `(host, urls)` batches: grouped by lower-case netloc, de-duplicated, <= max_urls.

    Hosts and URLs keep first-seen order. Raises ValueError for a URL without a host.
    """
    if max_urls < 1:
        raise ValueError(f"max_urls must be positive, not {max_urls}")
    by_host: dict[str, list[str]] = {}
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            continue
        host = urlsplit(url).netloc.lower()
        if not host:
            raise ValueError(f"URL without a host: {url!r}")
        seen.add(url)
        by_host.setdefault(host, []).append(url)
    return [
        (host, group[start : start + max_urls])
        for host, group in by_host.items()
        for start in range(0, len(group), max_urls)
    ]


def body(host: str, key: str, key_location: str, urls: Sequence[str]) -> bytes:
    """Return the compact UTF-8 JSON request body the IndexNow protocol defines."""
    document = {"host": host, "key": key, "keyLocation": key_location, "urlList": list(urls)}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def submit(
    endpoint: str,
    host: str,
    key: str,
    key_location: str,
    urls: Sequence[str],
    timeout: float = 30.0,
) -> Outcome:
    """Return the outcome of submitting one batch of `host`'s URLs to `endpoint`.

    Raises ValueError for an invalid key, an empty or oversized batch, or a non-http endpoint.
    """
    if not valid_key(key):
        raise ValueError(f"invalid IndexNow key: {key!r}")
    if not 1 <= len(urls) <= MAX_URLS:
        raise ValueError(f"an IndexNow batch holds 1 to {MAX_URLS} URLs, not {len(urls)}")
    payload = body(host, key, key_location, urls)
    return post(endpoint, payload, CONTENT_TYPE, timeout, USER_AGENT)
