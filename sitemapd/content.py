"""Page content: the hash that decides whether a page changed, and what its HTML says.

The hash is taken after the configured `ignore` patterns are removed, so build stamps,
CSRF tokens and counters do not count as changes. From the `<head>` we read the title,
the canonical link, robots meta directives, the language, hreflang alternates, Open
Graph tags and schema.org article data (JSON-LD). The body is read only when a content
selector is configured: then its JSON-LD and the article's images count too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin

import lxml.html
from lxml import etree

from . import w3c
from .errors import ConfigError, InvalidURL
from .render.extensions import HREFLANG
from .render.news import news_language
from .urls import Origin, URLPolicy

_BODY = re.compile(rb"<body[\s>]", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_ROBOTS_NAMES = {"robots", "googlebot"}
_NOINDEX = {"noindex", "none"}

MAX_IMAGES = 1000
# Bumped whenever read_page() learns to read more: pages are then read again once.
FACTS_VERSION = 1
_OG_IMAGE_KEYS = {"og:image", "og:image:url", "og:image:secure_url"}
_LD_JSON = re.compile(
    rb"<script\b[^>]*?\btype\s*=\s*[\"']?application/ld\+json\b[^>]*>(.*?)</script\s*>",
    re.IGNORECASE | re.DOTALL,
)
# Real pages nest a few levels (@graph, mainEntity); the bound stops hostile nesting.
_LD_MAX_DEPTH = 8
# schema.org article-like types whose names do not end in "Article".
_POSTING_TYPES = {"BlogPosting", "LiveBlogPosting", "SocialMediaPosting", "DiscussionForumPosting"}
_IDENT = r"-?[A-Za-z_][A-Za-z0-9_-]*"
_COMPOUND = re.compile(rf"([A-Za-z][A-Za-z0-9-]*)?((?:[#.]{_IDENT})*)")
_PART = re.compile(rf"[#.]{_IDENT}")


def content_hash(data: bytes, ignore: tuple[re.Pattern[bytes], ...] = ()) -> str:
    """Return the hex digest of `data` with every `ignore` match removed."""
    for pattern in ignore:
        data = pattern.sub(b"", data)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What a page's HTML says about itself; hrefs and image URLs as written."""

    title: str | None = None
    canonical: str | None = None
    noindex: bool = False
    language: str | None = None
    published: str | None = None
    headline: str | None = None
    article: bool = False
    alternates: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()
    # `<base href>`: what relative hrefs and image sources resolve against.
    base: str | None = None


@dataclass(frozen=True, slots=True)
class Compound:
    """One step of a selector: a tag, an id and classes, each optional."""

    tag: str | None
    id: str | None
    classes: frozenset[str]

    def matches(self, element: etree._Element) -> bool:
        """True when `element` has this step's tag, id and every one of its classes."""
        if self.tag is not None and element.tag != self.tag:
            return False
        if self.id is not None and element.get("id") != self.id:
            return False
        return self.classes <= set((element.get("class") or "").split())


@dataclass(frozen=True, slots=True)
class Selector:
    """A descendant chain of compound selectors, the CSS subset content selectors use."""

    steps: tuple[Compound, ...]

    def matches(self, element: etree._Element) -> bool:
        """True when `element` matches the last step and its ancestors the earlier ones."""
        if not self.steps[-1].matches(element):
            return False
        pending = len(self.steps) - 2
        # Matching each step at the nearest ancestor that fits is enough for descendant chains.
        for ancestor in element.iterancestors():
            if pending < 0:
                break
            if self.steps[pending].matches(ancestor):
                pending -= 1
        return pending < 0


def parse_selector(text: str) -> Selector:
    """Return the selector `text`: tags, `#id`, `.class` and descendant spaces only.

    Raises ValueError naming what falls outside that subset.
    """
    words = text.split()
    if not words:
        raise ValueError("content selector is empty")
    return Selector(tuple(_parse_compound(word) for word in words))


def _parse_compound(word: str) -> Compound:
    match = _COMPOUND.fullmatch(word)
    if match is None:
        raise ValueError(
            f"unsupported content selector part {word!r}: use tag, #id and .class "
            "(e.g. 'main .article-body', 'div#content.story'), separated by spaces"
        )
    tag, rest = match.group(1), match.group(2)
    ids = [part[1:] for part in _PART.findall(rest) if part.startswith("#")]
    if len(ids) > 1:
        raise ValueError(f"content selector part {word!r} names more than one #id")
    classes = frozenset(part[1:] for part in _PART.findall(rest) if part.startswith("."))
    return Compound(tag.lower() if tag else None, ids[0] if ids else None, classes)


@lru_cache(maxsize=16)
def _cached_selector(text: str) -> Selector:
    return parse_selector(text)


def read_page(data: bytes, content_selector: str | None = None) -> PageFacts:
    """Return what an HTML document says about itself (see PageFacts).

    Only `<head>` is read unless `content_selector` is given: then the body's JSON-LD and
    the `<img>` inside the selected elements count too. Raises ValueError for a bad selector.
    """
    selector = _cached_selector(content_selector) if content_selector is not None else None
    # Nearly everything we read lives in <head>; parsing only that keeps large pages cheap.
    match = _BODY.search(data)
    head = data[: match.start()] if match else data
    tree = _parse(head) if head.strip() else None
    if tree is None:
        return PageFacts()
    facts, meta, images = _head_facts(tree)
    dates, headline, article = _json_ld(head if selector is None else data)
    if selector is not None:
        body = _parse(data)
        if body is not None:
            images.extend(_content_images(body, selector))
    # One PageFacts per page, built once: this runs for every page of a scan.
    return PageFacts(
        **facts,
        published=_publication([*dates, meta.get("article:published_time")]),
        headline=headline or _text(meta.get("og:title")),
        article=article or meta.get("og:type", "").lower() == "article",
        images=tuple(dict.fromkeys(images))[:MAX_IMAGES],
    )


def _parse(data: bytes) -> etree._Element | None:
    """Return the parsed document, or None when lxml finds no document in `data`."""
    try:
        # libxml2 reads a page that declares no charset as Latin-1; UTF-8 is the better guess.
        return lxml.html.document_fromstring(data.decode("utf-8"))
    except (etree.ParserError, ValueError):
        # Not UTF-8, or an XML declaration lxml refuses in a str: let the page's charset rule.
        pass
    try:
        return lxml.html.document_fromstring(data)
    except (etree.ParserError, ValueError):
        return None


def _head_facts(tree: etree._Element) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Return the head's PageFacts fields, the first content of each og:/article: meta,
    and og:images."""
    title = tree.findtext(".//title")
    canonical = None
    alternates: dict[str, str] = {}
    for link in tree.iter("link"):
        rels = (link.get("rel") or "").lower().split()
        href = (link.get("href") or "").strip()
        if "canonical" in rels and href and canonical is None:
            canonical = href
        hreflang = (link.get("hreflang") or "").strip().lower()
        if "alternate" in rels and hreflang and href:
            alternates.setdefault(hreflang, href)
    noindex = False
    meta: dict[str, str] = {}
    images: list[str] = []
    for element in tree.iter("meta"):
        name = (element.get("name") or "").strip().lower()
        if name in _ROBOTS_NAMES:
            directives = {d.strip().lower() for d in (element.get("content") or "").split(",")}
            noindex = noindex or bool(directives & _NOINDEX)
        # Many sites write Open Graph tags with name= instead of property=.
        key = (element.get("property") or "").strip().lower() or name
        if key.startswith(("og:", "article:")):
            content = (element.get("content") or "").strip()
            if content:
                meta.setdefault(key, content)
                if key in _OG_IMAGE_KEYS:
                    images.append(content)
    language = (tree.get("lang") or tree.get("xml:lang") or "").strip()
    base = next((b.get("href", "").strip() for b in tree.iter("base") if b.get("href")), None)
    facts = {
        "title": _text(title),
        "canonical": canonical,
        "noindex": noindex,
        "language": language or None,
        "alternates": tuple(alternates.items()),
        "base": base or None,
    }
    return facts, meta, images


def _json_ld(data: bytes) -> tuple[list[object], str | None, bool]:
    """Return (every datePublished, headline, found) of the page's schema.org articles."""
    if b"ld+json" not in data:
        return [], None, False
    dates: list[object] = []
    headline = None
    found = False
    for block in _LD_JSON.finditer(data):
        try:
            document = json.loads(block.group(1).decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue
        for node in _ld_nodes(document, 0):
            if not _is_article(node.get("@type")):
                continue
            found = True
            dates.append(node.get("datePublished"))
            headline = headline or _text(node.get("headline"))
    return dates, headline, found


def _ld_nodes(value: object, depth: int) -> Iterator[dict[str, object]]:
    """Yield the JSON-LD objects in `value`: itself, list items, @graph and mainEntity."""
    if depth > _LD_MAX_DEPTH:
        return
    if isinstance(value, list):
        for item in value:
            yield from _ld_nodes(item, depth + 1)
    elif isinstance(value, dict):
        yield value
        for key in ("@graph", "mainEntity"):
            yield from _ld_nodes(value.get(key), depth + 1)


def _is_article(types: object) -> bool:
    """True when a JSON-LD `@type` (a string or a list) names an article type."""
    names = types if isinstance(types, list) else [types]
    for name in names:
        if isinstance(name, str):
            # Types may come as "NewsArticle", "schema:NewsArticle" or a full schema.org URL.
            short = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
            if short.endswith("Article") or short in _POSTING_TYPES:
                return True
    return False


def _publication(candidates: list[object]) -> str | None:
    """Return the first candidate that is a W3C datetime with a zone, else the first
    date-time without one read as UTC (as change-log times are), else None."""
    texts = [value for value in candidates if isinstance(value, str)]
    for assume_utc in (False, True):
        for text in texts:
            try:
                return w3c.parse(text, assume_utc=assume_utc)
            except ValueError:
                continue
    return None


def _text(value: object) -> str | None:
    """Return `value` with whitespace collapsed, or None when it is not a non-blank string."""
    if not isinstance(value, str):
        return None
    return _SPACE.sub(" ", value).strip() or None


def _content_images(tree: etree._Element, selector: Selector) -> Iterator[str]:
    """Yield `<img>` sources inside the elements `selector` matches, in document order."""
    seen: set[etree._Element] = set()
    for element in tree.iter(etree.Element):
        if element in seen or not selector.matches(element):
            continue
        for img in element.iter("img"):
            src = (img.get("src") or "").strip()
            if not src or src[:5].lower() == "data:":
                # Lazy-loading pages keep the real URL in data-src and a placeholder in src.
                src = (img.get("data-src") or "").strip()
            if src:
                yield src
        seen.update(element.iter())


def exclusion(facts: PageFacts, loc: str, policy: URLPolicy) -> str | None:
    """Return why the page at `loc` must stay out of sitemaps, or None."""
    if facts.noindex:
        return "noindex"
    if facts.canonical is None:
        return None
    try:
        canonical = _resolve(_base(facts, loc), facts.canonical, policy)
    except InvalidURL:
        return f"canonical: {facts.canonical}"
    if _same_page(canonical, loc):
        return None
    return f"canonical: {canonical}"


def _base(facts: PageFacts, loc: str) -> str:
    """Return the URL relative hrefs of the page at `loc` resolve against."""
    if facts.base is None:
        return loc
    try:
        return urljoin(loc, facts.base)
    except ValueError:  # urllib rejects a malformed IPv6 host
        return loc


def _resolve(base: str, href: str, policy: URLPolicy | None = None) -> str:
    """Return `href` resolved against `base` in canonical form, by the site's `policy` or
    else by the URL's own origin (images and alternates may live elsewhere); raises
    InvalidURL."""
    try:
        url = urldefrag(urljoin(base, href.strip())).url
        if policy is None:
            policy = URLPolicy(Origin.from_base_url(url))
    except (ConfigError, ValueError) as exc:  # ValueError: urllib, a malformed IPv6 host
        raise InvalidURL(f"unparseable URL ({exc})") from exc
    return policy.normalise(url)


def _same_page(canonical: str, loc: str) -> bool:
    """True when `canonical` names `loc`, allowing `/a/index.html` for `/a/` and `.html`."""
    if canonical == loc:
        return True
    for suffix in ("index.html", "index.htm"):
        if canonical.endswith("/" + suffix) and canonical[: -len(suffix)] == loc:
            return True
    return canonical in (loc + ".html", loc + ".htm")


@dataclass(frozen=True, slots=True)
class ArticleMeta:
    """A page's news, hreflang and image data, normalised for rendering."""

    published: str | None
    language: str | None
    news_title: str | None
    article: bool
    # (hreflang, canonical URL), sorted by hreflang with x-default last.
    alternates: tuple[tuple[str, str], ...]
    # Absolute http(s) URLs on any host (images often live on a CDN).
    images: tuple[str, ...]


def article_meta(
    facts: PageFacts, loc: str, policy: URLPolicy, language: str | None = None
) -> ArticleMeta:
    """Return the article data of the page at `loc`, whose language is `language` when the
    page does not say; invalid alternates and images are dropped."""
    base = _base(facts, loc)
    return ArticleMeta(
        published=facts.published,
        language=news_language(facts.language),
        news_title=facts.headline or facts.title,
        article=facts.article,
        alternates=_alternates(facts, loc, base, policy, language) if facts.alternates else (),
        images=tuple(dict.fromkeys(_image_urls(facts.images, base)))[:MAX_IMAGES]
        if facts.images
        else (),
    )


def _alternates(
    facts: PageFacts, loc: str, base: str, policy: URLPolicy, language: str | None
) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for hreflang, href in facts.alternates:
        if not HREFLANG.match(hreflang):
            continue
        try:
            found.setdefault(hreflang, _resolve(base, href, policy))
        except InvalidURL:
            try:
                # Another site's page (a country domain): Google takes it from a sitemap
                # when both sites are verified.
                found.setdefault(hreflang, _resolve(base, href))
            except InvalidURL:
                continue
    # hreflang sets must name every member, the page itself included.
    own = (facts.language or language or "").lower().replace("_", "-")
    if (
        found
        and HREFLANG.match(own)
        and own not in found
        and not any(_same_page(url, loc) for url in found.values())
    ):
        found[own] = loc
    return tuple(sorted(found.items(), key=lambda item: (item[0] == "x-default", item[0])))


def _image_urls(images: tuple[str, ...], base: str) -> Iterator[str]:
    """Yield the canonical spelling of each http(s) image URL, resolved against `base`."""
    for raw in images:
        try:
            # The image's own origin: images may live on any host, but are spelled canonically.
            yield _resolve(base, raw)
        except InvalidURL:
            continue
