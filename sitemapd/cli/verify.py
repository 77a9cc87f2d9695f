"""`sitemapd verify`: re-read the published files as a crawler would and list problems.

Checks: well-formed documents of the right kind, the protocol's limits, URL rules,
lastmod format, index lastmod equal to the newest member of each shard, no URL in two
shards, no stray shard files, and the robots.txt `Sitemap:` line. A partition's URLs
must be its own; given every partition's configuration, no URL may be in two. An S3
target is read from the bucket.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

from sitemapd.config import Config
from sitemapd.config.feeds import MAX_NEWS_AGE
from sitemapd.core import w3c
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL, SitemapdError
from sitemapd.ledger.readonly import open_readonly
from sitemapd.publish import robots
from sitemapd.publish.names import OutputNames
from sitemapd.publish.partition import partition_of
from sitemapd.publish.s3store import S3Store
from sitemapd.render.news import MAX_NEWS_ITEMS, NEWS_NS
from sitemapd.render.sitemapfile import NS, CountingReader, entries, open_sitemap, root_tag
from sitemapd.status import problems
from sitemapd.status import report as status

_LASTMOD = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\Z", re.ASCII)
_SHOWN = 20  # problems of one kind listed per file before summarising
# Findings that break no rule (a valid lastmod in another form than sitemapd writes) start
# with this; they do not make `verify` fail.
NOTE = "note: "
# Findings that break no rule but mislead crawlers (another sitemap of the site named in
# robots.txt) start with this; they do not make `verify` fail either.
WARNING = "warning: "
NEWS = f"{{{NEWS_NS}}}"


def verify_all(config: Config, others: Sequence[Config] = ()) -> list[str]:
    """Return every problem in the published sitemaps of `config` and of the `others`,
    the other partitions of the same site: together, no URL may be listed twice."""
    seen: set[bytes] = set()
    problems: list[str] = []
    configs = [config, *others]
    for each in configs:
        problems += _verify_target(each, seen)
    if others:
        problems += _partition_problems(configs)
    return problems


def _partition_problems(configs: list[Config]) -> list[str]:
    """Return what keeps `configs` from being all the partitions of one site, once each."""
    found = [c.site.partition for c in configs]
    counts = {p.total for p in found if p is not None}
    if None in found or len(counts) != 1:
        return ["the configurations given are not partitions i/K of one K"]
    (count,) = counts
    numbers = sorted(p.number for p in found if p is not None)
    if numbers != list(range(1, count + 1)):
        return [f"partitions given: {numbers}; a site of {count} partitions needs each once"]
    return []


def _verify_target(config: Config, seen: set[bytes]) -> list[str]:
    """Return the problems of one target: read from the bucket into a temp folder first."""
    target = config.publish.s3
    if target is None:
        return verify(config, seen)
    with tempfile.TemporaryDirectory(prefix="sitemapd-verify-") as folder:
        local = Path(folder)
        robots_txt = _download(config, local)
        site = config.site._replace(output_dir=local, robots_txt=robots_txt)
        return [
            line.replace(folder + "/", target.url)
            for line in verify(config._replace(site=site), seen)
        ]


def _download(config: Config, folder: Path) -> Path | None:
    """Copy the published files of `config`'s bucket into `folder`; return where its
    robots.txt went (None when it keeps none). Raises PublishError."""
    target = config.publish.s3
    assert target is not None
    store = S3Store(target)
    store.prepare(write=False)
    names = OutputNames(config)
    for name in store.names():
        if names.is_output(name):
            (folder / name).write_bytes(store.read(store.key(name)))
    if target.robots_key is None:
        return None
    robots_txt = folder / ".robots.txt"
    robots_txt.write_bytes(store.read(target.robots_key))
    return robots_txt


def verify(config: Config, seen: set[bytes] | None = None) -> list[str]:
    """Return every problem found in the sitemaps published in output_dir (empty when all
    is well); `seen` carries the URLs of other partitions already checked."""
    site, limits = config.site, config.sitemap
    index = site.output_dir / limits.index_name
    if not index.is_file():
        return [f"{index}: missing"]
    problems: list[str] = []
    try:
        if root_tag(index) != f"{NS}sitemapindex":
            return [f"{index}: document element is not a sitemapindex"]
        with open_sitemap(index) as stream:
            shards = list(entries(stream, str(index)))
    except SitemapdError as exc:
        return [str(exc)]
    if not shards:
        problems.append(f"{index}: names no sitemap (no URL is live)")
    seen = set() if seen is None else seen
    named = set()
    names = OutputNames(config)
    for entry in shards:
        if not entry.loc.startswith(site.output_url):
            problems.append(f"{index}: {entry.loc} is not under {site.output_url}")
            continue
        name = entry.loc[len(site.output_url) :]
        named.add(name)
        if names.is_news(name):
            problems += _verify_news(site.output_dir / name, config)
        else:
            problems += _verify_shard(site.output_dir / name, entry.lastmod, config, seen)
    if config.ledger_path.exists():
        problems += _ledger_problems(
            config.ledger_path, config.site.origin.root, config.sitemap.alternates
        )
    for path in sorted(site.output_dir.iterdir()):
        if names.is_shard(path.name) and path.name not in named:
            problems.append(f"{path}: shard file not named by the index")
    if site.robots_txt is not None:
        problems += _verify_robots(site.robots_txt, site.output_url + limits.index_name, config)
    return problems


def _verify_shard(
    path: Path, index_lastmod: str | None, config: Config, seen: set[bytes]
) -> list[str]:
    policy = URLPolicy(config.site.origin)
    problems: list[str] = []
    notes: list[str] = []

    def problem(message: str, found: list[str] = problems, prefix: str = "") -> None:
        if len(found) < _SHOWN:
            found.append(f"{prefix}{path}: {message}")
        elif len(found) == _SHOWN:
            found.append(f"{prefix}{path}: more not shown")

    if not path.is_file():
        return [f"{path}: named by the index but missing"]
    try:
        if root_tag(path) != f"{NS}urlset":
            return [f"{path}: document element is not a urlset"]
        count, newest = 0, ""
        with open_sitemap(path) as raw:
            stream = CountingReader(raw)
            for entry in entries(stream, str(path)):  # type: ignore[arg-type]
                count += 1
                try:
                    if policy.normalise(entry.loc) != entry.loc:
                        problem(f"{entry.loc} is not in canonical form")
                except InvalidURL as exc:
                    problem(f"{entry.loc[:200]}: {exc}")
                lastmod = _w3c(entry.lastmod)
                if lastmod is None:
                    problem(f"{entry.loc}: lastmod {entry.lastmod!r} is not a W3C datetime")
                else:
                    newest = max(newest, lastmod)
                    if lastmod != entry.lastmod:
                        problem(
                            f"{entry.loc}: lastmod {entry.lastmod!r} is valid, but not the "
                            "full UTC time sitemapd writes",
                            notes,
                            NOTE,
                        )
                partition = config.site.partition
                if partition is not None:
                    owner = partition_of(entry.loc, partition.total)
                    if owner != partition.number:
                        problem(f"{entry.loc} belongs to partition {owner}/{partition.total}")
                digest = hashlib.blake2b(entry.loc.encode(), digest_size=12).digest()
                if digest in seen:
                    problem(f"{entry.loc} appears in more than one place")
                seen.add(digest)
    except SitemapdError as exc:
        return [str(exc)]
    if count == 0:
        problem("holds no URL")
    if count > config.sitemap.max_urls:
        problem(f"holds {count} URLs (limit {config.sitemap.max_urls})")
    if stream.count > config.sitemap.max_bytes:
        problem(f"is {stream.count} bytes uncompressed (limit {config.sitemap.max_bytes})")
    if _w3c(index_lastmod) != (newest or None):
        problem(f"index lastmod {index_lastmod} differs from newest member {newest}")
    return problems + notes


def _w3c(value: str | None) -> str | None:
    """Return `value` in canonical form, or None when it is no W3C datetime."""
    if value is None:
        return None
    if _LASTMOD.match(value):
        return value
    try:
        return w3c.parse(value)
    except ValueError:
        return None


def _verify_robots(path: Path, index_url: str, config: Config) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [f"{path}: cannot read ({exc.strerror})"]
    found = [f"{WARNING}{line}" for line in status.robots_other_sitemaps(config, data)]
    if robots.with_sitemap_line(data, index_url) != data:
        found.append(f"{path}: does not hold exactly one 'Sitemap: {index_url}' line")
    return found


def _ledger_problems(path: Path, site_root: str, alternates: bool) -> list[str]:
    """Return what the ledger knows is wrong: crawler errors, and broken hreflang groups
    when `alternates` are published."""
    try:
        with contextlib.closing(open_readonly(path)) as conn:
            groups = problems.hreflang_problems(conn, site_root) if alternates else []
            return [
                *(f"crawled: {p['message']}" for p in problems.crawl_problems(conn)),
                *(f"hreflang: {p['message']}" for p in groups),
            ]
    except sqlite3.Error as exc:
        return [f"{path}: cannot read the ledger ({exc})"]


def _verify_news(path: Path, config: Config) -> list[str]:
    """Check a news sitemap: item count, required tags in order, and item age."""
    if not path.is_file():
        return [f"{path}: named by the index but missing"]
    try:
        root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as exc:
        return [f"{path}: not well-formed XML ({exc})"]
    items = root.findall(f"{NS}url")
    problems = []
    if len(items) > MAX_NEWS_ITEMS:
        problems.append(f"{path}: holds {len(items)} news items (limit {MAX_NEWS_ITEMS})")
    max_age = config.news.max_age if config.news else MAX_NEWS_AGE
    oldest = w3c.format_epoch(w3c.to_epoch(w3c.now()) - max_age)
    for item in items:
        loc = item.findtext(f"{NS}loc") or ""
        news = item.find(f"{NEWS}news")
        tags = [] if news is None else [etree.QName(child).localname for child in news]
        if tags[:3] != ["publication", "publication_date", "title"]:
            problems.append(f"{path}: {loc}: news tags {tags} not in the required order")
            continue
        date = item.findtext(f"{NEWS}news/{NEWS}publication_date") or ""
        try:
            if w3c.parse(date) < oldest:
                problems.append(f"{path}: {loc}: published {date}, older than news.max_age")
        except ValueError:
            problems.append(f"{path}: {loc}: publication_date {date!r} is not a W3C datetime")
    return problems
