"""`sitemapd drill` through the CLI: it passes a site whose lastmods hold and fails one
whose template rotates a list the fingerprint keeps."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable

import lxml.html
import pytest
from conftest import Site
from sitegen import new_site

from sitemapd.drill.mutate import append_correction, counters, edit_word, headline, new_item
from sitemapd.drill.readers import new_comment
from sitemapd.drill.run import drill
from sitemapd.drill.structure import Page, link_lists, main_list, never_content, page_content
from sitemapd.drill.text import loose_text, text_of
from sitemapd.fingerprint import Settings, TemplateMemory

WORDS = [
    "council",
    "river",
    "bridge",
    "budget",
    "vote",
    "tram",
    "airport",
    "station",
    "mayor",
    "school",
    "hospital",
    "library",
    "museum",
    "festival",
    "harbour",
    "market",
    "weather",
    "flood",
    "storm",
    "league",
    "match",
]


def article(n: int, latest: str) -> str:
    """Return an article whose body holds the `latest` box between its paragraphs."""
    rng = random.Random(n)
    paragraphs = [
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + ".</p>" for _ in range(6)
    ]
    body = "".join(paragraphs[:3]) + latest + "".join(paragraphs[3:])
    return (
        f"<html><head><title>Story {n} | Gazette</title></head><body>"
        "<header><a href='/'>Gazette</a></header>"
        f"<article><h1>Story {n}</h1><div>{body}</div></article>"
        "<footer>© Gazette</footer></body></html>"
    )


def teasers(count: int) -> str:
    # Each item is its time, a link and a summary of its own: more than half of its text
    # is not a link, longer than a date's note, shorter than a paragraph. Led by its
    # time, not its link, it is none of the teasers' shapes the fingerprint leaves out.
    items = "".join(
        f"<li>10:{k:02d} <a href='/story-{k}.html'>Story {k} headline</a> extraordinary "
        "developments overnight</li>"
        for k in range(count)
    )
    return f"<ul>{items}</ul>"


def drill_rows(site: Site, *args: str, check: bool = True) -> dict[str, dict[str, object]]:
    """Return the rows of `sitemapd drill --json ARGS` on `site` (its one source); with
    `check`, the drill must pass."""
    (report,) = json.loads(site.cli("drill", "--json", *args, check=check).stdout)
    rows: dict[str, dict[str, object]] = report["report"]["rows"]
    return rows


def test_a_site_whose_lastmods_hold_passes(site: Site) -> None:
    new_site("semantic", 12, seed=5).write(site.root)
    result = site.cli("drill", "--pages", "12")
    assert "12 pages" in result.stdout
    assert "FAIL" not in result.stdout
    assert "link lists outside the content rotate    0.0%" in result.stdout


def test_a_page_past_what_search_engines_read_is_not_drilled(site: Site) -> None:
    new_site("semantic", 12, seed=5).write(site.root)
    site.write("archive.html", "<p>An entry of the archive.</p>\n" * 520_000)  # 16 MiB
    result = site.cli("drill", "--pages", "13")
    assert "FAIL" not in result.stdout
    assert "not drilled: archive.html: read for its first 15 MiB alone" in result.stdout


def test_a_rotating_list_inside_the_article_is_reported(site: Site) -> None:
    for n in range(10):
        site.write(f"story-{n}.html", article(n, teasers(6)))
    result = site.cli("drill", "--pages", "10", check=False)
    assert result.returncode == 1, result.stdout
    rotation = next(line for line in result.stdout.splitlines() if "rotate" in line)
    assert "FAIL" in rotation
    # Each page names what moved its fingerprint: the new story's link and words.
    assert "moved for nothing on link lists outside the content rotate:" in result.stdout
    assert "+a: /news/2026/11/fresh-story-0" in result.stdout
    assert "moved (10/10)" in rotation


def test_plain_link_lists_inside_the_article_pass(site: Site) -> None:
    links = "".join(f"<li><a href='/story-{k}.html'>Story {k} headline</a></li>" for k in range(6))
    for n in range(10):
        site.write(f"story-{n}.html", article(n, f"<ul>{links}</ul>"))
    rows = drill_rows(site, "--pages", "10")
    rotation = rows["link lists outside the content rotate"]
    assert rotation["applied"] == 10
    assert rotation["moved"] == 0
    assert rows["one word of a paragraph"]["moved"] == 10
    assert rows["correction appended"]["moved"] == 10
    assert rows["headline element alone"]["moved"] == 10


def story_cards(count: int) -> str:
    """Return other stories' teaser cards: each a linked headline and an excerpt."""
    return "".join(
        f"<div class='item'><h3><a href='/story-{k}.html'>Story {k} of the harbour</a></h3>"
        f"<p>Engineers said on Tuesday that the works, delayed twice, would end in spring "
        f"{2020 + k}.</p></div>"
        for k in range(count)
    )


def test_a_list_of_teaser_cards_inside_the_article_is_rotated_and_reported(site: Site) -> None:
    # Each card says a line of its own: the drill turns the list over all the same, and
    # the fingerprint, which keeps such a list, moves on every page.
    for n in range(10):
        site.write(f"story-{n}.html", article(n, f"<div class='more'>{story_cards(5)}</div>"))
    rows = drill_rows(site, "--pages", "10", check=False)
    rotation = rows["link lists outside the content rotate"]
    assert (rotation["applied"], rotation["moved"]) == (10, 10)
    # The cards' lines are other stories': no edit goes there, and the story's are caught.
    assert rows["one word of a paragraph"]["moved"] == 10
    assert rows["correction appended"]["moved"] == 10


def test_a_list_named_with_an_article_s_prose_is_no_list_page_s_list() -> None:
    # A ground truth holding an article's keywords names them with its paragraphs: they
    # are not what the page is about, so the drill pushes no new item onto them (the
    # extractor leaves link lists out). A list holding most of the content is the page's.
    keywords = "".join(f"<a href='/tag/{k}'>Keyword {k}</a>" for k in range(8))
    tree = lxml.html.document_fromstring(
        f"<html><body><article>{paragraphs(3)}<div class='keywords'>{keywords}</div>"
        "</article></body></html>"
    )
    named = [*tree.iter("p"), *tree.xpath("//div[@class='keywords']")]
    assert not new_item(Page(tree, named))
    listing = tree.xpath("//div[@class='keywords']")[0]
    assert new_item(Page(tree, [listing]))
    assert len(listing) == 9


def test_a_site_without_pages_is_an_error_that_says_why(site: Site) -> None:
    result = site.cli("drill", check=False)
    assert result.returncode == 1
    assert f"no HTML page to drill under {site.root}" in result.stderr
    # Pages that are none: each named with why, not "no page".
    site.write("blank.html", "   ")
    result = site.cli("drill", check=False)
    assert result.returncode == 1
    assert "no page could be drilled: blank.html: not an HTML document" in result.stderr
    # A root that is not there is not said to have vanished.
    shutil.rmtree(site.root)
    result = site.cli("drill", check=False)
    assert result.returncode == 1
    assert f"root {site.root} is no folder" in result.stderr


def test_a_source_whose_root_is_gone_is_reported_and_the_others_drilled(site: Site) -> None:
    new_site("semantic", 6, seed=3).write(site.root)
    site.configure(
        source='name = "news"',
        extra='[[source]]\ntype = "directory"\nroot = "archive"\nname = "archive"\n',
    )
    result = site.cli("drill", check=False)
    assert result.returncode == 1, result.stderr
    assert "news: 6 pages" in result.stdout
    assert f"archive: FAIL: not drilled: root {site.base / 'archive'} is no folder" in (
        result.stdout
    )
    (report, gone) = json.loads(site.cli("drill", "--json", check=False).stdout)
    assert (report["source"], report["problem"], report["report"]["pages"]) == ("news", "", 6)
    assert (gone["source"], gone["report"]["pages"]) == ("archive", 0)


def test_list_pages_are_drilled_by_their_list(site: Site) -> None:
    for section in ("news", "sport", "culture", "tech", "world", "science"):
        items = "".join(
            f"<li><a href='/{section}/story-{n}.html'>{section} story {n} headline</a></li>"
            for n in range(12)
        )
        side = "".join(f"<li><a href='/read-{n}.html'>Most read {n}</a></li>" for n in range(5))
        site.write(
            f"{section}.html",
            f"<html><head><title>{section} | Gazette</title></head><body><main>"
            f"<h1>{section}</h1><ul>{items}</ul></main><aside><ul>{side}</ul></aside>"
            "</body></html>",
        )
    rows = drill_rows(site)
    assert rows["a new item in a list page's list"] == {
        "name": "a new item in a list page's list",
        "real": True,
        "applied": 6,
        "moved": 6,
        "wrong": [],
    }
    assert rows["link lists outside the content rotate"]["applied"] == 6
    assert rows["link lists outside the content rotate"]["moved"] == 0


def commented(n: int) -> str:
    """Return an article followed by readers' comments, longer than the article, and
    surrounded by what a reader never reads as it: a script in a div, a hidden cookie
    dialog, a teaser whose paragraph is a link."""
    rng = random.Random(n)

    def prose(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)) + "."

    story = "".join(f"<p>{prose(40)}</p>" for _ in range(4))
    thread = "".join(
        f"<li class='comment' id='comment-{k}'><p>Reader {k} wrote: {prose(30)}</p></li>"
        for k in range(8)
    )
    return (
        f"<html><head><title>Story {n} | Gazette</title></head><body>"
        f"<article><h1>Story {n}</h1><div class='body'>{story}</div></article>"
        f"<div class='ad'><script>var slots = '{prose(40)}';</script></div>"
        f"<div role='dialog'><p>{prose(30)} We use cookies to measure you.</p></div>"
        f"<div class='teaser'><a href='/story-{n + 1}.html'><p>{prose(30)}</p></a></div>"
        f"<section id='comments'><ol>{thread}</ol></section></body></html>"
    )


def test_edits_go_to_the_article_not_to_comments_scripts_or_teasers(site: Site) -> None:
    # The extractor leaves comments out as template: a drill that edited them would
    # report misses the site's lastmods do not have.
    for n in range(8):
        site.write(f"story-{n}.html", commented(n))
    rows = drill_rows(site, "--pages", "8")
    assert rows["one word of a paragraph"]["applied"] == 8
    assert rows["one word of a paragraph"]["moved"] == 8
    assert rows["correction appended"]["moved"] == 8


def test_the_structural_oracle_reads_what_a_reader_reads() -> None:
    tree = lxml.html.document_fromstring(commented(1))
    content = page_content(tree)
    assert [p.getparent().get("class") for p in content] == ["body"] * 4
    # Script text is no text; a paragraph inside a link is a teaser, not prose.
    (script,) = [d for d in tree.iter("div") if d.get("class") == "ad"]
    assert text_of(script) == ""
    (teaser,) = [d for d in tree.iter("div") if d.get("class") == "teaser"]
    assert len(text_of(teaser).split()) == 30
    assert not set(teaser.iter()) & set(content)


def short_page(og_type: str | None, wrapper: str = "page") -> str:
    """Return a page of one short paragraph, a menu of long links, a "more" list, and
    prose in a sidebar, a footer and a related box that are no landmarks."""
    rng = random.Random(7)

    def prose(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)) + "."

    menu = "".join(f"<li><a href='/s/{n}'>Section {n}: {prose(6)}</a></li>" for n in range(12))
    more = "".join(f"<li><a href='/story-{n}.html'>Story {n} headline</a></li>" for n in range(6))
    meta = f"<meta property='og:type' content='{og_type}'>" if og_type else ""
    return (
        f"<html><head><title>Story | Gazette</title>{meta}</head><body>"
        f"<div id='menu-mobile'><ul>{menu}</ul></div><div class='{wrapper}'>"
        f"<div class='story'><h1>Story</h1><p>{prose(20)}</p><ul>{more}</ul></div></div>"
        f"<div class='col-sidebar'><p>{prose(40)}</p></div>"
        f"<div class='related-news'><p>{prose(40)}</p></div>"
        f"<div id='footer-info'><p>{prose(40)}</p></div></body></html>"
    )


def test_the_structural_oracle_leaves_menus_footers_sidebars_and_related_boxes_out() -> None:
    # Wrappers named after a sidebar that hold the page: by the headline, by a name
    # that says content too.
    for wrapper in ("page", "page has-sidebar", "content-with-sidebar"):
        tree = lxml.html.document_fromstring(short_page(None, wrapper))
        # Prose only in the story: the page is a list page, and its list is not the menu.
        (listing,) = page_content(tree)
        assert listing.getparent().get("class") == "story"
        assert main_list(tree) is listing


def ld(*objects: str) -> str:
    return f'<script type="application/ld+json">[{", ".join(objects)}]</script>'


@pytest.mark.parametrize(
    ("og", "head"),
    [
        ("article", ""),
        (None, ld('{"@type": "NewsArticle"}')),
        # A shop's page lists other products, not its own: the fingerprint leaves those
        # lists out, and the drill adds no item to them.
        ("product", ""),
        (None, ld('{"@type": "Product", "name": "Kettle"}')),
    ],
)
def test_a_page_that_declares_itself_an_article_or_a_product_is_no_list_page(
    og: str | None, head: str
) -> None:
    page = short_page(og).replace("</head>", head + "</head>")
    tree = lxml.html.document_fromstring(page)
    assert [p.tag for p in page_content(tree)] == ["p"]


def test_a_category_of_products_is_a_list_page() -> None:
    products = ld('{"@type": "Product", "name": "Kettle"}', '{"@type": "Product", "name": "Pot"}')
    page = short_page(None).replace("</head>", products + "</head>")
    tree = lxml.html.document_fromstring(page)
    assert [p.tag for p in page_content(tree)] == ["ul"]


def test_a_menu_that_browsers_do_not_show_is_no_list() -> None:
    links = "".join(f"<li><a href='/s/{n}'>Section number {n}</a></li>" for n in range(12))
    tree = lxml.html.document_fromstring(
        f"<html><body><noscript><ul>{links}</ul></noscript><p>Hello.</p></body></html>"
    )
    assert main_list(tree) is None


def test_pages_holding_control_characters_are_drilled() -> None:
    items = "".join(f"<li><a href='/{n}'>Story\x0b {n}</a>\x01</li>" for n in range(6))
    page = article(3, f"<ul>{items}</ul>").replace("</body>", f"<ul>{items}</ul></body>")
    report = drill([("a", page.encode())], Settings(), TemplateMemory())
    assert report.rows["link lists outside the content rotate"].applied == 1
    assert not report.skipped


def test_a_page_holding_raw_text_shown_as_is_moves_with_no_change_of_its_surroundings() -> None:
    # `<xmp>` holds raw text: an HTML serialiser escapes it, a parser does not unescape it.
    code = "<pre><code><xmp>if a > b && c < d:\n    print('a &amp; b')</xmp></code></pre>"
    page = article(3, "").replace("</article>", f"{code}</article><div>{teasers(6)}</div>")
    report = drill([("a", page.encode())], Settings(), TemplateMemory())
    for name in ("link lists outside the content rotate", "cache-busters, nonces, tokens"):
        assert (report.rows[name].applied, report.rows[name].moved) == (1, 0), name


def test_banners_menus_and_comments_by_any_name_are_not_content() -> None:
    rng = random.Random(3)

    def prose() -> str:
        return "<p>" + " ".join(rng.choice(WORDS) for _ in range(30)) + ".</p>"

    page = (
        "<html><body><div id='header'><div class='description'>" + prose() * 2 + "</div></div>"
        "<div class='moove-gdpr-cookie-notice'>" + prose() * 2 + "</div>"
        "<pp-navigation-desktop-menu>" + prose() * 2 + "</pp-navigation-desktop-menu>"
        "<div class='story'>" + prose() * 3 + "</div>"
        "<div class='articleSidebarList'>" + prose() * 2 + "</div>"
        "<div class='kommentare'>" + prose() * 2 + "</div></body></html>"
    )
    # Each block of surroundings holds as much prose as the story: only the rules, not
    # the cluster of most prose, leave them out.
    tree = lxml.html.document_fromstring(page)
    assert {p.getparent().get("class") for p in page_content(tree)} == {"story"}


def paragraphs(n: int) -> str:
    """Return four paragraphs of prose, the same for the same `n`."""
    rng = random.Random(n)
    return "".join(
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + ".</p>" for _ in range(4)
    )


def login_first(n: int) -> str:
    """Return an article with a logo `<h1>` in a link before it, and a login box with an
    `<h1>` of its own between its headline and its text."""
    story = paragraphs(n)
    return (
        f"<html><head><title>Bridge vote {n} | Gazette</title></head><body>"
        f"<a href='/'><h1>Gazette</h1></a><header><h1>Bridge vote {n}</h1></header>"
        f"<div class='lightbox'><h1>Log in</h1></div><article>{story}</article></body></html>"
    )


def drilled(site: Site, page: Callable[[int], str]) -> dict[str, dict[str, object]]:
    """Return the rows of `sitemapd drill --json` over six pages `page` writes."""
    for n in range(6):
        site.write(f"story-{n}.html", page(n))
    return drill_rows(site)


def test_the_headline_edited_is_the_one_the_title_says(site: Site) -> None:
    # The drill edits the page's headline, not the last `<h1>` before the article's text
    # (a login box's): editing that would report a miss the site's lastmods do not have.
    rows = drilled(site, login_first)
    row = rows["headline element alone"]
    assert (row["applied"], row["moved"]) == (6, 6)


def test_landmarks_are_never_content_whoever_names_the_content() -> None:
    # A ground truth that holds a footer's line or an aside's teaser does not make them
    # the article: the benchmark's truth oracles leave them out as the structural one does.
    tree = lxml.html.document_fromstring(
        "<html><body><nav><p>Home</p></nav><article><p>The story.</p>"
        "<aside><p>Other news.</p></aside></article><div class='col-sidebar'><p>Ad</p></div>"
        "<footer><p>Toll free: 1-800-555-0100.</p></footer></body></html>"
    )
    never = never_content(tree)
    said = {text_of(p) for p in tree.iter("p") if any(a in never for a in p.iterancestors())}
    assert said == {"Home", "Other news.", "Ad", "Toll free: 1-800-555-0100."}


def crumbs(n: int) -> str:
    """Return an article whose headline is the last item of its breadcrumb, beside a
    list of other stories."""
    story = paragraphs(n)
    trail = "".join(f"<li><a href='/{s}/'>{s}</a></li>" for s in ("home", "news", "region"))
    more = "".join(f"<li><a href='/story-{k}.html'>Story {k} headline</a></li>" for k in range(5))
    return (
        f"<html><head><title>Bridge vote {n} | Gazette</title></head><body><header><ul>"
        f"{trail}<li><h1><a href='/vote-{n}.html'>Bridge vote {n}</a></h1></li></ul></header>"
        f"<article>{story}</article><aside><ul>{more}</ul></aside></body></html>"
    )


def test_a_list_holding_the_headline_is_not_rotated(site: Site) -> None:
    # A breadcrumb whose last item is the page's `<h1>` is no "latest" box: dropping
    # its last item would change the headline, not the surroundings.
    rows = drilled(site, crumbs)
    rotation = rows["link lists outside the content rotate"]
    assert (rotation["applied"], rotation["moved"]) == (6, 0)
    assert rows["headline element alone"]["moved"] == 6


def prose_words(n: int, words: int = 30) -> str:
    """Return a sentence of `words` words, the same for the same `n`."""
    rng = random.Random(n)
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def written_into(n: int) -> str:
    """Return a press release written straight into a `<div>`: lines cut by `<br>`,
    pictures in paragraphs of their own between them, and its `<h1>` inside."""
    lines = "<br><br>".join(prose_words(n + k) for k in range(3))
    return (
        f"<html><head><title>Bridge vote {n} | Wire</title></head><body>"
        "<div class='release'><div class='rich-text'>"
        f"<h1>Bridge vote {n}</h1>{prose_words(n)}<p><img src='/a.jpg'></p>"
        f"<strong>{prose_words(n + 9, 4)}</strong><br>{lines}<p><img src='/b.jpg'></p>"
        f"{prose_words(n + 5)}</div></div>"
        f"<div class='releasefooter'><p>{prose_words(n + 7)}</p></div></body></html>"
    )


def test_a_story_written_into_a_container_is_its_content() -> None:
    # The text a container holds between its blocks is a paragraph: not seeing it made
    # the oracle edit the release's footer box, the only `<p>` of prose on the page.
    tree = lxml.html.document_fromstring(written_into(1))
    page = Page(tree, page_content(tree))
    assert [e.get("class") for e in page.content] == ["rich-text"]
    (story,) = page.content
    inner = [text_of(e) for e in story.iter("h1", "p", "strong")]
    loose = loose_text(story)
    assert edit_word(page)
    # The word changed is the story's own, not the heading's or a bold line's.
    assert [text_of(e) for e in story.iter("h1", "p", "strong")] == inner
    assert loose_text(story) != loose
    assert append_correction(page)
    assert text_of(story[-1]).startswith("Correction")
    # Its `<h1>` opens the story: the headline element, though inside the paragraph.
    assert headline(tree, page.content) is next(story.iter("h1"))


def test_edits_to_a_story_written_into_a_container_are_caught(site: Site) -> None:
    rows = drilled(site, written_into)
    for change in ("one word of a paragraph", "correction appended", "headline element alone"):
        assert (rows[change]["applied"], rows[change]["moved"]) == (6, 6), change


def teaser_cards(n: int, permalink: bool = False) -> str:
    """Return an article above a list of other stories' cards: a linked headline and a
    teaser of prose each; or, `permalink`, a post of one paragraph under its linked
    title, beside a box of related posts' linked headlines."""
    related = "".join(f"<h3><a href='/post-{k}.html'>Related post {k}</a></h3>" for k in range(3))
    cards = "".join(
        f"<div class='card'><h3><a href='/story-{k}.html'>Story {k} headline</a></h3>"
        f"<p class='summary'>{prose_words(n + k, 14)}</p></div>"
        for k in range(4)
    )
    if permalink:
        return (
            f"<html><head><title>Post {n}</title></head><body><div class='post'>"
            f"<h2><a href='/post-{n}.html'>Post {n}</a></h2><p>{prose_words(n, 40)}</p>"
            f"</div><aside>{related}</aside></body></html>"
        )
    return (
        f"<html><head><title>Bridge vote {n} | Gazette</title></head><body>"
        f"<article><h1>Bridge vote {n}</h1>{paragraphs(n)}</article>"
        f"<section id='more'>{cards}</section></body></html>"
    )


def test_another_pages_teaser_beside_its_linked_headline_is_not_content() -> None:
    tree = lxml.html.document_fromstring(teaser_cards(2))
    page = Page(tree, page_content(tree))
    assert {p.getparent().tag for p in page.content} == {"article"}
    assert append_correction(page)
    assert text_of(tree.xpath("//article/p[last()]")[0]).startswith("Correction")
    # A post of one paragraph under its own linked title is a post, not a teaser.
    tree = lxml.html.document_fromstring(teaser_cards(2, permalink=True))
    assert [p.tag for p in page_content(tree)] == ["p"]


def permalinked(n: int) -> str:
    """Return a post of one paragraph under its `<h1>` linked to itself, the title
    another text, beside a box of related posts' linked headlines (a common theme)."""
    related = "".join(f"<h3><a href='/post-{k}.html'>Related post {k}</a></h3>" for k in range(3))
    return (
        f"<html><head><title>Post {n}</title></head><body><main><article>"
        f"<h1><a href='/post-{n}.html'>A short post number {n} about the harbour</a></h1>"
        f"<p>{prose_words(n, 30)}</p></article></main><aside>{related}</aside></body></html>"
    )


def test_a_post_under_its_permalinked_headline_beside_related_links_is_drilled(
    site: Site,
) -> None:
    rows = drilled(site, permalinked)
    for change in ("one word of a paragraph", "correction appended"):
        assert (rows[change]["applied"], rows[change]["moved"]) == (6, 6), change


def test_ads_promotions_and_sign_up_boxes_are_not_content() -> None:
    boxes = "".join(
        f"<div class='{name}'><p>{prose_words(k, 40)}</p></div>"
        for k, name in enumerate(("ads-box", "BottomLeft-promo", "box-signup", "side_right"))
    )
    page = (
        "<html><head><title>Story | Gazette</title></head><body>"
        f"<div class='story'>{paragraphs(4)}</div>{boxes}</body></html>"
    )
    tree = lxml.html.document_fromstring(page)
    assert {p.getparent().get("class") for p in page_content(tree)} == {"story"}


def test_no_edit_goes_to_a_block_no_reader_reads_whoever_names_the_content() -> None:
    # A ground truth holding a cell with the site's copyright line names the cell; the
    # copyright paragraph inside it is still no paragraph of the article.
    tree = lxml.html.document_fromstring(
        f"<html><body><table><tr><td><p>{prose_words(1, 40)}</p>"
        f"<p class='copyright'>{prose_words(2, 12)}</p></td></tr></table></body></html>"
    )
    page = Page(tree, list(tree.iter("td")))
    assert append_correction(page)
    assert text_of(tree.xpath("//td/p[2]")[0]).startswith("Correction")


def test_the_word_edited_is_the_paragraphs_own_not_a_links() -> None:
    # A listing opens with its linked title: an editor's fix goes to its description.
    tree = lxml.html.document_fromstring(
        "<html><body><div class='listings'><p><b><a href='/lake'>99 McNee Drive, Golden "
        f"Lake</a></b> - $139,900 {prose_words(3, 40)}</p></div></body></html>"
    )
    page = Page(tree, page_content(tree))
    assert edit_word(page)
    assert text_of(next(tree.iter("a"))) == "99 McNee Drive, Golden Lake"
    assert next(tree.iter("b")).tail != f" - $139,900 {prose_words(3, 40)}"


def counted(n: int) -> str:
    """Return an article whose comment thread, named as the post's, opens with a heading
    counting its comments."""
    rng = random.Random(n)
    thread = "".join(
        f"<li class='comment'><p>Reader {k} wrote: "
        + " ".join(rng.choice(WORDS) for _ in range(20))
        + ".</p></li>"
        for k in range(3)
    )
    return article(n, "").replace(
        "</div></article>",
        "</div><div id='comments' class='post-comments'><div class='post-title-box'>"
        f"<h4>{n + 2} comments</h4></div><ol>{thread}</ol></div></article>",
    )


def test_a_count_of_comments_moves_no_page_alone_on_its_site() -> None:
    # One page a site, as the benchmark drills real pages: no template memory masks the
    # count, the extractor alone must leave it out.
    for n in range(3):
        data = counted(n).encode()
        report = drill([("story.html", data)], Settings(), TemplateMemory())
        counters = report.rows["counters outside the content"]
        assert (counters.applied, counters.moved) == (1, 0)
        assert report.rows["one word of a paragraph"].moved == 1


def test_the_counters_counted_up_are_counts_of_readers_not_prices_dates_or_names() -> None:
    # A CMS counts comments, views and votes anew on every request; a price, a reading
    # time, a date or a show's name beside a number stays as the page was written.
    tree = lxml.html.document_fromstring(
        counted(1).replace(
            "<footer>© Gazette</footer>",
            "<footer><span>42 Kommentare</span><span>1.2k views</span><span>19,90 EUR</span>"
            "<span>7 min</span><span>12 Octobre</span><span>13 Investigates</span></footer>",
        )
    )
    assert counters(Page(tree, page_content(tree)))
    spans = [text_of(s) for s in tree.iter("span")]
    # Each number of a counter goes up by seven, "1.2k" as its two numbers.
    assert spans == [
        "49 Kommentare",
        "8.9k views",
        "19,90 EUR",
        "7 min",
        "12 Octobre",
        "13 Investigates",
    ]
    assert text_of(next(tree.iter("h4"))) == "10 comments"


def post_with_thread(n: int, thread: str) -> str:
    """Return a blog post whose readers' comments follow it inside the post's block, in
    a thread whose class or id is `thread` ("post-comments", "comments")."""
    rng = random.Random(n)

    def prose(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)) + "."

    story = "".join(f"<p>{prose(40)}</p>" for _ in range(4))
    said = "".join(f"<li><p>Reader {k} wrote: {prose(30)}</p></li>" for k in range(3))
    return (
        f"<html><head><title>Post {n} | Blog</title></head><body>"
        f"<div class='post'><h1>Post {n}</h1><div class='post-entry'>{story}</div>"
        f"<div {thread}><h3>What readers say</h3><ol>{said}</ol></div></div></body></html>"
    )


def test_a_reader_s_new_comment_moves_no_page() -> None:
    names = ("class='post-comments'", "id='article-comments'", "id='comments'")
    pages = [(f"post-{n}.html", post_with_thread(n, name).encode()) for n, name in enumerate(names)]
    report = drill(pages, Settings(), TemplateMemory())
    row = report.rows["a reader's new comment"]
    assert (row.applied, row.moved, row.real) == (3, 0, False)
    assert report.rows["one word of a paragraph"].moved == 3
    # The comment is added after the thread's last, in its words' place: a new one.
    tree = lxml.html.document_fromstring(post_with_thread(0, names[0]))
    assert new_comment(Page(tree, page_content(tree)))
    texts = [text_of(c) for c in tree.iter("li")]
    assert len(texts) == 4
    assert texts[3] not in texts[:3]
    # A page without a thread has no comment to add.
    plain = lxml.html.document_fromstring(commented(1).replace("id='comments'", ""))
    plain_page = Page(plain, page_content(plain))
    assert not new_comment(plain_page)


def test_one_comment_by_its_markup_is_no_thread() -> None:
    # A forum marks each reply as schema.org's Comment: a reply's author card and its
    # message are not comments of a thread, and no part of a reply is written twice.
    rng = random.Random(7)
    replies = "".join(
        "<article class='message' itemprop='comment' itemscope "
        "itemtype='https://schema.org/Comment'>"
        f"<div class='message-cell message-cell--user'>Member {k}</div>"
        f"<div class='message-cell message-cell--main'><p>{prose_words(k, 30)}</p></div>"
        "</article>"
        for k in range(3)
    )
    page = (
        "<html><head><title>A thread | Forum</title></head><body><h1>A thread</h1>"
        f"<div class='opening'><p>{' '.join(rng.choice(WORDS) for _ in range(60))}.</p></div>"
        f"<div class='replies'>{replies}</div></body></html>"
    )
    tree = lxml.html.document_fromstring(page)
    assert not new_comment(Page(tree, page_content(tree)))
    assert len(tree.xpath("//div[contains(@class, 'message-cell')]")) == 6
    # Replies marked so inside a thread named as one are its comments.
    named = lxml.html.document_fromstring(page.replace("'replies'", "'comments'"))
    assert new_comment(Page(named, page_content(named)))
    assert len(named.xpath("//article")) == 4


def list_page(menus: str, main: str = "", around_main: str = "") -> str:
    """Return a section page of a short intro and a list of six stories, beside `menus`;
    `main` wraps intro and list in a `<main>`, `around_main` lies outside it."""
    items = "".join(
        f"<li><a href='/news/story-{k}.html'>Story {k} of the week</a></li>" for k in range(6)
    )
    body = f"<h1>News</h1><p>The latest.</p><ul class='stories'>{items}</ul>"
    if main:
        body = f"<{main}>{body}</{main.split()[0]}>"
    # A footer's text, so that no menu holds half the page's (a wrapper would).
    footer = f"<footer><p>{prose_words(9, 60)}</p></footer>"
    return (
        f"<html><head><title>News</title></head><body>{menus}{around_main}{body}{footer}"
        "</body></html>"
    )


def listed(page: str, attr: str = "class") -> str | None:
    """Return the `attr` of the list the oracle takes as `page`'s, None without one."""
    listing = main_list(lxml.html.document_fromstring(page))
    return None if listing is None else listing.get(attr)


def menu(name: str, count: int = 10) -> str:
    """Return a menu of `count` links longer than any story's, in a `<ul>` so named."""
    links = "".join(
        f"<li><a href='/s/{k}'>Section number {k} of the whole site</a></li>" for k in range(count)
    )
    return f"<ul {name}>{links}</ul>"


def test_a_menu_whose_name_runs_words_together_is_no_list_page_s_list() -> None:
    # A navigation word that ends a class or id word, or opens it before the part it
    # names, names a menu: "topnav", "navlist", "mainmenu", "hauptnavi", "px_topnav__".
    for name in (
        "id='navlist'",
        "class='px_topnav__wrapper'",
        "class='subnav'",
        "id='mainmenu'",
        "class='menulist'",
        "class='hauptnavi'",
    ):
        assert listed(list_page(menu(name))) == "stories", name
    # A word that merely holds the letters is no menu: "canvas", "navy", "unavailable".
    for name in ("class='canvas-links'", "class='navy'", "class='unavailable'"):
        assert listed(list_page(menu(name))) != "stories", name


def test_a_share_bar_is_no_list_and_a_wrapper_named_for_sharing_holds_the_story() -> None:
    # Blogger's bar under a post names the post it shares: "post-share-buttons".
    buttons = "".join(
        f"<a class='share-button' href='https://share.example/{k}'>Share to site {k}</a>"
        for k in range(5)
    )
    post = (
        "<html><head><title>Blog</title></head><body><div class='post'><h3><a "
        f"href='/old.html'>My old blog</a></h3><div class='post-body'>{prose_words(1, 20)}"
        f"</div><div class='post-share-buttons'>{buttons}</div></div></body></html>"
    )
    tree = lxml.html.document_fromstring(post)
    assert main_list(tree) is None
    assert [e.get("class") for e in page_content(tree)] == ["post-body"]
    # A block so named that holds prose is the story's wrapper, or a section named by
    # its heading: its paragraphs are content.
    for name in ("sr-body-share-wrapper", "sharing-with-a-single-developer"):
        tree = lxml.html.document_fromstring(
            f"<html><body><div class='{name}'>{paragraphs(3)}</div></body></html>"
        )
        assert len(page_content(tree)) == 4, name


def card_page(n: int) -> str:
    """Return a blog's home: six teaser cards (a picture's link, a linked title, an
    excerpt) beside a panel of a longer tag cloud, named as neither menu nor sidebar."""
    cards = "".join(
        f"<div class='post-preview'><a href='/posts/{k}/'><img src='/{k}.png'></a>"
        f"<h2><a href='/posts/{k}/'>Post {k}</a></h2><p>{prose_words(n + k, 20)}</p></div>"
        for k in range(6)
    )
    tags = "".join(f"<a href='/tags/{w}/'>{w} and more {w}</a> " for w in WORDS[:12])
    return (
        f"<html><head><title>Blog {n}</title></head><body><div id='post-list'>{cards}</div>"
        f"<div id='panel-wrapper'><h3>Trending Tags</h3><div class='tags'>{tags}</div></div>"
        "</body></html>"
    )


def test_a_list_of_teaser_cards_is_the_page_s_list_before_a_tag_cloud(site: Site) -> None:
    assert listed(card_page(1), "id") == "post-list"
    # A new post's card moves every page; the tag cloud rotates as surroundings.
    rows = drilled(site, card_page)
    new = rows["a new item in a list page's list"]
    assert (new["applied"], new["moved"]) == (6, 6)
    rotation = rows["link lists outside the content rotate"]
    assert (rotation["applied"], rotation["moved"]) == (6, 0)


def test_a_page_that_marks_its_main_content_has_its_list_there() -> None:
    # A feed's bar of links above `<main>` is not the list of the page it stands on.
    feed = "".join(f"<a href='/n/{k}'>Right now on the site: item {k}</a>" for k in range(5))
    bar = f"<div class='esf-now'><div class='esf-item-wrapper'>{feed}</div></div>"
    for main in ("main", "div role='main'"):
        assert listed(list_page("", main, bar)) == "stories", main
    tree = lxml.html.document_fromstring(
        f"<html><body>{bar}<main><h1>Picture of the day</h1><p>A lake.</p></main></body></html>"
    )
    assert main_list(tree) is None


def test_a_carousel_or_a_breadcrumb_is_no_page_s_list() -> None:
    # A shop's product page: its breadcrumb trail and a slider of other products are
    # lists of links, but the page is about neither; a list page's list is its own.
    crumbs = "".join(f"<li><a href='/c/{k}'>Category {k}</a></li>" for k in range(6))
    slides = "".join(
        f"<div class='swiper-slide'><a href='/p/{k}'>Other product {k}, with its long name</a>"
        "</div>"
        for k in range(8)
    )
    page = (
        f"<html><body><ul class='product__breadcrumb'>{crumbs}</ul><h1>A kettle</h1>"
        f"<p>Boils water.</p><div class='swiper-wrapper'>{slides}</div></body></html>"
    )
    assert main_list(lxml.html.document_fromstring(page)) is None
    plain = page.replace("product__breadcrumb", "trail").replace("swiper-wrapper", "others")
    assert listed(plain) == "others"


def test_the_title_of_an_item_of_a_list_page_is_not_its_headline(site: Site) -> None:
    # A theme that sets each card's linked title as an `<h1>`: no `<h1>` is the page's.
    def home(n: int) -> str:
        return card_page(n).replace("h2>", "h1>")

    rows = drilled(site, home)
    assert rows["headline element alone"]["applied"] == 0
    assert rows["a new item in a list page's list"]["moved"] == 6


def test_a_site_name_in_a_menu_or_linked_home_is_not_the_headline(site: Site) -> None:
    # A theme's mobile menu opens with the author's name as an `<h1>`, a menu its label:
    # a menu is no content, so an `<h1>` there that the title does not say is no headline
    # the drill edits; nor is the blog's name linked to the home, a logo.
    def home(n: int) -> str:
        menu = (
            "<header><h1 class='author'><a href='/'>Blog</a></h1></header>"
            "<nav id='mobile-nav'><h1>aliwa</h1><a href='/about/'>About</a></nav>"
            "<div role='navigation'><h1>Menu</h1><a href='/tags/'>Tags</a></div>"
        )
        return card_page(n).replace("<body>", f"<body>{menu}")

    tree = lxml.html.document_fromstring(home(1))
    assert headline(tree, page_content(tree)) is None
    rows = drilled(site, home)
    assert rows["headline element alone"]["applied"] == 0
    # Linked to itself, a post's `<h1>` is its headline.
    post = home(1).replace("<a href='/'>Blog</a>", "<a href='#'>Blog</a>")
    tree = lxml.html.document_fromstring(post)
    assert headline(tree, page_content(tree)) is next(tree.iter("h1"))
    # A breadcrumb's last item that says the title is the headline, in a `nav` or not.
    crumb = home(1).replace(
        "<h1>aliwa</h1>", "<ul><li><a href='/'>Home</a></li><li><h1>Blog 1</h1></li></ul>"
    )
    tree = lxml.html.document_fromstring(crumb)
    assert text_of(headline(tree, page_content(tree))) == "Blog 1"
    # Wrapped in a link to the post, the `<h1>` that says the title is the headline, not
    # the one of a share dialog; another story's linked `<h1>` is none.
    share = "<div class='reveal-modal'><h1>Share the post</h1><a href='/x'>X</a></div>"
    linked = home(1).replace(
        "<div id='post-list'>", "<a href='/blog-1/'><h1>Blog 1</h1></a><div id='post-list'>"
    )
    tree = lxml.html.document_fromstring(linked.replace("</body>", f"{share}</body>"))
    assert text_of(headline(tree, page_content(tree))) == "Blog 1"
    other = linked.replace("<h1>Blog 1</h1>", "<h1>Council approves budget</h1>")
    tree = lxml.html.document_fromstring(other)
    assert headline(tree, page_content(tree)) is None
    # Nor is the site's name linked to its about page, though the title ends with it.
    named = other.replace("Council approves budget", "Notes").replace("/blog-1/", "/about/")
    tree = lxml.html.document_fromstring(named.replace("<title>Blog 1", "<title>Blog 1 - Notes"))
    assert headline(tree, page_content(tree)) is None


def test_a_sidebar_of_teasers_each_an_article_is_not_content() -> None:
    # SPIP's and WordPress's "latest" widgets set each teaser as an `<article>` in a
    # list item: the sidebar holding them is no wrapper of the page, and its summaries,
    # longer than the story, are not what the page says.
    teaser = "".join(
        f"<li><article class='entry'><h3>Story {k}</h3><div class='intro'>"
        f"<p>{prose_words(k, 60)}</p></div><a href='/s/{k}'>Read on</a></article></li>"
        for k in range(6)
    )
    page = (
        "<html><head><title>Bridge vote</title></head><body><div id='content'><article>"
        f"<h1>Bridge vote</h1><div class='main'>{paragraphs(2)}</div></article></div>"
        f"<div id='aside' class='aside secondary'><ul>{teaser}</ul></div>"
        f"<nav>{menu('', 80)}</nav></body></html>"
    )
    tree = lxml.html.document_fromstring(page)
    assert {p.getparent().get("class") for p in page_content(tree)} == {"main"}
    # A block so named that holds the page's own `article` wraps it.
    wrapped = page.replace("<div id='content'>", "<div class='page has-sidebar'>")
    tree = lxml.html.document_fromstring(wrapped)
    assert {p.getparent().get("class") for p in page_content(tree)} == {"main"}


def test_a_canvas_s_video_s_or_audio_s_fallback_is_no_text() -> None:
    # Browsers draw the canvas and play the media: the words inside are for browsers
    # that lack them, and no edit goes there.
    for tag in ("canvas", "video", "audio"):
        tree = lxml.html.document_fromstring(
            f"<html><body><div id='story'>Hello<p>A short line.</p>"
            f"<{tag}>Your browser cannot show this drawing of the bridge</{tag}></div>"
            "</body></html>"
        )
        assert "bridge" not in text_of(tree.body), tag
        assert page_content(tree) == [], tag


def test_a_list_box_s_options_are_no_prose() -> None:
    # A product's text, then its reviews' sort box, whose options read as many words: the
    # edit goes to the text, not into the box's choices.
    options = "".join(f"<option>{prose_words(k, 3)}</option>" for k in range(6))
    tree = lxml.html.document_fromstring(
        f"<html><body><div id='reviews'><p>{prose_words(9, 40)}</p><div class='sort'>"
        f"<label>Sort by:</label><select>{options}</select></div></div></body></html>"
    )
    page = Page(tree, list(tree.xpath("//div[@id='reviews']")))
    before = [text_of(o) for o in tree.iter("option")]
    assert edit_word(page)
    assert [text_of(o) for o in tree.iter("option")] == before
    assert text_of(next(tree.iter("p"))) != prose_words(9, 40)


def test_a_table_of_facts_whose_values_link_is_no_list() -> None:
    # A product's specifications, a value or a term's help linked in each row: no CMS
    # rotates them. A table of links, a row each, still is a list.
    facts = "".join(
        f"<tr><th><a href='/help/{k}'>Term {k}</a></th><td><a href='/brand/{k}'>Value {k}</a>"
        "</td></tr>"
        for k in range(5)
    )
    links = "".join(f"<tr><td><a href='/story-{k}'>Story {k}</a></td></tr>" for k in range(5))
    tree = lxml.html.document_fromstring(
        f"<html><body><p>{prose_words(4, 40)}</p><table id='specs'><tbody>{facts}</tbody>"
        f"</table><table id='more'><tbody>{links}</tbody></table></body></html>"
    )
    page = Page(tree, list(tree.iter("p")))
    rotated = [holder for holder, _ in link_lists(page, None)]
    assert [next(h.iterancestors("table")).get("id") for h in rotated] == ["more"]


def test_a_landmark_wrapping_half_the_page_holds_its_content() -> None:
    # A theme that sets the whole page in its `<header>` (a fixed bar and the story under
    # it), or ASP.NET's `<form>` around every page: the story inside is the content.
    for wrapper in ("header id='header'", "form id='aspnetForm'"):
        tag = wrapper.split()[0]
        tree = lxml.html.document_fromstring(
            f"<html><head><title>Bridge vote</title></head><body><{wrapper}>"
            f"<a href='/'>Gazette</a><div class='story'><h1>Bridge vote</h1>{paragraphs(4)}"
            f"</div></{tag}><footer>{prose_words(2, 20)}</footer></body></html>"
        )
        content = page_content(tree)
        assert [p.getparent().get("class") for p in content] == ["story"] * 4, tag
        assert headline(tree, content) is next(tree.iter("h1"))
    # A header or form holding less is the site's: its prose is not the page's.
    tree = lxml.html.document_fromstring(
        f"<html><body><header><p>{prose_words(3, 20)}</p></header>"
        f"<div class='story'>{paragraphs(4)}</div></body></html>"
    )
    assert {p.getparent().get("class") for p in page_content(tree)} == {"story"}


def test_a_class_naming_a_layout_with_a_sidebar_is_no_sidebar() -> None:
    # "c-fixed-sidebar-layout--140@lg" lays the story out beside a sidebar; the sidebar
    # itself is "layout-3col__right-sidebar" or "sidebar".
    def page(name: str) -> str:
        return (
            "<html><head><title>Bridge vote</title></head><body><article><header>"
            f"<h1>Bridge vote</h1></header><div class='{name}'><div class='body'>"
            f"{paragraphs(4)}</div></div></article><nav>{menu('', 40)}</nav></body></html>"
        )

    for name in ("o-row c-fixed-sidebar-layout--140--left@lg", "sidebarLayout"):
        tree = lxml.html.document_fromstring(page(name))
        assert {p.getparent().get("class") for p in page_content(tree)} == {"body"}, name
    for name in ("layout-3col__right-sidebar", "sidebar grid-layout"):
        tree = lxml.html.document_fromstring(page(name))
        assert "body" not in {p.getparent().get("class") for p in page_content(tree)}, name


def test_a_page_that_cannot_be_read_is_named_not_drilled(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sitemapd.drill
    from sitemapd.config import load

    site.write("a.html", article(1, ""))
    # Deleted between the walk that chose it and the read.
    monkeypatch.setattr(sitemapd.drill, "_sample", lambda *_: ["a.html", "gone.html"])
    (report,) = sitemapd.drill.run_drill(load(site.config), 10)
    assert report.report.pages == 1
    shown = sitemapd.drill.render([report])
    assert "  not drilled: gone.html: cannot read it (No such file or directory)" in shown


def test_the_drill_s_columns_line_up_whatever_the_counts(site: Site) -> None:
    for n in range(12):
        site.write(f"story-{n}.html", article(n, teasers(6)))
    result = site.cli("drill", "--pages", "12", check=False)
    rows = [line for line in result.stdout.splitlines() if " moved (" in line]
    assert len({line.index("should") for line in rows}) == 1, result.stdout


def test_a_legacy_page_of_unclosed_tags_is_drilled_to_its_end(site: Site) -> None:
    # Every paragraph opens a `<div>` and a `<font>` it never closes: 600 levels deep.
    said = "The harbour's boats stayed on the mud until the rain came back in September"
    for n in range(3):
        paragraphs = "".join(
            f"<div class='para'><font><p>{said}, wrote reporter {k}.</p>" for k in range(300)
        )
        site.write(
            f"legacy-{n}.html",
            f"<html><head><title>Legacy {n}</title></head><body><h1>Legacy {n}</h1>"
            f"{paragraphs}</body></html>",
        )
    rows = drill_rows(site, "--pages", "3")
    for change in ("one word of a paragraph", "correction appended"):
        assert (rows[change]["applied"], rows[change]["moved"]) == (3, 3), change


def test_a_site_whose_text_no_edit_could_reach_does_not_pass(site: Site) -> None:
    # Galleries: a headline and pictures, no paragraph, no list.
    for n in range(4):
        site.write(
            f"gallery-{n}.html",
            f"<html><head><title>Gallery {n}</title></head><body><h1>Gallery {n}</h1>"
            f"<img src='/img/{n}-a.jpg'><img src='/img/{n}-b.jpg'></body></html>",
        )
    result = site.cli("drill", check=False)
    assert result.returncode == 1, result.stdout
    edit = next(line for line in result.stdout.splitlines() if "one word" in line)
    assert edit.endswith("n/a: none of these pages has one")
    assert "FAIL: no page's text could be edited" in result.stdout
