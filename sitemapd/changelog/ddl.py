"""The recommended change table and a trigger template a CMS owner adapts to their tables."""

from __future__ import annotations

import re

from sitemapd.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_POSTGRES = """\
-- sitemapd change log for PostgreSQL (14 or later). Run once as the owner of the CMS tables.
-- sitemapd reads this table in (txid, id) order, up to the oldest running transaction,
-- so no row is skipped when transactions commit out of order. sitemapd never deletes rows:
-- purge old ones yourself, e.g. DELETE FROM {table} WHERE changed_at < now() - interval '30 days'
-- (keep anything newer than sitemapd's cursor).
CREATE TABLE IF NOT EXISTS {table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url text NOT NULL,                          -- path ("/news/a-story") or absolute URL
    op text NOT NULL DEFAULT 'upsert' CHECK (op IN ('upsert', 'delete')),
    changed_at timestamptz NOT NULL DEFAULT now(),
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    -- Facts for feeds and the news sitemap: map them in [source.columns] as
    -- title = "title" and published = "published_at".
    title text,
    published_at timestamptz
    -- Optional: , language text (language = "language")
);
CREATE INDEX IF NOT EXISTS {table}_txid_id ON {table} (txid, id);

-- TEMPLATE: adapt to your content. It assumes a table articles(id, slug, title,
-- published_at) served at /news/<slug>. Change the table name in the trigger below and
-- the URL expression ('/news/' || ...) to match your site.
CREATE OR REPLACE FUNCTION {table}_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO {table} (url, op) VALUES ('/news/' || OLD.slug, 'delete');
    ELSE
        -- A changed slug moves the article: its old URL is gone.
        IF TG_OP = 'UPDATE' AND OLD.slug IS DISTINCT FROM NEW.slug THEN
            INSERT INTO {table} (url, op) VALUES ('/news/' || OLD.slug, 'delete');
        END IF;
        INSERT INTO {table} (url, op, title, published_at)
            VALUES ('/news/' || NEW.slug, 'upsert', NEW.title, NEW.published_at);
    END IF;
    -- Wakes sitemapd at once instead of at its next poll; delivered on commit.
    PERFORM pg_notify('{channel}', '');
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER articles_{table}
    AFTER INSERT OR UPDATE OR DELETE ON articles
    FOR EACH ROW EXECUTE FUNCTION {table}_record();
"""

_SQLITE = """\
-- sitemapd change log for SQLite. Run once in the CMS database.
-- AUTOINCREMENT keeps ids from being reused after old rows are purged, which would
-- hide new changes below sitemapd's cursor. sitemapd never deletes rows: purge old ones
-- yourself, e.g. DELETE FROM {table} WHERE changed_at < strftime('%Y-%m-%dT%H:%M:%SZ',
-- 'now', '-30 days') (keep anything newer than sitemapd's cursor).
CREATE TABLE IF NOT EXISTS {table} (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,                          -- path ("/news/a-story") or absolute URL
    op TEXT NOT NULL DEFAULT 'upsert' CHECK (op IN ('upsert', 'delete')),
    changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    -- Facts for feeds and the news sitemap: map them in [source.columns] as
    -- title = "title" and published = "published_at".
    title TEXT,
    published_at TEXT                           -- ISO 8601; without a zone it means UTC
    -- Optional: , language TEXT (language = "language")
);

-- TEMPLATE: adapt to your content. It assumes a table articles(id, slug, title,
-- published_at) served at /news/<slug>. Change the table name in the triggers below and
-- the URL expression ('/news/' || ...) to match your site.
CREATE TRIGGER IF NOT EXISTS articles_{table}_insert AFTER INSERT ON articles
BEGIN
    INSERT INTO {table} (url, op, title, published_at)
        VALUES ('/news/' || NEW.slug, 'upsert', NEW.title, NEW.published_at);
END;

CREATE TRIGGER IF NOT EXISTS articles_{table}_update AFTER UPDATE ON articles
BEGIN
    -- A changed slug moves the article: its old URL is gone.
    INSERT INTO {table} (url, op)
        SELECT '/news/' || OLD.slug, 'delete' WHERE OLD.slug IS NOT NEW.slug;
    INSERT INTO {table} (url, op, title, published_at)
        VALUES ('/news/' || NEW.slug, 'upsert', NEW.title, NEW.published_at);
END;

CREATE TRIGGER IF NOT EXISTS articles_{table}_delete AFTER DELETE ON articles
BEGIN
    INSERT INTO {table} (url, op) VALUES ('/news/' || OLD.slug, 'delete');
END;
"""

_MYSQL = """\
-- sitemapd change log for MySQL (8.0 or later) and MariaDB (10.3 or later). Run once as
-- the owner of the CMS tables (mysql cms < changelog.sql); sitemapd reads it through
-- SQLAlchemy (dsn = "mysql+pymysql://..."; pip install 'sitemapd[sql,mysql]'). No
-- trigger rights, or no schema changes allowed? Follow the table itself instead:
-- mode = "binlog" (docs/mysql-binlog.md: Following MySQL or MariaDB through the binlog).
-- Ids are read in order, re-reading a window of recent ids (`overlap`) for transactions
-- that commit out of order. sitemapd never deletes rows: purge old ones yourself, e.g.
-- DELETE FROM {table} WHERE changed_at < UTC_TIMESTAMP() - INTERVAL 30 DAY
-- (keep anything newer than sitemapd's cursor).
CREATE TABLE IF NOT EXISTS {table} (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    url VARCHAR(2048) NOT NULL,                 -- path ("/news/a-story") or absolute URL
    op VARCHAR(6) NOT NULL DEFAULT 'upsert',    -- 'upsert' or 'delete'
    changed_at DATETIME(6) NOT NULL,            -- UTC, set by the triggers
    -- Facts for feeds and the news sitemap: map them in [source.columns] as
    -- title = "title" and published = "published_at".
    title TEXT,
    published_at DATETIME                       -- UTC
) ENGINE=InnoDB;

-- TEMPLATE: adapt to your content. It assumes a table articles(id, slug, title,
-- published_at) served at /news/<slug>. Change the table name in the triggers below and
-- the URL expression (CONCAT('/news/', ...)) to match your site. One statement each, so
-- the file runs as it is (no DELIMITER).
DROP TRIGGER IF EXISTS articles_{table}_insert;
CREATE TRIGGER articles_{table}_insert AFTER INSERT ON articles FOR EACH ROW
    INSERT INTO {table} (url, op, changed_at, title, published_at)
        VALUES (CONCAT('/news/', NEW.slug), 'upsert', UTC_TIMESTAMP(6), NEW.title,
                NEW.published_at);

-- A changed slug moves the article: its old URL is gone.
DROP TRIGGER IF EXISTS articles_{table}_update;
CREATE TRIGGER articles_{table}_update AFTER UPDATE ON articles FOR EACH ROW
    INSERT INTO {table} (url, op, changed_at, title, published_at)
        SELECT CONCAT('/news/', OLD.slug), 'delete', UTC_TIMESTAMP(6), NULL, NULL
            FROM DUAL WHERE NOT (OLD.slug <=> NEW.slug)
        UNION ALL
        SELECT CONCAT('/news/', NEW.slug), 'upsert', UTC_TIMESTAMP(6), NEW.title,
               NEW.published_at;

DROP TRIGGER IF EXISTS articles_{table}_delete;
CREATE TRIGGER articles_{table}_delete AFTER DELETE ON articles FOR EACH ROW
    INSERT INTO {table} (url, op, changed_at)
        VALUES (CONCAT('/news/', OLD.slug), 'delete', UTC_TIMESTAMP(6));
"""


def ddl(kind: str, table: str = "sitemap_changes", channel: str = "sitemapd") -> str:
    """Return the DDL for `kind` ("postgres", "sqlite" or "mysql") as runnable SQL.

    Raises ConfigError for another kind or a table/channel that is not a plain name.
    """
    for what, name in (("table", table), ("channel", channel)):
        if not _NAME.match(name):
            raise ConfigError(f"changelog ddl: {what} {name!r} is not a plain SQL name")
    if kind == "postgres":
        return _POSTGRES.format(table=table, channel=channel)
    if kind == "sqlite":
        return _SQLITE.format(table=table, channel=channel)
    if kind == "mysql":
        return _MYSQL.format(table=table)
    raise ConfigError(f"changelog ddl: unknown kind {kind!r} (postgres, sqlite or mysql)")
