"""WordPress's permalinks as sitemapd makes them from the site's options (the real
WordPress test checks them against WordPress itself; these are the corners)."""

from __future__ import annotations

from pathlib import Path

from sitemapd.changelog.permalink import Links, Post
from sitemapd.config import ChangelogSource, load

HOME = "https://example.com"
POST = Post(7, "post", 0, 3, "2024-02-09 08:05:03", "hello")
PAGE = Post(9, "page", 2, 3, "2024-02-09 08:05:03", "team")


def links(**options: str) -> Links:
    return Links.of({"home": HOME + "/", **options})


def test_plain_links_are_queries() -> None:
    plain = links()
    assert plain.post(POST, "news", "ann") == f"{HOME}/?p=7"
    assert plain.page(PAGE, "about/team") == f"{HOME}/?page_id=9"
    assert plain.term("category", 4, "news/world") == f"{HOME}/?cat=4"
    assert plain.term("post_tag", 5, "climate") == f"{HOME}/?tag=climate"
    assert plain.home_page() == f"{HOME}/"


def test_every_tag_of_a_structure() -> None:
    structure = (
        "/%year%/%monthnum%/%day%/%hour%%minute%%second%/%category%/%author%/%post_id%-%postname%/"
    )
    dated = links(permalink_structure=structure)
    assert dated.post(POST, "news/world", "ann") == (
        f"{HOME}/2024/02/09/080503/news/world/ann/7-hello/"
    )
    assert dated.page(PAGE, "about/team") == f"{HOME}/about/team/"
    assert dated.term("category", 4, "news/world") == f"{HOME}/category/news/world/"


def test_a_structure_without_a_trailing_slash_and_with_a_front() -> None:
    archives = links(permalink_structure="/archives/%post_id%", tag_base="labels")
    assert archives.post(POST, "", "") == f"{HOME}/archives/7"
    assert archives.page(PAGE, "team") == f"{HOME}/team"
    assert archives.term("post_tag", 5, "climate") == f"{HOME}/archives/labels/climate"
    assert archives.term("category", 4, "news") == f"{HOME}/archives/category/news"


def test_the_front_page_is_the_home_page() -> None:
    front = links(permalink_structure="/%postname%/", show_on_front="page", page_on_front="9")
    assert front.page(PAGE, "team") == f"{HOME}/"


def test_language_and_signature() -> None:
    assert links().language == "en"
    assert links(WPLANG="de_DE").language == "de"
    assert links(WPLANG="zh_TW").language == "zh-tw"
    assert links().signature() != links(permalink_structure="/%postname%/").signature()
    assert links().signature() == links().signature()


def test_the_preset_needs_only_a_dsn(tmp_path: Path) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "changelog"\npreset = "wordpress"\n'
        'dsn = "mysql://sitemapd:pw@db/wordpress"\ntable_prefix = "blog_"\n'
    )
    (source,) = load(config).sources
    assert isinstance(source, ChangelogSource)
    spec = source.spec
    assert (spec.preset, spec.mode, spec.table_prefix, spec.resync) == (
        "wordpress",
        "binlog",
        "blog_",
        900.0,
    )
