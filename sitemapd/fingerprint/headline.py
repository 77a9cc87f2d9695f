"""Find a page's headline and its one title, not every heading that looks like one.

Pages carry other stories' headlines as `<h1>` in "latest" lists, a logo or blog name
as `<h1>`, and `<title>` inside inline SVG icons. The title is the document's own; the
headline is the `<h1>` that says what the title, `og:title` or the structured data's
headline say, else the one that opens or precedes the main content; the `<h1>` standing
at the main content's first text is kept too, whatever its words. Of several JSON-LD
articles (a box of teasers may carry one for each story), the page's own are those
whose headline the page says. JSON-LD texts are read as readers see them: some CMSs
write HTML's character references into them ("America&#039;s").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sitemapd.fingerprint.chrome import Element
from sitemapd.fingerprint.score import text_nodes

# Elements whose `<title>` is not the document's: icons, formulas, embedded documents.
_FOREIGN = {"svg", "math", "object", "iframe", "template"}
_WORD = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces between words (Thai, kana, CJK ideographs, Hangul),
# compared by pairs of characters. Ranges, not a regex class: the class's 40,000 code
# points take 7 ms to compile, a tenth of a short command's whole run.
_UNSPACED = (("\u0e00", "\u0e7f"), ("\u3040", "\u30ff"), ("\u3400", "\u9fff"), ("\uac00", "\ud7af"))
# Words an `<h1>` must share with the page's stated headlines to be taken for it, unless
# it shares half of its own.
_SHARED = 3


def ld_text(text: str) -> str:
    """Return a JSON-LD text with the HTML character references a CMS wrote into it
    resolved: JSON has none of its own, and readers see the characters."""
    if "&" not in text:
        return text
    # Loaded by the few pages that need it: html.entities' table costs 2 ms to load.
    from html import unescape

    return unescape(text)


def title_element(tree: Element) -> Element | None:
    """Return the document's `<title>`: the head's, else the first outside SVG, MathML
    and embedded documents (parsers move a title after a stray tag into the body)."""
    head = next(tree.iterchildren("head"), None)
    if head is not None:
        title = next(head.iterchildren("title"), None)
        if title is not None:
            return title
    for title in tree.iter("title"):
        if not any(a.tag in _FOREIGN for a in title.iterancestors()):
            return title
    return None


def title_text(tree: Element) -> str | None:
    """Return the text of the document's title, or None when it has none."""
    title = title_element(tree)
    return None if title is None else title.text


def tokens(text: str) -> set[str]:
    """Return the words of `text`, lower-cased, and pairs of characters of unspaced
    scripts."""
    words = {w for w in _WORD.findall(text.lower()) if len(w) > 1 or not w.isascii()}
    unspaced = "".join(
        c for c in text if not c.isascii() and any(low <= c <= high for low, high in _UNSPACED)
    )
    words.update(unspaced[n : n + 2] for n in range(len(unspaced) - 1))
    return words


def headline(
    h1s: list[tuple[Element, str]],
    stated: Iterable[str],
    first_main: Element | None,
    opening: Element | None = None,
) -> list[str]:
    """Return the page's headline among its `<h1>` texts `h1s` (element, text), once
    for each `<h1>` that says it (none when the page has no `<h1>`).

    Those saying one of the `stated` headlines (title, og:title, JSON-LD) word for word
    are candidates, else those sharing most words with them, else all; of those, the
    first inside the main content (whose first element is `first_main`), else the last
    before it. A headline said twice (a title bar's copy and the article's) is kept
    twice: an editor who changes one changed what the page says, and a template
    renders both copies from one field.
    """
    said_as = [tokens(text) for text in stated]
    # The site's name in the masthead is an <h1> on many themes, and shares more of the
    # title's words ("Post | Site name and tagline") than the post's own <h1>; Open
    # Graph and JSON-LD state the post's headline alone, and an <h1> that says it word
    # for word is the page's.
    candidates = [(e, t) for e, t in h1s if (own := tokens(t)) and own in said_as]
    if not candidates:
        reference: set[str] = set().union(*said_as)
        scored = []
        for element, text in h1s:
            own = tokens(text)
            shared = len(own & reference)
            if shared >= _SHARED or (own and shared * 2 >= len(own)):
                scored.append((shared, element, text))
        best = max((shared for shared, _, _ in scored), default=0)
        candidates = [(e, t) for shared, e, t in scored if shared == best] or h1s
    if not candidates:
        return []
    # Numbered once for both lookups, and only when one of them needs it.
    order = _Order()
    said = _nearest(candidates, first_main, order)
    found = [text for _, text in candidates if text == said]
    # Cheap first: most pages have one `<h1>`, or say one headline in all of them.
    opener = None if all(t == said for _, t in h1s) else _opener(h1s, opening, order)
    if opener is not None and opener != said:
        found.append(opener)
    return found


class _Order:
    """The document order of a tree's elements, numbered on first use."""

    def __init__(self) -> None:
        self._order: dict[Element, int] | None = None

    def of(self, element: Element) -> dict[Element, int]:
        """Return the position of every element of `element`'s tree, counted once."""
        if self._order is None:
            self._order = document_order(element)
        return self._order


def document_order(element: Element) -> dict[Element, int]:
    """Return the position of every element of `element`'s tree in document order."""
    return {node: n for n, node in enumerate(element.getroottree().iter())}


def _opener(h1s: list[tuple[Element, str]], opening: Element | None, order: _Order) -> str | None:
    """Return the text of the last of `h1s` at or before `opening`, the element of the
    main content's first text, that is no link: the heading a reader sees open the
    content, whatever words it shares with the title ("Control" above a guide titled
    "Controlling Poison Ivy"), or None."""
    if opening is None:
        return None
    positions = order.of(opening)
    start = positions.get(opening, -1)
    found = None
    for element, text in h1s:
        if positions.get(element, start + 1) > start:
            break
        if not any(a.tag == "a" for a in element.iterancestors()):
            found = text
    return found


def _nearest(h1s: list[tuple[Element, str]], first_main: Element | None, order: _Order) -> str:
    """Return the text of the first of `h1s` inside the main content, else of the last
    before it, else of the first."""
    if first_main is None or len(h1s) == 1:
        return h1s[0][1]
    for element, text in h1s:
        if element is first_main or any(a is first_main for a in element.iterancestors()):
            return text
    positions = order.of(first_main)
    start = positions.get(first_main, 0)
    before = [text for element, text in h1s if positions.get(element, 0) < start]
    return before[-1] if before else h1s[0][1]


def own_articles(
    articles: list[dict[str, object]], parts: list[tuple[str, str]], tree: Element
) -> list[dict[str, object]]:
    """Return the page's own among its JSON-LD `articles`: when it holds several (a box
    of other stories may describe each teaser), those whose headline its title or
    `og:title` says, or one of its `<h1>`; all of them when none does."""
    if len(articles) < 2:
        return articles
    said = [tokens(text) for label, text in parts if label in ("title", "og:title")]
    h1s = [tokens(" ".join(text_nodes(h))) for h in tree.iter("h1")]
    own = []
    for node in articles:
        said_by_node = node.get("headline") or node.get("name")
        words = tokens(ld_text(said_by_node)) if isinstance(said_by_node, str) else set()
        if words and (any(words <= title for title in said) or words in h1s):
            own.append(node)
    return own or articles
