"""hreflang alternates from real generators' heads, through `build` and `verify`.

Nikola puts `<link rel="alternate" type="application/rss+xml" hreflang="en">` in every
head; feeds, print and mobile versions are not translations and must not become
xhtml:link entries, nor hide the real translation of the same language.
"""

from __future__ import annotations

from conftest import NS, Site, assert_valid, read_xml

XHTML_LINK = "{http://www.w3.org/1999/xhtml}link"


def nikola_page(lang: str, title: str, head: str = "") -> str:
    """Return a page with the feed links Nikola writes in every head."""
    return (
        f'<!doctype html><html lang="{lang}"><head><title>{title}</title>'
        f'<link rel="alternate" type="application/rss+xml" title="RSS" hreflang="{lang}" '
        f'href="/{lang}/rss.xml">'
        '<link rel="alternate" media="print" hreflang="fr" href="/print.html">'
        f"{head}</head><body><article><p>{title} text</p></article></body></html>"
    )


def links(site: Site) -> dict[str, list[tuple[str | None, str | None]]]:
    """Return `{loc: [(hreflang, href)]}` of the published shard."""
    shard = read_xml(site.out / "sitemap-1.xml")
    return {
        url.findtext(f"{NS}loc") or "": [
            (link.get("hreflang"), link.get("href")) for link in url.iter(XHTML_LINK)
        ]
        for url in shard.iter(f"{NS}url")
    }


def test_single_language_site_with_feed_links_has_no_alternates_and_verifies(
    site: Site,
) -> None:
    for i in range(3):
        site.write(f"posts/{i}.html", nikola_page("en", f"Post {i}"))
    site.build()
    assert_valid(site.out)
    assert all(found == [] for found in links(site).values())
    verify = site.cli("verify")
    assert verify.returncode == 0, verify.stdout
    assert "hreflang" not in site.cli("status").stdout


def test_translation_wins_over_a_feed_link_of_the_same_language(site: Site) -> None:
    # The German feed link comes first in the English page's head.
    de_feed = '<link rel="alternate" type="application/rss+xml" hreflang="de" href="/de/rss.xml">'
    site.write(
        "en/a.html",
        nikola_page("en", "A", de_feed + '<link rel="alternate" hreflang="de" href="/de/a.html">'),
    )
    site.write(
        "de/a.html",
        nikola_page("de", "A de", '<link rel="alternate" hreflang="en" href="/en/a.html">'),
    )
    site.build()
    assert_valid(site.out)
    en, de = "https://example.com/en/a.html", "https://example.com/de/a.html"
    assert sorted(links(site)[en]) == [("de", de), ("en", en)]
    assert sorted(links(site)[de]) == [("de", de), ("en", en)]
    verify = site.cli("verify")
    assert verify.returncode == 0, verify.stdout


def test_alternates_off_leaves_hreflang_out_of_verify(site: Site) -> None:
    site.configure(sitemap="alternates = false")
    # A translation that links to a page that does not exist: a problem only when published.
    site.write(
        "en/a.html", nikola_page("en", "A", '<link rel="alternate" hreflang="de" href="/de/x">')
    )
    site.build()
    assert site.cli("verify").returncode == 0
    site.configure()
    site.build()
    verify = site.cli("verify", check=False)
    assert verify.returncode == 1
    assert "hreflang: https://example.com/en/a.html: hreflang de" in verify.stdout
