"""Follow a WordPress site from its database (`preset = "wordpress"`): its published
posts and pages that have no password, at the URLs WordPress gives them, and its home,
category and tag archives as WordPress's own sitemap (/wp-sitemap.xml) lists them.

`wp_posts` is followed through the binlog (mode "binlog") or by `post_modified_gmt`
(mode "poll"). Each change's row is keyed by the columns its permalink is made of, so
that a changed slug, date, parent or author deletes the old URL and publishes the new
one; the URL itself is made here, from the site's options and the rows it depends on
(ancestor pages, categories, authors). Every post is read again (a snapshot) when those
options change, when a page with children moved, and every `resync` seconds: what a
permalink depends on outside `wp_posts` (a category's slug, a post's categories, an
author's nicename) and what polling cannot see catch up then.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, NamedTuple

import pymysql
import pymysql.cursors

from sitemapd.changelog.binlog import BinlogReader, connect_params
from sitemapd.changelog.permalink import OPTIONS, TRASHED, Links, Post
from sitemapd.changelog.polling import PollReader
from sitemapd.config.changelog import (
    ChangelogSpec,
    ChangeRow,
    ChangeRows,
    Snapshot,
    redact,
    source_error,
)
from sitemapd.core import logs
from sitemapd.errors import ConfigError, SourceError

log = logs.Logger("sitemapd.changelog")

# A row's key: the columns of its permalink, the slug last (it holds no '|').
_KEY = "{ID}|{post_type}|{post_parent}|{post_author}|{post_date}|{post_name}"
_TYPES = ("post", "page")
# An archive has no content of its own here: its lastmod is when it was first listed.
_ARCHIVE = "wordpress-archive"
_MAX_DEPTH = 100  # ancestors followed for a page's path (WordPress loops on none either)


def posts_spec(spec: ChangelogSpec) -> ChangelogSpec:
    """Return the spec of `spec`'s wp_posts table as the binlog or polling reader takes it."""
    return replace(
        spec,
        preset="",
        table=f"{spec.table_prefix}posts",
        id_column="ID",
        url_column=None,
        url_template=_KEY,
        live=(("post_status", ("publish",)), ("post_password", ("",)), ("post_type", _TYPES)),
        fingerprint_columns=("post_title", "post_content", "post_excerpt"),
        meta_columns=(
            ("title", "post_title"),
            ("published", "post_date_gmt"),
            ("modified", "post_modified_gmt"),
        ),
        changed_at_column="post_modified_gmt",
    )


class _State(NamedTuple):
    """The cursor: the wp_posts reader's, the links it stands for, the last full read."""

    posts: str
    links: str
    synced: float

    def text(self) -> str:
        return json.dumps(
            {"posts": self.posts, "links": self.links, "synced": self.synced},
            separators=(",", ":"),
        )


def _state(cursor: str | None) -> _State | None:
    """Return the state of a cursor; None for none or one of another kind."""
    try:
        found = json.loads(cursor or "")
        return _State(str(found["posts"]), str(found["links"]), float(found["synced"]))
    except (ValueError, TypeError, KeyError):
        return None


class Lookups:
    """The rows a permalink depends on besides its post's own, read once per read."""

    def __init__(self, cur: pymysql.cursors.Cursor, prefix: str) -> None:
        """Read the site's options; raises pymysql.Error."""
        self._cur, self._prefix = cur, prefix
        marks = ", ".join(["%s"] * len(OPTIONS))
        found = self._all(
            f"SELECT option_name, option_value FROM `{prefix}options` "
            f"WHERE option_name IN ({marks})",
            OPTIONS,
        )
        self.links = Links.of({str(name): _text(value) for name, value in found})
        self._pages: dict[int, tuple[str, int]] = {}
        self._categories: dict[int, tuple[str, int, int]] | None = None
        self._authors: dict[int, str] = {}

    def _all(self, query: str, args: Any = None) -> list[tuple[Any, ...]]:
        self._cur.execute(query, args)
        return list(self._cur.fetchall())

    def link(self, post: Post) -> str:
        """Return the permalink of `post`."""
        if post.type == "page":
            return self.links.page(post, self._page_path(post))
        structure = self.links.structure
        category = self._post_category(post.id) if "%category%" in structure else ""
        author = self._author(post.author) if "%author%" in structure else ""
        return self.links.post(post, category, author)

    def _page_path(self, post: Post) -> str:
        """Return get_page_uri(): the page's slug under its ancestors' slugs."""
        names, parent = [post.name], post.parent
        for _ in range(_MAX_DEPTH):
            if not parent or parent == post.id:
                break
            if parent not in self._pages:
                found = self._all(
                    f"SELECT post_name, post_parent FROM `{self._prefix}posts` WHERE ID = %s",
                    (parent,),
                )
                self._pages[parent] = (_text(found[0][0]), int(found[0][1])) if found else ("", 0)
            name, parent = self._pages[parent]
            if name:
                names.insert(0, name)
        return "/".join(names)

    def has_children(self, page: int) -> bool:
        """True when published pages sit under page `page` (their paths hold its slug)."""
        return bool(
            self._all(
                f"SELECT 1 FROM `{self._prefix}posts` WHERE post_parent = %s "
                "AND post_type = 'page' AND post_status = 'publish' LIMIT 1",
                (page,),
            )
        )

    def _terms(self) -> dict[int, tuple[str, int, int]]:
        """Return every category: term_id -> (slug, parent, count)."""
        if self._categories is None:
            found = self._all(
                "SELECT tt.term_id, t.slug, tt.parent, tt.count "
                f"FROM `{self._prefix}term_taxonomy` tt "
                f"JOIN `{self._prefix}terms` t ON t.term_id = tt.term_id "
                "WHERE tt.taxonomy = 'category'"
            )
            self._categories = {int(a): (_text(b), int(c), int(d)) for a, b, c, d in found}
        return self._categories

    def _category_path(self, term: int) -> str:
        """Return a category's slug under its ancestors' ('news/world')."""
        terms, names = self._terms(), list[str]()
        for _ in range(_MAX_DEPTH):
            if term not in terms:
                break
            slug, term, _count = terms[term]
            names.insert(0, slug)
        return "/".join(names)

    def _post_category(self, post: int) -> str:
        """Return the path of a post's category of lowest id, as get_permalink takes it
        (the default category for none)."""
        found = self._all(
            f"SELECT MIN(tt.term_id) FROM `{self._prefix}term_relationships` tr "
            f"JOIN `{self._prefix}term_taxonomy` tt ON tt.term_taxonomy_id = tr.term_taxonomy_id "
            "WHERE tr.object_id = %s AND tt.taxonomy = 'category'",
            (post,),
        )
        term = found[0][0] if found and found[0][0] is not None else self.links.default_category
        return self._category_path(int(term))

    def _author(self, user: int) -> str:
        if user not in self._authors:
            found = self._all(
                f"SELECT user_nicename FROM `{self._prefix}users` WHERE ID = %s", (user,)
            )
            self._authors[user] = _text(found[0][0]) if found else ""
        return self._authors[user]

    def archives(self) -> set[str]:
        """Return the archives /wp-sitemap.xml lists: the home page (when the front page
        is not a page, which is listed as one), categories and tags with posts."""
        links = self.links
        found = set()
        if links.show_on_front != "page" or not links.page_on_front:
            found.add(links.home_page())
        for term, (_slug, _parent, count) in self._terms().items():
            if count > 0:
                found.add(links.term("category", term, self._category_path(term)))
        for term, slug in self._all(
            f"SELECT tt.term_id, t.slug FROM `{self._prefix}term_taxonomy` tt "
            f"JOIN `{self._prefix}terms` t ON t.term_id = tt.term_id "
            "WHERE tt.taxonomy = 'post_tag' AND tt.count > 0"
        ):
            found.add(links.term("post_tag", int(term), _text(slug)))
        return found


class WordPressReader:
    """A Stream over a WordPress site's wp_posts, giving its posts' and pages' URLs."""

    def __init__(self, spec: ChangelogSpec) -> None:
        """Raises ConfigError or SourceError for an unusable spec or dsn."""
        if spec.mode not in ("binlog", "poll"):
            raise ConfigError(f"changelog: preset 'wordpress' has no mode {spec.mode!r}")
        self._spec = spec
        self._params = connect_params(spec.dsn)
        inner = posts_spec(spec)
        self._posts: BinlogReader | PollReader = (
            BinlogReader(inner) if spec.mode == "binlog" else PollReader(inner)
        )
        # The archive URLs last given, None when unknown (a restart: all are given again).
        self._archives: set[str] | None = None
        self._resync = False

    @contextmanager
    def _lookups(self) -> Iterator[Lookups]:
        try:
            with (
                pymysql.connect(**self._params, autocommit=True) as conn,
                conn.cursor() as cur,
            ):
                yield Lookups(cur, self._spec.table_prefix)
        except pymysql.Error as exc:
            raise source_error(self._spec.dsn, "cannot read WordPress's tables", exc) from exc

    def read(self, cursor: str | None, limit: int) -> tuple[ChangeRows, str | None]:
        """Return the URL changes of up to about `limit` changed posts after `cursor`,
        with the archives' changes once the posts are drained, and the cursor after them.

        Raises SourceError when the database cannot be reached or refuses.
        """
        state = _state(cursor)
        rows, after = self._posts.read(state.posts if state else None, limit)
        moved = _State(after or "", "", 0.0) if state is None else state._replace(posts=after or "")
        after_text = cursor if moved == state else moved.text()
        if not rows and self._archives is not None:
            return rows, after_text
        with self._lookups() as look:
            found = self._urls(rows, look)
            if len(rows) < limit:
                found += self._archive_changes(look.archives())
        return ChangeRows.of(found), after_text

    def snapshot(self, cursor: str | None, batch: int, until: float) -> Snapshot | None:
        """Return every live post's and archive's URL (in batches of about `batch`) when
        the posts cannot be followed from `cursor`, the permalink options changed since
        it, a page with children moved, or the last full read is `resync` s old; else None.

        Raises SourceError when the database cannot be reached or refuses.
        """
        state = _state(cursor)
        with self._lookups() as look:
            links = look.links.signature()
        # A periodic full read waits for a scan that began in the current second: one
        # read later would find saves made after the scan began, whose lastmod the
        # ledger holds back to the scan's time.
        due = (
            state is None
            or state.links != links
            or self._resync
            or (
                time.time() - state.synced >= self._spec.resync
                and time.time() < math.floor(until) + 1
            )
        )
        if state is not None and state.links != links:
            log.info("wordpress %s: the permalink settings changed", redact(self._spec.dsn))
        taken = self._posts.snapshot(None if due or state is None else state.posts, batch, until)
        if taken is None:
            return None
        self._resync = False
        cursor = _State(taken.cursor, links, time.time()).text()
        return Snapshot(cursor, self._snapshot_rows(taken))

    def _snapshot_rows(self, taken: Snapshot) -> Iterator[ChangeRows]:
        with self._lookups() as look:
            for rows in taken.batches:
                yield ChangeRows.of(self._urls(rows, look))
            self._archives = None
            yield ChangeRows.of(self._archive_changes(look.archives()))

    def _urls(self, rows: ChangeRows, look: Lookups) -> list[ChangeRow]:
        """Return the rows of wp_posts changes as changes of their URLs."""
        found: list[ChangeRow] = []
        language = look.links.language
        for row in rows:
            if row.problem:
                if not row.deleted:
                    found.append(row)  # rejected, with the reason, by the source
                continue
            post = _post(row.url)
            if post is None or post.type not in _TYPES or not post.name:
                continue
            if post.name.endswith(TRASHED):
                if not row.deleted:
                    continue  # trashed while still published: never a page
                post = post.untrashed()
            meta = {key: value for key, value in row.meta.items() if key != "modified"}
            meta["language"] = language
            if post.type == "page":
                meta.pop("published", None)  # a page is no article of the feeds or news
            changed = row.changed_at
            if not row.deleted:
                # lastmod is WordPress's own time of the save.
                changed = row.meta.get("modified") or changed
            found.append(row._replace(url=look.link(post), changed_at=changed, meta=meta))
            if row.deleted and post.type == "page" and look.has_children(post.id):
                self._resync = True  # its children's paths hold its old slug
        return found

    def _archive_changes(self, archives: set[str]) -> list[ChangeRow]:
        """Return the archives that came or went since the last call (all, the first time)."""
        before, self._archives = self._archives, archives
        gone = sorted(before - archives) if before is not None else []
        came = sorted(archives - before) if before is not None else sorted(archives)
        return [ChangeRow(url, True, None, None, {}, None, url) for url in gone] + [
            ChangeRow(url, False, None, _ARCHIVE, {}, None, url) for url in came
        ]

    def held(self) -> bool:
        """True when the posts reader held a later commit back or a full read is due."""
        return self._posts.held() or self._resync

    def check(self, cursor: str | None) -> None:
        """Raise SourceError when the site cannot be followed from `cursor`."""
        state = _state(cursor)
        self._posts.check(state.posts if state else None)
        with self._lookups() as look:
            if not look.links.home:
                raise SourceError(
                    f"wordpress {redact(self._spec.dsn)}: no 'home' option in "
                    f"{self._spec.table_prefix}options (is table_prefix right?)"
                )

    def wait(self, timeout: float) -> bool:
        """Return True when wp_posts changes within `timeout` s (binlog mode only)."""
        return self._posts.wait(timeout)

    def backlog(self, cursor: str | None) -> int | None:
        """Return None: not counted."""
        return None

    def live_urls(self, query: str) -> Iterator[str]:
        """Yield the first column of `query`; raises SourceError."""
        return self._posts.live_urls(query)

    def close(self) -> None:
        """Close connections; the archives are given again by the next read."""
        self._posts.close()
        self._archives = None


def _post(key: str) -> Post | None:
    """Return the post of a row key (see _KEY), None for one that is no key."""
    parts = key.split("|", 5)
    try:
        return Post(int(parts[0]), parts[1], int(parts[2]), int(parts[3]), parts[4], parts[5])
    except (ValueError, IndexError):
        return None


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)
