"""A real WordPress (Debian's `wordpress` package) for tests: installed into a MariaDB
database of the session's server, driven through its own PHP API by php-cli scripts,
and served by PHP's built-in server on loopback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from lxml import etree
from mariadb import MariaDB
from pg import free_port

CORE = Path("/usr/share/wordpress")
DATABASE, USER, PASSWORD = "wpsite", "wordpress", "wp-pw-not-secret"
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
_CONFIG = """<?php
define('DB_NAME', '{database}');
define('DB_USER', '{user}');
define('DB_PASSWORD', '{password}');
define('DB_HOST', '127.0.0.1:{port}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
// No cron requests, update checks or calls outside loopback while tests run.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
$table_prefix = 'wp_';
if (!defined('ABSPATH')) {{ define('ABSPATH', __DIR__ . '/'); }}
require_once ABSPATH . 'wp-settings.php';
"""
# PHP's built-in server answers a path with a file suffix (/wp-sitemap.xml) with a 404
# unless a router hands what is no file to WordPress, as a web server's rewrite does.
_ROUTER = """<?php
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ($path !== '/' && is_file(__DIR__ . $path)) { return false; }
require __DIR__ . '/index.php';
"""
_INSTALL = """
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
wp_install('sitemapd test', 'admin', 'admin@example.com', true, '', 'admin-pw-not-secret');
update_option('home', $home);
update_option('siteurl', $home);
"""


def unavailable(reason: str) -> NoReturn:
    """Skip the test locally; fail it in CI, where WordPress must be present."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"WordPress is required in CI: {reason}")
    pytest.skip(f"no WordPress: {reason}")


class WordPress:
    """One WordPress site: `php()` runs PHP with WordPress loaded, `get()` fetches a page."""

    def __init__(self, server: MariaDB, root: Path) -> None:
        self.server = server
        self.root = root
        self.port = free_port()
        self.home = f"http://127.0.0.1:{self.port}"
        self._web: subprocess.Popen[bytes] | None = None

    def dsn(self, user: str = "sitemapd", password: str = "pw-not-secret") -> str:
        """Return the URL of the site's database for sitemapd's user."""
        return self.server.dsn(DATABASE, user, password)

    def install(self) -> None:
        """Copy WordPress, create its database and user, install it and serve it."""
        shutil.copytree(CORE, self.root, symlinks=True)
        (self.root / "wp-config.php").write_text(
            _CONFIG.format(database=DATABASE, user=USER, password=PASSWORD, port=self.server.port)
        )
        (self.root / "router.php").write_text(_ROUTER)
        self.server.create_database(DATABASE)
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute(
                f"CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'"
            )
            cur.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1'")
        self.php(_INSTALL, installing=True)
        self._web = subprocess.Popen(
            ["php", "-S", f"127.0.0.1:{self.port}", "-t", str(self.root), "router.php"],
            cwd=self.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/wp-sitemap.xml")
                return
            except OSError:
                if self._web.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("php -S did not answer") from None
                time.sleep(0.1)

    def php(self, code: str, installing: bool = False, **values: Any) -> Any:
        """Run `code` with WordPress loaded (`$home` and each of `values` set as PHP
        variables) and return what it prints, decoded as JSON when it is.

        Raises RuntimeError with PHP's output when PHP fails.
        """
        head = "<?php\n"
        if installing:
            head += "define('WP_INSTALLING', true);\n"
        head += f"$_SERVER['HTTP_HOST'] = '127.0.0.1:{self.port}';\n"
        head += "$_SERVER['REQUEST_URI'] = '/';\n"
        head += f"$home = {json.dumps(self.home)};\n"
        for name, value in values.items():
            head += f"${name} = json_decode({json.dumps(json.dumps(value))}, true);\n"
        head += f"require {json.dumps(str(self.root / 'wp-load.php'))};\n"
        with tempfile.NamedTemporaryFile("w", suffix=".php", dir=self.root, delete=False) as f:
            f.write(head + code)
        try:
            done = subprocess.run(
                ["php", f.name], capture_output=True, text=True, timeout=120, check=False
            )
        finally:
            os.unlink(f.name)
        if done.returncode != 0 or "Fatal error" in done.stdout:
            raise RuntimeError(f"php failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
        out = done.stdout.strip()
        try:
            return json.loads(out) if out else None
        except ValueError:
            return out

    def get(self, path: str) -> bytes:
        """Return the body of `path` (or a URL on the site); raises OSError."""
        url = path if path.startswith("http") else self.home + path
        with urllib.request.urlopen(url, timeout=30) as answer:
            body: bytes = answer.read()
            return body

    def sitemap_urls(self) -> dict[str, set[str]]:
        """Return the URLs /wp-sitemap.xml (or /?sitemap=index) lists, by the sitemap
        that lists them ('posts-post', 'taxonomies-category', 'users', ...)."""
        found: dict[str, set[str]] = {}
        # With plain permalinks (no rewrite rules) the index is only at its query form.
        index = etree.fromstring(self.get("/wp-sitemap.xml") or self.get("/?sitemap=index"))
        for loc in index.iter(f"{SITEMAP_NS}loc"):
            url = loc.text or ""
            kind = _sitemap_kind(url)
            urlset = etree.fromstring(self.get(url))
            found.setdefault(kind, set()).update(
                entry.text or "" for entry in urlset.iter(f"{SITEMAP_NS}loc")
            )
        return found

    def destroy(self) -> None:
        """Stop serving and remove the copy."""
        web, self._web = self._web, None
        if web is not None and web.poll() is None:
            web.terminate()
            web.wait(30)
        shutil.rmtree(self.root, ignore_errors=True)


def _sitemap_kind(url: str) -> str:
    """Return which WordPress sitemap `url` is ('posts-post', 'taxonomies-post_tag')."""
    if "wp-sitemap-" in url:
        return url.rsplit("wp-sitemap-", 1)[1].rsplit("-", 1)[0]
    # Plain permalinks: ?sitemap=posts&sitemap-subtype=post&paged=1
    query = dict(part.split("=", 1) for part in url.split("?", 1)[1].split("&") if "=" in part)
    return "-".join(filter(None, (query.get("sitemap"), query.get("sitemap-subtype"))))


@pytest.fixture(scope="session")
def wordpress(mariadb: MariaDB) -> Iterator[WordPress]:
    """Yield one installed, served WordPress site for the session; removed at the end."""
    if not (CORE / "wp-load.php").exists() or shutil.which("php") is None:
        unavailable("apt install wordpress php-cli php-mysql php-xml (make system-deps)")
    modules = subprocess.run(["php", "-m"], capture_output=True, text=True, check=False).stdout
    if not {"mysqli", "xml"} <= set(modules.split()):
        unavailable("PHP lacks mysqli or xml (apt install php-mysql php-xml)")
    site = WordPress(mariadb, Path(tempfile.mkdtemp(prefix="sitemapd-wordpress-")) / "wp")
    try:
        site.install()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        site.destroy()
        unavailable(f"cannot install WordPress: {exc}")
    try:
        yield site
    finally:
        site.destroy()
