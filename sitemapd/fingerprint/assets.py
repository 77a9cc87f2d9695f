"""What the fingerprint takes of a page's assets: their URLs less the query strings that
bust caches, and an image's alternative text."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from sitemapd.fingerprint.chrome import Element
from sitemapd.fingerprint.score import normal


def image_source(img: Element) -> str:
    """Return the URL an `<img>` shows, as written, or "" when it names none."""
    src = (img.get("src") or "").strip()
    if not src or src[:5].lower() == "data:":
        # Lazy-loading pages keep the real URL in data-src and a placeholder in src.
        src = (img.get("data-src") or "").strip()
    return src


def image_parts(img: Element) -> Iterator[str]:
    """Yield what the fingerprint takes of an `<img>`: its URL as an asset, its alt text."""
    src = image_source(img)
    if src:
        yield asset(src)
    alt = normal(img.get("alt") or "")
    if alt:
        yield alt


def asset(url: str) -> str:
    """Return `url` without its query and fragment: cache-busters are not content."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    return f"{parts.scheme}://{parts.netloc}{parts.path}" if parts.netloc else parts.path
