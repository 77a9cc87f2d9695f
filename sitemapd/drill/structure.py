"""Tell a page's content from its surroundings by its structure alone.

The content is the page's prose paragraphs (the cluster holding most of their text), or,
on a page with little prose (a home, section or tag page), its main list of items; the
surroundings are the lists of links, counters and assets that hold none of it. Nothing
here asks what the fingerprint's extractor kept: a drill built on it can fail.

Text is what a reader sees: what a browser never renders (scripts, styles, `<noscript>`,
templates, `hidden` or `display:none` elements, dialogs that open over the page) is no
text. A page that declares itself an article (Open Graph type, JSON-LD) is never a list
page, however short; a menu (a block named or playing a navigation, `topnav` and
`navlist` too) or a share bar is never the list a page is about, nor, on a page that
marks its `main`, a list outside it. A list of teaser cards (a linked title and an
excerpt each) is a page's list before a list of bare links: a tag cloud, a widget.
Readers' comments (a block named `comment`/`comments`, or schema.org's `Comment`) are
not the page's content: an editor does not write them. Nor is a paragraph inside a link:
it is the teaser of another page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import takewhile

from lxml import etree

from sitemapd.drill.declared import declares_article_or_product
from sitemapd.drill.lists import LIST_ITEMS, MAIN_LIST_ITEMS, card, list_items
from sitemapd.drill.text import (
    Element,
    is_prose,
    link_share,
    out_of_sight,
    paragraph_text,
    teaser,
    text_of,
    unseen,
)
from sitemapd.fingerprint.names import carousel

# Link text share below which a block is prose, not a list of links.
PROSE_LINKS = 0.3
# Characters of prose below which a page is its list of items, not an article.
LIST_PAGE_PROSE = 280
_STRUCTURAL = {"nav", "header", "footer", "aside", "form"}
# Landmarks never content, even where a ground truth holds their text.
_NEVER_CONTENT = ("nav", "aside", "footer")
# Class and id words of a comment thread, as WordPress, Drupal and Disqus name them.
_COMMENT_WORDS = {
    "comment",
    "comments",
    "commentlist",
    "disqus",
    "kommentar",
    "kommentare",
    "commentaire",
    "commentaires",
    "comentario",
    "comentarios",
    "commento",
    "commenti",
}
_WORDS = re.compile(r"[^a-z0-9]+")
# Class and id words, and roles, of blocks around the content that are no landmark:
# menus, a site's header and footer, sidebars, "related" boxes, cookie banners,
# advertisements, promotions, newsletter sign-up boxes and breadcrumb trails.
_AROUND_WORDS = {
    "header",
    "masthead",
    "cookie",
    "cookies",
    "gdpr",
    "consent",
    "nav",
    "navbar",
    "navigation",
    "menu",
    "menubar",
    "submenu",
    "footer",
    "copyright",
    "sidebar",
    "side",
    "aside",
    "related",
    "ad",
    "ads",
    "advert",
    "advertisement",
    "advertising",
    "sponsor",
    "sponsored",
    "newsletter",
    "signup",
    "subscribe",
    "promo",
    "promotion",
    "breadcrumb",
    "breadcrumbs",
}
_AROUND_ROLES = {"navigation", "menu", "menubar", "banner", "contentinfo", "complementary"}
# Roles of the landmarks never content (`_NEVER_CONTENT`).
_LANDMARK_ROLES = {"navigation", "menu", "menubar", "contentinfo", "complementary"}
# A menu's or a share bar's word run together with another: the word that ends it
# ("topnav", "mainmenu", "hauptnavi", "socialshare"), or that opens it before the part
# it names ("navlist", "menubar", "sharebuttons", "followicons"). "Follow" opens it
# alone: "nofollow" is a link's, not a bar's.
_FUSED = re.compile(
    r"(?:[a-z0-9]*(?P<word>nav|navi|navigation|menu|share|sharing|social)|(?P<follow>follow))"
    r"(?:bar|list|links?|items?|buttons?|icons?|tools?|box|block|area|wrap|wrapper|"
    r"container|panel|widget)?"
)
# Of those, the words of a bar that shares or follows: a content word in its name says
# what it shares ("post-share-buttons"), not that it holds content.
_SHARING = {"share", "sharing", "social", "follow"}
# Words by which such a name says it holds the content too: "content-with-sidebar",
# "l-sidebar-fixed l-article-body", "st-sidebar__main".
_CONTENT_WORDS = {"article", "body", "content", "entry", "main", "post", "story", "text"}
# Where a camel-cased name starts a word: "asideRight", "relatedNews".
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
# Blocks that hold a paragraph of text, and those of them whose paragraph is the text
# they hold between their blocks when they hold any.
PROSE_TAGS = ("p", "blockquote", "pre", "dd", "li", "td", "div")
_CONTAINERS = {"div", "li", "td"}


def comments(element: Element) -> bool:
    """True when `element` is a readers' comment thread or one of its comments."""
    if one_comment(element):
        return True
    names = f"{element.get('class') or ''} {element.get('id') or ''}".lower()
    return any(w in _COMMENT_WORDS for w in _WORDS.split(names))


def one_comment(element: Element) -> bool:
    """True when schema.org's markup says `element` is one comment."""
    return (element.get("itemprop") or "").lower() == "comment" or (
        element.get("itemtype") or ""
    ).endswith("/Comment")


def prose_paragraphs(tree: Element) -> list[Element]:
    """Return the page's paragraphs of prose, outermost, outside its landmarks of template.

    What a reader calls the page's text, found by structure alone: blocks of enough words
    with few links (a container's: what it holds between its blocks), not inside `nav`,
    `header`, `footer`, `aside` or `form` (unless it wraps half the page) or a link, nor
    in a block named or playing a footer, sidebar or "related" box, nor unseen, nor in a
    comment thread, nor another page's teaser.
    """
    found: list[Element] = []
    around = _around(tree)
    # What lies in a block left out or in a paragraph found, decided once an element
    # from its parent's (a page of unclosed tags nests thousands deep).
    passed: set[Element] = set()
    for element in tree.iter(etree.Element):
        if (
            element.getparent() in passed
            or element in around
            or element.tag == "a"
            or unseen(element)
            or comments(element)
        ):
            passed.add(element)
            continue
        if element.tag not in PROSE_TAGS:
            continue
        # A container's own paragraph is the prose it holds between its blocks.
        text = paragraph_text(element) if element.tag in _CONTAINERS else text_of(element)
        if is_prose(text) and link_share(element) < PROSE_LINKS and not teaser(element):
            found.append(element)
            passed.add(element)
    return _main_cluster(found)


def never_content(tree: Element) -> set[Element]:
    """Return the blocks whose text no reader reads as the page's content, whoever
    names the content (a structure or a ground truth holding a footer's line): the
    `nav`, `aside` and `footer` landmarks and the blocks that play one (`surroundings`)."""
    found = surroundings(tree)
    found.update(tree.iter(*_NEVER_CONTENT))
    return found


def landmark(element: Element, half: float) -> bool:
    """True when `element` is a landmark never content by its tag or role (a menu, an
    aside, a footer) holding under `half` of the page's text: more, it wraps the page."""
    return (
        element.tag in _NEVER_CONTENT
        or (element.get("role") or "").strip().lower() in _LANDMARK_ROLES
    ) and len(text_of(element)) < half


def page_content(tree: Element) -> list[Element]:
    """Return the page's content by structure: its prose paragraphs, or, on a page with
    less prose than a paragraph or two that is no article nor one product's (a home,
    section or tag page), its main list."""
    prose = prose_paragraphs(tree)
    if sum(len(text_of(p)) for p in prose) >= LIST_PAGE_PROSE or declares_article_or_product(tree):
        return prose
    listing = main_list(tree)
    return [listing] if listing is not None else prose


def main_list(tree: Element) -> Element | None:
    """Return the page's list of items, or None: of the lists outside the page's
    landmarks of template, `surroundings`, carousels and unseen blocks, and inside its
    `main` when it marks one, a list of teaser cards before a list of bare links (a tag
    cloud, a widget's), and of those the one with most link text."""
    best, most = None, (False, 0)
    around = _around(tree)
    mains = {m for m in _mains(tree) if not out_of_sight(m)}
    # Each element's answers from its parent's, once: pages nest thousands deep.
    left_out: set[Element] = set()
    in_main: set[Element] = set()
    for element in tree.iter(etree.Element):
        parent = element.getparent()
        # A carousel turns other pages' teasers over in place (a shop's "you may also
        # like", its product's pictures): no page is about it.
        if parent in left_out or element in around or unseen(element) or carousel(element):
            left_out.add(element)
            continue
        if parent in in_main or element in mains:
            in_main.add(element)
        # A page that marks its main content has its list there: not a feed's widget
        # in a bar above it.
        elif mains:
            continue
        items = list_items(element, cards=True)
        if len(items) < MAIN_LIST_ITEMS:
            continue
        rank = (sum(map(card, items)) * 2 > len(items), _link_text(items))
        if rank > most:
            best, most = element, rank
    return best


def _mains(tree: Element) -> list[Element]:
    """Return the blocks the page marks as its main content: `main`, role `main`."""
    return [
        e
        for e in tree.iter(etree.Element)
        if e.tag == "main" or (e.get("role") or "").strip().lower() == "main"
    ]


def _link_text(items: list[Element]) -> int:
    return sum(len(text_of(a)) for item in items for a in item.iter("a"))


def _around(tree: Element) -> set[Element]:
    """Return what lies around the page's content: its `surroundings`, and its `nav`,
    `header`, `footer`, `aside` and `form` elements but those holding half its text (a
    `<header>` or an ASP.NET `<form>` wrapping the whole page holds its content)."""
    half = len(text_of(tree)) / 2
    return surroundings(tree) | {e for e in tree.iter(*_STRUCTURAL) if len(text_of(e)) < half}


def surroundings(tree: Element) -> set[Element]:
    """Return the blocks that are no landmark but play one by their role or name (class,
    id, a custom element's tag): a menu, the site's header or footer, a sidebar, a
    "related" box, a cookie banner. Never one whose name also says content ("content-
    with-sidebar", not "articleSidebarList"), nor one that holds the page's `main`,
    `article` (not a list's item: a teaser) or an `<h1>` a reader sees, or half its
    text: a wrapper named "has-sidebar" holds the page."""
    found = set()
    half = len(text_of(tree)) / 2
    for element in tree.iter(etree.Element):
        if element.tag in ("html", "body", "main", "article"):
            continue
        role = (element.get("role") or "").strip().lower()
        tag = str(element.tag) if "-" in str(element.tag) else ""
        classes = " ".join(c for c in (element.get("class") or "").split() if not _layout(c))
        names = f"{classes} {element.get('id') or ''} {tag}"
        words = set(_WORDS.split(_CAMEL.sub(" ", names).lower()))
        fused = {m.group("word") or m.group("follow") for m in map(_FUSED.fullmatch, words) if m}
        # A share bar holds no prose; a block so named that does wraps the story
        # ("sr-body-share-wrapper") or is a section named by its heading ("sharing-with-").
        sharing = bool(fused & _SHARING) and not _holds_prose(element)
        if (
            (role in _AROUND_ROLES or words & _AROUND_WORDS or fused - _SHARING or sharing)
            and (sharing or not set(_WORDS.split(names.lower())) & _CONTENT_WORDS)
            and not _holds_page(element)
            and len(text_of(element)) < half
        ):
            found.add(element)
    return found


def _layout(name: str) -> bool:
    """True when class `name` names a layout, not a part of it: its head word (the last of
    its BEM element, modifiers left out) is `layout` ("c-fixed-sidebar-layout--140@lg",
    "sidebar-layout"; not "layout-3col__right-sidebar")."""
    block = re.split(r"--|@", name, maxsplit=1)[0].rsplit("__", 1)[-1]
    words = [w for w in _WORDS.split(_CAMEL.sub(" ", block).lower()) if w]
    return bool(words) and words[-1] == "layout"


def _holds_page(element: Element) -> bool:
    """True when `element` holds the page's `main`, an `<h1>` a reader sees, or an
    `article` that is no item of a list (a sidebar's "latest" teasers are each one)."""
    for held in element.iter("main", "article", "h1"):
        if held.tag == "main" or (held.tag == "h1" and not out_of_sight(held)):
            return True
        up = takewhile(lambda a: a is not element, held.iterancestors())
        if held.tag == "article" and not any(a.tag == "li" for a in up):
            return True
    return False


def _holds_prose(element: Element) -> bool:
    """True when `element`'s text reads as prose: enough words, few of them links."""
    return is_prose(text_of(element)) and link_share(element) < PROSE_LINKS


def _main_cluster(paragraphs: list[Element]) -> list[Element]:
    """Return the paragraphs under the ancestor that holds most of their text: the page's
    body text, not the teasers of a sidebar."""
    if not paragraphs:
        return []
    sizes = {p: len(text_of(p)) for p in paragraphs}
    total = sum(sizes.values())
    held: dict[Element, int] = {}
    for paragraph, size in sizes.items():
        for ancestor in paragraph.iterancestors():
            held[ancestor] = held.get(ancestor, 0) + size
    # The deepest ancestor holding at least half of the text.
    best = None
    for ancestor, size in held.items():
        if size * 2 >= total and (best is None or _depth(ancestor) > _depth(best)):
            best = ancestor
    if best is None:
        return paragraphs
    return [p for p in paragraphs if any(a is best for a in p.iterancestors())]


def _depth(element: Element) -> int:
    return sum(1 for _ in element.iterancestors())


@dataclass
class Page:
    """A page to change: its tree and the elements that are its content."""

    tree: Element
    content: list[Element]
    # The content paragraphs, what lies inside them and what holds them.
    near: set[Element] = field(default_factory=set)

    # What lies inside the innermost element holding every content paragraph.
    body: set[Element] = field(default_factory=set)

    def __post_init__(self) -> None:
        for paragraph in self.content:
            self.near.update(paragraph.iter())
            self.near.update(paragraph.iterancestors())
        if self.content:
            shared = set(self.content[0].iterancestors())
            for paragraph in self.content[1:]:
                shared &= set(paragraph.iterancestors())
            holder = max(shared, key=_depth, default=None)
            if holder is not None:
                self.body.update(holder.iter())

    @cached_property
    def never(self) -> set[Element]:
        """Return the blocks no reader reads as content (see `never_content`)."""
        return never_content(self.tree)

    def holds_content(self, element: Element) -> bool:
        """True when `element` is, holds or lies inside a content paragraph."""
        return element in self.near


def link_lists(page: Page, title: Element | None) -> list[tuple[Element, list[Element]]]:
    """Return the blocks of the page that list links (three items or more, each with a
    link and little prose of its own, or another story's teaser) and hold no content,
    nor the headline `title` (a breadcrumb whose last item is the `<h1>`), with their
    items."""
    found = []
    taken: set[Element] = set()  # the lists found and what they hold
    holding = set() if title is None else set(title.iterancestors())
    for element in page.tree.iter(etree.Element):
        if element.getparent() in taken:
            taken.add(element)
            continue
        items = list_items(element, cards=True)
        if len(items) < LIST_ITEMS or page.holds_content(element) or element in holding:
            continue
        found.append((element, items))
        taken.add(element)
    return found
