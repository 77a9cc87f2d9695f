"""Page content: the hash that decides whether a page changed, and what its HTML says.

The hash is taken after the configured `ignore` patterns are removed, so build stamps,
CSRF tokens and counters do not count as changes. From the `<head>` we read the title,
the canonical link and robots meta directives.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from .errors import InvalidURL
from .urls import URLPolicy

_BODY = re.compile(rb"<body[\s>]", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_ROBOTS_NAMES = {"robots", "googlebot"}
_NOINDEX = {"noindex", "none"}


def content_hash(data: bytes, ignore: tuple[re.Pattern[bytes], ...] = ()) -> str:
    """Return the hex digest of `data` with every `ignore` match removed."""
    for pattern in ignore:
        data = pattern.sub(b"", data)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class PageFacts:
    title: str | None = None
    canonical: str | None = None
    noindex: bool = False


def read_page(data: bytes) -> PageFacts:
    """Return the title, canonical href and noindex flag from an HTML document's head."""
    # Everything we read lives in <head>; parsing only that keeps large pages cheap.
    match = _BODY.search(data)
    head = data[: match.start()] if match else data
    if not head.strip():
        return PageFacts()
    try:
        tree = lxml.html.document_fromstring(head)
    except (etree.ParserError, ValueError):
        return PageFacts()
    title = tree.findtext(".//title")
    canonical = None
    for link in tree.iter("link"):
        rels = (link.get("rel") or "").lower().split()
        if "canonical" in rels and link.get("href"):
            canonical = (link.get("href") or "").strip()
            break
    noindex = False
    for meta in tree.iter("meta"):
        if (meta.get("name") or "").strip().lower() in _ROBOTS_NAMES:
            directives = {d.strip().lower() for d in (meta.get("content") or "").split(",")}
            noindex = noindex or bool(directives & _NOINDEX)
    return PageFacts(
        title=_SPACE.sub(" ", title).strip() or None if title else None,
        canonical=canonical,
        noindex=noindex,
    )


def exclusion(facts: PageFacts, loc: str, policy: URLPolicy) -> str | None:
    """Return why the page at `loc` must stay out of sitemaps, or None."""
    if facts.noindex:
        return "noindex"
    if facts.canonical is None:
        return None
    try:
        canonical = policy.normalise(urljoin(loc, facts.canonical))
    except InvalidURL:
        return f"canonical: {facts.canonical}"
    if _same_page(canonical, loc):
        return None
    return f"canonical: {canonical}"


def _same_page(canonical: str, loc: str) -> bool:
    """True when `canonical` names `loc`, allowing `/a/index.html` for `/a/` and `.html`."""
    if canonical == loc:
        return True
    for suffix in ("index.html", "index.htm"):
        if canonical.endswith("/" + suffix) and canonical[: -len(suffix)] == loc:
            return True
    return canonical in (loc + ".html", loc + ".htm")
