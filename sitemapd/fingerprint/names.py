"""What a block's class and id say it is: an article part ("content", "post-body"), a
template part ("related", "share-bar", "more-stories", "cookie-notice", run together
"relatedarticles" or in camel case "sponsoredProducts"), a word that names either on
different sites ("widget", "latest"), or a readers' comment thread. A section whose id
is its heading's slug names nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lxml import etree

from sitemapd.fingerprint import shapes

# Class and id words of template parts (and `_COMMENT_WORDS`); a word of _ARTICLE_WORDS
# in the same element wins. The word lists are sets, matched against a name's whole
# words: as regular expressions they cost every start 13 M instructions to compile, as
# sets (with every run-together word) 1.5 M to build.
_TEMPLATE_WORDS = {
    "nav",
    "navbar",
    "navigation",
    "menu",
    "breadcrumb",
    "breadcrumbs",
    "masthead",
    "header",
    "footer",
    "sidebar",
    "aside",
    "related",
    "recommended",
    "recommendation",
    "recommendations",
    "share",
    "sharing",
    "social",
    "commentcount",
    "cookie",
    "cookies",
    "consent",
    "gdpr",
    "newsletter",
    "subscribe",
    "subscription",
    "signup",
    "promo",
    "promotion",
    "advert",
    "advertisement",
    "ad",
    "ads",
    "adslot",
    "sponsor",
    "sponsored",
    "outbrain",
    "taboola",
    "pagination",
    "pager",
    "toolbar",
    "modal",
    "popup",
    "overlay",
}
# What a template word names, run together with it in one word ("relatedarticles",
# "sharebar", "footerlinks": `_TEMPLATE_COMPOUND`).
_TEMPLATE_PARTS = {
    "article",
    "articles",
    "post",
    "posts",
    "link",
    "links",
    "stories",
    "story",
    "item",
    "items",
    "news",
    "box",
    "bar",
    "list",
    "block",
    "area",
    "container",
    "wrapper",
    "section",
    "widget",
    "module",
    "panel",
    "pane",
    "shell",
    "column",
    "content",
}
_TEMPLATE_COMPOUND = {word + part for word in _TEMPLATE_WORDS for part in _TEMPLATE_PARTS}
# Words that name template parts on some sites and content on others (page builders
# wrap articles in "widgets"): such a block is template only when it is mostly links
# or too short to say anything.
_WEAK_WORDS = {
    "widget",
    "widgets",
    "side",
    "rail",
    "popular",
    "trending",
    "latest",
    "teaser",
    "teasers",
    "tags",
    "skip",
    "print",
    "counter",
    "views",
    "hidden",
    "sr",
    "visually",
}
# Template parts named in several words: "more-stories", "most_read", "read-next".
_TEMPLATE_PHRASES = re.compile(
    r"more[-_ ]?(?:stories|news|from|articles|on|like|to|in)\b|"
    r"most[-_ ]?(?:read|popular|viewed|shared)|read[-_ ]?(?:next|also)|see[-_ ]?also|"
    r"you[-_ ]?may|also[-_ ]?like|in[-_ ]?case"
)
_ARTICLE_WORDS = {
    "article",
    "articlebody",
    "body",
    "content",
    "entry",
    "main",
    "post",
    "story",
    "text",
    "prose",
    "blog",
    "page",
}
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_NAME = re.compile(r"[A-Za-z0-9]+")
# A name in camel case: words of three letters or more after the first (two or more),
# each capitalised, then any number. A generated name ("adFHlH", "navQpZ", "sc-AxjAm")
# is none, and spells no "ad" or "nav".
_CAMEL_NAME = re.compile(r"(?:[a-z]{2,}|[A-Z][a-z]{2,})(?:[A-Z][a-z]{2,})+[0-9]*")
_CAPITAL = re.compile(r"(?=[A-Z])")
# Words of a readers' comment thread (WordPress, Drupal, Disqus, in the languages whose
# counters `chrome` reads): in one name with an article word ("post-comments",
# "article_comments", "postcomments"), the thread is the article's, not the article.
_COMMENTS = {
    "comment",
    "comments",
    "commentlist",
    "disqus",
    "kommentar",
    "kommentare",
    "kommentarer",
    "commentaire",
    "commentaires",
    "comentario",
    "comentarios",
    "commenti",
    "commento",
    "reacties",
    "komentarz",
    "komentarze",
}
_COMMENT_WORDS = _COMMENTS | {article + word for article in _ARTICLE_WORDS for word in _COMMENTS}
# Carousels and sliders (and the libraries that draw them): a box that turns its items
# over, never the page's own list.
_CAROUSEL = re.compile(
    r"carousel|slider|swiper|(?:^|[^a-z])(?:owl|slick|glide|splide|flickity)(?:[^a-z]|$)"
)
# Words from which an id may be a heading's slug.
_SLUG_WORDS = 3


def weight(element: etree._Element) -> float:
    """Return readability's bonus for article-like and malus for template-like names."""
    article, template, weak, _ = named(element)
    weight = 25.0 * article - 25.0 * template - 10.0 * weak
    if element.tag in ("article", "main"):
        weight += 10
    return weight


def named(element: etree._Element) -> tuple[bool, bool, bool, bool]:
    """Return whether `element`'s class and id name an article part, a template part,
    what may be a template part, and a comment thread (with no article part)."""
    ident = element.get("id")
    if ident and _slug(ident, element):
        ident = None
    return _names(element.get("class"), ident)


def carousel(element: etree._Element) -> bool:
    """True when `element`'s class or id names a carousel or a slider."""
    return bool(_CAROUSEL.search(f"{element.get('class')} {element.get('id')}".lower()))


def _slug(ident: str, element: etree._Element) -> bool:
    """True when `ident` is the slug of `element`'s first heading, three words or more
    ("sharing-with-a-single-developer", "more-on-lists" of "5.1. More on Lists"):
    documentation generators name sections so; its words name no part of a template."""
    words = _words(ident)
    if len(words) < _SLUG_WORDS:
        return False
    heading = next(element.iter(*shapes.HEADINGS), None)
    if heading is None:
        return False
    said = list(_words(" ".join(t for t in heading.itertext() if isinstance(t, str))))
    # A numbered section's heading ("5.1. More on Lists") is slugged without its number.
    while said and said[0].isdigit():
        said.pop(0)
    return tuple(said[: len(words)]) == words


@lru_cache(maxsize=4096)
def _words(name: str) -> tuple[str, ...]:
    return tuple(w for w in _WORD_SPLIT.split(name.lower()) if w)


def _camel_words(match: re.Match[str]) -> str:
    """Return the name `match` holds, after its first word when that names a template
    part, a comment or a weak part and the name is in camel case and says nothing run
    together ("sponsored sponsoredProducts2"; "footerContent" is a footer's as it is)."""
    name = match.group()
    if not _CAMEL_NAME.fullmatch(name) or _known(name.lower()):
        return name
    # The first word alone, as a name run together is read ("relatedarticles"): every
    # word read, as a hyphenated name's are, cost pages held out edits of their own
    # text and headlines (docs/lastmod-truth.md, twenty-fifth round).
    first = (name[0] + _CAPITAL.split(name[1:], maxsplit=1)[0]).lower()
    if first in _TEMPLATE_WORDS or first in _COMMENTS or first in _WEAK_WORDS:
        return f"{first} {name}"
    return name


def _known(word: str) -> bool:
    """True when `word`, one word in lower case, names a part of a page (an article's, a
    template's, a comment's or a weak part), as `_names` reads a name."""
    return any(_names(word, None))


@lru_cache(maxsize=4096)
def _names(classes: str | None, ident: str | None) -> tuple[bool, bool, bool, bool]:
    # A site's pages repeat the same few hundred class and id values: each is read once.
    names = _NAME.sub(_camel_words, f"{classes or ''} {ident or ''}").lower()
    if not names.strip():
        return False, False, False, False
    words = [w for w in _WORD_SPLIT.split(names) if w]
    # An article word counts only in a name that is not a comment thread's: the
    # `post` of "post-comments" says whose comments they are.
    article = any(
        w in _ARTICLE_WORDS
        for name in names.split()
        if not any(p in _COMMENT_WORDS for p in _WORD_SPLIT.split(name))
        for w in _WORD_SPLIT.split(name)
    )
    return (
        article,
        any(w in _TEMPLATE_WORDS or w in _COMMENT_WORDS or w in _TEMPLATE_COMPOUND for w in words)
        or bool(_TEMPLATE_PHRASES.search(names)),
        any(w in _WEAK_WORDS for w in words),
        not article and any(w in _COMMENT_WORDS for w in words),
    )
