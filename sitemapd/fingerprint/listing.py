"""Pages that are lists: a home, section, tag or author page says what its list of
items says."""

from __future__ import annotations

from sitemapd.fingerprint.chrome import ROLES, STRUCTURAL, Element, Sizes, template_reason
from sitemapd.fingerprint.names import carousel

# A page's main list of items: children with a link each, and its link text.
_LIST_ITEMS = 5
MIN_LIST_TEXT = 200


def main_list(
    body: Element, sizes: Sizes, among: list[Element], least: int = MIN_LIST_TEXT
) -> Element | None:
    """Return the page's list of items: the block of most link text (`least` characters
    or more) `among` the elements of `body` (those a reader sees in place) with
    `_LIST_ITEMS` or more like children with a link each, in no template part (a block
    holding half the page's text is none by its name: it wraps the page)."""
    best, most = None, least - 1
    half = sizes.text[body] / 2
    for element in among:
        links = sizes.links[element]
        if links <= most or len(element) < _LIST_ITEMS:
            continue
        tags: dict[object, int] = {}
        for child in element:
            if child.tag == "a" or next(child.iter("a"), None) is not None:
                tags[child.tag] = tags.get(child.tag, 0) + 1
        if not tags or max(tags.values()) < _LIST_ITEMS:
            continue
        # A block holding half the page is its wrapper, whatever its name (a theme that
        # wraps the list of posts in `div.pagination` or `div.menu-l`); not a menu by its
        # tag or role (a documentation generator's sidebar of contents). Nor a carousel:
        # other pages' teasers turned over in place (a shop's "you may also like").
        if any(
            (carousel(e) or template_reason(e, sizes, 1 << 62, lists=False))
            and (sizes.text[e] < half or _landmark(e))
            for e in (element, *element.iterancestors())
            if e in sizes.text
        ):
            continue
        best, most = element, links
    return best


def _landmark(element: Element) -> bool:
    """True when `element` is a navigation, aside, form or footer by its tag or role."""
    return element.tag in STRUCTURAL or (element.get("role") or "").strip().lower() in ROLES
