"""A blog's home holds several posts in full, a forum's thread several messages: each is
the page's content, not only the one whose paragraphs score best.

The best container lies in a post (itself or one of its nearest ancestors); when the
post's siblings of its tag and class all read as posts too (a heading, prose of few
links, no template part), they are the content with it. A reader's comment is no post:
a thread's blocks are template parts by their names. A forum's messages are siblings of
one tag and class too, short or long, each holding a body of the class of the one that
scored best: those bodies are the content, not the names, badges and signatures
around them, with the opening message's when it stands apart above the replies.
"""

from __future__ import annotations

from sitemapd.fingerprint.chrome import Element, Sizes, template_reason
from sitemapd.fingerprint.names import named

# How far above the best container a post may start.
_DEPTH = 4
# Characters of text outside links a post holds at least (a short article's), and the
# share of link text it stays under.
_PROSE = 140
_LINKS = 0.3
_HEADINGS = ("h1", "h2", "h3", "h4")
# How far above a message's body the message may start (XenForo: six levels).
_MESSAGE_DEPTH = 8


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
    return next(element.iter(*_HEADINGS), None) is not None and _reads_as_message(element, sizes)


def _reads_as_message(element: Element, sizes: Sizes) -> bool:
    """True when `element` holds prose of few links and is no template part."""
    text, links = sizes.text[element], sizes.links[element]
    return (
        text - links >= _PROSE
        and links < _LINKS * text
        and not template_reason(element, sizes, 1 << 62)
    )


def messages(top: Element, sizes: Sizes) -> list[Element] | None:
    """Return the bodies of a thread's messages when `top`, a block with a class, is the
    body of one: the first block above it with siblings of its tag and class holds a
    block of `top`'s tag and class in two of them or more; else None."""
    name = top.get("class")
    if not name:
        return None
    item = top.getparent()
    for _ in range(_MESSAGE_DEPTH):
        parent = None if item is None else item.getparent()
        if item is None or parent is None or item.tag in ("body", "html"):
            return None
        if item.get("class") or item.tag in ("article", "li"):
            like = [s for s in parent if s.tag == item.tag and s.get("class") == item.get("class")]
            if len(like) > 1:
                # Readers' comments under a story or a product are no thread of its own.
                if any(named(a)[3] for a in (item, *item.iterancestors())):
                    return None
                bodies = [b for s in like if (b := _body(s, top.tag, name)) is not None]
                if len(bodies) < 2 or any(template_reason(b, sizes, 1 << 62) for b in bodies):
                    return None
                return _with_opening(bodies, top, sizes)
        item = parent
    return None


def _with_opening(bodies: list[Element], top: Element, sizes: Sizes) -> list[Element]:
    """Return `bodies` after the blocks of their tag and class that stand before them
    and read as a message (prose of few links, no template part): a thread's opening
    message often stands apart from the replies (XenForo's original post). Blocks after
    the first body are the page's own (a footer's, a grid's), whatever their class."""
    found = set(bodies)
    opening: list[Element] = []
    for element in sizes.elements:
        if element in found:
            break
        if (
            element.tag == top.tag
            and element.get("class") == top.get("class")
            and not any(b in found for b in element.iterdescendants(top.tag))
            and _reads_as_message(element, sizes)
            and not any(named(a)[3] for a in element.iterancestors())
        ):
            opening.append(element)
    return [*opening, *bodies]


def _body(message: Element, tag: object, name: str) -> Element | None:
    """Return the first block of `tag` and class `name` in `message`, or None."""
    return next((e for e in message.iter(tag) if e.get("class") == name), None)
