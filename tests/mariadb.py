"""A real, throwaway MariaDB server with a row-based binlog for tests (Debian's
`mariadb-server`, run as `mysql` in a temp datadir on a loopback port)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pymysql
import pytest
from pg import free_port

SERVER = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")
ACCOUNT = "mysql"
# What sitemapd connects as: the rights docs/mysql-binlog.md asks an operator to grant.
USER, PASSWORD = "sitemapd", "pw-not-secret"
GRANTS = "SELECT, REPLICATION SLAVE, REPLICATION CLIENT"


def unavailable(reason: str) -> NoReturn:
    """Skip the test locally; fail it in CI, where MariaDB must be present."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"MariaDB is required in CI: {reason}")
    pytest.skip(f"no MariaDB: {reason}")


class MariaDB:
    """One server in a temp dir; stop()/start() keep port, data and binlogs."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sitemapd-mariadb-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._as_mysql: list[str] = []
        if os.geteuid() == 0:
            # mariadbd refuses to run as root unless told to; run it as its own user.
            account = pwd.getpwnam(ACCOUNT)
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as_mysql = ["runuser", "-u", ACCOUNT, "--"]

    def dsn(self, database: str, user: str = USER, password: str = PASSWORD) -> str:
        """Return the URL of `database` for `user`."""
        return f"mysql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        """Create the data directory and sitemapd's user, and start the server."""
        done = subprocess.run(
            [
                *self._as_mysql,
                str(INSTALL_DB),
                "--no-defaults",
                f"--datadir={self.data}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {done.stderr.strip()[-2000:]}")
        self.start()
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'")
            cur.execute(f"GRANT {GRANTS} ON *.* TO '{USER}'@'127.0.0.1'")

    def start(self, *settings: str) -> None:
        """Start the server (again) with a row binlog and `settings` (mariadbd options);
        returns once it accepts connections."""
        command = [
            *self._as_mysql,
            str(SERVER),
            "--no-defaults",
            f"--datadir={self.data}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.root / 'mysqld.sock'}",
            f"--pid-file={self.root / 'mysqld.pid'}",
            f"--log-error={self.root / 'error.log'}",
            f"--log-bin={self.data / 'binlog'}",
            "--server-id=1",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=32M",
            "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=2",
            "--sync-binlog=0",
            "--default-time-zone=+00:00",
            *settings,
        ]
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.connect().close()
                return
            except pymysql.Error:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    log = self.root / "error.log"
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    self.stop()
                    raise RuntimeError(f"mariadbd did not start: {tail}") from None
                time.sleep(0.1)

    def stop(self, kill: bool = False) -> None:
        """Stop the server: SIGKILL (a crash as clients see it) or a clean shutdown."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if kill:
            process.kill()
        else:
            process.terminate()
        process.wait(60)

    def connect(self, database: str | None = None, **kwargs: Any) -> pymysql.Connection[Any]:
        """Return an autocommit connection as root (over loopback, no password)."""
        kwargs.setdefault("autocommit", True)
        return pymysql.connect(
            host="127.0.0.1", port=self.port, user="root", database=database, **kwargs
        )

    def create_database(self, name: str) -> None:
        """Create an empty database `name` (dropping one of that name)."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {name}")
            cur.execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")

    def destroy(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start_mariadb() -> MariaDB:
    """Return a running throwaway server; skips (fails in CI) when none can start."""
    if not (SERVER.exists() and INSTALL_DB.exists()):
        unavailable(f"no {SERVER} (apt install mariadb-server)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(ACCOUNT)
        except KeyError:
            unavailable(f"running as root and there is no {ACCOUNT!r} user to run the server")
    failure = ""
    # A port free a moment ago may be taken by another test run meanwhile: a new one.
    for _ in range(3):
        server = MariaDB()
        try:
            server.init()
        except (RuntimeError, OSError, subprocess.SubprocessError, pymysql.Error) as exc:
            server.destroy()
            failure = str(exc)
            continue
        return server
    unavailable(f"cannot start a server: {failure}")


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDB]:
    """Yield one real MariaDB server for the session; removed at the end."""
    server = start_mariadb()
    try:
        yield server
    finally:
        server.destroy()
