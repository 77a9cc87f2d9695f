"""The main content's texts the fingerprint is taken over: every text node of what the
extractor kept, in document order, but what it left out and a counter's label alone
(see counters.py)."""

from __future__ import annotations

from collections.abc import Iterator

from sitemapd.fingerprint.chrome import Element
from sitemapd.fingerprint.counters import counter
from sitemapd.fingerprint.extract import Extract


def fragments(extract: Extract) -> Iterator[tuple[Element, str]]:
    """Yield `(element, text)` for every text node of the main content kept, in order,
    but a counter's label (see `counters.counter`)."""
    for root in extract.main:
        for element, text in _walk(root, extract.dropped):
            if not counter(element, text, root):
                yield element, text


def _walk(root: Element, dropped: dict[Element, str]) -> Iterator[tuple[Element, str]]:
    """Yield `(element, text)` for each text node under `root`, what `dropped` holds left
    out, in document order; a text after an element is its parent's."""
    # A stack, not recursion: a page of unclosed tags nests thousands deep.
    if root.text:
        yield root, root.text
    stack = [(root, iter(root))]
    while stack:
        parent, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if stack and parent.tail:
                yield stack[-1][0], parent.tail
        elif child not in dropped and isinstance(child.tag, str):
            if child.text:
                yield child, child.text
            stack.append((child, iter(child)))
        elif child.tail:
            yield parent, child.tail
