"""`sitemapd init` and a real generator from PyPI (Pelican) followed through its builds.

init finds a generator's project by its marker files, points the config at its output
folder and names sitemapd's index so that it collides with none of the generator's
files; the config passes check-config and publishes on the first build without touching
a byte the generator wrote. Then the site is edited, rebuilt unchanged and rebuilt from
a clean output folder: only the edited page's lastmod moves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_valid, published, read_xml, run_cli

from sitemapd.cli import init

BASE = "https://blog.example.com/"
PELICANCONF = """\
SITENAME = "Demo"
SITEURL = "https://blog.example.com"
TIMEZONE = "UTC"
DEFAULT_LANG = "en"
RELATIVE_URLS = False
# The usual sitemap plugin's file, here copied in as a static file.
STATIC_PATHS = ["extra"]
EXTRA_PATH_METADATA = {"extra/sitemap.xml": {"path": "sitemap.xml"}}
"""
GENERATOR_SITEMAP = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>https://blog.example.com/first-post.html</loc></url></urlset>\n"
)


def article(title: str, text: str, date: str) -> str:
    return f"{title}\n{'#' * len(title)}\n\n:date: {date}\n:category: news\n\n{text}\n"


def init_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `sitemapd init ARGS` with no terminal: nothing is asked."""
    return subprocess.run(
        [sys.executable, "-m", "sitemapd", "init", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def pelican(project: Path, *args: str) -> None:
    """Build the Pelican site in `project` into `project/output`."""
    command = ["content", "-o", "output", "-s", "pelicanconf.py", "-q", *args]
    subprocess.run(
        [sys.executable, "-m", "pelican", *command],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=300,
    )


def files(folder: Path) -> dict[str, bytes]:
    """Return `{relative path: bytes}` of every file below `folder`."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Pelican project with two articles, built once."""
    (tmp_path / "pelicanconf.py").write_text(PELICANCONF)
    content = tmp_path / "content"
    (content / "extra").mkdir(parents=True)
    (content / "extra" / "sitemap.xml").write_text(GENERATOR_SITEMAP)
    (content / "first.rst").write_text(article("First post", "Hello world.", "2026-11-01 10:00"))
    (content / "second.rst").write_text(article("Second post", "More words.", "2026-11-02 10:00"))
    pelican(tmp_path)
    return tmp_path


def test_pelican_site_from_init_through_edit_no_change_and_clean_rebuilds(project: Path) -> None:
    out, config = project / "output", project / "sitemapd.toml"
    theirs = files(out)
    assert "sitemap.xml" in theirs
    made = init_cli("--base-url", BASE, "--project", str(project), "-c", str(config))
    assert made.returncode == 0, made.stderr
    assert "found a Pelican project" in made.stdout
    assert f"sitemapd import -c {config} {out / 'sitemap.xml'}" in made.stdout
    run_cli("check-config", "-c", str(config))
    run_cli("build", "-c", str(config))
    # Every byte Pelican wrote is as it was; sitemapd's index has a name of its own.
    assert {name: files(out)[name] for name in theirs} == theirs
    assert_valid(out, "sitemapd.xml")
    first = published(out, "sitemapd.xml")
    post, other = BASE + "first-post.html", BASE + "second-post.html"
    assert {post, other, BASE} <= set(first)
    assert run_cli("verify", "-c", str(config)).returncode == 0

    # An edit: Pelican rewrites every file, sitemapd moves the edited article only (and
    # the index page, whose summary of it changed).
    time.sleep(1.1)  # lastmods have one-second resolution
    (project / "content" / "first.rst").write_text(
        article("First post", "Hello world, edited.", "2026-11-01 10:00")
    )
    pelican(project)
    run_cli("build", "-c", str(config))
    edited = published(out, "sitemapd.xml")
    moved = {loc for loc in first if edited[loc] != first[loc]}
    assert post in moved
    assert other not in moved
    assert moved <= {post, BASE, BASE + "category/news.html", BASE + "archives.html"}

    # A rebuild with no change: every file rewritten by Pelican, no file by sitemapd.
    ours = {name: (out / name).stat().st_mtime_ns for name in ("sitemapd.xml", "sitemapd-1.xml")}
    pelican(project)
    result = run_cli("build", "-c", str(config))
    assert "0 new, 0 updated, 0 gone" in result.stdout
    assert "wrote 0 files" in result.stdout
    assert {name: (out / name).stat().st_mtime_ns for name in ours} == ours
    assert published(out, "sitemapd.xml") == edited

    # A clean rebuild deletes the output folder, sitemapd's files with it: they come
    # back with the same lastmods.
    pelican(project, "--delete-output-directory")
    assert not (out / "sitemapd.xml").exists()
    run_cli("build", "-c", str(config))
    assert published(out, "sitemapd.xml") == edited
    assert (out / "sitemap.xml").read_text() == GENERATOR_SITEMAP


@pytest.mark.parametrize(
    ("marker", "text", "output", "generator"),
    [
        ("hugo.toml", "baseURL = 'https://example.com/'", "public", "Hugo"),
        ("_config.yml", "title: Demo", "_site", "Jekyll"),
        ("pelicanconf.py", "SITENAME = 'Demo'", "output", "Pelican"),
        ("conf.py", "# Configuration file for Nikola", "output", "Nikola"),
        ("mkdocs.yml", "site_name: Demo", "site", "MkDocs"),
        ("conf.py", "project = 'Demo'\nextensions = []", "_build/html", "Sphinx"),
        ("source/conf.py", "project = 'Demo'", "build/html", "Sphinx"),
        ("eleventy.config.js", "export default {}", "_site", "Eleventy"),
    ],
)
def test_init_finds_each_generator_and_avoids_its_sitemap_names(
    tmp_path: Path, marker: str, text: str, output: str, generator: str
) -> None:
    (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / marker).write_text(text)
    site = tmp_path / output
    site.mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><html lang=en><title>Home</title><p>Hi")
    (site / "sitemap.xml").write_text(GENERATOR_SITEMAP)
    (site / "robots.txt").write_text(f"User-agent: *\nSitemap: {BASE}sitemap.xml\n")
    config = tmp_path / "sitemapd.toml"
    made = init_cli("--base-url", BASE, "--project", str(tmp_path), "-c", str(config))
    assert made.returncode == 0, made.stderr
    assert f"found a {generator} project" in made.stdout
    # Said, not done: robots.txt is the generator's file.
    assert "add robots_txt to [site]" in made.stdout
    assert "robots_txt" not in config.read_text()
    assert f'root = "{output}"' in config.read_text()
    run_cli("check-config", "-c", str(config))
    run_cli("build", "-c", str(config))
    assert (site / "sitemap.xml").read_text() == GENERATOR_SITEMAP
    assert (site / "robots.txt").read_text() == f"User-agent: *\nSitemap: {BASE}sitemap.xml\n"
    assert set(published(site, "sitemapd.xml")) == {BASE}


def test_index_name_skips_names_a_generator_writes_or_the_folder_holds(tmp_path: Path) -> None:
    assert init.index_name(tmp_path, None) == "sitemap.xml"
    hugo = next(g for g in init.GENERATORS if g.name == "Hugo")
    assert init.index_name(tmp_path, hugo) == "sitemapd.xml"
    (tmp_path / "sitemapd-1.xml").write_text("")  # someone's shard-like name
    assert init.index_name(tmp_path, hugo) == "sitemapd-index.xml"


def test_init_with_a_url_list_and_refusals(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{BASE}a.html\n{BASE}b.html\n")
    config = tmp_path / "sitemapd.toml"
    base = ["--base-url", BASE, "--project", str(tmp_path), "-c", str(config)]
    made = init_cli(*base, "--url-list", str(urls), "--output", str(tmp_path / "out"))
    assert made.returncode == 0, made.stderr
    run_cli("build", "-c", str(config))
    assert set(published(tmp_path / "out")) == {BASE + "a.html", BASE + "b.html"}
    assert read_xml(tmp_path / "out" / "sitemap.xml") is not None
    # An existing config is kept; no base URL and no terminal to ask: said, not guessed.
    again = init_cli(*base, "--url-list", str(urls))
    assert again.returncode == 1
    assert "exists" in again.stderr
    os.remove(config)
    missing = init_cli("--project", str(tmp_path), "-c", str(config), "--url-list", str(urls))
    assert missing.returncode == 1
    assert "--base-url" in missing.stderr
    nothing = init_cli("--base-url", BASE, "--project", str(tmp_path), "-c", str(config))
    assert nothing.returncode == 1
    assert "--content" in nothing.stderr
    # A config written into the built site itself would be served, and so would its state.
    inside = tmp_path / "built"
    inside.mkdir()
    served = init_cli("--base-url", BASE, "--content", str(inside), "-c", str(inside / "s.toml"))
    assert served.returncode == 1
    assert "give -c FILE outside it" in served.stderr
    assert list(inside.iterdir()) == []


def test_a_real_mkdocs_site_keeps_its_sitemaps_and_a_clean_build_keeps_lastmods(
    tmp_path: Path,
) -> None:
    # MkDocs writes sitemap.xml and sitemap.xml.gz and empties site/ on every build.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nWelcome to the docs.\n")
    (docs / "guide.md").write_text("# Guide\n\nHow to use it.\n")
    (tmp_path / "mkdocs.yml").write_text(f"site_name: Demo\nsite_url: {BASE}\n")

    def mkdocs() -> None:
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-q"],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            timeout=300,
        )

    mkdocs()
    out, config = tmp_path / "site", tmp_path / "sitemapd.toml"
    theirs = files(out)
    assert {"sitemap.xml", "sitemap.xml.gz"} <= set(theirs)
    made = init_cli("--base-url", BASE, "--project", str(tmp_path), "-c", str(config))
    assert "found a MkDocs project" in made.stdout, made.stderr
    run_cli("check-config", "-c", str(config))
    run_cli("build", "-c", str(config))
    assert {name: files(out)[name] for name in theirs} == theirs
    first = published(out, "sitemapd.xml")
    assert {BASE, BASE + "guide/"} <= set(first)
    time.sleep(1.1)  # lastmods have one-second resolution
    mkdocs()  # a clean build: sitemapd's files are gone
    assert not (out / "sitemapd.xml").exists()
    run_cli("build", "-c", str(config))
    assert published(out, "sitemapd.xml") == first
    assert run_cli("verify", "-c", str(config)).returncode == 0
