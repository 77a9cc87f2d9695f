"""What a reader reads of a page: the text a browser shows, what makes it prose, and
which prose is another page's teaser.

Text is what a reader sees: what a browser never renders (scripts, styles, `<noscript>`,
templates, `hidden` or `display:none` elements, dialogs that open over the page) is no
text. A paragraph is a block of prose, or the prose a container holds between its
blocks (a story written straight into a `<div>`, its lines cut by `<br>`). A paragraph
that shares a card with another page's linked headline, in a list of such cards, is
that page's teaser, not prose of this one; under the page's own headline (its first
`<h1>`, or its title's words), linked to itself, it is the page's post.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from lxml import etree

from sitemapd.fingerprint.extract import BLOCKS

Element = etree._Element

# A paragraph of prose: this many words (or characters of text written without spaces).
PROSE_WORDS = 8
PROSE_CHARACTERS = 40
# Elements whose text a browser never shows.
_UNSEEN = {"script", "style", "noscript", "template", "dialog"}
_DIALOGS = {"dialog", "alertdialog"}
_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.I)
_SPACES = re.compile(r"\s+")
# Text written without spaces between words: Chinese, Japanese, Thai.
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# A teaser's card: an ancestor this near the paragraph, holding a linked headline and
# at most this many characters besides the two (a date, a kicker, a "more" link).
_CARD_DEPTH = 3
_CARD_SLACK = 100
# How far above the card other cards' linked headlines are looked for.
_LIST_DEPTH = 5


def normal(text: str) -> str:
    """Return `text` with whitespace runs as one space, stripped."""
    return _SPACES.sub(" ", text).strip()


def text_of(element: Element) -> str:
    """Return the text inside `element` a reader sees, whitespace normalised."""
    return normal("".join(_seen(element)))


def unseen(element: Element) -> bool:
    """True when a browser does not show `element` with the page: a script, style,
    template, dialog, an element `hidden` or styled `display:none`, or a comment or
    processing instruction."""
    if not isinstance(element.tag, str) or element.tag in _UNSEEN:
        return True
    if (element.get("role") or "").strip().lower() in _DIALOGS or element.get(
        "aria-modal"
    ) == "true":
        return True
    return element.get("hidden") is not None or bool(
        _DISPLAY_NONE.search(element.get("style") or "")
    )


def _seen(element: Element) -> Iterator[str]:
    if unseen(element):
        return
    if element.text:
        yield element.text
    for child in element:
        yield from _seen(child)
        if child.tail:
            yield child.tail


def loose_text(element: Element) -> str:
    """Return the text a reader sees in `element` outside its child blocks: its own
    text, its inline children's, and what follows each child."""
    parts = [element.text or ""]
    for child in element:
        if child.tag not in BLOCKS:
            parts.extend(_seen(child))
        parts.append(child.tail or "")
    return normal("".join(parts))


def link_share(element: Element) -> float:
    """Return the share of `element`'s text inside links."""
    total = len(text_of(element))
    if not total:
        return 0.0
    links = sum(len(text_of(a)) for a in element.iter("a") if not _in_link(a))
    return min(links / total, 1.0)


def _in_link(a: Element) -> bool:
    return any(p.tag == "a" for p in a.iterancestors())


def is_prose(text: str) -> bool:
    """True when `text` reads as a paragraph of prose, in any script."""
    if len(text.split()) >= PROSE_WORDS:
        return True
    return len(_UNSPACED.findall(text)) >= PROSE_CHARACTERS


def paragraph_text(block: Element) -> str:
    """Return the text of `block` as a paragraph: all of it when it holds no block, else
    what it holds between its blocks (a story written straight into a container)."""
    if any(child.tag in BLOCKS for child in block):
        return loose_text(block)
    return text_of(block)


def teaser(paragraph: Element) -> bool:
    """True when `paragraph` is another page's teaser: it shares a card (a near
    ancestor holding little else) with a linked headline, and more linked headlines
    lie near the card (a list of teasers, not a short post under its permalink)."""
    size = len(text_of(paragraph))
    for card in islice(paragraph.iterancestors(), _CARD_DEPTH):
        heads = [h for h in card.iter(*_HEADINGS) if not _holds(h, paragraph)]
        if not heads:
            continue
        head = next((h for h in heads if _linked(h)), None)
        if (
            head is None
            or _own_headline(head)
            or len(text_of(card)) > size + len(text_of(head)) + _CARD_SLACK
        ):
            return False
        return any(
            _linked(h) and not _holds(card, h)
            for near in islice(card.iterancestors(), _LIST_DEPTH)
            for h in near.iter(*_HEADINGS)
        )
    return False


def _own_headline(heading: Element) -> bool:
    """True when `heading` is the page's own headline (a post under its permalink, not
    another page's): the page's first `<h1>`, or the words of its `<title>`."""
    tree = heading.getroottree()
    if next(tree.iter("h1"), None) is heading:
        return True
    words = text_of(heading).casefold()
    title = next(tree.iter("title"), None)
    return bool(words) and title is not None and words in text_of(title).casefold()


def _holds(element: Element, other: Element) -> bool:
    return element is other or any(a is element for a in other.iterancestors())


def _linked(heading: Element) -> bool:
    """True when `heading` is a link: inside one, or most of its text in one."""
    return any(a.tag == "a" for a in heading.iterancestors()) or (
        bool(text_of(heading)) and link_share(heading) > 0.5
    )
