"""Page content: what a page's HTML says about itself.

From the `<head>` we read the title,
the canonical link, robots meta directives, the language, hreflang alternates, Open
Graph tags and schema.org article data (JSON-LD). The body is read only when a content
selector is configured: then its JSON-LD and the article's images count too.
"""

# Annotations evaluated, not text: see core/observation.py.
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple
from urllib.parse import urldefrag, urljoin

from lxml import etree

from sitemapd.core import w3c
from sitemapd.core.observation import ArticleMeta
from sitemapd.core.urls import Origin, URLPolicy, comparable
from sitemapd.errors import ConfigError, InvalidURL
from sitemapd.fingerprint import compile_selector, image_source, parse_html, title_text
from sitemapd.fingerprint.headline import ld_text
from sitemapd.render.extensions import HREFLANG
from sitemapd.render.newslanguage import news_language
from sitemapd.sources.jsonld import ld_articles

_BODY = re.compile(rb"<body[\s>]", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_ROBOTS_NAMES = {"robots", "googlebot"}
_NOINDEX = {"noindex", "none"}
# A meta refresh's content that names a URL: "0; url=/new.html" (HTML's refresh syntax,
# where "url=" and quotes are optional).
_REFRESH = re.compile(r"\s*[\d.]*\s*[;,]\s*(?:url\s*=\s*)?['\"]?([^'\"]+)", re.IGNORECASE)
# The `type` of an alternate link that is a page: none said, or HTML.
_HTML_TYPES = {"", "text/html", "application/xhtml+xml"}

MAX_IMAGES = 1000
# Bumped whenever read_page() learns to read more: pages are then read again once.
FACTS_VERSION = 2
_OG_IMAGE_KEYS = {"og:image", "og:image:url", "og:image:secure_url"}


class PageFacts(NamedTuple):
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
    # Where a `<meta http-equiv="refresh">` sends the reader: the page is a redirect.
    refresh: str | None = None


def read_page(
    data: bytes, content_selector: str | None = None, tree: etree._Element | None = None
) -> PageFacts:
    """Return what an HTML document says about itself (see PageFacts).

    Only what comes before `<body>` is read for the head's facts, as crawlers read them;
    with `content_selector` the body's JSON-LD and the `<img>` inside the selected
    elements count too, found in `tree` (the whole document) when the caller parsed it.
    Raises ValueError for a bad selector.
    """
    select = compile_selector(content_selector) if content_selector is not None else None
    # Nearly everything we read lives in <head>; parsing only that keeps large pages cheap.
    match = _BODY.search(data)
    head = data[: match.start()] if match else data
    head_tree = parse_html(head, data) if head and not head.isspace() else None
    if head_tree is None:
        return PageFacts()
    facts, meta, images = _head_facts(head_tree)
    dates, headline, article = _json_ld(head if select is None else data, data)
    if select is not None:
        if tree is None:
            tree = parse_html(data)
        if tree is not None:
            images.extend(_content_images(tree, select))
    # One PageFacts per page, built once: this runs for every page of a scan.
    return PageFacts(
        **facts,
        published=_publication([*dates, meta.get("article:published_time")]),
        headline=headline or _text(meta.get("og:title")),
        article=article or meta.get("og:type", "").lower() == "article",
        images=tuple(dict.fromkeys(images))[:MAX_IMAGES],
    )


def _head_facts(tree: etree._Element) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Return the head's PageFacts fields, the first content of each og:/article: meta,
    and og:images."""
    title = title_text(tree)
    canonical = None
    alternates: dict[str, str] = {}
    for link in tree.iter("link"):
        rels = (link.get("rel") or "").lower().split()
        href = (link.get("href") or "").strip()
        if "canonical" in rels and href and canonical is None:
            canonical = href
        hreflang = (link.get("hreflang") or "").strip().lower()
        if "alternate" in rels and hreflang and href and _is_translation(link):
            alternates.setdefault(hreflang, href)
    noindex = False
    refresh = None
    meta: dict[str, str] = {}
    images: list[str] = []
    for element in tree.iter("meta"):
        if refresh is None and (element.get("http-equiv") or "").strip().lower() == "refresh":
            found = _REFRESH.match(element.get("content") or "")
            refresh = found.group(1).strip() if found else None
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
        "refresh": refresh or None,
    }
    return facts, meta, images


def _is_translation(link: etree._Element) -> bool:
    """True when an alternate `<link>` names a page in another language: an HTML page for
    every medium, not a feed (Nikola puts one with hreflang in every head), a print or
    mobile version (`media`), or another format."""
    kind = (link.get("type") or "").split(";")[0].strip().lower()
    return kind in _HTML_TYPES and not (link.get("media") or "").strip()


def _json_ld(data: bytes, whole: bytes) -> tuple[list[object], str | None, bool]:
    """Return (every datePublished, headline, found) of the schema.org articles in `data`,
    the page `whole` or its head."""
    articles = ld_articles(data, whole)
    headline = next((h for h in (_text(a.get("headline")) for a in articles) if h), None)
    if headline is not None:
        # "&nbsp;" resolved is a space too.
        headline = _text(ld_text(headline))
    return [a.get("datePublished") for a in articles], headline, bool(articles)


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


def _content_images(
    tree: etree._Element, select: Callable[[etree._Element], list[etree._Element]]
) -> Iterator[str]:
    """Yield `<img>` sources inside the elements `select` finds, in document order."""
    seen: set[etree._Element] = set()
    for element in select(tree):
        if element in seen:
            continue
        for img in element.iter("img"):
            src = image_source(img)
            if src:
                yield src
        seen.update(element.iter())


def exclusion(facts: PageFacts, loc: str, policy: URLPolicy) -> str | None:
    """Return why the page at `loc` must stay out of sitemaps, or None."""
    if facts.noindex:
        return "noindex"
    if facts.refresh is not None:
        # A page that sends its readers elsewhere at once is a redirect, not a page.
        try:
            target = _resolve(_base(facts, loc), facts.refresh)
        except InvalidURL:
            target = facts.refresh
        if not _same_page(target, loc):
            return f"redirect: {target}"
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
    """True when `canonical` names `loc`, allowing `/a/index.html` for `/a/` and `.html`,
    and escapes spelled otherwise (`comparable`)."""
    canonical, loc = comparable(canonical), comparable(loc)
    if canonical == loc:
        return True
    for suffix in ("index.html", "index.htm"):
        if canonical.endswith("/" + suffix) and canonical[: -len(suffix)] == loc:
            return True
    return canonical in (loc + ".html", loc + ".htm")


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
