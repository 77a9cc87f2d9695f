"""What a whole site teaches: short texts that many of its pages carry at once are template.

A comment count, "page generated in 42 ms", a "More stories" heading: each page of a
re-rendered site carries them with the same words (digits aside). A text of a few words
seen on many pages of one batch, digits masked, is remembered as template for the
source and left out of every page's fingerprint from then on. Long texts never are: an
article's paragraphs must always count, even when several pages share one.
"""

from __future__ import annotations

import re

# hashlib's own blake2b, without hashlib's start loading OpenSSL (11 M instructions).
from _blake2 import blake2b
from collections import Counter
from collections.abc import Iterable, Sequence, Set

# Texts of more words than this are article text, never learned as template; so are
# sentences of a paragraph (a correction notice appended to several articles).
MAX_WORDS = 6
SENTENCE_WORDS = 4
# A text is template once this many pages of a batch carry it. A count, not a share:
# a source holds several templates (sections, article and index pages) in one batch.
MIN_PAGES = 5
# Remembered per source, newest kept: ample for a template's few hundred short texts.
CAPACITY = 4096
_DIGITS = re.compile(r"\d+")


def shape(words: list[str], tag: str) -> int | None:
    """Return the template key of a text of `words` in a `tag` element, or None when it
    reads as article text (too long, or a sentence of a paragraph)."""
    if len(words) > MAX_WORDS or (tag == "p" and len(words) >= SENTENCE_WORDS):
        return None
    masked = _DIGITS.sub("#", " ".join(words)).encode()
    return int.from_bytes(blake2b(masked, digest_size=8).digest(), "big")


class TemplateMemory:
    """The template texts learned for one source, as shape keys, oldest first."""

    def __init__(self, known: Iterable[int] = ()) -> None:
        self.known: dict[int, None] = dict.fromkeys(known)

    def __contains__(self, key: int) -> bool:
        return key in self.known

    def learn(self, pages: Sequence[Set[int]]) -> None:
        """Remember the shapes that enough of `pages` (one set of shapes each) carry."""
        if len(pages) < MIN_PAGES:
            return
        counts = Counter(key for page in pages for key in page)
        for key, count in counts.items():
            if count >= MIN_PAGES:
                self.known.pop(key, None)
                self.known[key] = None
        while len(self.known) > CAPACITY:
            del self.known[next(iter(self.known))]

    def dump(self) -> str:
        """Return the memory as text for the source's cursor."""
        return " ".join(f"{key:016x}" for key in self.known)

    @classmethod
    def load(cls, text: str | None) -> TemplateMemory:
        """Return the memory `dump()` wrote; an unreadable text starts an empty one."""
        try:
            return cls(int(word, 16) for word in (text or "").split())
        except ValueError:
            return cls()
