"""Per-URL extension fragments: hreflang alternates (`xhtml:link`) and `image:image`.

The fragment goes inside `<url>` after `<lastmod>`; the `<urlset>` around it must declare
the `xhtml` and `image` prefixes (sitemap.URLSET_EXTENDED_HEAD does). URLs are canonical, so
`&` and `'` are all they need escaped.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from sitemapd.core.urls import xml_escape, xml_unescape

# What Google accepts as hreflang: a BCP 47 language tag, or x-default.
HREFLANG = re.compile(r"(?:[a-z]{2,3}(?:-[A-Za-z0-9]{1,8})*|x-default)\Z")


def alternates_xml(alternates: Sequence[tuple[str, str]]) -> str:
    """Return one `xhtml:link` per `(hreflang, canonical URL)`.

    Raises ValueError for an hreflang HREFLANG does not match (it would break the XML).
    """
    parts = []
    for hreflang, href in alternates:
        if not HREFLANG.match(hreflang):
            raise ValueError(f"invalid hreflang {hreflang!r}")
        parts.append(
            f'<xhtml:link rel="alternate" hreflang="{hreflang}" href="{xml_escape(href)}"/>'
        )
    return "".join(parts)


_LINK = re.compile(r'<xhtml:link rel="alternate" hreflang="[^"]*" href="([^"]*)"/>')


def without_alternates(extra: str, hrefs: Collection[str]) -> str:
    """Return the fragment `extra` without the `xhtml:link` elements naming `hrefs`."""
    return _LINK.sub(
        lambda link: "" if xml_unescape(link.group(1)) in hrefs else link.group(0), extra
    )


def images_xml(images: Sequence[str]) -> str:
    """Return one `image:image` per canonical image URL."""
    return "".join(
        f"<image:image><image:loc>{xml_escape(url)}</image:loc></image:image>" for url in images
    )


def url_extras(alternates: Sequence[tuple[str, str]], images: Sequence[str]) -> str:
    """Return the alternates then the images of one URL, as one fragment for its `<url>`."""
    # sitemap.xsd allows extension elements in any order after lastmod; Google's examples
    # list xhtml:link first.
    return alternates_xml(alternates) + images_xml(images)
