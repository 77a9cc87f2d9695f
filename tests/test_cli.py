"""The command line: status, verify, the state lock, import, --version and --log-level."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import Site, page, published, run_cli, shard_members, snapshot

import sitemapd
from sitemapd.core import w3c
from sitemapd.ledger.lock import StateLock


def stamp(value: str) -> float:
    return w3c.to_epoch(w3c.parse(value))


def put(site: Site, relpath: str, html: str, mtime: str) -> Path:
    """Write a page and give it the modification time `mtime` (a W3C datetime)."""
    path = site.write(relpath, html)
    os.utime(path, (stamp(mtime), stamp(mtime)))
    return path


def urlset(*entries: tuple[str, str | None]) -> str:
    body = "".join(
        f"<url><loc>{loc}</loc>" + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "") + "</url>"
        for loc, lastmod in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>\n'
    )


# --- status ------------------------------------------------------------------------


@pytest.fixture
def mixed(site: Site) -> Site:
    """Live, excluded (three reasons), gone and invalid items, in two shards."""
    (site.base / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (site.base / "list.txt").write_text(
        "https://example.com/listed.html\t2025-03-01T00:00:00+00:00\n"
        "ftp://example.com/file.txt\n"
        "https://other.org/page.html\n"
        "https://example.com/x.html#part\n"
    )
    site.configure(
        site='robots_txt = "robots.txt"',
        sitemap="max_urls = 3\nmax_bytes = 16384",
        source='name = "pages"\n[[source]]\ntype = "urllist"\npath = "list.txt"\nname = "list"',
    )
    put(site, "a.html", page("A"), "2025-01-01T00:00:00Z")
    put(site, "b.html", page("B"), "2025-01-03T00:00:00Z")
    put(site, "c.html", page("C"), "2025-01-02T00:00:00Z")
    put(site, "gone.html", page("Gone"), "2025-01-04T00:00:00Z")
    put(site, "noidx.html", page("N", robots="noindex, follow"), "2025-01-05T00:00:00Z")
    put(site, "canon.html", page("C2", canonical="/a.html"), "2025-01-05T00:00:00Z")
    put(site, "private/p.html", page("P"), "2025-01-05T00:00:00Z")
    return site


def test_status_before_any_build_exits_1(site: Site) -> None:
    for args in (("status",), ("status", "--json")):
        result = site.cli(*args, check=False)
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr == (
            f"sitemapd: error: no ledger at {site.state / 'ledger.sqlite3'} yet: "
            "run 'sitemapd build' first\n"
        )


def test_status_json_reports_counts_reasons_invalid_and_shards(mixed: Site) -> None:
    mixed.build()
    (mixed.root / "gone.html").unlink()
    before = w3c.now()
    mixed.build()
    after = w3c.now()

    report = json.loads(mixed.cli("status", "--json").stdout)
    assert report["urls"] == {"live": 4, "excluded": 3, "gone": 1, "seeded": 0}
    assert report["excluded_by_reason"] == {"canonical": 1, "noindex": 1, "robots.txt": 1}
    assert report["excluded"] == [
        {
            "loc": "https://example.com/canon.html",
            "reason": "canonical: https://example.com/a.html",
        },
        {"loc": "https://example.com/noidx.html", "reason": "noindex"},
        {"loc": "https://example.com/private/p.html", "reason": "robots.txt"},
    ]
    assert report["invalid"]["count"] == 3
    assert [(i["source"], i["item"]) for i in report["invalid"]["items"]] == [
        ("list", "ftp://example.com/file.txt"),
        ("list", "https://example.com/x.html#part"),
        ("list", "https://other.org/page.html"),
    ]
    reasons = [i["reason"] for i in report["invalid"]["items"]]
    assert reasons[0] == "line 2: scheme 'ftp' is not http or https"
    assert reasons[1] == "line 4: URL has a fragment"
    assert reasons[2] == "line 3: URL is not on https://example.com/ (found https://other.org/)"

    # bytes and byte_fill are pinned by test_status_shard_bytes_are_the_file_size.
    shards = [{k: v for k, v in s.items() if not k.startswith("byte")} for s in report["shards"]]
    assert shards == [
        {
            "file": "sitemap-1.xml",
            "urls": 3,
            "url_fill": 1.0,
            "lastmod": "2025-01-03T00:00:00+00:00",
        },
        {
            "file": "sitemap-2.xml",
            "urls": 1,
            "url_fill": 0.3333,
            "lastmod": "2025-03-01T00:00:00+00:00",
        },
    ]
    assert shard_members(mixed.out) == {
        "sitemap-1.xml": {f"https://example.com/{n}.html" for n in "abc"},
        "sitemap-2.xml": {"https://example.com/listed.html"},
    }
    assert report["index"] == "https://example.com/sitemap.xml"
    assert before <= report["last_publish"] <= after

    text = mixed.cli("status").stdout.splitlines()
    assert f"last publish: {report['last_publish']}" in text
    assert "URLs:         4 live, 3 excluded, 1 gone, 0 seeded" in text
    assert "excluded:     1 canonical, 1 noindex, 1 robots.txt" in text
    assert "  https://example.com/noidx.html  (noindex)" in text
    assert "invalid:      3" in text
    assert "  list: https://other.org/page.html  (" + reasons[2] + ")" in text
    assert "shards:       2" in text
    assert any(line.startswith("  sitemap-1.xml: 3 URLs (100.0%), ") for line in text)
    assert any(line.startswith("  sitemap-2.xml: 1 URLs (33.3%), ") for line in text)


def test_status_says_the_last_publish_failed_until_one_succeeds(site: Site) -> None:
    site.write("a.html", page("A", "The first page of the site."))
    site.build()
    index = site.out / "sitemap.xml"
    for change in ("a page added", "nothing changed"):
        if change == "a page added":
            site.write("b.html", page("B", "A second page, added before the publish failed."))
        index.unlink()
        (index / "in-the-way").mkdir(parents=True)  # the index cannot be written
        assert site.cli("build", check=False).returncode == 1, change
        failed = json.loads(site.cli("status", "--json").stdout)["publish_failed"]
        assert f"cannot write {index}" in failed["error"], change
        (line,) = [s for s in site.cli("status").stdout.splitlines() if "PUBLISH FAILED" in s]
        assert line.startswith(f"PUBLISH FAILED: at {failed['at']}: cannot write {index}")
        assert line.endswith("(the next build tries again)"), line
        shutil.rmtree(index)
        site.build()
        assert json.loads(site.cli("status", "--json").stdout)["publish_failed"] is None
        assert "PUBLISH FAILED" not in site.cli("status").stdout
    assert set(site.urls()) == {"https://example.com/a.html", "https://example.com/b.html"}


def test_status_shard_bytes_are_the_file_size(mixed: Site) -> None:
    """A shard's bytes (and byte_fill against max_bytes) count the whole document."""
    mixed.build()
    report = json.loads(mixed.cli("status", "--json").stdout)
    sizes = {p.name: p.stat().st_size for p in mixed.out.glob("sitemap-*.xml")}
    assert [(s["file"], s["bytes"], s["byte_fill"]) for s in report["shards"]] == [
        (name, sizes[name], round(sizes[name] / 16384, 4)) for name in sorted(sizes)
    ]


# --- verify ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built site: four pages in two shards of two, robots.txt with our Sitemap line."""
    site = Site(tmp_path_factory.mktemp("verified"))
    (site.base / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    site.configure(site='robots_txt = "robots.txt"', sitemap="max_urls = 2")
    for n, name in enumerate("abcd", start=1):
        put(site, f"{name}.html", page(name), f"2025-01-0{n}T00:00:00Z")
    site.build()
    assert shard_members(site.out) == {
        "sitemap-1.xml": {"https://example.com/a.html", "https://example.com/b.html"},
        "sitemap-2.xml": {"https://example.com/c.html", "https://example.com/d.html"},
    }
    return site.base


@pytest.fixture
def copy(verified: Path, tmp_path: Path) -> Site:
    """A fresh copy of the verified site to corrupt."""
    shutil.copytree(verified, tmp_path / "copy")
    site = Site.__new__(Site)
    site.base = tmp_path / "copy"
    site.root, site.out, site.state = (site.base / n for n in ("site", "out", "state"))
    site.config = site.base / "sitemapd.toml"
    return site


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))


def truncate(site: Site) -> None:
    shard = site.out / "sitemap-1.xml"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])


def duplicate(site: Site) -> None:
    entry = (
        "<url><loc>https://example.com/a.html</loc>"
        "<lastmod>2025-01-01T00:00:00+00:00</lastmod></url>\n"
    )
    edit(site.out / "sitemap-2.xml", "</urlset>", entry + "</urlset>")


VERIFY_CASES = {
    "truncated-shard": (truncate, "out/sitemap-1.xml: not a well-formed sitemap ("),
    "deleted-shard": (
        lambda s: (s.out / "sitemap-2.xml").unlink(),
        "out/sitemap-2.xml: named by the index but missing",
    ),
    "stray-shard": (
        lambda s: shutil.copy(s.out / "sitemap-1.xml", s.out / "sitemap-99.xml"),
        "out/sitemap-99.xml: shard file not named by the index",
    ),
    "impossible-lastmod": (
        lambda s: edit(s.out / "sitemap-1.xml", "2025-01-02T00:00:00+00:00", "2025-13-02"),
        "out/sitemap-1.xml: https://example.com/b.html: lastmod '2025-13-02' is not a W3C datetime",
    ),
    "lastmod-not-in-index": (
        lambda s: edit(
            s.out / "sitemap-1.xml", "2025-01-01T00:00:00+00:00", "2025-01-05T06:07:08+00:00"
        ),
        "out/sitemap-1.xml: index lastmod 2025-01-02T00:00:00+00:00 differs from newest member "
        "2025-01-05T06:07:08+00:00",
    ),
    "url-in-two-shards": (
        duplicate,
        "out/sitemap-2.xml: https://example.com/a.html appears in more than one place",
    ),
    "off-site-url": (
        lambda s: edit(
            s.out / "sitemap-2.xml", "https://example.com/c.html", "https://evil.example/c.html"
        ),
        "out/sitemap-2.xml: https://evil.example/c.html: URL is not on https://example.com/ "
        "(found https://evil.example/)",
    ),
    "robots-line-removed": (
        lambda s: edit(s.base / "robots.txt", "Sitemap: https://example.com/sitemap.xml\n", ""),
        "robots.txt: does not hold exactly one 'Sitemap: https://example.com/sitemap.xml' line",
    ),
    "robots-line-twice": (
        lambda s: edit(
            s.base / "robots.txt",
            "Sitemap: https://example.com/sitemap.xml\n",
            "Sitemap: https://example.com/sitemap.xml\nSitemap: https://example.com/sitemap.xml\n",
        ),
        "robots.txt: does not hold exactly one 'Sitemap: https://example.com/sitemap.xml' line",
    ),
}


def test_verify_passes_after_a_build(copy: Site) -> None:
    result = copy.cli("verify", check=False)
    assert (result.returncode, result.stdout) == (0, f"ok: {copy.out / 'sitemap.xml'}\n")


@pytest.mark.parametrize("case", list(VERIFY_CASES))
def test_verify_names_each_corruption(copy: Site, case: str) -> None:
    corrupt, expected = VERIFY_CASES[case]
    corrupt(copy)
    result = copy.cli("verify", check=False)
    assert result.returncode == 1, result.stdout
    problems = result.stdout.splitlines()
    # Each problem line names the file; `expected` is the whole line, but for lxml's words.
    assert any(p.startswith(f"{copy.base}/{expected}") for p in problems), problems
    assert result.stderr == ("1 problem\n" if len(problems) == 1 else f"{len(problems)} problems\n")


def test_verify_notes_a_valid_date_only_lastmod(copy: Site) -> None:
    edit(copy.out / "sitemap-1.xml", "2025-01-02T00:00:00+00:00", "2025-01-02")
    result = copy.cli("verify", check=False)
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[0] == (
        f"note: {copy.out}/sitemap-1.xml: https://example.com/b.html: lastmod '2025-01-02' "
        "is valid, but not the full UTC time sitemapd writes"
    )
    assert result.stderr == ""


@pytest.mark.parametrize("case", ["deleted-shard", "stray-shard", "robots-line-removed"])
def test_build_repairs_what_verify_names(copy: Site, case: str) -> None:
    VERIFY_CASES[case][0](copy)
    copy.build()
    assert copy.cli("verify", check=False).returncode == 0


# --- the state lock ------------------------------------------------------------------


def test_build_refuses_a_locked_state_dir_naming_the_holder(site: Site) -> None:
    put(site, "a.html", page("A"), "2025-01-01T00:00:00Z")
    site.build()
    before = snapshot(site.out)
    put(site, "b.html", page("B"), "2025-01-02T00:00:00Z")
    with StateLock(site.state):
        started = time.monotonic()
        result = site.cli("build", check=False)
        elapsed = time.monotonic() - started
        assert result.returncode == 1
        assert result.stderr == (
            f"sitemapd: error: state directory {site.state} is in use by sitemapd pid "
            f"{os.getpid()}\n"
        )
        assert elapsed < 10, f"waited {elapsed:.1f}s for the lock instead of failing at once"
        assert snapshot(site.out) == before
        # Readers need no lock.
        assert json.loads(site.cli("status", "--json").stdout)["urls"]["live"] == 1
    site.build()
    assert set(site.urls()) == {"https://example.com/a.html", "https://example.com/b.html"}


# --- import ------------------------------------------------------------------------

OLD = {
    "https://example.com/a.html": ("2020-03-04T05:06:07+00:00", "2020-03-04T05:06:07+00:00"),
    "https://example.com/b.html": ("2020-05-06", "2020-05-06T00:00:00+00:00"),
    "https://example.com/c.html": ("2020-07-08T10:00:00+02:00", "2020-07-08T08:00:00+00:00"),
    "https://example.com/retired.html": ("2019-01-01T00:00:00Z", "2019-01-01T00:00:00+00:00"),
}
OFF_SITE = ("https://other.org/a.html", "2020-01-01")


def write_old_sitemaps(folder: Path, form: str) -> tuple[Path, int]:
    """Write the sitemap(s) to import in `form`; return the file to name and the file count."""
    folder.mkdir()
    entries = [(loc, written) for loc, (written, _) in OLD.items()]
    if form == "xml":
        path = folder / "sitemap.xml"
        path.write_text(urlset(*entries, OFF_SITE))
        return path, 1
    if form == "gz":
        path = folder / "sitemap.xml.gz"
        path.write_bytes(gzip.compress(urlset(*entries, OFF_SITE).encode()))
        return path, 1
    (folder / "part-1.xml").write_text(urlset(*entries[:2]))
    (folder / "part-2.xml.gz").write_bytes(gzip.compress(urlset(*entries[2:], OFF_SITE).encode()))
    path = folder / "sitemap_index.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://example.com/maps/part-1.xml</loc></sitemap>"
        "<sitemap><loc>https://example.com/maps/part-2.xml.gz</loc>"
        "<lastmod>2020-07-08</lastmod></sitemap></sitemapindex>\n"
    )
    return path, 3


@pytest.mark.parametrize("form", ["xml", "gz", "index"])
def test_import_seeds_lastmods_of_pages_sources_still_have(site: Site, form: str) -> None:
    old_file, files = write_old_sitemaps(site.base / "previous", form)
    result = site.cli("import", str(old_file))
    read = "1 file" if files == 1 else f"{files} files"
    assert result.stdout == (
        f"read 4 URLs from {read} (1 skipped); seeded 4\n"
        "1 entry for other hosts (https://other.org/) not used: only URLs on "
        "https://example.com/ are published\n"
    )

    for n, name in enumerate("abcd", start=1):
        put(site, f"{name}.html", page(name.upper()), f"2025-06-0{n}T12:00:00Z")
    # The build names what the import gave that no source has.
    assert "1 imported URL matched no page" in site.build().stdout
    assert site.urls() == {
        "https://example.com/a.html": "2020-03-04T05:06:07+00:00",
        "https://example.com/b.html": "2020-05-06T00:00:00+00:00",
        "https://example.com/c.html": "2020-07-08T08:00:00+00:00",
        # Not in the import: its own file time.
        "https://example.com/d.html": "2025-06-04T12:00:00+00:00",
    }
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["urls"] == {"live": 4, "excluded": 0, "gone": 0, "seeded": 1}

    # Seeded lastmods hold until the content really changes.
    assert "wrote 0 files" in site.build().stdout
    site.write("a.html", page("A", "rewritten"))
    before = w3c.now()
    site.build()
    assert site.urls()["https://example.com/a.html"] >= before
    assert site.urls()["https://example.com/b.html"] == "2020-05-06T00:00:00+00:00"


# --- global options ----------------------------------------------------------------


def test_version() -> None:
    result = run_cli("--version")
    assert result.stdout == f"sitemapd, version {sitemapd.__version__}\n"
    assert sitemapd.__version__ == "0.1.0"


def test_log_level_debug_logs_to_stderr(site: Site) -> None:
    put(site, "a.html", page("A"), "2025-01-01T00:00:00Z")
    quiet = site.build()
    assert quiet.stdout.startswith("1 new, 0 updated, 0 gone, 0 invalid; wrote 2 files")
    assert "DEBUG" not in quiet.stderr
    assert " INFO sitemapd.engine: published: 1 new" in quiet.stderr

    put(site, "b.html", page("B"), "2025-01-02T00:00:00Z")
    loud = run_cli("--log-level", "debug", "build", "-c", str(site.config))
    assert loud.stdout.startswith("1 new, 0 updated, 0 gone, 0 invalid; wrote 2 files")
    assert " DEBUG sitemapd.publish: wrote sitemap-1.xml (" in loud.stderr
    assert " DEBUG sitemapd.publish: wrote sitemap.xml (" in loud.stderr
    assert "DEBUG" not in loud.stdout
    assert set(published(site.out)) == {"https://example.com/a.html", "https://example.com/b.html"}


def test_log_level_goes_before_or_after_the_command(site: Site) -> None:
    site.write("a.html", page("A"))
    assert "DEBUG" in site.cli("build", "--log-level", "debug").stderr
    assert "DEBUG" in run_cli("--log-level", "debug", "build", "-c", str(site.config)).stderr
    assert "DEBUG" not in site.build().stderr


def test_import_says_what_it_did_not_use(site: Site) -> None:
    old = site.base / "old.xml"
    old.write_text(
        urlset(
            ("https://example.com/a.html", "2020-01-01"),
            ("https://example.com/b.html", None),
            ("https://example.com/c.html", None),
            ("https://example.com/d.html", "2999-01-01"),
            ("https://other.org/x.html", "2020-01-01"),
            ("http://example.com/y.html", "2020-01-01"),
        )
    )
    lines = site.cli("import", str(old)).stdout.splitlines()
    assert lines == [
        "read 4 URLs from 1 file (2 skipped); seeded 1",
        "2 entries for other hosts (http://example.com/, https://other.org/) not used: only "
        "URLs on https://example.com/ are published",
        "2 entries without <lastmod> not used: nothing to carry over; their source's own "
        "time serves",
        "1 entry with a <lastmod> in the future not used",
    ]
    site.write("b.html", page("B"))
    assert "1 imported URL matched no page" in site.build().stdout
    site.cli("forget", "https://example.com/a.html")
    assert "matched no page" not in site.build().stdout
