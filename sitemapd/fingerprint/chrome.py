"""Tell the template inside a page from what it says: landmarks, roles, class and id
names of template parts, and link density, measured once per page.

A block is template when it is a navigation, aside, form or footer landmark, or a role
of one, smaller than the main content; when its class or id names a template part (share
bars, "related", "most read", comment counts, cookie banners) and not an article part;
or when it is a link list: most of its text inside `<a>`, whatever its tag (bylines,
labels, other stories' headlines), or a row of three or more links with little text
between them ("Retailers: A | B | C", a date beside each). A form that holds a
paragraph of the article's kind (long, few links) is a page or a product wrapped in a
form, not a form's template. Counters are counters.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice

from lxml import etree

from sitemapd.fingerprint import shapes
from sitemapd.fingerprint.names import named

Element = etree._Element


def elements(found: object) -> list[Element]:
    """Return the elements among an XPath result (which lxml types as anything)."""
    if not isinstance(found, list):
        return []
    return [e for e in found if isinstance(e, Element)]


STRUCTURAL = {"nav": "navigation", "aside": "aside", "form": "form", "footer": "footer"}
ROLES = {
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "menu",
    "menubar",
    "dialog",
    "alertdialog",
    "toolbar",
}
# Elements never left out for their links: a link is itself, the rest hold the page, an
# `<h1>` is a headline, linked (to its own post) or not.
_NOT_LISTS = {"a", "body", "html", "main", "article", "h1"}
# Characters of text outside links from which a block holds prose, whatever its links:
# a page wrapper with a big sidebar is not a link list, though its lists are.
_PROSE_HELD = 400
# Characters below which one link that is most of a block's text makes it chrome: a
# byline, a section label, another story's headline.
_SHORT_LINKED = 100
# A row of links: three or more, a third of the text or more, and under 30 characters
# of other text a link (separators, a date, a label: "Retailers: A | B | C").
_ROW_LINKS = 0.3
_ROW_COUNT = 3
_ROW_OWN = 30
# Characters of a paragraph that introduces a section of links (see `_introduced`).
_INTRO = 60
# Blocks that are an item of a list whatever they link to: a teaser in one is its story's.
_ITEMS = {"li", "article", "dd", "tr"}
# A paragraph shorter than this says too little to tell article from template.
MIN_PARAGRAPH = 25
# Characters a paragraph outside the main content needs to count as the article's, and
# the link text share it stays under (a quarter, as `extract._with_siblings`'s).
STRAY = 150
STRAY_LINKS = 0.25
# Link text share above which a block of a weak template name is template.
_WEAK_LINKS = 0.3
# Template words never drop a block holding this share of the main text: a wrapper
# named "has-sidebar" or "page-footer-sticky" is not a footer.
_WRAPPER_SHARE = 0.4


class Sizes:
    """Characters of text, and of link text, inside every element of a body."""

    def __init__(self, body: Element) -> None:
        self.elements = list(body.iter(etree.Element))
        text: dict[Element, int] = dict.fromkeys(self.elements, 0)
        links: dict[Element, int] = dict.fromkeys(self.elements, 0)
        # Pre-order reversed: every child is counted before its parent. The hottest loop
        # of a scan: lengths are taken inline.
        for element in reversed(self.elements):
            own = element.text
            total = text[element] + (len(own.strip()) if own else 0)
            text[element] = total
            if element.tag == "a":
                links[element] = total
            parent = element.getparent()
            if parent in text:
                tail = element.tail
                text[parent] += total + (len(tail.strip()) if tail else 0)
                links[parent] += links[element]
        self.text = text
        self.links = links
        self._named: dict[Element, tuple[int, int]] | None = None

    def unnamed(self, element: Element) -> tuple[int, int]:
        """Return `element`'s characters of text and of link text less those of the
        template parts it holds by landmark, role or name (not by their links)."""
        if self._named is None:
            self._named = self._named_parts()
        text, links = self._named.get(element, (0, 0))
        return self.text[element] - text, self.links[element] - links

    def _named_parts(self) -> dict[Element, tuple[int, int]]:
        # Bottom up, as `prose`: each element's template parts summed into its parents.
        removed: dict[Element, tuple[int, int]] = {}
        for element in reversed(self.elements):
            parent = element.getparent()
            if not self.text[element] or element.tag == "a" or parent not in self.text:
                continue
            if template_reason(element, self, 1 << 62, lists=False):
                part = self.text[element], self.links[element]
            else:
                part = removed.get(element, (0, 0))
            if part[0]:
                held = removed.get(parent, (0, 0))
                removed[parent] = held[0] + part[0], held[1] + part[1]
        return removed

    def prose(self) -> Callable[[Element], float]:
        """Return a function giving an element's link density less its template parts."""
        removed: dict[Element, int] = {}
        removed_links: dict[Element, int] = {}
        sizes = self.text
        for element in reversed(self.elements):
            if not sizes[element] or element.tag == "a":
                continue  # nothing to take away, or a link, never template by itself
            parent = element.getparent()
            if parent not in sizes:
                continue
            if template_reason(element, self, 1 << 62):
                text, links = self.text[element], self.links[element]
            else:
                text, links = removed.get(element, 0), removed_links.get(element, 0)
            if text:
                removed[parent] = removed.get(parent, 0) + text
                removed_links[parent] = removed_links.get(parent, 0) + links
        link_sizes = self.links

        def density(element: Element) -> float:
            total = sizes[element] - removed.get(element, 0)
            links = link_sizes[element] - removed_links.get(element, 0)
            return links / total if total > 0 else 0.0

        return density

    def link_density(self, element: Element) -> float:
        """Return the share of `element`'s text that is link text."""
        total = self.text[element]
        return self.links[element] / total if total else 0.0


def template_parts(
    root: Element, sizes: Sizes, main: Element, lists: bool = True
) -> dict[Element, str]:
    """Return the outermost elements under `root` that are template, with why; link
    lists among them unless `lists` is False (the main content is a list)."""
    found: dict[Element, str] = {}
    main_text = sizes.text.get(main, 0)
    iterator = root.iterdescendants(etree.Element)
    skip_below: Element | None = None
    for element in iterator:
        if skip_below is not None and inside(element, skip_below):
            continue
        reason = template_reason(element, sizes, main_text, lists)
        if reason:
            found[element] = reason
            skip_below = element
    return found


def template_reason(
    element: Element, sizes: Sizes, main_text: int, lists: bool = True
) -> str | None:
    """Return why `element` is template rather than article, or None; a link list is
    only when `lists`."""
    tag = element.tag
    text = sizes.text.get(element, 0)
    small = text <= main_text * _WRAPPER_SHARE
    # A form that holds a paragraph of prose is a page or product wrapped in a form, not
    # a search, login or newsletter box.
    if tag in STRUCTURAL and small and not (tag == "form" and _holds_prose(element, sizes)):
        return STRUCTURAL[tag]
    role = (element.get("role") or "").strip().lower()
    if role in ROLES and small:
        return f"role={role}"
    if tag not in ("a", "body", "html", "main"):
        article, template, weak, thread = named(element)
        # Readers' comments are no part of the article however long the thread runs:
        # the share that keeps a big wrapper named "has-sidebar" does not keep them. A
        # block holding an <h1> is a page's wrapper ("comments-open"), not a thread.
        if thread and (small or next(element.iter("h1"), None) is None):
            return "comment thread"
        if small and tag != "article" and not article:
            if template:
                return "template class or id"
            if weak and (text < MIN_PARAGRAPH or sizes.links[element] > _WEAK_LINKS * text):
                return "template class or id, mostly links"
    # A blog's calendar links the days that have posts: the links come and go with the
    # archive, and a row of it reads as a link list or not as they do.
    if tag == "table" and text < shapes.CALENDAR_TEXT and shapes.calendar(element):
        return "calendar"
    if lists and text and tag not in _NOT_LISTS:
        links = sizes.links[element]
        if (
            links / text > 0.5
            and text - links < _PROSE_HELD
            and (text < _SHORT_LINKED or _link_count(element) >= 2)
            # What is left without named parts says less than the whole outside links:
            # measured only where the whole says something.
            and (text - links < _SHORT_LINKED or _linked(*sizes.unnamed(element)))
            # A page's header: its headline under the breadcrumb trail, whose share of
            # links moves with the trail's steps.
            and not _holds_headline(element)
            # A section of links its own paragraph introduces: the paragraph is the
            # page's, and the links below it are judged on their own.
            and not _introduced(element, sizes)
        ):
            return f"link list ({round(100 * links / text)}% link text)"
        # A row of links holds no heading: an article's header (its headline above a
        # byline and category links) is not one.
        if links > _ROW_LINKS * text and text - links < _ROW_OWN * _ROW_COUNT:
            count = _link_count(element, max(_ROW_COUNT, (text - links) // _ROW_OWN + 1))
            if (
                count >= _ROW_COUNT
                and text - links < _ROW_OWN * count
                and next(element.iter(*shapes.HEADINGS), None) is None
                and _row_share(element, sizes) > _ROW_LINKS
            ):
                return f"row of links ({round(100 * links / text)}% link text)"
        # However short its links: a pager's numbers, an alphabet's letters.
        if (
            links
            and text - links < _ROW_OWN * _ROW_COUNT
            and _link_count(element, shapes.INDEX_LINKS) >= shapes.INDEX_LINKS
            and shapes.index(element)
        ):
            return "index of links"
        # However long, whatever its share of links: links each with a date, a time, a
        # name beside it (an archive, a schedule). No item says a paragraph.
        if len(element) >= shapes.NOTED_ITEMS and shapes.noted_links(
            element, sizes.text, sizes.links
        ):
            return f"list of noted links ({round(100 * links / text)}% link text)"
    return None


def _linked(text: int, links: int) -> bool:
    """True when most of a block's text, its named template parts left out, is in
    links, or what is left says little: a column holding the article's one paragraph
    beside a "related" box and a share bar is no link list."""
    return text - links < _SHORT_LINKED or links > 0.5 * text


def _row_share(element: Element, sizes: Sizes) -> float:
    """Return the share of links in `element`'s text outside the blocks in it that are
    nothing but links (a list of tags between its captions): such a list is a link list
    of its own, and whether the captions are a row must not hang on the list's words."""
    text, links = sizes.text[element], sizes.links[element]
    blocks = list(element)
    while blocks:
        block = blocks.pop()
        said = sizes.text.get(block, 0)
        if not said or block.tag == "a":
            continue
        if sizes.links[block] == said and _link_count(block) >= 2:
            text -= said
            links -= said
        else:
            blocks.extend(block)
    return links / text if text > 0 else 0.0


def _holds_headline(element: Element) -> bool:
    """True when `element` holds one `<h1>`, neither linked nor linking: a headline, not
    another story's title in a list."""
    found = list(islice(element.iter("h1"), 2))
    if len(found) != 1:
        return False
    h1 = found[0]
    return next(h1.iter("a"), None) is None and all(a.tag != "a" for a in h1.iterancestors())


def _introduced(element: Element, sizes: Sizes) -> bool:
    """True when a paragraph of `element` comes before every link in it, in no item of
    a list (an `<li>`, an `<article>`, a block linking to one address), and the links
    lie in blocks apart from it, to be judged on their own: an intro of the section
    ("There's a lot more to an editor..."), not a teaser, which follows its story's
    linked headline or shares an item with its link."""
    for node in element.iterdescendants(etree.Element):
        if node.tag == "a":
            return False
        if node.tag == "p" and sizes.text.get(node, 0) >= _INTRO and not _link_count(node, 1):
            line = {element}
            for holder in node.iterancestors():
                if holder is element:
                    break
                if holder.tag in _ITEMS or _one_address(holder):
                    return False
                line.add(holder)
            return all(a.getparent() not in line for a in element.iter("a"))
    return False


def _one_address(element: Element) -> bool:
    """True when `element` links to one address, once or more: an item of a list (its
    headline, its picture, "read more"), not a section of items."""
    addresses = {a.get("href") for a in element.iter("a")}
    return len(addresses) == 1


def _holds_prose(element: Element, sizes: Sizes) -> bool:
    """True when `element` holds a paragraph of the article's kind: long, few links."""
    for paragraph in element.iter("p", "blockquote"):
        length = sizes.text.get(paragraph, 0)
        if length >= STRAY and sizes.links[paragraph] < STRAY_LINKS * length:
            return True
    return False


def _link_count(element: Element, most: int = 2) -> int:
    """Return how many links `element` holds, counting to `most` at most."""
    count = 0
    for _ in element.iter("a"):
        count += 1
        if count >= most:
            break
    return count


def inside(element: Element, ancestor: Element) -> bool:
    return any(a is ancestor for a in element.iterancestors())
