"""What a page's fingerprint is hashed from, in the compact form worker processes hand back.

The site's template texts are left out of the digest, and the template is learned from
a whole batch of pages once they are read: the material holds what the digest needs
under any template memory, ready to hash.
"""

from __future__ import annotations

# hashlib's own blake2b, without hashlib's start loading OpenSSL (11 M instructions).
from _blake2 import blake2b
from collections.abc import Container, Mapping, Sequence
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

    def digest(self, known: Mapping[int, object]) -> str:
        """Return the fingerprint, the template texts `known` names left out."""
        if known.keys().isdisjoint(self.shapes):
            pieces = [piece for _, _, piece in self.texts]
        else:
            pieces = kept(self.texts, known)
        return blake2b(self.head + b"".join(pieces), digest_size=16).hexdigest()


def material(parts: list[tuple[str, str]], texts: list[tuple[int | None, str]]) -> Material:
    """Return the material of a page's `parts` (label, text) and main content `texts`
    (template shape or None, text with whitespace runs as one space)."""
    head = "".join([f"{label}{_LABEL}{text}{_END}" for label, text in parts]) + _TEXTS
    pieces: list[tuple[int | None, int, bytes]] = []
    run: list[str] = []
    for key, text in texts:
        if key is None:
            run.append(text)
            continue
        if run:
            pieces.append(_piece(None, run))
            run = []
        pieces.append(_piece(key, [text]))
    if run:
        pieces.append(_piece(None, run))
    return Material(
        _encode(head), tuple(pieces), frozenset(key for key, _, _ in pieces if key is not None)
    )


def _piece(key: int | None, texts: list[str]) -> tuple[int | None, int, bytes]:
    # A space added or dropped between tags is no change: texts count without spaces.
    joined = "".join([text.replace(" ", "") + _END for text in texts])
    return key, sum(map(len, texts)), _encode(joined)


def _encode(text: str) -> bytes:
    # Lone surrogates (undecodable file names, broken pages) hash as they are.
    return text.encode("utf-8", "surrogatepass")
