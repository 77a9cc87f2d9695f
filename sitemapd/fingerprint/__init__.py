"""The significant-change fingerprint: what a page says, not the bytes around it.

`content` (the default) hashes a page's main content (see `extract`), its title and
headline (see `headline`), description, canonical and robots directives and the article
fields of its JSON-LD, normalised so that what a browser shows the same hashes the same (whitespace,
entity spelling, attribute order, scripts and styles, asset query strings). `page`
hashes the bytes, as do non-HTML files. Both take the source's `ignore` patterns out
first. Each stored fingerprint records the settings that produced it (`Settings.key`).
"""

from __future__ import annotations

import json
import re

# hashlib's own blake2b, without hashlib's start loading OpenSSL (11 M instructions).
from _blake2 import blake2b
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import NamedTuple

from lxml import etree

from sitemapd.fingerprint import visible
from sitemapd.fingerprint.assets import asset, image_parts, image_source
from sitemapd.fingerprint.chrome import Element, elements
from sitemapd.fingerprint.decode import decoded
from sitemapd.fingerprint.extract import describe, main_content, outside
from sitemapd.fingerprint.headline import headline, ld_text, own_articles, title_text
from sitemapd.fingerprint.material import Material, kept, material
from sitemapd.fingerprint.rawbytes import bytes_digest, bytes_hasher, without_ignored
from sitemapd.fingerprint.score import normal, text_nodes, text_of
from sitemapd.fingerprint.template import TemplateMemory, shape
from sitemapd.fingerprint.texts import fragments

__all__ = [
    "FINGERPRINT_VERSION",
    "Material",
    "Reading",
    "Settings",
    "TemplateMemory",
    "bytes_digest",
    "bytes_hasher",
    "compile_selector",
    "image_source",
    "og_type",
    "parse_html",
    "read_html",
    "title_text",
    "without_ignored",
]

# Bumped whenever a change to this package can give an unchanged page another digest.
FINGERPRINT_VERSION = 18
# Characters of main text below which the site's template is not left out.
MIN_KEPT = 140
# Plain elements: lxml.html's element classes cost a Python lookup per element.
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
# Told the encoding, libxml2 reads past any <meta charset> the page holds, as for text.
_UTF8_PARSER = etree.HTMLParser(
    remove_comments=True, remove_pis=True, encoding="utf-8", huge_tree=True
)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_ROBOTS_NAMES = {"robots", "googlebot"}
# Links to the page itself, and the names navigation blocks go by.
_SELF = {"", "#", ".", "./"}
# What XPath's normalize-space() strips.
_XPATH_SPACE = " \t\r\n"
_CURRENT = re.compile(r"(?:^|\s)(?:current|active)(?:\s|$)", re.IGNORECASE)
_NAVIGATION = re.compile(r"(?:^|[\s_-])(?:nav|navbar|menu|toc|toctree|sidebar)(?:$|[\s_-])", re.I)
# The parts that state the page's headline, against which its `<h1>` are matched.
_STATED = {"title", "og:title", "ld:headline", "ld:name", "ld:alternativeHeadline"}
# JSON-LD fields of an article that are what it says (not counters such as commentCount).
_LD_FIELDS = (
    "headline",
    "alternativeHeadline",
    "name",
    "description",
    "datePublished",
    "dateModified",
    "author",
    "image",
    "articleBody",
    "text",
)


class Settings(NamedTuple):
    """How a source's pages are fingerprinted; `key` names them in the ledger."""

    mode: str = "content"
    selector: str | None = None
    # The source's `ignore` patterns, as written.
    ignore: tuple[str, ...] = ()
    version: int = FINGERPRINT_VERSION

    def spec(self) -> str:
        """Return the settings as canonical JSON, from which `from_spec` rebuilds them."""
        return json.dumps(
            {
                "version": self.version,
                "mode": self.mode,
                "selector": self.selector,
                "ignore": list(self.ignore),
            },
            sort_keys=True,
        )

    @property
    def key(self) -> str:
        """Return a short stable name of these settings."""
        return _key(self)

    @classmethod
    def from_spec(cls, text: str) -> Settings | None:
        """Return the settings `spec()` wrote, or None when they cannot be rebuilt."""
        try:
            data = json.loads(text)
            return cls(
                mode=str(data["mode"]),
                selector=data["selector"],
                ignore=tuple(str(p) for p in data["ignore"]),
                version=int(data["version"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def patterns(self) -> tuple[re.Pattern[bytes], ...]:
        """Return the compiled `ignore` patterns."""
        return _patterns(self.ignore)


@lru_cache(maxsize=64)
def _key(settings: Settings) -> str:
    # Asked of every page read: the JSON and its hash are made once per settings.
    return blake2b(settings.spec().encode(), digest_size=6).hexdigest()


@lru_cache(maxsize=64)
def _patterns(ignore: tuple[str, ...]) -> tuple[re.Pattern[bytes], ...]:
    return tuple(re.compile(p.encode()) for p in ignore)


@lru_cache(maxsize=64)
def compile_selector(text: str) -> Callable[[Element], list[Element]]:
    """Return a function that finds the elements CSS selector `text` matches; raises
    ValueError naming what is wrong with the selector."""
    from lxml.cssselect import CSSSelector  # here: most sites name none; `explain` starts sooner

    try:
        selector = CSSSelector(text)
    except Exception as exc:  # cssselect raises its own SelectorError and ExpressionError
        raise ValueError(f"not a CSS selector cssselect understands ({exc})") from exc

    def select(root: Element) -> list[Element]:
        return elements(selector(root))

    return select


def parse_html(data: bytes, whole: bytes | None = None) -> Element | None:
    """Return the document `data` holds, decoded as a browser would, or None if empty.

    `whole` is the document when `data` is its head alone: its charset is found there.
    """
    text, utf8 = decoded(data, whole)
    declaration = _XML_DECLARATION.match(text)
    if declaration:
        text, utf8 = text[declaration.end() :], None
    if not text or text.isspace():  # as `not text.strip()`, without a copy of the page
        return None
    try:
        # UTF-8 bytes as they are: lxml would encode the text back to UTF-8 for libxml2.
        if utf8 is not None:
            return etree.fromstring(utf8, parser=_UTF8_PARSER)
        return etree.fromstring(text, parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None


class Reading:
    """What a page's fingerprint is taken over, before the site's template is left out."""

    # Not a dataclass: `dataclasses` (with `inspect`) would load for every page read.
    __slots__ = ("around", "dropped", "fallback", "parts", "texts")

    def __init__(
        self,
        parts: list[tuple[str, str]],
        texts: list[tuple[int | None, str]],
        fallback: bool = False,
    ) -> None:
        # (label, text) of the head, headlines and structured data, in order; the main
        # content's texts, whitespace runs as one space, with their template shape or None;
        # and whether no main content was found (the whole body counts).
        self.parts, self.texts, self.fallback = parts, texts, fallback
        # What was left out of the main content, with why, and what lies around it
        # (filled only when explaining).
        self.dropped: list[tuple[str, str]] = []
        self.around: list[str] = []

    def shapes(self) -> set[int]:
        """Return the template shapes of the main content's short texts."""
        return {key for key, _ in self.texts if key is not None}

    def kept(self, memory: TemplateMemory) -> list[str]:
        """Return the main content texts that are not the site's template (all of them
        when that would leave less than a paragraph)."""
        return kept([(key, len(text), text) for key, text in self.texts], memory.known)

    def material(self) -> Material:
        """Return what the fingerprint is hashed from, compact (as worker processes hand
        it back)."""
        return material(self.parts, self.texts)

    def digest(self, memory: TemplateMemory) -> str:
        """Return the fingerprint: the parts and the main content less `memory`."""
        return self.material().digest(memory.known)


def read_html(
    tree: Element,
    articles: list[dict[str, object]],
    settings: Settings,
    explain: bool = False,
    product: bool = False,
) -> Reading:
    """Return what the fingerprint of the page `tree` is taken over.

    `articles` are the page's JSON-LD article objects; `product`, whether its JSON-LD
    says it is about one product. The tree is cleaned in place (scripts, styles, hidden
    elements go); read its facts first.
    """
    parts = _head_parts(tree, _navigation_labels(tree))
    for node in own_articles(articles, parts, tree):
        for name in _LD_FIELDS:
            for value in _ld_values(node.get(name), name):
                parts.append((f"ld:{name}", value))
    declared = og_type(tree)
    article = bool(articles) or declared.startswith("article")
    product = product or product_type(declared)
    visible.only(tree)
    # Not find(), nor findtext() below: ElementPath costs more than the rest of a small page.
    body = next(tree.iterchildren("body"), None)
    if body is None:
        body = tree
    # Text nodes joined by spaces: "<h1>a<span>b</span></h1>" and "a <span>b" read alike.
    h1s = [(h, normal(" ".join(text_nodes(h)))) for h in body.iter("h1")]
    # An `<h1>` in a breadcrumb trail's link, beside another, is the template's: the trail
    # changes or goes without the headline changing (the current step, unlinked, may be
    # the page's one headline).
    if len(h1s) > 1:
        h1s = [(h, t) for h, t in h1s if not _linked_step(h)] or h1s
    select = compile_selector(settings.selector) if settings.selector else None
    extract = main_content(body, select, article=article, product=product)
    stated = [text for label, text in parts if label in _STATED]
    texts: list[tuple[int | None, str]] = []
    opening = None  # the element of the main content's first text
    for element, text in fragments(extract):
        if words := text.split():
            opening = element if opening is None else opening
            texts.append((shape(words, str(element.tag)), " ".join(words)))
    first, opening = (None, None) if extract.fallback else (extract.main[0], opening)
    for title in headline([(h, text) for h, text in h1s if text], stated, first, opening):
        parts.append(("h1", title))
    # Images and link targets as sets: a list of them reordered says nothing new.
    assets: set[tuple[str, str]] = set()
    for root in extract.main:
        for element in root.iter("img", "a"):
            if any(a in extract.dropped for a in element.iterancestors()):
                continue
            if element.tag == "img":
                assets.update(("img", value) for value in image_parts(element))
            elif element.get("href"):
                assets.add(("a", asset(element.get("href", ""))))
    parts.extend(sorted(assets))
    reading = Reading(parts, texts, extract.fallback)
    if explain:
        reading.dropped = [(describe(e), why) for e, why in extract.dropped.items()]
        reading.around = [describe(e) for e in outside(extract, body)]
    return reading


def _head_parts(tree: Element, labels: set[str]) -> list[tuple[str, str]]:
    """Return the title, description, Open Graph title and image, canonical and robots.

    A title that repeats the page's own label in the site navigation (documentation
    generators title pages after it) counts without that label: renaming a navigation
    entry is a template change.
    """
    title = normal(title_text(tree) or "")
    for label in sorted(labels, key=len, reverse=True):
        if title.startswith(label):
            title = title[len(label) :]
            break
    parts = [("title", title)]
    robots: set[str] = set()
    # The whole document: parsers move head elements into the body after a stray tag.
    for element in tree.iter("meta", "link"):
        if element.tag == "link":
            if "canonical" in (element.get("rel") or "").lower().split():
                parts.append(("canonical", (element.get("href") or "").strip()))
            continue
        content = normal(element.get("content") or "")
        # Pages write Open Graph tags with name= as often as property=, sometimes both.
        for key in ((element.get(a) or "").strip().lower() for a in ("name", "property")):
            if key in _ROBOTS_NAMES:
                robots.update(d.strip().lower() for d in content.split(","))
            elif key in ("description", "og:title", "og:description"):
                parts.append((key, content))
            elif key == "og:image":
                parts.append((key, asset(content)))
    parts.append(("robots", ",".join(sorted(robots))))
    return parts


def product_type(declared: str) -> bool:
    """True when the Open Graph type `declared` (see og_type) is a product's."""
    return declared.startswith(("product", "og:product"))


def og_type(tree: Element) -> str:
    """Return the document's Open Graph type, lower case ("" when it has none)."""
    for meta in tree.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").strip().lower() == "og:type":
            return (meta.get("content") or "").strip().lower()
    return ""


def _navigation_labels(tree: Element) -> set[str]:
    """Return the texts of links to the page itself inside the site's navigation."""
    labels = set()
    for link in tree.iter("a"):
        classes, aria, href = link.get("class") or "", link.get("aria-current"), link.get("href")
        # The links fingerprint version 1 chose by XPath (a loop over `<a>` costs a tenth):
        # marked current or active, or linking to no other page.
        if not (
            aria is not None
            or "current" in classes
            or "active" in classes
            or href is None
            or href.strip(_XPATH_SPACE) in _SELF
        ):
            continue
        current = _CURRENT.search(classes) or aria
        if not current and (href or "").strip() not in _SELF:
            continue
        # A breadcrumb's last step names the page after its headline, not after a menu
        # entry: a trail changed or gone must not put the headline back into the title.
        ancestors = list(link.iterancestors())
        if any(_is_navigation(a) for a in ancestors) and not any(map(_breadcrumb, ancestors)):
            label = normal(text_of(link))
            if label:
                labels.add(label)
    return labels


def _is_navigation(element: Element) -> bool:
    if element.tag == "nav" or (element.get("role") or "").lower() == "navigation":
        return True
    return bool(_NAVIGATION.search(f"{element.get('class') or ''} {element.get('id') or ''}"))


def _linked_step(heading: Element) -> bool:
    """True when `heading` lies in a link of a breadcrumb trail."""
    ancestors = list(heading.iterancestors())
    return any(a.tag == "a" for a in ancestors) and any(map(_breadcrumb, ancestors))


def _breadcrumb(element: Element) -> bool:
    """True when `element` is named as a breadcrumb trail (schema.org's BreadcrumbList,
    "fil d'Ariane" in French)."""
    named = " ".join(str(element.get(a)) for a in ("class", "id", "aria-label", "itemtype")).lower()
    return "readcrumb" in named or "ariane" in named


def _ld_values(value: object, name: str) -> Iterator[str]:
    """Yield the texts of a JSON-LD field: strings, names of persons, image URLs."""
    if isinstance(value, str):
        yield asset(value) if name == "image" else normal(ld_text(value))
    elif isinstance(value, list):
        for item in value[:50]:
            yield from _ld_values(item, name)
    elif isinstance(value, dict):
        for key in ("name", "url", "@id"):
            if isinstance(value.get(key), str):
                yield from _ld_values(value[key], name)
                return
