"""What a site's readers change on a page: counters of their comments, views and votes
count up, and a reader adds a comment. No lastmod should move for either."""

from __future__ import annotations

import copy
import re

from lxml import etree

from sitemapd.drill.fresh import rewrite
from sitemapd.drill.structure import Page, comments, one_comment
from sitemapd.drill.text import Element, text_of, unseen

# Numbers there are data, not counters: tables, footnote marks, formulas, code.
_NOT_COUNTERS = {"script", "style", "table", "sup", "sub", "math", "code", "pre", "time"}
_NUMBER = re.compile(r"\d+")
# What a CMS counts anew on every request: readers' comments, replies, views, visits,
# votes, likes and shares, in the languages of the benchmark's pages. A number beside
# another word is not a counter: a price, a weight, a date, "7 min" to read, a show
# named "13 Investigates", "30 Rezepte" in a cookbook's menu.
_COUNTED = (
    "comments?|replies|reply|responses?|reviews?|ratings?|views?|visits?|visitors?|hits|"
    "reads|plays|downloads|likes?|dislikes?|shares?|tweets?|pins?|votes?|diggs?|"
    "followers?|fans|subscribers?|reactions?|pingbacks?|trackbacks?|clicks?|"
    "kommentare?|antworten|antwort|aufrufe|besuche|bewertungen|ansichten|leser|klicks|"
    "commentaires?|vues|réactions|partages|comentarios?|comentários?|visitas|vistas|"
    "visualizaciones|visualizações|respuestas|respostas|votos|commenti|commento|visite|"
    "visualizzazioni|voti|risposte|reacties|reactie|weergaven|kommentarer|visninger|"
    "komentarze|komentarzy|komentarz|wyświetleń|komentářů|komentáře|komentář|"
    "hozzászólás|megtekintés|комментариев|комментария|комментарий|просмотров|просмотра|"
    "просмотр"
)
# A counter: a number, maybe abbreviated, and the one word saying what it counts
# ("1.2k views", "42 comments"); a bare number may be a day, a rank or a footnote.
_COUNTER = re.compile(rf"\s*\d{{1,3}}(?:[.,]\d+)?[kKmM]?\s+(?:{_COUNTED})\s*", re.IGNORECASE)


def counters(page: Page) -> bool:
    """Add to every counter outside the content: comment counts, views, likes."""
    done = False
    for element in page.tree.iter(etree.Element):
        if element.tag in _NOT_COUNTERS or page.holds_content(element) or element in page.body:
            continue
        if any(a.tag in _NOT_COUNTERS for a in element.iterancestors()):
            continue
        for attr in ("text", "tail"):
            value = getattr(element, attr)
            parent = element.getparent()
            if attr == "tail" and parent is not None and page.holds_content(parent):
                continue
            if value and _COUNTER.fullmatch(value):
                setattr(element, attr, _NUMBER.sub(lambda m: str(int(m.group()) + 7), value))
                done = True
    return done


# What a comment is written in when its thread does not name it.
_COMMENT_TAGS = ("li", "article", "div", "section")


def new_comment(page: Page) -> bool:
    """Add a reader's comment after the last of every comment thread's comments: a
    reader writes it, not an editor (a thread is a block named `comment`, `comments`, ...
    holding two comments or more, and neither the content nor a headline: WordPress
    names a post `comments-open`, a headline may be a comment's). One comment by
    schema.org's markup is no thread: its parts are not comments (a forum's reply
    marked `Comment`, its author's card and its message)."""
    done = False
    for thread in page.tree.iter(etree.Element):
        if (
            not comments(thread)
            or one_comment(thread)
            or any(comments(a) for a in thread.iterancestors())
            or page.holds_content(thread)
            or next(thread.iter("h1"), None) is not None
        ):
            continue
        said = _comments_of(thread)
        if len(said) < 2:
            continue
        fresh = copy.deepcopy(said[-1])
        fresh.tail = said[-1].tail
        rewrite(fresh, len(said))
        said[-1].addnext(fresh)
        done = True
    return done


def _comments_of(thread: Element) -> list[Element]:
    """Return the comments of `thread`: its outermost blocks named as comments, else the
    first run of two or more blocks of one tag that say something (a list's items; not
    paragraphs, which are a notice's)."""
    named = [c for c in thread.iterdescendants(etree.Element) if comments(c) and _said(c)]
    named = [c for c in named if not any(a in named for a in c.iterancestors())]
    if len(named) >= 2:
        return named
    for holder in thread.iter(etree.Element):
        said = [c for c in holder if c.tag in _COMMENT_TAGS and _said(c)]
        for tag in dict.fromkeys(c.tag for c in said):
            items = [c for c in said if c.tag == tag]
            if len(items) >= 2:
                return items
    return []


def _said(element: Element) -> bool:
    return not unseen(element) and bool(text_of(element).strip())
