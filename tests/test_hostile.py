"""Hostile input through the real CLI: file names, URL list lines, exclusions, ignore patterns.

Whatever a source holds, every published URL is an absolute URL on the site, in its one
RFC 3986 spelling, escaped for XML; what cannot be published is listed under "invalid"
or "excluded" in `status --json` with the reason, and the build still succeeds.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import pytest
from conftest import NS, Site, assert_valid, page, published, read_xml, snapshot

from sitemapd.fingerprint import bytes_digest
from sitemapd.sources.pages import read_hashed

ROOT = "https://example.com/"
# Characters a canonical URL may hold after its origin (RFC 3986 unreserved + sub-delims
# + ":@/?" + escapes); `%` must start an escape of two hex digits.
URL_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*\Z")
BAD_ESCAPE = re.compile(r"%(?![0-9A-F]{2})")


def status(site: Site) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(site.cli("status", "--json").stdout)
    return result


def output_bytes(site: Site) -> bytes:
    """Return every output file's bytes, concatenated."""
    return b"".join(path.read_bytes() for path in sorted(site.out.iterdir()) if path.is_file())


def assert_canonical_on_site(loc: str) -> None:
    """Fail unless `loc` is an absolute, canonically encoded URL inside https://example.com/."""
    assert loc.startswith(ROOT), loc
    parts = urlsplit(loc)
    assert (parts.scheme, parts.netloc, parts.fragment) == ("https", "example.com", ""), loc
    rest = loc[len(ROOT) - 1 :]
    assert URL_CHARS.match(rest), f"unencoded character in {loc!r}"
    assert not BAD_ESCAPE.search(rest), f"stray or lower-case escape in {loc!r}"
    segments = unquote_to_bytes(parts.path).split(b"/")
    assert b".." not in segments, loc
    assert b"." not in segments, loc
    assert len(loc) <= 2048


def assert_all_locs_canonical(site: Site) -> None:
    index = read_xml(site.out / "sitemap.xml")
    for loc in index.iter(f"{NS}loc"):
        assert_canonical_on_site(loc.text or "")
    for loc in published(site.out):
        assert_canonical_on_site(loc)


# --- file names ---------------------------------------------------------------------------

# relative path -> the URL it must publish as
HOSTILE_FILES = {
    "q&a.html": "q&a.html",
    "it's.html": "it's.html",
    'say "hi".html': "say%20%22hi%22.html",
    "<b>.html": "%3Cb%3E.html",
    "a>b.html": "a%3Eb.html",
    "release notes.html": "release%20notes.html",
    "c#.html": "c%23.html",
    "why?.html": "why%3F.html",
    "100%.html": "100%25.html",
    "%41.html": "%2541.html",  # a literal percent: never decoded to "A"
    "%2e%2e.html": "%252e%252e.html",
    "café.html": "caf%C3%A9.html",
    "straße.html": "stra%C3%9Fe.html",
    "日本.html": "%E6%97%A5%E6%9C%AC.html",
    "a..b.html": "a..b.html",
    "x../y.html": "x../y.html",
    "Q&A dir/index.html": "Q&A%20dir/",
    "index.html": "",
}
LATIN1_NAME = b"caf\xe9-latin1.html"  # not UTF-8: published as its raw bytes, escaped
LATIN1_URL = ROOT + "caf%E9-latin1.html"


def long_names() -> tuple[str, str, str]:
    """Return relative paths whose URLs are 2,048, 2,049 and about 2,240 characters long."""
    folders = "/".join([chr(ord("a") + n) * 200 for n in range(9)])  # 9 * 201 characters
    room = 2048 - len(ROOT) - len(folders) - 1
    exact = f"{folders}/{'f' * (room - 5)}.html"
    over = f"{folders}/{'g' * (room - 4)}.html"
    far = "/".join(["d" * 200] * 11) + "/long.html"
    assert len(ROOT + exact) == 2048
    assert len(ROOT + over) == 2049
    return exact, over, far


def test_hostile_file_names_publish_exact_escaped_urls(site: Site) -> None:
    for relpath in HOSTILE_FILES:
        site.write(relpath, page(relpath))
    (site.root / os.fsdecode(LATIN1_NAME)).write_bytes(page("latin-1").encode())
    # A dotfile is never a page, even one that merely looks like a dot segment.
    site.write("..foo.html", page("dotfile"))
    exact, over, far = long_names()
    for relpath in (exact, over, far):
        site.write(relpath, page("long"))

    site.build()

    assert_valid(site.out)
    expected = {ROOT + url for url in HOSTILE_FILES.values()} | {LATIN1_URL, ROOT + exact}
    assert set(published(site.out)) == expected
    assert_all_locs_canonical(site)

    shard = (site.out / "sitemap-1.xml").read_bytes()
    assert b"<loc>https://example.com/q&amp;a.html</loc>" in shard
    assert b"<loc>https://example.com/it&apos;s.html</loc>" in shard
    assert b"<loc>https://example.com/Q&amp;A%20dir/</loc>" in shard
    # No raw markup character from a file name reached the XML text.
    for raw in (b"<b>", b'"hi"', b"a>b", b"q&a.html", b"it's", b"Q&A "):
        assert raw not in shard
    assert b"foo.html" not in output_bytes(site)

    report = status(site)
    invalid = {item["item"]: item["reason"] for item in report["invalid"]["items"]}
    assert invalid == {
        over: "URL is 2049 characters long (limit 2048)",
        far: f"URL is {len(ROOT + far)} characters long (limit 2048)",
    }
    assert report["invalid"]["count"] == 2
    assert report["urls"]["live"] == len(expected)

    # A second build over the same hostile names changes nothing.
    before = snapshot(site.out)
    assert "0 new, 0 updated, 0 gone" in site.build().stdout
    assert snapshot(site.out) == before


# --- URL list -------------------------------------------------------------------------------

LONG_URL = ROOT + "a" * 2100
LIST_LINES: list[bytes] = [
    b"# a comment line",
    b"",
    b"https://example.com/ok.html\t2025-03-01T10:00:00+00:00",
    b"https://other.example/x.html",
    b"ftp://example.com/file.html",
    b"javascript:alert(1)",
    b"http://example.com/plain.html",
    b"https://example.com:8443/port.html",
    b"https://user:pw@example.com/secret.html",
    b"https://example.com/page.html#top",
    b"https://example.com/a/../b.html",
    b"https://example.com/a/%2e%2e/b.html",
    b"https://example.com/ctl\x01.html",
    LONG_URL.encode(),
    b"https://example.com/dated.html\tyesterday",
    b"   ",
    b"   # indented comment",
    b"https://example.com/caf\xe9.html",
    b"https://example.com:443/explicit-port.html\t2025-03-02",
    b"HTTPS://Example.COM/Mixed.html",
    "https://example.com/café".encode(),
    b"https://example.com/q?a=1&b=it's",
    b"https://example.com/sp ace.html",
]


def line_of(start: bytes) -> int:
    """Return the number of the list line starting with `start`."""
    return next(n for n, line in enumerate(LIST_LINES, start=1) if line.startswith(start))


def configure_list(site: Site) -> Path:
    site.configure(source='\n[[source]]\ntype = "urllist"\nname = "list"\npath = "urls.txt"\n')
    return site.base / "urls.txt"


def test_urllist_hostile_lines(site: Site) -> None:
    path = configure_list(site)
    path.write_bytes(b"\r\n".join(LIST_LINES) + b"\r\n")

    result = site.build()
    assert result.returncode == 0
    assert_valid(site.out)
    urls = published(site.out)
    assert set(urls) == {
        ROOT + "ok.html",
        ROOT + "explicit-port.html",
        ROOT + "Mixed.html",
        ROOT + "caf%C3%A9",
        ROOT + "q?a=1&b=it's",
        ROOT + "sp%20ace.html",
    }
    assert_all_locs_canonical(site)
    assert urls[ROOT + "ok.html"] == "2025-03-01T10:00:00+00:00"
    assert urls[ROOT + "explicit-port.html"] == "2025-03-02T00:00:00+00:00"
    # A line with a bad datetime is skipped, as logged, not published with a made-up time.
    assert "skipped https://example.com/dated.html: line" in result.stderr
    shard = (site.out / "sitemap-1.xml").read_bytes()
    assert b"<loc>https://example.com/q?a=1&amp;b=it&apos;s</loc>" in shard
    everything = output_bytes(site)
    for foreign in (b"other.example", b"ftp:", b"javascript", b"plain.html", b"8443", b"user:pw"):
        assert foreign not in everything

    report = status(site)
    invalid = {item["item"]: item["reason"] for item in report["invalid"]["items"]}
    expected = {
        "https://other.example/x.html": "is not on https://example.com/",
        "ftp://example.com/file.html": "scheme 'ftp' is not http or https",
        "javascript:alert(1)": "scheme 'javascript' is not http or https",
        "http://example.com/plain.html": "is not on https://example.com/",
        "https://example.com:8443/port.html": "is not on https://example.com/",
        "https://user:pw@example.com/secret.html": "credentials",
        "https://example.com/page.html#top": "fragment",
        "https://example.com/a/../b.html": "'..' segment",
        "https://example.com/a/%2e%2e/b.html": "'..' segment",
        "https://example.com/ctl\x01.html": "control characters",
        LONG_URL[:200]: "characters long (limit 2048)",
        "https://example.com/dated.html": "bad datetime 'yesterday'",
    }
    latin1 = f"line {line_of(b'https://example.com/caf' + bytes([0xE9]))}"
    assert set(invalid) == {*expected, latin1}
    for item, words in expected.items():
        assert invalid[item].startswith(f"line {line_of(item.encode())}: "), invalid[item]
        assert words in invalid[item], (item, invalid[item])
    assert invalid[latin1] == "not valid UTF-8"
    assert report["invalid"]["count"] == 13
    assert report["urls"]["live"] == 6

    # Fixing the list clears its rejects on the next build.
    path.write_bytes(b"https://example.com/ok.html\n")
    site.build()
    assert set(published(site.out)) == {ROOT + "ok.html"}
    assert status(site)["invalid"] == {"count": 0, "items": []}


# --- exclusions -------------------------------------------------------------------------------

GOOGLEBOT_NONE = (
    '<!doctype html><html><head><title>g</title><meta name="googlebot" content="none">'
    "</head><body><p>g</p></body></html>"
)


def test_excluded_pages_are_in_no_output_and_listed_with_reasons(site: Site) -> None:
    site.write("plain.html", page("plain"))
    site.write("original.html", page("original"))
    site.write("hidden.html", page("hidden", robots="noindex"))
    site.write("shout.html", page("shout", robots="NOINDEX, follow"))
    site.write("gbot.html", GOOGLEBOT_NONE)
    site.write("copy.html", page("copy", canonical="https://example.com/original.html"))
    site.write("dir/self.html", page("self", canonical="self.html"))
    site.write("dir/index.html", page("dir", canonical="/dir/index.html"))
    site.write("later.html", page("later"))

    site.build()
    assert_valid(site.out)
    live = {
        ROOT + "plain.html",
        ROOT + "original.html",
        ROOT + "dir/self.html",
        ROOT + "dir/",
        ROOT + "later.html",
    }
    assert set(published(site.out)) == live
    everything = output_bytes(site)
    for name in (b"hidden.html", b"shout.html", b"gbot.html", b"copy.html"):
        assert name not in everything
    report = status(site)
    assert report["excluded"] == [
        {"loc": ROOT + "copy.html", "reason": "canonical: https://example.com/original.html"},
        {"loc": ROOT + "gbot.html", "reason": "noindex"},
        {"loc": ROOT + "hidden.html", "reason": "noindex"},
        {"loc": ROOT + "shout.html", "reason": "noindex"},
    ]
    assert report["excluded_by_reason"] == {"canonical": 1, "noindex": 3}
    assert report["urls"]["live"] == 5

    # One page drops its noindex, another gains one.
    site.write("hidden.html", page("hidden"))
    site.write("later.html", page("later", robots="noindex"))
    site.build()
    assert_valid(site.out)
    assert set(published(site.out)) == (live - {ROOT + "later.html"}) | {ROOT + "hidden.html"}
    assert b"later.html" not in output_bytes(site)
    assert {item["loc"] for item in status(site)["excluded"]} == {
        ROOT + "copy.html",
        ROOT + "gbot.html",
        ROOT + "later.html",
        ROOT + "shout.html",
    }


# --- ignore patterns --------------------------------------------------------------------------

PAST = 1_735_689_600  # 2025-01-01T00:00:00Z
PAST_W3C = "2025-01-01T00:00:00+00:00"


def stamped(name: str, build: int, body: str = "") -> str:
    return page(name, f"{body}<!-- build: 2026-01-0{build}T00:00:00Z #{build} -->{name}")


def test_ignored_build_stamp_changes_nothing(site: Site) -> None:
    site.configure(source="ignore = ['<!-- build: [^>]* -->']")
    names = [f"p{n}.html" for n in range(5)]
    for name in names:
        os.utime(site.write(name, stamped(name, 1)), (PAST, PAST))
    site.build()
    first = published(site.out)
    assert first == dict.fromkeys((ROOT + name for name in names), PAST_W3C)
    before = snapshot(site.out)

    # Every file is rewritten with a new stamp and a new mtime: only ignored bytes differ.
    for name in names:
        os.utime(site.write(name, stamped(name, 2)), (PAST + 86400, PAST + 86400))
    result = site.build()
    assert "0 new, 0 updated, 0 gone" in result.stdout
    assert "wrote 0 files" in result.stdout
    assert snapshot(site.out) == before
    assert published(site.out) == first

    # A real change next to the stamp still counts.
    os.utime(site.write("p3.html", stamped("p3.html", 3, "new text")), (PAST, PAST))
    assert "0 new, 1 updated, 0 gone" in site.build().stdout
    after = published(site.out)
    assert after[ROOT + "p3.html"] > PAST_W3C
    assert {k: v for k, v in after.items() if k != ROOT + "p3.html"} == {
        k: v for k, v in first.items() if k != ROOT + "p3.html"
    }


def test_a_datetime_after_a_space_is_an_error_not_part_of_the_url(site: Site) -> None:
    (site.base / "urls.txt").write_text("https://example.com/a 2026-11-20\nhttps://example.com/b\n")
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    result = site.build()
    assert "1 invalid" in result.stdout
    assert set(site.urls()) == {"https://example.com/b"}
    assert "separate the datetime with a tab" in site.cli("status").stdout


def test_pages_without_a_head_and_binary_files_named_html_are_read(site: Site) -> None:
    """A body that is its document's only part, holding loose text and a paragraph, or a
    compressed file saved as .html: each is published, and the build goes on."""
    loose = "Loose words, before any paragraph, " * 5
    paragraph = "A paragraph long enough to count, with commas, " * 6
    site.write("bare.html", f"<body>{loose}<p>{paragraph}</p></body>")
    site.write("packed.html", gzip.compress(page("Packed", paragraph).encode()))
    site.write("fine.html", page("Fine", paragraph))
    site.build()
    assert set(site.urls()) == {
        f"https://example.com/{name}.html" for name in ("bare", "packed", "fine")
    }
    site.write("bare.html", f"<body>{loose}<p>{paragraph} Corrected.</p></body>")
    assert "0 new, 1 updated" in site.build().stdout


def test_values_many_pages_share_are_stored_as_given(site: Site) -> None:
    """A title with quotes, shared by a batch of pages (a bulk insert writes a value all
    its rows share into its statement), is stored and published as each page says."""
    title = "O'Brien's \"notes\" -- '); DROP TABLE urls; --"
    for n in range(40):
        site.write(f"p{n}.html", page(title, f"Page {n}"))
    site.build()
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    assert conn.execute("SELECT DISTINCT title, typeof(change_count) FROM urls").fetchall() == [
        (title, "integer")
    ]
    conn.close()
    assert len(site.urls()) == 40


def test_half_a_surrogate_pair_in_structured_data_is_a_replacement_character(
    site: Site,
) -> None:
    """A JSON-LD escape of half a surrogate pair (`\\ud800`) is no character and has no
    UTF-8: the page's headline shows U+FFFD in its place, and the page and the others
    are published (the ledger refused the text, and every build failed)."""
    site.configure(
        extra='[news]\npublication_name = "Example"\nlanguage = "en"\n[feed]\ntitle = "Updates"\n'
    )
    ld = '{"@type": "NewsArticle", "headline": "Bridge \\ud800 reopens", "name": "x\\udfff"}'
    body = "The river bridge reopened on Tuesday after a year of repairs to its piers. " * 4
    site.write(
        "bridge.html",
        page("Bridge reopens", body).replace(
            "</head>", f'<script type="application/ld+json">{ld}</script></head>'
        ),
    )
    site.write("other.html", page("Other", body))
    site.build()
    assert set(site.urls()) == {f"https://example.com/{n}.html" for n in ("bridge", "other")}
    news = read_xml(site.out / "news-sitemap.xml")
    titles = [t.text for t in news.iter("{http://www.google.com/schemas/sitemap-news/0.9}title")]
    assert titles == ["Bridge \ufffd reopens"]
    assert_valid(site.out)


def test_a_canonical_spelling_escapes_otherwise_names_the_page_itself(site: Site) -> None:
    """WordPress writes a non-ASCII slug's escapes in lower case; an escape of `~` or `-`
    is that character. RFC 3986 compares them equal: such a page is published, where it
    was left out as canonicalised elsewhere."""
    for relpath, canonical in (
        ("سلام/index.html", "https://example.com/%d8%b3%d9%84%d8%a7%d9%85/"),
        ("~ann.html", "/%7Eann.html"),
        ("dash-x.html", "/dash%2Dx.html"),
    ):
        site.write(relpath, page(relpath, "Text of the page", canonical=canonical))
    site.write("other.html", page("Other", "Text", canonical="/%7Eann.html"))
    site.build()
    assert set(site.urls()) == {
        "https://example.com/%D8%B3%D9%84%D8%A7%D9%85/",
        "https://example.com/~ann.html",
        "https://example.com/dash-x.html",
    }


def test_a_listed_url_whose_datetime_turns_bad_stays_as_it_was(site: Site) -> None:
    """A typo in an export's datetime (`2026-13-01`, a space for the tab) leaves the URL
    as the ledger has it, reported as invalid: it took the page out of the sitemap and
    told the search engines it was gone. A new URL on such a line waits for the fix."""
    path = configure_list(site)
    lines = [f"{ROOT}p{n}.html\t2025-03-0{n + 1}T00:00:00Z" for n in range(3)]
    path.write_text("\n".join(lines) + "\n")
    site.build()
    before = published(site.out)
    typos = [
        f"{ROOT}p0.html\t2026-13-01",
        f"{ROOT}p1.html 2025-06-01T00:00:00Z",
        lines[2],
        f"{ROOT}new.html\t2025-02-30",
    ]
    path.write_text("\n".join(typos) + "\n")
    result = site.build()
    assert "0 new, 0 updated, 0 gone, 3 invalid" in result.stdout
    assert published(site.out) == before
    invalid = {item["item"]: item["reason"] for item in status(site)["invalid"]["items"]}
    assert "bad datetime '2026-13-01'" in invalid[f"{ROOT}p0.html"]
    assert "separate the datetime with a tab" in invalid[f"{ROOT}p1.html 2025-06-01T00:00:00Z"]
    # Fixed, the lines are read as they say.
    fixed = [f"{ROOT}p0.html\t2026-01-01T00:00:00Z", *lines[1:], f"{ROOT}new.html\t2025-02-28"]
    path.write_text("\n".join(fixed) + "\n")
    assert "1 new, 1 updated, 0 gone, 0 invalid" in site.build().stdout
    assert published(site.out)[f"{ROOT}p0.html"] == "2026-01-01T00:00:00+00:00"


def test_a_url_whose_last_line_is_held_waits_on_a_first_build_too(site: Site) -> None:
    """Of a URL listed twice its last line counts: held for its datetime, the URL waits
    on a first build as on any other (a later read of the list agrees)."""
    path = configure_list(site)
    lines = [f"{ROOT}u.html\t2025-01-01T00:00:00Z", f"{ROOT}v.html\t2025-01-02T00:00:00Z"]
    path.write_text("\n".join([*lines, f"{ROOT}u.html\t2025-13-01"]) + "\n")
    assert "1 new, 0 updated, 0 gone, 1 invalid" in site.build().stdout
    assert set(published(site.out)) == {f"{ROOT}v.html"}
    path.write_text("\n".join([lines[1], f"{ROOT}u.html\t2025-13-01"]) + "\n")
    assert "0 new, 0 updated, 0 gone, 1 invalid" in site.build().stdout


def test_a_page_past_what_search_engines_read_is_read_for_its_first_fifteen_mib(
    site: Site,
) -> None:
    """Googlebot reads the first 15 MB of an HTML file. A bigger page is published with
    what its first 15 MiB say, and the build says so; the rest is hashed, never parsed (a
    200 MB page took 874 MB of memory to parse)."""
    story = "The council approved the river budget after a long night of debate. " * 3
    entries = [f"<p>Archive entry {n}: {story}</p>\n" for n in range(70_000)]  # 16 MiB

    def archive(version: int) -> str:
        styled = f'<link rel="stylesheet" href="/site.css?v={version}"></head>'
        return page("Archive", "".join(entries)).replace("</head>", styled)

    site.write("archive.html", archive(1))
    site.write("small.html", page("Small", story))
    result = site.build()
    assert "2 new" in result.stdout
    size = (site.root / "archive.html").stat().st_size
    said = f"archive.html ({size:,} bytes) is read for its first 15 MiB alone"
    assert said in result.stderr, result.stderr
    explained = site.cli("explain", "archive.html").stdout
    assert f" bytes of {size:,} (to a block's end in the first 15 MiB)" in explained
    entries[10] = f"<p>Archive entry 10: {story} Corrected on Friday.</p>\n"
    site.write("archive.html", archive(1))
    assert "0 new, 1 updated" in site.build().stdout
    # Past the first 15 MiB: as unseen as it is to a search engine.
    entries[-1] = "<p>The last entry, rewritten.</p>\n"
    site.write("archive.html", archive(1))
    assert "0 new, 0 updated" in site.build().stdout
    # The template a byte longer moves what is read by a byte, and the cut stays at the
    # end of the same paragraph.
    site.write("archive.html", archive(12))
    assert "0 new, 0 updated" in site.build().stdout


def test_a_page_past_what_search_engines_read_is_said_so_when_its_bytes_count_too(
    site: Site,
) -> None:
    """With `fingerprint = "page"` every byte counts, and what the page says (its title,
    robots rules, canonical) is read in its first 15 MiB, as in content mode."""
    site.configure(source='fingerprint = "page"')
    filler = "<p>An entry of the archive, one of very many.</p>\n" * 340_000  # 16 MiB
    site.write("archive.html", page("Archive", filler))
    result = site.build()
    size = (site.root / "archive.html").stat().st_size
    assert f"archive.html ({size:,} bytes) is read for its first 15 MiB alone" in result.stderr
    explained = site.cli("explain", "archive.html").stdout
    assert "as search engines read it; the fingerprint takes every byte" in explained
    site.write("archive.html", page("Archive", filler + "<p>A last entry.</p>"))
    assert "0 new, 1 updated" in site.build().stdout


@pytest.mark.parametrize("size", [0, 1, 999, 1_000, 1_001, (1 << 20) + 5_000, 3 << 20])
def test_a_file_is_hashed_whole_however_little_of_it_is_kept(tmp_path: Path, size: int) -> None:
    data = random.Random(size).randbytes(size)
    path = tmp_path / "page.html"
    path.write_bytes(data)
    stat, head, digest, read = read_hashed(str(path), 1_000)
    assert (stat.st_size, head, digest, read) == (size, data[:1_000], bytes_digest(data), size)
    assert read_hashed(str(path)) == (stat, data, digest, size)


def test_a_page_past_what_search_engines_read_without_blocks_is_cut_at_a_line(site: Site) -> None:
    """A page of one long `<pre>` has no end of a block near the mark: it is cut at the
    end of a line, and a template a byte longer moves no lastmod either."""
    lines = "".join(f"{n:08d} an entry of the log, one of very many\n" for n in range(340_000))

    def log(version: int) -> str:
        styled = f'<link rel="stylesheet" href="/site.css?v={version}"></head>'
        return page("Log", f"<pre>{lines}</pre>").replace("</head>", styled)

    site.write("log.html", log(1))
    site.build()
    site.write("log.html", log(12))
    assert "0 new, 0 updated" in site.build().stdout
