"""The commands that only read: status, verify, robots, explain, drill, check-config."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sitemapd import config
from sitemapd.cli.common import errors_exit
from sitemapd.core.words import count
from sitemapd.errors import SitemapdError

# Each command imports what it runs in its body: a command starts without the modules of
# the others (the ownership check's lxml, the status report, the engine, json, dataclasses).


@errors_exit
def status_(config_path: Path, as_json: bool) -> None:
    """`sitemapd status`: see its help (app.py)."""
    import json

    from sitemapd.ledger.readonly import open_readonly
    from sitemapd.publish.names import OutputNames
    from sitemapd.status import report as status
    from sitemapd.status.text import render_text

    cfg = config.load(config_path)
    if not cfg.ledger_path.exists():
        raise SitemapdError(f"no ledger at {cfg.ledger_path} yet: run 'sitemapd build' first")
    try:
        with contextlib.closing(open_readonly(cfg.ledger_path)) as conn:
            report = status.collect(cfg, conn, OutputNames(cfg))
    except sqlite3.Error as exc:
        raise SitemapdError(f"{cfg.ledger_path}: cannot read the ledger ({exc})") from exc
    print(json.dumps(report, indent=2) if as_json else render_text(report))


@errors_exit
def verify_(config_path: Path, partitions: list[Path]) -> None:
    """`sitemapd verify`: see its help (app.py)."""
    cfg = config.load(config_path)
    from sitemapd.cli.verify import NOTE, WARNING, verify_all

    found = verify_all(cfg, [config.load(path) for path in partitions])
    for line in found:
        print(line)
    problems = [line for line in found if not line.startswith((NOTE, WARNING))]
    if problems:
        print(count(len(problems), "problem"), file=sys.stderr)
        sys.exit(1)
    where = cfg.publish.s3.url if cfg.publish.s3 else f"{cfg.site.output_dir}/"
    print(f"ok: {where}{cfg.sitemap.index_name}")


@errors_exit
def robots_(config_path: Path) -> None:
    """`sitemapd robots`: see its help (app.py)."""
    from sitemapd.publish.names import partition_index_urls

    cfg = config.load(config_path)
    for url in partition_index_urls(cfg):
        print(f"Sitemap: {url}")


@errors_exit
def explain_(config_path: Path, target: str) -> None:
    """`sitemapd explain`: see its help (app.py)."""
    from sitemapd.cli.explain import explain

    print(explain(config.load(config_path), target), end="")


@errors_exit
def drill_(config_path: Path, pages: int, as_json: bool) -> None:
    """`sitemapd drill`: see its help (app.py)."""
    import dataclasses
    import json

    from sitemapd.drill import passed, render, run_drill

    reports = run_drill(config.load(config_path), max(pages, 1))
    if as_json:
        print(json.dumps([dataclasses.asdict(r) for r in reports], indent=2))
    else:
        print(render(reports), end="")
    if not passed(reports):
        sys.exit(1)


@errors_exit
def check_config(config_path: Path) -> None:
    """`sitemapd check-config`: see its help (app.py)."""
    from sitemapd.publish import ownership

    cfg = config.load(config_path)
    missing = _missing_drivers(cfg)
    for message in missing:
        print(f"sitemapd: error: {message}", file=sys.stderr)
    if missing:
        sys.exit(1)
    foreign = ownership.foreign_files(cfg, ownership.ledger_records(cfg))
    ownership.refuse(cfg, foreign)
    for found in foreign:
        print(f"site.take_over: {found.path} will be replaced (a copy kept)")
    for message in _doubtful(cfg):
        print(f"sitemapd: warning: {message}", file=sys.stderr)
    print(f"ok: {cfg.path}: {count(len(cfg.sources), 'source')}, index {cfg.sitemap.index_name}")


def _doubtful(cfg: config.Config) -> list[str]:
    """Return what is said of settings valid but likely not meant: a path in `base_url`
    (URLs are made from its origin), a folder or list a source reads that is not there
    (a deploy may make it, but `build` fails on it)."""
    said = []
    path = urlsplit(cfg.site.base_url).path
    if path not in ("", "/"):
        said.append(
            f"site.base_url: its path {path} is not used: URLs are {cfg.site.origin.root} and "
            f"a file's path; for pages served under {path}, set url_prefix on their source"
        )
    for n, source in enumerate(cfg.sources):
        if isinstance(source, config.DirectorySource) and not source.root.is_dir():
            said.append(f"source[{n}].root: {source.root} is not a folder (yet): `build` fails")
        elif isinstance(source, config.UrlListSource) and not source.path.is_file():
            said.append(f"source[{n}].path: {source.path} is not a file (yet): `build` fails")
    return said


def _missing_drivers(cfg: config.Config) -> list[str]:
    """Return, for each change log of `cfg` whose driver cannot be imported, the message
    a build would fail with."""
    logs = [s.spec for s in cfg.sources if isinstance(s, config.ChangelogSource)]
    if not logs:
        return []
    from sitemapd.changelog import missing_driver

    return [message for spec in logs if (message := missing_driver(spec)) is not None]
