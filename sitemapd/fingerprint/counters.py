"""Counters a CMS renders anew on every request: readers' comments, views, votes.

A counter's label alone ("27 comments", "Comments (27)", "1.2k views") is template
wherever it stands, unless a paragraph says more around it: a count in a sentence of the
article ("the clip had 900 views by noon") is what the article says.
"""

from __future__ import annotations

import re

from sitemapd.fingerprint.chrome import Element

# A counter's label and nothing else: a count and what it counts ("27 comments",
# "Comments (27)", "1.2k views"), in the languages whose comment threads the drill names;
# a CMS renders it anew on every request.
_COUNTED = (
    r"(?:comments?|replies|reply|responses?|views?|shares?|likes?|reactions?|votes?|"
    r"commentaires?|kommentare?|kommentarer|comentarios?|comentários?|commenti|commento|"
    r"reacties|reactie|komentarzy?|komentarze)"
)
_COUNT = r"\d[\d.,\u00a0\u202f]*[kKmM]?"
_COUNTER = re.compile(
    rf"\s*(?:\(?{_COUNT}\)?\s*{_COUNTED}|{_COUNTED}\s*[:(]?\s*{_COUNT}\)?)\s*", re.IGNORECASE
)
# Blocks whose words around a count are a sentence's: "the clip had <b>900 views</b>".
_SENTENCES = ("p", "blockquote", "dd")


def counter(element: Element, text: str, root: Element) -> bool:
    """True when `text`, a text node of `element` inside `root`, is a counter's label
    alone, not words of a paragraph that says more around it."""
    if not _COUNTER.fullmatch(text):
        return False
    for block in (element, *element.iterancestors()):
        if block.tag in _SENTENCES:
            said = " ".join(t for t in block.itertext() if isinstance(t, str))
            return said.split() == text.split()
        if block is root:
            break
    return True
