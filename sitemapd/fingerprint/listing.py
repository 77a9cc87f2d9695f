"""Pages that are lists: a home, section, tag or author page lists other pages, and a
directory of links is its lists. What such a page says is its items."""

from __future__ import annotations

from sitemapd.fingerprint.chrome import Element, Sizes, template_reason

# A page's main list of items: children with a link each, and its link text.
_LIST_ITEMS = 5
_MIN_LIST_TEXT = 200
# A main content holding this share of the page's text, whose link lists hold this many
# times its kept text, is a directory of links.
_WHOLE = 0.9
_LISTED = 4


def directory(
    main: list[Element], dropped: dict[Element, str], sizes: Sizes, body: Element, kept: int
) -> bool:
    """True when `main` (what was found of the main content, `dropped` left out of it,
    `kept` characters kept) is the whole page and its lists of links say far more than
    its prose: a directory of links, whose lists are what it says."""
    whole = sizes.text[body]
    if sum(sizes.text[e] for e in main) < _WHOLE * whole:
        return False
    listed = sum(sizes.text[e] for e, why in dropped.items() if why.startswith("link list"))
    return listed > _LISTED * kept


def main_list(body: Element, sizes: Sizes) -> Element | None:
    """Return the page's list of items: the block of most link text among those of
    `_LIST_ITEMS` or more like children with a link each, in no template part."""
    best, most = None, _MIN_LIST_TEXT - 1
    for element in sizes.elements:
        links = sizes.links[element]
        if links <= most or len(element) < _LIST_ITEMS:
            continue
        tags: dict[object, int] = {}
        for child in element:
            if child.tag == "a" or next(child.iter("a"), None) is not None:
                tags[child.tag] = tags.get(child.tag, 0) + 1
        if not tags or max(tags.values()) < _LIST_ITEMS:
            continue
        if any(
            template_reason(e, sizes, 1 << 62, lists=False)
            for e in (element, *element.iterancestors())
        ):
            continue
        best, most = element, links
    return best
