"""Following a WordPress site's `wp_posts` through MariaDB's binlog as docs/mysql-binlog.md's
"Following WordPress" configures it, with saves made the way WordPress makes them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import Site, published
from daemon_harness import start
from mariadb import MariaDB

from sitemapd.core import w3c

HOME = "https://example.com/"
EPOCH = 1_700_000_000
# WordPress 6.1's wp_posts (wp-admin/includes/schema.php), the columns that matter here.
WP_POSTS = """CREATE TABLE wp_posts (
  ID bigint(20) unsigned NOT NULL auto_increment,
  post_author bigint(20) unsigned NOT NULL default '0',
  post_date datetime NOT NULL default '0000-00-00 00:00:00',
  post_date_gmt datetime NOT NULL default '0000-00-00 00:00:00',
  post_content longtext NOT NULL,
  post_title text NOT NULL,
  post_excerpt text NOT NULL,
  post_status varchar(20) NOT NULL default 'publish',
  comment_status varchar(20) NOT NULL default 'open',
  post_password varchar(255) NOT NULL default '',
  post_name varchar(200) NOT NULL default '',
  post_modified datetime NOT NULL default '0000-00-00 00:00:00',
  post_modified_gmt datetime NOT NULL default '0000-00-00 00:00:00',
  post_parent bigint(20) unsigned NOT NULL default '0',
  guid varchar(255) NOT NULL default '',
  post_type varchar(20) NOT NULL default 'post',
  comment_count bigint(20) NOT NULL default '0',
  PRIMARY KEY (ID),
  KEY post_name (post_name(191)),
  KEY type_status_date (post_type, post_status, post_date, ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"""
# The docs' configuration, for the permalink structure /%year%/%monthnum%/%postname%/.
SOURCE = """[[source]]
type = "changelog"
mode = "binlog"
dsn = "{dsn}"
table = "wp_posts"
url_template = "/{{post_date:%Y}}/{{post_date:%m}}/{{post_name}}/"
live = {{ post_status = "publish", post_type = "post", post_password = "" }}
fingerprint_columns = ["post_title", "post_content", "post_excerpt"]
title = "post_title"
published = "post_date_gmt"
changed_at = "post_modified_gmt"
poll_interval = 0.2
name = "posts"

[[source]]
type = "changelog"
mode = "binlog"
dsn = "{dsn}"
table = "wp_posts"
url_template = "/{{post_name}}/"
live = {{ post_status = "publish", post_type = "page", post_password = "" }}
fingerprint_columns = ["post_title", "post_content", "post_excerpt"]
title = "post_title"
changed_at = "post_modified_gmt"
poll_interval = 0.2
name = "pages"
server_id = 6094851
"""


class WordPress:
    """Saves as WordPress 6.1 makes them, each statement committed on its own."""

    def __init__(self, server: MariaDB) -> None:
        self.server = server
        server.create_database("wordpress")
        self.sql(WP_POSTS, at=EPOCH)

    def sql(self, statement: str, at: int) -> None:
        with self.server.connect("wordpress") as conn, conn.cursor() as cur:
            cur.execute(f"SET TIMESTAMP = {at}")
            cur.execute(statement)

    def publish(self, slug: str, at: int, password: str = "", kind: str = "post") -> None:
        """wp_insert_post: an auto-draft first, then the post filled in and published."""
        self.sql(
            "INSERT INTO wp_posts (post_content, post_title, post_excerpt, post_status, "
            "post_date, post_date_gmt, post_modified, post_modified_gmt) "
            "VALUES ('', 'Auto Draft', '', 'auto-draft', NOW(), NOW(), NOW(), NOW())",
            at,
        )
        self.sql(
            f"UPDATE wp_posts SET post_status = 'publish', post_name = '{slug}', "
            f"post_title = 'Title {slug}', post_content = 'Body {slug}', "
            f"post_password = '{password}', post_type = '{kind}', post_modified = NOW(), "
            "post_modified_gmt = NOW() "
            "WHERE post_title = 'Auto Draft' AND post_status = 'auto-draft'",
            at,
        )

    def save(self, slug: str, content: str, at: int) -> None:
        """wp_update_post: the whole row written again with a new modification time."""
        self.sql(
            f"UPDATE wp_posts SET post_content = '{content}', post_modified = NOW(), "
            f"post_modified_gmt = NOW() WHERE post_name = '{slug}'",
            at,
        )

    def trash(self, slug: str, at: int) -> None:
        """wp_trash_post: renamed to <slug>__trashed while still published, then trashed."""
        self.sql(
            f"UPDATE wp_posts SET post_name = '{slug}__trashed' WHERE post_name = '{slug}'", at
        )
        self.sql(
            "UPDATE wp_posts SET post_status = 'trash', post_modified = NOW(), "
            f"post_modified_gmt = NOW() WHERE post_name = '{slug}__trashed'",
            at,
        )


def url(slug: str, at: int) -> str:
    return f"{HOME}{w3c.format_epoch(at)[:4]}/{w3c.format_epoch(at)[5:7]}/{slug}/"


def test_wordpress_saves_reach_the_sitemap_as_wordpress_links_them(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    wp = WordPress(mariadb)
    wp.publish("hello-world", EPOCH)
    site = Site(tmp_path)
    site.config.write_text(
        f'[site]\nbase_url = "{HOME}"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n" + SOURCE.format(dsn=mariadb.dsn("wordpress"))
    )
    daemon = start(site)
    try:
        daemon.wait_for_urls({url("hello-world", EPOCH)})
        wp.publish("news", EPOCH + 100)
        wp.publish("secret", EPOCH + 100, password="letmein")  # hidden from crawlers
        wp.save("hello-world", "Body hello-world", EPOCH + 200)  # saved without a change
        wp.sql("UPDATE wp_posts SET comment_count = 3 WHERE post_name = 'news'", EPOCH + 250)
        wp.save("news", "Edited", EPOCH + 300)
        wp.publish("about", EPOCH + 350, kind="page")
        wp.publish("doomed", EPOCH + 400)
        wp.trash("doomed", EPOCH + 500)
        expected = {
            url("hello-world", EPOCH): w3c.format_epoch(EPOCH),
            url("news", EPOCH + 100): w3c.format_epoch(EPOCH + 300),
            f"{HOME}about/": w3c.format_epoch(EPOCH + 350),
        }
        daemon.wait_until(lambda: published(site.out) == expected, 30, "WordPress's posts")
    finally:
        assert daemon.stop() == 0
    with mariadb.connect("wordpress") as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT UNIX_TIMESTAMP(post_modified_gmt) FROM wp_posts WHERE post_name = 'news'"
        )
        (modified,) = cur.fetchone()
    # The edit's lastmod is its post_modified_gmt, to the second.
    assert published(site.out)[url("news", EPOCH + 100)] == w3c.format_epoch(int(modified))
    assert not any("doomed" in loc for loc in published(site.out))
    with sqlite3.connect(site.state / "ledger.sqlite3") as ledger:
        trashed = ledger.execute("SELECT count(*) FROM urls WHERE loc LIKE '%trashed%'")
        assert trashed.fetchone() == (0,)  # never published, not even for a moment
    ledger.close()
