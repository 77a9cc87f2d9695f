"""Which blocks of a page are lists of items: the children that make a block a list
of links, and the teaser cards that make it a list of stories.

A list is three or more like children, each with a link of its own and no paragraph of
its own besides its links: a paragraph that cites with links is prose, not a list. A
teaser card (another page's linked title as a heading and an excerpt) is an item of a
list of stories, which a list page is about, though it says a paragraph of its own.
Nor is a table whose every row names its value in a header cell (a product's
specifications): it is a table of facts, though its values link.
"""

from __future__ import annotations

from itertools import islice

from sitemapd.drill.text import HEADINGS, Element, is_prose, link_share, linked_heading, text_of

# Items a block needs to be a list a CMS rotates, and to be the list a page is about.
LIST_ITEMS = 3
MAIN_LIST_ITEMS = 5


def list_items(element: Element, cards: bool = False) -> list[Element]:
    """Return the children of `element` that make it a list: the most common child tag,
    each with a link of its own and, unless `cards`, no prose of its own (a teaser
    card's excerpt under its linked title is a card's when `cards`)."""
    children = [c for c in element if isinstance(c.tag, str)]
    if len(children) < LIST_ITEMS:
        return []
    tags: dict[str, int] = {}
    for child in children:
        tags[str(child.tag)] = tags.get(str(child.tag), 0) + 1
    tag = max(tags, key=tags.__getitem__)
    if tag == "tr" and all(_named_row(c) for c in children if c.tag == tag):
        return []
    items = [c for c in children if c.tag == tag and _linked(c, cards)]
    # Paragraphs that cite with a link are prose, not a list of links; so is a paragraph
    # whose links are its children: its words between them say more than separators.
    if len(items) < LIST_ITEMS or any(
        _prose_item(item) and not (cards and card(item)) for item in items
    ):
        return []
    loose = (element.text or "") + "".join(item.tail or "" for item in children)
    if len(loose.split()) > len(items):
        return []
    return items


def _named_row(row: Element) -> bool:
    """True when table row `row` names what its value is in a header cell (a product's
    "Brand | CIGA Design"): a table of facts, whose links (a brand's page, a term's help)
    make it no list a CMS rotates."""
    return any(cell.tag == "th" for cell in row)


def _prose_item(item: Element) -> bool:
    """True when `item` says a paragraph's worth of its own besides its links."""
    if link_share(item) > 0.5:
        return False
    own = text_of(item)
    for a in item.iter("a"):
        own = own.replace(text_of(a), " ", 1)
    return is_prose(own)


def card(item: Element) -> bool:
    """True when `item` is a teaser card: another page's linked title as a heading, and
    an excerpt of its own."""
    return _prose_item(item) and any(linked_heading(h) for h in item.iter(*HEADINGS))


def _linked(item: Element, anywhere: bool = False) -> bool:
    """True when `item` is a link or opens with one that has text and a target; when
    `anywhere`, one of its links will do (a card opens with its picture's link)."""
    links = islice(item.iter("a"), None if anywhere else 1)
    return any(bool(link.get("href")) and bool(text_of(link)) for link in links)
