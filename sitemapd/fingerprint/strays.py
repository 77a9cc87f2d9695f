"""Find the article's paragraphs that lie outside the best container: a lead in another
column of a grid, an intro above the body, the parts of an article cut into sections
with ads between them, and the short paragraphs that run on from such a paragraph.
"""

from __future__ import annotations

from sitemapd.fingerprint.chrome import STRAY, STRAY_LINKS, Element, Sizes, template_reason
from sitemapd.fingerprint.score import BLOCKS

# Paragraph-like blocks.
PARAGRAPHS = ("p", "pre", "td", "blockquote", "dd")
# What a block holds when it is more of an article: its paragraphs, prose list items,
# headings (a list article's items open with one), and its images' captions (a lead
# photograph above the story's column).
SHARED = (*PARAGRAPHS, "li", "h2", "h3", "h4", "figcaption")
# Paragraphs that run on from a stray one, one after another in its parent.
_RUN = ("p", "blockquote")


def strays(
    body: Element, sizes: Sizes, main: list[Element], unseen: list[Element]
) -> list[Element]:
    """Return the article's paragraphs that lie outside `main`: long, with few links, in
    no template part nor block `unseen` (a cookie banner), each with the part of the
    article it opens, outermost first."""
    held = {element for root in main for element in root.iter()}
    left_out = {element for root in unseen for element in root.iter()}
    whole = sizes.text[body]
    found = []
    for paragraph in body.iter("p", "blockquote"):
        if (
            paragraph in held
            or paragraph in left_out
            or sizes.text.get(paragraph, 0) < STRAY
            or sizes.link_density(paragraph) >= STRAY_LINKS
        ):
            continue
        if any(template_reason(a, sizes, whole) for a in (paragraph, *paragraph.iterancestors())):
            continue
        part = _section(paragraph, sizes, held)
        found.append(part)
        if part is paragraph:
            found.extend(_run(paragraph, sizes, held, whole))
    return outermost(found)


def _run(paragraph: Element, sizes: Sizes, held: set[Element], whole: int) -> list[Element]:
    """Return the paragraphs around `paragraph` in its parent, one after another with no
    other block between, that are no template part and have few links.

    A paragraph is a stray by its length; the article's short paragraphs beside it (a
    closing line, an appended correction, a one-line quote) are no less the article's.
    """
    found = []
    for siblings in (paragraph.itersiblings(), paragraph.itersiblings(preceding=True)):
        for sibling in siblings:
            if (
                sibling.tag not in _RUN
                or sibling in held
                or sizes.link_density(sibling) >= STRAY_LINKS
                or template_reason(sibling, sizes, whole)
            ):
                break
            found.append(sibling)
    return found


def _section(paragraph: Element, sizes: Sizes, main: set[Element]) -> Element:
    """Return the part of the article `paragraph` opens (an article cut into sections,
    ads between them): its highest ancestor of prose that holds none of `main`."""
    part = paragraph
    for ancestor in paragraph.iterancestors():
        if ancestor.tag in ("body", "html") or any(e in main for e in ancestor.iter()):
            break
        if sizes.link_density(ancestor) >= 0.1 or paragraph_share(ancestor, sizes) <= 0.7:
            break
        part = ancestor
    return part


def paragraph_share(element: Element, sizes: Sizes) -> float:
    """Return the share of `element`'s text inside paragraphs."""
    total = sizes.text[element]
    if not total:
        return 0.0
    inside = sum(sizes.text[p] for p in element.iter(*SHARED) if p in sizes.text)
    return min(inside / total, 1.0)


def one_line(element: Element, sizes: Sizes) -> bool:
    """True when one `<div>` used as a paragraph (no block inside) holds more than half
    of `element`'s text: an author's bio box, a sign-off written in a `<div>` rather
    than a `<p>`; not a grid of teasers, whose every summary says a little."""
    half = sizes.text[element] / 2
    return any(
        sizes.text.get(d, 0) > half and not any(c.tag in BLOCKS for c in d)
        for d in element.iter("div")
    )


def outermost(elements: list[Element]) -> list[Element]:
    """Return `elements` without those inside another of them (nor any twice), in the
    order given."""
    # An element may be given twice: `<main role="main">` is both a `<main>` and a role.
    chosen = dict.fromkeys(elements)
    return [e for e in chosen if not any(a in chosen for a in e.iterancestors())]
