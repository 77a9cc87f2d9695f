"""`sitemapd build` when nothing changed since a quiet build: it ends before the engine
loads (unchanged.py), and anything that changed runs the whole build as before."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_valid, published, run_cli, snapshot
from daemon_harness import RunningDaemon

import sitemapd
from sitemapd import config
from sitemapd.cli import unchanged
from sitemapd.ledger.lock import StateLock
from sitemapd.publish.folderlock import FolderLock

# The debug lines that tell the two paths apart: the engine's, and the early end's.
FULL = " sitemapd.engine: published:"
EARLY = "DEBUG sitemapd.build: nothing changed since the last build"
QUIET = "0 new, 0 updated, 0 gone, 0 invalid; wrote 0 files (0 bytes), removed 0 in "


class ListSite:
    """A site of one URL list, built by `sitemapd build --log-level debug`."""

    def __init__(self, base: Path, extra: str = "") -> None:
        self.base, self.out, self.state = base, base / "out", base / "state"
        self.list = base / "urls.txt"
        self.config = base / "sitemapd.toml"
        self.list.write_text(
            "".join(
                f"https://example.com/a/{n}.html\t2026-01-{1 + n % 28:02d}T00:00:00+00:00\n"
                for n in range(30)
            )
        )
        self.configure(extra=extra)

    def configure(self, sitemap: str = "max_urls = 10", extra: str = "") -> None:
        self.config.write_text(
            '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\n'
            f'state_dir = "state"\n[sitemap]\n{sitemap}\n'
            f'[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n{extra}'
        )

    def build(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_cli("build", "--log-level", "debug", "-c", str(self.config), *args, check=check)

    def early(self, *args: str) -> bool:
        """Build; return whether it ended early (asserting it said what a build says)."""
        result = self.build(*args)
        assert (EARLY in result.stderr) != (FULL in result.stderr), result.stderr
        if EARLY in result.stderr:
            assert result.stdout.startswith(QUIET)
            assert result.stdout.count("\n") == 1
        return EARLY in result.stderr


@pytest.fixture
def listed(tmp_path: Path) -> ListSite:
    site = ListSite(tmp_path)
    site.build()
    return site


def test_a_build_after_a_quiet_one_ends_early_and_changes_nothing(listed: ListSite) -> None:
    before = snapshot(listed.out)
    assert listed.early()
    assert listed.early()
    assert snapshot(listed.out) == before
    assert_valid(listed.out)


def test_a_touched_list_ends_early_by_its_digest(listed: ListSite) -> None:
    before = snapshot(listed.out)
    os.utime(listed.list, ns=(1, 1))
    assert listed.early()  # hashed: the same bytes
    assert listed.early()  # noted anew: not hashed again
    assert snapshot(listed.out) == before


def test_a_same_size_edit_of_a_list_is_read(listed: ListSite) -> None:
    stat = listed.list.stat()
    text = listed.list.read_text().replace("2026-01-04T00", "2026-02-04T00")
    assert len(text) == stat.st_size
    listed.list.write_text(text)  # in place: the same inode, size and mode
    assert not listed.early()
    assert published(listed.out)["https://example.com/a/3.html"] == "2026-02-04T00:00:00+00:00"
    assert listed.early()
    os.utime(listed.list, ns=(1, 1))
    assert listed.early()  # noted with the bytes the build read


def test_a_changed_line_is_published(listed: ListSite) -> None:
    lines = listed.list.read_text().splitlines(keepends=True)
    lines[3] = "https://example.com/a/3.html\t2026-05-05T00:00:00+00:00\n"
    listed.list.write_text("".join(lines))
    assert not listed.early()
    assert published(listed.out)["https://example.com/a/3.html"] == "2026-05-05T00:00:00+00:00"
    assert listed.early()


def test_a_list_replaced_while_the_build_ran_is_read_again(listed: ListSite) -> None:
    """The note holds the lists' status from before the build read them: a list replaced
    between the read and the note is not taken as read."""
    cfg = config.load(listed.config)
    published_names, chunks = _noted(listed)
    with StateLock(listed.state):
        read = unchanged.inputs(cfg)
    replaced = listed.list.with_suffix(".new")
    replaced.write_text(
        listed.list.read_text() + "https://example.com/a/late.html\t2026-06-01T00:00:00+00:00\n"
    )
    replaced.replace(listed.list)
    with StateLock(listed.state):
        unchanged.note(cfg, published_names, read, chunks)
        assert not unchanged.as_noted(cfg)
    assert not listed.early()
    assert "https://example.com/a/late.html" in published(listed.out)


def test_a_list_replaced_after_the_build_read_it_is_not_noted_with_its_chunks(
    listed: ListSite,
) -> None:
    """The note takes the list's chunks from the ledger after the build: a list replaced
    after the build read it, then put back, must not be taken for the list published."""
    cfg = config.load(listed.config)
    published_names, chunks = _noted(listed)
    original = listed.list.read_bytes()
    with StateLock(listed.state):
        read = unchanged.inputs(cfg)
    # Replaced after the build read it: the chunks recorded are not these bytes'.
    replaced = listed.list.with_suffix(".new")
    replaced.write_bytes(original + b"https://example.com/a/late.html\n")
    replaced.replace(listed.list)
    with StateLock(listed.state):
        unchanged.note(cfg, published_names, read, chunks)
    # Put back: the bytes read, but not the status noted.
    replaced.write_bytes(original)
    replaced.replace(listed.list)
    with StateLock(listed.state):
        assert not unchanged.as_noted(cfg)
    assert "chunks -" in (listed.state / unchanged.NOTE).read_text()


def test_a_list_that_becomes_a_fifo_fails_the_build_at_once(listed: ListSite) -> None:
    """Neither the noted build's check nor the hashing for the next note may wait on a
    FIFO nobody writes: the build exits 1 saying why, with a note and without."""
    listed.list.unlink()
    os.mkfifo(listed.list)
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-m", "sitemapd", "build", "-c", str(listed.config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, result.stderr
        assert f"list: {listed.list} is not a regular file" in result.stderr


def test_a_same_size_edit_copied_with_its_mtime_kept_is_read(listed: ListSite) -> None:
    """`cp -p` or `rsync --inplace -t` of an edit of the same size: the same inode, size
    and mtime; only the ctime tells, and the list is read."""
    stat = listed.list.stat()
    text = listed.list.read_text().replace("2026-01-05T00", "2026-03-05T00")
    assert len(text) == stat.st_size
    listed.list.write_text(text)
    os.utime(listed.list, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not listed.early()
    assert published(listed.out)["https://example.com/a/4.html"] == "2026-03-05T00:00:00+00:00"


def test_a_deleted_shard_is_published_again(listed: ListSite) -> None:
    before = snapshot(listed.out)
    (listed.out / "sitemap-2.xml").unlink()
    result = listed.build()
    assert FULL in result.stderr
    assert "wrote 1 file " in result.stdout
    assert {name: data for name, (_, _, data) in snapshot(listed.out).items()} == {
        name: data for name, (_, _, data) in before.items()
    }


def test_a_same_size_edit_is_repaired(listed: ListSite) -> None:
    shard = listed.out / "sitemap-1.xml"
    data = shard.read_bytes()
    with shard.open("r+b") as handle:  # in place, the same size
        handle.seek(data.index(b"/a/0.html"))
        handle.write(b"/a/X")
    assert not listed.early()
    assert shard.read_bytes() == data
    assert listed.early()


def test_a_foreign_file_under_a_published_name_is_refused(listed: ListSite) -> None:
    (listed.out / "sitemap-9.xml").write_text("<urlset/>")
    result = listed.build(check=False)
    assert result.returncode == 2
    assert "was not written by sitemapd" in result.stderr


def test_another_configuration_builds_in_full(listed: ListSite) -> None:
    listed.configure(sitemap="max_urls = 20")
    assert not listed.early()
    assert listed.early()


def test_other_code_builds_in_full(
    listed: ListSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy of the package whose files this test alone changes: the installed package's
    # status is what every other build of the suite notes.
    code = tmp_path / "code"
    shutil.copytree(
        Path(sitemapd.__file__).parent,
        code / "sitemapd",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    monkeypatch.setenv("PYTHONPATH", str(code))
    monkeypatch.chdir(tmp_path)  # `python -m` looks in the working folder first
    assert not listed.early()  # another install of the same version
    assert listed.early()
    module = code / "sitemapd" / "render" / "sitemap.py"
    st = module.stat()
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))  # its ctime moves, as a deploy's
    assert not listed.early()
    assert listed.early()


def test_a_command_that_writes_the_ledger_forgets_the_quiet_build(listed: ListSite) -> None:
    assert (listed.state / "quiet-build").exists()
    run_cli("import", "-c", str(listed.config), str(listed.out / "sitemap-1.xml"))
    assert not (listed.state / "quiet-build").exists()
    assert not listed.early()


def test_the_daemon_forgets_the_quiet_build(listed: ListSite) -> None:
    daemon = RunningDaemon(listed)  # type: ignore[arg-type]  # a site by duck type
    try:
        daemon.wait_ready()
    finally:
        assert daemon.stop() == 0
    assert not (listed.state / "quiet-build").exists()
    assert not listed.early()


def test_a_held_state_lock_fails_as_a_full_build_does(listed: ListSite) -> None:
    with StateLock(listed.state):
        early = listed.build(check=False)
        (listed.state / "quiet-build").rename(listed.state / "aside")
        full = listed.build(check=False)
    (listed.state / "aside").rename(listed.state / "quiet-build")
    assert early.returncode == full.returncode == 1
    assert early.stderr == full.stderr
    assert "is in use by sitemapd pid" in full.stderr
    assert listed.early()


def test_a_folder_another_process_publishes_into_fails_as_a_full_build_does(
    listed: ListSite,
) -> None:
    # The lock a second config's daemon would hold on the same output folder.
    other = FolderLock(listed.out, ["sitemap.xml"], listed.base / "other-state")
    other.take()
    try:
        early = listed.build(check=False)
        (listed.state / "quiet-build").rename(listed.state / "aside")
        full = listed.build(check=False)
    finally:
        other.release()
    (listed.state / "aside").rename(listed.state / "quiet-build")
    assert early.returncode == full.returncode == 1
    assert early.stderr == full.stderr
    assert f"is published by sitemapd pid {os.getpid()}" in full.stderr
    assert listed.early()


def test_a_build_that_logged_a_warning_is_not_quiet(tmp_path: Path) -> None:
    site = ListSite(tmp_path)
    site.list.write_text("not a URL\n")  # nothing live: the empty index is warned of
    for _ in range(2):
        result = site.build()
        assert "WARNING sitemapd.publish: no URL is live" in result.stderr
        assert not (site.state / "quiet-build").exists()


def test_a_log_level_that_hides_warnings_notes_nothing(listed: ListSite) -> None:
    with listed.list.open("a") as handle:
        handle.write("https://example.com/a/new.html\n")
    run_cli("build", "--log-level", "error", "-c", str(listed.config))
    assert not (listed.state / "quiet-build").exists()
    assert not listed.early()


@pytest.mark.parametrize(
    "extra",
    [
        '[feed]\ntitle = "News"\n',
        '[[source]]\ntype = "directory"\nroot = "site"\n',
    ],
)
def test_sites_that_move_with_the_clock_or_pages_always_build_in_full(
    tmp_path: Path, extra: str
) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "a.html").write_text("<title>A</title><p>A page.</p>")
    site = ListSite(tmp_path, extra)
    site.build()
    assert not site.early()
    assert not (site.state / "quiet-build").exists()


def _noted(site: ListSite) -> tuple[list[str], list[str]]:
    """Return the published files and the lists' chunks of `site`'s note."""
    lines = (site.state / unchanged.NOTE).read_text().split("\n")
    assert lines[4].startswith("chunks ")
    return lines[2].split()[1:], lines[4].split()[1:]


def _line(n: int, month: int = 1) -> str:
    return f"https://example.com/a/{n}.html\t2026-{month:02d}-01T00:00:00+00:00\n"


@pytest.fixture
def chunked(tmp_path: Path) -> ListSite:
    """A built site whose list (6,000 lines, 370 KB) is several chunks."""
    site = ListSite(tmp_path)
    site.configure(sitemap="max_urls = 2000")
    site.list.write_text("".join(_line(n) for n in range(6_000)))
    site.build()
    return site


def test_a_list_of_several_chunks_is_told_changed_in_any_of_them(chunked: ListSite) -> None:
    """The note holds the list's chunks as the ledger records them: a same-size edit in
    any of them is read, its mtime kept or not; the same bytes touched are not."""
    chunks = _noted(chunked)[1][0].removeprefix("c").split(",")
    assert len(chunks) >= 4
    assert int(chunks[-1].partition(":")[0]) == chunked.list.stat().st_size
    for n, keep_mtime in ((0, True), (3_000, False), (5_999, True)):
        st = chunked.list.stat()
        text = chunked.list.read_text().replace(_line(n), _line(n, 7))
        chunked.list.write_text(text)  # in place: the same inode and size
        if keep_mtime:
            os.utime(chunked.list, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert not chunked.early()
        assert published(chunked.out)[f"https://example.com/a/{n}.html"].startswith("2026-07-01")
        os.utime(chunked.list, ns=(1, 1))
        assert chunked.early()  # the chunks noted are those of the bytes read


def test_a_list_shorter_or_longer_than_its_chunks_is_read(chunked: ListSite) -> None:
    """A list cut short of its last chunk's end, or grown past it, is read."""
    text = chunked.list.read_text()
    last = "https://example.com/a/5999.html"
    chunked.list.write_text(text.removesuffix(_line(5_999)))  # in place, shorter
    assert not chunked.early()
    assert last not in published(chunked.out)
    assert chunked.early()
    chunked.list.write_text(text)
    assert not chunked.early()
    assert last in published(chunked.out)
    assert chunked.early()


def test_a_note_of_an_earlier_release_or_damaged_builds_in_full(chunked: ListSite) -> None:
    """A note that holds the digests of 8 MiB pieces (earlier releases), or chunks that
    cannot be read or do not match, runs the whole build, which changes nothing and notes
    anew."""
    note = chunked.state / unchanged.NOTE
    lines = note.read_text().split("\n")
    chunks = lines[4].removeprefix("chunks c").split(",")
    end, _, digest = chunks[1].partition(":")
    other = f"{end}:{'0' * 32 if digest != '0' * 32 else '1' * 32}"
    before = snapshot(chunked.out)
    for noted in (
        "digests 4f0e7bd3d1c1aeb3b7f1f5d0e8e7c1a2",  # an earlier release's
        "chunks c0:zz",
        "chunks -",
        "chunks c" + ",".join(chunks[:-1]),  # short of the file's end
        "chunks c" + ",".join([chunks[0], other, *chunks[2:]]),  # a chunk that differs
    ):
        note.write_text("\n".join([*lines[:4], noted, *lines[5:]]))
        os.utime(chunked.list, ns=(1, 1))  # the list's status moved: its chunks tell
        assert not chunked.early(), noted
        assert chunked.early()
        assert snapshot(chunked.out) == before


def test_chunks_recorded_without_their_ends_get_them_at_the_next_read(
    chunked: ListSite,
) -> None:
    """Chunks recorded by a release before their ends were cannot be checked in place:
    the note says so, a touched list builds in full, and that build's read records the
    same chunks with their ends, which the next note holds."""
    with sqlite3.connect(chunked.state / "ledger.sqlite3") as conn:
        conn.execute("UPDATE list_chunks SET end_byte = NULL")
    conn.close()
    before = snapshot(chunked.out)
    assert not chunked.early()  # the ledger changed
    assert _noted(chunked)[1] == ["-"]
    os.utime(chunked.list, ns=(1, 1))
    assert not chunked.early()
    assert _noted(chunked)[1][0].startswith("c")
    assert snapshot(chunked.out) == before
    os.utime(chunked.list, ns=(2, 2))
    assert chunked.early()
