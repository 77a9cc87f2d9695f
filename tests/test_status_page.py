"""The sidecar's `/status` page and `/status.json`, read while the daemon publishes: by
an HTTP client, by lxml, and by headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import lxml.html
from browser import browser
from conftest import Site, page
from daemon_harness import RunningDaemon, http_port, request, start

__all__ = ["browser"]  # the fixture, used by name

A, B, C = (f"https://example.com/{name}.html" for name in "abc")
HOSTILE = "<script>window.pwned=1</script>"
PNG = b"\x89PNG\r\n\x1a\n"


def article(title: str, text: str, robots: str = "") -> str:
    """Return a page whose main content sitemapd finds (its changes are content changes)."""
    meta = f'<meta name="robots" content="{robots}">' if robots else ""
    words = " ".join([text] * 30)
    return (
        f"<!doctype html><html lang=en><head><title>{title}</title>{meta}</head><body>"
        '<nav><a href="/">Home</a> <a href="/about">About</a></nav>'
        f"<main><article><h1>{title}</h1><p>{words}</p></article></main></body></html>"
    )


def status_site(site: Site, listen: str = "127.0.0.1:0", http: str = "") -> None:
    site.configure(
        extra=f'[feed]\ntitle = "Updates"\n[daemon]\ndebounce = 0.05\n'
        f'[http]\nlisten = "{listen}"\n{http}'
    )


def report(port: int, query: str = "") -> dict[str, Any]:
    status, headers, body = request(port, "/status.json" + query)
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    data = json.loads(body)
    assert isinstance(data, dict)
    return data


def changes_of(data: dict[str, Any], url: str) -> list[tuple[str, str]]:
    """Return `(kind, why)` of the listed changes of `url`, newest first."""
    return [(c["kind"], c["why"]) for c in data["changes"] if c["url"] == url]


def test_status_json_follows_publishes(site: Site) -> None:
    status_site(site)
    site.write("a.html", article("A", "first text"))
    site.write("b.html", article("B", "bee"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        first = report(port)
        assert first["schema"] == 1
        assert first["health"] == {"ready": True, "live": True, "problems": [], "faults": []}
        assert first["site"]["index"] == "https://example.com/sitemap.xml"
        assert first["site"]["role"] is None
        assert first["site"]["partition"] is None
        assert first["publish"]["outcome"] == "ok"
        assert first["counts"] == {
            "live_urls": 2,
            "shards": 1,
            "news_entries": None,
            "feed_entries": 2,
        }
        assert changes_of(first, A) == [("new", "first seen in its source")]
        [source] = first["sources"]
        assert source["type"] == "directory"
        assert source["failing"] is None
        assert source["last_read_at"] is not None
        # The first build is the site as it was: no change on the chart.
        chart = first["chart"]
        assert len(chart["hours"]) == 48
        assert chart["complete"]
        assert sum(h["new"] + h["updated"] + h["gone"] for h in chart["hours"]) == 0

        site.write("a.html", article("A", "second text"))
        (site.root / "b.html").unlink()
        site.write("c.html", article("C", "sea"))
        daemon.wait_until(lambda: changes_of(report(port), C) != [], what="c.html listed")
        later = report(port)
        assert changes_of(later, A)[0][0] == "updated"
        assert "significant content changed" in changes_of(later, A)[0][1]
        assert changes_of(later, B)[0] == (
            "gone",
            "no longer in its source (file deleted or URL dropped)",
        )
        assert later["counts"]["live_urls"] == 2
        totals = {
            kind: sum(h[kind] for h in later["chart"]["hours"])
            for kind in ("new", "updated", "gone")
        }
        assert totals == {"new": 1, "updated": 1, "gone": 1}

        # Excluded later: the change says why.
        site.write("c.html", article("C", "sea", robots="noindex"))
        daemon.wait_until(
            lambda: changes_of(report(port), C)[0][0] == "gone", what="c.html excluded"
        )
        assert changes_of(report(port), C)[0][1] == "its page says noindex"

        one = report(port, "?url=/a.html")
        assert one["url"] == A
        assert one["found"]
        assert one["status"] == "live"
        assert [c["kind"] for c in one["changes"]] == ["updated", "new"]
        assert one["lastmod"] == one["changes"][0]["at"]
        assert one["first_seen"] == one["changes"][1]["at"]
        assert report(port, "?url=" + quote(C))["why_not_live"] == "its page says noindex"
        assert report(port, "?url=/nope.html")["found"] is False
    finally:
        assert daemon.stop() == 0


def test_status_html_is_self_contained(site: Site) -> None:
    status_site(site)
    site.write("a.html", page("A", "text"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        site.write("b.html", page("B", "text"))
        daemon.wait_until(lambda: changes_of(report(port), B) != [], what="b.html listed")
        status, headers, body = request(port, "/status")
        assert status == 200
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        doc = lxml.html.fromstring(body)
        assert doc.xpath("//script") == []
        # Nothing is loaded from elsewhere: no stylesheet, image or frame source.
        assert doc.xpath("//link | //img | //iframe | //*[@src]") == []
        [svg] = doc.xpath("//*[local-name()='svg'][@id='changes-chart']")
        assert svg.xpath(".//*[local-name()='rect'][@class='bar-new']")
        [form] = doc.xpath("//form[@id='search']")
        assert (form.get("method"), form.get("action")) == ("get", "/status")
        links = doc.xpath("//section[@id='changes']//a/@href")
        assert f"/status?url={quote(B, safe='')}" in links
        status, _, body = request(port, links[0])
        assert status == 200
        assert b"First seen" in body
        assert request(port, "/status", method="HEAD")[2] == b""
    finally:
        assert daemon.stop() == 0


def test_status_page_only_on_loopback_by_default(site: Site) -> None:
    status_site(site, listen="0.0.0.0:0")
    site.write("a.html", page("A"))
    daemon = start(site)
    try:
        daemon.wait_for_log(r"HTTP endpoint on 0\.0\.0\.0:\d+")
        match = re.search(r"HTTP endpoint on 0\.0\.0\.0:(\d+)", daemon.log())
        assert match is not None
        port = int(match.group(1))
        assert request(port, "/status")[0] == 404
        assert request(port, "/status.json")[0] == 404
        assert request(port, "/healthz")[0] == 200
    finally:
        assert daemon.stop() == 0
    site.configure(extra="[http]\nstatus_page = true\n")
    refused = site.cli("build", check=False)
    assert refused.returncode != 0
    assert "http.status_page" in refused.stderr
    assert "needs http.listen" in refused.stderr


def test_no_secret_on_the_status_page(site: Site) -> None:
    key, password = "0a1b2c3d4e5f6789", "s3cr3t-pw"
    # A change log whose database is down: its failure names the DSN.
    site.configure(
        source=f'[[source]]\ntype = "changelog"\n'
        f'dsn = "postgresql://cms:{password}@127.0.0.1:1/cms"\n',
        extra=f'[indexnow]\nkey = "{key}"\nendpoint = "http://127.0.0.1:9/indexnow"\n'
        f'[feed]\ntitle = "Updates"\n[websub]\nhubs = ["http://hub:{password}@127.0.0.1:9/"]\n'
        '[daemon]\ndebounce = 0.05\n[http]\nlisten = "127.0.0.1:0"\n',
    )
    site.write("a.html", page("A"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        site.write("b.html", page("B"))
        # Nothing listens on port 9: the delivery is retried, its failure shown.
        daemon.wait_until(
            lambda: report(port)["notifications"]["indexnow"]["retrying"] is not None,
            what="IndexNow retried",
        )
        data = report(port)
        indexnow = data["notifications"]["indexnow"]
        assert indexnow["key_file"] == f"{key}.txt"
        assert indexnow["owed"] == 1
        assert indexnow["last_answer"] is None
        [hub] = data["notifications"]["websub"]
        assert hub["hub"] == "http://hub:***@127.0.0.1:9/"
        [failing] = [s for s in data["sources"] if s["type"] == "changelog"]
        assert "127.0.0.1:1" in failing["failing"]
        text = json.dumps(data).replace(f'"key_file": "{key}.txt"', "")
        assert key not in text
        html = request(port, "/status")[2].decode()
        assert html.count(key) == 1
        assert f"{key}.txt" in html
        assert "127.0.0.1:1" in html
        assert password not in text
        assert password not in html
    finally:
        assert daemon.stop() == 0


def wait_for_text(driver: Any, daemon: RunningDaemon, url: str, text: str) -> None:
    """Reload `url` in the browser until its page shows `text`."""

    def shown() -> bool:
        driver.get(url)
        return text in driver.find_element("tag name", "body").text

    daemon.wait_until(shown, what=f"{text!r} on {url}")


def test_status_page_in_chromium(site: Site, browser: Any, tmp_path: Path) -> None:
    status_site(site)
    for n in range(1, 6):
        site.write(f"p{n}.html", article(f"Page {n}", f"text {n}"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        status_url = f"http://127.0.0.1:{port}/status"
        browser.get(status_url)
        assert "sitemapd status" in browser.find_element("tag name", "h1").text
        health = browser.find_element("id", "health").text
        assert "ready" in health
        assert "live" in health
        assert "NOT" not in health
        assert browser.find_element("id", "count-live_urls").text.split() == ["5", "live", "URLs"]
        # Changes while the page is open: new, updated and gone URLs appear on reload.
        site.write("fresh.html", article("Fresh news", "just in"))
        site.write("p1.html", article("Page 1", "rewritten"))
        (site.root / "p2.html").unlink()
        wait_for_text(browser, daemon, status_url, "https://example.com/fresh.html")
        body = browser.find_element("tag name", "body").text
        assert "first seen in its source" in body
        assert "no longer in its source" in body
        chart = browser.find_element("id", "changes-chart")
        assert chart.is_displayed()
        assert chart.size["width"] > 400
        for kind in ("new", "updated", "gone"):
            assert browser.find_elements("css selector", f"#changes-chart rect.bar-{kind}")
        shot = tmp_path / "status.png"
        assert browser.save_screenshot(str(shot))
        assert shot.read_bytes().startswith(PNG)
        assert shot.stat().st_size > 10_000

        # The search box opens one URL's history.
        browser.find_element("id", "url").send_keys("/p1.html\n")
        daemon.wait_until(lambda: "p1.html" in browser.title, what="the history page")
        history = browser.find_element("tag name", "body").text
        assert "https://example.com/p1.html" in history
        assert "First seen" in history
        assert "updated" in history
        assert "significant content changed" in history
    finally:
        assert daemon.stop() == 0


def test_hostile_title_and_url_shown_as_text(site: Site, browser: Any) -> None:
    status_site(site)
    site.write("a.html", page("A"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        title = HOSTILE.replace("<", "&lt;").replace(">", "&gt;")
        site.write("<script>x.html", page(title))
        escaped = "https://example.com/%3Cscript%3Ex.html"
        status_url = f"http://127.0.0.1:{port}/status"
        wait_for_text(browser, daemon, status_url, escaped)
        cells = [cell.text for cell in browser.find_elements("css selector", "#changes td")]
        assert HOSTILE in cells
        assert browser.find_elements("tag name", "script") == []
        assert browser.execute_script("return window.pwned === undefined")

        # The URL searched for comes back into the page as text, valid URL or not.
        for typed in (f'"><{HOSTILE[1:]}', escaped):
            browser.get(f"{status_url}?url={quote(typed)}")
            assert browser.find_element("id", "loc").text == typed
            assert browser.find_element("id", "url").get_attribute("value") == typed
            assert browser.find_elements("tag name", "script") == []
            assert browser.execute_script("return window.pwned === undefined")
        assert browser.find_element("id", "title").text == HOSTILE
    finally:
        assert daemon.stop() == 0


def test_held_removal_with_its_confirm_command(site: Site) -> None:
    status_site(site)
    for n in range(30):
        site.write(f"p{n}.html", page(f"P{n}"))
    daemon = start(site)
    try:
        port = http_port(daemon)
        for n in range(25):
            (site.root / f"p{n}.html").unlink()
        daemon.wait_until(lambda: report(port)["holds"] != [], what="the removal held")
        [hold] = report(port)["holds"]
        assert (hold["removing"], hold["live"]) == (25, 30)
        assert hold["confirm_command"] == f"sitemapd build -c {site.config} --confirm-removal"
        assert report(port)["health"]["ready"] is False
        doc = lxml.html.fromstring(request(port, "/status")[2])
        [held] = doc.xpath("//section[@id='holds']//div")
        assert "removal held: a scan would remove 25 of 30 live URLs" in held.text_content()
        assert held.xpath(".//code")[0].text == hold["confirm_command"]
        site.cli("build", "--confirm-removal")
        daemon.wait_until(lambda: report(port)["holds"] == [], what="the removal confirmed")
        assert report(port)["counts"]["live_urls"] == 5
    finally:
        assert daemon.stop() == 0
