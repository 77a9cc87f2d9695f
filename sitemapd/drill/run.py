"""Put pages through the changes of `mutate` and count how often their fingerprint moves.

A change of the surroundings that moves a page's fingerprint is a false move (its
lastmod would move for nothing); an editor's change that leaves it is a missed move.
Pages are changed in memory, one change at a time, from the same re-serialised page:
nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from sitemapd.drill.mutate import CHANGES, Change
from sitemapd.drill.structure import Page, page_content
from sitemapd.drill.text import Element
from sitemapd.fingerprint import Settings, TemplateMemory
from sitemapd.fingerprint.decode import decoded
from sitemapd.sources.pages import PageRead, read_file

# A page that is not valid UTF-8 would be decoded by its own declaration: the BOM wins.
_BOM = b"\xef\xbb\xbf"
_RAW = re.compile(r"(<(pre|textarea|script|style)\b.*?</\2>)", re.S | re.I)
# Raw text elements that a browser shows as preformatted text.
_ESCAPED_RAW = ("xmp", "plaintext")
# Control characters a page may hold that lxml will not set as text again: a drill
# copying a list item that holds one would fail. Browsers show none of them.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
WHITESPACE = "whitespace between tags"
# How many pages each row names among the worst.
WORST = 5

Oracle = Callable[[Element], list[Element]]
# As the fingerprint's parser: past 256 levels (a legacy page's unclosed tags), not cut.
_PARSER = lxml.html.HTMLParser(huge_tree=True)


@dataclass
class Row:
    """One change over many pages: on how many it applied, how many moved, and which."""

    name: str
    real: bool
    applied: int = 0
    moved: int = 0
    # (page, what moved or stayed) of the pages that went wrong.
    wrong: list[tuple[str, str]] = field(default_factory=list)

    @property
    def wrong_count(self) -> int:
        """Return the pages that went wrong: moved for nothing, or missed an edit."""
        return self.applied - self.moved if self.real else self.moved

    @property
    def rate(self) -> float:
        """Return the share of pages that moved."""
        return self.moved / self.applied if self.applied else 0.0


@dataclass
class Report:
    """What a drill found over a set of pages."""

    pages: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    rows: dict[str, Row] = field(default_factory=dict)

    def row(self, name: str, real: bool) -> Row:
        """Return the row of change `name`, created when new."""
        return self.rows.setdefault(name, Row(name, real))


def serialise(tree: Element) -> bytes:
    """Return `tree` as UTF-8 bytes that decode as UTF-8 whatever charset they declare."""
    text: str = lxml.html.tostring(tree, encoding="unicode")
    return _BOM + text.encode("utf-8", "surrogatepass")


def parse(data: bytes) -> Element:
    """Return the document `data` holds, decoded as a browser would.

    Raises ValueError when it holds no document.
    """
    text, _ = decoded(data)
    try:
        tree = lxml.html.document_fromstring(_CONTROL.sub("", text), parser=_PARSER)
    except (etree.ParserError, ValueError) as exc:
        raise ValueError(f"not an HTML document ({exc})") from exc
    # The parser reads these as raw text and the serialiser escapes it: each round trip
    # would add a level of `&amp;` and move the page. `<pre>` shows the same text (a
    # `<span>` inside one, which a parser would otherwise close).
    for element in list(tree.iter(*_ESCAPED_RAW)):
        inside = any(a.tag == "pre" for a in element.iterancestors())
        element.tag = "span" if inside else "pre"
    return tree


def rewhitespace(text: str) -> str:
    """Return HTML `text` with the whitespace between its tags changed, not inside raw
    text elements."""
    parts = _RAW.split(text)
    out = []
    for n, part in enumerate(parts):
        if n % 3 == 0:
            part = re.sub(r">(\s*)<", lambda m: "><" if m.group(1) else ">\n  <", part)
        elif n % 3 == 2:
            continue
        out.append(part)
    return "".join(out)


def drill(
    pages: Iterable[tuple[str, bytes]],
    settings: Settings,
    memory: TemplateMemory,
    oracle: Oracle = page_content,
    changes: tuple[Change, ...] = CHANGES,
) -> Report:
    """Return how the fingerprints of `pages` (name, bytes) answer each change.

    `oracle` finds a page's content paragraphs. `memory` is the site's template, and
    learns what the pages teach, as a scan of them would, before any is changed.
    """
    report = Report()
    bases = []
    for name, data in pages:
        try:
            base = serialise(parse(data))
        except ValueError as exc:
            report.skipped.append((name, str(exc)))
            continue
        bases.append((name, base, read_file("page.html", base, settings)))
    memory.learn([r.reading.shapes() for _, _, r in bases if r.reading is not None])
    # Every change has its row, those that found nothing to change on any page too.
    for change in changes if bases else ():
        report.row(change.name, change.real)
    for name, base, before in bases:
        report.pages += 1
        digest = before.digest(memory)
        for change in changes:
            tree = parse(base)
            page = Page(tree, oracle(tree))
            if not change.mutate(page):
                continue
            _count(report.row(change.name, change.real), name, before, memory, digest, page)
        row = report.row(WHITESPACE, False)
        spaced = _BOM + rewhitespace(base[len(_BOM) :].decode("utf-8", "surrogatepass")).encode(
            "utf-8", "surrogatepass"
        )
        _count(row, name, before, memory, digest, None, spaced)
    return report


def _count(
    row: Row,
    name: str,
    before: PageRead,
    memory: TemplateMemory,
    digest: str,
    page: Page | None,
    data: bytes | None = None,
) -> None:
    if data is None:
        assert page is not None
        data = serialise(page.tree)
    after = read_file("page.html", data, before.settings)
    moved = after.digest(memory) != digest
    row.applied += 1
    row.moved += moved
    if moved != row.real:
        row.wrong.append((name, "; ".join(difference(before, after, memory)) or "nothing kept"))


def difference(before: PageRead, after: PageRead, memory: TemplateMemory) -> Iterator[str]:
    """Yield what differs between two readings of a page: parts and main text pieces."""
    if before.reading is None or after.reading is None:
        return
    old, new = before.reading, after.reading
    old_parts, new_parts = set(old.parts), set(new.parts)
    for label, text in sorted(new_parts - old_parts):
        yield f"+{label}: {_short(text)}"
    for label, text in sorted(old_parts - new_parts):
        yield f"-{label}: {_short(text)}"
    old_texts, new_texts = old.kept(memory), new.kept(memory)
    gone, came = set(old_texts), set(new_texts)
    for text in new_texts:
        if text not in gone:
            yield f"+text: {_short(text)}"
    for text in old_texts:
        if text not in came:
            yield f"-text: {_short(text)}"


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
