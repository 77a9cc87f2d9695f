"""Someone else who can write to the output folder (a web server's group, a shared
volume) cannot make sitemapd write anywhere else or serve anything it did not publish."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from conftest import Site, page
from daemon_harness import RunningDaemon

NAMES = ("sitemap.xml", "sitemap-1.xml")


def test_planted_symlinks_never_redirect_a_write(site: Site, tmp_path: Path) -> None:
    victim = tmp_path / "victim.conf"
    victim.write_text("precious\n")
    site.configure(sitemap="gzip = false", source="[daemon]\ndebounce = 0.05\n")
    site.write("index.html", page("Home"))
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        # At every published name, and at the temp names an old sitemapd would use, kept
        # planted while the daemon publishes again and again.
        baits = [site.out / f".sitemapd-tmp-{name}-{daemon.proc.pid}" for name in NAMES]
        planting = threading.Event()

        def plant() -> None:
            while not planting.is_set():
                for bait in baits:
                    with contextlib.suppress(FileExistsError):
                        os.symlink(victim, bait)

        planter = threading.Thread(target=plant, daemon=True)
        planter.start()
        try:
            for edit in range(1, 16):
                os.unlink(site.out / "sitemap-1.xml")
                os.symlink(victim, site.out / "sitemap-1.xml")
                site.write("index.html", page("Home", f"edit {edit}"))
                daemon.wait_for_publishes(edit + 1)
                if victim.read_text() != "precious\n":
                    break
        finally:
            planting.set()
            planter.join()
        assert victim.read_text() == "precious\n"
        for name in NAMES:
            assert not (site.out / name).is_symlink(), name
        assert "https://example.com/" in site.urls()
    finally:
        daemon.stop()


def test_symlinks_out_of_the_root_are_followed_only_when_asked(site: Site) -> None:
    secret = site.base / "outside" / "secret.html"
    secret.parent.mkdir()
    secret.write_text(page("Private notes"))
    site.configure(source="[daemon]\ndebounce = 0.05\n")
    site.write("index.html", page("Home"))
    site.write("real.html", page("Real"))
    os.symlink(site.root / "real.html", site.root / "alias.html")  # within the root
    os.symlink(secret, site.root / "leak.html")
    os.symlink(os.path.relpath(secret, site.root), site.root / "relative-leak.html")
    pages = {"https://example.com/", "https://example.com/real.html"}
    site.build()
    assert set(site.urls()) == pages | {"https://example.com/alias.html"}

    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        os.symlink(secret, site.root / "new-leak.html")  # seen as an event, not a scan
        site.write("later.html", page("Later"))
        daemon.wait_for_urls(pages | {f"https://example.com/{n}.html" for n in ("alias", "later")})
        time.sleep(0.5)  # the link's own event, had it been followed, would be published
        assert "leak" not in "".join(site.urls())
    finally:
        daemon.stop()

    site.configure(source="follow_symlinks = true\n")
    site.build()
    assert {"https://example.com/leak.html", "https://example.com/new-leak.html"} <= set(
        site.urls()
    )
