"""A publish writes and syncs its temp files at once (a shard's and its manifest's; the
index's while the shards are stored) and renames them in order: the manifest, then its
shard, then the index. A file it replaces is freed on a thread of its own. Whatever
fails on the way leaves no temp file behind and the published files as they were."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from conftest import Site, write_atomic

from sitemapd.core import docdigest
from sitemapd.errors import PublishError
from sitemapd.publish.atomic import Unsynced, atomic_write
from sitemapd.publish.manifestfile import manifest_name
from sitemapd.publish.store import LocalStore

LIST_SOURCE = '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"'


def let_go_all(folder: Path) -> None:
    """Wait (5 s at most) until the let-go thread freed the replaced files of `folder`."""
    deadline = time.monotonic() + 5
    while deleted_but_open(folder) and time.monotonic() < deadline:
        time.sleep(0.01)


def deleted_but_open(folder: Path) -> list[str]:
    """Return the files of `folder` this process still holds open, deleted."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)) and target.endswith("(deleted)"):
            found.append(target)
    return found


def temps(folder: Path) -> list[str]:
    """Return the temp files left anywhere under `folder`."""
    return sorted(p.name for p in folder.rglob(".sitemapd-tmp-*"))


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="files are held by O_PATH")
def test_a_replaced_file_is_freed_once_let_go(tmp_path: Path) -> None:
    path = tmp_path / "sitemap-1.xml"
    atomic_write(path, b"old" * 100_000)
    atomic_write(path, b"new")
    let_go_all(tmp_path)
    assert path.read_bytes() == b"new"
    assert deleted_but_open(tmp_path) == []
    assert temps(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="files are held by O_PATH")
def test_files_replaced_one_after_another_are_freed_by_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A thread started for each file waited for the interpreter lock while another ran.
    path = tmp_path / "sitemap-1.xml"
    atomic_write(path, b"first")
    atomic_write(path, b"second")  # the let-go thread started, if not already
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    for n in range(5):
        atomic_write(path, b"%d" % n * 100_000)
    let_go_all(tmp_path)
    assert [name for name in started if name.startswith("sitemapd-let-go")] == []
    assert deleted_but_open(tmp_path) == []


def test_the_manifest_is_renamed_before_its_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path, None)
    store.prepare(write=True)
    renamed: list[str] = []
    replace = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        renamed.append(Path(dst).name)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    stamp, wrote = store.put_after("sitemap-1.xml", b"<urlset/>", lambda: b"rows")
    assert wrote
    assert renamed == [Path(manifest_name("sitemap-1.xml")).name, "sitemap-1.xml"]
    assert (tmp_path / "sitemap-1.xml").stat().st_mtime_ns == stamp
    assert (tmp_path / manifest_name("sitemap-1.xml")).read_bytes() == b"rows"


def test_a_manifest_that_fails_leaves_the_shard_as_published(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, None)
    store.prepare(write=True)
    store.put_after("sitemap-1.xml", b"published", lambda: b"rows")

    def failing() -> bytes:
        raise PublishError("the manifest cannot be read")

    with pytest.raises(PublishError, match="manifest"):
        store.put_after("sitemap-1.xml", b"another", failing)
    assert (tmp_path / "sitemap-1.xml").read_bytes() == b"published"
    assert temps(tmp_path) == []


def test_a_shard_that_cannot_be_written_leaves_no_manifest_temp(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, None)
    store.prepare(write=True)
    (tmp_path / "sitemap-1.xml").mkdir()  # the shard's rename fails
    with pytest.raises(PublishError):
        store.put_after("sitemap-1.xml", b"<urlset/>", lambda: b"rows")
    assert temps(tmp_path) == []
    # The manifest went first, whole: its shard is written again next time.
    assert (tmp_path / manifest_name("sitemap-1.xml")).read_bytes() == b"rows"


def test_a_shard_that_cannot_be_stored_leaves_the_index_as_published(site: Site) -> None:
    site.configure(sitemap="max_urls = 2", extra=LIST_SOURCE)
    write_atomic(site.base / "urls.txt", "".join(f"https://example.com/{n}\n" for n in range(5)))
    site.build()
    index = (site.out / "sitemap.xml").read_bytes()
    # The last shard's rename will fail; the index, staged meanwhile, must not go out.
    (site.out / "sitemap-3.xml").unlink()
    (site.out / "sitemap-3.xml").mkdir()
    write_atomic(site.base / "urls.txt", "".join(f"https://example.com/{n}\n" for n in range(6)))
    failed = site.cli("build", check=False)
    assert failed.returncode == 1
    assert "sitemap-3.xml" in failed.stderr
    assert temps(site.out) == []
    assert (site.out / "sitemap.xml").read_bytes() == index


def test_a_splice_reads_the_file_itself_never_through_a_symlink(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, None)
    head = b"<urlset>\n"
    (tmp_path / "sitemap-1.xml").write_bytes(head + b"<url>a</url>\n" * 100_000)
    (tmp_path / "sitemap-2.xml").symlink_to(tmp_path / "sitemap-1.xml")
    (tmp_path / "sitemap-3.xml").mkdir()
    recorded = docdigest.of((tmp_path / "sitemap-1.xml").read_bytes())
    changes = [(b"<url>a</url>\n", b"<url>b</url>\n")]
    for name in ("sitemap-2.xml", "sitemap-3.xml", "missing.xml"):
        assert store.spliced(name, head, changes, recorded) is None
    assert temps(tmp_path) == []
    spliced = store.spliced("sitemap-1.xml", head, changes, recorded)
    assert spliced is not None
    assert isinstance(spliced.document, Unsynced)
    store.put_after("sitemap-1.xml", spliced.document, lambda: b"rows")
    assert (tmp_path / "sitemap-1.xml").read_bytes() == (
        head + b"<url>b</url>\n" + b"<url>a</url>\n" * 99_999
    )
    assert temps(tmp_path) == []
