"""Shared fixtures: a temporary site, the real `sitemapd` CLI, readers of our output."""

from __future__ import annotations

import gzip
import http.server
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest
from lxml import etree

# Real servers: PostgreSQL (`postgres`), MariaDB (`mariadb`), WordPress (`wordpress`) and
# a hub / IndexNow endpoint (`endpoint`); a fake systemd (`supervisor`).
pytest_plugins = [
    "pg",
    "mariadb",
    "wordpress",
    "endpoints",
    "daemon_harness",
    "supervisor",
    "s3_harness",
]

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "tests" / "schemas"
NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
NEWS_ENTRY = "{http://www.google.com/schemas/sitemap-news/0.9}news"


@cache
def schema(name: str) -> etree.XMLSchema:
    """Return the published XSD `name` from tests/schemas."""
    parser = etree.XMLParser(no_network=True)
    return etree.XMLSchema(etree.parse(str(SCHEMAS / name), parser))


def read_xml(path: Path) -> etree._Element:
    """Parse an output file, gunzipping `.gz` files."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return etree.fromstring(data, etree.XMLParser(no_network=True, resolve_entities=False))


def assert_valid(out: Path, index: str = "sitemap.xml") -> None:
    """Validate the index and every shard it names against the published XSDs."""
    root = read_xml(out / index)
    schema("siteindex.xsd").assertValid(root)
    for loc in root.iter(f"{NS}loc"):
        name = (loc.text or "").rsplit("/", 1)[-1]
        schema("sitemap-all.xsd").assertValid(read_xml(out / name))


def published(out: Path, index: str = "sitemap.xml") -> dict[str, str]:
    """Return `{loc: lastmod}` of every URL the published sitemaps list."""
    urls: dict[str, str] = {}
    for shard_loc in read_xml(out / index).iter(f"{NS}loc"):
        shard = read_xml(out / (shard_loc.text or "").rsplit("/", 1)[-1])
        for url in shard.iter(f"{NS}url"):
            if url.find(NEWS_ENTRY) is not None:
                continue  # a news sitemap: its URLs are in the shards too
            loc, lastmod = url.findtext(f"{NS}loc"), url.findtext(f"{NS}lastmod")
            assert loc is not None
            assert lastmod is not None
            assert loc not in urls, f"{loc} listed twice"
            urls[loc] = lastmod
    return urls


def shard_members(out: Path, index: str = "sitemap.xml") -> dict[str, set[str]]:
    """Return `{shard file name: set of locs}`."""
    members = {}
    for shard_loc in read_xml(out / index).iter(f"{NS}loc"):
        name = (shard_loc.text or "").rsplit("/", 1)[-1]
        members[name] = {u.text or "" for u in read_xml(out / name).iter(f"{NS}loc")}
    return members


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Return `{name: (inode, mtime_ns, bytes)}` of every file in `folder`."""
    result = {}
    for path in sorted(folder.iterdir()):
        if path.is_file():
            st = path.stat()
            result[path.name] = (st.st_ino, st.st_mtime_ns, path.read_bytes())
    return result


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write a file as editors and deploy tools do: temp file, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(text.encode() if isinstance(text, str) else text)
    temp.replace(path)


def page(
    title: str, body: str = "", canonical: str | None = None, robots: str | None = None
) -> str:
    """Return a small HTML page."""
    head = f"<title>{title}</title>"
    if canonical:
        head += f'<link rel="canonical" href="{canonical}">'
    if robots:
        head += f'<meta name="robots" content="{robots}">'
    return f"<!doctype html><html lang=en><head>{head}</head><body><p>{body}</p></body></html>"


class Site:
    """A temporary site: content under `root`, sitemaps in `out`, a config file."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "site"
        self.out = base / "out"
        self.state = base / "state"
        self.config = base / "sitemapd.toml"
        self.root.mkdir()
        self.configure()

    def configure(
        self, site: str = "", sitemap: str = "", source: str = "", extra: str = ""
    ) -> None:
        """Write the config: one directory source over `root` plus the extra TOML given
        (`extra`: more tables after the source)."""
        self.config.write_text(
            '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\n'
            f'state_dir = "state"\n{site}\n[sitemap]\n{sitemap}\n'
            f'[[source]]\ntype = "directory"\nroot = "site"\n{source}\n{extra}\n'
        )

    def write(self, relpath: str, text: str | bytes) -> Path:
        path = self.root / relpath
        write_atomic(path, text)
        return path

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `sitemapd ARGS -c config` as a subprocess."""
        return run_cli(*args, "-c", str(self.config), check=check)

    def build(self) -> subprocess.CompletedProcess[str]:
        return self.cli("build")

    def urls(self) -> dict[str, str]:
        return published(self.out)


def terminal_output(
    fd: int, quiet: float, reply: Callable[[bytes], bytes | None] | None = None
) -> bytes:
    """Return what the terminal whose controlling end is `fd` shows, read until its other
    end closes or it stays quiet `quiet` seconds; after each read, what `reply` returns
    for all shown so far (if anything) is typed in."""
    seen = b""
    while select.select([fd], [], [], quiet)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other end closed: Linux says EIO
            break
        if not chunk:
            break
        seen += chunk
        typed = reply(seen) if reply is not None else None
        if typed:
            os.write(fd, typed)
    return seen


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the real `sitemapd` entry point and return its result."""
    result = subprocess.run(
        [sys.executable, "-m", "sitemapd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"sitemapd {' '.join(args)} exited {result.returncode}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
    return result


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[object]:
    """Return a function that serves a folder on 127.0.0.1 and gives its base URL."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(folder: Path) -> str:
        def handler(*args: object) -> _QuietHandler:
            return _QuietHandler(*args, directory=str(folder))  # type: ignore[arg-type]

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
