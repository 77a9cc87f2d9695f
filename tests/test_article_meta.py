"""Article metadata from HTML, and the news / hreflang / image XML fragments.

Output is checked by real consumers: lxml against the published XSDs in tests/schemas,
and ultimate-sitemap-parser reading the documents back.
"""

from __future__ import annotations

import datetime as dt
import html
import json

import pytest
from conftest import schema
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from usp.tree import sitemap_from_str

from sitemapd.core.urls import Origin, URLPolicy
from sitemapd.fingerprint import compile_selector
from sitemapd.render.extensions import alternates_xml, images_xml, url_extras
from sitemapd.render.news import MAX_NEWS_ITEMS, NEWS_NS, NewsItem, news_urlset
from sitemapd.render.newslanguage import news_language
from sitemapd.render.sitemap import IMAGE_NS, URLSET_EXTENDED_HEAD, URLSET_TAIL, XHTML_NS
from sitemapd.sources.content import (
    MAX_IMAGES,
    PageFacts,
    article_meta,
    exclusion,
    read_page,
)

POLICY = URLPolicy(Origin.from_base_url("https://example.com/"))
LOC = "https://example.com/en/story"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
NEWS = f"{{{NEWS_NS}}}"


def page(head: str = "", body: str = "", html_attrs: str = "") -> bytes:
    """Return an HTML document with `head` and `body` inside."""
    return (
        f"<!doctype html><html{html_attrs}><head><title>Page title</title>{head}</head>"
        f"<body>{body}</body></html>"
    ).encode()


def ld(value: object) -> str:
    """Return a JSON-LD script element holding `value`."""
    return f'<script type="application/ld+json">{json.dumps(value)}</script>'


def xml(text: str) -> etree._Element:
    """Parse a rendered document the way a careful consumer would."""
    parser = etree.XMLParser(no_network=True, resolve_entities=False)
    return etree.fromstring(text.encode(), parser)


# --- JSON-LD, Open Graph, language ---------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        {"@type": "NewsArticle", "datePublished": "2026-11-20T10:00:00+02:00", "headline": "H"},
        [{"@type": "Organization"}, {"@type": "Article", "datePublished": "2026-11-20T08:00Z"}],
        {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "WebPage", "datePublished": "2001-01-01"},
                {"@type": ["Thing", "ReportageNewsArticle"], "datePublished": "2026-11-20T08:00Z"},
            ],
        },
        {
            "@type": "WebPage",
            "mainEntity": {"@type": "BlogPosting", "datePublished": "2026-11-20T08:00:00Z"},
        },
        {"@type": "http://schema.org/NewsArticle", "datePublished": "2026-11-20T08:00:00+00:00"},
    ],
    ids=["object", "list", "graph-type-list", "main-entity", "type-url"],
)
def test_json_ld_article_dates(document: object) -> None:
    facts = read_page(page(ld(document)))
    assert facts.article
    assert facts.published == "2026-11-20T08:00:00+00:00"


def test_json_ld_in_body_is_read_only_with_a_selector() -> None:
    document = page(body=ld({"@type": "NewsArticle", "datePublished": "2026-11-20"}))
    assert (read_page(document).published, read_page(document).article) == (None, False)
    facts = read_page(document, "main")
    assert (facts.published, facts.article) == ("2026-11-20T00:00:00+00:00", True)


def test_bad_json_ld_is_ignored_and_later_blocks_still_count() -> None:
    bad = '<script type="application/ld+json">{"@type": "NewsArticle", </script>'
    deep = '<script type="application/ld+json">' + "[" * 100_000 + "</script>"
    good = ld({"@type": "Article", "datePublished": "2026-11-20T08:00:00Z", "headline": "Good"})
    facts = read_page(page(bad + deep + good))
    assert facts.published == "2026-11-20T08:00:00+00:00"
    assert facts.headline == "Good"
    assert read_page(page(bad)) == read_page(page())


def test_character_references_written_into_a_json_ld_headline_are_resolved() -> None:
    # Some CMSs HTML-escape their JSON-LD: the news sitemap's title says what readers read.
    head = ld({"@type": "NewsArticle", "headline": "America&#039;s R&amp;D&nbsp; bakery"})
    assert read_page(page(head)).headline == "America's R&D bakery"
    # Text that only looks like a reference stays as written.
    plain = ld({"@type": "NewsArticle", "headline": "Q&A: ask me anything"})
    assert read_page(page(plain)).headline == "Q&A: ask me anything"


def test_date_without_zone_yields_to_one_with_a_zone_else_reads_as_utc() -> None:
    head = ld({"@type": "NewsArticle", "datePublished": "2026-11-20T10:00:00"}) + (
        '<meta property="article:published_time" content="2026-11-19T10:00:00-05:00">'
    )
    assert read_page(page(head)).published == "2026-11-19T15:00:00+00:00"
    zoneless = '<meta property="article:published_time" content="2026-11-19T10:00:00">'
    assert read_page(page(zoneless)).published == "2026-11-19T10:00:00+00:00"
    nonsense = '<meta property="article:published_time" content="last Tuesday">'
    assert read_page(page(nonsense)).published is None


def test_json_ld_wins_over_meta_and_non_articles_give_nothing() -> None:
    head = ld({"@type": "NewsArticle", "datePublished": "2026-11-20T08:00:00Z"}) + (
        '<meta property="article:published_time" content="2020-01-01T00:00:00Z">'
    )
    assert read_page(page(head)).published == "2026-11-20T08:00:00+00:00"
    product = read_page(page(ld({"@type": "Product", "datePublished": "2026-11-20"})))
    assert product.published is None
    assert not product.article


def test_headline_falls_back_to_og_title_and_og_type_marks_articles() -> None:
    og = '<meta property="og:title" content=" Open  Graph ">'
    og += '<meta property="og:type" content="Article">'
    facts = read_page(page(og))
    assert (facts.headline, facts.article, facts.title) == ("Open Graph", True, "Page title")
    both = og + ld({"@type": "NewsArticle", "headline": "From JSON-LD"})
    assert read_page(page(both)).headline == "From JSON-LD"
    website = read_page(page('<meta property="og:type" content="website">'))
    assert (website.headline, website.article) == (None, False)


@pytest.mark.parametrize(
    ("charset", "encoding"),
    [('<meta charset="iso-8859-1">', "latin-1"), ("", "euc-jp"), ('<meta charset="sjis">', "sjis")],
)
def test_json_ld_in_a_legacy_charset_is_read_in_it(charset: str, encoding: str) -> None:
    headline = "Café résumé" if encoding == "latin-1" else "東京で新しい路面電車が開業した"
    body = (
        "Le café ouvre." if encoding == "latin-1" else "新しい路面電車の路線が今日開業した。" * 20
    )
    # The headline as written in the page's charset, not as JSON's \\u escapes.
    data = json.dumps({"@type": "NewsArticle", "headline": headline}, ensure_ascii=False)
    html = (
        f"<!doctype html><html><head>{charset}<title>{headline}</title>"
        f'<script type="application/ld+json">{data}</script>'
        f"</head><body><p>{body}</p></body></html>"
    )
    assert read_page(html.encode(encoding)).headline == headline


@pytest.mark.parametrize(
    ("attrs", "language"),
    [(' lang=" en-GB "', "en-GB"), (' xml:lang="de"', "de"), ("", None), (' lang=""', None)],
)
def test_html_language(attrs: str, language: str | None) -> None:
    assert read_page(page(html_attrs=attrs)).language == language


def test_unparseable_canonical_excludes_instead_of_raising() -> None:
    facts = read_page(page('<link rel="canonical" href="http://[oops/">'))
    assert exclusion(facts, LOC, POLICY) == "canonical: http://[oops/"


def test_existing_facts_are_unchanged_by_the_new_ones() -> None:
    document = page(
        '<link rel="canonical" href="/a/"><meta name="robots" property="og:x" content="noindex">'
    )
    for facts in (read_page(document), read_page(document, "main")):
        assert (facts.title, facts.canonical, facts.noindex) == ("Page title", "/a/", True)
    assert read_page(b"") == PageFacts()
    assert read_page(b"\xff\xfe garbage <<<") == PageFacts()


@pytest.mark.parametrize(
    "document",
    [
        "<html><head><title>Caf\u00e9</title></head><body></body></html>".encode(),
        b'<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head></html>',
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        "<head><title>Caf\u00e9</title></head><body/></html>".encode(),
    ],
    ids=["utf8-undeclared", "latin1-declared", "xhtml-declaration"],
)
def test_title_encodings(document: bytes) -> None:
    assert read_page(document).title == "Caf\u00e9"


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_read_page_never_raises_on_junk(junk: bytes) -> None:
    for data in (
        junk,
        page(junk.decode("utf-8", "replace")),
        b"<script type=application/ld+json>" + junk,
    ):
        facts = read_page(data, "main .x")
        article_meta(facts, LOC, POLICY)


# --- hreflang ------------------------------------------------------------------------------


HREFLANG_HEAD = (
    '<link rel="alternate" hreflang="DE" href="/de/story">'
    '<link rel="alternate" hreflang="de" href="/de/other">'  # duplicate: first wins
    '<link rel="alternate" hreflang="x-default" href="../story">'
    '<link rel="alternate" hreflang="fr" href="https://other.org/fr/story">'  # off-site
    '<link rel="alternate" hreflang="english!" href="/bad">'  # invalid hreflang
    '<link rel="alternate" hreflang="it" href="http://[oops/it">'  # unparseable
    '<link rel="alternate" hreflang="pt-BR" href="https://example.com/pt-br/hist%C3%B3ria">'
    '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'  # no hreflang
)


def test_hreflang_links_are_read_raw_in_document_order() -> None:
    facts = read_page(page(HREFLANG_HEAD))
    assert facts.alternates == (
        ("de", "/de/story"),
        ("x-default", "../story"),
        ("fr", "https://other.org/fr/story"),
        ("english!", "/bad"),
        ("it", "http://[oops/it"),
        ("pt-br", "https://example.com/pt-br/hist%C3%B3ria"),
    )


@pytest.mark.parametrize(
    "link",
    [
        '<link rel="alternate" type="application/rss+xml" hreflang="de" href="/de/rss.xml">',
        '<link rel="alternate" type="application/atom+xml" hreflang="de" href="/de/feed">',
        '<link rel="alternate" type="application/pdf" hreflang="de" href="/de/story.pdf">',
        '<link rel="alternate" media="print" hreflang="de" href="/de/story/print">',
        '<link rel="alternate" media="only screen and (max-width: 640px)" hreflang="de" '
        'href="https://m.example.com/de/story">',
        '<link rel="amphtml" hreflang="de" href="/de/story/amp">',
    ],
)
def test_feeds_print_mobile_and_amp_links_are_not_translations(link: str) -> None:
    translation = '<link rel="alternate" hreflang="de" href="/de/story">'
    # Whatever comes first in the head, the translation is the German alternate.
    for head in (link + translation, translation + link):
        assert read_page(page(head)).alternates == (("de", "/de/story"),)
    assert read_page(page(link)).alternates == ()


@pytest.mark.parametrize("kind", ["text/html", "TEXT/HTML; charset=utf-8", "application/xhtml+xml"])
def test_html_typed_alternates_are_translations(kind: str) -> None:
    head = f'<link rel="alternate" type="{kind}" hreflang="de" href="/de/story">'
    assert read_page(page(head)).alternates == (("de", "/de/story"),)


def test_article_meta_normalises_alternates_and_adds_the_page_itself() -> None:
    meta = article_meta(read_page(page(HREFLANG_HEAD, html_attrs=' lang="EN"')), LOC, POLICY)
    assert meta.alternates == (
        ("de", "https://example.com/de/story"),
        ("en", LOC),
        ("fr", "https://other.org/fr/story"),
        ("pt-br", "https://example.com/pt-br/hist%C3%B3ria"),
        ("x-default", "https://example.com/story"),
    )


def test_page_already_listed_or_language_unknown_is_not_added() -> None:
    listed = '<link rel="alternate" hreflang="en-gb" href="/en/story">'
    listed += '<link rel="alternate" hreflang="de" href="/de/story">'
    meta = article_meta(read_page(page(listed, html_attrs=' lang="en"')), LOC, POLICY)
    assert meta.alternates == (("de", "https://example.com/de/story"), ("en-gb", LOC))
    unknown = article_meta(
        read_page(page('<link rel="alternate" hreflang="de" href="/de/">')), LOC, POLICY
    )
    assert unknown.alternates == (("de", "https://example.com/de/"),)
    # A source's `language` stands in for a page that does not say.
    defaulted = article_meta(
        read_page(page('<link rel="alternate" hreflang="de" href="/de/">')), LOC, POLICY, "fr"
    )
    assert defaulted.alternates == (("de", "https://example.com/de/"), ("fr", LOC))


def test_no_hreflang_links_means_no_alternates() -> None:
    facts = read_page(page(html_attrs=' lang="en"'))
    assert article_meta(facts, LOC, POLICY).alternates == ()


def test_alternates_on_other_sites_are_kept_in_their_own_canonical_form() -> None:
    offsite = '<link rel="alternate" hreflang="de" href="HTTPS://Other.ORG:443/de/#top">'
    meta = article_meta(read_page(page(offsite, html_attrs=' lang="en"')), LOC, POLICY)
    assert meta.alternates == (("de", "https://other.org/de/"), ("en", LOC))


def test_base_href_resolves_relative_alternates_images_and_canonical() -> None:
    head = (
        '<base href="https://example.com/en/">'
        '<link rel="alternate" hreflang="de" href="../de/story">'
        '<link rel="canonical" href="story">'
        '<meta property="og:image" content="img/a.jpg">'
    )
    facts = read_page(page(head, html_attrs=' lang="en"'))
    meta = article_meta(facts, "https://example.com/en/story", POLICY)
    assert meta.alternates == (
        ("de", "https://example.com/de/story"),
        ("en", "https://example.com/en/story"),
    )
    assert meta.images == ("https://example.com/en/img/a.jpg",)
    assert exclusion(facts, "https://example.com/en/story", POLICY) is None
    assert exclusion(facts, "https://example.com/other", POLICY) == (
        "canonical: https://example.com/en/story"
    )


# --- images and the content selector -------------------------------------------------------


IMAGE_HEAD = (
    '<meta property="og:image" content="/img/lead photo.jpg">'
    '<meta property="og:image:secure_url" content="https://cdn.example.net/lead.jpg">'
    '<meta property="og:image:url" content="/img/lead photo.jpg">'
)
IMAGE_BODY = (
    '<img src="/img/header.png">'
    '<main><div id="content" class="story wide">'
    '<img src="inline.png">'
    '<img src="data:image/gif;base64,R0l" data-src="//cdn.example.net/lazy.jpg">'
    '<img data-src="/img/only-data-src.jpg"><img src="/img/lead photo.jpg">'
    '<img src="javascript:alert(1)"><img src="/img/caf\u00e9.jpg#frag"><img>'
    "</div></main>"
    '<aside class="story"><img src="/img/aside.png"></aside>'
)


def test_images_from_og_only_without_a_selector() -> None:
    facts = read_page(page(IMAGE_HEAD, IMAGE_BODY))
    assert facts.images == ("/img/lead photo.jpg", "https://cdn.example.net/lead.jpg")


@pytest.mark.parametrize("selector", ["main .story", "div#content.story.wide", "main", "#content"])
def test_images_inside_the_selected_content(selector: str) -> None:
    facts = read_page(page(IMAGE_HEAD, IMAGE_BODY), selector)
    assert facts.images == (
        "/img/lead photo.jpg",
        "https://cdn.example.net/lead.jpg",
        "inline.png",
        "//cdn.example.net/lazy.jpg",
        "/img/only-data-src.jpg",
        "javascript:alert(1)",
        "/img/caf\u00e9.jpg#frag",
    )
    assert article_meta(facts, LOC, POLICY).images == (
        "https://example.com/img/lead%20photo.jpg",
        "https://cdn.example.net/lead.jpg",
        "https://example.com/en/inline.png",
        "https://cdn.example.net/lazy.jpg",
        "https://example.com/img/only-data-src.jpg",
        "https://example.com/img/caf%C3%A9.jpg",
    )


def test_a_selector_matching_nested_elements_lists_each_image_once() -> None:
    body = '<div class="a"><div class="a"><img src="/x.png"></div><img src="/y.png"></div>'
    assert read_page(page(body=body), ".a").images == ("/x.png", "/y.png")
    assert read_page(page(body=body), "section").images == ()


def test_images_are_capped_and_long_urls_dropped() -> None:
    body = "<article>" + "".join(f'<img src="/i/{n}.png">' for n in range(1500)) + "</article>"
    facts = read_page(page(body=body), "article")
    assert len(facts.images) == MAX_IMAGES
    assert facts.images[-1] == "/i/999.png"
    long = PageFacts(images=("/" + "a" * 2048, "/ok.png", "ftp://example.com/x.png", "//[::1"))
    assert article_meta(long, LOC, POLICY).images == ("https://example.com/ok.png",)


@pytest.mark.parametrize("bad", ["", "  ", "div[", "div >", "p:nonsense-pseudo", "a,,b"])
def test_bad_selectors_raise(bad: str) -> None:
    with pytest.raises(ValueError, match="CSS selector"):
        compile_selector(bad)


def test_read_page_rejects_a_bad_selector() -> None:
    with pytest.raises(ValueError, match="CSS selector"):
        read_page(page(), "div[")


@pytest.mark.parametrize(
    "selector", ["div > p", "main, article", "[itemprop=articleBody]", "div:not(.ad) p"]
)
def test_full_css_selectors_find_images(selector: str) -> None:
    body = (
        '<main><article itemprop="articleBody"><div><p><img src="/a.png"></p></div>'
        '<div class="ad"><p><img src="/ad.png"></p></div></article></main>'
    )
    images = read_page(page(body=body), selector).images
    assert "/a.png" in images
    if selector == "div:not(.ad) p":
        assert "/ad.png" not in images


# --- news ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "code"),
    [
        ("en", "en"),
        ("en-US", "en"),
        ("EN", "en"),
        ("en_GB", "en"),
        ("fil", "fil"),
        ("zh", "zh-cn"),
        ("zh-Hans", "zh-cn"),
        ("zh-CN", "zh-cn"),
        ("zh-SG", "zh-cn"),
        ("zh-Hans-HK", "zh-cn"),
        ("zh-Hant", "zh-tw"),
        ("zh-TW", "zh-tw"),
        ("zh-HK", "zh-tw"),
        ("zh-Hant-CN", "zh-tw"),
        ("cmn-Hant-TW", "zh-tw"),
        ("cmn-Hans", "zh-cn"),
        ("cmn", "zh-cn"),
        ("yue-HK", "zh-tw"),
        ("yue", "zh-tw"),
        ("zh-yue", "zh-tw"),
        ("zh-min-nan", "zh-cn"),
        (None, None),
        ("", None),
        ("english", None),
        ("e", None),
        ("x-default", None),
        ("und", None),
        ("en-!!", None),
        ("12", None),
    ],
)
def test_news_language(tag: str | None, code: str | None) -> None:
    assert news_language(tag) == code


def test_article_meta_news_fields() -> None:
    head = ld({"@type": "NewsArticle", "datePublished": "2026-11-20T08:00:00Z"})
    meta = article_meta(read_page(page(head, html_attrs=' lang="zh-Hant"')), LOC, POLICY)
    assert (meta.published, meta.language, meta.news_title, meta.article) == (
        "2026-11-20T08:00:00+00:00",
        "zh-tw",
        "Page title",
        True,
    )


HOSTILE_TITLE = (
    'A & B <script>alert("x")</script> ]]> \x00\x08\x0b\ufffe caf\u00e9 \U0001f600 &amp;'
)
ITEMS = [
    NewsItem(
        "https://example.com/news/1?a=1&b='2'",
        "The Example <Times> & Co",
        "en",
        "2026-11-20T08:00:00+00:00",
        HOSTILE_TITLE,
    ),
    NewsItem(
        "https://example.com/news/2",
        "The Example Times",
        "zh-tw",
        "2026-11-19T23:59:59+00:00",
        "Two",
    ),
]


def test_news_urlset_validates_and_keeps_order_and_text() -> None:
    text = news_urlset(iter(ITEMS))
    root = xml(text)
    schema("sitemap-all.xsd").assertValid(root)
    for news in root.iter(f"{NEWS}news"):
        schema("sitemap-news.xsd").assertValid(etree.ElementTree(news))
    urls = root.findall(f"{SM}url")
    assert [u.findtext(f"{SM}loc") for u in urls] == [item.loc for item in ITEMS]
    first = urls[0].find(f"{NEWS}news")
    assert first is not None
    assert [child.tag.split("}")[1] for child in first] == [
        "publication",
        "publication_date",
        "title",
    ]
    assert first.findtext(f"{NEWS}publication/{NEWS}name") == "The Example <Times> & Co"
    assert first.findtext(f"{NEWS}title") == (
        'A & B <script>alert("x")</script> ]]>  caf\u00e9 \U0001f600 &amp;'
    )


def test_news_urlset_read_back_by_ultimate_sitemap_parser() -> None:
    pages = list(sitemap_from_str(news_urlset(ITEMS)).all_pages())
    assert [p.url for p in pages] == [item.loc for item in ITEMS]
    stories = [p.news_story for p in pages]
    assert all(stories)
    assert [
        (s.publication_name, s.publication_language, s.title, s.publish_date) for s in stories if s
    ] == [
        (
            "The Example <Times> & Co",
            "en",
            # usp HTML-unescapes text after XML parsing, so the literal "&amp;" reads as "&".
            html.unescape('A & B <script>alert("x")</script> ]]>  caf\u00e9 \U0001f600 &amp;'),
            dt.datetime(2026, 11, 20, 8, tzinfo=dt.UTC),
        ),
        ("The Example Times", "zh-tw", "Two", dt.datetime(2026, 11, 19, 23, 59, 59, tzinfo=dt.UTC)),
    ]


def test_news_urlset_holds_at_most_the_first_thousand_items() -> None:
    items = (ITEMS[1]._replace(loc=f"https://example.com/n/{n}") for n in range(MAX_NEWS_ITEMS + 5))
    root = xml(news_urlset(items))
    locs = [u.findtext(f"{SM}loc") for u in root.iter(f"{SM}url")]
    assert len(locs) == MAX_NEWS_ITEMS
    assert locs[-1] == f"https://example.com/n/{MAX_NEWS_ITEMS - 1}"


def test_empty_news_urlset_is_well_formed_but_not_schema_valid() -> None:
    root = xml(news_urlset([]))
    assert root.tag == f"{SM}urlset"
    assert len(root) == 0
    # sitemap.xsd requires one <url>; Google accepts an empty news sitemap. Pin the gap.
    assert not schema("sitemap-all.xsd").validate(root)
    assert list(sitemap_from_str(news_urlset([])).all_pages()) == []


# --- hreflang and image fragments ----------------------------------------------------------


def test_fragments() -> None:
    assert alternates_xml([("de", "https://example.com/de/?a=1&b='2'")]) == (
        '<xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/?a=1&amp;b=&apos;2&apos;"/>'
    )
    assert images_xml(["https://cdn.example.net/a.jpg?x=1&y=2"]) == (
        "<image:image><image:loc>https://cdn.example.net/a.jpg?x=1&amp;y=2</image:loc></image:image>"
    )
    assert url_extras([], []) == ""
    with pytest.raises(ValueError, match="invalid hreflang"):
        alternates_xml([('en"><x', "https://example.com/")])


def test_urlset_with_extras_validates_and_reads_back() -> None:
    meta = article_meta(
        read_page(page(HREFLANG_HEAD + IMAGE_HEAD, IMAGE_BODY, ' lang="en"'), "main"), LOC, POLICY
    )
    entries = [
        (LOC, url_extras(meta.alternates, meta.images)),
        ("https://example.com/plain?a=1&b=2", url_extras([], [])),
        ("https://example.com/img-only", url_extras([], ["https://cdn.example.net/x.jpg?a&b"])),
    ]
    text = (
        URLSET_EXTENDED_HEAD
        + "".join(
            f"<url><loc>{loc.replace('&', '&amp;')}</loc>"
            f"<lastmod>2026-11-20T08:00:00+00:00</lastmod>{extras}</url>\n"
            for loc, extras in entries
        )
        + URLSET_TAIL
    )
    root = xml(text)
    schema("sitemap-all.xsd").assertValid(root)
    first = root.find(f"{SM}url")
    assert first is not None
    links = first.findall(f"{{{XHTML_NS}}}link")
    assert [(link.get("hreflang"), link.get("href")) for link in links] == list(meta.alternates)
    assert [i.findtext(f"{{{IMAGE_NS}}}loc") for i in first.iter(f"{{{IMAGE_NS}}}image")] == list(
        meta.images
    )
    pages = list(sitemap_from_str(text).all_pages())
    assert [p.url for p in pages] == [loc for loc, _ in entries]
    assert pages[0].alternates == list(meta.alternates)
    assert [image.loc for image in pages[0].images or []] == list(meta.images)
    assert [image.loc for image in pages[2].images or []] == ["https://cdn.example.net/x.jpg?a&b"]
