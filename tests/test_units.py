"""Small pure pieces: URL canonical form, globs, W3C datetimes, page facts."""

from __future__ import annotations

import pytest

from sitemapd.core import w3c
from sitemapd.core.globs import compile_globs
from sitemapd.core.urls import Origin, URLPolicy
from sitemapd.errors import ConfigError, InvalidURL
from sitemapd.fingerprint import bytes_digest
from sitemapd.render.sitemap import entry_size, url_entry
from sitemapd.sources.content import PageFacts, exclusion, read_page

POLICY = URLPolicy(Origin.from_base_url("https://example.com/"))


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("https://example.com/", "https://example.com/"),
        ("https://example.com", "https://example.com/"),
        ("https://EXAMPLE.com:443/a", "https://example.com/a"),
        ("https://example.com/café", "https://example.com/caf%C3%A9"),
        ("https://example.com/a b", "https://example.com/a%20b"),
        ("https://example.com/q&a", "https://example.com/q&a"),
        ('https://example.com/<x>"', "https://example.com/%3Cx%3E%22"),
        ("https://example.com/100%", "https://example.com/100%25"),
        ("https://example.com/%C3%A9", "https://example.com/%C3%A9"),
        ("https://example.com/s?q=a b&x=é", "https://example.com/s?q=a%20b&x=%C3%A9"),
        ("  https://example.com/trim  ", "https://example.com/trim"),
    ],
)
def test_canonical_urls(raw: str, canonical: str) -> None:
    assert POLICY.normalise(raw) == canonical
    assert POLICY.normalise(canonical) == canonical


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("http://example.com/", "not on https://example.com/"),
        ("https://example.org/", "not on https://example.com/"),
        ("https://example.com:8443/", "not on https://example.com/"),
        ("ftp://example.com/", "not http or https"),
        ("javascript:alert(1)", "not http or https"),
        ("/relative", "not http or https"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://example.com/a#top", "fragment"),
        ("https://example.com/a/../b", "'..' segment"),
        ("https://example.com/a/%2E%2e/b", "'..' segment"),
        ("https://example.com/./b", "'.' or '..' segment"),
        ("https://example.com/a\x00b", "control characters"),
        ("https://example.com/" + "a" * 2100, "characters long"),
        ("", "empty"),
    ],
)
def test_rejected_urls(raw: str, reason: str) -> None:
    with pytest.raises(InvalidURL, match=reason.replace("(", r"\(").replace(".", r"\.")):
        POLICY.normalise(raw)


@pytest.mark.parametrize(
    "host",
    ["example.com", "EXAMPLE.com.", "a" * 63 + ".com", "café.example", "xn--caf-dma.example"],
)
def test_hosts_are_those_the_idna_codec_gives(host: str) -> None:
    origin = Origin.from_base_url(f"https://{host}/")
    assert origin.root == f"https://{host.lower().encode('idna').decode()}/"


@pytest.mark.parametrize("host", ["a..com", "a" * 64 + ".com", "example." + "b" * 64, ".com"])
def test_hosts_the_idna_codec_refuses(host: str) -> None:
    with pytest.raises(UnicodeError):
        host.encode("idna")
    with pytest.raises(ConfigError, match="not a valid domain name"):
        Origin.from_base_url(f"https://{host}/")


def test_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError):
        Origin.from_base_url("file:///var/www")


def test_file_urls() -> None:
    for_file = POLICY.for_file
    assert for_file("/", "index.html", False, ("index.html",)) == "https://example.com/"
    assert for_file("/", "a/index.html", False, ("index.html",)) == "https://example.com/a/"
    assert for_file("/d/", "a/b.html", True, ()) == "https://example.com/d/a/b"
    assert for_file("/", "a?b#c.html", False, ()) == "https://example.com/a%3Fb%23c.html"
    assert for_file("/", "50%.html", False, ()) == "https://example.com/50%25.html"
    # A name that is not UTF-8 keeps its raw bytes, as the web server serves them.
    assert for_file("/", "caf\udce9.html", False, ()) == "https://example.com/caf%E9.html"


@pytest.mark.parametrize(
    ("patterns", "matches", "misses"),
    [
        (["**/*.html"], ["index.html", "a/b/c.html"], ["a.htm", "a/b.html/x"]),
        (["*.html"], ["index.html"], ["a/index.html"]),
        (["news/**"], ["news/a.html", "news/x/y.html"], ["newsroom/a.html"]),
        (["a?.html", "[bc]*.htm"], ["a1.html", "b.htm", "cx.htm"], ["a12.html", "d.htm"]),
        (["[!a]*.html"], ["b.html"], ["a.html"]),
        ([], [], ["index.html"]),
    ],
)
def test_globs(patterns: list[str], matches: list[str], misses: list[str]) -> None:
    regex = compile_globs(patterns)
    assert all(regex.match(p) for p in matches)
    assert not any(regex.match(p) for p in misses)


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        ("2026-11-20", "2026-11-20T00:00:00+00:00"),
        ("2026-11-20T10:00:00Z", "2026-11-20T10:00:00+00:00"),
        ("2026-11-20T10:00:00.123+02:00", "2026-11-20T08:00:00+00:00"),
        ("2026-11-20T10:00+01:00", "2026-11-20T09:00:00+00:00"),
        # Four digits of year whatever the year: string order is time order.
        ("0150-06-01T00:00:00Z", "0150-06-01T00:00:00+00:00"),
        ("0999-12-31T23:00:00-05:00", "1000-01-01T04:00:00+00:00"),
    ],
)
def test_w3c_datetimes(value: str, canonical: str) -> None:
    assert w3c.parse(value) == canonical


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "2026-11-20T10:00:00",
        "2026-13-01",
        # In range as written, out of it in UTC: refused, not an OverflowError.
        "9999-12-31T23:00:00-05:00",
        "0001-01-01T00:00:00+01:00",
        "\u0662\u0660\u0662\u0664-01-02",
    ],
)
def test_bad_w3c_datetimes(value: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message varies by cause
        w3c.parse(value)


def test_page_facts() -> None:
    html = (
        b"<html><head><title>\n  A  page </title>"
        b'<link rel="alternate canonical" href="/a/">'
        b'<meta name="ROBOTS" content="max-snippet:20, NoIndex"></head><body>'
        b"<title>not this</title></body></html>"
    )
    assert read_page(html) == PageFacts(title="A page", canonical="/a/", noindex=True)
    assert read_page(b"") == PageFacts()
    assert read_page(b"\xff\xfe garbage <<<") == PageFacts()


def test_exclusion_reasons() -> None:
    loc = "https://example.com/a/"
    assert exclusion(PageFacts(noindex=True), loc, POLICY) == "noindex"
    assert exclusion(PageFacts(canonical="/a/"), loc, POLICY) is None
    assert exclusion(PageFacts(canonical="index.html"), loc, POLICY) is None
    assert exclusion(PageFacts(canonical="/b/"), loc, POLICY) == "canonical: https://example.com/b/"
    assert exclusion(PageFacts(canonical="https://other.org/a/"), loc, POLICY) == (
        "canonical: https://other.org/a/"
    )


def test_ignore_patterns_change_the_hash_only_where_they_match() -> None:
    import re

    stamp = (re.compile(rb"<!-- build: [^>]* -->"),)
    one = b"<p>x</p><!-- build: 1 -->"
    assert bytes_digest(one, stamp) == bytes_digest(b"<p>x</p><!-- build: 2 -->", stamp)
    assert bytes_digest(one, stamp) != bytes_digest(b"<p>y</p><!-- build: 1 -->", stamp)


@pytest.mark.parametrize("loc", ["https://example.com/", "https://example.com/q&a'b"])
def test_entry_size_matches_rendering(loc: str) -> None:
    assert entry_size(loc) == len(url_entry(loc, "2026-01-01T00:00:00+00:00").encode())
