"""`sitemapd build` when nothing changed since a quiet build: it ends before the engine
loads (unchanged.py), and anything that changed runs the whole build as before."""

from __future__ import annotations

import os
import shutil
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
    published_names = (listed.state / unchanged.NOTE).read_text().split("\n")[2].split()[1:]
    with StateLock(listed.state):
        read = unchanged.inputs(cfg)
    replaced = listed.list.with_suffix(".new")
    replaced.write_text(
        listed.list.read_text() + "https://example.com/a/late.html\t2026-06-01T00:00:00+00:00\n"
    )
    replaced.replace(listed.list)
    with StateLock(listed.state):
        unchanged.note(cfg, published_names, read, unchanged.hash_lists(cfg, read))
        assert not unchanged.as_noted(cfg)
    assert not listed.early()
    assert "https://example.com/a/late.html" in published(listed.out)


def test_a_list_replaced_after_it_was_hashed_is_not_noted_with_those_bytes(
    listed: ListSite,
) -> None:
    """The lists are hashed as the build starts: one replaced before the build read it,
    then put back, must not be taken for the list the build published."""
    cfg = config.load(listed.config)
    published_names = (listed.state / unchanged.NOTE).read_text().split("\n")[2].split()[1:]
    original = listed.list.read_bytes()
    with StateLock(listed.state):
        read = unchanged.inputs(cfg)
        hashed = unchanged.hash_lists(cfg, read)
        assert hashed is not None
        hashed.result()
    # Replaced after the hash: the build would read and publish these bytes.
    replaced = listed.list.with_suffix(".new")
    replaced.write_bytes(original + b"https://example.com/a/late.html\n")
    replaced.replace(listed.list)
    with StateLock(listed.state):
        unchanged.note(cfg, published_names, read, hashed)
    # Put back: the bytes hashed, but not those published.
    replaced.write_bytes(original)
    replaced.replace(listed.list)
    with StateLock(listed.state):
        assert not unchanged.as_noted(cfg)


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


def test_a_list_of_several_pieces_is_told_changed_in_any_of_them(tmp_path: Path) -> None:
    """The note holds a digest of each 8 MiB piece of a list: a same-size edit in any
    piece, a piece more or less, tells a change; the same bytes, touched, do not."""
    path = tmp_path / "urls.txt"
    line = b"https://example.com/a/0000000.html\t2026-01-01T00:00:00+00:00\n"
    body = line * (20 * (1 << 20) // len(line))  # three pieces, the last one short
    path.write_bytes(body)
    status = unchanged._lines([path])[0]
    noted = unchanged._digest_as(path, status)
    assert len(noted.split(",")) == 3
    os.utime(path, ns=(1, 1))
    assert unchanged._same_bytes(path, unchanged._lines([path])[0], noted)
    for at in (0, 9 << 20, len(body) - 3):
        edited = bytearray(body)
        edited[at : at + 1] = b"9" if edited[at : at + 1] != b"9" else b"8"
        path.write_bytes(bytes(edited))
        assert not unchanged._same_bytes(path, unchanged._lines([path])[0], noted)
    for other in (body + line, body[: 16 << 20], b""):
        path.write_bytes(other)
        assert not unchanged._same_bytes(path, unchanged._lines([path])[0], noted)
    path.write_bytes(body)
    assert unchanged._same_bytes(path, unchanged._lines([path])[0], noted)
    assert not unchanged._same_bytes(path, "moved", noted)
    assert not unchanged._same_bytes(path, unchanged._lines([path])[0], "-")


def test_a_changed_list_is_noted_on_from_its_first_changed_piece(tmp_path: Path) -> None:
    """The early check hands the pieces it found as noted to the note of the build that
    follows, which hashes the list on from the first changed one: to the digests of the
    whole list hashed anew. Pieces found under another status are not used."""
    path = tmp_path / "urls.txt"
    line = b"https://example.com/a/0000000.html\t2026-01-01T00:00:00+00:00\n"
    body = bytearray(line * (20 * (1 << 20) // len(line)))  # three pieces
    path.write_bytes(body)
    noted = unchanged._digest_as(path, unchanged._lines([path])[0])
    body[(9 << 20) + 5] = ord("9")  # in the second piece
    path.write_bytes(body)
    status = unchanged._lines([path])[0]
    head: list[str] = []
    assert not unchanged._same_bytes(path, status, noted, head)
    assert head == noted.split(",")[:1]
    whole = unchanged._digest_as(path, status)
    assert whole.split(",")[0] == head[0]
    assert whole != noted
    assert unchanged._digest_as(path, status, (status, head)) == whole
    # The pieces given are taken as they are, not read again; under another status, not.
    assert unchanged._digest_as(path, status, (status, ["x"])).split(",")[0] == "x"
    assert unchanged._digest_as(path, status, ("moved", ["x"])) == whole
