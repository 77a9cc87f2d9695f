"""Which of a page's paragraphs vote for the container that is its main content.

Not those of a sidebar, a footer or a navigation (by tag) holding less than half of the
page's text (one holding more is a wrapper that misuses the tag), nor those a reader does
not see in place: a dialog (`role="dialog"`, `aria-modal`), a cookie-consent banner (its
paragraphs are often the longest prose of a shop's page), and a block hidden by its
inline style until a script shows it when it is a menu (mostly links) or holds a form (a
login overlay), not a tab of prose. Such a block is no list of the page's items nor
more of its article either; it still votes when it holds half the text and the page's
`<h1>`, `<main>` or `<article>` (a page that shows itself by script, a wrapper named
for the banner it shows).
"""

from __future__ import annotations

import re

from lxml import etree

from sitemapd.fingerprint.chrome import Element, Sizes

# Landmarks, by tag alone. Overlays are found by reading the attributes of the elements
# that have any, in Python: an XPath of nine `contains()` took 2-3 ms a page, a third of
# a page's read.
_LANDMARKS = ("nav", "aside", "footer")
_SHARE = 0.5
_UNSEEN = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
# Parts of "cookie", "consent" and "usercentrics", whatever their first letter's case.
_CONSENT = ("ookie", "onsent", "sercentrics")
_DIALOGS = ("dialog", "alertdialog")


class Voters:
    """The elements of a page's body whose paragraphs vote (`elements`, in document
    order), and the blocks a reader does not see in place left out (`unseen`)."""

    __slots__ = ("elements", "unseen")

    def __init__(self, body: Element, sizes: Sizes) -> None:
        whole = sizes.text[body]
        # A mega menu shown on hover or a consent banner may hold most of a shop's text;
        # a page that shows itself by script (hidden at first), or a wrapper named for
        # the banner it shows ("has-cookie-notice"), holds the page's headline.
        self.unseen = [
            e
            for e, hidden in _overlays(body)
            if sizes.text.get(e, 0)
            and (sizes.text[e] < whole * _SHARE or not _page(e))
            # Hidden by style, a tab of the product's specifications is its content.
            and (not hidden or sizes.link_density(e) >= _SHARE or _form(e))
        ]
        landmarks = [e for e in body.iter(*_LANDMARKS) if sizes.text.get(e, 0) < whole * _SHARE]
        self.elements = _without(sizes.elements, [*landmarks, *self.unseen])


def _without(elements: list[Element], left_out: list[Element]) -> list[Element]:
    """Return `elements` (a body's, in document order) but the subtrees of `left_out`."""
    if not left_out:
        return elements
    # A subtree is a run of the pre-order list: cut out by slices.
    order = {element: n for n, element in enumerate(elements)}
    runs = sorted(
        (order[e], order[e] + 1 + sum(1 for _ in e.iterdescendants(etree.Element)))
        for e in left_out
        if e in order
    )
    kept: list[Element] = []
    at = 0
    for start, end in runs:
        if start >= at:
            kept += elements[at:start]
        at = max(at, end)
    return kept + elements[at:]


def _overlays(body: Element) -> list[tuple[Element, bool]]:
    """Return the elements of `body` a reader does not see in place (dialogs, cookie
    banners, blocks hidden by their inline style), each with whether its style hides it."""
    found = []
    for element in body.iter(etree.Element):
        attributes = element.attrib
        if not attributes:
            continue
        style = attributes.get("style")
        if style is not None and ("none" in style or "hidden" in style) and _UNSEEN.search(style):
            found.append((element, True))
        elif (
            attributes.get("role") in _DIALOGS
            or attributes.get("aria-modal") == "true"
            or _consent(attributes.get("id"))
            or _consent(attributes.get("class"))
            or _consent(attributes.get("action"))
        ):
            found.append((element, False))
    return found


def _consent(name: str | None) -> bool:
    """True when the class, id or form action `name` names a cookie-consent banner."""
    return name is not None and any(part in name for part in _CONSENT)


def _form(element: Element) -> bool:
    """True when `element` is or holds a form (a login or sign-up overlay)."""
    return next(element.iter("form"), None) is not None


def _page(element: Element) -> bool:
    """True when `element` holds what a page's own content is marked with: an `<h1>`, a
    `<main>` or an `<article>`."""
    return next(element.iter("h1", "main", "article"), None) is not None
