"""The change-log recipe as documented: the table and triggers `changelog-sql --sqlite`
prints, the `[source.columns]` docs/database.md maps, and news entries with titles out, as
`status` counts them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import NS, published, read_xml, run_cli
from mariadb import MariaDB
from pymysql.constants import CLIENT

NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"


def test_the_recipe_gives_news_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "cms.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT UNIQUE, title TEXT, "
            "published_at TEXT)"
        )
        conn.executescript(run_cli("changelog-sql", "--sqlite").stdout)
        conn.execute(
            "INSERT INTO articles (slug, title, published_at) "
            "VALUES ('tram', 'New tram line', '2026-03-10T09:00:00Z')"
        )
    conn.close()
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[news]\npublication_name = "Example"\nlanguage = "en"\n[feed]\ntitle = "Updates"\n'
        f'[[source]]\ntype = "changelog"\ndsn = "sqlite:///{db}"\n'
        '[source.columns]\ntitle = "title"\npublished = "published_at"\n'
    )
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-03-10T12:00:00+00:00")
    run_cli("build", "-c", str(config))
    (item,) = read_xml(tmp_path / "out" / "news-sitemap.xml").iter(f"{NS}url")
    assert item.findtext(f"{NS}loc") == "https://example.com/news/tram"
    assert item.findtext(f"{NEWS}news/{NEWS}title") == "New tram line"
    assert item.findtext(f"{NEWS}news/{NEWS}publication_date") == "2026-03-10T09:00:00+00:00"
    # status counts what the news sitemaps and the feed hold.
    report = json.loads(run_cli("status", "--json", "-c", str(config)).stdout)
    assert (report["news_items"], report["feed_entries"]) == (1, 1)
    text = run_cli("status", "-c", str(config)).stdout
    assert "news:         1 article in news sitemaps" in text
    assert "feed:         1 update on the first page" in text


def test_the_mysql_recipe_follows_inserts_renames_and_deletes(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    mariadb.create_database("cms_recipe")
    multi = CLIENT.MULTI_STATEMENTS
    with mariadb.connect("cms_recipe", client_flag=multi) as conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE articles (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
            "slug VARCHAR(190) UNIQUE, title TEXT, published_at DATETIME)"
        )
        # As `mysql cms_recipe < changelog.sql` runs it: the whole file at once.
        cur.execute(run_cli("changelog-sql", "--mysql").stdout)
        while cur.nextset():
            pass

    def execute(statement: str) -> None:
        with mariadb.connect("cms_recipe") as conn, conn.cursor() as cur:
            cur.execute(statement)

    execute(
        "INSERT INTO articles (slug, title, published_at) VALUES "
        "('tram', 'New tram line', '2026-03-10 09:00:00'), ('bus', 'Bus', NULL)"
    )
    config = tmp_path / "sitemapd.toml"
    dsn = mariadb.dsn("cms_recipe").replace("mysql://", "mysql+pymysql://")
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f'[[source]]\ntype = "changelog"\ndsn = "{dsn}"\n'
        '[source.columns]\ntitle = "title"\npublished = "published_at"\n'
    )
    run_cli("build", "-c", str(config))
    assert set(published(tmp_path / "out")) == {
        "https://example.com/news/tram",
        "https://example.com/news/bus",
    }
    execute("UPDATE articles SET slug = 'coach' WHERE slug = 'bus'")
    execute("DELETE FROM articles WHERE slug = 'tram'")
    execute("INSERT INTO articles (slug, title) VALUES ('ferry', 'Ferry')")
    run_cli("build", "-c", str(config))
    assert set(published(tmp_path / "out")) == {
        "https://example.com/news/coach",
        "https://example.com/news/ferry",
    }
