"""Invariants 2 and 5 at scale: 120,000 URLs in shards of 50,000."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import published, run_cli, shard_members, snapshot

TOTAL = 120_000


def listing(count: int, stamp: str = "2025-01-01T00:00:00+00:00", skip: int = -1) -> str:
    return "".join(
        f"https://example.com/story/{n}.html\t{stamp}\n" for n in range(count) if n != skip
    )


def rewritten(
    before: dict[str, tuple[int, int, bytes]], after: dict[str, tuple[int, int, bytes]]
) -> set[str]:
    """Return the names of files created, replaced or removed between two snapshots."""
    names = set(before) | set(after)
    return {n for n in names if before.get(n, (0, 0, b""))[:2] != after.get(n, (0, 0, b""))[:2]}


@pytest.fixture
def big(tmp_path: Path) -> Path:
    base = tmp_path
    (base / "urls.txt").write_text(listing(TOTAL))
    (base / "sitemapd.toml").write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[sitemap]\nmax_urls = 50000\n[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    run_cli("build", "-c", str(base / "sitemapd.toml"))
    return base


def build(base: Path) -> None:
    run_cli("build", "-c", str(base / "sitemapd.toml"))


@pytest.mark.slow
def test_shards_fill_in_order(big: Path) -> None:
    members = shard_members(big / "out")
    assert {name: len(locs) for name, locs in members.items()} == {
        "sitemap-1.xml": 50_000,
        "sitemap-2.xml": 50_000,
        "sitemap-3.xml": 20_000,
    }
    assert "https://example.com/story/0.html" in members["sitemap-1.xml"]
    assert "https://example.com/story/119999.html" in members["sitemap-3.xml"]


@pytest.mark.slow
def test_one_change_rewrites_its_shard_and_the_index(big: Path) -> None:
    before = snapshot(big / "out")
    lines = listing(TOTAL).splitlines(keepends=True)
    lines[60_000] = "https://example.com/story/60000.html\t2026-06-01T00:00:00Z\n"
    (big / "urls.txt").write_text("".join(lines))
    build(big)
    after = snapshot(big / "out")
    assert rewritten(before, after) == {"sitemap-2.xml", "sitemap.xml"}
    assert published(big / "out")["https://example.com/story/60000.html"] == (
        "2026-06-01T00:00:00+00:00"
    )
    index = (big / "out" / "sitemap.xml").read_text()
    assert "sitemap-2.xml</loc><lastmod>2026-06-01T00:00:00+00:00" in index
    assert "sitemap-1.xml</loc><lastmod>2025-01-01T00:00:00+00:00" in index


@pytest.mark.slow
def test_delete_removes_everywhere_and_add_fills_the_open_shard(big: Path) -> None:
    before = snapshot(big / "out")
    text = listing(TOTAL, skip=10)
    (big / "urls.txt").write_text(text)
    build(big)
    after = snapshot(big / "out")
    # Shard 1's newest lastmod did not move, so the index bytes are the same: not rewritten.
    assert rewritten(before, after) == {"sitemap-1.xml"}
    urls = published(big / "out")
    assert "https://example.com/story/10.html" not in urls
    assert len(urls) == TOTAL - 1

    before = after
    (big / "urls.txt").write_text(text + "https://example.com/story/new.html\n")
    build(big)
    after = snapshot(big / "out")
    assert rewritten(before, after) == {"sitemap-3.xml", "sitemap.xml"}
    assert "https://example.com/story/new.html" in shard_members(big / "out")["sitemap-3.xml"]
    assert run_cli("verify", "-c", str(big / "sitemapd.toml")).returncode == 0


@pytest.mark.slow
def test_lower_limits_reshard_within_them(big: Path) -> None:
    config = big / "sitemapd.toml"
    config.write_text(config.read_text().replace("max_urls = 50000", "max_urls = 40000"))
    build(big)
    sizes = {name: len(locs) for name, locs in shard_members(big / "out").items()}
    assert max(sizes.values()) <= 40_000
    assert sum(sizes.values()) == TOTAL
    assert run_cli("verify", "-c", str(config)).returncode == 0


def test_byte_limit_splits_shards(tmp_path: Path) -> None:
    long = "x" * 1900
    (tmp_path / "urls.txt").write_text(
        "".join(f"https://example.com/{long}/{n}\n" for n in range(30))
    )
    (tmp_path / "sitemapd.toml").write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[sitemap]\nmax_bytes = 16384\n[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    run_cli("build", "-c", str(tmp_path / "sitemapd.toml"))
    shards = [p for p in (tmp_path / "out").glob("sitemap-*.xml")]
    assert len(shards) == 4  # eight ~2 kB entries per 16,384-byte file
    assert all(p.stat().st_size <= 16_384 for p in shards)
    assert len(published(tmp_path / "out")) == 30
