"""Defaults for what static-site generators write, through the real CLI: error pages are
left out unless asked for, and a site whose pages canonicalise to another host is told
so plainly."""

from __future__ import annotations

import json

from conftest import Site, page


def test_error_pages_are_left_out_by_default(site: Site) -> None:
    site.write("index.html", page("Home"))
    site.write("404.html", page("Not found"))
    site.write("50x.html", page("Server error"))
    site.write("news/404.html", page("The 404th story"))
    site.build()
    assert set(site.urls()) == {"https://example.com/", "https://example.com/news/404.html"}
    site.configure(source="error_pages = []")
    site.build()
    assert set(site.urls()) == {
        "https://example.com/",
        "https://example.com/404.html",
        "https://example.com/50x.html",
        "https://example.com/news/404.html",
    }


def test_a_generator_site_url_on_another_host_is_named(site: Site) -> None:
    for n in range(5):
        site.write(f"p{n}.html", page(f"P{n}", canonical=f"https://docs.example.org/p{n}.html"))
    site.write("index.html", page("Home"))
    result = site.build()
    assert "sitemapd: warning: directory:" in result.stderr
    assert "5 of 6 pages name their canonical URL on another site" in result.stderr
    assert "docs.example.org" in result.stderr
    assert "CANONICAL ELSEWHERE" in site.cli("status").stdout
    report = json.loads(site.cli("status", "--json").stdout)
    assert len(report["canonical_elsewhere"]) == 1
    # Once the generator is fixed, nothing is said.
    for n in range(5):
        site.write(f"p{n}.html", page(f"P{n}", canonical=f"https://example.com/p{n}.html"))
    assert "warning" not in site.build().stderr
    assert json.loads(site.cli("status", "--json").stdout)["canonical_elsewhere"] == []
