"""Pages that are lists: a home, section, tag or author page says what its list of
items says."""

from __future__ import annotations

from sitemapd.fingerprint.chrome import Element, Sizes, template_reason

# A page's main list of items: children with a link each, and its link text.
_LIST_ITEMS = 5
_MIN_LIST_TEXT = 200


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
