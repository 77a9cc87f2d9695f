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
from sitemapd.drill.mutate import CHANGES, append_correction, edit_word, new_item
from sitemapd.drill.run import WORST, Report, drill
from sitemapd.errors import SitemapdError
from sitemapd.fingerprint import TemplateMemory
from sitemapd.sources.directory import walk
from sitemapd.sources.pages import HTML_READ, fingerprint_settings, is_cut, is_html, read_bytes

# The bars a site passes: surroundings move at most 5% of pages, edits are caught on 98%.
MAX_FALSE = 0.05
MIN_CAUGHT = 0.98
# An editor's changes to what a page says: a site whose pages could take none of them
# passes no bar of edits.
_CONTENT_EDITS = {
    change.name for change in CHANGES if change.mutate in (edit_word, append_correction, new_item)
}


@dataclass
class SourceReport:
    """A drill of one directory source."""

    source: str
    report: Report
    # Why the source was not drilled at all (its root is gone), or "".
    problem: str = ""


def run_drill(config: Config, pages: int, seed: int = 0) -> list[SourceReport]:
    """Return the drill of up to `pages` HTML pages of each content-fingerprinted
    directory source.

    A source whose root is no folder is reported as not drilled, the others drilled.
    Raises SitemapdError when no source has pages to drill.
    """
    sources = [
        source
        for source in config.sources
        if isinstance(source, DirectorySource) and source.fingerprint == "content"
    ]
    if not sources:
        raise SitemapdError(
            "nothing to drill: no directory source fingerprints its pages by content "
            '(fingerprint = "content")'
        )
    reports = []
    for source in sources:
        if not source.root.is_dir():
            reports.append(SourceReport(source.name, Report(), f"root {source.root} is no folder"))
            continue
        chosen = _sample(source, config, pages, seed)
        unreadable: list[tuple[str, str]] = []
        loaded = _load(source, chosen, unreadable)
        report = drill(loaded, fingerprint_settings(source), TemplateMemory())
        report.skipped += unreadable
        reports.append(SourceReport(source.name, report))
    if not any(r.report.pages for r in reports):
        raise SitemapdError(_nothing_drilled(reports, sources))
    return reports


def _nothing_drilled(reports: list[SourceReport], sources: list[DirectorySource]) -> str:
    """Return why no page of `sources` was drilled: roots gone, none found, none read."""
    gone = [f"{entry.source}: {entry.problem}" for entry in reports if entry.problem]
    if len(gone) == len(reports):
        return "; ".join(gone)
    skipped = [(page, why) for entry in reports for page, why in entry.report.skipped]
    if not skipped:
        roots = ", ".join(str(source.root) for source in sources if source.root.is_dir())
        return "; ".join([*gone, f"no HTML page to drill under {roots}"])
    named = "; ".join(f"{page}: {why}" for page, why in skipped[:WORST])
    more = f" (and {len(skipped) - WORST} more)" if len(skipped) > WORST else ""
    return "; ".join([*gone, f"no page could be drilled: {named}{more}"])


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
    with why, and so does a page read for its first HTML_READ bytes alone: the drill's
    changes could land past them, where no build looks."""
    for relpath in relpaths:
        path = source.root / relpath
        try:
            if is_cut(path.stat().st_size):  # not read at all: it may be very big
                unreadable.append((relpath, f"read for its first {HTML_READ >> 20} MiB alone"))
                continue
            data = read_bytes(str(path))[1]
        except OSError as exc:
            unreadable.append((relpath, f"cannot read it ({exc.strerror or exc})"))
            continue
        yield relpath, data


def edited(report: Report) -> bool:
    """True when an editor's change to what a page says (a word, a correction, a list
    page's new item) could be made on one of the report's pages at least."""
    return any(row.applied for name, row in report.rows.items() if name in _CONTENT_EDITS)


def passed(reports: list[SourceReport]) -> bool:
    """True when every source was drilled, keeps false moves and missed edits within the
    bars, and had its pages' text edited."""
    for entry in reports:
        if entry.problem or (entry.report.pages and not edited(entry.report)):
            return False
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
        if entry.problem:
            lines += [f"{entry.source}: FAIL: not drilled: {entry.problem}", ""]
            continue
        lines.append(f"{entry.source}: {report.pages} pages")
        width = max((len(name) for name in report.rows), default=10)
        counts = {name: f"({row.moved}/{row.applied})" for name, row in report.rows.items()}
        counted = max((len(text) for text in counts.values()), default=0)
        for row in report.rows.values():
            if not row.applied:
                lines.append(f"  {row.name:<{width}}  n/a: none of these pages has one")
                continue
            expected = "should move" if row.real else "should not move"
            lines.append(
                f"  {row.name:<{width}}  {row.rate:6.1%} moved {counts[row.name]:<{counted}}"
                f"  {expected:<15}  {_verdict(row.real, row.rate)}"
            )
        if report.pages and not edited(report):
            lines.append(
                "  FAIL: no page's text could be edited (no paragraph of prose, no list of "
                "items): edits are not known to be caught"
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
