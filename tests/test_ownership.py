"""sitemapd never replaces a file it did not write: a generator's `sitemap.xml` or
`rss.xml` in output_dir stops check-config, build and run, naming the file and the
setting that renames sitemapd's; `site.take_over` replaces it, keeping a copy. A
published file replaced or deleted under a running daemon is republished."""

from __future__ import annotations

import os
import shutil
import signal

from conftest import Site, assert_valid, page, published, snapshot
from daemon_harness import RunningDaemon, start, u

GENERATOR_SITEMAP = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    b"<url><loc>https://example.com/a.html</loc><lastmod>2020-01-01</lastmod></url>"
    b"</urlset>\n"
)
NIKOLA_RSS = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel><title>Blog</title>'
    b"<generator>Nikola (getnikola.com)</generator></channel></rss>\n"
)
DAEMON = "\n[daemon]\ndebounce = 0.1\n"


def test_a_foreign_sitemap_stops_check_config_and_build_untouched(site: Site) -> None:
    site.write("a.html", page("A"))
    site.out.mkdir()
    (site.out / "sitemap.xml").write_bytes(GENERATOR_SITEMAP)
    before = snapshot(site.out)
    for command in ("check-config", "build", "build --dry-run"):
        result = site.cli(*command.split(), check=False)
        assert result.returncode == 2, result.stderr
        assert f"{site.out / 'sitemap.xml'} was not written by sitemapd" in result.stderr
        assert "sitemap.index" in result.stderr
    assert snapshot(site.out) == before
    # Renamed, sitemapd publishes beside it.
    site.configure(sitemap='index = "sitemapd.xml"')
    site.cli("check-config")
    site.build()
    assert (site.out / "sitemap.xml").read_bytes() == GENERATOR_SITEMAP
    assert set(published(site.out, "sitemapd.xml")) == u("a.html")
    assert_valid(site.out, "sitemapd.xml")


def test_a_foreign_feed_names_the_feed_setting_and_run_refuses_too(site: Site) -> None:
    site.configure(extra='[feed]\ntitle = "Updates"\n')
    site.write("a.html", page("A"))
    site.out.mkdir()
    (site.out / "rss.xml").write_bytes(NIKOLA_RSS)
    result = site.cli("run", check=False)
    assert result.returncode == 2
    assert f"{site.out / 'rss.xml'} was not written by sitemapd" in result.stderr
    assert "feed.rss" in result.stderr
    assert (site.out / "rss.xml").read_bytes() == NIKOLA_RSS
    assert not (site.out / "sitemap.xml").exists()


def test_take_over_replaces_the_file_and_keeps_a_copy(site: Site) -> None:
    site.configure(site="take_over = true")
    site.write("a.html", page("A"))
    site.out.mkdir()
    (site.out / "sitemap.xml").write_bytes(GENERATOR_SITEMAP)
    checked = site.cli("check-config")
    assert f"{site.out / 'sitemap.xml'} will be replaced" in checked.stdout
    site.build()
    assert_valid(site.out)
    assert set(site.urls()) == u("a.html")
    assert (site.state / "replaced" / "sitemap.xml").read_bytes() == GENERATOR_SITEMAP


def test_own_files_stay_own_after_a_lost_state_folder_or_a_touch(site: Site) -> None:
    site.configure(
        extra='[feed]\ntitle = "Updates"\n[news]\npublication_name = "N"\nlanguage = "en"\n'
    )
    site.write("a.html", page("A"))
    site.build()
    for path in site.out.iterdir():
        os.utime(path, (1, 1))  # copied without their times: not as recorded any more
    site.cli("check-config")
    site.build()
    shutil.rmtree(site.state)
    site.cli("check-config")
    site.build()
    assert set(site.urls()) == u("a.html")


def test_a_replaced_or_deleted_index_is_republished_by_the_daemon(
    site: Site, daemons: list[RunningDaemon]
) -> None:
    site.configure(source=DAEMON)
    site.write("a.html", page("A"))
    daemon = start(site)
    daemons.append(daemon)
    daemon.wait_ready()
    index = site.out / "sitemap.xml"
    ours = index.read_bytes()
    # The generator's next build writes its sitemap over ours. Reconciles come every 900 s:
    # only the watch of the output folder can bring ours back meanwhile.
    temp = site.out / ".gen.tmp"
    temp.write_bytes(GENERATOR_SITEMAP)
    temp.replace(index)
    daemon.wait_until(lambda: index.read_bytes() == ours, 30, "the index republished")
    daemon.wait_for_log(r"sitemap\.xml was replaced or deleted under sitemapd")
    (site.out / "sitemap-1.xml").unlink()
    daemon.wait_until(lambda: (site.out / "sitemap-1.xml").exists(), 30, "the shard republished")
    assert set(published(site.out)) == u("a.html")
    # Written in place, not renamed over.
    index.write_bytes(GENERATOR_SITEMAP)
    daemon.wait_until(lambda: index.read_bytes() == ours, 30, "the index republished again")
    assert daemon.stop() == 0


def test_a_reload_to_a_foreign_name_keeps_the_running_configuration(
    site: Site, daemons: list[RunningDaemon]
) -> None:
    site.configure(source=DAEMON)
    site.write("a.html", page("A"))
    daemon = start(site)
    daemons.append(daemon)
    (site.out / "other.xml").write_bytes(GENERATOR_SITEMAP)
    site.configure(sitemap='index = "other.xml"', source=DAEMON)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log(r"reload failed, keeping the running configuration: .*other\.xml was not")
    site.write("b.html", page("B"))
    daemon.wait_until(lambda: set(published(site.out)) == u("a.html", "b.html"))
    assert (site.out / "other.xml").read_bytes() == GENERATOR_SITEMAP
    # `status`, read with the file the daemon refused, says why it runs another.
    refused = f"reload failed: {site.out / 'other.xml'} was not written by sitemapd"
    daemon.wait_until(lambda: refused in site.cli("status").stdout, 30, "status")
    shown = site.cli("status").stdout
    assert "(running the previous configuration)" in shown
    # The index the file names is not the one the daemon publishes.
    assert "other.xml (the configuration file's: not running)" in shown
    site.configure(source=DAEMON)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_until(lambda: "reload failed" not in site.cli("status").stdout, 30, "status")
    assert daemon.stop() == 0
