"""The status page as HTML: one self-contained document (inline CSS and SVG, no script,
no external asset) from the data of `statusdata`.

Every text from the ledger or the daemon (URLs, titles, reasons, errors) is escaped:
a page's title or URL is whatever its author wrote.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from sitemapd.core.words import count

# The chart's drawing area, in SVG units, and the colour of each kind of change.
_WIDTH, _HEIGHT, _LEFT, _BOTTOM = 960, 180, 44, 22
_COLOURS = {"new": "#2e7d32", "updated": "#1565c0", "gone": "#c62828"}

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 1.5em;
color:#1b1b1b;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25em .5em;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f6f6f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.url{word-break:break-all}.muted{color:#666}
.ok{color:#2e7d32;font-weight:600}.bad{color:#c62828;font-weight:600}
.warn{background:#fff4e5;border:1px solid #f0b35a;padding:.5em .8em;margin:.5em 0}
code{background:#f3f3f3;padding:0 .25em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em;margin:0}dt{color:#555}
dd{margin:0}.counts{display:flex;gap:2em;flex-wrap:wrap}.counts div{font-size:1.4em}
.counts span{display:block;font-size:.65em;color:#555}
.kind-new{color:#2e7d32}.kind-updated{color:#1565c0}.kind-gone{color:#c62828}
time{white-space:nowrap}form{margin:.6em 0}input[type=search]{width:32em;max-width:70%;padding:.3em}
"""


def _e(value: object) -> str:
    """Return `value` as escaped HTML text ("-" for None)."""
    return "-" if value is None else escape(str(value), quote=True)


def _when(at: str | None) -> str:
    """Return a time as a `<time>` element (kept on one line), "-" for None."""
    return "-" if at is None else f'<time datetime="{_e(at)}">{_e(at)}</time>'


def _history_link(url: str) -> str:
    return f'<a class="url" href="/status?url={_e(quote(url, safe=""))}">{_e(url)}</a>'


def _document(title: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
            *body,
            "</body></html>",
        ]
    )


def _search_form(value: str = "") -> str:
    return (
        '<form id="search" method="get" action="/status">'
        '<label for="url">One URL\'s history: </label>'
        f'<input type="search" id="url" name="url" value="{_e(value)}" '
        'placeholder="https://example.com/page.html or /page.html">'
        ' <button type="submit">Show</button></form>'
    )


def _state(good: bool, yes: str, no: str) -> str:
    return f'<span class="ok">{yes}</span>' if good else f'<span class="bad">{no}</span>'


def _rows(header: list[str], rows: list[list[str]], numeric: tuple[int, ...] = ()) -> str:
    """Return a table of already-escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def chart_svg(chart: dict[str, Any]) -> str:
    """Return the changes per hour as an inline SVG of stacked bars (new, updated, gone),
    each bar titled with its hour and figures."""
    hours = chart["hours"]
    peak = max([h["new"] + h["updated"] + h["gone"] for h in hours] + [1])
    plot_w, plot_h = _WIDTH - _LEFT, _HEIGHT - _BOTTOM
    step = plot_w / max(len(hours), 1)
    parts = [
        f'<svg id="changes-chart" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT + 20}" width="100%" '
        f'aria-label="Changes per hour over the last {len(hours)} hours">',
        f'<line x1="{_LEFT}" y1="{plot_h}" x2="{_WIDTH}" y2="{plot_h}" stroke="#999"/>',
        f'<text x="{_LEFT - 6}" y="12" text-anchor="end" font-size="11">{peak}</text>',
        f'<text x="{_LEFT - 6}" y="{plot_h}" text-anchor="end" font-size="11">0</text>',
    ]
    for n, hour in enumerate(hours):
        x = _LEFT + n * step
        y = float(plot_h)
        figures = ", ".join(f"{hour[kind]} {kind}" for kind in _COLOURS)
        parts.append(f"<g><title>{_e(hour['hour'][:13])}h: {figures}</title>")
        for kind, colour in _COLOURS.items():
            height = plot_h * hour[kind] / peak
            if height > 0:
                y -= height
                parts.append(
                    f'<rect class="bar-{kind}" x="{x + 1:.1f}" y="{y:.1f}" '
                    f'width="{step - 2:.1f}" height="{height:.1f}" fill="{colour}"/>'
                )
        parts.append("</g>")
        if n % 6 == 0:
            parts.append(
                f'<text x="{x:.1f}" y="{plot_h + 15}" font-size="11">'
                f"{_e(hour['hour'][5:13].replace('T', ' '))}h</text>"
            )
    for n, (kind, colour) in enumerate(_COLOURS.items()):
        x = _LEFT + n * 110
        parts.append(
            f'<rect x="{x}" y="{_HEIGHT + 6}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14}" y="{_HEIGHT + 15}" font-size="12">{kind}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_report(report: dict[str, Any]) -> str:
    """Return the status page of `report` (the data of `statusdata.StatusData.report`)."""
    site, health, publish = report["site"], report["health"], report["publish"]
    counts = report["counts"]
    body = [
        "<header><h1>sitemapd status</h1>",
        f'<p class="muted">{_e(site["base_url"])} &middot; generated {_e(report["generated_at"])}'
        ' &middot; <a href="/status.json">status.json</a></p></header>',
        '<section id="health"><h2>Health</h2><dl>',
        f"<dt>Ready</dt><dd>{_state(health['ready'], 'ready', 'NOT READY')}</dd>",
        f"<dt>Live</dt><dd>{_state(health['live'], 'live', 'NOT LIVE')}</dd>",
        f"<dt>Role</dt><dd>{_e(site['role'] or 'single daemon (no shared target)')}</dd>",
        f"<dt>Partition</dt><dd>{_e(site['partition'] or 'whole site')}</dd>",
        f"<dt>Target</dt><dd>{_e(site['target'])}</dd>",
        f'<dt>Index</dt><dd class="url">{_e(site["index"])}</dd>',
        f"<dt>Last publish</dt><dd>{_e(publish['last_at'] or 'never')} "
        f"({_state(publish['outcome'] != 'failed', publish['outcome'], 'FAILED')}"
        f"{': ' + _e(publish['error']) if publish['error'] else ''}; "
        f"{count(publish['errors'], 'error')} since start)</dd></dl>",
    ]
    body += [f'<p class="warn">{_e(p)}</p>' for p in health["problems"] + health["faults"]]
    body.append("</section>")
    body.append('<section id="holds"><h2>Mass-removal holds</h2>')
    if report["holds"]:
        body += [
            f'<div class="warn"><strong>{_e(h["source"])}</strong>: {_e(h["reason"])}'
            f"<br>Confirm: <code>{_e(h['confirm_command'])}</code></div>"
            for h in report["holds"]
        ]
    else:
        body.append('<p class="muted">No removal is held.</p>')
    body.append("</section>")
    body.append('<section id="sources"><h2>Sources</h2>')
    body.append(
        _rows(
            ["Source", "Type", "Last read", "Lag (s)", "Backlog", "Waiting since", "Failing"],
            [
                [
                    _e(s["name"]),
                    _e(s["type"]),
                    _when(s["last_read_at"]),
                    _e(s["lag_seconds"]),
                    _e(s["backlog"]),
                    _when(s["waiting_since"]),
                    _e(s["failing"]),
                ]
                for s in report["sources"]
            ],
            numeric=(3, 4),
        )
    )
    body.append("</section>")
    body.append('<section id="counts"><h2>Published</h2><div class="counts">')
    for key, label in (
        ("live_urls", "live URLs"),
        ("shards", "shards"),
        ("news_entries", "news entries"),
        ("feed_entries", "feed entries"),
    ):
        body.append(f'<div id="count-{key}">{_e(counts[key])}<span>{label}</span></div>')
    body.append("</div></section>")
    chart = report["chart"]
    body.append('<section id="chart"><h2>Changes per hour, last 48 hours</h2>')
    body.append(chart_svg(chart))
    if not chart["complete"]:
        body.append('<p class="muted">Still counting older changes: reload for the rest.</p>')
    body.append("</section>")
    body.append('<section id="changes"><h2>Last changes</h2>')
    body.append(_search_form())
    body.append(
        _rows(
            ["URL", "Title", "What", "When", "Why"],
            [
                [
                    _history_link(c["url"]),
                    _e(c["title"]),
                    f'<span class="kind-{_e(c["kind"])}">{_e(c["kind"])}</span>',
                    _when(c["at"]),
                    _e(c["why"]),
                ]
                for c in report["changes"]
            ],
        )
    )
    body.append("</section>")
    body += _notifications(report["notifications"])
    return _document(f"sitemapd status: {site['base_url']}", body)


def _answer(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return "none yet"
    return (
        f"{_e(answer['at'])}: {_e(answer['outcome'])} {_e(answer['status'])} {_e(answer['detail'])}"
    )


def _notifications(notes: dict[str, Any]) -> list[str]:
    body = ['<section id="notifications"><h2>Notifications</h2>']
    body.append(f"<p>{count(notes['waiting'], 'request')} queued or being retried.</p>")
    indexnow = notes["indexnow"]
    if indexnow is None:
        body.append('<p class="muted">IndexNow is not configured.</p>')
    else:
        body.append(
            "<h3>IndexNow</h3><dl>"
            f"<dt>Endpoint</dt><dd>{_e(indexnow['endpoint'])}</dd>"
            f"<dt>Key file</dt><dd>{_e(indexnow['key_file'])}</dd>"
            f"<dt>Owed</dt><dd>{count(indexnow['owed'], 'change')}</dd>"
            f"<dt>Last answer</dt><dd>{_answer(indexnow['last_answer'])}</dd>"
            f"<dt>Retrying</dt><dd>{_e(indexnow['retrying'] or 'no')}</dd>"
            + (
                f'<dt>Key refused</dt><dd class="bad">{_e(indexnow["key_rejected"])}</dd>'
                if indexnow["key_rejected"]
                else ""
            )
            + "</dl>"
        )
    if not notes["websub"]:
        body.append('<p class="muted">No WebSub hub is configured.</p>')
    else:
        body.append("<h3>WebSub</h3>")
        body.append(
            _rows(
                ["Hub", "Feeds owed", "Last answer", "Retrying"],
                [
                    [
                        _e(hub["hub"]),
                        "<br>".join(_e(topic) for topic in hub["owed"]) or "none",
                        _answer(hub["last_answer"]),
                        _e(hub["retrying"] or "no"),
                    ]
                    for hub in notes["websub"]
                ],
            )
        )
    body.append("</section>")
    return body


def render_url(found: dict[str, Any]) -> str:
    """Return the page of one URL's history (the data of `statusdata.StatusData.url`)."""
    body = [
        '<header><h1>URL history</h1><p><a href="/status">&larr; status</a></p></header>',
        _search_form(found["url"]),
        f'<p class="url" id="loc">{_e(found["url"])}</p>',
    ]
    if not found["found"]:
        body.append("<p>The ledger holds no such URL.</p>")
        return _document("sitemapd: URL history", body)
    body.append(
        "<dl>"
        f"<dt>Status</dt><dd>{_e(found['status'])}"
        + (f" ({_e(found['why_not_live'])})" if found["why_not_live"] else "")
        + "</dd>"
        f'<dt>Title</dt><dd id="title">{_e(found["title"])}</dd>'
        f"<dt>lastmod</dt><dd>{_e(found['lastmod'])}</dd>"
        f"<dt>First seen</dt><dd>{_e(found['first_seen'])}</dd>"
        f"<dt>Content changes</dt><dd>{_e(found['content_changes'])}</dd></dl>"
    )
    body.append("<h2>Changes</h2>")
    body.append(
        _rows(
            ["When", "What", "Why"],
            [
                [
                    _when(c["at"]),
                    f'<span class="kind-{_e(c["kind"])}">{_e(c["kind"])}</span>',
                    _e(c["why"]),
                ]
                for c in found["changes"]
            ],
        )
    )
    return _document(f"sitemapd: {found['url']}", body)
