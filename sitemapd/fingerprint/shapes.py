"""Template parts told by their shape, not by their name or their share of link text:
a month's calendar, a pager or an index of short links under its label, a list of
links each with a short note (a date, a time, a count), other stories' teasers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from lxml import etree

Element = etree._Element

# A month's calendar: at most this much text, this many cells saying a day of the month
# alone, and the share of the cells with text that they are.
CALENDAR_TEXT = 400
_CALENDAR_DAYS = 20
_CALENDAR_SHARE = 0.6
_DAY = re.compile(r"\s*(?:0?[1-9]|[12]\d|3[01])\s*")
# A pager or an index under its label ("Episodes: 1 • 2 • 3 • 4 • 5"): so many links at
# least, and fewer words than links outside them.
INDEX_LINKS = 5
_WORD = re.compile(r"\w+")
# A list of noted links: so many items at least (three, as a row of links), each
# holding under so many characters outside its links (a date, a time, an author): under
# 40, no item is a paragraph in any script.
NOTED_ITEMS = 3
NOTE = 40
# Heading elements (chrome.py asks of them too).
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Other stories' teasers: so many or more, each of at most so many characters.
TEASERS = 3
EXCERPT = 600
# Characters of the titles' links, on average, for them to be stories' headlines, not
# names or labels (a forum's posters, a product's features: "SMS", "RCS").
HEADLINE = 20
_TEASER_TAGS = {"li", "article", "div"}


def index(element: Element) -> bool:
    """True when `element`, holding five links or more, holds fewer words outside them
    than links, and no heading: a pager or an index under its label."""
    if next(element.iter(*HEADINGS), None) is not None:
        return False
    links = list(element.iter("a"))
    said = " ".join(t for t in element.itertext() if isinstance(t, str))
    linked = " ".join(t for a in links for t in a.itertext() if isinstance(t, str))
    return len(_WORD.findall(said)) - len(_WORD.findall(linked)) < len(links)


def calendar(table: Element) -> bool:
    """True when `table` is a month's calendar: most of its cells with text say a day
    of the month alone, twenty or more, in the order of the days."""
    days: list[int] = []
    cells = 0
    for cell in table.iter("td", "th"):
        said = "".join(t for t in cell.itertext() if isinstance(t, str))
        if not said.strip():
            continue
        cells += 1
        if _DAY.fullmatch(said):
            day = int(said)
            if days and day <= days[-1]:
                return False
            days.append(day)
    return len(days) >= _CALENDAR_DAYS and len(days) >= _CALENDAR_SHARE * cells


def noted_links(element: Element, text: dict[Element, int], links: dict[Element, int]) -> bool:
    """True when `element`'s children are links each with a short note beside it ("Colon
    Cancer (May 23, 02)"): three or more hold a link, at least half of those with text,
    none says `NOTE` characters outside its links, nor does the text between them, and
    no heading but its label says more than its links."""
    linked = noted = 0
    own = 0
    for child in element:
        said = text.get(child, 0)
        if not said:
            continue
        outside = said - links[child]
        if outside >= NOTE:
            return False
        own += outside
        noted += 1
        linked += links[child] > 0
    if linked < NOTED_ITEMS or 2 * linked < noted:
        return False
    if text[element] - links[element] - own >= NOTE:
        return False
    # A heading inside a link is a teaser's linked title; one outside is the list's
    # label ("Upcoming events"), two a page's sections, an `<h1>` the page's headline.
    labels = [
        h.tag
        for h in element.iter(*HEADINGS)
        if text[h] > links[h] and next(h.iterancestors("a"), None) is None
    ]
    return len(labels) <= 1 and "h1" not in labels


def _nothing(element: Element) -> bool:
    return False


def teasers(element: Element, text: dict[Element, int], links: dict[Element, int]) -> bool:
    """True when `element`'s children are other stories' teasers: three or more items
    (`<li>`, `<article>`, `<div>`) of no more than `EXCERPT` characters each (a headline
    and a sentence or two, a date, a category), each under its story's linked title (a
    heading mostly linked, or a link its first text), no two the same story's, the
    titles saying headlines (`HEADLINE`)."""
    items = [child for child in element if text.get(child, 0)]
    if len(items) < TEASERS or any(child.tag not in _TEASER_TAGS for child in items):
        return False
    titles: set[str] = set()
    said = 0  # characters of the titles' links
    for item in items:
        if text[item] > EXCERPT:
            return False
        title = _title_link(item, text, links)
        if title is None or title[0] in titles:
            return False
        titles.add(title[0])
        said += text[title[1]]
    return said >= HEADLINE * len(items)


def _title_link(
    item: Element, text: dict[Element, int], links: dict[Element, int]
) -> tuple[str, Element] | None:
    """Return the address `item`'s title links to, and its link: its first heading mostly
    linked, or the link its first text is in; None when it has neither."""
    for heading in item.iter(*HEADINGS):
        if text.get(heading, 0) and 2 * links[heading] > text[heading]:
            link = next(heading.iter("a"), None)
            return _address(next(heading.iterancestors("a"), None) if link is None else link)
    return _address(leading_link(item))


def leading_link(item: Element, hidden: Callable[[Element], bool] = _nothing) -> Element | None:
    """Return the link that holds the first text in `item` (outside the elements `hidden`
    is true of), or None when that text is in no link or there is none."""
    if (item.text or "").strip():
        return None
    # A stack, not recursion: pages nest thousands deep.
    stack: list[tuple[Element, Iterator[Element]]] = [(item, iter(item))]
    while stack:
        parent, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if stack and (parent.tail or "").strip():
                return _link_holding(stack[-1][0], item)
        elif not isinstance(child.tag, str) or hidden(child):
            if (child.tail or "").strip():
                return _link_holding(parent, item)
        elif (child.text or "").strip():
            return _link_holding(child, item)
        else:
            stack.append((child, iter(child)))
    return None


def _link_holding(element: Element, item: Element) -> Element | None:
    """Return the link that is or holds `element`, up to `item`; None when none does."""
    for holder in (element, *element.iterancestors()):
        if holder.tag == "a":
            return holder
        if holder is item:
            break
    return None


def _address(link: Element | None) -> tuple[str, Element] | None:
    address = "" if link is None else (link.get("href") or "").strip()
    return (address, link) if address and link is not None else None
