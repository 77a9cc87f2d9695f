"""`sitemapd check-config` names each change log whose database driver is not installed,
as `build` would fail on it, instead of saying "ok"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the real command line with the named modules blocked: `import psycopg2` raises
# ImportError, as it does where the driver is not installed.
BLOCKED = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "from sitemapd.cli.app import main\n"
    "main(sys.argv[2:])\n"
)

SITE = '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
ROWS = (
    'url_template = "/news/{slug}"\nlive = { status = "publish" }\n'
    'fingerprint_columns = ["title"]\n'
)
SOURCES = {
    "table": (
        'dsn = "postgresql://cms:secret@127.0.0.1:9/cms"\ntable = "sitemap_changes"\n',
        "PostgreSQL needs psycopg2: pip install 'sitemapd[postgres]'",
    ),
    "logical": (
        'mode = "logical"\ndsn = "postgresql://cms@127.0.0.1:9/cms"\ntable = "articles"\n' + ROWS,
        "mode 'logical' needs psycopg 3 and psycopg2: pip install 'sitemapd[postgres-logical]'",
    ),
    "binlog": (
        'mode = "binlog"\ndsn = "mysql://cms@127.0.0.1:9/cms"\ntable = "articles"\n'
        + ROWS
        + '[source.columns]\nchanged_at = "updated_at"\n',
        "mode 'binlog' needs PyMySQL and mysql-replication: pip install 'sitemapd[mysql]'",
    ),
    "sql": (
        'dsn = "mysql+pymysql://cms@127.0.0.1:9/cms"\ntable = "sitemap_changes"\n',
        "mysql+pymysql databases need SQLAlchemy 2: pip install 'sitemapd[sql]'",
    ),
}


def _config(tmp_path: Path, *kinds: str) -> Path:
    path = tmp_path / "sitemapd.toml"
    tables = "".join(
        f'[[source]]\ntype = "changelog"\nname = "{kind}"\n{SOURCES[kind][0]}' for kind in kinds
    )
    path.write_text(SITE + tables)
    return path


def _run(config: Path, blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED, blocked, *args, "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_check_config_names_each_missing_driver_as_build_does(tmp_path: Path) -> None:
    config = _config(tmp_path, *SOURCES)
    blocked = "psycopg2,pymysqlreplication,sqlalchemy"
    checked = _run(config, blocked, "check-config")
    assert checked.returncode == 1, checked.stderr
    assert "ok:" not in checked.stdout
    lines = checked.stderr.splitlines()
    assert len(lines) == len(SOURCES), checked.stderr
    for line, (_, hint) in zip(lines, SOURCES.values(), strict=True):
        assert line.startswith("sitemapd: error: changelog "), line
        assert line.endswith(hint), line
    assert "secret" not in checked.stderr  # the dsn's password is not printed
    # The same words `build` fails with.
    built = _run(_config(tmp_path, "table"), blocked, "build")
    assert built.returncode == 1
    assert built.stderr.splitlines()[-1] == lines[0]


@pytest.mark.parametrize("kind", ["logical", "binlog"])
def test_either_of_two_drivers_missing_is_named(tmp_path: Path, kind: str) -> None:
    blocked = {"logical": "psycopg", "binlog": "pymysql"}[kind]
    checked = _run(_config(tmp_path, kind), blocked, "check-config")
    assert checked.returncode == 1
    assert checked.stderr.strip().endswith(SOURCES[kind][1])


def test_check_config_is_ok_with_every_driver_installed(tmp_path: Path) -> None:
    checked = _run(_config(tmp_path, *SOURCES), "unrelated_module", "check-config")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok: ")
