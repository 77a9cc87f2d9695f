"""Public sets of real pages for the lastmod-truth benchmark, read from `bench/work/`.

None is part of this repository; each comes from a public repository, extracted into
the folder named:

- `aeb/`: 181 news articles, scrapinghub/article-extraction-benchmark (`html/`,
  `ground-truth.json`); truth: each page's `articleBody`.
- `readability/`: 130 pages of many kinds, mozilla/readability (`test/test-pages/`);
  truth: `expected.html`.
- `trafilatura/`: 923 web pages of many kinds and languages, adbar/trafilatura
  (`tests/eval/`, `tests/evaldata.json`); truth: sentences the content holds.
- `postlight/`: 171 news and blog pages, postlight/parser (`fixtures/`); no truth: the
  page's structure decides, as in `sitemapd drill`.
- `htmldate/`: 200 pages of many kinds and languages (English, Spanish, Portuguese,
  Russian, French, Japanese, Arabic...), adbar/htmldate (`tests/test_set/`); no truth, as
  for postlight. The set was added after the rest was tuned, measured once before any
  further change, and none of its pages was looked at. (htmldate's `tests/eval/` is
  left out: most of it is trafilatura's `tests/eval/` again.)
- `cleaneval/`: 681 pages of every kind from 2007 (blogs, forums, shops, lists,
  institutional and personal pages, in English), CleanEval's final test set as
  j-szulc/html-cleaning-dataset-merged mirrors it (`cleaneval-final/`: `input/N.html`,
  `GoldStandard/N.txt`); truth: the hand-cleaned text, its `<p>`, `<h>`, `<l>` marks and
  URL line left out. Added, like htmldate, measured once before and once after a round
  of changes, none of its pages looked at in between.
- `fundus/`: 258 modern news article pages from about 200 publishers in about 40
  countries, flairNLP/fundus (`tests/resources/parser/test_data/<country>/`,
  `<Publisher>_<date>.html.gz` beside `<Publisher>.json`); truth: the title, summary,
  section headlines and paragraphs of the parser version whose paragraphs the page
  holds (a page none matches well is left out).
- `listpages/`: 290 pages, among them homes, section, tag, category and archive pages:
  the pages crawlers' and extractors' tests saved, adbar/htmldate (`tests/cache/` into
  `htmldate/`), adbar/trafilatura (`tests/cache/`, `tests/resources/` into
  `trafilatura/`) and AndyTheFactory/newspaper4k (`tests/data/html/*_main_site.html`
  into `newspaper4k/`); and blogs whose built site (Hugo, Jekyll, Hexo) is committed
  to GitHub, a few list pages each (the home, its second page, a tag or category page,
  the archive, from the last commit that holds the built site) under
  `sites/<owner>_<repository>/`, a site's pages all in one half. No
  truth, as for postlight; a page two tests saved alike is read once.
- `modern/`: 1000 pages of 2025-2026 of every kind (articles, forums, services,
  products, documentation, listings, collections), tiptopjaw/web-content-extraction-
  benchmark (`release/html/NNNN.html.gz`, `benchmark/ground-truth/NNNN.json`); truth:
  the title and `main_content`, its Markdown marks left out and quotes and dashes read
  plain (the annotation writes straight quotes for a page's curly ones). A page's kind
  is the annotation's `page_type`. Added, measured once before any change of its round.
- `products/`: 140 product pages of shops in many countries,
  scrapinghub/product-extraction-benchmark (`dataset/html/*.html.gz`,
  `dataset/ground-truth.json`, which names prices and SKUs, no text); no truth, as for
  postlight. Added with `modern/`.

Each set is split by a hash of the page's name (of its site's, where one site gives
several pages: listpages' blogs, modern's and products' hosts): one half tunes, the
other is held out, never looked at while tuning; `postlight/` is held out whole.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

from sitemapd.drill.structure import PROSE_LINKS, never_content, page_content
from sitemapd.drill.text import Element, is_prose, link_share, normal, text_of
from sitemapd.fingerprint.decode import decoded

WORK = Path(__file__).resolve().parent / "work"
Oracle = Callable[[Element], list[Element]]
_SPACE = re.compile(r"\s+")
# Characters of a block that the ground truth holds for it to be content, prose or not.
_HELD = 40
# CleanEval's marks of paragraphs, headings and list items, and its first line.
_GOLD_MARKS = re.compile(r"<[phl]>|^URL:.*$", re.M)
_BLOCKS = ("p", "blockquote", "pre", "dd", "li", "td", "div", "h2", "h3", "h4")
# Markdown's marks at a line's start (headings, bullets, quotes), emphasis, tables' bars
# and rules. An ordered item's number stays: a heading's "1." is often the page's text.
_MARKDOWN = re.compile(r"^[ \t|:-]*-{3}[ \t|:-]*$|^[ \t]*(?:#+|[*+>-])[ \t]+|\*\*|__|\|", re.M)
# Typography a writer types plain: curly quotes, primes, dashes, the non-breaking hyphen.
_PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2033": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2011": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)


def squashed(text: str) -> str:
    """Return `text` without whitespace: where a ground truth and a page agree on words
    but not on the spaces between them."""
    return _SPACE.sub("", text)


@dataclass
class Sample:
    """A real page and how its content is known."""

    name: str
    data: bytes
    oracle: Oracle
    # The pages of one site share a template and go to one half: the site's name.
    site: str = ""
    # The kind of page a set's annotation names (article, forum, listing...), if any.
    kind: str = ""

    @property
    def held_out(self) -> bool:
        """True for the pages kept aside from tuning."""
        key = self.site or self.name
        return hashlib.blake2b(key.encode(), digest_size=2).digest()[1] % 2 == 1


@dataclass(frozen=True)
class Truth:
    """An oracle naming the page's blocks whose text the ground truth `body` holds,
    squashed (a class, not a closure: samples go to worker processes)."""

    body: str
    # Whether a block's typography is read plain, as the truth was written.
    plain: bool = False

    def __call__(self, tree: Element) -> list[Element]:
        body = self.body
        found: list[Element] = []
        chosen: set[Element] = set()
        never = never_content(tree)
        for element in tree.iter(*_BLOCKS):
            if any(a in chosen or a in never for a in (element, *element.iterancestors())):
                continue
            text = text_of(element)
            # Prose the truth holds, and whatever else it holds: a list of links in the
            # article is content too (edits go to its prose alone).
            held = squashed(text.translate(_PLAIN) if self.plain else text)
            if held in body and (
                len(held) >= _HELD or (is_prose(text) and link_share(element) < PROSE_LINKS)
            ):
                found.append(element)
                chosen.add(element)
        return found


@dataclass(frozen=True)
class Snippets:
    """An oracle naming the page's innermost blocks that hold a sentence of `holds`."""

    holds: tuple[str, ...]

    def __call__(self, tree: Element) -> list[Element]:
        wanted = [squashed(s) for s in self.holds if len(normal(s)) >= 12]
        found = []
        never = never_content(tree)
        for element in tree.iter(*_BLOCKS):
            if any(a in never for a in (element, *element.iterancestors())):
                continue
            text = squashed(text_of(element))
            if not any(s in text for s in wanted):
                continue
            if any(
                s in squashed(text_of(c))
                for c in element.iter(*_BLOCKS)
                if c is not element
                for s in wanted
            ):
                continue
            found.append(element)
        return found


def aeb() -> Iterator[Sample]:
    base = WORK / "aeb"
    if not (base / "ground-truth.json").exists():
        return
    ground = json.loads((base / "ground-truth.json").read_text())
    for path in sorted((base / "html").glob("*.html.gz")):
        key = path.name.split(".")[0]
        body = squashed(ground[key]["articleBody"])
        yield Sample(f"aeb/{key[:12]}", gzip.decompress(path.read_bytes()), Truth(body))


def readability() -> Iterator[Sample]:
    base = WORK / "readability" / "test" / "test-pages"
    for folder in sorted(base.glob("*")) if base.exists() else []:
        source, expected = folder / "source.html", folder / "expected.html"
        if not (source.exists() and expected.exists()):
            continue
        try:
            body = text_of(lxml.html.document_fromstring(expected.read_text()))
        except (etree.ParserError, ValueError):
            continue
        yield Sample(f"readability/{folder.name}", source.read_bytes(), Truth(squashed(body)))


def trafilatura() -> Iterator[Sample]:
    base = WORK / "trafilatura" / "tests"
    if not (base / "evaldata.json").exists():
        return
    for entry in json.loads((base / "evaldata.json").read_text()).values():
        path = base / "eval" / entry["file"]
        if path.exists():
            yield Sample(
                f"trafilatura/{entry['file'][:40]}",
                path.read_bytes(),
                Snippets(tuple(entry["with"])),
            )


def postlight() -> Iterator[Sample]:
    base = WORK / "postlight" / "fixtures"
    for path in sorted(base.glob("*.html")) if base.exists() else []:
        yield Sample(f"postlight/{path.stem}", path.read_bytes(), page_content)


def htmldate() -> Iterator[Sample]:
    base = WORK / "htmldate" / "test_set"
    for path in sorted(base.glob("*.html")) if base.exists() else []:
        yield Sample(f"htmldate/{path.stem}", path.read_bytes(), page_content)


def cleaneval() -> Iterator[Sample]:
    base = WORK / "cleaneval" / "cleaneval-final"
    for path in sorted((base / "GoldStandard").glob("*.txt")) if base.exists() else []:
        page = base / "input" / f"{path.stem}.html"
        if not page.exists():
            continue
        data = path.read_bytes()
        try:
            gold = data.decode("utf-8")
        except UnicodeDecodeError:
            gold = data.decode("cp1252", "replace")
        gold = _GOLD_MARKS.sub(" ", gold)
        yield Sample(f"cleaneval/{path.stem}", page.read_bytes(), Truth(squashed(gold)))


# Share of a parser version's paragraphs (squashed) that a page's text must hold for the
# version to be that page's truth.
_FUNDUS_MATCH = 0.8


def fundus() -> Iterator[Sample]:
    base = WORK / "fundus" / "tests" / "resources" / "parser" / "test_data"
    for path in sorted(base.glob("*/*.html.gz")) if base.exists() else []:
        truths = path.parent / f"{path.name.split('_')[0]}.json"
        if not truths.exists():
            continue
        data = gzip.decompress(path.read_bytes())
        text = squashed(text_of(lxml.html.document_fromstring(decoded(data)[0])))
        best = max(
            (_fundus_truth(version) for version in json.loads(truths.read_text()).values()),
            key=lambda truth: _held_share(truth[1], text),
            default=None,
        )
        if best is not None and _held_share(best[1], text) >= _FUNDUS_MATCH:
            name = f"fundus/{path.parent.name}/{path.name.split('.')[0]}"
            yield Sample(name, data, Truth(best[0]))


def _fundus_truth(version: dict[str, Any]) -> tuple[str, list[str]]:
    """Return a fundus parser version's text, squashed, and its paragraphs."""
    body = version.get("body") or {}
    paragraphs = [p for s in body.get("sections", []) for p in s.get("paragraphs", [])]
    parts = [
        version.get("title") or "",
        *body.get("summary", []),
        *(h for s in body.get("sections", []) for h in s.get("headline", [])),
        *paragraphs,
    ]
    return squashed("".join(parts)), [squashed(p) for p in paragraphs if p.strip()]


def _held_share(paragraphs: list[str], text: str) -> float:
    return sum(p in text for p in paragraphs) / len(paragraphs) if paragraphs else 0.0


def listpages() -> Iterator[Sample]:
    base = WORK / "listpages"
    seen: set[bytes] = set()
    for path in sorted(base.glob("**/*.htm*")) if base.exists() else []:
        data = path.read_bytes()
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest in seen:
            continue
        seen.add(digest)
        folder = path.relative_to(base).parent
        name = f"listpages/{folder.as_posix()}/{path.stem}"
        site = f"listpages/{folder.as_posix()}" if folder.parts[0] == "sites" else ""
        yield Sample(name, data, page_content, site)


def modern() -> Iterator[Sample]:
    base = WORK / "modern"
    for path in sorted((base / "benchmark" / "ground-truth").glob("*.json")):
        page = base / "release" / "html" / f"{path.stem}.html.gz"
        if not page.exists():
            continue
        entry = json.loads(path.read_text())
        truth = entry["ground_truth"]
        body = _MARKDOWN.sub("", f"{truth['title']}\n{truth['main_content']}")
        kind = entry["_internal"]["page_type"]["primary"]
        yield Sample(
            f"modern/{path.stem}",
            gzip.decompress(page.read_bytes()),
            Truth(squashed(body.translate(_PLAIN)), plain=True),
            f"modern/{urlsplit(entry['url']).hostname}",
            {"blog": "article"}.get(kind, kind),
        )


def products() -> Iterator[Sample]:
    base = WORK / "products" / "dataset"
    if not (base / "ground-truth.json").exists():
        return
    for key, entry in sorted(json.loads((base / "ground-truth.json").read_text()).items()):
        page = base / "html" / f"{key}.html.gz"
        if page.exists():
            site = f"products/{urlsplit(entry['url']).hostname}"
            yield Sample(
                f"products/{key[:12]}", gzip.decompress(page.read_bytes()), page_content, site
            )


CORPORA: dict[str, Callable[[], Iterator[Sample]]] = {
    "aeb": aeb,
    "readability": readability,
    "trafilatura": trafilatura,
    "postlight": postlight,
    "htmldate": htmldate,
    "cleaneval": cleaneval,
    "fundus": fundus,
    "listpages": listpages,
    "modern": modern,
    "products": products,
}
# Held out whole: never looked at while tuning.
HELD_OUT = {"postlight"}
