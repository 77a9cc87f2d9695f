"""The words, links and images of another page's item: what a copied list item, a new
story in a box or a reader's new comment is written with."""

from __future__ import annotations

from lxml import etree

from sitemapd.drill.text import Element

# Words a new item is written with: what a "latest stories" box shows next.
_FRESH = [
    "council",
    "approves",
    "new",
    "budget",
    "for",
    "river",
    "bridge",
    "repairs",
    "after",
    "long",
    "debate",
    "striker",
    "signs",
    "three",
    "year",
    "deal",
    "as",
    "club",
    "confirms",
    "record",
    "transfer",
    "fee",
]


def rewrite(item: Element, seed: int) -> None:
    """Give `item` (a copy of a list item) the words, link and image of another story."""
    words = iter(_FRESH[seed % 7 :] + _FRESH)

    def fresh(text: str) -> str:
        count = max(1, len(text.split()))
        return " ".join(next(words, "story") for _ in range(count))

    for node in item.iter(etree.Element):
        if node.text and node.text.strip():
            node.text = fresh(node.text)
        if node is not item and node.tail and node.tail.strip():
            node.tail = fresh(node.tail)
        if node.get("href"):
            node.set("href", f"/news/2026/11/fresh-story-{seed}")
        for attr in ("src", "data-src", "srcset"):
            if node.get(attr):
                node.set(attr, f"/images/fresh-story-{seed}.jpg")
        if node.get("alt"):
            node.set("alt", fresh(node.get("alt", "")))
        if node.get("title"):
            node.set("title", fresh(node.get("title", "")))
