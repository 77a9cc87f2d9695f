"""A real Nikola site (from PyPI) through `sitemapd init`, `build` and `verify`.

Nikola puts `<link rel="alternate" type="application/rss+xml" hreflang="en">` in every
head, and on a multilingual site the other language's feed link comes before the
translation's link. Only translations may become xhtml:link entries: `verify` passes on
the single-language site and on the multilingual one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import NS, assert_valid, read_xml, run_cli
from test_init import files, init_cli

BASE = "https://example.com/"
XHTML_LINK = "{http://www.w3.org/1999/xhtml}link"
POST = ".. title: {title}\n.. slug: first-post\n.. date: 2026-11-01 10:00:00 UTC\n\n{text}\n"


def nikola(folder: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "nikola", *args],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=300,
    )


def alternates(out: Path) -> dict[str, list[tuple[str | None, str | None]]]:
    """Return `{loc: [(hreflang, href)]}` of every URL the published shard lists."""
    return {
        url.findtext(f"{NS}loc") or "": [
            (link.get("hreflang"), link.get("href")) for link in url.iter(XHTML_LINK)
        ]
        for url in read_xml(out / "sitemapd-1.xml").iter(f"{NS}url")
    }


def test_a_nikola_site_one_language_then_two(tmp_path: Path) -> None:
    nikola(tmp_path, "init", "-q", "blog")
    project = tmp_path / "blog"
    (project / "posts" / "first-post.rst").write_text(
        POST.format(title="First post", text="Hello world, the first post.")
    )
    nikola(project, "build")
    out, config = project / "output", project / "sitemapd.toml"
    head = (out / "posts" / "first-post" / "index.html").read_text()
    assert '<link rel="alternate" type="application/rss+xml"' in head
    assert 'hreflang="en" href="../../rss.xml"' in head
    theirs = files(out)
    made = init_cli("--base-url", BASE, "--project", str(project), "-c", str(config))
    assert "found a Nikola project" in made.stdout, made.stderr
    run_cli("check-config", "-c", str(config))
    run_cli("build", "-c", str(config))
    assert {name: files(out)[name] for name in theirs} == theirs  # rss.xml, sitemap.xml...
    assert_valid(out, "sitemapd.xml")
    found = alternates(out)
    assert BASE + "posts/first-post/" in found
    assert all(links == [] for links in found.values())  # the feed link is no translation
    assert run_cli("verify", "-c", str(config)).returncode == 0

    # German: each page links the German feed, then (on translated pages) the translation.
    conf = project / "conf.py"
    conf.write_text(conf.read_text().replace('    # "es": "./es",', '    "de": "./de",'))
    (project / "posts" / "first-post.de.rst").write_text(
        POST.format(title="Erster Beitrag", text="Hallo Welt, der erste Beitrag.")
    )
    nikola(project, "build")
    run_cli("build", "-c", str(config))
    found = alternates(out)
    en, de = BASE + "posts/first-post/", BASE + "de/posts/first-post/"
    assert sorted(found[en]) == [("de", de), ("en", en)]
    assert sorted(found[de]) == [("de", de), ("en", en)]
    assert not any(href.endswith("rss.xml") for links in found.values() for _, href in links)
    verify = run_cli("verify", "-c", str(config), check=False)
    assert verify.returncode == 0, verify.stdout
