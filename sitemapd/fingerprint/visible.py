"""What of a page a reader sees, before the extractor measures it: React's streamed
segments where their script puts them, a button that holds prose opened up, and no
element that is never shown (scripts, styles, templates, frames, form controls) or that
is hidden (`hidden`, `aria-hidden`).
"""

from __future__ import annotations

from lxml import etree

from sitemapd.fingerprint import streamed
from sitemapd.fingerprint.chrome import Element, elements
from sitemapd.fingerprint.extract import drop
from sitemapd.fingerprint.score import text_of

# Never visible content, or not content at all: dropped before anything is measured.
NEVER = (
    "script",
    "style",
    "noscript",
    "noembed",
    "noframes",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "link",
    "meta",
    "button",
    "select",
    "input",
    "textarea",
    "dialog",
)
# Fingerprint version 1 also tested `style` for display:none, through a translate() that
# dropped the colon, so that test never matched: leaving it out keeps every digest.
_HIDDEN = etree.XPath("//*[@hidden or @aria-hidden='true']")
# A button holding paragraphs or headings: a tab or an accordion's header, whose text is
# shown (a product's "Collaborates with your team" and its line), or a button holding a
# `<div>` left open, whose `</button>` browsers honour and libxml2 ignores, so that the
# rest of the page, article and all, is parsed into it (a publisher's menu button).
_PROSE_BUTTONS = etree.XPath(
    "//button[.//p or .//h1 or .//h2 or .//h3 or .//article or .//main or .//section]"
)
# A button labelled with a question: an FAQ accordion's question, over its answer (a
# service's "When do I need a rewire?"), which a reader reads as the page's text; not a
# button's one or two words ("Need help?").
_BUTTONS = etree.XPath("//button")
_QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # and the full-width and Arabic ones
_QUESTION = 15
# The tag such a button takes until its tag is stripped, what it holds kept.
_OPENED = "sitemapd-opened"


def only(tree: Element) -> None:
    """Leave in `tree` what a reader sees of it."""
    streamed.complete(tree)
    for button in elements(_PROSE_BUTTONS(tree)):
        button.tag = _OPENED
    for button in elements(_BUTTONS(tree)):
        if _question(button):
            button.tag = _OPENED
    etree.strip_tags(tree, _OPENED)
    etree.strip_elements(tree, *NEVER, with_tail=False)
    for hidden in elements(_HIDDEN(tree)):
        drop(hidden)


def _question(button: Element) -> bool:
    """True when `button` is labelled with a question of a sentence's length."""
    label = " ".join(text_of(button).split())
    return len(label) >= _QUESTION and label.endswith(_QUESTION_MARKS)
