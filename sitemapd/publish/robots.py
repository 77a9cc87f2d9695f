"""robots.txt: the rules that keep URLs out of sitemaps, and our one `Sitemap:` line.

Rules are read with protego; a URL is excluded when robots.txt disallows it for
Googlebot or for every crawler (`*`). Editing the file only ever adds or removes the
`Sitemap:` line naming our index; every other byte stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import urlsplit

from sitemapd.ledger.model import RobotsRules

# Kept as text, compiled by `re` when first used: a site without robots.txt never does.
_SITEMAP_LINE = rb"(?i)^[ \t]*sitemap[ \t]*:[ \t]*(\S*)[ \t]*(?:#.*)?$"
_AGENTS = ("Googlebot", "*")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def rules(data: bytes) -> RobotsRules:
    """Return the crawl rules in a robots.txt document."""
    # Imported here: editing our `Sitemap:` line, in every publish, needs no parser, and
    # `status` no hashing.
    import hashlib

    from protego import Protego

    parser = Protego.parse(data.decode("utf-8", "replace"))
    # Sitemap lines are not rules: editing ours must not trigger a re-check of every URL.
    rule_lines = [line for line in _lines(data) if _names(line) is None]
    fingerprint = hashlib.sha256(b"".join(rule_lines)).hexdigest()

    def allows(url: str) -> bool:
        return all(parser.can_fetch(url, agent) for agent in _AGENTS)

    return RobotsRules(fingerprint, allows)


def _names(line: bytes) -> bytes | None:
    match = re.match(_SITEMAP_LINE, line.rstrip(b"\r\n"))
    return match.group(1) if match else None


def other_sitemaps(data: bytes, site_root: str, ours: Collection[str]) -> list[str]:
    """Return the URLs of robots.txt `Sitemap:` lines naming a sitemap on the site at
    `site_root` (`scheme://host/`) that is none of `ours`: another generator's, which
    gives crawlers the same URLs with other lastmods."""
    found = []
    for line in _lines(data):
        url = (_names(line) or b"").decode("utf-8", "replace")
        if url and url not in ours and _on_site(url, site_root):
            found.append(url)
    return found


def _on_site(url: str, site_root: str) -> bool:
    """True when `url` has the scheme and host (any case) of `site_root`."""
    try:
        parts, root = urlsplit(url), urlsplit(site_root)
    except ValueError:
        return False
    return (parts.scheme.lower(), parts.netloc.lower()) == (root.scheme, root.netloc)


def with_sitemap_line(
    data: bytes, index_url: str, retired: str | None = None, remove: Collection[str] = ()
) -> bytes:
    """Return robots.txt `data` with exactly one `Sitemap:` line for `index_url`.

    Lines naming `retired` (the index URL we published before a rename) or one of the
    URLs in `remove` are removed.
    """
    gone = {url.encode() for url in remove} | ({retired.encode()} if retired else set())
    gone.discard(index_url.encode())
    if gone:
        data = b"".join(line for line in _lines(data) if _names(line) not in gone)
    lines = _lines(data)
    ours = [n for n, line in enumerate(lines) if _names(line) == index_url.encode()]
    if ours:
        # Keep the first where it stands; drop duplicates.
        return b"".join(line for n, line in enumerate(lines) if n not in ours[1:])
    if data and not data.endswith(b"\n"):
        data += b"\r\n" if b"\r\n" in data else b"\n"
    return data + b"Sitemap: " + index_url.encode() + (b"\r\n" if b"\r\n" in data else b"\n")
