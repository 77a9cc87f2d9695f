"""The extractor's rules, each on a generated page that shows it: what a page's content
is decides whether an edit moves its fingerprint and a rotated box does not."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable

import pytest
from lxml import etree

from sitemapd.fingerprint import Settings, TemplateMemory
from sitemapd.sources.pages import read_file

Element = etree._Element

# A story written as one block of lines cut by <br> (legacy CMSs, wire copy).
_LINES = [
    "NEW DELHI: Shares of state-owned banks traded higher on Thursday, led by the "
    "larger lenders, after the government said it would inject fresh capital.",
    "The index of public sector banks rose two percent, while the wider market, "
    "weighed down by metal and energy stocks, stayed flat.",
    "Analysts said the move, long awaited by investors, would ease pressure on "
    "balance sheets, though bad loans remain high.",
    "Among the gainers, the largest lender rose three percent, its rival two, and "
    "smaller banks, in thin trade, up to five percent.",
    "The finance ministry, in a statement, said the capital would be paid in two "
    "tranches, the first of them before the end of the quarter.",
    "Traders expect, given the news, more buying in the sector over the coming "
    "sessions, unless global markets turn lower again.",
]


def digest(html: str) -> str:
    """Return the fingerprint of the page `html`, alone on its site."""
    return read_file("a.html", html.encode(), Settings()).digest(TemplateMemory())


def br_story_page(lines: list[str], band: list[str]) -> str:
    """Return a page whose story is one block of `<br>` lines, beside a band of short
    one-line boxes named "content" (market figures, teasers)."""
    boxes = "".join(f"<div class='band-content-left'><p>{text}</p></div>" for text in band)
    story = "<br><br>".join(lines)
    return (
        "<html><head><title>Bank shares rise | Daily</title></head><body>"
        f"<section class='page'><div class='band clearfix'>{boxes}</div>"
        "<section><div class='wrap'><article><h1>Bank shares rise</h1>"
        f"<div class='text'><div class='section1'><div class='Normal'>{story}</div></div>"
        "</div></article></div></section>"
        "<div class='copyright'>Copyright Daily. All rights reserved.</div>"
        "</section></body></html>"
    )


_BAND = [
    f"Sensex {n}: index closes {n} points higher, led by banks, metals and autos" for n in range(5)
]


def test_a_story_of_br_lines_is_the_content_not_a_band_of_one_line_content_boxes() -> None:
    before = digest(br_story_page(_LINES, _BAND))
    edited = [*_LINES]
    edited[2] = edited[2].replace("long awaited", "long expected")
    assert digest(br_story_page(edited, _BAND)) != before
    corrected = [*_LINES, "Correction: an earlier version misstated the index's rise."]
    assert digest(br_story_page(corrected, _BAND)) != before
    # The band's figures change all day: not what the page says.
    assert digest(br_story_page(_LINES, [t.replace("higher", "lower") for t in _BAND])) == before


def retailer_page(retailers: list[str], word: str = "fast") -> str:
    """Return an article holding a row of retailers' links between its paragraphs."""
    row = " | ".join(f"<a href='/go/{r.lower()}'>{r}</a>" for r in retailers)
    paragraph = (
        f"<p>The new graphics card is {word}, quiet and, for what it does, cheaper than "
        "the last one; it runs every game we tried at high settings, and its fans, even "
        "under load, stay below the noise of a desk fan.</p>"
    )
    return (
        "<html><head><title>Graphics card review | Hardware</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/reviews'>Reviews</a></nav>"
        "<article><h1>Graphics card review</h1>"
        f"{paragraph * 4}<p>US pre-built gaming systems at a glance: {row}</p>{paragraph * 3}"
        "</article></body></html>"
    )


def test_a_row_of_links_inside_the_article_rotates_without_moving_it() -> None:
    shops = ["Alpha", "Bravo", "Charlie", "Delta", "Echo"]
    before = digest(retailer_page(shops))
    assert digest(retailer_page(["Foxtrot", *shops[:-1]])) == before
    assert digest(retailer_page(shops, word="swift")) != before


def test_a_paragraph_citing_a_few_sources_stays_content() -> None:
    def page(claim: str) -> str:
        cited = (
            f"<p>The study, {claim}, was covered by <a href='/a'>one paper</a>, "
            "<a href='/b'>a second paper</a> and <a href='/c'>a radio show</a>, and its "
            "authors, asked about the doubts of other teams, answered that the data, "
            "all of it public, would settle the question within a year.</p>"
        )
        body = "<p>Scientists measured the winter ice of the lake for forty years.</p>" * 4
        return (
            "<html><head><title>Lake ice | Science</title></head><body>"
            f"<article><h1>Lake ice</h1>{body}{cited}</article></body></html>"
        )

    assert digest(page("published in spring")) != digest(page("published in autumn"))


def test_an_article_header_of_headline_and_links_is_not_a_row_of_links() -> None:
    def page(h1: str) -> str:
        body = (
            "<p>The council met on Monday, for the third time this month, and voted the "
            "budget for the river bridge after a long debate about its cost.</p>"
        ) * 5
        return (
            "<html><head><title>Budget passed | Town Council Gazette Online</title></head>"
            "<body><h1><a href='/'>Town Council Gazette Online</a></h1><article><header>"
            "<div><a href='/c/general'>General</a>, <a href='/c/news'>News</a></div>"
            "<div>Published on <a href='/budget'>5 April</a></div>"
            f"<h1>{h1}</h1><div>by <a href='/a/editor'>the editor</a></div></header>"
            f"{body}</article></body></html>"
        )

    # The site's name in the logo shares more words with the title than the story's
    # `<h1>` does: the story's headline is known by the article's text alone.
    assert digest(page("Budget passed")) != digest(page("Budget voted"))


def commented_page(count: str, sentence: str = "The clip had <b>900 views</b> by noon.") -> str:
    """Return a post ending with a box counting its comments, `count`, named as the
    post's (`post-title-box`), above its comment thread, beside a "N views" label."""
    story = (
        "<p>The council met on Monday, for the third time this month, and voted the "
        "budget for the river bridge, which rose 2 percent, after a long debate.</p>"
    ) * 4
    thread = "".join(
        f"<li class='comment'><p>Reader {k} wrote that the bridge, long overdue, will "
        "help the market, the school and, in winter, the harbour.</p></li>"
        for k in range(3)
    )
    return (
        "<html><head><title>Budget passed | Gazette</title></head><body>"
        "<article class='post'><h1>Budget passed</h1>"
        f"<div class='post-meta'><span>1.2k views</span></div>"
        f"<div class='post-entry'>{story}<p>{sentence}</p>"
        f"<div class='post-title-box'><h4>{count}</h4></div></div>"
        f"<div id='comments' class='post-comments'><ol>{thread}</ol></div>"
        "</article></body></html>"
    )


def test_a_counter_label_alone_is_not_content() -> None:
    # A CMS counts comments and views anew on every request; the page says nothing new.
    before = digest(commented_page("2 comments"))
    assert digest(commented_page("9 comments")) == before
    assert digest(commented_page("27 commentaires")) == digest(commented_page("34 commentaires"))
    assert digest(commented_page("Comments (2)")) == digest(commented_page("Comments (9)"))
    assert digest(commented_page("2 comments").replace("1.2k", "1.3k")) == before
    # What is not a count of comments or views stays: a heading naming a date.
    assert digest(commented_page("12 May")) != digest(commented_page("13 May"))


def test_numbers_in_the_article_s_sentences_stay_content() -> None:
    before = digest(commented_page("2 comments"))
    # A number of a paragraph's sentence, inline or in a counter's words, is its text.
    assert digest(commented_page("2 comments").replace("rose 2 percent", "rose 3 percent")) != (
        before
    )
    edited = "The clip had <b>950 views</b> by noon."
    assert digest(commented_page("2 comments", edited)) != before
    assert digest(commented_page("2 comments", "<b>900 views</b>")) == digest(
        commented_page("2 comments", "<b>950 views</b>")
    )


def thread_page(comments: list[str], name: str) -> str:
    """Return a post followed by its readers' comments in a block named `name` (a
    comment thread named as the post's: `class="post-comments"`)."""
    story = (
        "<p>The council met on Monday, for the third time this month, and voted the "
        "budget for the river bridge, which rose 2 percent, after a long debate.</p>"
    ) * 4
    thread = "".join(
        f"<li><p>{text}, wrote a reader, who added that the bridge, long overdue, will "
        "help the market, the school and, in winter, the harbour.</p></li>"
        for text in comments
    )
    return (
        "<html><head><title>Budget passed | Gazette</title></head><body>"
        f"<div class='post'><h1>Budget passed</h1><div class='post-entry'>{story}</div>"
        f"<div {name}><h3>What readers say</h3><ol>{thread}</ol></div></div>"
        "</body></html>"
    )


def test_a_comment_thread_named_with_an_article_word_is_not_content() -> None:
    readers = ["Good news at last", "About time too"]
    for name in ("class='post-comments'", "id='article-comments'", "class='entry_kommentare'"):
        before = digest(thread_page(readers, name))
        # A reader's new comment: the post says nothing new.
        assert digest(thread_page([*readers, "Finally some sense"], name)) == before
        # The post's own edit still moves it.
        edited = thread_page(readers, name).replace("long debate", "short debate", 1)
        assert digest(edited) != before


def blog_home(posts: list[list[str]]) -> str:
    """Return a blog's home page holding `posts` in full, each a title and paragraphs,
    beside a sidebar of links."""
    shown = "".join(
        f"<div class='post'><h3 class='post-title'><a href='/p/{n}'>Post {n}</a></h3>"
        f"<div class='post-body'>{''.join(f'<p>{p}</p>' for p in paragraphs)}</div>"
        f"<p class='post-footer'>posted by <a href='/me'>me</a> | "
        f"<a href='/p/{n}#c'>{n} comments</a></p></div>"
        for n, paragraphs in enumerate(posts)
    )
    sidebar = "".join(f"<li><a href='/archive/{m}'>Archive {m}</a></li>" for m in range(12))
    return (
        "<html><head><title>A walker's notes</title></head><body>"
        f"<div id='main'>{shown}</div><div id='sidebar'><ul>{sidebar}</ul></div>"
        "</body></html>"
    )


def test_a_blog_home_of_several_full_posts_keeps_each_of_them() -> None:
    first = [
        "We walked the ridge on Sunday, in fog at first, then in sun, and saw the whole "
        "valley, its villages, its river and, far off, the lake, before the rain came.",
    ] * 6
    second = [
        "The hut was closed for the winter, so we ate by its door, out of the wind, and "
        "talked, as walkers do, about the next walk, the one across the pass.",
    ] * 2
    before = digest(blog_home([first, second]))
    # The shorter, older post is as much the page's as the longest one.
    edited = [second[0].replace("closed", "shut"), second[1]]
    assert digest(blog_home([first, edited])) != before
    assert digest(blog_home([first, [*second, "Correction: it was Saturday."]])) != before
    assert digest(blog_home([[first[0].replace("fog", "mist"), *first[1:]], second])) != before


def guide_page(word: str) -> str:
    """Return a documentation page whose sections carry their headings' slugs as ids,
    one of them holding a word of a template part's name ("sharing")."""
    paragraph = (
        "<p>Once you have set up the repository, push your draft changes to the "
        f"server, where your colleague, {word} as ever, pulls them and reviews them.</p>"
    )
    return (
        "<html><head><title>Guide | Docs</title></head><body>"
        "<div class='document'><h1>Guide</h1>"
        f"<div class='section' id='setting-up-a-repository'><h2>Setting up a repository"
        f"</h2>{paragraph * 6}</div>"
        f"<div class='section' id='sharing-with-a-single-developer'><h2>Sharing with a "
        f"single developer</h2>{paragraph.replace('your colleague', 'a friend') * 2}</div>"
        "</div></body></html>"
    )


def test_a_section_id_that_is_its_heading_s_slug_names_no_template_part() -> None:
    before = digest(guide_page("careful"))
    edited = guide_page("careful").replace("a friend, careful", "a friend, cautious", 1)
    assert edited != guide_page("careful")
    assert digest(edited) != before


def test_a_numbered_section_s_slug_names_no_template_part() -> None:
    # Sphinx slugs "5.1. More on Lists" as "more-on-lists", which reads as "more on ...".
    def numbered(word: str) -> str:
        return (
            guide_page("careful")
            .replace("id='sharing-with-a-single-developer'", "id='more-on-lists'")
            .replace("<h2>Sharing with a single developer", "<h2>5.1. More on Lists")
            .replace("a friend, careful", f"a friend, {word}", 1)
        )

    assert digest(numbered("cautious")) != digest(numbered("careful"))


def paywalled_page(lead: str) -> str:
    """Return a paywalled story: its one paragraph shown, in a column that also holds a
    share bar and a "related" box of many links, below a header of links."""
    related = "".join(
        f"<li><a href='/news/{n}'>Other story number {n} of the island's news</a></li>"
        for n in range(8)
    )
    share = "".join(f"<a href='/share/{s}'>Share on {s}</a>" for s in ("mail", "chat", "feed"))
    return (
        "<html><head><title>Prison official speaks | Compass</title></head><body>"
        "<article class='post'><div class='post-header'><h1>Prison official speaks</h1>"
        "<ul class='cats'><li><a href='/c/news'>News</a></li><li><a href='/c/crime'>"
        "Crime</a></li></ul></div><div class='container'><div class='main-column'>"
        f"<div class='post-sharing-top'>{share}</div>"
        f"<div class='post-body'><p>{lead}</p><div class='paywall'>Subscribe to read "
        "on</div></div><div class='related-posts'><h4>More</h4><ul>"
        f"{related}</ul></div></div></div></article></body></html>"
    )


def test_a_column_holding_the_story_beside_a_related_box_is_not_a_link_list() -> None:
    lead = (
        "A senior prison official has said in a sworn statement that anyone, given "
        "enough determination, could escape from the island's only prison."
    )
    before = digest(paywalled_page(lead))
    assert digest(paywalled_page(lead.replace("senior", "junior"))) != before
    assert digest(paywalled_page(lead + " Correction: the statement was made in May.")) != before


def section_page(headlines: list[str], og_type: str = "website") -> str:
    """Return a section page: a featured story's teaser of a few lines above the list of
    the section's latest stories, each a linked headline and its date."""
    items = "".join(
        f"<li><a href='/news/{n}'>{text}</a> <span>12 May</span></li>"
        for n, text in enumerate(headlines)
    )
    return (
        f"<html><head><title>Town | Gazette</title><meta property='og:type' "
        f"content='{og_type}'></head><body><nav><a href='/'>Home</a></nav><main>"
        "<div class='featured'><h2>Bridge opens</h2><p>The river bridge, closed for two "
        "years of repairs, opened on Monday, and the first buses, to cheers, crossed it "
        "before dawn, as the mayor, who had promised it for May, looked on.</p></div><ul>"
        f"{items}</ul></main></body></html>"
    )


def test_a_new_story_in_a_section_page_s_list_moves_it() -> None:
    stories = [f"Council votes budget number {n} for the harbour" for n in range(8)]
    before = digest(section_page(stories))
    assert digest(section_page(["Striker signs a three year deal", *stories])) != before
    # A page that says it is an article is its article: the list around it is not.
    article = digest(section_page(stories, "article"))
    assert digest(section_page(["Striker signs", *stories[:-1]], "article")) == article


def small_home(headlines: list[str], related: list[str] | None = None) -> str:
    """Return a small site's home: a line of intro and a short list of linked stories
    in its `<main>`, and a "related" box of other links there too."""
    items = "".join(f"<li><a href='/news/{n}'>{h}</a></li>" for n, h in enumerate(headlines))
    box = "".join(f"<li><a href='/more/{n}'>{h}</a></li>" for n, h in enumerate(related or []))
    return (
        "<html><head><title>Gazette</title></head><body><header><nav><a href='/'>Home</a> "
        "<a href='/news/'>News</a></nav></header><main><article><h1>Gazette</h1>"
        f"<p>Local news from the city.</p><ul>{items}</ul></article>"
        f"<ul class='related'>{box}</ul></main></body></html>"
    )


def test_a_new_story_in_a_small_home_s_short_list_moves_it() -> None:
    # Too little prose to score and too little link text for a page's list anywhere:
    # inside the page's one `<main>`, a list of linked stories is still its content.
    stories = ["Budget approved", "Marathon record", "Café reviews", "Ask the desk", "Weather"]
    related = ["Partner news one", "Partner news two", "Partner news three"]
    before = digest(small_home(stories, related))
    assert digest(small_home(["Bridge reopens", *stories[:-1]], related)) != before
    assert digest(small_home(stories, ["Partner news zero", *related[:-1]])) == before


def test_a_page_wrapper_named_for_its_open_comments_is_not_a_thread() -> None:
    def page(word: str) -> str:
        story = (
            f"<p>The council met on Monday, for the {word} time this month, and voted the "
            "budget for the river bridge after a long debate about its cost.</p>"
        ) * 5
        return (
            "<html><head><title>Budget passed | Gazette</title></head><body>"
            f"<div class='comments-open'><h1>Budget passed</h1>{story}</div></body></html>"
        )

    assert digest(page("third")) != digest(page("fourth"))


def sectioned_page(second: list[str], newest: int = 8) -> str:
    """Return an article in two parts: six paragraphs, then `second`'s paragraphs around
    a box of links to other stories (which makes the second part a link-heavy block)."""
    first = "".join(
        f"<p>Paragraph {n} of the report: the council met on Tuesday, heard the "
        f"engineers, weighed the costs of the bridge, and voted, after a long debate, "
        f"to repair it rather than build anew, as residents had asked.</p>"
        for n in range(6)
    )
    box = "".join(
        f"<li><a href='/news/{n}'>Another story of the week, number {n}, worth a read</a></li>"
        for n in range(newest, newest - 8, -1)
    )
    rest = "".join(f"<p>{text}</p>" for text in second[:1])
    rest += f"<div class='callout'><ul>{box}</ul></div>"
    rest += "".join(f"<p>{text}</p>" for text in second[1:])
    return (
        "<html><head><title>Council repairs the bridge</title></head><body>"
        "<article><h1>Council repairs the bridge</h1>"
        f"<div class='part'>{first}</div><div class='part'>{rest}</div>"
        "</article></body></html>"
    )


_SECOND = [
    "Work starts in the spring and should end before winter, the city engineer said, "
    "adding that traffic will be diverted over the old ferry road while it lasts, and "
    "that buses will keep their stops, though most of them will run ten minutes later.",
    "Residents who had campaigned for a repair welcomed the vote, though some, living "
    "near the river, still fear months of noise, dust and closed lanes in their streets, "
    "and asked the council to pay for new windows in the houses closest to the works.",
]


def test_a_short_paragraph_after_a_stray_one_is_the_article_s_too() -> None:
    before = digest(sectioned_page(_SECOND))
    corrected = [*_SECOND, "Correction: the works start in April, not in March."]
    assert digest(sectioned_page(corrected)) != before
    # The box of other stories is not the article: it rotates without moving it.
    assert digest(sectioned_page(_SECOND, newest=9)) == before


def twice_page(first: str, second: str) -> str:
    """Return a page stating its headline twice, in a title bar and above the story."""
    story = "".join(
        f"<p>Guests praise the beach, the food and the staff, review {n} says, though the "
        f"rooms, last refitted years ago, show their age and the pool closes early.</p>"
        for n in range(4)
    )
    return (
        "<html><head><title>Hotel Kawama - Varadero - Reviews</title></head><body>"
        f"<div id='pagetitle'><h1 class='masthead'>{first}</h1></div>"
        f"<div id='title2'><h1 class='header'>{second}</h1></div>"
        f"<div class='reviews'>{story}</div></body></html>"
    )


def test_a_headline_said_twice_moves_the_page_when_either_changes() -> None:
    before = digest(twice_page("Hotel Kawama", "Hotel Kawama"))
    assert digest(twice_page("Hotel Kawama Resort", "Hotel Kawama")) != before
    assert digest(twice_page("Hotel Kawama", "Hotel Kawama Resort")) != before


def sidebar_page(story: list[str], newest: int = 9) -> str:
    """Return a short story beside an `<aside>` of long listings, each a linked title
    above a description of its own, newest first: more prose than the story, less than
    half the page with the site's menu and footer."""
    menu = "".join(
        f"<li><a href='/section/{n}'>Section of the site {n}</a></li>" for n in range(60)
    )
    listings = "".join(
        f"<div class='item'><a href='/report/{n}'>Report {n}</a><p>Fire crews were called "
        f"to a house on street number {n}, where a kitchen fire, started by a pan left on "
        f"the stove, was put out within minutes; nobody was hurt, the crews said.</p></div>"
        for n in range(newest, newest - 6, -1)
    )
    text = "".join(f"<p>{line}</p>" for line in story)
    return (
        "<html><head><title>Ambulance called to the harbour</title></head><body>"
        f"<nav><ul>{menu}</ul></nav>"
        "<div class='wrap'><div class='col-a'><div class='ads-details-wrapper'>"
        f"<h1>Ambulance called to the harbour</h1><div><div>{text}</div></div></div></div>"
        f"<aside class='col-b'><div class='panel'>{listings}</div></aside>"
        "</div></body></html>"
    )


_STORY = [
    "On Friday the ambulance rushed to the harbour, where a man had fallen from the quay "
    "into the water while mooring his boat.",
    "Divers brought him out within minutes; he was taken to hospital, cold but unhurt, "
    "the harbour master said.",
    "It was the third such fall this year, and the council will look again at railings "
    "along the quay.",
]


def test_a_sidebar_of_long_listings_does_not_outscore_the_story_beside_it() -> None:
    before = digest(sidebar_page(_STORY))
    edited = [_STORY[0], _STORY[1].replace("within minutes", "within ten minutes")]
    assert digest(sidebar_page(edited)) != before
    assert digest(sidebar_page([*_STORY, "Correction: he fell at the north quay."])) != before
    # The sidebar's listings come and go without moving the story.
    assert digest(sidebar_page(_STORY, newest=10)) == before


def blog_post_page(post_h1: str) -> str:
    """Return a blog post whose theme sets the blog's name and tagline as an `<h1>` in
    its masthead; the title says the post's headline and the blog's name, Open Graph
    the post's alone."""
    body = "".join(
        f"<p>Fog again this morning, day {n} of it: the river, the fields and the road to "
        f"the village all gone grey, and the dog, as ever, delighted by it.</p>"
        for n in range(4)
    )
    return (
        "<html><head><title>Fog soup. | Life, the master and me</title>"
        "<meta property='og:title' content='Fog soup.'></head><body>"
        "<header id='branding'><hgroup><h1 id='site-title'>Life, the master and me</h1>"
        "</hgroup></header><div id='content'><article class='post'>"
        f"<header class='entry-header'><h1 class='entry-title'>{post_h1}</h1></header>"
        f"<div class='entry-content'>{body}</div></article></div></body></html>"
    )


def test_an_h1_saying_the_open_graph_title_is_the_headline_not_the_blog_s_name() -> None:
    before = digest(blog_post_page("Fog soup."))
    assert digest(blog_post_page("Fog soup again.")) != before


def calendar_blog_page(linked: set[int], word: str = "long") -> str:
    """Return a blog's page laid out in one table: the post, and under it in the same
    cell the month's calendar, whose days with a post are links to that day."""
    cells = ["<td></td>"] * 5
    for day in range(1, 32):
        cells.append(
            f"<td><a href='/2005/01/{day:02}.html'>{day}</a></td>"
            if day in linked
            else f"<td>{day}</td>"
        )
    rows = "".join(f"<tr>{''.join(cells[n : n + 7])}</tr>" for n in range(0, len(cells), 7))
    post = "".join(
        f"<p>The press freedom group counted, in its {word} yearly report, the reporters "
        f"killed at work, {n} of them in one country, and asked governments to act.</p>"
        for n in range(4)
    )
    return (
        "<html><head><title>Journalism weblog</title></head><body><table><tr><td>"
        f"<div>Group calls 2004 most deadly year</div>{post}"
        "<table><tr><td colspan='7'>January 2005</td></tr><tr><td>Sun</td><td>Mon</td>"
        "<td>Tue</td><td>Wed</td><td>Thu</td><td>Fri</td><td>Sat</td></tr>"
        f"{rows}</table></td></tr></table></body></html>"
    )


def test_a_blog_s_calendar_is_not_content() -> None:
    before = digest(calendar_blog_page({2, 5, 6, 8, 9, 11, 13, 17}))
    # A new post links its day: the calendar changed, not what this page says.
    assert digest(calendar_blog_page({2, 5, 6, 8, 9, 11, 13, 17, 20})) == before
    assert digest(calendar_blog_page({2, 5, 6, 8, 9, 11, 13, 17}, word="last")) != before


def _post(word: str) -> str:
    return "".join(
        f"<p>Our guest this week, a {word} friend of the blog, wrote about the city's "
        f"markets, day {n} of her visit, the stalls, the food and the people she met.</p>"
        for n in range(4)
    )


def episodes_page(episodes: int, word: str = "old") -> str:
    """Return a blog post whose cell also holds the index of a series' episodes under
    its label, each a link of one digit."""
    index = " • ".join(f"<a href='/week/{n}'>{n}</a>" for n in range(1, episodes + 1))
    return (
        "<html><head><title>Guest week, day 5</title></head><body><table><tr><td>"
        f"<h2>Guest week, day 5</h2>{_post(word)}<div class='links'><b>audio olympics guest "
        f"week</b><br>{index}</div></td></tr></table></body></html>"
    )


def test_a_labelled_index_of_short_links_is_not_content() -> None:
    before = digest(episodes_page(5))
    # Another episode joins the index: the post says nothing new.
    assert digest(episodes_page(6)) == before
    assert digest(episodes_page(5, word="dear")) != before


def related_pane_page(related: list[str], word: str = "open", box: str = "relatedPane") -> str:
    """Return a story whose block also holds a box with the id `box` of other stories'
    teasers."""
    story = "".join(
        f"<p>The company said it would {word} the source of its operating system, part "
        f"{n} of a plan to win back developers, under a licence of its own.</p>"
        for n in range(4)
    )
    teasers = "".join(
        f"<div><a href='/news/{n}'>Story {n}</a><p>{text}, the company's rivals said on "
        "the day, though analysts doubt it.</p></div>"
        for n, text in enumerate(related)
    )
    return (
        "<html><head><title>Source opened</title></head><body><div class='body'>"
        f"<h2>Source opened</h2>{story}<div id='{box}'>{teasers}</div></div>"
        "</body></html>"
    )


# Run together ("relatedPane", "footerContent" as "footercontent") or in camel case
# ("sponsoredProducts", "socialShareButtons"), a template word names a template part.
@pytest.mark.parametrize(
    "box", ["relatedPane", "sponsoredProducts2", "socialShareButtons", "footerContent"]
)
def test_a_template_word_run_together_or_in_camel_case_names_a_template_part(box: str) -> None:
    related = ["Patent protection planned", "A new licence drafted", "Developers wait"]
    before = digest(related_pane_page(related, box=box))
    assert digest(related_pane_page(["Partners sign up", *related[:-1]], box=box)) == before
    assert digest(related_pane_page(related, word="close", box=box)) != before


def test_a_generated_name_spells_no_template_word() -> None:
    # CSS-in-JS names are hashes: "adFHlH" is no "ad", "navQpZ" no "nav". A box of
    # teasers with such a name inside the story is the story's: editing it moves it.
    for box in ("adFHlH", "navQpZ"):
        related = ["Patent protection planned", "A new licence drafted"]
        before = digest(related_pane_page(related, box=box))
        edited = related_pane_page(["Patent protection dropped", related[1]], box=box)
        assert digest(edited) != before


def _news_article(headline: str, modified: str) -> str:
    """Return a JSON-LD `NewsArticle` block of `headline`, last modified `modified`, its
    apostrophes written as HTML character references (as some CMSs escape JSON-LD)."""
    data = json.dumps(
        {
            "@context": "https://schema.org",
            "@type": "NewsArticle",
            "headline": headline.replace("'", "&#039;"),
            "dateModified": modified,
        }
    )
    return f"<script type='application/ld+json'>{data}</script>"


def described_teasers_page(teasers: list[str], modified: str = "2024-05-02") -> str:
    """Return a story whose box of other stories carries, with each teaser, the JSON-LD
    article object of that story (as some CMS templates render them)."""
    story = "".join(
        f"<p>Drinks for the games will reach the city centre by boat, barge {n} of the "
        "fleet carrying crates along the river at night, the organisers said.</p>"
        for n in range(4)
    )
    box = "".join(
        f"<div class='teaser'>{_news_article(t, '2024-05-01')}<a href='/n/{n}'>{t}</a></div>"
        for n, t in enumerate(teasers)
    )
    own = _news_article("Drinks by boat to the city's centre", modified)
    return (
        "<html><head><title>Drinks by boat to the city's centre | Trade</title></head><body>"
        f"<main><div class='item-page'>{own}"
        f"<h1>Drinks by boat to the city's centre</h1>{story}</div>"
        f"<div class='topics'>{box}</div></main></body></html>"
    )


def test_the_structured_data_of_other_stories_teasers_is_not_the_page_s() -> None:
    teasers = ["Vegan fish on the shelves", "A new warehouse opens", "Chef's last day"]
    before = digest(described_teasers_page(teasers))
    assert digest(described_teasers_page(["Sales rise again", *teasers[:-1]])) == before
    # The page's own article object is still what the page says.
    assert digest(described_teasers_page(teasers, modified="2024-05-03")) != before


def _archive(titles: list[str]) -> str:
    """Return an archive table of past columns, each a link with its date beside it."""
    return "".join(
        f"<tr><td>» <a href='/ask/{n}.html'>{title}</a> (May {n + 1:02}, 2006)</td></tr>"
        for n, title in enumerate(titles)
    )


def archive_page(titles: list[str], word: str = "different") -> str:
    """Return a column laid out in one table, whose cell also holds the archive of past
    columns: a link and its date a row, more text outside links than a link list has."""
    column = "".join(
        f"<p>I'm confused about the {word} imaging technologies, question {n}: what is "
        "the difference between a scan of one kind and another, and which is safer?</p>"
        for n in range(4)
    )
    return (
        "<html><head><title>Ask the doctor</title></head><body><table><tr><td>"
        f"<h2>To scan or not to scan</h2>{column}<table>{_archive(titles)}</table>"
        "</td></tr></table></body></html>"
    )


def test_a_list_of_links_each_with_its_date_is_not_content() -> None:
    # Short titles: a row is as much its date as its link, no row a link list.
    titles = [f"Column {n}" for n in range(30)]
    before = digest(archive_page(titles))
    # A new column joins the archive, the oldest leaves it: the page says nothing new.
    assert digest(archive_page(["Flu", *titles[:-1]])) == before
    assert digest(archive_page(titles, word="many")) != before


def events_page(events: list[tuple[int, str]], word: str = "small") -> str:
    """Return a market report whose block also holds a labelled table of coming events:
    a date, a linked title, a host and a company a row."""
    report = "".join(
        f"<p>The dollar traded in {word} volumes at the start of the year, day {n} of "
        "the holidays, as traders waited for the jobs report due on Friday.</p>"
        for n in range(4)
    )
    rows = "".join(
        f"<tr><td>Tue, Jan {day}, 11:00 GMT</td><td><a href='/live/{day}'>{title}</a></td>"
        "<td>Tony Juste</td><td>WBN</td></tr>"
        for day, title in events
    )
    return (
        "<html><head><title>Dollar quiet</title></head><body><div class='content'>"
        f"<h1>Dollar quiet</h1>{report}<table><h2>Upcoming live events</h2>{rows}</table>"
        "</div></body></html>"
    )


def test_a_labelled_table_of_dated_links_is_not_content() -> None:
    titles = ["What moves currencies?", "Technical analysis", "Market outlook", "Pivots"]
    events = list(enumerate(titles, start=2))
    before = digest(events_page(events))
    # A new event on top, the last gone: the schedule moved, not the report.
    assert digest(events_page([(1, "Trading the news"), *events[:-1]])) == before
    assert digest(events_page(events, word="thin")) != before


def links_box_page(sites: list[str], word: str = "dark") -> str:
    """Return a column whose block ends with a box of three related sites, each a link
    with its address written out beside it."""
    column = "".join(
        f"<p>Race row casts a {word} shadow over the clubs' successes this week, part {n} "
        "of a season the players, the fans and the managers will not forget.</p>"
        for n in range(4)
    )
    box = "".join(
        f"<li><a href='http://{s}.example'>{s}</a> http://www.{s}.example</li>" for s in sites
    )
    return (
        "<html><head><title>Race row</title></head><body><div class='article'>"
        f"<h2>Race row</h2>{column}<ul>{box}</ul></div></body></html>"
    )


def test_three_links_each_with_its_address_are_not_content() -> None:
    before = digest(links_box_page(["uefa", "hearts", "rangers"]))
    assert digest(links_box_page(["celtic", "uefa", "hearts"])) == before
    assert digest(links_box_page(["uefa", "hearts", "rangers"], word="long")) != before


def heading_page(heading: str) -> str:
    """Return a guide whose page heading ("Control") shares no word with its title and
    stands above the table that holds its text, whose own `<h1>` further down does."""
    prose = "".join(
        f"<p>Poison ivy grows along fences and paths, step {n} of the guide says, and "
        "gloves, long sleeves and a careful eye keep a gardener out of trouble.</p>"
        for n in range(3)
    )
    return (
        "<html><head><title>Controlling Poison Ivy, Oak and Sumac</title></head><body>"
        f"<h1 class='header'>{heading}</h1><table><tr><td>{prose}"
        f"<h1>Never Burn Poison Ivy</h1>{prose}</td></tr></table></body></html>"
    )


def test_the_heading_that_opens_the_content_is_a_headline_whatever_its_words() -> None:
    before = digest(heading_page("Control"))
    assert digest(heading_page("Control (updated)")) != before


def test_a_page_of_several_h1s_numbers_its_tree_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both the nearest and the opening `<h1>` are found by document order: one map.
    # The package's `headline` is the function: its module by name.
    headline = importlib.import_module("sitemapd.fingerprint.headline")
    numbered = []
    number = headline.document_order

    def counted(element: Element) -> dict[Element, int]:
        numbered.append(element)
        return number(element)

    monkeypatch.setattr(headline, "document_order", counted)
    # A title bar's copy of the headline and the headline, both above the content.
    page = heading_page("Control").replace(
        "<h1 class='header'>", "<h1>Poison Ivy Oak Sumac</h1>" * 2 + "<h1 class='header'>"
    )
    read_file("a.html", page.encode(), Settings())
    assert len(numbered) == 1
    # What the shared map finds is what each lookup found alone.
    before = digest(page)
    assert digest(page.replace("Control", "Control (updated)")) != before
    assert digest(page.replace("Poison Ivy Oak Sumac", "Poison Ivy Oak Sumac (updated)")) != before


def node_list_page(titles: list[str], masthead: str = "EDRI-gram") -> str:
    """Return a section page of several posts, each under an `<h1>` that links to the
    post, below a masthead `<h1>` sharing a word with the title."""
    nodes = "".join(
        f"<div class='node'><h1 class='nodetitle'>{title}</h1><div class='content'><p>"
        f"The Commission said on day {n} that it opposes the framework decision on data "
        "retention, as the Parliament, the Council and the member states debate it.</p>"
        "</div></div>"
        for n, title in enumerate(titles)
    )
    return (
        f"<html><head><title>EU Policy | EDRI</title></head><body><h1>{masthead}</h1>"
        f"<div id='main'>{nodes}</div></body></html>"
    )


def test_a_linked_h1_is_a_headline_not_a_link_list() -> None:
    titles = [f"<a href='/node/{n}'>Commission opposes decision {n}</a>" for n in range(4)]
    before = digest(node_list_page(titles))
    edited = [*titles]
    edited[2] = edited[2] + " (updated)"
    assert digest(node_list_page(edited)) != before
    edited[2] = titles[2].replace("opposes", "backs")
    assert digest(node_list_page(edited)) != before


def cited_page(word: str) -> str:
    """Return a product page whose story column is followed, in another section of the
    layout, by a paragraph citing two sources (a quarter of its text in links)."""
    body = "".join(
        f"<p>The printers, part {n} of the range, serve every office and every print shop, "
        "from a single desk to a whole floor of machines working day and night.</p>"
        for n in range(4)
    )
    cited = (
        f"<p>We offer {word} print systems for every use, from labels to posters, as "
        "<a href='/tests'>independent tests in the press</a> and <a href='/refs'>our many "
        "customers</a> confirm, and service contracts that keep them running for years "
        "to come.</p>"
    )
    return (
        "<html><head><title>Print systems</title></head><body><div class='grid'>"
        f"<div class='col'><div class='story'><h1>Print systems</h1>{body}</div></div>"
        "<div class='col2'><p>Call us</p></div></div>"
        f"<section class='tail'><div class='x'>{cited}</div></section></body></html>"
    )


def test_a_paragraph_citing_sources_outside_the_story_s_column_is_the_story_s() -> None:
    before = digest(cited_page("professional"))
    assert digest(cited_page("skilled")) != before


def talks(paragraphs: int) -> str:
    """Return a story of so many paragraphs on the talks (the two pages below)."""
    return "".join(
        f"<p>The talks, in their {n}th round this week, turned on the same question, "
        "as the envoys, the ministers and their aides tried to settle the border.</p>"
        for n in range(paragraphs)
    )


def bio_page(bio: str) -> str:
    """Return a story followed, in the story's column, by its author's bio box: a linked
    headshot and a `<div>` of text, no `<p>`."""
    story = talks(12)
    return (
        "<html><head><title>Talks resume | Post</title></head><body>"
        "<div class='col-8'><article><h1>Talks resume</h1>"
        f"{story}</article><div class='clear'></div><div class='post-body-sig-line'>"
        "<a href='/people/jane'><img src='/jane.jpg'></a>"
        f"<div class='post-body-bio'>{bio}</div><div class='clear'></div></div></div>"
        "<div class='footer'>Copyright Post</div></body></html>"
    )


def test_an_author_s_bio_box_after_the_story_is_the_story_s() -> None:
    bio = "Jane Roe covers the White House. Since joining the Post, she has covered trade."
    before = digest(bio_page(bio))
    assert digest(bio_page(bio.replace("trade", "trades"))) != before
    assert digest(bio_page(bio + "<p>Correction: an earlier version misstated a name.</p>")) != (
        before
    )


def lead_photo_page(caption: str) -> str:
    """Return a story whose lead photograph and its caption stand above the story's
    column, inside the `<article>`."""
    story = talks(8)
    return (
        "<html><head><title>Talks resume | Post</title></head><body><div class='page'>"
        "<article><h1>Talks resume</h1><figure><img src='/envoys.jpg'>"
        f"<figcaption>{caption}</figcaption></figure><div class='story-body'>{story}</div>"
        "</article><div class='footer'>Copyright Post</div></div></body></html>"
    )


def test_the_caption_of_the_lead_photograph_above_the_story_is_the_story_s() -> None:
    caption = "The envoys meet in Geneva on Tuesday, before the talks. Photo: Jane Roe"
    before = digest(lead_photo_page(caption))
    assert digest(lead_photo_page(caption.replace("Tuesday", "Monday"))) != before


def wrapped_list_page(titles: list[str], wrapper: str = "pagination") -> str:
    """Return a blog's home: its posts' cards, each linked whole (title and excerpt), in a
    list a theme wraps in a block named `wrapper`, under a menu of the blog's pages."""
    cards = "".join(
        f"<li><a href='/posts/{n}/'><h2>{title}</h2><p>A few lines on {title.lower()}, "
        "as the post opens, for the reader deciding whether to read on.</p></a></li>"
        for n, title in enumerate(titles)
    )
    pages = "".join(f"<li><a href='/{p}/'>{p.title()}</a></li>" for p in ("about", "tags"))
    return (
        "<html><head><title>Notes</title></head><body><header><a href='/'>Notes</a>"
        f"<ul class='menu'>{pages}</ul></header><main><div class='{wrapper}'>"
        f"<ul class='post-list'>{cards}</ul></div></main></body></html>"
    )


def test_a_list_of_posts_in_a_wrapper_named_for_a_pager_or_menu_is_the_page_s() -> None:
    # Themes wrap the list of posts in `div.pagination` (it pages) or `div.menu-l` (a
    # column beside the menu): holding half the page, the block wraps it, and a new
    # post moves the home.
    titles = [f"Notes on the {w} release" for w in ("first", "second", "third", "fourth")]
    titles += ["Notes on packaging", "Notes on testing"]
    for wrapper in ("pagination", "menu-l"):
        before = digest(wrapped_list_page(titles, wrapper))
        assert digest(wrapped_list_page(["Notes on caching", *titles], wrapper)) != before


def short_main_page(sentence: str, offer: str) -> str:
    """Return a page whose one `<main>` holds a headline and a sentence, too little prose
    to score, beside an offer box of plain text outside it."""
    return (
        "<html><head><title>Derby ends in a draw</title></head><body>"
        "<header><nav><a href='/'>Home</a> <a href='/sport/'>Sport</a></nav></header>"
        f"<div class='offer'><p>{offer}</p></div>"
        f"<main><article><h1>Derby ends in a draw</h1><p>{sentence}</p></article></main>"
        "<footer><p>Example Gazette</p></footer></body></html>"
    )


def test_a_page_too_short_to_score_is_its_one_main_not_the_whole_body() -> None:
    sentence = "Neither side could break the deadlock before 41,000 fans."
    page = short_main_page(sentence, "Subscribe today: half price for a month")
    reading = read_file("a.html", page.encode(), Settings()).reading
    assert reading is not None
    assert not reading.fallback
    # What lies outside the page's `<main>` is not its content; the sentence in it is.
    assert digest(short_main_page(sentence, "Subscribe now: three months free")) == digest(page)
    assert digest(short_main_page(sentence.replace("41,000", "42,000"), "x")) != digest(
        short_main_page(sentence, "x")
    )


_CONSENT = (
    "We and our partners use cookies and similar technologies to store and access "
    "information on your device, to measure how our shop is used, to show you offers "
    "that suit you, and to improve our services. You can accept all of them, refuse "
    "them, or choose which purposes you allow; you can change your mind at any time in "
    "the privacy settings linked at the foot of every page of this shop."
)


def product_page(overlay: str, word: str = "warm") -> str:
    """Return a shop's product page of a short description, beside `overlay`: a block
    of more prose than the description that a reader does not see in place."""
    return (
        "<html><head><title>Trail jacket</title></head><body>"
        "<header><a href='/'>Shop</a> <a href='/cart'>Cart</a></header>"
        f"{overlay}"
        "<div class='product'><h1>Trail jacket</h1><div class='price'>89.00 EUR</div>"
        f"<div class='description'><p>A light jacket that keeps you {word} on windy "
        "ridges, with taped seams, two zipped pockets and a hood that fits over a "
        "helmet.</p></div></div>"
        "<footer><p>Example Outdoor Shop</p></footer></body></html>"
    )


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("<div id='cookie-banner'>", "</div>"),
        ("<div class='cmp-consent'>", "</div>"),
        ("<div role='dialog'>", "</div>"),
        ("<div aria-modal='true' class='box'>", "</div>"),
        ("<form action='/cookieprefs' method='post'>", "</form>"),
        ("<div class='sign-up' style='display: none'><form action='/join'>", "</form></div>"),
    ],
)
def test_the_product_is_the_content_not_a_longer_banner_a_reader_does_not_see_in_place(
    opening: str, closing: str
) -> None:
    overlay = f"{opening}<p>{_CONSENT}</p>{closing}"
    page = product_page(overlay)
    assert digest(product_page(overlay, "dry")) != digest(page)
    # The banner's text is the consent platform's, not the product's.
    changed = overlay.replace("your device", "this browser")
    assert digest(product_page(changed)) == digest(page)


def test_a_mega_menu_hidden_until_hovered_is_not_the_page_s_list_however_long() -> None:
    links = "".join(f"<li><a href='/c/{n}'>Category number {n}</a></li>" for n in range(60))
    menu = f"<div style='display:none;'><ul>{links}</ul></div>"
    page = product_page(menu)
    reading = read_file("a.html", page.encode(), Settings()).reading
    assert reading is not None
    assert digest(product_page(menu, "dry")) != digest(page)
    rotated = menu.replace("Category number 7<", "Category number 77<")
    assert digest(product_page(rotated)) == digest(page)


def test_a_tab_of_prose_hidden_by_its_style_until_clicked_is_the_product_s_content() -> None:
    def tabbed(word: str) -> str:
        tab = (
            "<div class='tab' style='display:none'><p>Made of a recycled shell that sheds "
            f"rain and snow, {word} to the touch, with a mesh lining that lets sweat out "
            "on long climbs and packs into its own pocket.</p></div>"
        )
        return product_page("").replace("</div></div><footer>", f"</div>{tab}</div><footer>")

    assert digest(tabbed("soft")) != digest(tabbed("smooth"))


def category_page(products: list[str], word: str = "light", latest: int = 0) -> str:
    """Return a shop's category page: a grid of the category's products (each a linked
    name and its price) opened by a short intro, beside a sidebar of the blog's latest
    posts from `latest` on."""
    tiles = "".join(
        f"<li class='tile'><a href='/p/{n}'>{name}</a><span class='price'>{40 + n}.00 "
        "EUR</span><span>In stock, ships in two days</span></li>"
        for n, name in enumerate(products)
    )
    posts = "".join(
        f"<li><a href='/blog/{n}'>Trail notes from the shop, part {n}</a></li>"
        for n in range(latest, latest + 6)
    )
    return (
        "<html><head><title>Rain jackets | Outdoor shop</title></head><body>"
        "<header><a href='/'>Shop</a></header><div class='layout'><ul class='grid'>"
        "<li class='intro'><h1>Rain jackets</h1><p>Our rain jackets keep you dry on "
        f"long days in the hills: {word}, packable shells for running and warm, "
        "three-layer ones for winter walks, all tested by our staff.</p></li>"
        f"{tiles}</ul><div class='latest'><ul>{posts}</ul></div></div>"
        "<footer><p>Example Outdoor Shop</p></footer></body></html>"
    )


def test_a_category_page_says_what_its_grid_of_products_says_not_only_its_intro() -> None:
    products = [f"Storm shell jacket model {n}" for n in range(16)]
    before = digest(category_page(products))
    assert digest(category_page(["Summit parka", *products[:-1]])) != before
    assert digest(category_page(products, "airy")) != before
    # The sidebar beside the catalogue is not what the page says.
    assert digest(category_page(products, latest=3)) == before


def landing_page(price: str = "5", latest: int = 0, main: str = "<main>") -> str:
    """Return a service's landing page: its one `<main>` (opened with the tag `main`) of
    sections (a hero, cards of plans and their prices, a section of prose), beside a
    sidebar of the latest posts from `latest` on."""
    plans = "".join(
        f"<div class='card'><h3>{name}</h3><span>{cost} EUR a month</span></div>"
        for name, cost in [("Basic", price), ("Team", "20"), ("Shop", "60")]
    )
    posts = "".join(
        f"<li><a href='/blog/{n}'>What we learnt running servers, part {n}</a></li>"
        for n in range(latest, latest + 6)
    )
    return (
        "<html><head><title>Hosting | Example</title></head><body>"
        f"<header><a href='/'>Example</a></header>{main}"
        "<section class='hero'><h1>Hosting that stays up</h1></section>"
        f"<section class='plans'>{plans}</section>"
        "<section class='story'><p>We started in a small office with three servers, "
        "and we still answer the phone ourselves: when something breaks at night, one "
        "of us fixes it, and tells you what happened, in plain words, the next morning, "
        "with what we changed so that it does not happen again.</p><p>Our customers, "
        "from shops to newsrooms, stay with us for years, and most of them came to us "
        "because a friend, a colleague or a competitor told them about us.</p>"
        "</section></main>"
        f"<aside><ul>{posts}</ul></aside>"
        "<footer><p>Example Hosting</p></footer></body></html>"
    )


# The role HTML5 boilerplates give the element once more: one `<main>` all the same.
@pytest.mark.parametrize("main", ["<main>", "<main role='main'>"])
def test_a_page_that_is_no_article_is_its_one_main_not_its_best_section_alone(main: str) -> None:
    before = digest(landing_page(main=main))
    # The plans say what the service is, though the story section outscores them.
    assert digest(landing_page("6", main=main)) != before
    assert digest(landing_page(latest=2, main=main)) == before


def breadcrumb_page(trail: list[str], headline: str = "Where to eat this month") -> str:
    """Return a story whose breadcrumb trail ends with the page itself, marked current."""
    steps = "".join(f"<li><a href='/{step.lower()}'>{step}</a></li>" for step in trail)
    return (
        f"<html><head><title>{headline}, December | City Magazine</title></head><body>"
        f"<nav class='breadcrumbs'><ol>{steps}"
        f"<li><a href='/eat/where-to-eat' aria-current='page'>{headline}</a></li></ol></nav>"
        f"<article><h1>{headline}</h1>"
        "<p>Three new kitchens opened on the east side this month, each of them run by "
        "a chef who cooked for years in the city's older dining rooms, and each serving "
        "food that their old employers would not have put on a menu.</p>"
        "<p>The first, in a former garage, serves grilled fish and flat breads, and takes "
        "no bookings, so the queue starts at six.</p></article></body></html>"
    )


def test_a_breadcrumb_trail_changed_keeps_the_title_and_a_new_headline_moves_it() -> None:
    before = digest(breadcrumb_page(["Home", "Eat"]))
    # A trail that no longer names the page (moved, rotated, dropped) is the template's.
    assert digest(breadcrumb_page(["Home", "Food", "Guides"])) == before
    assert digest(breadcrumb_page(["Home", "Eat"]).replace("aria-current='page'", "")) == before
    assert digest(breadcrumb_page(["Home", "Eat"], "Where to eat in December")) != before


def test_an_h1_in_a_breadcrumb_trail_beside_the_page_s_own_is_not_its_headline() -> None:
    def page(trail: str) -> str:
        # The title says the brand and the name, as the trail's `<h1>` did.
        return (
            breadcrumb_page(["Home"], "Oflek")
            .replace("<title>", "<title>Jeans ")
            .replace(
                "<nav class='breadcrumbs'><ol>",
                f"<div id='filAriane'><a href='/brand'><h1>{trail}</h1></a></div><nav><ol>",
            )
        )

    before = digest(page("Jeans Oflek"))
    assert digest(page("Denim")) == before
    assert digest(page("Jeans Oflek").replace("<h1>Oflek", "<h1>Oflek II")) != before


def hero_page(trail: list[str], headline: str = "Get free tax help") -> str:
    """Return a page whose header holds its breadcrumb trail and its headline, no more."""
    steps = "".join(f"<li><a href='/{n}'>{step}</a></li>" for n, step in enumerate(trail))
    return (
        f"<html><head><title>{headline} | City services</title></head><body><main>"
        f"<section class='hero'><ol>{steps}</ol><h1>{headline}</h1></section>"
        "<div><p>Volunteers prepare returns for households that earned less than the "
        "limit last year, at the library on Tuesdays and at the town hall on Fridays.</p>"
        "<p>Bring your letters from the tax office, your bank details and a photo "
        "identity document for everyone named on the return.</p></div></main></body></html>"
    )


def test_a_header_holding_the_headline_is_no_link_list_however_long_its_trail() -> None:
    before = digest(hero_page(["Home", "Help"]))
    assert digest(hero_page(["Home", "Get help", "Taxes", "Free help"])) == before
    assert digest(hero_page(["Home", "Help"], "Get free tax advice")) != before


def question_page(tags: list[str], word: str = "paper") -> str:
    """Return a question whose notice under it lists its tags between two captions."""
    links = "".join(f"<a href='/tags/{tag}'>{tag}</a>" for tag in tags)
    return (
        "<html><head><title>Catering for forty people</title></head><body><main>"
        "<h1>Catering for forty people</h1><div class='post'><p>I am starting a catering "
        f"service, casual for now, with {word} plates and plastic cutlery, for events of "
        "about forty people. How do I keep curry and rice warm for three hours?</p></div>"
        f"<div class='notice'>Explore related questions<div>{links}</div>"
        "See similar questions with these tags.</div></main></body></html>"
    )


def test_a_caption_beside_a_list_of_tags_is_no_row_of_links_whatever_the_tags() -> None:
    before = digest(question_page(["equipment", "bulk-cooking", "catering"]))
    assert digest(question_page(["budget", "equipment", "bulk-cooking"])) == before
    assert digest(question_page(["equipment", "bulk-cooking", "catering"], "china")) != before


def classified_page(first: int, price: str = "40") -> str:
    """Return a classified ad too short to score, above a carousel of the site's posts."""
    slides = "".join(
        f"<div class='owl-item'><a href='/blog/{n}'>Around town this month, part {n} of the "
        f"series</a></div>"
        for n in range(first, first + 8)
    )
    menu = "".join(
        f"<li><a href='/{n}'>Furniture, bikes and cars for sale in district {n}</a></li>"
        for n in range(12)
    )
    return (
        "<html><head><title>Child's bike | Classifieds</title></head><body>"
        "<div id='site-header'><a href='/'>Classifieds</a></div>"
        f"<div class='item-details'><h1>Child's bike</h1><p>Blue, barely used, {price} dollars.</p>"
        "<p>Pick up only.</p></div>"
        f"<div class='owl-carousel'><div class='owl-wrapper'>{slides}</div></div>"
        f"<nav><ul>{menu}</ul></nav></body></html>"
    )


def rain_shell_page(first: int, price: str = "59.90") -> str:
    """Return a product page (JSON-LD `Product`) with a short description, above a grid of
    other products a shop turns over."""
    others = "".join(
        f"<li><a href='/p/{n}'><img src='/img/{n}.jpg' alt=''><span>Trail jacket {n}, "
        f"recycled nylon, hood</span></a><span>{n}9.90 EUR</span></li>"
        for n in range(first, first + 8)
    )
    offer = {"@context": "https://schema.org", "@type": "Product", "name": "Rain shell"}
    return (
        "<html><head><title>Rain shell | Shop</title>"
        f"<script type='application/ld+json'>{json.dumps(offer)}</script></head><body>"
        "<div class='pdp'><h1>Rain shell</h1>"
        f"<div class='price'>{price} EUR</div><p>Light, packable, taped seams.</p></div>"
        f"<div class='recs'><h2>You might like</h2><ul>{others}</ul></div></body></html>"
    )


@pytest.mark.parametrize(
    ("page", "price"),
    [
        # A carousel of the site's posts is neither the page's list nor its text.
        (classified_page, "35"),
        # A product's page is not the grid of other products beside it.
        (rain_shell_page, "49.90"),
    ],
)
def test_a_short_page_is_not_the_other_pages_turned_over_beside_it(
    page: Callable[..., str], price: str
) -> None:
    before = digest(page(1))
    assert digest(page(2)) == before
    assert digest(page(1, price)) != before


def test_a_category_page_whose_structured_data_lists_its_products_says_its_grid() -> None:
    products = [f"Storm shell jacket model {n}" for n in range(16)]
    listed = json.dumps([{"@type": "Product", "name": name} for name in products[:3]])

    def page(names: list[str]) -> str:
        script = f"<script type='application/ld+json'>{listed}</script>"
        return category_page(names).replace("</title>", "</title>" + script)

    assert digest(page(["Summit parka", *products[:-1]])) != digest(page(products))


def forum_page(replies: list[str], opening_apart: bool = False) -> str:
    """Return a forum thread: an opening message and `replies`, each a message of the
    same markup (a name, a badge, a body, a signature); with `opening_apart`, the opening
    one in a card of its own above the replies (XenForo's original post)."""
    opening = (
        "<p>Has anyone replaced the water pump on the 2014 model themselves? The dealer "
        "wants four hundred for the job, and the part costs sixty, so I would rather try "
        "it, if it can be done with ordinary tools in a weekend.</p><p>The car has done "
        "ninety thousand miles, mostly on the motorway, and the pump started to weep a "
        "little coolant last month, after a long drive in the heat.</p><p>I have changed "
        "the belts, the brakes and the plugs myself before, so I know my way around the "
        "engine bay, but never took the front of an engine apart.</p>"
    )
    bodies = [opening, *(f"<p>{reply}</p>" for reply in replies)]
    messages = [
        f"<article class='message'><div class='message-user'><h4><a href='/u/{n}'>"
        f"member{n}</a></h4><span class='badge'>Regular</span></div>"
        f"<div class='message-main'><div class='message-content'><div class='bbWrapper'>"
        f"{body}</div></div><div class='signature'>Driving since 1999</div></div></article>"
        for n, body in enumerate(bodies)
    ]
    first = ""
    if opening_apart:
        first = f"<div class='original-post'>{messages.pop(0)}</div>"
    return (
        "<html><head><title>Water pump replacement | Owners forum</title></head><body>"
        "<header><a href='/'>Owners forum</a></header><h1>Water pump replacement</h1>"
        f"{first}<div class='thread-messages'>{''.join(messages)}</div></body></html>"
    )


def test_every_message_of_a_forum_thread_is_its_content() -> None:
    # Replies too short to score: the opening message alone is the best container.
    replies = ["Did mine, easy job.", "Torque wrench needed."]
    before = digest(forum_page(replies))
    assert digest(forum_page([replies[0], replies[1].replace("wrench", "spanner")])) != before
    assert digest(forum_page(replies[:1])) != before
    assert digest(forum_page(replies).replace("Regular", "Veteran")) == before


def test_a_thread_s_opening_message_apart_from_the_replies_is_content() -> None:
    # A long reply is the best container, and the short ones make the replies no blog's
    # posts: the replies' bodies are the thread's messages.
    step = (
        "Step {}: I did it on mine last spring, and it was easier than the dealer makes "
        "it sound. Drain the coolant into a clean tray, mark the pulley before you undo "
        "it, and keep the bolts in order on a sheet of card so that each goes back in "
        "its own hole; the new pump goes on with a fresh gasket and a little sealant."
    )
    long_reply = "</p><p>".join(step.format(n) for n in range(5))
    replies = [long_reply, "Did mine, easy job.", "Torque wrench needed."]
    before = digest(forum_page(replies, opening_apart=True))
    edited = forum_page(replies, opening_apart=True).replace("weekend", "fortnight")
    assert digest(edited) != before
    assert digest(forum_page(replies, opening_apart=True).replace("Regular", "Veteran")) == before


def test_a_headline_set_as_a_trail_s_current_step_stays_the_headline_beside_teasers() -> None:
    teasers = "".join(
        f"<article><a href='/t/{n}'><h1>Other story number {n} of the day</h1></a></article>"
        for n in range(3)
    )

    def page(headline: str) -> str:
        # The page's one headline is the trail's current step, unlinked (heise.de).
        return (
            breadcrumb_page(["Home"], "Lithium from the shredder")
            .replace(
                "<a href='/eat/where-to-eat' aria-current='page'>Lithium from the shredder</a>",
                f"<h1>{headline}</h1>",
            )
            .replace("<article><h1>Lithium from the shredder</h1>", "<article>")
            .replace("</body>", f"<aside>{teasers}</aside></body>")
        )

    before = digest(page("Lithium from the shredder"))
    assert digest(page("Lithium from the recycler")) != before


def test_text_for_browsers_without_plugins_or_frames_is_not_content() -> None:
    def page(fallback: str) -> str:
        return breadcrumb_page(["Home"]).replace(
            "</article>", f"<noembed>{fallback}</noembed><noframes>{fallback}</noframes></article>"
        )

    assert digest(page("Your browser cannot show this video.")) == digest(page("Update it."))


def streamed_page(story: str, completion: str = "$RC") -> str:
    """Return a page as React streams it (Next.js): the shell, then the story in a hidden
    segment that a script puts in place: in a boundary's with `$RC`, a placeholder's with
    `$RS`, nowhere with ``."""
    scripts = {
        "$RC": '<script>$RC=function(b,c){};$RC("B:0","S:0")</script>',
        "$RS": '<script>$RS("S:0","P:0")</script>',
        "": "",
    }
    return (
        "<html><head><title>Tide tables | Harbour news</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/news'>News</a></nav><main>"
        "<template id='B:0'></template><div class='skeleton'>Loading</div>"
        "<template id='P:0'></template></main><footer><a href='/about'>About us</a></footer>"
        f"<div hidden id='S:0'><article><h1>Tide tables</h1><p>{story}</p>"
        "<p>The harbour master publishes the tables every month, and the ferry times "
        "follow them, so that no crossing runs aground at the lowest water.</p></article>"
        f"</div>{scripts[completion]}</body></html>"
    )


@pytest.mark.parametrize("completion", ["$RC", "$RS"])
def test_a_streamed_segment_is_read_where_its_script_puts_it(completion: str) -> None:
    story = (
        "The spring tides this week reach their highest in a decade, and the council "
        "asks owners of boats moored in the inner basin to check their lines twice a day."
    )
    before = digest(streamed_page(story, completion))
    assert digest(streamed_page(story.replace("twice", "three times"), completion)) != before
    # A segment no script completes stays hidden, as in a browser.
    hidden = digest(streamed_page(story, ""))
    assert digest(streamed_page(story.replace("twice", "three times"), "")) == hidden


def buttons_page(story: str, tabs: list[str], replies: int) -> str:
    """Return a story after a menu button whose inner `<div>` is left open, with tabs of
    prose as buttons and a "more replies" button under it."""
    tab_buttons = "".join(
        f"<button role='tab'><p class='summary'>Tab {n}</p><p>{tab}</p></button>"
        for n, tab in enumerate(tabs)
    )
    return (
        "<html><head><title>Tide tables | Harbour news</title></head><body><header>"
        "<button class='menu-button'><div class='inner'><svg></svg><div></button></div>"
        f"<a href='/'>Harbour news</a></header><article><h1>Tide tables</h1><p>{story}</p>"
        "<p>The harbour master publishes the tables every month, and the ferry times "
        f"follow them, so that no crossing runs aground.</p><div>{tab_buttons}</div>"
        f"<button class='more'>Show {replies} more replies</button></article></body></html>"
    )


def test_a_button_holding_prose_is_read_and_one_holding_a_label_is_not() -> None:
    story = (
        "The spring tides this week reach their highest in a decade, and the council "
        "asks owners of boats moored in the inner basin to check their lines twice a day."
    )
    tabs = ["Times for the inner basin and the outer harbour, every day of the month."]
    before = digest(buttons_page(story, tabs, 3))
    # The menu button's open `<div>` does not take the story into the button.
    assert digest(buttons_page(story.replace("twice", "three times"), tabs, 3)) != before
    assert digest(buttons_page(story, [tabs[0].replace("month", "year")], 3)) != before
    assert digest(buttons_page(story, tabs, 4)) == before


def faq_page(questions: list[str], help_label: str = "Need help?") -> str:
    """Return a service's page: its prose, then an FAQ whose questions are the labels of
    its accordion's buttons, each over its answer, and a help button."""
    faq = "".join(
        f"<div class='faq-item'><h3><button aria-expanded='true'>{question}</button></h3>"
        f"<div class='answer'><p>Answer {n}: most houses built before 1980 need one, and "
        "an electrician can tell from the fuse box within the hour.</p></div></div>"
        for n, question in enumerate(questions)
    )
    return (
        "<html><head><title>Rewiring in Ponchatoula | Sparks</title></head><body><main>"
        "<h1>Rewiring in Ponchatoula</h1><p>We rewire houses, shops and barns across the "
        "parish, with permits filed for you and the walls patched and painted after.</p>"
        f"<section class='faq'><h2>Questions</h2>{faq}</section>"
        f"<button class='help'>{help_label}</button></main></body></html>"
    )


def test_a_question_an_accordion_button_says_is_read_and_a_short_label_is_not() -> None:
    # A full-width question mark (U+FF1F) closes a question too.
    questions = [
        "When do I need a rewire in Ponchatoula?",
        "配線の交換にはどのくらいかかりますか\uff1f",
    ]
    before = digest(faq_page(questions))
    assert digest(faq_page([questions[0].replace("need", "want"), questions[1]])) != before
    assert digest(faq_page([questions[0], questions[1].replace("交換", "点検")])) != before
    assert digest(faq_page(questions, "Questions?")) == before


def showcase_page(intro: str, stories: list[str], featured: str = "Dock workers vote") -> str:
    """Return a service's landing page: a section of prose, then one whose paragraph
    introduces a grid of linked customer stories, then a "latest" box whose featured
    story's teaser follows its linked headline."""
    cards = "".join(
        f"<a class='card' href='/stories/{n}'><div>{story}</div><div>Read the story</div></a>"
        for n, story in enumerate(stories)
    )
    return (
        "<html><head><title>Harbour freight planning | Tidewise</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/pricing'>Pricing</a></nav><main>"
        "<section class='hero'><h1>Freight planning for small harbours</h1>"
        "<p>Tidewise plans the berths, cranes and crews of a harbour a week ahead, and "
        "plans again, within the hour, when a ship is late or the weather turns.</p></section>"
        "<section class='stories'><div class='wrap'><div class='head'><h2>Who uses it</h2>"
        f"<div><p>{intro}</p></div></div><div class='grid'>{cards}</div></div>"
        "<div><a class='btn' href='/stories'>All stories</a></div></section>"
        f"<div class='box'><h3><a href='/news/featured'>{featured}</a></h3>"
        f"<p>What {featured.lower()} means for the port's winter timetable and the ferries."
        "</p><ul><li><a href='/news/1'>New cranes arrive at the north quay</a></li>"
        "<li><a href='/news/2'>The harbour master retires after thirty years</a></li>"
        "<li><a href='/news/3'>A second pilot boat for the outer channel</a></li></ul></div>"
        "</main><footer><a href='/about'>About</a></footer></body></html>"
    )


def flat_showcase_page(stories: list[str]) -> str:
    """Return the showcase page with its stories linked beside the intro, in no block."""
    links = "".join(f"<a href='/stories/{n}'>{story}</a> " for n, story in enumerate(stories))
    intro = "See how ports on three coasts plan their berths and crews with Tidewise."
    return showcase_page(intro, []).replace("<div class='grid'></div>", links)


def test_a_paragraph_introducing_a_section_of_links_is_content_and_the_links_are_not() -> None:
    intro = "See how ports on three coasts plan their berths and crews with Tidewise."
    stories = ["Northport halves its waiting times", "Eastbay plans for storms"]
    before = digest(showcase_page(intro, stories))
    assert digest(showcase_page(intro.replace("three", "four"), stories)) != before
    # The grid's stories turn over, and another story is featured in the "latest" box.
    assert digest(showcase_page(intro, ["Southport adds a night shift", *stories[:1]])) == before
    assert digest(showcase_page(intro, stories, featured="Ferry fares frozen")) == before
    # Links beside the intro, in no block of their own, leave the section a link list.
    stories = [*stories, "Westhaven trains its crane drivers", "Southport adds a night shift"]
    assert digest(flat_showcase_page(stories)) == digest(flat_showcase_page(stories[::-1]))


def unclosed_page(paragraphs: int, edited: int = -1) -> str:
    """Return a legacy story whose every paragraph opens a `<div>` and a `<font>` it
    never closes: nested `2 * paragraphs` deep; the paragraph `edited` says one word
    more."""
    said = "The harbour's boats stayed on the mud until the rain came back in September"
    return (
        "<html><head><title>A dry summer | Gazette</title></head><body>"
        + "".join(
            f"<div class='para'><font><p>{said}, wrote reporter {n}"
            f"{' again' if n == edited else ''}.</p>"
            for n in range(paragraphs)
        )
        + "</body></html>"
    )


def test_a_story_nested_past_256_levels_is_read_to_its_end() -> None:
    # libxml2 stops reading a document 256 levels deep unless told otherwise.
    before = digest(unclosed_page(300))
    assert digest(unclosed_page(300, edited=250)) != before
    # Deeper than Python's recursion goes: read, not a RecursionError.
    assert digest(unclosed_page(900)) != digest(unclosed_page(900, edited=890))


_STORY = [
    f"The council voted on Tuesday, after a debate of {n + 3} hours, to repair the river "
    "bridge before winter, and to pay for it from the roads budget."
    for n in range(8)
]


def story_with_box(box: str, word: str = "repair") -> str:
    """Return a story whose `<article>` holds `box` between its paragraphs."""
    paragraphs = [f"<p>{text.replace('repair', word)}</p>" for text in _STORY]
    return (
        "<html><head><title>Bridge to be repaired | Daily</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/news'>News</a></nav><main><article>"
        f"<h1>Bridge to be repaired</h1>{''.join(paragraphs[:4])}{box}"
        f"{''.join(paragraphs[4:])}</article></main></body></html>"
    )


# Lists of the story's own that read like cards but are not other stories': each item
# led by a link, no picture or date on every one. A word changed in one moves the page.
_OWN_LISTS = {
    "references": "<h2>References</h2><ol>{items}</ol>",
    "see also": "<h2>See also</h2><ul>{items}</ul>",
    "steps": "<h2>Method</h2><ol>{items}</ol>",
}
_OWN_ITEM = (
    "<li><a href='/guide/{n}'>How the river bridge was built in the year 19{n}0</a> "
    "Engineers {word} the piers each spring, and the deck was laid in {n} stages.</li>"
)


@pytest.mark.parametrize("kind", sorted(_OWN_LISTS))
def test_a_list_of_the_story_s_own_led_by_links_is_content(kind: str) -> None:
    def page(word: str) -> str:
        items = "".join(_OWN_ITEM.format(n=n, word=word) for n in range(1, 5))
        return story_with_box(_OWN_LISTS[kind].format(items=items))

    assert digest(page("checked")) != digest(page("painted"))


def test_questions_linking_to_their_answers_on_the_page_are_content() -> None:
    def page(word: str) -> str:
        items = "".join(
            f"<li><img src='/icons/q.svg' alt=''><a href='#q{n}'>Why is the river bridge "
            f"closed in the winter of year {n}?</a> It is {word} each year, when the ice on the "
            "river is thick enough to bear the crews and their machines.</li>"
            for n in range(4)
        )
        return story_with_box(f"<h2>Questions</h2><ul>{items}</ul>")

    assert digest(page("inspected")) != digest(page("repainted"))


@pytest.mark.parametrize("target", ["https://shop{n}.example/item/{n}", "/reviews/{n}/"])
def test_a_roundup_s_picks_with_pictures_and_linked_names_are_content(target: str) -> None:
    # They look like cards of other stories (a picture, a linked name, a line), whether
    # they lead to the shops or to the site's own reviews: they are what the story says,
    # and a word changed in one moves it.
    def page(word: str) -> str:
        picks = "".join(
            f"<li><img src='/img/pick-{n}.jpg' alt=''><h3><a href='{target.format(n=n)}'>"
            f"Wireless noise cancelling headphones model {n}</a></h3><p>The {word} pick "
            "for long flights: light, and quiet on the ears.</p></li>"
            for n in range(4)
        )
        return story_with_box(f"<h2>Our picks</h2><ul>{picks}</ul>")

    assert digest(page("best")) != digest(page("cheapest"))
