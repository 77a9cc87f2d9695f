"""Benchmark `preset = "wordpress"`'s reader on WordPress-shaped tables and print a table.

    python bench/bench_wordpress.py [--posts 20000] [--edits 1000]

Starts a throwaway MariaDB (tests/mariadb.py) with a row binlog, fills `wp_posts` with
`--posts` published posts of about 2 KB and as many revisions (WordPress keeps one per
save), and measures, for the binlog and the polling mode:
- full read: a snapshot of every post turned into permalinks (`/%year%/%monthnum%/
  %postname%/`), as the first start and every `resync_interval` do;
- edits: `--edits` posts edited one statement each, then read and folded into URL
  changes (binlog: from the log; polling: by post_modified_gmt).
"""

from __future__ import annotations

import sys
import time
from argparse import ArgumentParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from mariadb import MariaDB, start_mariadb  # noqa: E402
from test_changelog_wordpress import WP_POSTS  # noqa: E402

from sitemapd.changelog.wordpress import WordPressReader  # noqa: E402
from sitemapd.config.changelog import ChangelogSpec  # noqa: E402

# The tables besides wp_posts a permalink reads (WordPress 6.1's, the columns used).
TABLES = (
    "CREATE TABLE wp_options (option_id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "option_name varchar(191) NOT NULL UNIQUE, option_value longtext NOT NULL)",
    "CREATE TABLE wp_terms (term_id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "name varchar(200) NOT NULL, slug varchar(200) NOT NULL)",
    "CREATE TABLE wp_term_taxonomy (term_taxonomy_id bigint unsigned NOT NULL "
    "AUTO_INCREMENT PRIMARY KEY, term_id bigint unsigned NOT NULL, taxonomy varchar(32) "
    "NOT NULL, parent bigint unsigned NOT NULL DEFAULT 0, count bigint NOT NULL DEFAULT 0)",
    "CREATE TABLE wp_term_relationships (object_id bigint unsigned NOT NULL, "
    "term_taxonomy_id bigint unsigned NOT NULL, PRIMARY KEY (object_id, term_taxonomy_id))",
    "CREATE TABLE wp_users (ID bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "user_nicename varchar(50) NOT NULL)",
    "INSERT INTO wp_options (option_name, option_value) VALUES "
    "('home', 'https://example.com'), ('permalink_structure', '/%year%/%monthnum%/%postname%/')",
    "INSERT INTO wp_terms VALUES (1, 'Uncategorized', 'uncategorized')",
    "INSERT INTO wp_term_taxonomy VALUES (1, 1, 'category', 0, 1)",
)


def fill(server: MariaDB, posts: int) -> None:
    """Create the tables and `posts` published posts, each with a revision."""
    server.create_database("wordpress")
    body = "Lorem ipsum dolor sit amet. " * 70
    with server.connect("wordpress") as conn, conn.cursor() as cur:
        for statement in (WP_POSTS, *TABLES):
            cur.execute(statement)
        for start in range(0, posts, 1000):
            rows = []
            for n in range(start, min(start + 1000, posts)):
                rows.append(
                    f"('post {n}', '{body}', '', 'publish', 'post-{n}', 'post', "
                    "NOW(), UTC_TIMESTAMP(), NOW(), UTC_TIMESTAMP() - INTERVAL 1 HOUR)"
                )
                rows.append(
                    f"('post {n}', '{body}', '', 'inherit', '{n}-revision-v1', 'revision', "
                    "NOW(), UTC_TIMESTAMP(), NOW(), UTC_TIMESTAMP() - INTERVAL 1 HOUR)"
                )
            cur.execute(
                "INSERT INTO wp_posts (post_title, post_content, post_excerpt, post_status, "
                "post_name, post_type, post_date, post_date_gmt, post_modified, "
                "post_modified_gmt) VALUES " + ", ".join(rows)
            )


def measure(server: MariaDB, mode: str, posts: int, edits: int) -> tuple[float, float]:
    """Return (full read, edits read) in rows per second for `mode`."""
    reader = WordPressReader(
        ChangelogSpec(dsn=server.dsn("wordpress"), mode=mode, preset="wordpress")
    )
    started = time.perf_counter()
    taken = reader.snapshot(None, 10_000, 1e12)
    assert taken is not None
    read = sum(len(batch) for batch in taken.batches)
    full = time.perf_counter() - started
    assert read == posts + 2, read  # the posts, the home page and a category archive
    with server.connect("wordpress") as conn, conn.cursor() as cur:
        for n in range(edits):
            cur.execute(
                f"UPDATE wp_posts SET post_content = 'edited {mode}', "
                f"post_modified_gmt = UTC_TIMESTAMP() WHERE post_name = 'post-{n}'"
            )
    started = time.perf_counter()
    cursor: str | None = taken.cursor
    changed = 0
    while True:
        rows, cursor = reader.read(cursor, 10_000)
        changed += sum(1 for row in rows if not row.deleted and "/post-" in row.url)
        if changed >= edits:
            break
    drained = time.perf_counter() - started
    reader.close()
    return posts / full, edits / drained


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=20_000)
    parser.add_argument("--edits", type=int, default=1000)
    args = parser.parse_args()
    server = start_mariadb()
    try:
        fill(server, args.posts)
        print(f"WordPress preset, {args.posts} posts (+ as many revisions), {args.edits} edits")
        print(f"| {'mode':8} | {'full read (posts/s)':>20} | {'edits read (rows/s)':>20} |")
        print(f"|{'-' * 10}|{'-' * 22}|{'-' * 22}|")
        for mode in ("binlog", "poll"):
            full, edited = measure(server, mode, args.posts, args.edits)
            print(f"| {mode:8} | {full:20,.0f} | {edited:20,.0f} |")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()
