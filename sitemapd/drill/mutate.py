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
from dataclasses import dataclass, field

from lxml import etree

from ..fingerprint.extract import BLOCKS

Element = etree._Element

# A paragraph of prose: this many words (or characters of text written without spaces).
PROSE_WORDS = 8
PROSE_CHARACTERS = 40
# Link text share below which a block is prose, not a list of links.
PROSE_LINKS = 0.3
# Items a block needs to be a list a CMS rotates, and to be the list a page is about.
LIST_ITEMS = 3
MAIN_LIST_ITEMS = 5
# Characters of prose below which a page is its list of items, not an article.
LIST_PAGE_PROSE = 280
_STRUCTURAL = {"nav", "header", "footer", "aside", "form"}
_PROSE_TAGS = ("p", "blockquote", "pre", "dd", "li", "td", "div")
# Numbers there are data, not counters: tables, footnote marks, formulas, code.
_NOT_COUNTERS = {"script", "style", "table", "sup", "sub", "math", "code", "pre", "time"}
_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+")
# A counter: a number, maybe abbreviated, and the one word saying what it counts
# ("1.2k views", "42 comments"); a bare number may be a day, a rank or a footnote.
_COUNTER = re.compile(r"\s*\d{1,3}(?:[.,]\d+)?[kKmM]?\s+[^\W\d]+\s*")
# Text written without spaces between words: Chinese, Japanese, Thai.
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Words a new list item is written with: what a "latest stories" box shows next.
_FRESH = [
    "council",
    "approves",
    "new",
    "budget",
    "for",
    "river",
    "bridge",
    "repairs",
    "after",
    "long",
    "debate",
    "striker",
    "signs",
    "three",
    "year",
    "deal",
    "as",
    "club",
    "confirms",
    "record",
    "transfer",
    "fee",
]


def normal(text: str) -> str:
    """Return `text` with whitespace runs as one space, stripped."""
    return _SPACES.sub(" ", text).strip()


def text_of(element: Element) -> str:
    """Return the text inside `element`, whitespace normalised."""
    return normal("".join(t for t in element.itertext() if isinstance(t, str)))


def link_share(element: Element) -> float:
    """Return the share of `element`'s text inside links."""
    total = len(text_of(element))
    if not total:
        return 0.0
    links = sum(len(text_of(a)) for a in element.iter("a") if not _in_link(a))
    return min(links / total, 1.0)


def _in_link(a: Element) -> bool:
    return any(p.tag == "a" for p in a.iterancestors())


def is_prose(text: str) -> bool:
    """True when `text` reads as a paragraph of prose, in any script."""
    if len(text.split()) >= PROSE_WORDS:
        return True
    return len(_UNSPACED.findall(text)) >= PROSE_CHARACTERS


def prose_paragraphs(tree: Element) -> list[Element]:
    """Return the page's paragraphs of prose, outermost, outside its landmarks of template.

    What a reader calls the page's text, found by structure alone: blocks of enough words
    with few links, not inside `nav`, `header`, `footer`, `aside` or `form`.
    """
    found: list[Element] = []
    chosen: set[Element] = set()
    for element in tree.iter(*_PROSE_TAGS):
        if element.tag in ("div", "li", "td") and any(c.tag in BLOCKS for c in element):
            continue
        if any(a in chosen or a.tag in _STRUCTURAL for a in element.iterancestors()):
            continue
        text = text_of(element)
        if is_prose(text) and link_share(element) < PROSE_LINKS:
            found.append(element)
            chosen.add(element)
    return _main_cluster(found)


def page_content(tree: Element) -> list[Element]:
    """Return the page's content by structure: its prose paragraphs, or, on a page with
    less prose than a paragraph or two (a home, section or tag page), its main list."""
    prose = prose_paragraphs(tree)
    if sum(len(text_of(p)) for p in prose) >= LIST_PAGE_PROSE:
        return prose
    listing = main_list(tree)
    return [listing] if listing is not None else prose


def main_list(tree: Element) -> Element | None:
    """Return the page's list of items: the list of links with most link text outside
    the page's landmarks of template, or None."""
    best, most = None, 0
    for element in tree.iter(etree.Element):
        if any(a.tag in _STRUCTURAL for a in (element, *element.iterancestors())):
            continue
        items = _items(element)
        if len(items) < MAIN_LIST_ITEMS:
            continue
        size = sum(len(text_of(a)) for item in items for a in item.iter("a"))
        if size > most:
            best, most = element, size
    return best


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

    def holds_content(self, element: Element) -> bool:
        """True when `element` is, holds or lies inside a content paragraph."""
        return element in self.near


Mutation = Callable[[Page], bool]


def link_lists(page: Page) -> list[tuple[Element, list[Element]]]:
    """Return the blocks of the page that list links (three items or more, each with a
    link and little prose of its own) and hold no content, with their items."""
    found = []
    taken: set[Element] = set()
    for element in page.tree.iter(etree.Element):
        if element in taken or any(a in taken for a in element.iterancestors()):
            continue
        items = _items(element)
        if len(items) < LIST_ITEMS or page.holds_content(element):
            continue
        found.append((element, items))
        taken.add(element)
    return found


def _items(element: Element) -> list[Element]:
    """Return the children of `element` that make it a list: the most common child tag,
    each with a link of its own."""
    children = [c for c in element if isinstance(c.tag, str)]
    if len(children) < LIST_ITEMS:
        return []
    tags: dict[str, int] = {}
    for child in children:
        tags[str(child.tag)] = tags.get(str(child.tag), 0) + 1
    tag = max(tags, key=tags.__getitem__)
    items = [c for c in children if c.tag == tag and _linked(c)]
    # Paragraphs that cite with a link are prose, not a list of links; so is a paragraph
    # whose links are its children: its words between them say more than separators.
    if len(items) < LIST_ITEMS or any(_prose_item(item) for item in items):
        return []
    loose = (element.text or "") + "".join(item.tail or "" for item in children)
    if len(loose.split()) > len(items):
        return []
    return items


def _prose_item(item: Element) -> bool:
    """True when `item` says a paragraph's worth of its own besides its links."""
    if link_share(item) > 0.5:
        return False
    own = text_of(item)
    for a in item.iter("a"):
        own = own.replace(text_of(a), " ", 1)
    return is_prose(own)


def _linked(item: Element) -> bool:
    link = item if item.tag == "a" else next(item.iter("a"), None)
    return link is not None and bool(link.get("href")) and bool(text_of(link))


def new_item(page: Page) -> bool:
    """Push a new item onto the list a list page is about: a new story in a section."""
    for element in page.content:
        items = _items(element)
        if len(items) >= MAIN_LIST_ITEMS:
            fresh = copy.deepcopy(items[0])
            fresh.tail = items[0].tail
            _rewrite(fresh, 0)
            items[0].addprevious(fresh)
            return True
    return False


def rotate_link_lists(page: Page) -> bool:
    """Push a new item onto every list of links outside the content and drop its last:
    what a "latest stories" box does when the newsroom publishes."""
    lists = link_lists(page)
    for number, (_, items) in enumerate(lists):
        fresh = copy.deepcopy(items[0])
        fresh.tail = items[0].tail
        _rewrite(fresh, number)
        items[0].addprevious(fresh)
        _remove(items[-1])
    return bool(lists)


def _rewrite(item: Element, seed: int) -> None:
    """Give `item` (a copy of a list item) the words, link and image of another story."""
    words = iter(_FRESH[seed % 7 :] + _FRESH)

    def fresh(text: str) -> str:
        count = max(1, len(text.split()))
        return " ".join(next(words, "story") for _ in range(count))

    for node in item.iter(etree.Element):
        if node.text and node.text.strip():
            node.text = fresh(node.text)
        if node is not item and node.tail and node.tail.strip():
            node.tail = fresh(node.tail)
        if node.get("href"):
            node.set("href", f"/news/2026/11/fresh-story-{seed}")
        for attr in ("src", "data-src", "srcset"):
            if node.get(attr):
                node.set(attr, f"/images/fresh-story-{seed}.jpg")
        if node.get("alt"):
            node.set("alt", fresh(node.get("alt", "")))
        if node.get("title"):
            node.set("title", fresh(node.get("title", "")))


def _remove(element: Element) -> None:
    """Remove `element`, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


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
            element.text += "\nvar buildId = 'b-98765';"
    for element in page.tree.iter("input"):
        if (element.get("type") or "").lower() == "hidden":
            element.set("value", "token-98765")
    for element in page.tree.iter("style"):
        element.text = (element.text or "") + "\n.b98765{color:red}"
    return True


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


def _prose(page: Page) -> list[Element]:
    """Return the content's paragraphs of prose: blocks of text, not lists of links."""
    return [
        element
        for element in page.content
        if not any(child.tag in BLOCKS for child in element)
        and is_prose(text_of(element))
        and link_share(element) < PROSE_LINKS
    ]


def edit_word(page: Page) -> bool:
    """Change one word in the middle of the content's prose: an editor's smallest fix."""
    prose = _prose(page)
    if not prose:
        return False
    paragraph = prose[len(prose) // 2]
    for node in paragraph.iter(etree.Element):
        for attr in ("text", "tail"):
            value = getattr(node, attr)
            if node is paragraph and attr == "tail":
                continue
            if (value and is_prose(value)) or (value and len(value.split()) >= 3):
                setattr(node, attr, _one_word_changed(value))
                return True
    return False


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
    """Add a correction notice after the last paragraph of the content's prose."""
    prose = _prose(page)
    if not prose:
        return False
    last = prose[-1]
    correction = etree.Element("p")
    correction.text = "Correction: an earlier version of this article misstated a name."
    correction.tail = last.tail
    last.tail = None
    last.addnext(correction)
    return True


def headline(tree: Element, content: Iterable[Element]) -> Element | None:
    """Return the page's headline element: the last `<h1>` before the first content
    paragraph, else the first `<h1>` of the page."""
    first = next(iter(content), None)
    h1s = list(tree.iter("h1"))
    if first is None:
        return h1s[0] if h1s else None
    order = {e: n for n, e in enumerate(tree.iter())}
    before = [h for h in h1s if order[h] < order[first]]
    return before[-1] if before else (h1s[0] if h1s else None)


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
    Change("one word of a paragraph", edit_word, True),
    Change("correction appended", append_correction, True),
    Change("headline (title, h1, og:title)", edit_headline, True),
    Change("<title> alone", edit_title, True),
    Change("headline element alone", edit_h1, True),
    Change("a new item in a list page's list", new_item, True),
)
