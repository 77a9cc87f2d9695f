"""What a feed page holds: its entries and links, before any rendering."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ATOM_NS = "http://www.w3.org/2005/Atom"

# Characters XML 1.0 forbids in any document; lxml refuses text containing them.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One URL's latest change: `loc` is both its link and its stable id."""

    loc: str
    title: str | None
    updated: str


@dataclass(frozen=True, slots=True)
class FeedPage:
    """One feed file: its own links, RFC 5005 paging links, and entries newest first."""

    title: str
    self_url: str
    site_url: str
    entries: Sequence[FeedEntry]
    updated: str
    hubs: tuple[str, ...] = ()
    first_url: str | None = None
    next_url: str | None = None
    previous_url: str | None = None
    last_url: str | None = None
    subtitle: str | None = None


def xml_text(value: str) -> str:
    """Return `value` without the characters XML 1.0 cannot carry."""
    return _XML_ILLEGAL.sub("", value)
