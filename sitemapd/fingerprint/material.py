"""What a page's fingerprint is hashed from, in the compact form worker processes hand back.

The site's template texts are left out of the digest, and the template is learned from
a whole batch of pages once they are read: the material holds what the digest needs
under any template memory, and the digest itself for a memory that knows none of its
texts (the common case, which then costs the process applying the batch nothing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Container, Sequence
from itertools import groupby
from typing import NamedTuple, TypeVar

# Characters of main text below which the site's template is not left out.
MIN_KEPT = 140
# Separators of the hashed material: after a part's label, after each part or text, and
# between the parts and the texts.
_LABEL, _END, _TEXTS = "\x1f", "\x1e", "\x1d"

T = TypeVar("T")


def kept(texts: Sequence[tuple[int | None, int, T]], known: Container[int]) -> list[T]:
    """Return the values of `texts` (template shape or None, characters, value) that are
    not the template `known` names.

    A page that would keep less than a paragraph keeps all: on a page that says little,
    what many pages say alike is still what it says.
    """
    chosen = [(size, value) for key, size, value in texts if key is None or key not in known]
    if sum(size for size, _ in chosen) < MIN_KEPT:
        return [value for _, _, value in texts]
    return [value for _, value in chosen]


class Material(NamedTuple):
    """A page's fingerprint before the site's template is left out."""

    # Each part as "label\x1ftext\x1e", then "\x1d", encoded.
    head: bytes
    # (template shape or None, characters, encoded text without spaces and "\x1e") of the
    # main content's texts; neighbours of no shape are joined into one.
    texts: tuple[tuple[int | None, int, bytes], ...]
    # The template shapes among `texts`.
    shapes: frozenset[int]
    # The digest with every text kept.
    whole: str

    def digest(self, known: Container[int]) -> str:
        """Return the fingerprint, the template texts `known` names left out."""
        if not any(key in known for key in self.shapes):
            return self.whole
        return _digest(self.head, kept(self.texts, known))


def material(parts: list[tuple[str, str]], texts: list[tuple[int | None, str]]) -> Material:
    """Return the material of a page's `parts` (label, text) and main content `texts`
    (template shape or None, text with whitespace runs as one space)."""
    head = _encode("".join(f"{label}{_LABEL}{text}{_END}" for label, text in parts) + _TEXTS)
    pieces: list[tuple[int | None, int, bytes]] = []
    for plain, group in groupby(texts, key=lambda text: text[0] is None):
        if plain:
            run = [text for _, text in group]
            pieces.append((None, sum(map(len, run)), _encode("".join(map(_piece, run)))))
        else:
            pieces.extend((key, len(text), _encode(_piece(text))) for key, text in group)
    return Material(
        head,
        tuple(pieces),
        frozenset(key for key, _ in texts if key is not None),
        _digest(head, [piece for _, _, piece in pieces]),
    )


def _piece(text: str) -> str:
    # A space added or dropped between tags is no change: texts count without spaces.
    return text.replace(" ", "") + _END


def _encode(text: str) -> bytes:
    # Lone surrogates (undecodable file names, broken pages) hash as they are.
    return text.encode("utf-8", "surrogatepass")


def _digest(head: bytes, pieces: list[bytes]) -> str:
    return hashlib.blake2b(head + b"".join(pieces), digest_size=16).hexdigest()
