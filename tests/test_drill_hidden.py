"""The drill edits what a reader sees: never a visually hidden `<h1>` label ("News",
"detail", "기사 상세") set before the story's headline, nor a paragraph drawn for screen
readers alone. Editing those is no editor's change, and a drill that did reported misses
the site's lastmods do not have."""

from __future__ import annotations

import json
import random

import lxml.html
import pytest
from conftest import Site

from sitemapd.drill.mutate import append_correction, edit_h1, edit_word, headline
from sitemapd.drill.run import drill
from sitemapd.drill.structure import Page, page_content
from sitemapd.fingerprint import Settings, TemplateMemory

WORDS = ["council", "river", "bridge", "budget", "vote", "tram", "mayor", "school", "flood"]
HEADLINE_ROW = "headline element alone"

# Every way a page hides its section label from a reader, as an `<h1>` or around one.
HIDDEN_LABELS = {
    "hidden attribute": "<h1 hidden>News</h1>",
    "aria-hidden": "<h1 aria-hidden='true'>News</h1>",
    "display:none": "<h1 style='color: red; display : none'>News</h1>",
    "visibility:hidden": "<h1 style='visibility:hidden'>News</h1>",
    "class hidden": "<h1 class='header pagetitle hidden'>News</h1>",
    "class sr-only": "<h1 class='sr-only'>News</h1>",
    "class visually-hidden": "<h1 class='visually-hidden'>News</h1>",
    "class visuallyHidden": "<h1 class='visuallyHidden'>News</h1>",
    "class screen-reader-text": "<h1 class='screen-reader-text'>News</h1>",
    "class hide-accessible": "<h1 class='hide-accessible'>News</h1>",
    "class is_blind": "<h1 class='page_ttl is_blind'>News</h1>",
    "class d-none": "<h1 class='d-none'>News</h1>",
    "class sr-only, shown on focus alone": "<h1 class='sr-only focus:not-sr-only'>News</h1>",
    "ancestor's class": "<div class='a11y-hidden'><div><h1>News</h1></div></div>",
    "ancestor's aria-hidden": "<div aria-hidden='true'><h1>News</h1></div>",
    "ancestor's hidden attribute": "<section hidden><h1>News</h1></section>",
    "a popup's, until clicked": "<div class='c-modal mfp-hide'><h1>News</h1></div>",
}


def story(n: int) -> str:
    """Return four paragraphs of prose, the same for the same `n`."""
    rng = random.Random(n)
    return "".join(
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + ".</p>" for _ in range(4)
    )


def labelled(n: int, label: str) -> str:
    """Return a story whose section's hidden `label` precedes its headline and is what
    the document title says ("News - Gazette"), as on eawag.ch and kas.de."""
    return (
        "<html><head><title>News - Gazette</title>"
        f"<meta property='og:title' content='Bridge vote {n} passes'></head><body>"
        "<header><a href='/'>Gazette</a></header>"
        f"<main>{label}<article><h1>Bridge vote {n} passes</h1>{story(n)}</article></main>"
        "<footer>© Gazette</footer></body></html>"
    )


@pytest.mark.parametrize("form", sorted(HIDDEN_LABELS))
def test_the_headline_edited_is_the_one_a_reader_sees(form: str) -> None:
    tree = lxml.html.document_fromstring(labelled(1, HIDDEN_LABELS[form]))
    page = Page(tree, page_content(tree))
    chosen = headline(tree, page.content)
    assert chosen is not None
    assert chosen.text == "Bridge vote 1 passes"
    assert edit_h1(page)
    assert [h.text_content() for h in tree.iter("h1")] == ["News", "Bridge vote 1 passes (updated)"]


@pytest.mark.parametrize("form", sorted(HIDDEN_LABELS))
def test_a_fingerprint_that_keeps_the_visible_headline_misses_no_edit(form: str) -> None:
    pages = [(f"story-{n}.html", labelled(n, HIDDEN_LABELS[form]).encode()) for n in range(4)]
    row = drill(pages, Settings(), TemplateMemory()).rows[HEADLINE_ROW]
    assert (row.applied, row.moved, row.wrong) == (4, 4, [])


@pytest.mark.parametrize(
    "classes",
    ["hidden md:block", "d-none d-lg-block", "sr-only md:not-sr-only", "hidden-xs", "md:hidden"],
)
def test_a_headline_hidden_on_some_screens_alone_is_seen(classes: str) -> None:
    # Tailwind's "hidden md:block" and Bootstrap's "d-none d-lg-block" show the
    # heading from a screen size up; "hidden-xs" hides it on phones alone.
    tree = lxml.html.document_fromstring(
        "<html><head><title>Bridge vote passes | Gazette</title></head><body>"
        f"<div class='masthead'><h1>Gazette</h1></div><main><h1 class='{classes}'>"
        f"Bridge vote passes</h1><article>{story(2)}</article></main></body></html>"
    )
    chosen = headline(tree, page_content(tree))
    assert chosen is not None
    assert chosen.text == "Bridge vote passes"


def screen_reader_notes(n: int) -> str:
    """Return an article whose middle and last paragraphs are drawn for screen readers
    alone: the note before a video, the "end of article" line."""
    rng = random.Random(n)

    def prose() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(30)) + "."

    return (
        "<html><head><title>Bridge vote | Gazette</title></head><body><article>"
        f"<h1>Bridge vote</h1><p id='first'>{prose()}</p>"
        f"<p class='sr-only'>Video description: {prose()}</p><p id='last'>{prose()}</p>"
        f"<div class='screen-reader-text'>End of article: {prose()}</div></article></body></html>"
    )


def test_the_word_edited_and_the_correction_go_to_text_a_reader_sees() -> None:
    # The ground truth of a benchmark may hold a screen reader's note: naming the whole
    # article as the content must not make the drill edit it.
    tree = lxml.html.document_fromstring(screen_reader_notes(3))
    hidden = {e: e.text_content() for e in tree.iter("p", "div") if e.get("class")}
    page = Page(tree, [next(tree.iter("article"))])
    before = {e: e.text_content() for e in tree.iter("p", "div")}
    assert edit_word(page)
    changed = [e for e, text in before.items() if e.text_content() != text]
    assert [e.get("id") for e in changed] == ["last"]
    assert append_correction(page)
    correction = next(p for p in tree.iter("p") if "Correction" in p.text_content())
    previous = correction.getprevious()
    assert previous is not None
    assert previous.get("id") == "last"
    assert len(hidden) == 2
    assert hidden == {e: e.text_content() for e in hidden}


def test_drill_over_a_site_with_hidden_labels_reports_no_miss(site: Site) -> None:
    # One page for each way of hiding the label, drilled as an operator does.
    for n, form in enumerate(sorted(HIDDEN_LABELS)):
        site.write(f"story-{n}.html", labelled(n, HIDDEN_LABELS[form]))
    result = site.cli("drill", "--json")
    (report,) = json.loads(result.stdout)
    row = report["report"]["rows"][HEADLINE_ROW]
    assert (row["applied"], row["moved"], row["wrong"]) == (
        len(HIDDEN_LABELS),
        len(HIDDEN_LABELS),
        [],
    )
    table = site.cli("drill").stdout
    assert "missed on" not in table
    assert "FAIL" not in table


@pytest.mark.parametrize(
    "menu",
    ["<div>", "<nav class='hidden lg:flex'><div class='sub-menu visually-hidden-focusable'>"],
)
def test_a_page_whose_scripts_reveal_it_is_drilled(menu: str) -> None:
    # Pages hide their whole `html` or `body` until their scripts run (anti-flicker
    # snippets, a modal's `aria-hidden` on the body): a reader sees them all the same.
    # So is a `main` that a hidden menu's unclosed tags nest inside the menu: a browser
    # closes the menu before it, lxml does not (rhein-neckar-loewen.de).
    tree = lxml.html.document_fromstring(
        "<html class='hidden'><head><title>Bridge vote | Gazette</title></head>"
        "<body aria-hidden='true' style='visibility: hidden'><h1 class='sr-only'>News</h1>"
        f"{menu}<main><h1>Bridge vote</h1><article>{story(4)}</article></main></body></html>"
    )
    # The paragraphs a ground truth names: inside a `nav`, the structure finds none.
    page = Page(tree, list(tree.iter("p")))
    assert edit_h1(page)
    assert [h.text_content() for h in tree.iter("h1")] == ["News", "Bridge vote (updated)"]
