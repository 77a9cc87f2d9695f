"""The sidecar's `/status` (HTML) and `/status.json`: the status report, or one URL's
history with `?url=URL`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs

from sitemapd.config import Config
from sitemapd.core import logs
from sitemapd.status.data import LiveState, StatusData
from sitemapd.status.html import render_report, render_url

log = logs.Logger("sitemapd.statuspage")

PATHS = ("/status", "/status.json")
_HTML = "text/html; charset=utf-8"
_JSON = "application/json"
# Defence in depth for a page showing text others wrote: no script runs, nothing loads.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """One response: its status, body, content type and headers."""

    status: HTTPStatus
    body: bytes
    kind: str
    headers: dict[str, str] = field(default_factory=lambda: dict(_HEADERS))


class StatusPage:
    """Answers the status paths from the ledger (read-only) and the daemon's live state,
    while the configuration in force enables them."""

    def __init__(
        self, config: Callable[[], Config], live: Callable[[], LiveState], ledger_path: Path
    ) -> None:
        self._config = config
        self._live = live
        self._data = StatusData(ledger_path)

    def answer(self, path: str, query: str) -> Answer:
        """Return the response to a GET of `path` (one of PATHS) with `query`."""
        config = self._config()
        if not config.http.status_page:  # turned off (a reload may turn it on again)
            return Answer(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
        url = parse_qs(query).get("url", [""])[0].strip()
        as_json = path.endswith(".json")
        try:
            if url:
                found = self._data.url(config, url)
                page = render_url(found) if not as_json else ""
            else:
                found = self._data.report(config, self._live())
                page = render_report(found) if not as_json else ""
        except sqlite3.Error as exc:
            log.warning("cannot read the ledger for the status page (%s)", exc)
            return Answer(
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"ledger unavailable: {exc}\n".encode(),
                "text/plain; charset=utf-8",
                {"Retry-After": "10"},
            )
        if as_json:
            return Answer(HTTPStatus.OK, json.dumps(found, indent=1).encode(), _JSON)
        return Answer(HTTPStatus.OK, page.encode(), _HTML)

    def close(self) -> None:
        self._data.close()
