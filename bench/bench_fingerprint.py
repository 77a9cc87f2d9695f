"""Benchmark the significant-change fingerprint and print two tables.

    python bench/bench_fingerprint.py [--pages 600]

Throughput: `sitemapd build` over generated news pages of about 170 KB (four template
styles): a first scan, a re-scan after a site-wide template change (every page's boxes,
counters and assets new), and a touch-only re-scan. Truth: how many lastmods move when
nothing but the template changed (false moves) and how many stay when an article was
edited (missed moves), on generated sites and, when `bench/work/aeb/` holds the
article-extraction-benchmark pages (html/*.html.gz and ground-truth.json, not part of
this repository), on those real pages mutated as a CMS would.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import lxml.html
from lxml import etree

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from corpora import CORPORA, HELD_OUT, Sample  # noqa: E402
from sitegen import STYLES, Site, new_heavy_site  # noqa: E402

from sitemapd.drill.run import Report, drill, rewhitespace  # noqa: E402
from sitemapd.fingerprint import Settings, TemplateMemory  # noqa: E402
from sitemapd.fingerprint.decode import decoded  # noqa: E402
from sitemapd.sources.pages import read_file  # noqa: E402

WORK = HERE / "work" / "fingerprint"
AEB = HERE / "work" / "aeb"
CONFIG = """[site]
base_url = "https://example.com/"
output_dir = "out"
state_dir = "state"
[[source]]
type = "directory"
root = "site"
"""


def build(base: Path) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(base / "sitemapd.toml")],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, result.stdout.strip().splitlines()[-1]


def throughput(pages: int) -> list[tuple[str, str, str]]:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    (WORK / "sitemapd.toml").write_text(CONFIG)
    sites = [new_heavy_site(style, pages // len(STYLES), seed=n) for n, style in enumerate(STYLES)]
    roots = [WORK / "site" / style for style in STYLES]

    def deploy() -> None:
        for site, root in zip(sites, roots, strict=True):
            site.write(root)

    deploy()
    size = sum(p.stat().st_size for p in (WORK / "site").rglob("*.html"))
    count = sum(1 for _ in (WORK / "site").rglob("*.html"))
    rows = []
    seconds, line = build(WORK)
    rows.append(("first scan", f"{count / seconds:,.0f} pages/s ({seconds:.1f} s)", line))
    deploy()
    seconds, line = build(WORK)
    rows.append(("after a site-wide template change", f"{count / seconds:,.0f} pages/s", line))
    for path in (WORK / "site").rglob("*.html"):
        path.touch()
    seconds, line = build(WORK)
    rows.append(("touch-only re-scan", f"{seconds:.2f} s", line))
    print(f"{count} pages, {size / count / 1024:.0f} KiB each on average")
    return rows


def generated_truth(pages: int) -> list[tuple[str, str, str]]:
    """Fingerprint generated sites in every style through render rounds; count moves."""
    rows = []
    for n, style in enumerate(STYLES):
        site = Site(style, seed=100 + n)
        rng = random.Random(n)
        for _ in range(pages):
            site.add_story(rng)
        stored = _digests(site)
        false = missed = edits = renders = 0
        for _ in range(5):
            site.add_story(rng)
            now = _digests(site)
            false += sum(now[s] != d for s, d in stored.items())
            renders += len(stored)
            stored = now
            edited = rng.sample(site.stories[:-1], 3)
            edited[0].paragraphs[1] = edited[0].paragraphs[1].replace(" ", " new ", 1)
            edited[1].paragraphs.append("Correction: an earlier version misstated a date.")
            edited[2].headline += " (updated)"
            now = _digests(site)
            slugs = {s.slug for s in edited}
            false += sum(now[s] != stored[s] for s in stored if s not in slugs)
            missed += sum(now[s] == stored[s] for s in slugs)
            renders += len(stored) - 3
            edits += 3
            stored = now
        rows.append((style, f"{false / renders:.1%} ({false}/{renders})", f"{missed}/{edits}"))
    return rows


def _digests(site: Site) -> dict[str, str]:
    """Render `site` once and return each story's fingerprint, the template learned."""
    from sitegen import page

    site.render += 1
    rng = random.Random(site.render)
    for story in site.stories:
        story.comments += rng.randint(0, 3)
    reads = {
        s.slug: read_file("p.html", page(site, s, rng).encode(), Settings()) for s in site.stories
    }
    memory = site.__dict__.setdefault("memory", TemplateMemory())
    memory.learn([r.reading.shapes() for r in reads.values() if r.reading is not None])
    return {slug: r.digest(memory) for slug, r in reads.items()}


# Real pages: each mutated alone, as one page of its own site.


def _digest(data: bytes) -> str:
    return read_file("p.html", data, Settings()).digest(TemplateMemory())


def _norm(text: str) -> str:
    return " ".join(text.split())


def _article_paragraphs(tree: etree._Element, body: str) -> list[etree._Element]:
    return [
        p
        for p in tree.iter("p")
        if len(_norm(p.text_content()).split()) >= 8 and _norm(p.text_content()) in body
    ]


def _rotate_lists(tree: etree._Element, body: str) -> bool:
    inside = {a for p in _article_paragraphs(tree, body) for a in p.iterancestors()}
    done = False
    for ul in list(tree.iter("ul", "ol")):
        items = [li for li in ul if li.tag == "li" and li.find(".//a") is not None]
        if len(items) < 3 or ul in inside or _norm(ul.text_content())[:60] in body:
            continue
        ul.remove(items[0])
        ul.append(items[0])
        new = copy.deepcopy(items[1])
        for a in new.iter("a"):
            a.set("href", "/news/a-new-story")
            a.text = "Breaking: a new story headline appears in the list"
            for child in list(a):
                a.remove(child)
        ul.insert(0, new)
        done = True
    return done


def _cache_busters(tree: etree._Element, body: str) -> bool:
    for element in tree.iter("script", "link"):
        rels = set((element.get("rel") or "").lower().split())
        if "ld+json" in (element.get("type") or "") or (
            element.tag == "link" and not rels & {"stylesheet", "preload", "icon"}
        ):
            continue
        for attr in ("src", "href"):
            if element.get(attr):
                value = element.get(attr, "")
                element.set(attr, value + ("&" if "?" in value else "?") + "v=98765")
        if element.get("nonce"):
            element.set("nonce", "n0nce")
        if element.tag == "script" and element.text and "json" not in (element.get("type") or ""):
            element.text += "\nvar buildId = 'b-99';"
    for element in tree.iter("input"):
        if (element.get("type") or "").lower() == "hidden":
            element.set("value", "token-99")
    return True


def _word(tree: etree._Element, body: str) -> bool:
    paragraphs = _article_paragraphs(tree, body)
    if not paragraphs:
        return False
    for node in paragraphs[len(paragraphs) // 2].iter():
        if node.text and len(node.text.split()) >= 3:
            words = node.text.split()
            words[1] += "s"
            node.text = " ".join(words)
            return True
    return False


def _append(tree: etree._Element, body: str) -> bool:
    paragraphs = _article_paragraphs(tree, body)
    if not paragraphs:
        return False
    correction = etree.Element("p")
    correction.text = "Correction: an earlier version of this article misstated a name."
    paragraphs[-1].addnext(correction)
    return True


def _retitle(*tags: str) -> Callable[[etree._Element, str], bool]:
    def mutate(tree: etree._Element, body: str) -> bool:
        found = False
        for element in tree.iter(*tags):
            element.text = (element.text or "") + " (updated)"
            found = True
        return found

    return mutate


def _og_title(tree: etree._Element, body: str) -> bool:
    for meta in tree.iter("meta"):
        if meta.get("property") == "og:title":
            meta.set("content", meta.get("content", "") + " (updated)")
            return True
    return False


MUTATIONS: dict[str, tuple[Callable[[etree._Element, str], bool], bool]] = {
    "link lists outside the article rotate": (_rotate_lists, False),
    "cache-busters, nonces, tokens": (_cache_busters, False),
    "one word of a paragraph": (_word, True),
    "correction appended": (_append, True),
    "headline (title, h1)": (_retitle("title", "h1"), True),
    "<title> alone": (_retitle("title"), True),
    "<h1> alone": (_retitle("h1"), True),
    "og:title alone": (_og_title, True),
}


def real_truth() -> list[tuple[str, str, str]]:
    truth = json.loads((AEB / "ground-truth.json").read_text())
    counts = {name: [0, 0] for name in [*MUTATIONS, "whitespace between tags"]}
    for path in sorted((AEB / "html").glob("*.html.gz")):
        raw = gzip.decompress(path.read_bytes())
        body = _norm(truth[path.name.split(".")[0]]["articleBody"])
        text, _ = decoded(raw)
        base = lxml.html.tostring(lxml.html.document_fromstring(text), encoding="unicode")
        before = _digest(base.encode())
        for name, (mutate, _) in MUTATIONS.items():
            tree = lxml.html.document_fromstring(text)
            if mutate(tree, body):
                counts[name][0] += 1
                after = lxml.html.tostring(tree, encoding="unicode").encode()
                counts[name][1] += _digest(after) != before
        counts["whitespace between tags"][0] += 1
        counts["whitespace between tags"][1] += _digest(rewhitespace(base).encode()) != before
    rows = []
    for name, (total, moved) in counts.items():
        should = MUTATIONS.get(name, (None, False))[1]
        rows.append(
            (
                name,
                f"{moved / max(total, 1):.1%} moved ({moved}/{total})",
                "should move" if should else "should not",
            )
        )
    return rows


def _drilled(sample: Sample) -> Report:
    return drill([(sample.name, sample.data)], Settings(), TemplateMemory(), sample.oracle)


def corpora_truth(
    tuning_only: bool = False, only: set[str] | None = None
) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Drill every page of the public corpora under `bench/work/` (those named in `only`
    when given; one page a site, no template learned), and return a table per corpus and
    half: tuning, held out (not when `tuning_only`)."""
    from multiprocessing import Pool

    tables = []
    for name, load in CORPORA.items():
        if only and name not in only:
            continue
        samples = list(load())
        if not samples or (tuning_only and name in HELD_OUT):
            continue
        halves = (
            {"held out": samples}
            if name in HELD_OUT
            else {
                "tuning half": [s for s in samples if not s.held_out],
                "held-out half": [s for s in samples if s.held_out],
            }
        )
        for half, chosen in halves.items():
            if tuning_only and half != "tuning half":
                continue
            with Pool(2) as pool:
                reports = pool.map(_drilled, chosen, chunksize=4)
            tables.append((f"{name}, {half}, {len(chosen)} pages", _totals(reports)))
            # A set that names its pages' kinds gets a table per kind too.
            kinds = sorted({s.kind for s in chosen if s.kind})
            for kind in kinds if len(kinds) > 1 else ():
                mine = [r for s, r in zip(chosen, reports, strict=True) if s.kind == kind]
                tables.append((f"{name}, {half}, {kind}, {len(mine)} pages", _totals(mine)))
    return tables


def _totals(reports: list[Report]) -> list[tuple[str, str, str]]:
    """Return a row per change: how many of the pages it was applied to moved."""
    totals: dict[str, list[int | bool]] = {}
    for report in reports:
        for row in report.rows.values():
            total = totals.setdefault(row.name, [row.real, 0, 0])
            total[1] += row.applied
            total[2] += row.moved
    return [
        (
            change,
            f"{moved / max(applied, 1):.1%} moved ({moved}/{applied})",
            "should move" if real else "should not",
        )
        for change, (real, applied, moved) in totals.items()
    ]


# The chardet project's test files (`tests/` of chardet/chardet, extracted under
# bench/work/chardet/): real pages and feeds by folder of charset, and the codec each is.
CHARDET = HERE / "work" / "chardet" / "tests"
CHARSETS = {
    "EUC-JP": "euc_jp",
    "SHIFT_JIS": "shift_jis",
    "CP932": "cp932",
    "iso-2022-jp": "iso2022_jp",
    "GB2312": "gb18030",
    "Big5": "big5hkscs",
    "EUC-KR": "cp949",
    "KOI8-R": "koi8_r",
    "windows-1251-russian": "cp1251",
}
_DECLARATION = re.compile(rb"(charset|encoding)\s*=", re.I)


def charset_truth() -> list[tuple[str, str, str]]:
    """Decode each chardet test file with its declaration taken out; count those read
    as their own codec reads them (or as its WHATWG superset)."""
    rows = []
    for folder, codec in CHARSETS.items():
        right = total = 0
        for path in sorted((CHARDET / folder).iterdir()):
            data = _DECLARATION.sub(b"x-removed=", path.read_bytes())
            text, _ = decoded(data)
            readings = {data.decode(codec, "replace")}
            readings.add(data.decode({"shift_jis": "cp932"}.get(codec, codec), "replace"))
            right += text in readings
            total += 1
        rows.append((folder, f"{right}/{total}", codec))
    return rows


def table(title: str, header: tuple[str, str, str], rows: list[tuple[str, str, str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    print(f"\n{title}\n")
    for row in [header, ("-" * widths[0], "-" * widths[1], "-" * widths[2]), *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument(
        "--only",
        choices=("throughput", "corpora"),
        help="print the throughput table alone, or the public corpora's tables alone",
    )
    parser.add_argument(
        "--tuning-only",
        action="store_true",
        help="drill the tuning halves alone: the held-out pages stay unread while tuning",
    )
    parser.add_argument(
        "--corpus",
        action="append",
        choices=sorted(CORPORA),
        help="drill this public corpus alone (repeatable)",
    )
    args = parser.parse_args()
    if args.only in (None, "throughput"):
        table(
            "fingerprint throughput, sitemapd build",
            ("measure", "result", "build said"),
            throughput(args.pages),
        )
    if args.only is None:
        quality()
    if args.only in (None, "corpora"):
        for title, rows in corpora_truth(args.tuning_only, set(args.corpus or ())):
            table(
                f"lastmod truth by `sitemapd drill`'s changes: {title}",
                ("change", "pages moved", "expected"),
                rows,
            )


def quality() -> None:
    """Print the truth tables of generated sites, aeb's previous harness and charsets."""
    table(
        "lastmod truth, generated sites (5 renders, 3 edits each)",
        ("template style", "false moves", "missed edits"),
        generated_truth(200),
    )
    if (AEB / "ground-truth.json").exists():
        table(
            "lastmod truth, real article pages (bench/work/aeb)",
            ("change", "pages moved", "expected"),
            real_truth(),
        )
    else:
        print("\n(real-page truth skipped: no bench/work/aeb corpus)")
    if CHARDET.exists():
        table(
            "undeclared charsets, chardet's test files (declarations taken out)",
            ("folder", "decoded right", "codec"),
            charset_truth(),
        )


if __name__ == "__main__":
    main()
