"""`sitemapd drill`: can this site's lastmods be trusted? Measured on its own pages.

Takes pages of each directory source, changes their surroundings the way a CMS does
and their content the way an editor does (in memory; nothing is written), and reports
how often the fingerprint moved for nothing and missed a real edit, with the pages that
went wrong and what moved their fingerprint.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from sitemapd.config import Config
from sitemapd.config.sources import DirectorySource
from sitemapd.drill.run import WORST, Report, drill
from sitemapd.errors import SitemapdError
from sitemapd.fingerprint import TemplateMemory
from sitemapd.sources.directory import walk
from sitemapd.sources.pages import fingerprint_settings, is_html, read_bytes

# The bars a site passes: surroundings move at most 5% of pages, edits are caught on 98%.
MAX_FALSE = 0.05
MIN_CAUGHT = 0.98


@dataclass
class SourceReport:
    """A drill of one directory source."""

    source: str
    report: Report


def run_drill(config: Config, pages: int, seed: int = 0) -> list[SourceReport]:
    """Return the drill of up to `pages` HTML pages of each content-fingerprinted
    directory source.

    Raises SitemapdError when no source has pages to drill.
    """
    reports = []
    for source in config.sources:
        if not isinstance(source, DirectorySource) or source.fingerprint != "content":
            continue
        chosen = _sample(source, config, pages, seed)
        unreadable: list[tuple[str, str]] = []
        loaded = _load(source, chosen, unreadable)
        report = drill(loaded, fingerprint_settings(source), TemplateMemory())
        report.skipped += unreadable
        reports.append(SourceReport(source.name, report))
    if not any(r.report.pages for r in reports):
        raise SitemapdError("no HTML page to drill: no directory source with content fingerprints")
    return reports


def _sample(source: DirectorySource, config: Config, pages: int, seed: int) -> list[str]:
    """Return up to `pages` relative paths of the source's HTML pages, spread evenly."""
    relpaths = [r for r, _ in walk(source, config.site.not_content) if is_html(r)]
    if len(relpaths) <= pages:
        return relpaths
    return sorted(random.Random(seed).sample(relpaths, pages))


def _load(
    source: DirectorySource, relpaths: list[str], unreadable: list[tuple[str, str]]
) -> Iterator[tuple[str, bytes]]:
    """Yield each page's path and bytes; a page that cannot be read goes to `unreadable`,
    with why."""
    for relpath in relpaths:
        try:
            yield relpath, read_bytes(str(source.root / relpath))[1]
        except OSError as exc:
            unreadable.append((relpath, f"cannot read it ({exc.strerror or exc})"))


def passed(reports: list[SourceReport]) -> bool:
    """True when every source keeps false moves and missed edits within the bars."""
    for entry in reports:
        for row in entry.report.rows.values():
            if not row.applied:
                continue
            if row.real and row.rate < MIN_CAUGHT:
                return False
            if not row.real and row.rate > MAX_FALSE:
                return False
    return True


def render(reports: list[SourceReport]) -> str:
    """Return the drill's report for people: a table per source, then the worst pages."""
    lines = []
    for entry in reports:
        report = entry.report
        lines.append(f"{entry.source}: {report.pages} pages")
        width = max((len(name) for name in report.rows), default=10)
        counts = {name: f"({row.moved}/{row.applied})" for name, row in report.rows.items()}
        counted = max((len(text) for text in counts.values()), default=0)
        for row in report.rows.values():
            expected = "should move" if row.real else "should not move"
            verdict = _verdict(row.real, row.rate) if row.applied else "n/a"
            lines.append(
                f"  {row.name:<{width}}  {row.rate:6.1%} moved {counts[row.name]:<{counted}}"
                f"  {expected:<15}  {verdict}"
            )
        for row in report.rows.values():
            if not row.wrong:
                continue
            what = "missed" if row.real else "moved for nothing"
            lines.append(f"  {what} on {row.name}:")
            for page, why in row.wrong[:WORST]:
                lines.append(f"    {page}: {why}")
            if len(row.wrong) > WORST:
                lines.append(f"    ... and {len(row.wrong) - WORST} more pages")
        for page, why in report.skipped[:WORST]:
            lines.append(f"  not drilled: {page}: {why}")
        if len(report.skipped) > WORST:
            lines.append(f"  ... and {len(report.skipped) - WORST} more pages not drilled")
        lines.append("")
    return "\n".join(lines)


def _verdict(real: bool, rate: float) -> str:
    if real:
        return "ok" if rate >= MIN_CAUGHT else f"FAIL (bar {MIN_CAUGHT:.0%})"
    return "ok" if rate <= MAX_FALSE else f"FAIL (bar {MAX_FALSE:.0%})"
