"""Google News sitemaps, hreflang alternates and image entries, built by the real CLI and
read back with the published XSDs and ultimate-sitemap-parser."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import NS, Site, read_xml, schema, snapshot
from lxml import etree
from usp.objects.page import SitemapNewsStory
from usp.tree import sitemap_tree_for_homepage

from sitemapd.core import w3c

NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"
IMAGE = "{http://www.google.com/schemas/sitemap-image/1.1}"
T = "2026-03-10T12:00:00+00:00"


def hours(offset: float) -> str:
    return w3c.format_epoch(w3c.to_epoch(T) + offset * 3600)


def article(headline: str, published: str, body: str = "", head: str = "") -> str:
    ld = json.dumps({"@type": "NewsArticle", "headline": headline, "datePublished": published})
    return (
        f'<!doctype html><html lang="en-GB"><head><title>{headline} | Site</title>'
        f'<script type="application/ld+json">{ld}</script>{head}</head>'
        f"<body><article>{body}</article></body></html>"
    )


def news_site(site: Site, sitemap: str = "", source: str = "") -> None:
    site.configure(
        sitemap=sitemap,
        source=source,
        extra='[news]\npublication_name = "The Example Times"\nlanguage = "en"\n',
    )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Set the time every `sitemapd` subprocess sees."""

    def set_time(when: str) -> None:
        monkeypatch.setenv("SITEMAPD_TEST_NOW", when)

    return set_time


def index_names(out: Path) -> list[str]:
    return [
        (loc.text or "").rsplit("/", 1)[1] for loc in read_xml(out / "sitemap.xml").iter(f"{NS}loc")
    ]


def news_items(out: Path) -> dict[str, tuple[str, str]]:
    """Return `{loc: (publication_date, title)}` over every news file the index names."""
    items = {}
    for name in index_names(out):
        if name.startswith("news-sitemap"):
            for url in read_xml(out / name).iter(f"{NS}url"):
                news = url.find(f"{NEWS}news")
                assert news is not None
                items[url.findtext(f"{NS}loc") or ""] = (
                    news.findtext(f"{NEWS}publication_date") or "",
                    news.findtext(f"{NEWS}title") or "",
                )
    return items


def assert_all_valid(out: Path) -> None:
    schema("siteindex.xsd").assertValid(read_xml(out / "sitemap.xml"))
    for name in index_names(out):
        schema("sitemap-all.xsd").assertValid(read_xml(out / name))


def test_2500_articles_make_three_news_files_that_age_out(
    site: Site, clock: Callable[[str], None], serve: Callable[[Path], str]
) -> None:
    news_site(site)
    for n in range(2500):
        # One article every minute over the last 41 2/3 hours, the newest last.
        site.write(f"news/{n}.html", article(f"Story {n} & co", hours(-(2499 - n) / 60)))
    site.write("about.html", "<html><head><title>About</title></head><body></body></html>")
    clock(T)
    site.build()
    names = index_names(site.out)
    assert names == [
        "sitemap-1.xml",
        "news-sitemap.xml",
        "news-sitemap-2.xml",
        "news-sitemap-3.xml",
    ]
    assert_all_valid(site.out)
    counts = [len(read_xml(site.out / n).findall(f"{NS}url")) for n in names[1:]]
    assert counts == [1000, 1000, 500]
    first = read_xml(site.out / "news-sitemap.xml").find(f"{NS}url")
    assert first is not None
    assert first.findtext(f"{NS}loc") == "https://example.com/news/2499.html"
    news = first.find(f"{NEWS}news")
    assert news is not None
    assert [etree.QName(child).localname for child in news] == [
        "publication",
        "publication_date",
        "title",
    ]
    assert news.findtext(f"{NEWS}publication/{NEWS}name") == "The Example Times"
    assert news.findtext(f"{NEWS}publication/{NEWS}language") == "en"
    assert news.findtext(f"{NEWS}title") == "Story 2499 & co"
    assert "https://example.com/about.html" not in news_items(site.out)

    # A consumer nobody here wrote reads the same entries back over HTTP.
    base = serve(site.out)
    robots = site.out / "robots.txt"
    robots.write_text(f"User-agent: *\nSitemap: {base}sitemap.xml\n")
    for name in ["sitemap.xml", *names]:
        data = (site.out / name).read_text().replace("https://example.com/", base)
        (site.out / name).write_text(data)
    stories = {
        page.url: page.news_story
        for page in sitemap_tree_for_homepage(base).all_pages()
        if page.news_story is not None
    }
    assert len(stories) == 2500
    story = stories[base + "news/2499.html"]
    assert isinstance(story, SitemapNewsStory)
    assert (story.title, story.publication_name, story.publication_language) == (
        "Story 2499 & co",
        "The Example Times",
        "en",
    )
    assert story.publish_date is not None
    assert story.publish_date.isoformat() == T


def test_the_clock_ages_items_out_rewriting_only_news_files(
    site: Site, clock: Callable[[str], None]
) -> None:
    news_site(site)
    for n in range(1500):
        site.write(f"news/{n}.html", article(f"S{n}", hours(-(1499 - n) / 60)))
    clock(T)
    site.build()
    assert len(news_items(site.out)) == 1500
    shard = snapshot(site.out)["sitemap-1.xml"]
    clock(hours(24))
    site.build()
    items = news_items(site.out)
    # Published at or after T - 24 h (48 h before the new time), one a minute: 24 h of
    # minutes, both ends included.
    assert len(items) == 24 * 60 + 1
    assert min(date for date, _ in items.values()) == hours(-24)
    assert snapshot(site.out)["sitemap-1.xml"] == shard
    clock(hours(49))
    site.build()
    assert news_items(site.out) == {}
    # The empty file stays (crawlers that know it read no items), outside the index.
    assert (site.out / "news-sitemap.xml").exists()
    assert index_names(site.out) == ["sitemap-1.xml"]
    assert_all_valid(site.out)


def test_news_files_split_by_bytes_and_stale_parts_go_even_unrecorded(
    site: Site, clock: Callable[[str], None]
) -> None:
    import shutil

    news_site(site, sitemap="max_bytes = 16384")
    for n in range(40):
        site.write(f"news/{n}.html", article(f"Story {n} " + "long headline " * 80, hours(-1)))
    clock(T)
    site.build()
    names = [name for name in index_names(site.out) if name.startswith("news-sitemap")]
    assert len(names) > 2
    for name in names:
        assert (site.out / name).stat().st_size <= 16384
    assert len(news_items(site.out)) == 40
    assert_all_valid(site.out)

    # The ledger is lost and the site has fewer articles: files the new ledger never
    # published still go once no index names them.
    shutil.rmtree(site.base / "state")
    for n in range(3, 40):
        (site.root / "news" / f"{n}.html").unlink()
    site.build()
    assert sorted(p.name for p in site.out.glob("news-sitemap*")) == ["news-sitemap.xml"]
    assert len(news_items(site.out)) == 3


def test_an_edit_moves_lastmod_not_the_publication_date(
    site: Site, clock: Callable[[str], None]
) -> None:
    news_site(site)
    site.write("news/a.html", article("A", hours(-2), "first"))
    clock(T)
    site.build()
    published = news_items(site.out)["https://example.com/news/a.html"][0]
    assert published == hours(-2)
    # The CMS rewrites the page, even with a new datePublished: the first one stays.
    site.write("news/a.html", article("A, updated", hours(1), "second"))
    clock(hours(1))
    site.build()
    assert news_items(site.out)["https://example.com/news/a.html"] == (hours(-2), "A, updated")
    assert site.urls()["https://example.com/news/a.html"] == hours(1)


def test_publication_dates_count_once_live_and_undated_pages_take_their_file_time(
    site: Site, clock: Callable[[str], None]
) -> None:
    news_site(site)
    noindex = '<meta name="robots" content="noindex">'
    undated = (
        '<html><head><meta property="og:type" content="article"><title>{0}</title></head>'
        "<body>{0}</body></html>"
    )
    site.write("news/draft.html", article("Draft", hours(-30), head=noindex))
    site.write("archive/old.html", undated.format("An old undated story"))
    old_mtime = w3c.to_epoch("2019-05-01T10:00:00+00:00")
    os.utime(site.root / "archive" / "old.html", (old_mtime, old_mtime))
    site.write("news/dated.html", article("Dated", hours(-1)))
    clock(T)
    site.build()
    # An undated page takes its file's time: the old one is no news.
    assert set(news_items(site.out)) == {"https://example.com/news/dated.html"}

    # The draft goes live a day later dated as it went live; an undated article appears.
    clock(hours(24))
    site.write("news/draft.html", article("Draft", hours(23)))
    site.write("news/fresh.html", undated.format("Fresh"))
    site.write("archive/old.html", undated.format("An old undated story, edited"))
    site.build()
    assert news_items(site.out) == {
        "https://example.com/news/dated.html": (hours(-1), "Dated"),
        "https://example.com/news/draft.html": (hours(23), "Draft"),
        "https://example.com/news/fresh.html": (hours(24), "Fresh"),
    }
    assert_all_valid(site.out)


def test_noindex_and_canonicalised_articles_are_in_no_news_file(
    site: Site, clock: Callable[[str], None]
) -> None:
    news_site(site)
    site.write("news/ok.html", article("OK", hours(-1)))
    site.write(
        "news/hidden.html", article("H", hours(-1), head='<meta name="robots" content="noindex">')
    )
    site.write(
        "news/amp.html",
        article(
            "A", hours(-1), head='<link rel="canonical" href="https://example.com/news/ok.html">'
        ),
    )
    clock(T)
    site.build()
    assert set(news_items(site.out)) == {"https://example.com/news/ok.html"}
    site.write(
        "news/ok.html", article("OK", hours(-1), head='<meta name="robots" content="noindex">')
    )
    site.build()
    assert news_items(site.out) == {}


def alternates_page(lang: str, group: dict[str, str]) -> str:
    links = "".join(
        f'<link rel="alternate" hreflang="{code}" href="https://example.com{path}">'
        for code, path in group.items()
    )
    return (
        f'<html lang="{lang}"><head><title>{lang}</title>{links}</head><body>{lang}</body></html>'
    )


def test_hreflang_groups_are_reciprocal_and_broken_ones_reported(site: Site) -> None:
    group = {"en": "/en/", "de": "/de/", "fr": "/fr/", "x-default": "/en/"}
    for lang in ("en", "de", "fr"):
        site.write(f"{lang}/index.html", alternates_page(lang, group))
    site.build()
    assert_all_valid(site.out)
    shard = read_xml(site.out / "sitemap-1.xml")
    links: dict[str, dict[str, str]] = {}
    for url in shard.iter(f"{NS}url"):
        links[url.findtext(f"{NS}loc") or ""] = {
            link.get("hreflang") or "": link.get("href") or "" for link in url.iter(f"{XHTML}link")
        }
    expected = {code: f"https://example.com{path}" for code, path in group.items()}
    assert links == {f"https://example.com/{lang}/": expected for lang in ("en", "de", "fr")}
    assert site.cli("verify").returncode == 0

    # The French page stops linking back to German; English points at a page that is gone.
    site.write("fr/index.html", alternates_page("fr", {"en": "/en/", "fr": "/fr/"}))
    site.write("en/index.html", alternates_page("en", {**group, "es": "/es/"}))
    site.build()
    problems = json.loads(site.cli("status", "--json").stdout)["hreflang_problems"]
    assert [(p["loc"], p["lang"], p["href"], p["problem"]) for p in problems] == [
        ("https://example.com/de/", "fr", "https://example.com/fr/", "no link back"),
        ("https://example.com/en/", "es", "https://example.com/es/", "not published"),
    ]
    assert problems[0]["message"] == (
        "https://example.com/de/: hreflang fr -> https://example.com/fr/, which does not link back"
    )
    verify = site.cli("verify", check=False)
    assert verify.returncode == 1
    assert "hreflang: https://example.com/de/: hreflang fr" in verify.stdout


def shard_alternates(out: Path) -> dict[str, set[str]]:
    """Return `{loc: its xhtml:link hrefs}` over every shard the index names."""
    return {
        url.findtext(f"{NS}loc") or "": {
            link.get("href") or "" for link in url.iter(f"{XHTML}link")
        }
        for name in index_names(out)
        for url in read_xml(out / name).iter(f"{NS}url")
    }


def test_an_alternate_that_leaves_the_sitemaps_leaves_every_entry_naming_it(
    site: Site,
) -> None:
    # One URL a shard: only a shard naming the French page can learn that it left.
    site.configure(sitemap="max_urls = 1")
    group = {"en": "/en/", "de": "/de/", "fr": "/fr/", "x-default": "/en/"}
    for lang in ("en", "de", "fr"):
        site.write(f"{lang}/index.html", alternates_page(lang, group))
    site.write("about.html", "<html><head><title>About</title></head><body></body></html>")
    site.build()
    french = "https://example.com/fr/"
    assert all(french in hrefs for hrefs in shard_alternates(site.out).values() if hrefs)

    # Only the French page changes (noindex); the entries naming it drop it.
    site.write(
        "fr/index.html",
        alternates_page("fr", group).replace(
            "<title>", '<meta name="robots" content="noindex"><title>'
        ),
    )
    site.build()
    hrefs = shard_alternates(site.out)
    assert french not in hrefs
    assert hrefs["https://example.com/en/"] == {
        "https://example.com/en/",
        "https://example.com/de/",
    }
    assert not any(french in (site.out / name).read_text() for name in index_names(site.out))
    assert_all_valid(site.out)
    problems = json.loads(site.cli("status", "--json").stdout)["hreflang_problems"]
    assert f"https://example.com/de/: hreflang fr -> {french}, which is not a published URL" in [
        p["message"] for p in problems
    ]

    # Indexable again: the French page and every link to it come back.
    site.write("fr/index.html", alternates_page("fr", group))
    site.build()
    assert all(french in hrefs for hrefs in shard_alternates(site.out).values() if hrefs)
    assert site.cli("verify").returncode == 0


def test_images_from_og_image_and_the_content_selector(site: Site) -> None:
    site.configure(sitemap="images = true", source='content_selector = "article .body"')
    site.write(
        "story.html",
        '<html><head><title>S</title><meta property="og:image" content="/img/lead.jpg"></head>'
        '<body><img src="/img/logo.png"><article><div class="body">'
        '<img src="https://cdn.example.net/a b.jpg"><img data-src="/img/lazy.jpg" src="data:,">'
        "</div></article></body></html>",
    )
    site.build()
    assert_all_valid(site.out)
    url = read_xml(site.out / "sitemap-1.xml").find(f"{NS}url")
    assert url is not None
    assert [i.findtext(f"{IMAGE}loc") for i in url.iter(f"{IMAGE}image")] == [
        "https://example.com/img/lead.jpg",
        "https://cdn.example.net/a%20b.jpg",
        "https://example.com/img/lazy.jpg",
    ]
    status = json.loads(site.cli("status", "--json").stdout)
    assert status["shards"][0]["bytes"] == (site.out / "sitemap-1.xml").stat().st_size


def test_turning_images_on_reads_unchanged_pages_again_without_moving_lastmod(
    site: Site,
) -> None:
    site.write(
        "story.html",
        '<html><head><title>S</title><meta property="og:image" content="/lead.jpg"></head>'
        "<body></body></html>",
    )
    site.build()
    before = site.urls()
    assert "image:image" not in (site.out / "sitemap-1.xml").read_text()
    site.configure(sitemap="images = true")
    site.build()
    assert (
        "<image:loc>https://example.com/lead.jpg</image:loc>"
        in (site.out / "sitemap-1.xml").read_text()
    )
    assert site.urls() == before
    assert_all_valid(site.out)
