"""WebSub: ask a hub to fetch a changed topic (a feed) and push it to its subscribers."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from sitemapd.notify.http import USER_AGENT, Outcome, post

CONTENT_TYPE = "application/x-www-form-urlencoded"


def publish(hub: str, topic: str, timeout: float = 30.0) -> Outcome:
    """Return the outcome of a `hub.mode=publish` ping for `topic` to `hub`.

    Raises ValueError when `hub` or `topic` is not an http(s) URL.
    """
    parts = urlsplit(topic)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"WebSub topic is not an http(s) URL: {topic!r}")
    payload = urlencode({"hub.mode": "publish", "hub.url": topic}).encode("ascii")
    return post(hub, payload, CONTENT_TYPE, timeout, USER_AGENT)
