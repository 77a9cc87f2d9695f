"""The commands that start a site: init (a first configuration) and changelog-sql."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from sitemapd import config
from sitemapd.cli.common import errors_exit
from sitemapd.errors import SitemapdError


@errors_exit
def init_(
    base_url: str | None,
    content: Path | None,
    url_list: Path | None,
    output: Path | None,
    state: Path | None,
    project: Path,
    config_path: Path,
    force: bool,
) -> None:
    """`sitemapd init`: see its help (app.py)."""
    from sitemapd.cli import init

    if config_path.exists() and not force:
        raise SitemapdError(f"{config_path} exists: give another -c FILE, or --force")
    interactive = sys.stdin.isatty()
    found = init.detect(project)
    if found is not None:
        where = f" (its site: {found.output})" if found.output else " (not built yet)"
        print(f"found a {found.generator.name} project in {project}{where}")
    if content is None and url_list is None:
        guess = (found.output or project / found.generator.outputs[0]) if found else None
        if interactive:
            # No default where nothing was found: the folder of the configuration, where
            # it is written, would be refused (its state beside the pages).
            content = Path(_ask("Folder of the built site", None if guess is None else str(guess)))
        elif guess is None:
            raise SitemapdError("give --content FOLDER (the built site) or --url-list FILE")
        else:
            content = guess
    if base_url is None:
        if not interactive:
            raise SitemapdError("give --base-url URL (the site's address)")
        base_url = _ask("The site's URL (https://example.com/)")
    base = config_path.resolve().parent
    if content is not None and state is None and base.is_relative_to(content.resolve()):
        raise SitemapdError(
            f"{config_path} would be inside the site's folder ({content.resolve()}), served "
            "to everyone with its state beside it: give -c FILE outside it"
        )
    output = output or content or base / "sitemaps"
    state = state or base / "sitemapd-state"
    generator = found.generator if found else None
    answers = init.Answers(
        base_url=base_url,
        output_dir=init.relative(output, base),
        state_dir=init.relative(state, base),
        index=init.index_name(output, generator),
        content=None if content is None else init.relative(content, base),
        url_list=None if url_list is None else init.relative(url_list, base),
        generator=generator.name if generator else None,
    )
    if content is not None and state.resolve().is_relative_to(content.resolve()):
        raise SitemapdError(
            f"--state {state} is inside the site's folder: the ledger is not public"
        )
    text = init.render(answers)
    cfg = config.parse(tomllib.loads(text), config_path)
    config_path.write_text(text)
    print(f"wrote {config_path}: sitemaps into {output}, index {cfg.sitemap.index_name}")
    mine = f"-c {config_path}"
    for sitemap in init.generator_sitemaps(output, generator):
        print(
            f"to keep the lastmods of {sitemap} (if they are true): sitemapd import {mine} "
            f"{sitemap}"
        )
    if (output / "robots.txt").is_file():
        print(
            f"{output / 'robots.txt'}: to have sitemapd keep its Sitemap: line there (and "
            "leave out what it disallows), add robots_txt to [site]"
        )
    print(f"next: sitemapd check-config {mine} && sitemapd build {mine}")


def _ask(question: str, default: str | None = None) -> str:
    """Return the answer typed to `question`, or `default` for an empty one (asked again
    without a default); raises EOFError when the input ends."""
    shown = f"{question} [{default}]: " if default is not None else f"{question}: "
    while not (answer := input(shown)):
        if default is not None:
            return default
    return answer


def changelog_sql(kind: str, table: str, channel: str) -> None:
    """`sitemapd changelog-sql`: see its help (app.py)."""
    from sitemapd.changelog.ddl import ddl

    print(ddl(kind, table, channel), end="")
