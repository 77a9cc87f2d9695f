"""A real, throwaway PostgreSQL server for tests (Debian's binaries, run as `postgres`)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest

USER = "postgres"
DATABASE = "sitemapd"
# The server trusts loopback; the password only shows that none leaks into messages.
PASSWORD = "pw-not-secret"


def find_bin() -> Path | None:
    """Return the newest /usr/lib/postgresql/<version>/bin holding initdb, or None."""
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not found:
        return None
    newest = max(found, key=lambda path: int(Path(path).parts[-3]))
    return Path(newest).parent


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unavailable(reason: str) -> NoReturn:
    """Skip the test locally; fail it in CI, where PostgreSQL must be present."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required in CI: {reason}")
    pytest.skip(f"no PostgreSQL: {reason}")


class Postgres:
    """One server in a temp dir on a loopback port; stop()/start() keep port and data."""

    def __init__(self, bindir: Path) -> None:
        """Prepare (but do not start) a server using the binaries in `bindir`."""
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="sitemapd-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.dsn = self.dsn_for(DATABASE)
        self._as_postgres: list[str] = []
        if os.geteuid() == 0:
            # initdb and postgres refuse to run as root.
            account = pwd.getpwnam(USER)
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as_postgres = ["runuser", "-u", USER, "--"]
        os.chmod(self.root, 0o700)

    def dsn_for(self, database: str) -> str:
        """Return the URL of `database` on this server."""
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as_postgres, str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {done.stderr.strip()} {tail}")

    def init(self) -> None:
        """Create the cluster and the test database, and start the server."""
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync"
        )
        settings = (
            "listen_addresses = '127.0.0.1'\n"
            f"port = {self.port}\n"
            f"unix_socket_directories = '{self.root}'\n"
            "fsync = off\nfull_page_writes = off\n"
            "shared_buffers = 16MB\nmax_connections = 40\n"
            # Logical decoding for the change-stream mode; the change-table tests ignore it.
            "wal_level = logical\nmax_replication_slots = 20\nmax_wal_senders = 20\n"
            "track_commit_timestamp = on\n"
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(settings)
        self.start()
        with self.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")

    def start(self) -> None:
        """Start the server (again) on the same port and data; returns when it accepts."""
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "start"
        )

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; `immediate` is a crash as far as clients can tell."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def connect(self, database: str = DATABASE, **kwargs: Any) -> psycopg.Connection[Any]:
        """Return an autocommit connection (unless told otherwise) to `database`."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.dsn_for(database), **kwargs)

    def create_database(self, name: str) -> str:
        """Create an empty database `name` and return its URL."""
        with self.connect("postgres") as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name}")
        return self.dsn_for(name)

    def destroy(self) -> None:
        """Stop the server if running and remove its directory."""
        for mode in ("fast", "immediate"):
            if not (self.data / "postmaster.pid").exists():
                break
            try:
                self.stop(mode)
            except RuntimeError:
                continue
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> Postgres:
    """Return a running throwaway server; skips (fails in CI) when none can start."""
    bindir = find_bin()
    if bindir is None:
        unavailable("no /usr/lib/postgresql/*/bin/initdb (apt install postgresql)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            unavailable(f"running as root and there is no {USER!r} user to run the server")
    server = Postgres(bindir)
    try:
        server.init()
    except (RuntimeError, OSError, subprocess.SubprocessError, psycopg.Error) as exc:
        server.destroy()
        unavailable(f"cannot start a server: {exc}")
    return server


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """Yield one real PostgreSQL server for the session; removed at the end."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.destroy()
