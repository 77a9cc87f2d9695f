"""A page's JSON-LD: its objects (each block's, its list items', @graph's and
mainEntity's), as a browser's JSON reader would read them, and what their types say
(an article, one product)."""

# Annotations evaluated, not text: see core/observation.py.
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from sitemapd.fingerprint.decode import declared_encoding, detected

_LD_JSON = re.compile(
    rb"<script\b[^>]*?\btype\s*=\s*[\"']?application/ld\+json\b[^>]*>(.*?)</script\s*>",
    re.IGNORECASE | re.DOTALL,
)
# Real pages nest a few levels (@graph, mainEntity); the bound stops hostile nesting.
_LD_MAX_DEPTH = 8
# A JSON escape of half a surrogate pair, and a code point that is one once decoded.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# schema.org article-like types whose names do not end in "Article".
_POSTING_TYPES = {"BlogPosting", "LiveBlogPosting", "SocialMediaPosting", "DiscussionForumPosting"}
# schema.org types of a thing for sale: a page about one is a product page, whatever lists
# of other products it shows.
_PRODUCT_TYPES = {
    "Product",
    "ProductGroup",
    "ProductModel",
    "IndividualProduct",
    "SomeProducts",
    "Vehicle",
    "Car",
    "Motorcycle",
}


def ld_objects(data: bytes, whole: bytes | None = None) -> list[dict[str, object]]:
    """Return the objects of the page's JSON-LD (each block's, its list items', @graph's
    and mainEntity's), in document order; `whole`, the document `data` begins (its
    head), is what a charset is detected in."""
    if b"ld+json" not in data:
        return []
    found: list[dict[str, object]] = []
    for block in _LD_JSON.finditer(data):
        raw = block.group(1)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # Written in the page's legacy charset: the one it declares, else the one its
            # text is detected in (as the page is decoded).
            codec = declared_encoding(data) or detected(data if whole is None else whole)
            text = raw.decode(codec, "replace")
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if _SURROGATE_ESCAPE.search(text):
            document = _whole_characters(document)
        found.extend(_ld_nodes(document, 0))
    return found


def _whole_characters(document: object) -> object:
    """Return the JSON value `document` with every lone surrogate in its strings (an
    escape such as `\\ud800` with no pair: no character, and no UTF-8 for the ledger or
    the feeds) replaced by U+FFFD, as a browser shows it."""
    # A stack, not recursion: JSON nests as deep as json.loads lets it.
    root: list[object] = [document]
    stack: list[list[object] | dict[str, object]] = [root]
    while stack:
        holder = stack.pop()
        keys: Iterable[Any] = range(len(holder)) if isinstance(holder, list) else list(holder)
        for key in keys:
            value = holder[key]
            if isinstance(value, str):
                holder[key] = _LONE_SURROGATE.sub("\ufffd", value)
            elif isinstance(value, list | dict):
                stack.append(value)
        if isinstance(holder, dict):
            for key in [k for k in holder if _LONE_SURROGATE.search(k)]:
                holder[_LONE_SURROGATE.sub("\ufffd", key)] = holder.pop(key)
    return root[0]


def ld_articles(data: bytes, whole: bytes | None = None) -> list[dict[str, object]]:
    """Return the schema.org article objects of the page's JSON-LD, in document order."""
    return [node for node in ld_objects(data, whole) if is_article(node)]


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


def is_article(node: dict[str, object]) -> bool:
    """True when a JSON-LD object's `@type` (a string or a list) names an article type."""
    return any(t.endswith("Article") or t in _POSTING_TYPES for t in _types(node))


def is_product(node: dict[str, object]) -> bool:
    """True when a JSON-LD object's `@type` names a product (an offer's object), not a
    list of them."""
    return any(t in _PRODUCT_TYPES for t in _types(node))


def one_product(objects: list[dict[str, object]]) -> bool:
    """True when the JSON-LD `objects` of a page are about one thing for sale, not a
    category's list of them (each its own object)."""
    return len({str(o.get("name")) for o in objects if is_product(o)}) == 1


def _types(node: dict[str, object]) -> Iterator[str]:
    """Yield the short names of a JSON-LD object's types: "NewsArticle" of
    "schema:NewsArticle" and of a full schema.org URL."""
    types = node.get("@type")
    for name in types if isinstance(types, list) else [types]:
        if isinstance(name, str):
            yield name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
