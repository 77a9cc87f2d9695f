"""Read one file of a directory source: what it says about itself and its fingerprint.

An HTML page is parsed once for both its facts (title, canonical, robots, article data)
and its significant-change fingerprint; other files are fingerprinted by their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .content import PageFacts, ld_articles, read_page
from .fingerprint import (
    Reading,
    Settings,
    TemplateMemory,
    bytes_digest,
    parse_html,
    read_html,
    without_ignored,
)

HTML_SUFFIXES = (".html", ".htm", ".xhtml")


@dataclass
class PageRead:
    """A file as read: its facts (HTML only) and what its fingerprint is taken over."""

    settings: Settings
    facts: PageFacts | None
    # The content fingerprint's material (HTML in "content" mode), else None.
    reading: Reading | None
    # The bytes fingerprint ("page" mode and non-HTML files), else None.
    bytes_fingerprint: str | None

    def digest(self, memory: TemplateMemory) -> str:
        """Return the fingerprint, the site's template texts in `memory` left out."""
        if self.reading is not None:
            return self.reading.digest(memory)
        assert self.bytes_fingerprint is not None
        return self.bytes_fingerprint

    @property
    def fallback(self) -> bool:
        """True when no main content was found and the whole page counted."""
        return self.reading is not None and self.reading.fallback


def is_html(relpath: str) -> bool:
    """True when the file at `relpath` is read as an HTML page."""
    return relpath.lower().endswith(HTML_SUFFIXES)


def settings_for(relpath: str, settings: Settings) -> Settings:
    """Return the fingerprint settings of the file at `relpath`: non-HTML files always
    hash their bytes."""
    if settings.mode == "page" or is_html(relpath):
        return settings
    return Settings(mode="page", ignore=settings.ignore, version=settings.version)


def read_file(
    relpath: str,
    data: bytes,
    settings: Settings,
    images_selector: str | None = None,
    explain: bool = False,
) -> PageRead:
    """Return what the file at `relpath` holding `data` says, by fingerprint `settings`.

    `images_selector` asks for the images inside it (image:image entries).
    """
    settings = settings_for(relpath, settings)
    if not is_html(relpath):
        return PageRead(settings, None, None, bytes_digest(data, settings.patterns()))
    if settings.mode == "page":
        facts = read_page(data, images_selector)
        return PageRead(settings, facts, None, bytes_digest(data, settings.patterns()))
    text = without_ignored(data, settings.patterns())
    tree = parse_html(text)
    facts = read_page(data, images_selector, tree=tree)
    if tree is None:
        return PageRead(settings, facts, Reading([], [], fallback=True), None)
    reading = read_html(tree, ld_articles(text), settings, explain=explain)
    return PageRead(settings, facts, reading, None)
