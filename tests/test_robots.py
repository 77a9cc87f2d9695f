"""robots.txt through the real CLI: its Disallow rules, our one `Sitemap:` line, a real reader.

sitemapd keeps out of every sitemap what the site's robots.txt disallows for Googlebot or
for every crawler, and keeps exactly one `Sitemap:` line naming its index in that file,
never touching another byte of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Site, assert_valid, page, published, snapshot
from usp.tree import sitemap_tree_for_homepage

ROOT = "https://example.com/"
OUR_LINE = b"Sitemap: https://example.com/sitemap.xml"

ROBOTS_RULES = (
    b"User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nDisallow: /nogoogle/\n"
)


def status(site: Site) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(site.cli("status", "--json").stdout)
    return result


def output_bytes(site: Site) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(site.out.iterdir()) if path.is_file())


def with_robots(site: Site, robots: bytes | None) -> Path:
    """Configure `site/robots.txt` as the site's robots.txt, holding `robots` (or missing)."""
    site.configure(site='robots_txt = "site/robots.txt"')
    path = site.root / "robots.txt"
    if robots is not None:
        path.write_bytes(robots)
    return path


def test_disallowed_urls_are_in_no_output_until_allowed(site: Site) -> None:
    robots = with_robots(site, ROBOTS_RULES)
    for relpath in (
        "index.html",
        "a.html",
        "privateer.html",  # /private/ is a folder prefix: this page is allowed
        "nogoogle.html",
        "private/x.html",
        "private/deep/index.html",
        "nogoogle/z.html",
    ):
        site.write(relpath, page(relpath))

    site.build()
    assert_valid(site.out)
    allowed = {ROOT, ROOT + "a.html", ROOT + "privateer.html", ROOT + "nogoogle.html"}
    assert set(published(site.out)) == allowed
    everything = output_bytes(site)
    assert b"/private/" not in everything
    assert b"/nogoogle/" not in everything
    report = status(site)
    assert report["excluded"] == [
        {"loc": ROOT + "nogoogle/z.html", "reason": "robots.txt"},
        {"loc": ROOT + "private/deep/", "reason": "robots.txt"},
        {"loc": ROOT + "private/x.html", "reason": "robots.txt"},
    ]
    assert report["excluded_by_reason"] == {"robots.txt": 3}

    # Allow /private/ again (our Sitemap line stays in the file): only the rules changed.
    robots.write_bytes(robots.read_bytes().replace(b"Disallow: /private/", b"Allow: /private/"))
    site.build()
    assert_valid(site.out)
    back = {ROOT + "private/x.html", ROOT + "private/deep/"}
    assert set(published(site.out)) == allowed | back
    assert status(site)["excluded"] == [{"loc": ROOT + "nogoogle/z.html", "reason": "robots.txt"}]

    # And disallowing it once more takes them out again.
    robots.write_bytes(robots.read_bytes().replace(b"Allow: /private/", b"Disallow: /private/"))
    site.build()
    assert set(published(site.out)) == allowed


ORIGINAL = (
    b"# robots.txt for example.com\r\n"
    b"# maintained by hand\r\n"
    b"User-agent: *\r\n"
    b"Disallow: /private/   # staff only\r\n"
    b"\r\n"
    b"Sitemap: https://example.com/news-sitemap.xml\r\n"
    b"sitemap:https://cdn.example.com/sitemap.xml\r\n"
    b"Sitemap: https://example.com/sitemap.xml.gz\r\n"
    b"\r\n"
    b"User-agent: Googlebot-Image\r\n"
    b"Disallow: /\r\n"
)


def test_sitemap_line_added_once_and_nothing_else_touched(site: Site) -> None:
    robots = with_robots(site, ORIGINAL)
    site.write("index.html", page("home"))
    site.build()

    data = robots.read_bytes()
    lines = data.split(b"\r\n")
    assert lines.count(OUR_LINE) == 1
    assert data.count(b"//example.com/sitemap.xml\r\n") == 1
    # Removing our line gives back the original, byte for byte (CRLF endings kept).
    assert data.replace(OUR_LINE + b"\r\n", b"", 1) == ORIGINAL
    assert b"\n" not in data.replace(b"\r\n", b"")

    # A build with nothing new leaves the file alone: same inode, same mtime.
    before = robots.stat()
    site.build()
    after = robots.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert robots.read_bytes() == data


def test_duplicate_sitemap_lines_reduced_to_one(site: Site) -> None:
    original = (
        b"User-agent: *\n"
        b"Disallow:\n"
        b"Sitemap: https://example.com/sitemap.xml\n"
        b"Sitemap: https://example.com/other.xml\n"
        b"Sitemap: https://example.com/sitemap.xml\n"
        b"  sitemap :  https://example.com/sitemap.xml  \n"
        b"# tail\n"
    )
    robots = with_robots(site, original)
    site.write("index.html", page("home"))
    site.build()
    assert robots.read_bytes() == (
        b"User-agent: *\n"
        b"Disallow:\n"
        b"Sitemap: https://example.com/sitemap.xml\n"
        b"Sitemap: https://example.com/other.xml\n"
        b"# tail\n"
    )
    assert set(published(site.out)) == {ROOT}


def test_missing_robots_txt_is_created_with_just_our_line(site: Site) -> None:
    robots = with_robots(site, None)
    site.write("index.html", page("home"))
    site.write("private/x.html", page("x"))
    site.build()
    assert robots.read_bytes() == OUR_LINE + b"\n"
    # No robots.txt means no rules: everything is allowed.
    assert set(published(site.out)) == {ROOT, ROOT + "private/x.html"}
    before = snapshot(site.root)["robots.txt"]
    site.build()
    assert snapshot(site.root)["robots.txt"] == before


def test_sitemap_line_appended_once_and_kept_without_final_newline(site: Site) -> None:
    robots = with_robots(site, b"User-agent: *\nDisallow:\n")
    site.write("index.html", page("home"))
    site.build()
    assert robots.read_bytes() == b"User-agent: *\nDisallow:\n" + OUR_LINE + b"\n"
    # Our line already present as the last line, without a newline: the file is kept as is.
    robots.write_bytes(b"User-agent: *\nDisallow:\n" + OUR_LINE)
    site.build()
    assert robots.read_bytes() == b"User-agent: *\nDisallow:\n" + OUR_LINE


# --- a real sitemap consumer over HTTP ------------------------------------------------------

# relative path -> why it is left out (None: published)
USP_PAGES: dict[str, str | None] = {
    "index.html": None,
    "about.html": None,
    "contact.html": None,
    "news/index.html": None,
    "news/one.html": None,
    "news/two.html": None,
    "news/three.html": None,
    "q&a.html": None,
    "it's here.html": None,
    "café.html": None,
    "docs/guide.html": None,
    "hidden.html": "noindex",
    "copy.html": "canonical",
    "private/secret.html": "robots",
    "private/index.html": "robots",
    "draft.html": "noindex",
}
USP_PATHS = {
    "index.html": "",
    "news/index.html": "news/",
    "q&a.html": "q&a.html",
    "it's here.html": "it's%20here.html",
    "café.html": "caf%C3%A9.html",
}


def usp_page(relpath: str, why: str | None) -> str:
    if why == "noindex":
        return page(relpath, robots="noindex")
    if why == "canonical":
        return page(relpath, canonical="/about.html")
    return page(relpath)


@pytest.mark.parametrize("gzip", [False, True])
def test_ultimate_sitemap_parser_reads_exactly_the_live_urls(
    site: Site, serve: Callable[[Path], str], gzip: bool
) -> None:
    site.out.mkdir()
    base = serve(site.out)
    assert base.startswith("http://127.0.0.1:")
    site.configure(
        site='robots_txt = "out/robots.txt"',
        sitemap=f"max_urls = 4\ngzip = {'true' if gzip else 'false'}",
    )
    site.config.write_text(site.config.read_text().replace(ROOT, base))
    (site.out / "robots.txt").write_bytes(b"User-agent: *\nDisallow: /private/\n")
    for relpath, why in USP_PAGES.items():
        site.write(relpath, usp_page(relpath, why))

    site.build()
    assert_valid(site.out)
    expected = {
        base + USP_PATHS.get(relpath, relpath) for relpath, why in USP_PAGES.items() if why is None
    }
    assert len(expected) == 11
    assert set(published(site.out)) == expected
    shards = sorted(p.name for p in site.out.iterdir() if p.name.startswith("sitemap-"))
    suffix = ".xml.gz" if gzip else ".xml"
    assert shards == [f"sitemap-{n}{suffix}" for n in (1, 2, 3)]
    assert (site.out / "robots.txt").read_bytes() == (
        b"User-agent: *\nDisallow: /private/\nSitemap: " + base.encode() + b"sitemap.xml\n"
    )

    tree = sitemap_tree_for_homepage(base, use_known_paths=False)
    found = [p.url for p in tree.all_pages()]
    assert len(found) == len(set(found))
    assert set(found) == expected


def test_renaming_the_index_retires_the_old_line_and_files(site: Site) -> None:
    site.configure(site='robots_txt = "site/robots.txt"')
    site.write("robots.txt", "User-agent: *\nDisallow:\nSitemap: https://example.com/other.xml\n")
    site.write("index.html", page("Home"))
    site.build()
    site.configure(site='robots_txt = "site/robots.txt"', sitemap='index = "map.xml"')
    site.build()
    assert sorted(p.name for p in site.out.iterdir() if p.is_file()) == ["map-1.xml", "map.xml"]
    assert (site.root / "robots.txt").read_text() == (
        "User-agent: *\nDisallow:\nSitemap: https://example.com/other.xml\n"
        "Sitemap: https://example.com/map.xml\n"
    )
    assert set(published(site.out, "map.xml")) == {"https://example.com/"}


GENERATOR_LINE = b"Sitemap: https://EXAMPLE.com/generator-sitemap.xml"
OTHER_SITE_LINE = b"Sitemap: https://cdn.example.net/sitemap.xml"


def test_another_sitemap_of_the_site_is_a_warning_in_status_and_verify(site: Site) -> None:
    robots = with_robots(site, ROBOTS_RULES + GENERATOR_LINE + b"\n" + OTHER_SITE_LINE + b"\n")
    site.write("index.html", page("home"))
    site.build()
    # Kept by default: only said.
    assert GENERATOR_LINE in robots.read_bytes()
    warning = (
        "robots.txt names another sitemap of this site: https://EXAMPLE.com/generator-sitemap.xml"
    )
    assert [w.split(" (")[0] for w in status(site)["robots_other_sitemaps"]] == [warning]
    assert f"warning:      {warning}" in site.cli("status").stdout
    verify = site.cli("verify")  # a warning, not a problem: exit 0
    assert f"warning: {warning}" in verify.stdout
    assert "cdn.example.net" not in verify.stdout  # another site's sitemap is its own business


def test_robots_other_sitemaps_remove_drops_only_those_lines(site: Site) -> None:
    original = ROBOTS_RULES + GENERATOR_LINE + b"\n" + OTHER_SITE_LINE + b"\n"
    robots = with_robots(site, original)
    site.configure(site='robots_txt = "site/robots.txt"\nrobots_other_sitemaps = "remove"')
    site.write("index.html", page("home"))
    site.build()
    assert robots.read_bytes() == ROBOTS_RULES + OTHER_SITE_LINE + b"\n" + OUR_LINE + b"\n"
    assert status(site)["robots_other_sitemaps"] == []
    assert "warning" not in site.cli("verify").stdout
