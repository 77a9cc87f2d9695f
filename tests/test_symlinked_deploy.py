"""A URL list and robots.txt reached through a symlinked release folder (`current ->
releases/N`, swapped by a deploy) are read by the path configured, each time."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Site, published
from daemon_harness import RunningDaemon, u

DAEMON = "[daemon]\ndebounce = 0.2\nmax_delay = 2\n"


def _release(site: Site, n: int, *pages: str, robots: str = "") -> Path:
    folder = site.base / "releases" / str(n)
    folder.mkdir(parents=True)
    (folder / "urls.txt").write_text("".join(f"https://example.com/{p}\n" for p in pages))
    (folder / "robots.txt").write_text(robots)
    return folder


def _deploy(site: Site, n: int) -> None:
    """Point `current` at release `n` as Capistrano does: a new link renamed over it."""
    link = site.base / "current.new"
    link.symlink_to(Path("releases") / str(n))
    os.replace(link, site.base / "current")


def _configure(site: Site, extra: str = "") -> None:
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        'robots_txt = "current/robots.txt"\n'
        '[[source]]\ntype = "urllist"\npath = "current/urls.txt"\n' + extra
    )


def test_a_build_after_a_deploy_reads_the_new_release_and_names_the_configured_path(
    site: Site,
) -> None:
    _release(site, 1, "a.html")
    _release(site, 2, "b.html", robots="User-agent: *\nDisallow: /private/\n")
    _release(site, 3, "c.html").joinpath("urls.txt").unlink()
    _configure(site)
    _deploy(site, 1)
    site.build()
    assert set(published(site.out)) == u("a.html")
    # A quiet build left its note: the swap must change what it rests on.
    assert (site.state / "quiet-build").exists()
    _deploy(site, 2)
    site.build()
    assert set(published(site.out)) == u("b.html")
    assert (
        "Sitemap: https://example.com/sitemap.xml" in (site.base / "current/robots.txt").read_text()
    )
    _deploy(site, 3)
    result = site.cli("build", check=False)
    assert result.returncode != 0
    assert f"cannot read {site.base / 'current' / 'urls.txt'} " in result.stderr
    assert "releases" not in result.stderr


def test_the_daemon_follows_a_swapped_release_folder(site: Site, daemons: list) -> None:
    _release(site, 1, "a.html")
    _release(site, 2, "b.html", "c.html")
    _configure(site, DAEMON)
    _deploy(site, 1)
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    daemon.wait_for_urls(u("a.html"))
    _deploy(site, 2)
    # Noticed by the watchers' health check (every 2 s): the watched folder is another.
    daemon.wait_for_urls(u("b.html", "c.html"))
    daemon.wait_for_log(r"folder was replaced")
    assert daemon.stop() == 0
