"""Configuration errors: exit 2 with one line naming the file and the dotted key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import page, published, run_cli, write_atomic

SITE = 'base_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
SITEMAP = "max_urls = 1000\n"
SOURCE = 'type = "directory"\nroot = "site"\n'


def doc(
    site: str = SITE, sitemap: str = SITEMAP, source: str | None = SOURCE, top: str = ""
) -> str:
    """Return a config document; each argument is the body of its table."""
    text = f"{top}[site]\n{site}\n[sitemap]\n{sitemap}\n"
    if source is not None:
        text += f"[[source]]\n{source}\n"
    return text


# (id, config text, dotted key, words the message must hold after the key)
CASES = [
    ("unknown-table", doc(top='[sites]\nbase_url = "x"\n'), "sites", "unknown key"),
    # A misspelled table is named, not the keys it would have given: not "site.base_url:
    # is required".
    (
        "misspelled-site-table",
        doc(site=SITE).replace("[site]", "[sitee]"),
        "sitee",
        "unknown key (did you mean site?)",
    ),
    ("misspelled-feed-table", doc(top='[feeds]\ntitle = "x"\n'), "feeds", "did you mean feed?"),
    ("unknown-site-key", doc(site=SITE + 'base_ur = "x"\n'), "site.base_ur", "unknown key"),
    ("unknown-sitemap-key", doc(sitemap="max_url = 5\n"), "sitemap.max_url", "unknown key"),
    ("unknown-source-key", doc(source=SOURCE + 'rooot = "x"\n'), "source[0].rooot", "unknown key"),
    (
        "unknown-second-source-key",
        doc(source=SOURCE + '\n[[source]]\ntype = "urllist"\npath = "u.txt"\nroot = "x"\n'),
        "source[1].root",
        "unknown key",
    ),
    (
        "max-urls-string",
        doc(sitemap='max_urls = "10"\n'),
        "sitemap.max_urls",
        "must be an integer, got a string",
    ),
    (
        "gzip-int",
        doc(sitemap="gzip = 1\n"),
        "sitemap.gzip",
        "must be true or false, got an integer",
    ),
    (
        "include-string",
        doc(source=SOURCE + 'include = "x"\n'),
        "source[0].include",
        "must be a list of strings",
    ),
    (
        "max-urls-zero",
        doc(sitemap="max_urls = 0\n"),
        "sitemap.max_urls",
        "must be at least 1, got 0",
    ),
    (
        "max-urls-over",
        doc(sitemap="max_urls = 50001\n"),
        "sitemap.max_urls",
        "must be at most 50000, got 50001",
    ),
    (
        "max-bytes-over",
        doc(sitemap="max_bytes = 60000000\n"),
        "sitemap.max_bytes",
        "must be at most 52428800, got 60000000",
    ),
    (
        "gzip-level-over",
        doc(sitemap="gzip = true\ngzip_level = 10\n"),
        "sitemap.gzip_level",
        "must be at most 9, got 10",
    ),
    (
        "url-prefix-no-slashes",
        doc(source=SOURCE + 'url_prefix = "blog"\n'),
        "source[0].url_prefix",
        "must start and end with '/'",
    ),
    (
        "base-url-ftp",
        doc(site=SITE.replace("https://example.com/", "ftp://example.com/")),
        "site.base_url",
        "scheme 'ftp' is not http or https",
    ),
    (
        "output-url-other-host",
        doc(site=SITE + 'output_url = "https://cdn.example.net/maps/"\n'),
        "site.output_url",
        "https://cdn.example.net/maps/",
    ),
    (
        "missing-base-url",
        doc(site='output_dir = "out"\nstate_dir = "state"\n'),
        "site.base_url",
        "is required",
    ),
    (
        "missing-output-dir",
        doc(site='base_url = "https://example.com/"\nstate_dir = "state"\n'),
        "site.output_dir",
        "is required",
    ),
    ("missing-root", doc(source='type = "directory"\n'), "source[0].root", "is required"),
    (
        "misspelled-required-key",
        doc(site='base_url = "https://example.com/"\noutput_dir = "out"\nstat_dir = "state"\n'),
        "site.state_dir",
        "is required (stat_dir is given: misspelled?)",
    ),
    (
        "misspelled-key",
        doc(sitemap="max_url = 5\n"),
        "sitemap.max_url",
        "unknown key (did you mean max_urls?)",
    ),
    ("no-source", doc(source=None), "source", "at least one [[source]]"),
    (
        "unknown-source-type",
        doc(source='type = "sitemapz"\nroot = "site"\n'),
        "source[0].type",
        "unknown source type 'sitemapz'",
    ),
    (
        "source-type-misspelled",
        doc(source='type = "url-list"\npath = "u.txt"\n'),
        "source[0].type",
        "unknown source type 'url-list' (did you mean urllist? known:",
    ),
    (
        "source-name-empty",
        doc(source=SOURCE + 'name = " "\n'),
        "source[0].name",
        "must not be empty",
    ),
    (
        "duplicate-unnamed-sources",
        doc(source=SOURCE + "\n[[source]]\n" + SOURCE),
        "source[1].name",
        "source[0]'s too (a source not named is named after what it reads: give each a `name`)",
    ),
    (
        "duplicate-source-names",
        doc(
            source=SOURCE + 'name = "pages"\n\n[[source]]\ntype = "urllist"\npath = "u.txt"\n'
            'name = "pages"\n'
        ),
        "source[1].name",
        "duplicate source name 'pages'",
    ),
    (
        "invalid-ignore-regex",
        doc(source=SOURCE + 'ignore = ["<!-- build: .* -->", "csrf=(["]\n'),
        "source[0].ignore[1]",
        "not a valid regular expression",
    ),
    ("feed-no-title", doc(top="[feed]\n"), "feed.title", "is required"),
    (
        "feed-window-words",
        doc(top='[feed]\ntitle = "T"\nmin_window = "two days"\n'),
        "feed.min_window",
        "must be seconds or a duration like '48h'",
    ),
    (
        "feed-name-taken",
        doc(top='[feed]\ntitle = "T"\natom = "sitemap.xml"\n'),
        "feed.atom",
        "already used by sitemap.index",
    ),
    (
        "news-old",
        doc(top='[news]\npublication_name = "P"\nlanguage = "en"\nmax_age = "72h"\n'),
        "news.max_age",
        "must be from 60s to 48h, got 72h",
    ),
    (
        "news-language",
        doc(top='[news]\npublication_name = "P"\nlanguage = "english"\n'),
        "news.language",
        "must be an ISO 639 code",
    ),
    (
        "indexnow-key-elsewhere",
        doc(top='[indexnow]\nkey = "abcdef123456"\nkey_location = "https://other.org/k.txt"\n'),
        "indexnow.key_location",
        "must be on https://example.com/: IndexNow accepts only URLs on the key file's host",
    ),
    (
        "indexnow-key",
        doc(top='[indexnow]\nkey = "short"\n'),
        "indexnow.key",
        "must be 8 to 128 characters",
    ),
    (
        "websub-no-feed",
        doc(top='[websub]\nhubs = ["https://hub.example.net/"]\n'),
        "websub.hubs",
        "needs a [feed] section",
    ),
    (
        "websub-hub-url",
        doc(top='[feed]\ntitle = "T"\n[websub]\nhubs = ["hub.example.net"]\n'),
        "websub.hubs[0]",
        "must be an absolute http(s) URL",
    ),
    (
        "crawler-regex",
        doc(top='[crawlers]\ngooglebot = "Google(bot"\n'),
        "crawlers.googlebot",
        "not a valid regular expression",
    ),
    (
        "content-selector",
        doc(source=SOURCE + 'content_selector = "div > [p"\n'),
        "source[0].content_selector",
        "not a CSS selector",
    ),
    (
        "fingerprint",
        doc(source=SOURCE + 'fingerprint = "bytes"\n'),
        "source[0].fingerprint",
        "must be one of content, page",
    ),
    (
        "changelog-table-and-query",
        doc(
            source='type = "changelog"\ndsn = "sqlite:///cms.db"\ntable = "t"\nquery = "SELECT 1"\n'
        ),
        "source[0].query",
        "give either table or query",
    ),
    (
        "changelog-column-key",
        doc(source='type = "changelog"\ndsn = "sqlite:///cms.db"\n[source.columns]\nurll = "u"\n'),
        "source[0].columns.urll",
        "unknown key",
    ),
    (
        "changelog-wordpress-posts-by-id",
        doc(
            source='type = "changelog"\ndsn = "mysql+pymysql://wp@db/wp"\n'
            "query = \"SELECT ID AS id, CONCAT('/?p=', ID) AS url, post_modified_gmt AS "
            "changed_at, post_status <> 'publish' AS gone FROM wp_posts\"\n"
            '[source.columns]\ndeleted = "gone"\n'
        ),
        "source[0].query",
        "never reads a post again, so every edit, unpublish and deletion is missed. Follow the "
        'site with preset = "wordpress", the table itself with mode = "binlog"',
    ),
    (
        "changelog-wordpress-posts-table",
        doc(
            source='type = "changelog"\ndsn = "mysql+pymysql://wp@db/wp"\ntable = "wp_posts"\n'
            '[source.columns]\nid = "ID"\nurl_template = "/{post_name}/"\n'
        ),
        "source[0].table",
        "reads WordPress's posts table as a change log",
    ),
    (
        "changelog-mode",
        doc(source='type = "changelog"\ndsn = "mysql://wp@db/wp"\nmode = "stream"\n'),
        "source[0].mode",
        "must be one of table, binlog, logical",
    ),
    (
        "changelog-stream-needs-table",
        doc(source='type = "changelog"\ndsn = "mysql://wp@db/wp"\nmode = "binlog"\n'),
        "source[0].table",
        "mode 'binlog' needs the table to follow",
    ),
    (
        "wordpress-table",
        doc(
            source='type = "changelog"\npreset = "wordpress"\ndsn = "mysql://wp@db/wp"\n'
            'table = "wp_posts"\n'
        ),
        "source[0].table",
        "unknown key",
    ),
    (
        "wordpress-mode",
        doc(
            source='type = "changelog"\npreset = "wordpress"\ndsn = "mysql://wp@db/wp"\n'
            'mode = "logical"\n'
        ),
        "source[0].mode",
        "must be one of binlog, poll",
    ),
    (
        "wordpress-prefix",
        doc(
            source='type = "changelog"\npreset = "wordpress"\ndsn = "mysql://wp@db/wp"\n'
            'table_prefix = "wp-"\n'
        ),
        "source[0].table_prefix",
        "must be letters, digits and _",
    ),
    (
        "changelog-live-value",
        doc(
            source='type = "changelog"\ndsn = "mysql://wp@db/wp"\nmode = "binlog"\n'
            'table = "a"\nlive = { status = 1.5 }\n'
        ),
        "source[0].live.status",
        "must be a value (text or integer) or a list of them",
    ),
    (
        "changelog-column-twice",
        doc(
            source='type = "changelog"\ndsn = "mysql://wp@db/wp"\nmode = "binlog"\n'
            'table = "a"\ntitle = "t"\n[source.columns]\ntitle = "t"\n'
        ),
        "source[0].title",
        "given here and as columns.title: keep one",
    ),
    (
        "changelog-slot-name",
        doc(
            source='type = "changelog"\ndsn = "postgresql://db/cms"\nmode = "logical"\n'
            'table = "a"\nslot = "Bad-Slot"\n'
        ),
        "source[0].slot",
        "must be lower case letters, digits and _",
    ),
    (
        "indexnow-key-below-root",
        doc(
            site=SITE + 'output_url = "https://example.com/sitemaps/"\n',
            top='[indexnow]\nkey = "0123456789abcdef"\n',
        ),
        "indexnow.key_location",
        "is required when output_url is not the site root",
    ),
    (
        "only-an-access-log",
        doc(source='type = "accesslog"\npath = "access.log"\n'),
        "source",
        "giving URLs is required",
    ),
    # Values that used to be accepted and then misbehaved.
    (
        "base-url-host-space",
        doc(site=SITE.replace("example.com", "exa mple.com")),
        "site.base_url",
        "host 'exa mple.com' is not a valid host name",
    ),
    (
        "base-url-port-0",
        doc(site=SITE.replace("example.com", "example.com:0")),
        "site.base_url",
        "port 0 is not a port",
    ),
    (
        "base-url-query",
        doc(site=SITE.replace("example.com/", "example.com/?lang=en")),
        "site.base_url",
        "must not have a query or fragment",
    ),
    (
        "base-url-fragment",
        doc(site=SITE.replace("example.com/", "example.com/#top")),
        "site.base_url",
        "must not have a query or fragment",
    ),
    (
        "index-newline",
        doc(sitemap='index = "site\\nmap.xml"\n'),
        "sitemap.index",
        "must be a file name of letters, digits",
    ),
    (
        "feed-file-space",
        doc(top='[feed]\ntitle = "T"\natom = "my feed.xml"\n'),
        "feed.atom",
        "must be a file name of letters, digits",
    ),
    (
        "follow-symlinks-string",
        doc(source=SOURCE + 'follow_symlinks = "yes"\n'),
        "source[0].follow_symlinks",
        "must be true or false, got a string",
    ),
    (
        "url-prefix-dot-dot",
        doc(source=SOURCE + 'url_prefix = "/blog/../"\n'),
        "source[0].url_prefix",
        "must not hold '.' or '..' segments",
    ),
    (
        "url-prefix-escaped-dot-dot",
        doc(source=SOURCE + 'url_prefix = "/%2e%2e/"\n'),
        "source[0].url_prefix",
        "must not hold '.' or '..' segments",
    ),
    (
        "state-dir-in-content-root",
        doc(site=SITE.replace('state_dir = "state"', 'state_dir = "site/.state"')),
        "site.state_dir",
        "must not be inside source[0].root",
    ),
    (
        "state-dir-is-content-root",
        doc(site=SITE.replace('state_dir = "state"', 'state_dir = "site"')),
        "site.state_dir",
        "the ledger would be on the web",
    ),
    (
        "output-dir-is-root-listing-xml",
        doc(
            site=SITE.replace('output_dir = "out"', 'output_dir = "site"'),
            source=SOURCE + 'include = ["**/*.html", "**/*.xml"]\n',
        ),
        "site.output_dir",
        "include patterns match sitemapd's own 'sitemap.xml'",
    ),
    (
        "output-dir-inside-root-listing-all",
        doc(
            site=SITE.replace('output_dir = "out"', 'output_dir = "site/maps"'),
            source=SOURCE + 'include = ["**/*"]\n',
        ),
        "site.output_dir",
        "sitemapd's own 'maps/sitemap.xml': it would be listed as a page",
    ),
    (
        "output-dir-is-root-listing-the-key-file",
        doc(
            site=SITE.replace('output_dir = "out"', 'output_dir = "site"'),
            source=SOURCE + 'include = ["**/*.html", "*.txt"]\n',
            top='[indexnow]\nkey = "0123456789abcdef"\n',
        ),
        "site.output_dir",
        "'0123456789abcdef.txt'",
    ),
]


def check_config(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("check-config", "-c", str(config), *extra, check=False)


def assert_config_error(
    result: subprocess.CompletedProcess[str], config: Path, prefix: str, words: str
) -> None:
    """Exit 2 and exactly one stderr line: `sitemapd: configuration error: FILE: PREFIX...`."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    head = f"sitemapd: configuration error: {config}: {prefix}"
    assert lines[0].startswith(head), lines[0]
    assert words in lines[0][len(head) :], lines[0]


@pytest.mark.parametrize(
    ("text", "key", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_config_exits_2_naming_file_and_key(
    tmp_path: Path, text: str, key: str, words: str
) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text(text)
    (tmp_path / "site").mkdir()
    assert_config_error(check_config(config), config, f"{key}: ", words)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [c[1:] for c in CASES if c[0] in ("unknown-source-key", "max-urls-over", "no-source")],
)
def test_build_refuses_a_bad_config_and_touches_nothing(
    tmp_path: Path, text: str, key: str, words: str
) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text(text)
    (tmp_path / "site").mkdir()
    write_atomic(tmp_path / "site" / "a.html", page("A"))
    result = run_cli("build", "-c", str(config), check=False)
    assert_config_error(result, config, f"{key}: ", words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "sitemapd.toml"]


def test_malformed_toml_names_the_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text('[site]\nbase_url = "https://example.com/"\noutput_dir = out\n')
    result = check_config(config)
    assert_config_error(result, config, "not valid TOML", "line 3")


def test_a_config_not_in_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_bytes('[site]\nbase_url = "https://example.com/"\n# café\n'.encode("cp1252"))
    result = check_config(config)
    assert_config_error(result, config, "not UTF-8", "line 3: byte 0xe9")


def test_a_utf8_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    # Notepad's UTF-8: a byte order mark first.
    config = tmp_path / "sitemapd.toml"
    text = '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "st"\n'
    (tmp_path / "site").mkdir()
    config.write_bytes(
        b"\xef\xbb\xbf" + (text + '[[source]]\ntype = "directory"\nroot = "site"\n').encode()
    )
    result = check_config(config)
    assert result.returncode == 0, result.stderr


def test_missing_config_file(tmp_path: Path) -> None:
    config = tmp_path / "nowhere.toml"
    for command in ("check-config", "build"):
        result = run_cli(command, "-c", str(config), check=False)
        assert_config_error(result, config, "no such file", "")
        assert result.stderr == f"sitemapd: configuration error: {config}: no such file\n"


def test_valid_config_prints_ok(tmp_path: Path) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        doc(
            sitemap="max_urls = 50000\nmax_bytes = 52428800\ngzip = true\ngzip_level = 9\n"
            'index = "maps.xml"\n',
            source=SOURCE + 'url_prefix = "/docs/"\nignore = ["nonce=\\\\w+"]\n\n'
            '[[source]]\ntype = "urllist"\npath = "urls.txt"\n',
        )
    )
    result = check_config(config)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ok: {config}: 2 sources, index maps.xml\n"
    # Neither the folder nor the list is there yet: said, not refused (a deploy makes them).
    assert result.stderr.splitlines() == [
        f"sitemapd: warning: source[0].root: {tmp_path / 'site'} is not a folder (yet): "
        "`build` fails",
        f"sitemapd: warning: source[1].path: {tmp_path / 'urls.txt'} is not a file (yet): "
        "`build` fails",
    ]
    (tmp_path / "site").mkdir()
    (tmp_path / "urls.txt").write_text("https://example.com/a.html\n")
    result = check_config(config)
    assert (result.returncode, result.stderr) == (0, "")
    # A path in base_url places no page: said, with what does.
    config.write_text(
        config.read_text().replace("https://example.com/", "https://example.com/blog/")
    )
    result = check_config(config)
    assert result.returncode == 0
    assert result.stderr == (
        "sitemapd: warning: site.base_url: its path /blog/ is not used: URLs are "
        "https://example.com/ and a file's path; for pages served under /blog/, set url_prefix "
        "on their source\n"
    )


@pytest.mark.parametrize(
    ("output_dir", "source"),
    [
        ("site", ""),  # the default include lists pages only
        ("site", 'include = ["**/*"]\nexclude = ["sitemap*.xml", "sitemap*.xml.gz"]\n'),
        ("site/maps", 'include = ["**/*"]\nexclude = ["maps/**"]\n'),
    ],
)
def test_sitemaps_may_live_among_pages_that_do_not_list_them(
    tmp_path: Path, output_dir: str, source: str
) -> None:
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        doc(
            site=SITE.replace('output_dir = "out"', f'output_dir = "{output_dir}"'),
            source=SOURCE + source,
        )
    )
    (tmp_path / "site").mkdir()
    result = check_config(config)
    assert result.returncode == 0, result.stderr


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_atomic(project / "site" / "a.html", page("A"))
    write_atomic(project / "site" / "b" / "index.html", page("B"))
    (project / "robots.txt").write_text("User-agent: *\nDisallow: /b/\n")
    config = project / "sitemapd.toml"
    config.write_text(doc(site=SITE + 'robots_txt = "robots.txt"\n'))
    # The config named relative to a cwd that is not its folder.
    relative = os.path.relpath(config, elsewhere)
    assert relative == "../project/sitemapd.toml"
    result = subprocess.run(
        [sys.executable, "-m", "sitemapd", "build", "-c", relative],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert list(elsewhere.iterdir()) == []
    assert (project / "state" / "ledger.sqlite3").is_file()
    # robots.txt was found (b/ is disallowed) and received the Sitemap line.
    assert set(published(project / "out")) == {"https://example.com/a.html"}
    assert (
        (project / "robots.txt").read_text().endswith("Sitemap: https://example.com/sitemap.xml\n")
    )
    ok = subprocess.run(
        [sys.executable, "-m", "sitemapd", "check-config", "-c", relative],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.stdout == f"ok: {config}: 1 source, index sitemap.xml\n"
