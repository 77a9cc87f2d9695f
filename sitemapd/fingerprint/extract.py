"""Find a page's main content: the article, not the template around it.

Works on any template, landmarks or not. Paragraph-like blocks are scored by their text
(readability's measure: length and commas, less link text) and the scores are given to
their parents and grandparents (a block of `<br>` lines as its paragraphs; see `score`);
the best container and those of its siblings that score near it are the main content;
every post of a blog's home, a forum thread's every message (see `posts`). A class or id
saying "content" counts in full only on a block holding a short article's text. Inside
it, what a reader would not call the article is left out: navigation, forms, asides,
link lists (most of their text inside `<a>`, whatever their tag: bylines, labels, other
stories' headlines), and blocks whose class or id names a template part (share bars,
"related", "most read", comment threads, cookie banners; see `chrome`), and counters'
labels alone ("27 comments"). Which container wins is judged by its prose less the
template parts it holds: a box that rotates does not change the choice. A page that is
no article is its one `<main>` when it has one, and its main list of items too when its
prose is short, unless it is a product's. A CSS selector replaces the search.
"""

from __future__ import annotations

from collections.abc import Callable

from lxml import etree

from sitemapd.fingerprint.chrome import (
    MIN_PARAGRAPH,
    Element,
    Sizes,
    elements,
    inside,
    template_parts,
    template_reason,
)
from sitemapd.fingerprint.listing import MIN_LIST_TEXT, main_list
from sitemapd.fingerprint.names import carousel, weight
from sitemapd.fingerprint.posts import messages, posts
from sitemapd.fingerprint.score import BLOCKS as BLOCKS  # the drill's: imported from here
from sitemapd.fingerprint.score import (
    loose_text,
    paragraphs_score,
    text_of,
)
from sitemapd.fingerprint.strays import PARAGRAPHS, one_line, outermost, paragraph_share, strays
from sitemapd.fingerprint.voters import Voters

_PARAGRAPHS = set(PARAGRAPHS)
_ROLE_MAIN = etree.XPath(".//*[@role='main']")
# Containers whose own loose text counts as a paragraph of theirs.
_LOOSE = {"div", "article", "section", "main", "center"}
# Main content with less text than this is not found: the page is fingerprinted whole.
_MIN_MAIN = 140
# Main content below which a page not declaring itself an article is its list too.
_LIST_PAGE_PROSE = 280
# Paragraph scores go to five generations of ancestors, less with each (readability.js).
_DIVIDERS = (1, 2, 6, 9, 12)
# Candidates compared with the best, how close they must score, and how many must share
# an ancestor for it to be the article.
_TOP = 5
_CLOSE = 0.75
_MIN_CLOSE = 3
# Characters a sibling of the main content needs to be more of the same article.
_SIBLING = 60


class Extract:
    """What the extractor kept of a page and what it left out."""

    __slots__ = ("dropped", "fallback", "main")

    def __init__(
        self, main: list[Element], fallback: bool, dropped: dict[Element, str] | None = None
    ) -> None:
        # The elements holding the main content, in document order; whether none was
        # found (`main` is the whole body); the elements left out inside it, with why.
        self.main, self.fallback = main, fallback
        self.dropped = {} if dropped is None else dropped


def drop(element: Element) -> None:
    """Remove `element` and what it holds, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    leave_tail(element)
    parent.remove(element)


def leave_tail(element: Element) -> None:
    """Give the text that follows `element` to what precedes it, so that `element` can
    move or go without it."""
    parent = element.getparent()
    if parent is None or not element.tail:
        return
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + element.tail
    else:
        parent.text = (parent.text or "") + element.tail
    element.tail = None


def describe(element: Element) -> str:
    """Return a CSS-like name of `element` for people: `div#main.story-body`."""
    name = str(element.tag)
    ident = (element.get("id") or "").strip()
    if ident:
        name += "#" + ident.split()[0]
    classes = (element.get("class") or "").split()
    return name + "".join("." + c for c in classes[:3])


def main_content(
    body: Element,
    select: Callable[[Element], list[Element]] | None,
    article: bool = False,
    product: bool = False,
) -> Extract:
    """Return the main content of `body` (a cleaned document body).

    With `select` (an operator's selector), its outermost matches are the main content;
    when it matches nothing the page falls back to the whole body. A page with little
    prose that does not declare itself an `article` or a `product` is also its main
    list of items.
    """
    sizes = Sizes(body)
    if select is not None:
        chosen = outermost(select(body))
        if not chosen:
            return Extract([body], fallback=True, dropped=template_parts(body, sizes, body))
        return _finish(chosen, sizes)
    among = Voters(body, sizes)
    top = _best_container(body, sizes, among.elements)
    if top is None:
        return _without_article(body, sizes, among, lists=not product)
    several = posts(top, sizes) or messages(top, sizes)
    extract = _finish(several or _with_siblings(top, sizes, among.unseen), sizes)
    kept = sum(sizes.text[e] for e in extract.main) - sum(
        sizes.text[e] for e in extract.dropped if _inside_any(e, extract.main)
    )
    if kept < _MIN_MAIN:
        return _without_article(body, sizes, among, lists=not product)
    # A page that is no article (a landing page of sections, a product, a category, a
    # documentation page) is what its one `<main>` holds, when that holds what was found.
    declared = None if article else _declared(body, sizes, among, _MIN_MAIN)
    if declared is not None and all(_inside_any(e, [declared]) for e in extract.main):
        extract = _finish([declared], sizes)
    elif found := strays(body, sizes, extract.main, among.unseen):
        for stray in found:
            extract.dropped.update(template_parts(stray, sizes, stray))
        extract.main = _in_order([*extract.main, *found], sizes)
    # A product's page lists other products (colours, "you may also like"), not its own.
    if not (article or product) and kept < _LIST_PAGE_PROSE:
        _add_list(extract, body, sizes, among.elements)
    return extract


def _add_list(
    extract: Extract, body: Element, sizes: Sizes, among: list[Element], least: int = MIN_LIST_TEXT
) -> None:
    """Add the page's main list of items `among` the elements of `body` to `extract`, its
    links kept: a home or section page whose one teaser scored as an article says what
    its list says, even when the list holds the teaser (a shop's category page whose
    intro opens its grid): one of `least` characters of link text or more."""
    listing = main_list(body, sizes, among, least)
    # A list in a block left out stays out.
    if listing is None or any(inside(listing, e) for e in extract.dropped):
        return
    held = [root for root in extract.main if _inside_any(root, [listing])]
    if not _inside_any(listing, extract.main):
        extract.main = _in_order([*(r for r in extract.main if r not in held), listing], sizes)
    extract.dropped = {e: w for e, w in extract.dropped.items() if not _inside_any(e, [listing])}
    extract.dropped.update(template_parts(listing, sizes, listing, lists=False))


def _in_order(elements: list[Element], sizes: Sizes) -> list[Element]:
    """Return `elements` in document order."""
    order = {element: n for n, element in enumerate(sizes.elements)}
    return sorted(elements, key=order.__getitem__)


def _without_article(body: Element, sizes: Sizes, among: Voters, lists: bool) -> Extract:
    """Return the main content of a page with no article: its main list of items when
    `lists` (a home, section, tag or author page lists links), else its one `<main>`,
    else the whole body less its template parts, carousels and what a reader does not
    see, as a fallback."""
    listing = main_list(body, sizes, among.elements) if lists else None
    if listing is not None:
        dropped = template_parts(listing, sizes, listing, lists=False)
        return Extract([listing], fallback=False, dropped=dropped)
    # Too little prose to score, but the page says where its content is: its one `<main>`,
    # and a list of links there however short its text (a small site's home: five
    # linked stories under a line of intro), whose new item is the page's change.
    declared = _declared(body, sizes, among, 1)
    if declared is not None:
        extract = _finish([declared], sizes)
        if lists:
            within = [e for e in among.elements if inside(e, declared)]
            _add_list(extract, body, sizes, within, least=1)
        return extract
    dropped = template_parts(body, sizes, body)
    dropped.update((element, "not shown") for element in among.unseen)
    # Other pages' teasers turned over in place: the page's surroundings, not its text.
    half = sizes.text[body] / 2
    turning = [e for e in sizes.elements if carousel(e) and sizes.text[e] < half]
    dropped.update((element, "a carousel") for element in outermost(turning))
    return Extract([body], fallback=True, dropped=dropped)


def _declared(body: Element, sizes: Sizes, among: Voters, least: int) -> Element | None:
    """Return the one `<main>` (or `role="main"`) of `body`, the outermost, when it holds
    `least` characters of text or more and a reader sees it; else None."""
    found = outermost([*body.iter("main"), *elements(_ROLE_MAIN(body))])
    if len(found) != 1 or sizes.text.get(found[0], 0) < least:
        return None
    return None if _inside_any(found[0], among.unseen) else found[0]


def _finish(main: list[Element], sizes: Sizes) -> Extract:
    dropped: dict[Element, str] = {}
    for element in main:
        dropped.update(template_parts(element, sizes, element))
    return Extract(main, fallback=False, dropped=dropped)


def _best_container(body: Element, sizes: Sizes, among: list[Element]) -> Element | None:
    """Return the element whose paragraphs `among` those of `body` (its voters) score
    highest, or None when no paragraph."""
    scores: dict[Element, float] = {}
    stop = body.getparent()
    # A sidebar's, a footer's or a cookie banner's paragraphs are not the article's,
    # however long: they do not vote for the container they lie in.
    for element in among:
        tag = element.tag
        leaf = tag in _PARAGRAPHS or (tag == "div" and _is_leaf_block(element))
        if leaf:
            length = sizes.text[element]
            if length < MIN_PARAGRAPH or template_reason(element, sizes, 1 << 62):
                continue
            score = paragraphs_score(element, text_of(element), length, inline=True) * (
                1 - sizes.link_density(element)
            )
            ancestor = element.getparent()
        elif tag in _LOOSE:
            # Text written straight into a container between its blocks, lines cut by
            # <br> (Blogger, legacy CMSs): a paragraph of the container itself.
            text = loose_text(element)
            if len(text) < MIN_PARAGRAPH or template_reason(element, sizes, 1 << 62):
                continue
            score = paragraphs_score(element, text, len(text), inline=False)
            ancestor = element
        else:
            continue
        for divider in _DIVIDERS:
            if ancestor is None or ancestor is stop:
                break
            scores[ancestor] = scores.get(ancestor, 0.0) + score / divider
            ancestor = ancestor.getparent()
    if not scores:
        return None
    # Link density without the template parts a container holds: a "latest" box that
    # rotates must not decide which container is the article.
    prose = sizes.prose()
    final = {e: v * (1 - prose(e)) + _named(e, sizes) for e, v in scores.items()}
    ranked = sorted(final, key=final.__getitem__, reverse=True)
    return _climb(ranked[0], ranked[1:_TOP], final, stop)


def _named(element: Element, sizes: Sizes) -> float:
    """Return the bonus or malus of `element`'s name; a name saying "content" counts in
    full only on a block holding a short article's text: a "content" box of one line
    is not the article."""
    bonus = weight(element)
    if bonus > 0:
        bonus *= min(sizes.text[element] / _MIN_MAIN, 1.0)
    return bonus


def _climb(
    top: Element,
    others: list[Element],
    final: dict[Element, float],
    stop: object,
) -> Element:
    """Return `top`, or the ancestor an article split into several parts shares.

    As readability.js: an ancestor holding several candidates that score nearly as well
    is the article; so is a parent that scores better than the child it holds.
    """
    close = [e for e in others if final[e] >= _CLOSE * final[top]]
    if len(close) >= _MIN_CLOSE:
        lines = [set(e.iterancestors()) for e in close]
        for ancestor in top.iterancestors():
            if ancestor is stop:
                break
            if sum(ancestor in line for line in lines) >= _MIN_CLOSE:
                top = ancestor
                break
    last = final.get(top, 0.0)
    parent = top.getparent()
    while parent is not None and parent is not stop and parent.tag != "body":
        if parent not in final:
            parent = parent.getparent()
            continue
        if final[parent] < last / 3:
            break
        if final[parent] > last:
            top = parent
            break
        last = final[parent]
        parent = parent.getparent()
    # An only child is its parent's content: take the parent (as readability.js), but
    # never beyond the body (a page with no <head> has it as the only child).
    while (
        (up := top.getparent()) is not None and up is not stop and len(up) == 1 and up.tag != "body"
    ):
        top = up
    return top


def _is_leaf_block(element: Element) -> bool:
    """True for a `<div>` used as a paragraph: text and no block-level children."""
    return not any(child.tag in BLOCKS for child in element)


def _with_siblings(top: Element, sizes: Sizes, unseen: list[Element]) -> list[Element]:
    """Return `top` and those of its siblings that read as more of the same article (not
    a block `unseen`)."""
    parent = top.getparent()
    if parent is None:
        return [top]
    top_text = sizes.text[top]
    kept = []
    after = False
    for sibling in parent:
        if sibling is top:
            kept.append(sibling)
            after = True
            continue
        if not isinstance(sibling.tag, str) or sibling not in sizes.text or sibling in unseen:
            continue
        length = sizes.text[sibling]
        density = sizes.link_density(sibling)
        if template_reason(sibling, sizes, top_text):
            continue
        # A lead, an intro, a second body part: paragraphs with few links; after the
        # story, an author's bio box, its one paragraph a `<div>`.
        if (
            length >= _SIBLING
            and density < 0.3
            and (paragraph_share(sibling, sizes) > 0.5 or (after and one_line(sibling, sizes)))
        ) or (sibling.tag == "p" and length >= _SIBLING and density < 0.25):
            kept.append(sibling)
    return kept


def _inside_any(element: Element, roots: list[Element]) -> bool:
    return any(element is r or inside(element, r) for r in roots)


def outside(extract: Extract, body: Element) -> list[Element]:
    """Return the elements of `body` around the main content, outermost first."""
    if extract.fallback or body in extract.main:
        return []
    ancestors: set[Element] = set()
    for root in extract.main:
        ancestors.update(root.iterancestors())
    holding = ancestors | set(extract.main)
    found: list[Element] = []
    for element in ancestors:
        if element is body or inside(element, body):
            found.extend(
                child for child in element if isinstance(child.tag, str) and child not in holding
            )
    order = {element: n for n, element in enumerate(body.iter())}
    return sorted(found, key=order.__getitem__)
