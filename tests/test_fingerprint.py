"""The significant-change fingerprint, through the real CLI on generated sites.

Each site is re-rendered as a CMS does on every publish (new "latest" and "most read"
boxes, comment counts, render times, cache-busters, nonces, whitespace); the tests
count which URLs the ledger records as changed and compare with the articles edited:
false moves and missed moves as rates, both zero on these templates.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import feedparser
import pytest
from conftest import Site, page, published, snapshot
from daemon_harness import start
from endpoints import Endpoint
from hypothesis import given, settings
from hypothesis import strategies as st
from sitegen import STYLES, new_site
from test_fingerprint_extract import (
    archive_page,
    bio_page,
    lead_photo_page,
    node_list_page,
    wrapped_list_page,
)

from sitemapd.fingerprint import (
    FINGERPRINT_VERSION,
    Reading,
    Settings,
    TemplateMemory,
    parse_html,
)
from sitemapd.sources.content import read_page
from sitemapd.sources.pages import Job, read_file

PAGES = 24


def change_counts(site: Site) -> dict[str, int]:
    """Return `{loc: change_count}` from the ledger."""
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        return dict(conn.execute("SELECT loc, change_count FROM urls"))
    finally:
        conn.close()


def moved(site: Site, before: dict[str, int]) -> set[str]:
    """Return the URLs whose content changed since `before` (slugs)."""
    after = change_counts(site)
    return {
        loc.rstrip("/").rsplit("/", 1)[-1].removesuffix(".html")
        for loc, count in after.items()
        if count != before.get(loc, count)
    }


def summary(site: Site) -> str:
    return site.build().stdout


@pytest.mark.parametrize("style", STYLES)
def test_rerendering_moves_only_the_edited_articles(site: Site, style: str) -> None:
    news = new_site(style, PAGES, seed=STYLES.index(style) + 1)
    news.write(site.root)
    assert f"{PAGES} new" in summary(site)
    rng = random.Random(7)
    false_moves = missed = 0
    for round_ in range(2):
        # A new story: every page's "latest" box, counts and assets change.
        before = change_counts(site)
        news.add_story(rng)
        news.write(site.root)
        out = summary(site)
        assert "1 new, 0 updated" in out, out
        assert not moved(site, before)
        # Edits: one word, an appended correction, a new headline; everything re-rendered.
        before = change_counts(site)
        word, appended, headline = rng.sample(news.stories[:-1], 3)
        word.paragraphs[2] = word.paragraphs[2].replace(" ", " corrected ", 1)
        appended.paragraphs.append(f"Correction {round_}: an earlier version misspelt a name.")
        headline.headline += " (updated)"
        news.write(site.root)
        summary(site)
        edited = {word.slug, appended.slug, headline.slug}
        found = moved(site, before)
        false_moves += len(found - edited)
        missed += len(edited - found)
    total = 2 * (PAGES + 2)
    assert (false_moves / total, missed / 6) == (0.0, 0.0), style


def test_a_legacy_template_with_no_landmarks_moves_nothing_per_new_story(site: Site) -> None:
    news = new_site("divsoup", 300, seed=11)
    news.write(site.root)
    summary(site)
    rng = random.Random(3)
    before = change_counts(site)
    news.add_story(rng)
    news.stories[10].paragraphs[0] += " A detail was added."
    news.stories[200].paragraphs[-1] = news.stories[200].paragraphs[-1].replace("said", "told")
    news.write(site.root)
    out = summary(site)
    assert "1 new, 2 updated" in out, out
    assert moved(site, before) == {"story-11", "story-201"}


def docs_page(title: str, nav: list[str], text: str) -> str:
    links = "".join(f'<li class="toctree-l1"><a href="/{n}.html">{n.title()}</a></li>' for n in nav)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} - Docs</title>'
        '<link rel="stylesheet" href="_static/x.css?digest=abc"></head><body>'
        f'<div class="wy-nav-side"><div class="wy-menu"><ul>{links}</ul></div></div>'
        f'<div class="wy-nav-content"><div class="rst-content"><div role="main" class="document">'
        f"<h1>{title}</h1><p>{text}</p><p>More about {title}, with details and examples.</p>"
        "</div></div></div>"
        "<footer><p>Built with Sphinx using a theme provided by Read the Docs.</p></footer>"
        "</body></html>"
    )


def test_a_docs_site_navigation_rename_moves_nothing_and_one_edit_one_page(site: Site) -> None:
    names = [f"page{n}" for n in range(23)]
    texts = {n: f"The {n} chapter explains how the tool handles case {n} in depth." for n in names}

    def deploy(nav: list[str]) -> None:
        for name in names:
            site.write(f"{name}.html", docs_page(name, nav, texts[name]))

    deploy(names)
    summary(site)
    before = change_counts(site)
    deploy([*names[:5], "renamed-guide", *names[6:]])
    assert "0 updated" in summary(site)
    assert not moved(site, before)
    texts["page7"] = texts["page7"].replace("explains", "describes")
    deploy([*names[:5], "renamed-guide", *names[6:]])
    summary(site)
    assert moved(site, before) == {"page7"}


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("ignore", 'ignore = ["<!-- build [0-9]+ -->"]'),
        ("selector", 'content_selector = "div.txt"'),
        ("page", 'fingerprint = "page"'),
    ],
)
def test_changing_fingerprint_settings_moves_no_lastmod(
    site: Site, setting: str, value: str
) -> None:
    news = new_site("divsoup", 30, seed=5)
    news.write(site.root)
    summary(site)
    urls = site.urls()
    before = change_counts(site)
    site.configure(source=value)
    out = summary(site)
    assert "0 updated" in out, out
    assert site.urls() == urls
    assert not moved(site, before)
    # Settings changed and a page edited in the same deploy: that page moves, alone.
    site.configure()
    news.stories[3].paragraphs[1] += " One more sentence."
    (site.root / "story-4.html").write_text(
        (site.root / "story-4.html")
        .read_text()
        .replace(news.stories[3].paragraphs[1][:-20], news.stories[3].paragraphs[1][:-20] + " x")
    )
    summary(site)
    assert moved(site, before) == {"story-4"}


def test_an_upgrade_of_the_fingerprint_code_moves_no_lastmod(site: Site) -> None:
    news = new_site("semantic", 20, seed=9)
    news.write(site.root)
    summary(site)
    urls = site.urls()
    before = change_counts(site)
    # As a ledger written by an earlier sitemapd: whole-page hashes, no settings recorded.
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    with conn:
        for (loc,) in conn.execute("SELECT loc FROM urls").fetchall():
            data = (site.root / (loc.rsplit("/", 1)[-1])).read_bytes()
            from sitemapd.fingerprint import bytes_digest

            conn.execute(
                "UPDATE urls SET content_hash = ?, bytes_hash = NULL, fp_settings = NULL "
                "WHERE loc = ?",
                (bytes_digest(data), loc),
            )
        conn.execute("DELETE FROM cursors WHERE name LIKE 'facts:%'")
    conn.close()
    for path in site.root.iterdir():
        path.touch()
    assert "0 updated" in summary(site)
    assert site.urls() == urls
    assert not moved(site, before)


def test_a_ledger_of_the_previous_fingerprint_version_moves_nothing(site: Site) -> None:
    news = new_site("divsoup", 12, seed=6)
    news.write(site.root)
    # Pages this version reads otherwise than the ones before (an archive of dated
    # links is no longer content since version 8; the posts' linked `<h1>` are since
    # version 9, an author's bio box after the story and the caption of a photograph
    # above it since version 10, a list of posts in a wrapper named for a pager since
    # version 11, JSON-LD in the page's legacy charset since version 12): their digests
    # change with the upgrade, their lastmods do not.
    titles = [f"Column {n}" for n in range(30)]
    (site.root / "journal.html").write_text(archive_page(titles))
    heads = [f"<a href='/node/{n}'>Commission opposes decision {n}</a>" for n in range(4)]
    (site.root / "section.html").write_text(node_list_page(heads))
    bio = "Jane Roe covers the White House. Since joining the Post, she has covered trade."
    (site.root / "talks.html").write_text(bio_page(bio))
    (site.root / "envoys.html").write_text(lead_photo_page("The envoys meet in Geneva."))
    posts = [f"Notes on release {n}" for n in range(6)]
    (site.root / "notes.html").write_text(wrapped_list_page(posts))
    (site.root / "cafe.html").write_bytes(
        '<html><head><meta charset="iso-8859-1"><title>Café</title><script type='
        '"application/ld+json">{"@type": "NewsArticle", "headline": "Le café rouvre"}'
        "</script></head><body><p>Le café de la place rouvre ce matin.</p></body></html>".encode(
            "latin-1"
        )
    )
    summary(site)
    before = change_counts(site)
    # As the release before wrote it: its version's settings, and digests of its own.
    old = Settings(version=FINGERPRINT_VERSION - 1)
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    with conn:
        conn.execute(
            "INSERT INTO cursors (name, value) VALUES (?, ?)",
            (f"fingerprint:{old.key}", old.spec()),
        )
        conn.execute("UPDATE urls SET fp_settings = ?, content_hash = 'v1-digest'", (old.key,))
    conn.close()
    for path in site.root.iterdir():
        path.touch()
    assert "0 updated" in summary(site)
    assert not moved(site, before)
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    stored = {
        row
        for row in conn.execute("SELECT DISTINCT fp_settings, content_hash = 'v1-digest' FROM urls")
    }
    conn.close()
    assert stored == {(Settings().key, 0)}
    # The next edit moves its page alone; a new column in the journal's archive moves
    # nothing; a post's heading edited on the section page moves it.
    news.stories[3].paragraphs[0] += " An added sentence."
    news.write(site.root)
    (site.root / "journal.html").write_text(archive_page(["Flu", *titles[:-1]]))
    summary(site)
    assert moved(site, before) == {news.stories[3].slug}
    heads[2] += " (updated)"
    (site.root / "section.html").write_text(node_list_page(heads))
    summary(site)
    assert moved(site, before) == {news.stories[3].slug, "section"}
    # So does an edit of the author's bio.
    (site.root / "talks.html").write_text(bio_page(bio.replace("trade", "trades")))
    summary(site)
    assert moved(site, before) == {news.stories[3].slug, "section", "talks"}
    # And a new post on the home whose list a pager-named block wraps.
    (site.root / "notes.html").write_text(wrapped_list_page(["Notes on caching", *posts]))
    summary(site)
    assert moved(site, before) == {news.stories[3].slug, "section", "talks", "notes"}


def test_unchanged_bytes_are_not_parsed_again(site: Site) -> None:
    news = new_site("semantic", 5, seed=2)
    news.write(site.root)
    summary(site)
    page = site.root / "story-1.html"
    page.write_bytes(page.read_bytes())
    # A page that cannot be parsed would change the fingerprint if it were read again.
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    with conn:
        conn.execute("UPDATE urls SET content_hash = 'x' WHERE loc LIKE '%story-1.html'")
    conn.close()
    assert "0 updated" in summary(site)
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    (stored,) = conn.execute(
        "SELECT content_hash FROM urls WHERE loc LIKE '%story-1.html'"
    ).fetchone()
    conn.close()
    assert stored == "x"


def test_explain_shows_what_counts_and_the_history(site: Site) -> None:
    news = new_site("divsoup", 6, seed=4)
    news.write(site.root)
    summary(site)
    story = news.stories[0]
    out = site.cli("explain", "https://example.com/story-1.html").stdout
    assert "fingerprint:  " in out
    assert f"title: {story.headline} | Daily Example" in out
    assert story.paragraphs[0] in out
    assert "Most read" not in out.split("left out")[0]
    assert "link list" in out
    assert "content changes recorded: 0" in out
    # The site's template texts: the byline's "By A. Writer |". The comment count beside
    # it is a counter's label, left out of every page before the template is learned.
    assert re.search(r"left out as the site's template.*By A\. Writer", out, re.S)
    assert f"{news.stories[0].comments} comments" not in out
    by_file = site.cli("explain", str(site.root / "story-1.html")).stdout
    assert by_file == out
    missing = site.cli("explain", "https://example.com/nope.html", check=False)
    assert missing.returncode == 1
    assert "no file of a directory source" in missing.stderr
    # Files the source never publishes are said to be so, not "not in the ledger yet".
    site.write("404.html", "<html><head><title>Not found</title></head><body></body></html>")
    site.write("style.css", "body { color: black }")
    error_page = site.cli("explain", "/404.html", check=False)
    assert error_page.returncode == 1
    assert "404.html is not published: it matches an `exclude` or `error_pages`" in (
        error_page.stderr
    )
    asset = site.cli("explain", str(site.root / "style.css"), check=False)
    assert asset.returncode == 1
    assert "style.css is not a page: it matches no `include`" in asset.stderr


def test_status_counts_pages_without_main_content(site: Site) -> None:
    site.write("a.html", "<html><head><title>A</title></head><body><a href=/x>x</a></body></html>")
    site.write("b.html", new_page_text())
    summary(site)
    out = site.cli("status").stdout
    assert re.search(r"no main content: directory:\S+: 1 pages", out), out


def new_page_text() -> str:
    news = new_site("semantic", 1, seed=3)
    from sitegen import page

    return page(news, news.stories[0], random.Random(1))


@pytest.mark.parametrize(
    ("encoding", "declared"),
    [("shift_jis", False), ("euc_jp", False), ("utf-16", False), ("shift_jis", True)],
)
def test_pages_without_a_charset_are_decoded_as_browsers_do(encoding: str, declared: bool) -> None:
    title = "東京で新しい路面電車が開業、市民が歓迎"
    body = "市議会は火曜日の夜、来年度の予算案を賛成多数で可決した。" * 5
    meta = f'<meta charset="{encoding}">' if declared else ""
    text = f"<html><head>{meta}<title>{title}</title></head><body><p>{body}</p></body></html>"
    data = text.encode(encoding)
    assert read_page(data).title == title
    tree = parse_html(data)
    assert tree is not None
    reading = read_file("a.html", data, Settings()).reading
    assert reading is not None
    assert body in " ".join(reading.kept(TemplateMemory()))


def test_hostile_nesting_and_empty_pages_are_read() -> None:
    deep = "<div>" * 5000 + "<p>" + "word " * 50 + "</p>" + "</div>" * 5000
    for data in (deep.encode(), b"", b"\x00\x01", b"<html>", "<p>é</p>".encode("latin-1")):
        read = read_file("a.html", data, Settings())
        assert read.digest(TemplateMemory())


def test_the_site_template_is_learned_but_article_sentences_never_are() -> None:
    memory = TemplateMemory()
    reads = []
    for n in range(8):
        sentence = f"Article number {n} says something new today. "
        body = (
            f"<div class=main><p>{sentence * 6}</p>"
            "<p>Correction: an earlier version misspelt the mayor's name.</p>"
            f"<div><span>{n * 7} comments</span></div></div>"
        )
        reads.append(read_file("a.html", f"<html><body>{body}</body></html>".encode(), Settings()))
    memory.learn([r.reading.shapes() for r in reads if r.reading is not None])
    kept = list(reads[0].reading.kept(memory)) if reads[0].reading else []
    assert not any("comments" in text for text in kept)
    assert any(text.startswith("Correction:") for text in kept)
    assert TemplateMemory.load(memory.dump()).known == memory.known


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.tuples(st.sampled_from(["title", "h1", "ld:name"]), st.text(max_size=30))),
    texts=st.lists(
        st.tuples(st.one_of(st.none(), st.integers(0, 5)), st.text(min_size=1, max_size=90)),
        max_size=12,
    ),
    known=st.sets(st.integers(0, 5)),
)
def test_the_fingerprint_material_hashes_what_the_digest_always_took(
    parts: list[tuple[str, str]], texts: list[tuple[int | None, str]], known: set[int]
) -> None:
    # Stored fingerprints stay valid: the parts, "\x1d", then each text kept without
    # spaces and "\x1e"; texts of known template shapes go unless too little is left.
    kept = [text for key, text in texts if key is None or key not in known]
    if sum(map(len, kept)) < 140:
        kept = [text for _, text in texts]
    head = "".join(f"{label}\x1f{text}\x1e" for label, text in parts)
    body = "".join(text + "\x1e" for text in kept).replace(" ", "")
    whole = f"{head}\x1d{body}".encode("utf-8", "surrogatepass")
    memory = TemplateMemory(known)
    reading = Reading(parts, texts)
    assert reading.digest(memory) == hashlib.blake2b(whole, digest_size=16).hexdigest()
    assert reading.kept(memory) == kept
    assert reading.material().shapes == {key for key, _ in texts if key is not None}


def test_feeds_and_indexnow_hear_only_of_significant_changes(
    site: Site, endpoint: Endpoint
) -> None:
    key = "0123456789abcdef"
    site.configure(
        extra=f'[indexnow]\nkey = "{key}"\nendpoint = "{endpoint.url("/indexnow")}"\n'
        '[feed]\ntitle = "Updates"\n[daemon]\ndebounce = 0.3\n'
    )
    news = new_site("divsoup", 30, seed=21)
    news.write(site.root)
    daemon = start(site)
    try:
        daemon.wait_for_log("published: 30 new")
        rng = random.Random(5)
        story = news.add_story(rng)
        news.write(site.root)  # a deploy: every page rendered again
        endpoint.wait("/indexnow", 1)
        time.sleep(1.0)
        assert submitted(endpoint) == [f"https://example.com/{story.slug}.html"]
        entries = feedparser.parse((site.out / "atom.xml").read_bytes()).entries
        assert entries[0].link == f"https://example.com/{story.slug}.html"
        first_updated = {e.link: e.updated for e in entries[1:]}

        news.stories[4].paragraphs[2] += " A figure was corrected."
        news.write(site.root)
        endpoint.wait("/indexnow", 2)
        time.sleep(1.0)
        assert submitted(endpoint)[1:] == ["https://example.com/story-5.html"]
        entries = feedparser.parse((site.out / "atom.xml").read_bytes()).entries
        assert entries[0].link == "https://example.com/story-5.html"
        for entry in entries[1:]:
            if entry.link in first_updated:
                assert entry.updated == first_updated[entry.link], entry.link
    finally:
        assert daemon.stop() == 0


def submitted(server: Endpoint) -> list[str]:
    """Return every URL IndexNow was sent, in order."""
    return [url for r in server.seen("/indexnow") for url in r.json()["urlList"]]  # type: ignore[union-attr]


def _generate(kind: str, src: Path, out: Path, docs: dict[str, str], label: str) -> None:
    """Build a real MkDocs or Sphinx site whose fifth page's navigation label is `label`."""
    src.mkdir(parents=True, exist_ok=True)
    labels = {name: label if name == "page5" else f"Guide {name}" for name in docs}
    if kind == "mkdocs":
        (src / "docs").mkdir(exist_ok=True)
        for name, text in docs.items():
            (src / "docs" / f"{name}.md").write_text(f"# Title {name}\n\n{text}\n")
        nav = "".join(f"  - '{labels[n]}': {n}.md\n" for n in docs)
        (src / "mkdocs.yml").write_text(f"site_name: Demo\nnav:\n{nav}")
        command = ["-m", "mkdocs", "build", "-q", "-f", str(src / "mkdocs.yml"), "-d", str(out)]
    else:
        for name, text in docs.items():
            (src / f"{name}.rst").write_text(f"Title {name}\n{'=' * 20}\n\n{text}\n")
        toc = "".join(f"   {labels[n]} <{n}>\n" for n in docs)
        (src / "index.rst").write_text(f"Demo\n====\n\n.. toctree::\n\n{toc}")
        (src / "conf.py").write_text("project = 'Demo'\n")
        command = ["-m", "sphinx", "-q", "-b", "html", str(src), str(out)]
    subprocess.run([sys.executable, *command], check=True, capture_output=True)


@pytest.mark.parametrize("kind", ["mkdocs", "sphinx"])
def test_real_docs_generators(site: Site, tmp_path: Path, kind: str) -> None:
    site.configure(source='exclude = ["_static/**", "_sources/**", "search/**", "search.html"]')
    rng = random.Random(2)
    words = [
        "the",
        "tool",
        "reads",
        "config",
        "files",
        "and",
        "writes",
        "sitemaps",
        "for",
        "a",
        "site",
        "quickly",
    ]
    docs = {
        f"page{n}": " ".join(rng.choice(words) for _ in range(60)).capitalize() + "."
        for n in range(23)
    }
    _generate(kind, tmp_path / "src", site.root, docs, "Guide page5")
    summary(site)
    before = change_counts(site)
    shutil.rmtree(site.root)  # a clean rebuild: every file new, same content
    _generate(kind, tmp_path / "src", site.root, docs, "Guide page5")
    assert "0 updated" in summary(site)
    _generate(kind, tmp_path / "src", site.root, docs, "A renamed guide")
    # Sphinx's root page says nothing but its table of contents: a list page, whose items
    # are its content. No other page moves: their navigation is template.
    contents = {"example.com"} if kind == "sphinx" else set()
    assert f"{len(contents)} updated" in summary(site)
    assert moved(site, before) == contents
    docs["page7"] = docs["page7"].replace("the", "THE", 1)
    _generate(kind, tmp_path / "src", site.root, docs, "A renamed guide")
    summary(site)
    assert moved(site, before) == {"page7", *contents}


def ledger_pages(site: Site) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Return what the ledger holds of every page, and the source's template memory."""
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        return conn.execute(
            "SELECT loc, status, reason, title, lastmod, content_hash, bytes_hash, "
            "fp_settings, fp_fallback, substr(file_key, 1, instr(file_key, ':')) "
            "FROM urls ORDER BY loc"
        ).fetchall(), conn.execute(
            "SELECT value FROM cursors WHERE name LIKE 'template:%'"
        ).fetchall()
    finally:
        conn.close()


def built_twice(tmp_path: Path, write: Callable[[Path], None], **config: str) -> tuple[Site, Site]:
    """Return two sites of what `write` writes, built on one core (as `taskset` makes it,
    every page read in the process itself) and by worker processes on two cores or more."""
    (tmp_path / "one").mkdir()
    (tmp_path / "every").mkdir()
    one, every = Site(tmp_path / "one"), Site(tmp_path / "every")
    for built in (one, every):
        built.configure(**config)
        write(built.root)
        for path in built.root.rglob("*"):
            os.utime(path, (1_700_000_000, 1_700_000_000))
    single = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", "sitemapd", "build", "-c", str(one.config)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr
    every.build()
    return one, every


def written(site: Site) -> dict[str, bytes]:
    """Return `{name: bytes}` of every output file."""
    return {name: data for name, (_, _, data) in snapshot(site.out).items()}


def test_worker_processes_read_a_first_scan_as_one_process_does(tmp_path: Path) -> None:
    # Enough pages for several batches, of templates whose boxes the template memory
    # learns across batches.
    def write(root: Path) -> None:
        for n, style in enumerate(STYLES):
            new_site(style, 150, seed=n + 11).write(root / style)

    one, every = built_twice(tmp_path, write)
    pages, memory = ledger_pages(one)
    assert len(pages) == 600
    assert memory
    assert (pages, memory) == ledger_pages(every)
    assert written(one) == written(every)


def test_worker_processes_make_article_data_as_one_process_does(tmp_path: Path) -> None:
    # What the ledger records of a page besides its fingerprint is made where the page is
    # read: robots and canonical exclusions, hreflang groups, images, article dates.
    heads = [
        '<meta name="robots" content="noindex">',
        '<link rel="canonical" href="/misc/other-{n}.html">',
        '<link rel="alternate" hreflang="de" href="/de/p{n}.html">'
        '<link rel="alternate" hreflang="x-default" href="/misc/p{n}.html">',
        '<meta property="og:image" content="https://cdn.example.com/i/{n}.jpg">'
        '<meta property="og:type" content="article">'
        '<meta property="article:published_time" content="2023-11-0{day}T10:00:00Z">',
        '<base href="/elsewhere/"><meta property="og:type" content="article">',
    ]

    def write(root: Path) -> None:
        (root / "misc").mkdir()
        for n in range(300):
            head = heads[n % len(heads)].format(n=n, day=n % 9 + 1)
            lang = "de" if n % 7 == 0 else "en"
            (root / "misc" / f"p{n}.html").write_text(
                f"<!doctype html><html lang={lang}><head><title>Page {n}</title>{head}</head>"
                f"<body><h1>Page {n}</h1><p>{'word ' * (n % 50)}</p>"
                f'<img src="/img/{n}.png" alt="picture {n}"></body></html>'
            )

    one, every = built_twice(
        tmp_path,
        write,
        sitemap="images = true",
        extra='[news]\npublication_name = "Example"\nlanguage = "en"',
    )
    facts = (
        "SELECT loc, status, reason, page_reason, title, lastmod, shard, entry_bytes, "
        "published, language, news_title, article, alternates, extra, content_hash, "
        "published_stated FROM urls ORDER BY id"
    )
    rows = ledger_rows(one, facts)
    assert len(rows) == 300
    assert {str(row[2])[:9] for row in rows} == {"None", "noindex", "canonical"}
    assert any(row[12] for row in rows)
    assert any(row[13] for row in rows)
    assert rows == ledger_rows(every, facts)
    assert written(one) == written(every)


def ledger_rows(site: Site, query: str) -> list[tuple[object, ...]]:
    """Return the rows `query` reads from the site's ledger."""
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_a_sandbox_without_worker_processes_reads_on_one_core(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sitemapd.sources.pagereader as pagereader
    from sitemapd import config
    from sitemapd.engine.engine import Engine

    def refuse(method: str) -> object:
        raise OSError(f"no {method} here")

    monkeypatch.setattr(pagereader.multiprocessing, "get_context", refuse)
    new_site("semantic", 80, seed=8).write(site.root)
    engine = Engine(config.load(site.config))
    try:
        result = engine.build()
    finally:
        engine.close()
    assert result.changes.new == 80
    assert "reading pages in one process (no forkserver here)" in caplog.text


def test_a_page_whose_reading_fails_costs_that_page_not_the_scan(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fault while reading one page (a bug of ours, met on some page) is logged with its
    traceback; the page is left out as unread, or kept as published, and the rest goes on."""
    import sitemapd.sources.pagereader as pagereader
    from sitemapd import config
    from sitemapd.engine.engine import Engine

    load = pagereader.load

    def faulty(job: Job, *args: object) -> object:
        if job.relpath == "b.html":
            raise KeyError("a fault of ours")
        return load(job, *args)  # type: ignore[arg-type]

    for name in "abc":
        site.write(f"{name}.html", page(name.upper(), "text"))
    engine = Engine(config.load(site.config))
    try:
        monkeypatch.setattr(pagereader, "load", faulty)
        result = engine.build()
        assert result.changes.new == 2
        assert "reading" in caplog.text
        assert "KeyError: 'a fault of ours'" in caplog.text
        monkeypatch.setattr(pagereader, "load", load)
        assert engine.build().changes.new == 1
        site.write("b.html", page("B", "edited"))
        monkeypatch.setattr(pagereader, "load", faulty)
        assert engine.build().changes.gone == 0
    finally:
        engine.close()
    assert set(site.urls()) == {f"https://example.com/{n}.html" for n in "abc"}


def section_page(stories: range, most_read: range, teasers: bool) -> str:
    """Return a section page listing `stories` (links, with teasers or not) beside a
    sidebar of `most_read` links."""
    items = "".join(
        f"<li><a href='/news/story-{n}.html'>Council story number {n} headline</a>"
        + (f"<p>What happened at the council meeting number {n}, in brief.</p>" if teasers else "")
        + "</li>"
        for n in stories
    )
    side = "".join(
        f"<li><a href='/news/read-{n}.html'>Most read story {n}</a></li>" for n in most_read
    )
    return (
        "<html><head><title>News | Gazette</title></head><body>"
        "<header><nav><a href='/'>Home</a> <a href='/news/'>News</a></nav></header>"
        f"<main><h1>News</h1><ul>{items}</ul></main>"
        f"<aside><h2>Most read</h2><ul>{side}</ul></aside><footer>Gazette</footer></body></html>"
    )


@pytest.mark.parametrize("teasers", [False, True])
def test_a_list_page_moves_for_a_new_item_not_for_its_surroundings(
    site: Site, teasers: bool
) -> None:
    site.write("news.html", section_page(range(20), range(5), teasers))
    summary(site)
    before = change_counts(site)
    site.write("news.html", section_page(range(20), range(1, 6), teasers))
    assert "0 updated" in summary(site)
    site.write("news.html", section_page(range(1, 21), range(1, 6), teasers))
    assert "1 updated" in summary(site)
    assert moved(site, before) == {"news"}
    out = site.cli("explain", "https://example.com/news.html").stdout
    assert "main content: NOT FOUND" not in out


def _digest_of(html: str, settings: Settings | None = None) -> str:
    return read_file("a.html", html.encode(), settings or Settings()).digest(TemplateMemory())


def _product(description: str, query: str) -> str:
    """Return a shop page whose description sits inside the order form, and a search form."""
    return (
        "<html><head><title>Dog blanket | Shop</title></head><body>"
        f"<form action='/search'><label>Search</label> {query}</form>"
        "<main><h1>Dog blanket</h1><form action='/cart' class='product'>"
        f"<div class='description'><p>{description}</p></div><p>In stock</p></form>"
        "<div class='reviews'>"
        + "<p>Great blanket, my dog loves it and sleeps on it all day.</p>" * 6
        + "</div></main></body></html>"
    )


def test_a_description_inside_an_order_form_is_content_a_search_form_is_not() -> None:
    description = (
        "A soft blanket for dogs and cats, woven from recycled cotton, washable at sixty "
        "degrees and sized for baskets, sofas and the back seat of a car. Each one is "
        "made to order in our workshop."
    )
    before = _digest_of(_product(description, "Find"))
    assert _digest_of(_product(description.replace("soft", "softer"), "Find")) != before
    assert _digest_of(_product(description, "Look up")) == before


def test_a_page_that_keeps_itself_out_and_comes_back_as_it_was_keeps_its_lastmod(
    site: Site,
) -> None:
    url = "https://example.com/{}.html".format
    for name in "abc":
        site.write(f"{name}.html", page(name.upper(), "What the page says."))
    site.build()
    first = published(site.out)
    time.sleep(1.1)  # lastmods have one-second resolution
    site.write("a.html", page("A", "What the page says.", robots="noindex"))
    site.write("b.html", page("B", "What the page says.", canonical="/c.html"))
    site.write("c.html", page("C", "What the page says.", robots="noindex"))
    site.build()
    assert set(published(site.out)) == set()
    time.sleep(1.1)
    site.write("a.html", page("A", "What the page says."))
    site.write("b.html", page("B", "What the page says."))
    site.write("c.html", page("C", "What the page says, edited while it was out."))
    site.build()
    back = published(site.out)
    # Back as they were: their lastmods are those they had. Edited meanwhile: it moves.
    assert back[url("a")] == first[url("a")]
    assert back[url("b")] == first[url("b")]
    assert back[url("c")] > first[url("c")]
