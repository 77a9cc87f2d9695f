"""What a page says it is, in its Open Graph type and JSON-LD: an article, one product's.

The drill reads a page that says neither, with little prose, as a list page (a home, a
section), as the fingerprint does.
"""

from __future__ import annotations

from sitemapd.drill.text import Element
from sitemapd.fingerprint import og_type, product_type
from sitemapd.sources.jsonld import is_article, ld_objects, one_product


def declares_article_or_product(tree: Element) -> bool:
    """True when the page says it is an article or one product's, as the fingerprint
    reads it: by its Open Graph type, or an article object or one product in its
    JSON-LD (read once for both)."""
    declared = og_type(tree)
    if declared.startswith("article") or product_type(declared):
        return True
    objects = _ld_objects(tree)
    return any(map(is_article, objects)) or one_product(objects)


def _ld_objects(tree: Element) -> list[dict[str, object]]:
    """Return the objects of the page's JSON-LD blocks, in document order."""
    found = []
    for script in tree.iter("script"):
        if "ld+json" in (script.get("type") or "") and script.text:
            block = f'<script type="application/ld+json">{script.text}</script>'
            found += ld_objects(block.encode("utf-8", "surrogatepass"))
    return found
