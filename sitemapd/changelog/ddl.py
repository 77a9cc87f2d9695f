"""The recommended change table and a trigger template a CMS owner adapts to their tables."""

from __future__ import annotations

import re

from ..errors import ConfigError

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


def ddl(kind: str, table: str = "sitemap_changes", channel: str = "sitemapd") -> str:
    """Return the DDL for `kind` ("postgres" or "sqlite") as runnable SQL.

    Raises ConfigError for another kind or a table/channel that is not a plain name.
    """
    for what, name in (("table", table), ("channel", channel)):
        if not _NAME.match(name):
            raise ConfigError(f"changelog ddl: {what} {name!r} is not a plain SQL name")
    if kind == "postgres":
        return _POSTGRES.format(table=table, channel=channel)
    if kind == "sqlite":
        return _SQLITE.format(table=table, channel=channel)
    raise ConfigError(f"changelog ddl: unknown kind {kind!r} (postgres or sqlite)")
