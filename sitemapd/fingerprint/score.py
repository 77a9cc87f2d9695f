"""Score text as readability.js does: a paragraph by its commas and length, and a
block of `<br>` lines by the paragraphs those lines are."""

from __future__ import annotations

from sitemapd.fingerprint.chrome import MIN_PARAGRAPH, Element

BLOCKS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
}
# Commas as Latin, CJK full-width and ideographic text write them (counted, not matched:
# a regex class of characters past Latin-1 compiles a 64 KiB map).
_COMMAS = (",", "\uff0c", "\u3001")


def text_nodes(element: Element) -> list[str]:
    """Return the text nodes inside `element` (not its tail), in document order."""
    return [t for t in element.itertext() if isinstance(t, str)]


def normal(text: str) -> str:
    """Return `text` with each run of whitespace as one space, and none at either end."""
    return " ".join(text.split())


def text_of(element: Element) -> str:
    """Return the text inside `element` (not its tail)."""
    return "".join(text_nodes(element))


def prose_score(text: str, length: int) -> float:
    """Return readability's score of one paragraph: its commas and its `length`."""
    return 1 + sum(text.count(comma) for comma in _COMMAS) + min(length / 100, 3)


def paragraphs_score(element: Element, text: str, length: int, inline: bool) -> float:
    """Return the score of `text`, the prose of `element`, as one paragraph or, when
    `<br>` lines cut it into paragraphs of their own (a story written as one block of
    lines), as those paragraphs, whichever is more.

    `inline` counts the text of `element`'s children between the breaks (a leaf block),
    else its own loose text alone, blocks breaking it too. Lengths are of text nodes
    stripped, as `Sizes` measures them: the whitespace between tags counts for nothing.
    """
    whole = prose_score(text, length)
    if sum(child.tag == "br" for child in element) < 2:
        return whole
    pieces: list[str] = [element.text or ""]
    lines = 0.0
    for child in element:
        if child.tag == "br" or (not inline and child.tag in BLOCKS):
            lines += _line_score(pieces)
            pieces = []
        elif inline and isinstance(child.tag, str):
            pieces.extend(text_nodes(child))
        pieces.append(child.tail or "")
    return max(whole, lines + _line_score(pieces))


def _line_score(pieces: list[str]) -> float:
    """Return the score of a line of text nodes as a paragraph, 0 when too short."""
    length = sum(len(piece.strip()) for piece in pieces)
    return prose_score("".join(pieces), length) if length >= MIN_PARAGRAPH else 0.0


def loose_text(element: Element) -> str:
    """Return the text `element` holds outside its child elements, stripped."""
    parts = [element.text or ""]
    parts.extend(child.tail or "" for child in element)
    return normal(" ".join(parts))
