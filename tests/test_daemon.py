"""`sitemapd run`: the real daemon as a subprocess, following changes as users make them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import Site, assert_valid, page, published, run_cli, write_atomic
from daemon_harness import RunningDaemon, start, u

from sitemapd.core.flock import held_elsewhere
from sitemapd.errors import PublishError
from sitemapd.publish.folderlock import FolderLock

DAEMON = "[daemon]\ndebounce = 0.2\nmax_delay = 2\n"


def run(site: Site, daemons: list[RunningDaemon], *args: str) -> RunningDaemon:
    daemon = start(site, *args)
    daemons.append(daemon)
    return daemon


@pytest.fixture
def watched(site: Site) -> Site:
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    site.write("a.html", page("A"))
    return site


def test_a_folder_s_second_index_file_follows_the_first(watched: Site, daemons: list) -> None:
    # index.html is served where index.htm is there too: an edit to index.htm moves
    # nothing while index.html is there, and once it is gone index.htm is the page.
    site = watched
    site.write("b/index.html", page("Served", "Served text"))
    site.write("b/index.htm", page("Second", "Second text"))
    daemon = run(site, daemons)
    first = daemon.wait_for_urls(u("", "a.html", "b/"))
    count = daemon.publishes()
    time.sleep(1.1)  # lastmods have one-second resolution
    write_atomic(site.root / "b" / "index.htm", page("Second", "Second text, edited"))
    daemon.wait_for_log(r"b/index.htm is not published: b/index.html is served", count=2)
    time.sleep(1.0)  # proving that nothing happens needs a quiet period
    assert daemon.publishes() == count
    assert published(site.out) == first
    (site.root / "b" / "index.html").unlink()
    daemon.wait_until(
        lambda: published(site.out)["https://example.com/b/"] != first["https://example.com/b/"]
    )


def test_each_kind_of_event_ends_in_the_right_sitemap(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    first = daemon.wait_for_urls(u("", "a.html"))

    # An editor's atomic save: temp file, then rename over the page.
    write_atomic(site.root / "b.html", page("B"))
    daemon.wait_for_urls(u("", "a.html", "b.html"))

    # A plain create-write-close in place, in a new folder.
    (site.root / "news").mkdir()
    with open(site.root / "news" / "c.html", "w") as handle:
        handle.write(page("C"))
    daemon.wait_for_urls(u("", "a.html", "b.html", "news/c.html"))

    # A change to one page moves its lastmod only.
    before = published(site.out)
    count = daemon.publishes()
    time.sleep(1.1)  # lastmods have one-second resolution
    (site.root / "a.html").write_text(page("A", "changed"))
    daemon.wait_until(
        lambda: (
            published(site.out)["https://example.com/a.html"]
            != before["https://example.com/a.html"]
        )
    )
    daemon.wait_for_publishes(count + 1)
    after = published(site.out)
    assert {k: v for k, v in after.items() if not k.endswith("a.html")} == {
        k: v for k, v in before.items() if not k.endswith("a.html")
    }

    # touch is an attrib event: nothing may move or be rewritten.
    count = daemon.publishes()
    os.utime(site.root / "b.html")
    time.sleep(1.0)  # proving that nothing happens needs a quiet period
    assert daemon.publishes() == count
    assert published(site.out) == after

    # Rename, delete, folder moved out of and into the root.
    (site.root / "b.html").rename(site.root / "b2.html")
    daemon.wait_for_urls(u("", "a.html", "b2.html", "news/c.html"))
    (site.root / "b2.html").unlink()
    daemon.wait_for_urls(u("", "a.html", "news/c.html"))
    outside = site.base / "parked"
    (site.root / "news").rename(outside)
    daemon.wait_for_urls(u("", "a.html"))
    outside.rename(site.root / "moved")
    daemon.wait_for_urls(u("", "a.html", "moved/c.html"))
    assert published(site.out)["https://example.com/"] == first["https://example.com/"]
    assert daemon.stop() == 0
    assert_valid(site.out)


def test_a_page_written_in_place_is_read_once_its_writer_closes_it(
    watched: Site, daemons: list
) -> None:
    site = watched
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html"))
    before = published(site.out)
    count = daemon.publishes()
    time.sleep(1.1)  # lastmods have one-second resolution
    text = page("A", "changed at last")
    with open(site.root / "a.html", "w") as handle:  # truncated: the page is empty now
        handle.write(text[: len(text) // 2])
        handle.flush()
        # Well past the debounce (0.2 s) and max_delay (2 s): a slow writer, or one the
        # machine's load stalled. Half a page read now would be published.
        time.sleep(3.0)
        assert daemon.publishes() == count
        assert published(site.out) == before
        handle.write(text[len(text) // 2 :])
    daemon.wait_until(
        lambda: (
            published(site.out)["https://example.com/a.html"]
            != before["https://example.com/a.html"]
        )
    )
    time.sleep(1.0)  # no second publish follows: the page was read once, whole
    assert daemon.publishes() == count + 1
    assert daemon.stop() == 0
    assert_valid(site.out)


def test_changes_made_while_stopped_are_published_before_ready(
    watched: Site, daemons: list
) -> None:
    site = watched
    daemon = run(site, daemons)
    assert daemon.stop() == 0
    site.write("while-down.html", page("Down"))
    (site.root / "a.html").unlink()
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    assert set(published(site.out)) == u("", "while-down.html")


def test_a_second_instance_is_refused_naming_the_pid(watched: Site, daemons: list) -> None:
    daemon = run(watched, daemons)
    for command in ("run", "build"):
        result = watched.cli(command, check=False)
        assert result.returncode == 1
        assert f"in use by sitemapd pid {daemon.proc.pid}" in result.stderr


def second_config(site: Site, state: str, *changes: tuple[str, str]) -> Path:
    """Write the config of a second site sharing `site`'s folders but for its state (and
    `changes`, replacements in its text)."""
    text = site.config.read_text().replace('state_dir = "state"', f'state_dir = "{state}"')
    for old, new in changes:
        text = text.replace(old, new)
    path = site.base / f"{state}.toml"
    path.write_text(text)
    return path


def holder(site: Site, daemon: RunningDaemon, folder: Path | None = None) -> str:
    return (
        f"output folder {folder or site.out} is published by sitemapd pid {daemon.proc.pid} "
        f"on {os.uname().nodename} (state folder {site.state})"
    )


def test_a_ledger_of_its_own_does_not_make_a_second_writer_of_the_folder(
    watched: Site, daemons: list
) -> None:
    # The same output folder given to a second config by mistake, with its own state.
    site = watched
    other = second_config(site, "b")
    run_cli("build", "-c", str(other))
    daemon = run(site, daemons)
    published_first = daemon.wait_for_urls(u("", "a.html"))
    refused = f"sitemapd: error: {holder(site, daemon)}\n"
    for command in (
        ["run"],
        ["build"],
        ["build", "--confirm-removal"],
        ["forget", "/a.html"],
        ["reread", "/a.html"],
    ):
        result = run_cli(*command, "-c", str(other), check=False)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert refused in result.stderr, command
    assert published(site.out) == published_first
    # Refused before anything changed: the second ledger still holds the page.
    status = json.loads(run_cli("status", "--json", "-c", str(other)).stdout)
    assert status["urls"]["live"] == 2
    assert not (site.base / "b" / "confirm-removal").exists()

    # The folder deleted under the daemon, or its lock file alone: it holds them again.
    shutil.rmtree(site.out)
    daemon.wait_for_urls(u("", "a.html"))
    (site.out / ".sitemapd" / "sitemap.xml.lock").unlink()
    daemon.wait_until(lambda: (site.out / ".sitemapd" / "sitemap.xml.lock").exists())
    result = run_cli("build", "-c", str(other), check=False)
    assert result.returncode == 1
    assert refused in result.stderr

    # Once the first stops, the folder is free for the second.
    assert daemon.stop() == 0
    run_cli("build", "-c", str(other))
    assert set(published(site.out)) == u("", "a.html")


def test_another_index_name_is_refused_the_feeds_of_the_first(watched: Site, daemons: list) -> None:
    site = watched
    site.configure(source=DAEMON, extra='[feed]\ntitle = "Updates"\n')
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html"))
    # Its own index, but the same atom.xml and rss.xml as the first.
    other = second_config(site, "b", ("[sitemap]\n", '[sitemap]\nindex = "other.xml"\n'))
    result = run_cli("build", "-c", str(other), check=False)
    assert result.returncode == 1
    assert holder(site, daemon) in result.stderr
    assert not (site.out / "other.xml").exists()


def test_a_name_among_another_sites_numbered_files_is_refused(watched: Site, daemons: list) -> None:
    site = watched
    feed = '[feed]\ntitle = "Updates"\n'
    site.configure(source=DAEMON, extra=feed)
    daemon = run(site, daemons)
    first = daemon.wait_for_urls(u("", "a.html"))

    def second(index: str) -> Path:
        """A second site's config: its own index, no feed."""
        return second_config(
            site, "b", ("[sitemap]\n", f'[sitemap]\nindex = "{index}"\n'), (feed, "")
        )

    # A page of the first's feed, a shard of its index: refused, naming both names.
    for ours, theirs in (("atom-2.xml", "atom.xml"), ("sitemap-3.xml", "sitemap.xml")):
        result = run_cli("build", "-c", str(second(ours)), check=False)
        assert result.returncode == 1, result.stderr
        said = f"{holder(site, daemon)}: its {theirs} and this configuration's {ours} name"
        assert said in result.stderr
        assert result.stderr.rstrip().endswith("; rename sitemap.index")
        assert published(site.out) == first
    # A name that only begins like the first's files is no clash: its shards are
    # rss-news-1.xml and on, none of which the first's feed names.
    run_cli("build", "-c", str(second("rss-news.xml")))
    assert (site.out / "rss-news.xml").exists()
    assert daemon.stop() == 0

    # The other way round: the first site refused while another process holds a
    # lock whose files take the first's names (sitemap-2.xml is one of its shards).
    lock = FolderLock(site.out, ["sitemap-2.xml"], site.base / "c")
    lock.take()
    try:
        result = site.cli("build", check=False)
        assert result.returncode == 1
        assert "its sitemap-2.xml and this configuration's sitemap.xml" in result.stderr
    finally:
        lock.release()
    site.build()


def test_a_reload_never_leaves_the_folder_unlocked(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html"))
    lock = site.out / ".sitemapd" / "sitemap.xml.lock"
    atom = site.out / ".sitemapd" / "atom.xml.lock"
    taken: list[float] = []
    done = threading.Event()

    def probe() -> None:
        # What a second config's build would try, as often as it can.
        while not done.is_set():
            # A missing file counts as free: anyone could take it.
            if not held_elsewhere(lock):
                taken.append(time.monotonic())

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        # The same names, then a feed's too (the index's lock goes on to the new
        # engine), then the same again.
        for n, feed in enumerate(("", '[feed]\ntitle = "Updates"\n', ""), start=1):
            site.configure(source=DAEMON, extra=feed)
            daemon.proc.send_signal(signal.SIGHUP)
            daemon.wait_until(lambda n=n: daemon.log().count("sitemapd.daemon: reloaded") == n)
            if feed:
                daemon.wait_until(lambda: held_elsewhere(atom), what="the feed's lock")
    finally:
        done.set()
        prober.join()
    assert taken == []

    # Its lock file replaced, and the new one taken by another process meanwhile: the
    # reload is refused, the daemon goes on, and takes the lock back once it is free.
    other = FolderLock(site.out, ["sitemap.xml"], site.base / "b")
    for _ in range(50):
        lock.unlink()
        try:
            other.take()
            break
        except PublishError:
            time.sleep(0.01)  # the daemon took it back first
    try:
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_for_log(
            rf"reload failed, keeping the running configuration: output folder {site.out} "
            rf"is published by sitemapd pid {os.getpid()} "
        )
    finally:
        other.release()
    daemon.wait_until(lambda: held_elsewhere(lock), what="the lock taken back")
    assert daemon.proc.poll() is None

    # A reload into a folder another process publishes into is refused, and the daemon
    # goes on publishing into its own.
    elsewhere = site.base / "elsewhere"
    other = FolderLock(elsewhere, ["sitemap.xml"], site.base / "b")
    other.take()
    try:
        site.config.write_text(site.config.read_text().replace('"out"', '"elsewhere"'))
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_for_log(
            rf"reload failed, keeping the running configuration: output folder {elsewhere} "
            rf"is published by sitemapd pid {os.getpid()} "
        )
        site.write("late.html", page("Late"))
        daemon.wait_for_urls(u("", "a.html", "late.html"))
    finally:
        other.release()
    assert not (elsewhere / "sitemap.xml").exists()

    # Nor into one where another process holds a name whose numbered files take this
    # configuration's, though the daemon holds a lock of that very name in its own folder.
    site.configure(source=DAEMON, extra='[feed]\ntitle = "Updates"\n')
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_until(lambda: held_elsewhere(atom), what="the feed's lock")
    other = FolderLock(elsewhere, ["atom.xml"], site.base / "b")
    other.take()
    try:
        site.configure(sitemap='index = "atom-2.xml"', source=DAEMON)
        site.config.write_text(site.config.read_text().replace('"out"', '"elsewhere"'))
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_for_log(
            rf"output folder {elsewhere} is published by sitemapd pid {os.getpid()} .*: its "
            r"atom.xml and this configuration's atom-2.xml name the same files .*; rename "
            r"sitemap.index"
        )
    finally:
        other.release()
    assert not (elsewhere / "atom-2.xml").exists()


def test_a_site_moved_into_another_folder_leaves_the_files_there_alone(
    watched: Site, daemons: list
) -> None:
    # Another site's files in the folder this one moves into, under this one's old names.
    site = watched
    other = second_config(site, "b")
    other.write_text(other.read_text().replace('"out"', '"shared"'))
    run_cli("build", "-c", str(other))
    shared = site.base / "shared"
    theirs = {name: (shared / name).read_bytes() for name in ("sitemap.xml", "sitemap-1.xml")}
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html"))
    ours = published(site.out)

    def moved(index: str) -> None:
        """Give the site the shared folder and `index` as its index's name."""
        site.configure(sitemap=f'index = "{index}"', source=DAEMON)
        site.config.write_text(site.config.read_text().replace('"out"', '"shared"'))

    # A reload into it: the records of the old folder say nothing of this one.
    moved("a.xml")
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_until(lambda: (shared / "a.xml").exists(), what="a.xml")
    site.write("late.html", page("Late"))
    daemon.wait_until(lambda: b"late.html" in (shared / "a-1.xml").read_bytes(), what="late")
    assert {
        name: (shared / name).read_bytes() for name in theirs if (shared / name).exists()
    } == theirs
    daemon.wait_for_log(
        rf"published into {site.out} until now, into {shared} from now on: 0 of the 2 files "
        rf"recorded are there as published \(the files in {site.out} are left as they are\)"
    )
    assert published(site.out) == ours  # the old folder left as it was
    assert "replaced or deleted" not in daemon.log()
    assert daemon.stop() == 0

    # Back to its own folder by a restart: it publishes there again, and the shared
    # folder's files stay the other site's.
    site.configure(source=DAEMON)
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html", "late.html"))
    assert {name: (shared / name).read_bytes() for name in theirs} == theirs


def test_a_folder_moved_under_the_daemon_is_followed_by_a_reload(
    watched: Site, daemons: list
) -> None:
    site = watched
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "a.html"))
    # The operator moves the folder, then points the configuration at it: the daemon
    # holds the moved lock files already, and hands them on.
    moved = site.base / "moved"
    site.out.rename(moved)
    site.config.write_text(site.config.read_text().replace('"out"', '"moved"'))
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log("sitemapd.daemon: reloaded")
    site.write("late.html", page("Late"))
    daemon.wait_until(lambda: set(published(moved)) == u("", "a.html", "late.html"), what="late")
    assert "reload failed" not in daemon.log()
    assert not site.out.exists()


def test_a_folder_moved_keeps_its_records_and_a_ledger_without_a_target_checks_them(
    watched: Site,
) -> None:
    site = watched
    other = second_config(site, "b", ('"out"', '"shared"'))

    def given(folder: str, index: str) -> None:
        site.configure(sitemap=f'index = "{index}"', source=DAEMON)
        site.config.write_text(site.config.read_text().replace('"out"', f'"{folder}"'))

    # `mv` of the folder and the index renamed: its old files there are its own (as
    # recorded), removed as names no longer used.
    site.build()
    moved = site.base / "moved"
    site.out.rename(moved)
    given("moved", "a.xml")
    site.build()
    assert sorted(p.name for p in moved.iterdir() if p.is_file()) == ["a-1.xml", "a.xml"]
    given("moved", "sitemap.xml")
    site.build()

    # A ledger of an earlier release does not say where its records are: another site's
    # files under the names it no longer uses, in the folder it is given, stay.
    run_cli("build", "-c", str(other))
    shared = site.base / "shared"
    theirs = {p.name: p.read_bytes() for p in shared.iterdir() if p.is_file()}
    assert sorted(theirs) == ["sitemap-1.xml", "sitemap.xml"]
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        conn.execute("DELETE FROM cursors WHERE name = 'published_target'")
    given("shared", "c.xml")
    assert "removed 0" in site.build().stdout
    assert {name: (shared / name).read_bytes() for name in theirs} == theirs
    assert (shared / "c.xml").exists()


def test_sigterm_finishes_the_batch_and_exits_0(watched: Site, daemons: list) -> None:
    site = watched
    site.configure(source="[daemon]\ndebounce = 5\nmax_delay = 10\n")
    daemon = run(site, daemons)
    site.write("late.html", page("Late"))
    time.sleep(0.5)  # the event is queued, its debounce far from over
    assert daemon.stop() == 0
    assert set(published(site.out)) == u("", "a.html", "late.html")


def test_root_deleted_and_redeployed_is_an_outage_not_a_deletion(
    watched: Site, daemons: list
) -> None:
    site = watched
    daemon = run(site, daemons)
    before = daemon.wait_for_urls(u("", "a.html"))
    release = site.base / "release"
    shutil.copytree(site.root, release)
    shutil.rmtree(site.root)
    daemon.wait_for_log(r"is missing: keeping the published output")
    assert published(site.out) == before

    def last_error() -> str | None:
        return json.loads(site.cli("status", "--json").stdout)["daemon"]["last_error"]

    daemon.wait_until(lambda: last_error() is not None, 30, "the outage in status")
    # "directory:ROOT: root ROOT is missing ...", the source named once.
    assert str(last_error()).count("directory:") == 1
    shutil.copytree(release, site.root)
    (site.root / "new.html").write_text(page("New"))
    daemon.wait_for_urls(u("", "a.html", "new.html"))
    after = published(site.out)
    assert {k: after[k] for k in before} == before  # same content, same lastmod
    # The new root is watched again.
    (site.root / "newer.html").write_text(page("Newer"))
    daemon.wait_for_urls(u("", "a.html", "new.html", "newer.html"))


@pytest.mark.slow
def test_output_inside_the_watched_root_causes_no_publish_loop(site: Site, daemons: list) -> None:
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "site/sitemaps"\n'
        'state_dir = "state"\n[[source]]\ntype = "directory"\nroot = "site"\n'
        'include = ["**/*"]\nexclude = ["sitemaps/*"]\n' + DAEMON
    )
    site.out = site.root / "sitemaps"
    site.write("index.html", page("Home"))
    daemon = run(site, daemons)
    daemon.wait_for_urls(u(""))
    daemon.wait_for_publishes(1)
    count = daemon.publishes()
    time.sleep(10)
    assert daemon.publishes() == count
    assert set(published(site.out)) == u("")


@pytest.mark.slow
def test_a_10000_file_deploy_converges_in_few_publishes(watched: Site, daemons: list) -> None:
    site = watched
    staging = site.base / "staging"
    for n in range(10_000):
        path = staging / f"section{n % 20}" / f"story-{n}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(f"Story {n}", "x" * 200))
    daemon = run(site, daemons)
    count = daemon.publishes()
    subprocess.run(["cp", "-r", f"{staging}/.", str(site.root)], check=True)
    expected = u("", "a.html") | {
        f"https://example.com/section{n % 20}/story-{n}.html" for n in range(10_000)
    }
    daemon.wait_for_urls(expected, timeout=180)
    assert daemon.publishes() - count <= 10
    assert_valid(site.out)


@pytest.mark.slow
def test_inotify_queue_overflow_is_reconciled(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    folder = site.root / "flood"
    folder.mkdir()
    (folder / "first.html").write_text("x")
    daemon.wait_for_urls(u("", "a.html", "flood/first.html"))  # the folder is watched now
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        # Each new file queues create, modify and close events.
        for n in range(limit // 2 + 1000):
            (folder / f"f{n}.html").write_text("x")
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    expected = u("", "a.html", "flood/first.html") | {
        f"https://example.com/flood/f{n}.html" for n in range(limit // 2 + 1000)
    }
    daemon.wait_for_urls(expected, timeout=180)
    assert "inotify queue overflow" in daemon.log()


@pytest.mark.slow
def test_sigkill_mid_burst_leaves_valid_output_and_resumes(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    problems: list[str] = []
    done = threading.Event()

    def check_output() -> None:
        # A reader polling the output at every instant sees only complete documents.
        while not done.is_set():
            try:
                assert_valid(site.out)
            except FileNotFoundError:
                pass  # a shard replaced between reading the index and opening it
            except Exception as exc:
                problems.append(repr(exc))

    checker = threading.Thread(target=check_output)
    checker.start()
    try:
        for n in range(3000):
            (site.root / f"burst-{n}.html").write_text(page(f"Burst {n}"))
            if n == 1500:
                daemon.kill()
        daemon = run(site, daemons)
        expected = u("", "a.html") | {f"https://example.com/burst-{n}.html" for n in range(3000)}
        daemon.wait_for_urls(expected, timeout=120)
    finally:
        done.set()
        checker.join()
    assert problems == []
    assert run_cli("verify", "-c", str(site.config), check=False).returncode in (0, 1)
    assert daemon.stop() == 0
    assert run_cli("verify", "-c", str(site.config)).returncode == 0


def test_sighup_reloads_and_a_bad_config_keeps_the_old_one(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    site.configure(source='exclude = ["a.html"]\n' + DAEMON)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_urls(u(""))
    site.config.write_text(site.config.read_text() + "\nbogus = 1\n")
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log(r"reload failed, keeping the running configuration: .*bogus")
    site.write("still.html", page("Still watching"))
    daemon.wait_for_urls(u("", "still.html"))
    assert daemon.stop() == 0


def test_polling_backend_sees_changes(site: Site, daemons: list) -> None:
    site.configure(source='backend = "polling"\npoll_interval = 0.2\n' + DAEMON)
    site.write("index.html", page("Home"))
    daemon = run(site, daemons)
    assert "(polling)" in daemon.log()
    site.write("p.html", page("P"))
    daemon.wait_for_urls(u("", "p.html"))
    (site.root / "p.html").unlink()
    daemon.wait_for_urls(u(""))


def test_a_failing_batch_is_logged_and_retried(watched: Site, daemons: list) -> None:
    site = watched
    daemon = run(site, daemons)
    shutil.rmtree(site.out)
    site.out.write_text("not a folder")  # publishing cannot succeed now
    site.write("x.html", page("X"))
    daemon.wait_for_log(r"batch failed \(.*\); reconciling its sources")
    assert daemon.proc.poll() is None
    site.out.unlink()
    daemon.wait_for_urls(u("", "a.html", "x.html"), timeout=60)
    assert daemon.stop() == 0


def test_sigterm_after_sighup_still_stops(watched: Site, daemons: list) -> None:
    daemon = run(watched, daemons)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0


def test_a_list_rewritten_in_place_is_never_published_half_read(site: Site, daemons: list) -> None:
    listing = site.base / "urls.txt"
    lines = [f"https://example.com/story/{n}.html\n" for n in range(2000)]
    listing.write_text("".join(lines))
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\n' + DAEMON
    )
    daemon = run(site, daemons)
    expected = {line.strip() for line in lines}
    daemon.wait_for_urls(expected)
    smallest = len(expected)
    done = threading.Event()

    def watch_output() -> None:
        nonlocal smallest
        while not done.is_set():
            try:
                smallest = min(smallest, len(published(site.out)))
            except Exception:
                continue

    watcher = threading.Thread(target=watch_output)
    watcher.start()
    try:
        with listing.open("w") as handle:  # `export > urls.txt`: slow, in place
            for n, line in enumerate(lines):
                handle.write(line)
                if n % 100 == 0:
                    handle.flush()
                    time.sleep(0.05)
        lines.append("https://example.com/story/new.html\n")
        with listing.open("a") as handle:
            handle.write(lines[-1])
        daemon.wait_for_urls(expected | {"https://example.com/story/new.html"}, timeout=60)
    finally:
        done.set()
        watcher.join()
    assert smallest == len(expected)


def test_sitemaps_written_into_the_content_root_still_follow_changes(
    site: Site, daemons: list
) -> None:
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "site"\n'
        'state_dir = "state"\n[[source]]\ntype = "directory"\nroot = "site"\n' + DAEMON
    )
    site.out = site.root
    site.write("index.html", page("Home"))
    daemon = run(site, daemons)
    site.write("new.html", page("New"))
    daemon.wait_for_urls(u("", "new.html"), timeout=10)


def test_robots_txt_outside_the_root_is_watched(site: Site, daemons: list) -> None:
    robots = site.base / "robots.txt"
    robots.write_text("User-agent: *\nDisallow:\n")
    site.configure(site='robots_txt = "robots.txt"', source=DAEMON)
    site.write("index.html", page("Home"))
    site.write("private/a.html", page("A"))
    daemon = run(site, daemons)
    daemon.wait_for_urls(u("", "private/a.html"))
    robots.write_text("User-agent: *\nDisallow: /private/\n")
    daemon.wait_for_urls(u(""), timeout=10)


def test_a_vanished_robots_folder_never_publishes_what_it_disallowed(
    site: Site, daemons: list
) -> None:
    site.configure(site='robots_txt = "site/robots.txt"', source=DAEMON)
    site.write("robots.txt", "User-agent: *\nDisallow: /search\n")
    site.write("index.html", page("Home"))
    site.write("search/index.html", page("Search"))
    daemon = run(site, daemons)
    before = daemon.wait_for_urls(u(""))
    release = site.base / "release"
    shutil.copytree(site.root, release)
    shutil.rmtree(site.root)
    daemon.wait_for_log(r"robots.txt folder .* is missing")
    time.sleep(2.5)  # health checks and retries run meanwhile
    assert published(site.out) == before
    shutil.copytree(release, site.root)
    site.write("new.html", page("New"))
    daemon.wait_for_urls(u("", "new.html"), timeout=30)
