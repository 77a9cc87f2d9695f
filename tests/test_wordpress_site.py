"""A real WordPress, driven through its own PHP API, followed by `preset = "wordpress"`:
sitemapd lists what WordPress publishes, where WordPress's own sitemap lists it, and only
real edits move a lastmod."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import NS, Site, published, read_xml
from daemon_harness import RunningDaemon, start
from wordpress import WordPress

from sitemapd.core import w3c

NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
# Every published post and page: its permalink, post_modified_gmt and whether a password
# hides it, as WordPress itself tells them.
TRUTH = """
$out = array();
$posts = get_posts(array('post_type' => array('post', 'page'), 'post_status' => 'publish',
    'numberposts' => -1, 'suppress_filters' => true));
foreach ($posts as $post) {
    $out[] = array(get_permalink($post), $post->post_modified_gmt, $post->post_password !== '');
}
echo json_encode($out);
"""
# Posts and pages titled with `$tag`: each run of the test adds its own to the site.
CREATE = """
$world = term_exists('World', 'category') ?: wp_insert_term('World', 'category');
$europe = term_exists('Europe', 'category')
    ?: wp_insert_term('Europe', 'category', array('parent' => $world['term_id']));
function publish($title, $extra = array()) {
    global $tag;
    return wp_insert_post(array_merge(array('post_title' => "$title $tag",
        'post_content' => "$title body", 'post_status' => 'publish'), $extra), true);
}
echo json_encode(array(
    'alpha' => publish('Alpha', array('post_category' => array($europe['term_id']),
        'tags_input' => array('climate'))),
    'beta' => publish('Beta'),
    'gamma' => publish('Gamma'),
    'doomed' => publish('Doomed'),
    'secret' => publish('Secret', array('post_password' => 'letmein')),
    'team' => publish('Team', array('post_type' => 'page', 'post_parent' => 2)),
));
"""
EDIT = """
wp_update_post(array('ID' => $ids['alpha'], 'post_content' => 'Alpha body, corrected'));
wp_update_post(array('ID' => $ids['beta']));  // saved without a change
wp_trash_post($ids['doomed']);
wp_update_post(array('ID' => $ids['gamma'], 'post_status' => 'draft'));
// A page under a nested page.
wp_insert_post(array('post_type' => 'page', 'post_title' => "People $tag",
    'post_status' => 'publish',
    'post_content' => 'Everyone', 'post_parent' => $ids['team']));
// A widget on every page: kept in wp_options, it changes no post.
update_option('widget_block', array(2 => array('content' => '<p>Subscribe!</p>'),
    '_multiwidget' => 1));
$sidebars = get_option('sidebars_widgets', array());
$sidebars['sidebar-1'] = array('block-2');
update_option('sidebars_widgets', $sidebars);
"""
DATE_GMT = "echo json_encode(get_post($id)->post_date_gmt);"
PERMALINKS = """
global $wp_rewrite;
update_option('category_base', $category_base ?? '');
update_option('tag_base', $tag_base ?? '');
$wp_rewrite->set_permalink_structure($structure);
flush_rewrite_rules(false);
"""


def truth(wp: WordPress) -> tuple[dict[str, str], set[str]]:
    """Return {permalink: lastmod} of the posts and pages crawlers may read, and the
    permalinks of those a password hides."""
    rows: list[list[Any]] = wp.php(TRUTH)
    open_ = {
        url: w3c.format_epoch(_epoch(modified)) for url, modified, hidden in rows if not hidden
    }
    return open_, {url for url, _, hidden in rows if hidden}


def _epoch(gmt: str) -> float:
    return w3c.to_epoch(w3c.parse(gmt.replace(" ", "T") + "+00:00"))


def news_item(site: Site, loc: str) -> tuple[str, str, str] | None:
    """Return (publication date, title, language) of `loc` in the news sitemap."""
    for url in read_xml(site.out / "news-sitemap.xml").iter(f"{NS}url"):
        if url.findtext(f"{NS}loc") == loc:
            return (
                url.findtext(f".//{NEWS}publication_date") or "",
                url.findtext(f".//{NEWS}title") or "",
                url.findtext(f".//{NEWS}language") or "",
            )
    return None


def wordpress_sitemap(wp: WordPress) -> set[str]:
    """Return the post, page and archive URLs /wp-sitemap.xml lists (not its users)."""
    found = wp.sitemap_urls()
    return {url for kind, urls in found.items() if kind != "users" for url in urls}


def converge(daemon: RunningDaemon, site: Site, wp: WordPress, what: str) -> dict[str, str]:
    """Wait until sitemapd lists exactly WordPress's open posts and pages and its
    archives; return {loc: lastmod} of the posts and pages."""
    posts, hidden = truth(wp)
    archives = wordpress_sitemap(wp) - set(posts) - hidden

    def done() -> bool:
        listed = published(site.out)
        assert not any("__trashed" in loc for loc in listed), listed
        return set(listed) == set(posts) | archives

    daemon.wait_until(done, 30, what)
    listed = published(site.out)
    # What WordPress's own sitemap lists, less the password-protected posts.
    assert set(listed) == wordpress_sitemap(wp) - hidden
    return {loc: lastmod for loc, lastmod in listed.items() if loc in posts}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["binlog", "poll"])
def test_a_wordpress_site_is_followed_as_wordpress_publishes_it(
    tmp_path: Path, wordpress: WordPress, mode: str
) -> None:
    wp = wordpress
    wp.php(PERMALINKS, structure="")  # as WordPress installs itself
    site = Site(tmp_path)
    site.config.write_text(
        f'[site]\nbase_url = "{wp.home}/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n"
        '[news]\npublication_name = "Test"\nlanguage = "de"\n'
        f'[[source]]\ntype = "changelog"\npreset = "wordpress"\ndsn = "{wp.dsn()}"\n'
        f'mode = "{mode}"\npoll_interval = 0.2\nresync_interval = 2\n'
    )
    ids: dict[str, int] = wp.php(CREATE, tag=mode)
    daemon = start(site)
    try:
        # Plain permalinks: ?p=ID and ?page_id=ID.
        first = converge(daemon, site, wp, "the new posts at plain links")
        assert f"{wp.home}/?p={ids['alpha']}" in first
        posts, _ = truth(wp)
        assert first == posts  # every lastmod is its post_modified_gmt
        # Posts are articles with their title, post_date_gmt and the site's language.
        alpha_news = news_item(site, f"{wp.home}/?p={ids['alpha']}")
        assert alpha_news[1:] == (f"Alpha {mode}", "en")
        assert alpha_news[0] == w3c.format_epoch(_epoch(wp.php(DATE_GMT, id=ids["alpha"])))
        assert news_item(site, f"{wp.home}/?page_id={ids['team']}") is None  # a page
        assert "wordpress:mysql://sitemapd@127.0.0.1" in site.cli("status").stdout
        assert "following (cursor" in site.cli("status").stdout

        wp.php(PERMALINKS, structure="/%year%/%monthnum%/%postname%/")
        dated = converge(daemon, site, wp, "the posts at dated links")
        # A permalink change moves URLs, not lastmods.
        assert sorted(dated.values()) == sorted(first.values())

        # The next saves land in a later second than the posts' creation.
        wp.php("sleep(1);")
        wp.php(EDIT, ids=ids, tag=mode)
        edited = converge(daemon, site, wp, "the edits")
        posts, _ = truth(wp)
        beta = next(loc for loc in edited if loc.endswith(f"/beta-{mode}/"))
        assert edited == posts | {beta: dated[beta]}
        moved = {loc for loc in edited if dated.get(loc) not in (None, edited[loc])}
        alpha = next(loc for loc in edited if loc.endswith(f"/alpha-{mode}/"))
        assert moved == {alpha}  # the one real edit; not the save without a change
        assert any(loc.endswith(f"/sample-page/team-{mode}/people-{mode}/") for loc in edited)

        wp.php(PERMALINKS, structure="/%category%/%postname%/")
        by_category = converge(daemon, site, wp, "the posts at category links")
        assert f"{wp.home}/world/europe/alpha-{mode}/" in by_category
        # A URL that moved takes its post's post_modified_gmt: Beta's save shows now.
        assert by_category == truth(wp)[0]

        # A new post's categories are written after its row: its URL has them.
        wp.php(
            "wp_insert_post(array('post_title' => \"Delta $tag\", 'post_status' => 'publish',"
            " 'post_content' => 'Delta', 'post_category' => array($cat)));",
            tag=mode,
            cat=int(wp.php("echo json_encode(get_cat_ID('Europe'));")),
        )
        converge(daemon, site, wp, "a new post at its category link")
        assert f"{wp.home}/world/europe/delta-{mode}/" in published(site.out)

        # Categories live outside wp_posts: the next full read moves the post.
        wp.php("wp_set_post_categories($id, array(1));", id=ids["alpha"])
        converge(daemon, site, wp, "the post in another category")
        assert f"{wp.home}/uncategorized/alpha-{mode}/" in published(site.out)

        # PATHINFO links without a trailing slash, and archives under bases of their own.
        structure = "/index.php/archives/%author%/%day%-%hour%%minute%%second%-%post_id%"
        wp.php(PERMALINKS, structure=structure, category_base="topics", tag_base="labels")
        converge(daemon, site, wp, "PATHINFO links")
        assert f"{wp.home}/index.php/archives/topics/uncategorized" in published(site.out)

        # Deleted outright, not trashed: polling sees it at the next full read.
        wp.php("wp_delete_post($id, true);", id=ids["beta"])
        converge(daemon, site, wp, "the post deleted")
    finally:
        assert daemon.stop() == 0
    with sqlite3.connect(site.state / "ledger.sqlite3") as ledger:
        trashed = ledger.execute("SELECT count(*) FROM urls WHERE loc LIKE '%trashed%'")
        assert trashed.fetchone() == (0,)  # never published, not even for a moment
        # Nor the new post at the default category's link, before its own was written.
        early = ledger.execute("SELECT count(*) FROM urls WHERE loc LIKE '%/uncategorized/delta%'")
        assert early.fetchone() == (0,)
    ledger.close()
