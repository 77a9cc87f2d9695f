"""`sitemapd explain`: what a page's fingerprint is taken over, and its recorded history.

Answers "why did this page's lastmod move?" without reading code: the main text, the
headline and structured-data fields the fingerprint covers, the blocks left out as
template and why, and what the ledger remembers of the URL.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sitemapd.config import Config
from sitemapd.config.sources import DirectorySource
from sitemapd.core.globs import Selection
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL, SitemapdError
from sitemapd.fingerprint import TemplateMemory
from sitemapd.ledger import history
from sitemapd.ledger.readonly import open_readonly
from sitemapd.sources.base import file_url
from sitemapd.sources.pages import (
    HTML_READ,
    fingerprint_settings,
    held,
    is_cut,
    is_html,
    read_file,
    read_hashed,
    read_part,
    settings_for,
)
from sitemapd.sources.served import served_file

# Characters of main text shown before the rest is summed up.
_SHOWN = 4000


def explain(config: Config, target: str) -> str:
    """Return the report on `target`, a page's URL, its path on the site or its file.

    Raises SitemapdError when no directory source holds it as a page (a file its
    `include` does not match, or its `exclude` or `error_pages` does).
    """
    policy = URLPolicy(config.site.origin)
    source, relpath, loc = _locate(config, policy, target)
    path = source.root / relpath
    refusal = Selection(source.include, source.exclude).refusal(relpath)
    if refusal is not None:
        raise SitemapdError(f"{path} {refusal} of {source.name}")
    settings = settings_for(relpath, fingerprint_settings(source))
    try:
        # As a build reads it (`pages.load`).
        _, data, _, size = read_hashed(str(path), held(settings))
    except OSError as exc:
        raise SitemapdError(f"cannot read {path} ({exc.strerror})") from exc
    history, cursors = _history(config, loc)
    memory = TemplateMemory.load(cursors.get(f"template:{source.name}"))
    read = read_file(relpath, data, settings, explain=True)
    lines = [
        f"URL:          {loc}",
        f"file:         {path}",
        f"source:       {source.name}",
        f"fingerprint:  {read.digest(memory)} ({settings.mode}, settings {settings.key}"
        + (f", selector {settings.selector!r}" if settings.selector else "")
        + (f", {len(settings.ignore)} ignore patterns" if settings.ignore else "")
        + ")",
    ]
    lines += history
    if is_html(relpath) and is_cut(size):
        taken = "; the fingerprint takes every byte" if settings.mode == "page" else ""
        lines.append(
            f"read:         its first {len(read_part(data)):,} bytes of {size:,} (to a block's "
            f"end in the first {HTML_READ >> 20} MiB), as search engines read it{taken}"
        )
    reading = read.reading
    if reading is None:
        lines.append(
            "taken over:   the file's bytes" + (" less ignore matches" if settings.ignore else "")
        )
        return "\n".join(lines) + "\n"
    if reading.fallback:
        lines.append("main content: NOT FOUND: the whole page's text counts")
    elif reading.around:
        lines.append("outside it:   " + ", ".join(reading.around))
    lines.append("")
    lines.append("taken over (besides the main text):")
    lines += [f"  {label}: {value}" for label, value in reading.parts if value]
    kept = reading.kept(memory)
    text = "\n".join(kept)
    lines.append("")
    lines.append(f"main text ({len(kept)} pieces, {len(text)} characters):")
    lines += ["  " + line for line in text[:_SHOWN].splitlines()]
    if len(text) > _SHOWN:
        lines.append(f"  ... {len(text) - _SHOWN} more characters")
    template = [t for key, t in reading.texts if key is not None and key in memory]
    if len(kept) == len(reading.texts):
        template = []  # the page says too little to leave its template out
    if template:
        lines.append("")
        lines.append(f"left out as the site's template (seen on many pages): {len(template)}")
        lines += [f"  {t}" for t in dict.fromkeys(template)]
    if reading.dropped:
        lines.append("")
        lines.append(f"left out of the main content: {len(reading.dropped)} blocks")
        lines += [f"  {name}: {why}" for name, why in reading.dropped]
    return "\n".join(lines) + "\n"


def _locate(config: Config, policy: URLPolicy, target: str) -> tuple[DirectorySource, str, str]:
    """Return the directory source, relative path and URL of `target`."""
    sources = [s for s in config.sources if isinstance(s, DirectorySource)]
    if os.path.isfile(target):
        real = os.path.realpath(target)
        for source in sources:
            root = os.path.realpath(source.root) + os.sep
            if real.startswith(root):
                relpath = real[len(root) :].replace(os.sep, "/")
                loc = file_url(policy, source, relpath)
                served = served_file(source, relpath)
                if served not in (None, relpath):
                    raise SitemapdError(f"{relpath} is not published: {served} is served as {loc}")
                return source, relpath, loc
        raise SitemapdError(f"{target} is under no directory source's root")
    if "://" not in target and not target.startswith("/"):
        target = "/" + target  # a path on the site, written without its first slash
    try:
        loc = policy.site_url(target)
    except InvalidURL as exc:
        raise SitemapdError(
            f"{target!r} is neither a file nor a URL or path of the site ({exc})"
        ) from exc
    path = unquote(urlsplit(loc).path)
    for source in sources:
        if not path.startswith(source.url_prefix):
            continue
        rest = path[len(source.url_prefix) :]
        for candidate in _candidates(rest, source):
            # The file served as that URL (`index.html` where `index.htm` is there too).
            relpath = served_file(source, candidate) or candidate
            if (source.root / relpath).is_file():
                # The URL the file is published as: `/index.html` names the page at `/`.
                try:
                    return source, relpath, file_url(policy, source, relpath)
                except InvalidURL:
                    continue
    raise SitemapdError(f"no file of a directory source is published as {loc}")


def _candidates(rest: str, source: DirectorySource) -> list[str]:
    """Return the relative paths whose URL could be `rest` below the source's prefix."""
    if rest == "" or rest.endswith("/"):
        return [rest + name for name in source.index_files]
    return [rest, rest + ".html", rest + ".htm"]


def _history(config: Config, loc: str) -> tuple[list[str], dict[str, str]]:
    """Return lines on what the ledger remembers of `loc`, and the ledger's cursors."""
    path: Path = config.ledger_path
    if not path.exists():
        return ["history:      none (no ledger yet)"], {}
    try:
        with contextlib.closing(open_readonly(path)) as conn:
            cursors = dict(conn.execute("SELECT name, value FROM cursors"))
            url = history.url_state(conn, loc)
            if url is None:
                return ["history:      not in the ledger yet"], cursors
            changes = history.changes(conn, url, 10)
    except sqlite3.Error as exc:
        raise SitemapdError(f"{path}: cannot read the ledger ({exc})") from exc
    lines = [
        f"status:       {url.status}" + (f" ({url.reason})" if url.reason else ""),
        f"first seen:   {url.first_seen}",
        f"lastmod:      {url.lastmod} (content changes recorded: {url.change_count})",
        f"stored:       {url.content_hash} (settings {url.fp_settings or 'of an earlier sitemapd'})"
        + (", main content not found" if url.fp_fallback else ""),
    ]
    if changes:
        lines.append("journal:")
        lines += [f"  {c['at']} {c['kind']}: {c['why']}" for c in changes]
    return lines, cursors
