"""Change a page the way a CMS changes its surroundings and an editor changes its content.

Every change is chosen from the page's structure, never from what the fingerprint's
extractor kept, so a drill can fail: the content is the page's prose paragraphs (or, in
the benchmark, the paragraphs a ground truth names), its surroundings the link lists,
counters and assets that hold none of them. Each mutation edits an lxml tree in place
and returns False when the page offers nothing to change.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lxml import etree

from sitemapd.drill.fresh import rewrite
from sitemapd.drill.lists import MAIN_LIST_ITEMS, list_items
from sitemapd.drill.readers import counters, new_comment
from sitemapd.drill.structure import (
    PROSE_LINKS,
    PROSE_TAGS,
    Page,
    comments,
    landmark,
    link_lists,
)
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
from sitemapd.fingerprint.extract import BLOCKS, drop
from sitemapd.fingerprint.headline import tokens

# The path of a link to a site's home.
_HOME = re.compile(r"/?(?:\.?/)?(?:index\.html?)?")


def new_item(page: Page) -> bool:
    """Push a new item onto the list a list page is about: a new story in a section.

    A page is a list page when a list of items holds most of its content's text. A list
    inside an article or a product's page (its keywords, a feature grid, a table of
    links) is not what the page is about, and a page of prose has no such change."""
    whole = sum(len(text_of(element)) for element in page.content)
    for element in page.content:
        items = list_items(element, cards=True)
        if len(items) >= MAIN_LIST_ITEMS and 2 * sum(len(text_of(i)) for i in items) >= whole:
            fresh = copy.deepcopy(items[0])
            fresh.tail = items[0].tail
            rewrite(fresh, 0)
            items[0].addprevious(fresh)
            return True
    return False


def rotate_link_lists(page: Page) -> bool:
    """Push a new item onto every list of links outside the content and the headline,
    and drop its last: what a "latest stories" box does when the newsroom publishes."""
    lists = link_lists(page, headline(page.tree, page.content))
    for number, (_, items) in enumerate(lists):
        fresh = copy.deepcopy(items[0])
        fresh.tail = items[0].tail
        rewrite(fresh, number)
        items[0].addprevious(fresh)
        drop(items[-1])
    return bool(lists)


def asset_churn(page: Page) -> bool:
    """Give every script, stylesheet and image a new cache-buster, every nonce and hidden
    form token a new value, and inline scripts a new build id."""
    for element in page.tree.iter("script", "link", "img", "source"):
        rels = set((element.get("rel") or "").lower().split())
        if element.tag == "link" and not rels & {"stylesheet", "preload", "icon", "modulepreload"}:
            continue
        if "ld+json" in (element.get("type") or ""):
            continue
        for attr in ("src", "href"):
            value = element.get(attr)
            if value and not value.startswith("data:"):
                element.set(attr, value + ("&" if "?" in value else "?") + "v=98765")
        if element.get("nonce"):
            element.set("nonce", "n0nce-98765")
        if element.tag == "script" and element.text and "json" not in (element.get("type") or ""):
            _append_code(element, "\nvar buildId = 'b-98765';")
    for element in page.tree.iter("input"):
        if (element.get("type") or "").lower() == "hidden":
            element.set("value", "token-98765")
    for element in page.tree.iter("style"):
        _append_code(element, "\n.b98765{color:red}")
    return True


def _append_code(element: Element, code: str) -> None:
    """Append `code` to a script's or style's text; leave it when its text holds
    characters XML forbids (the HTML parser keeps them, lxml will not set them again)."""
    try:
        element.text = (element.text or "") + code
    except ValueError:
        return


def _prose(page: Page) -> list[Element]:
    """Return the content's paragraphs of prose, in order: its blocks of text with few
    links (a block holding blocks: the text it holds between them), none unseen, in a
    link, in a comment thread, in a block no reader reads as content, nor another
    page's teaser, whoever named the content."""
    found: dict[Element, None] = {}
    # Decided once an element, from its parent's: pages nest thousands deep.
    hidden: set[Element] = set()
    for element in page.tree.iter(etree.Element):
        if element.getparent() in hidden or _hidden_from_reader(element) or element in page.never:
            hidden.add(element)
    for element in page.content:
        for block in element.iter(*PROSE_TAGS):
            if (
                block not in found
                and block not in hidden
                and is_prose(paragraph_text(block))
                and link_share(block) < PROSE_LINKS
                and not teaser(block)
            ):
                found[block] = None
    return list(found)


def _hidden_from_reader(element: Element) -> bool:
    """True for what no reader reads as the content: unseen, a link, a comment thread."""
    return unseen(element) or element.tag == "a" or comments(element)


def edit_word(page: Page) -> bool:
    """Change one word in the middle of the content's prose: an editor's smallest fix,
    in the paragraph's own words rather than a link's (another page's title) when it
    has some."""
    prose = _prose(page)
    if not prose:
        return False
    paragraph = prose[len(prose) // 2]
    return _edit_text(paragraph, links=False) or _edit_text(paragraph, links=True)


def _edit_text(paragraph: Element, links: bool) -> bool:
    """Change a word of the first run of three words or more of `paragraph`, in a link
    only when `links`; False when it has none."""
    for node in paragraph.iter(etree.Element):
        # Text a reader sees (not a script's, not a hidden element's) of the paragraph's
        # own (not of a block it holds: its paragraph is the text between them).
        holders = _up_to(node, paragraph)
        for attr in ("text", "tail"):
            value = getattr(node, attr)
            if not value or (node is paragraph and attr == "tail"):
                continue
            line = holders if attr == "text" else holders[1:]
            if any(
                unseen(h)
                or (h is not paragraph and h.tag in BLOCKS)
                or (h.tag == "a" and not links)
                for h in line
            ):
                continue
            if is_prose(value) or len(value.split()) >= 3:
                setattr(node, attr, _one_word_changed(value))
                return True
    return False


def _up_to(node: Element, root: Element) -> list[Element]:
    """Return `node` and its ancestors up to `root` (which holds it), nearest first."""
    line = [node]
    for ancestor in node.iterancestors() if node is not root else ():
        line.append(ancestor)
        if ancestor is root:
            break
    return line


def _one_word_changed(text: str) -> str:
    words = text.split(" ")
    spaced = [n for n, w in enumerate(words) if w.strip()]
    if len(spaced) >= 3:
        n = spaced[len(spaced) // 2]
        words[n] = words[n] + "s"
        return " ".join(words)
    # Unspaced scripts: one character in the middle becomes another.
    middle = len(text) // 2
    return text[:middle] + ("の" if text[middle] != "の" else "は") + text[middle + 1 :]


def append_correction(page: Page) -> bool:
    """Add a correction notice after the last paragraph of the content's prose (at the
    end of a container whose paragraph is the text between its blocks)."""
    prose = _prose(page)
    if not prose:
        return False
    last = prose[-1]
    correction = etree.Element("p")
    correction.text = "Correction: an earlier version of this article misstated a name."
    if any(child.tag in BLOCKS for child in last):
        # A container whose paragraph is the text between its blocks: the correction
        # ends that text, inside it.
        last.append(correction)
        return True
    correction.tail = last.tail
    last.tail = None
    last.addnext(correction)
    return True


def headline(tree: Element, content: Iterable[Element]) -> Element | None:
    """Return the page's headline element: of the `<h1>` a reader sees (`out_of_sight`:
    not a visually hidden label such as `<h1 class="sr-only">News</h1>`), not in a link
    unless it and the title say the same, nor saying a link to the home alone (the
    site's name, a logo), nor the title of an item of the page's list (another page's),
    nor in a landmark never content by its tag or role and holding under half the page's
    text unless it says what the document title says (a mobile menu's site name, a
    menu's label; not a breadcrumb's last item), those that say what the title says when
    any does (not a login box's "Log in"), the last before the first content paragraph,
    else the first."""
    first = next(iter(content), None)
    items = {i for e in content for i in list_items(e, cards=True)}
    title = next((t for head in tree.iter("head") for t in head.iter("title")), None)
    said = tokens(text_of(title)) if title is not None else set()
    half = len(text_of(tree)) / 2
    h1s = [
        h
        for h in tree.iter("h1")
        if text_of(h)
        and not out_of_sight(h)
        and not any(a in items for a in (h, *h.iterancestors()))
        # In a link, another page's headline or the site's name, unless it and the
        # title say the same: a theme linking the post's own headline to the post.
        and (not any(a.tag == "a" for a in h.iterancestors()) or _same(text_of(h), said))
        and not _logo(h)
        and (
            _says(tokens(text_of(h)), said)
            or not any(landmark(a, half) for a in (h, *h.iterancestors()))
        )
    ]
    h1s = [h for h in h1s if _says(tokens(text_of(h)), said)] or h1s
    if first is None:
        return h1s[0] if h1s else None
    order = {e: n for n, e in enumerate(tree.iter())}
    # An `<h1>` inside the first paragraph (a container whose text follows it) precedes it.
    before = [h for h in h1s if order[h] < order[first] or first in h.iterancestors()]
    return before[-1] if before else (h1s[0] if h1s else None)


def _logo(heading: Element) -> bool:
    """True when all `heading` says is a link to the site's home: the site's name set as
    a linked `<h1>` (`<h1><a href="/" rel="home">`), a logo as much as a linked `<h1>`."""
    said = text_of(heading)
    return any(
        text_of(link) == said
        and ("home" in (link.get("rel") or "").lower().split() or _home(link.get("href") or ""))
        for link in heading.iter("a")
    )


def _home(href: str) -> bool:
    """True when `href` links a site's home (`/`, `./`, `https://example.com/`), not the
    page itself (`#`, empty)."""
    href = href.strip()
    return bool(href) and href[0] not in "#?" and bool(_HOME.fullmatch(urlsplit(href).path))


def _says(words: set[str], said: set[str]) -> bool:
    """True when most of a heading's `words` are among the title's `said`."""
    return bool(words) and len(words & said) * 2 > len(words)


def _same(text: str, said: set[str]) -> bool:
    """True when most of `text`'s words are among the title's `said`, and most of those
    among `text`'s: a headline, not the site's name the title ends with."""
    words = tokens(text)
    return _says(words, said) and _says(said, words)


def _updated(element: Element) -> None:
    """Append to `element`'s text, after whatever it holds."""
    if len(element):
        last = element[-1]
        last.tail = (last.tail or "") + " (updated)"
    else:
        element.text = (element.text or "") + " (updated)"


def edit_title(page: Page) -> bool:
    """Change the document title."""
    head = next(page.tree.iter("head"), None)
    title = None if head is None else next(head.iter("title"), None)
    if title is None:
        return False
    title.text = (title.text or "") + " (updated)"
    return True


def edit_h1(page: Page) -> bool:
    """Change the page's headline element."""
    element = headline(page.tree, page.content)
    if element is None or not text_of(element):
        return False
    _updated(element)
    return True


def edit_og_title(page: Page) -> bool:
    """Change the Open Graph title."""
    for meta in page.tree.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() == "og:title":
            meta.set("content", meta.get("content", "") + " (updated)")
            return True
    return False


def edit_headline(page: Page) -> bool:
    """Change the headline wherever the page states it: title, headline, og:title."""
    done = [edit_title(page), edit_h1(page), edit_og_title(page)]
    return any(done)


Mutation = Callable[[Page], bool]


@dataclass(frozen=True)
class Change:
    """A mutation, its name, and whether it should move lastmod."""

    name: str
    mutate: Mutation
    real: bool


CHANGES = (
    Change("link lists outside the content rotate", rotate_link_lists, False),
    Change("cache-busters, nonces, tokens", asset_churn, False),
    Change("counters outside the content", counters, False),
    Change("a reader's new comment", new_comment, False),
    Change("one word of a paragraph", edit_word, True),
    Change("correction appended", append_correction, True),
    Change("headline (title, h1, og:title)", edit_headline, True),
    Change("<title> alone", edit_title, True),
    Change("headline element alone", edit_h1, True),
    Change("a new item in a list page's list", new_item, True),
)
