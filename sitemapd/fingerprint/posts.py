"""A blog's home holds several posts in full: each is the page's content, not only the
one whose paragraphs score best.

The best container lies in a post (itself or one of its nearest ancestors); when the
post's siblings of its tag and class all read as posts too (a heading, prose of few
links, no template part), they are the content with it. A reader's comment is no post:
a thread's blocks are template parts by their names.
"""

from __future__ import annotations

from sitemapd.fingerprint.chrome import Element, Sizes, template_reason

# How far above the best container a post may start.
_DEPTH = 4
# Characters of text outside links a post holds at least (a short article's), and the
# share of link text it stays under.
_PROSE = 140
_LINKS = 0.3
_HEADINGS = ("h1", "h2", "h3", "h4")


def posts(top: Element, sizes: Sizes) -> list[Element] | None:
    """Return the posts of a blog's home that `top` lies in, in document order, or None
    when the first block above it with siblings of its tag and class is not one of
    several posts."""
    item = top
    for _ in range(_DEPTH):
        parent = item.getparent()
        if parent is None or item.tag in ("body", "html"):
            return None
        name = item.get("class")
        if name or item.tag == "article":
            like = [s for s in parent if s.tag == item.tag and s.get("class") == name]
            if len(like) > 1:
                # Every one of them a post: rows of a layout grid share a class too, and
                # some hold no heading, or an ad.
                return like if all(_reads_as_post(s, sizes) for s in like) else None
        item = parent
    return None


def _reads_as_post(element: Element, sizes: Sizes) -> bool:
    """True when `element` holds a heading and prose of few links, in no template part."""
    text, links = sizes.text[element], sizes.links[element]
    return (
        text - links >= _PROSE
        and links < _LINKS * text
        and next(element.iter(*_HEADINGS), None) is not None
        and not template_reason(element, sizes, 1 << 62)
    )
