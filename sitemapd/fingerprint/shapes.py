"""Template parts told by their shape, not by their name or their share of link text:
a month's calendar, a pager or an index of short links under its label, a list of
links each with a short note (a date, a time, a count)."""

from __future__ import annotations

import re

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
