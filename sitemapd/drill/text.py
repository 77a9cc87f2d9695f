"""What a reader reads of a page: the text a browser shows, what makes it prose, and
which prose is another page's teaser.

Text is what every reader gets, on screen and read aloud: what a browser never renders
(scripts, styles, `<noscript>`, templates, a `<canvas>`'s, `<video>`'s or `<audio>`'s
fallback, dialogs that open over the page, elements
`hidden`, styled `display:none` or `visibility:hidden`, or of a class that hides them),
what is drawn for screen readers alone (`sr-only`) and what is kept from them
(`aria-hidden`) is no text: an editor's headline and prose reach every reader.
A paragraph is a block of prose, or the prose a container holds between its
blocks (a story written straight into a `<div>`, its lines cut by `<br>`). A paragraph
that shares a card with another page's linked headline, in a list of such cards, is
that page's teaser, not prose of this one; under the page's own headline (its first
`<h1>`, or its title's words), linked to itself, it is the page's post.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from itertools import islice

from lxml import etree

from sitemapd.fingerprint.extract import BLOCKS

Element = etree._Element

# A paragraph of prose: this many words (or characters of text written without spaces).
PROSE_WORDS = 8
PROSE_CHARACTERS = 40
# Elements whose text a browser never shows: a `<canvas>`'s, a `<video>`'s or an
# `<audio>`'s is fallback for browsers that lack the element; a `<select>`'s options show
# one at a time, when the reader opens it ("Sort by: Newest, Most helpful, ...", a shop's
# list of its towns): a form's choices, not its prose.
_UNSEEN = {
    "script",
    "style",
    "noscript",
    "template",
    "dialog",
    "canvas",
    "video",
    "audio",
    "select",
}
_DIALOGS = {"dialog", "alertdialog"}
_STYLED_AWAY = re.compile(r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)", re.I)
# Classes by which CSS frameworks, CMSs and sites hide an element from every reader
# (`display:none`, `visibility:hidden`) or draw it for screen readers alone (clipped to
# a pixel, off-screen): a section's label ("News", "detail", "기사 상세") set as an
# `<h1>` before the story's own. Stylesheets are not read, so the names are; compared
# without case, `-` and `_` ("visuallyHidden", "visually_hidden"). Partial hiding
# ("hidden-xs", "md:hidden", "hide-for-small") is not here: a reader sees those.
HIDING_CLASSES = (
    # Bootstrap 3-4, Tailwind, Semantic UI: screen readers alone; hidden; invisible.
    "sr-only",
    "sr-only-focusable",
    "hidden",
    "hide",
    "invisible",
    # Bootstrap 4-5, Drupal 8+, Joomla 4, HTML5 Boilerplate ("visuallyhidden").
    "visually-hidden",
    "visually-hidden-focusable",
    "d-none",
    "text-hide",
    # WordPress and its themes and plugins (Twenty Eleven, Jetpack, Elementor).
    "screen-reader-text",
    "screen-reader-only",
    "assistive-text",
    "sharing-screen-reader-text",
    "elementor-screen-only",
    # Drupal 7, Joomla 3.
    "element-invisible",
    "element-hidden",
    # Foundation 6, Bulma, UIkit.
    "show-for-sr",
    "show-on-focus",
    "is-sr-only",
    "is-hidden",
    "is-invisible",
    "uk-hidden",
    "uk-invisible",
    "uk-hidden-visually",
    # Design systems: GOV.UK, USWDS, the EU's ECL, Angular CDK, utility prefixes.
    "govuk-visually-hidden",
    "govuk-visually-hidden-focusable",
    "usa-sr-only",
    "ecl-u-sr-only",
    "cdk-visually-hidden",
    "u-visually-hidden",
    "u-sr-only",
    "a11y-hidden",
    "hide-accessible",
    "offscreen",
    # Korean portals and CMSs: Naver ("blind"), news sites, Kakao, GnuBoard.
    "blind",
    "is_blind",
    "screen_out",
    "sound_only",
    # jQuery plugins' popups, shown on a click: Magnific Popup's, Fancybox's.
    "mfp-hide",
    "fancybox-hidden",
)
_SQUASH = re.compile(r"[-_]")
_HIDING = frozenset(_SQUASH.sub("", name.lower()) for name in HIDING_CLASSES)
# Classes that show such an element again from a screen size up: Tailwind's
# "hidden md:block", "sr-only lg:not-sr-only", Bootstrap's "d-none d-md-block".
# (Shown on focus or hover, "focus:not-sr-only", it stays hidden from a reader.)
_SHOWN_FROM = re.compile(
    r"(?:(?:xs|sm|md|lg|xl|\dxl|min-[^:]+|max-[^:]+|@[^:]*):"
    r"(?:block|inline|inline-block|flex|inline-flex|grid|inline-grid|table[\w-]*|contents"
    r"|flow-root|list-item|visible|not-sr-only)"
    r"|d-(?:sm|md|lg|xl|xxl)-(?!none)[\w-]+)$"
)
_SPACES = re.compile(r"\s+")
# Text written without spaces between words: Chinese, Japanese, Thai.
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# A teaser's card: an ancestor this near the paragraph, holding a linked headline and
# at most this many characters besides the two (a date, a kicker, a "more" link).
_CARD_DEPTH = 3
_CARD_SLACK = 100
# Characters of the longest headline a card is looked for with.
_HEADLINE = 300
# How far above the card other cards' linked headlines are looked for.
_LIST_DEPTH = 5


def normal(text: str) -> str:
    """Return `text` with whitespace runs as one space, stripped."""
    return _SPACES.sub(" ", text).strip()


def text_of(element: Element) -> str:
    """Return the text inside `element` a reader sees, whitespace normalised."""
    return normal("".join(_seen(element)))


def unseen(element: Element) -> bool:
    """True when `element` does not reach every reader with the page: a script, style,
    template, dialog, fallback of a canvas, video or audio, list box (its options),
    comment or processing instruction; an element `hidden`,
    `aria-hidden`, styled `display:none` or `visibility:hidden`, or of a hiding class
    (`HIDING_CLASSES`). Never the page's `html` or `body`, nor a block holding its
    `main`."""
    if not isinstance(element.tag, str) or element.tag in _UNSEEN:
        return True
    if (element.get("role") or "").strip().lower() in _DIALOGS or element.get(
        "aria-modal"
    ) == "true":
        return True
    if element.tag in ("html", "body"):
        return False
    hidden = (
        element.get("hidden") is not None
        or (element.get("aria-hidden") or "").strip().lower() == "true"
        or bool(_STYLED_AWAY.search(element.get("style") or ""))
        or _hiding_class(element.get("class"))
    )
    # A block holding the page's `main` is shown: a script reveals it, or a hidden
    # menu's unclosed tags nested the page in it (a browser closes them; lxml does not).
    return hidden and next(element.iter("main"), None) is None


def out_of_sight(element: Element) -> bool:
    """True when `element` or a block holding it does not reach every reader (`unseen`)."""
    return any(unseen(a) for a in (element, *element.iterancestors()))


@lru_cache(maxsize=4096)
def _hiding_class(names: str | None) -> bool:
    """True when the class list `names` hides its element on every screen."""
    # Cached: a page repeats its class lists, and every text walk asks of each element.
    if not names:
        return False
    classes = names.split()
    return any(_SQUASH.sub("", c.lower()) in _HIDING for c in classes) and not any(
        _SHOWN_FROM.match(c) for c in classes
    )


def _seen(element: Element) -> Iterator[str]:
    """Yield the text nodes inside `element` a reader sees, in order."""
    # A stack, not recursion: a page of unclosed tags nests thousands deep.
    if unseen(element):
        return
    if element.text:
        yield element.text
    # Iterators of children, each below its parent's tail where it has one.
    stack: list[Iterator[Element | str]] = [iter(element)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif isinstance(child, str):
            yield child
        elif unseen(child):
            if child.tail:
                yield child.tail
        else:
            if child.text:
                yield child.text
            if child.tail:
                stack.append(iter([child.tail]))
            stack.append(iter(child))


def _wraps_blocks(element: Element) -> bool:
    """True when `element` is a legacy `<font>` around blocks (paragraphs, `<div>`s):
    browsers let it wrap them, and a page of unclosed ones nests every paragraph in it."""
    return element.tag == "font" and next(element.iter(*BLOCKS), None) is not None


def loose_text(element: Element) -> str:
    """Return the text a reader sees in `element` outside its child blocks: its own
    text, its inline children's, and what follows each child. A `<font>` around blocks
    is read as a block."""
    parts = [element.text or ""]
    for child in element:
        if child.tag not in BLOCKS and not _wraps_blocks(child):
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
    if any(child.tag in BLOCKS or _wraps_blocks(child) for child in block):
        return loose_text(block)
    return text_of(block)


def teaser(paragraph: Element) -> bool:
    """True when `paragraph` is another page's teaser: it shares a card (a near
    ancestor holding little else) with a linked headline, and more linked headlines
    lie near the card (a list of teasers, not a short post under its permalink)."""
    size = len(text_of(paragraph))
    for card in islice(paragraph.iterancestors(), _CARD_DEPTH):
        # A block saying more than a headline besides is no card, nor is what holds it:
        # told without reading it whole (a story's every paragraph asks of its body).
        if _says_more(card, size + _HEADLINE + _CARD_SLACK):
            return False
        heads = [h for h in card.iter(*HEADINGS) if not _holds(h, paragraph)]
        if not heads:
            continue
        head = next((h for h in heads if linked_heading(h)), None)
        if (
            head is None
            or _own_headline(head)
            or len(text_of(card)) > size + len(text_of(head)) + _CARD_SLACK
        ):
            return False
        return any(
            linked_heading(h) and not _holds(card, h)
            for near in islice(card.iterancestors(), _LIST_DEPTH)
            for h in near.iter(*HEADINGS)
        )
    return False


def _says_more(element: Element, most: int) -> bool:
    """True when `element` holds more than `most` characters of text a reader sees."""
    said = 0
    for piece in _seen(element):
        said += len(normal(piece))
        if said > most:
            return True
    return False


def _own_headline(heading: Element) -> bool:
    """True when `heading` is the page's own headline (a post under its permalink, not
    another page's): the page's first `<h1>` a reader sees, or the words of its
    `<title>`."""
    tree = heading.getroottree()
    if next((h for h in tree.iter("h1") if not out_of_sight(h)), None) is heading:
        return True
    words = text_of(heading).casefold()
    title = next(tree.iter("title"), None)
    return bool(words) and title is not None and words in text_of(title).casefold()


def _holds(element: Element, other: Element) -> bool:
    return element is other or any(a is element for a in other.iterancestors())


def linked_heading(heading: Element) -> bool:
    """True when `heading` is a link: inside one, or most of its text in one."""
    return any(a.tag == "a" for a in heading.iterancestors()) or (
        bool(text_of(heading)) and link_share(heading) > 0.5
    )
