"""Template parts told by their shape, not by their name or their share of link text:
a month's calendar, a pager or an index of short links under its label."""

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
