"""A real PostgreSQL server for tests: ``initdb`` into a temporary directory, started on a free
loopback port with ``wal_level=logical`` (so logical replication works), stopped by PID.

PostgreSQL refuses to run as root: when the tests run as root, the server runs as the
``postgres`` user (the directory is handed to it). Every database the tests make belongs to the
superuser ``sluice`` (password ``sluice``)::

    with PostgresServer() as server:
        server.create_database("shop")
        engine = sqlalchemy.create_engine(server.url("shop"))

The server's directory is made with :func:`tempfile.mkdtemp` (pytest's ``tmp_path`` is private
to root, which the ``postgres`` user cannot enter) and removed when the server is closed. The
fixtures ``shared_postgres`` (one server for the session: tests make databases of their own)
and ``postgres`` (a server of the test's own, to stop or kill) are imported by the conftests
that need them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from tests.conftest import free_port

USER = "sluice"
PASSWORD = "sluice"


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
            return str(candidate)
        raise RuntimeError(f"PostgreSQL's {name} is not installed (PATH or /usr/lib/postgresql)")
    return found


def _demote() -> tuple[int, int] | None:
    """The (uid, gid) to run the server as: ``postgres`` when we are root, else None."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


class PostgresServer:
    """One PostgreSQL server (see the module docstring); ``start`` / ``stop`` / ``kill``.

    A subclass may change the class attributes below (the benchmarks' server does).
    """

    directory_prefix = "sluice-pg-"
    """The prefix of the server's temporary directory's name."""
    initdb_timeout_s: float | None = None
    """How long ``initdb`` may run (None: no bound)."""
    pg_isready_timeout_s: float | None = None
    """How long one ``pg_isready`` may run (None: no bound beyond its own ``-t 1``)."""

    def __init__(self, *, settings: dict[str, str] | None = None) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=self.directory_prefix))
        self.directory.chmod(0o755)
        directory = self.directory
        self.data = directory / "data"
        self.log = directory / "postgres.log"
        self.port = free_port()
        self.settings = {
            "wal_level": "logical",
            "max_wal_senders": "10",
            "max_replication_slots": "10",
            "fsync": "off",  # the tests kill the client side, not the database's machine
            "synchronous_commit": "on",
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{directory}'",
            **(settings or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self._owner = _demote()
        try:
            self._initdb()
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise

    def _as_owner(self) -> dict[str, object]:
        if self._owner is None:
            return {}
        uid, gid = self._owner
        return {"user": uid, "group": gid, "extra_groups": []}

    def _initdb(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        password_file = self.directory / "password"
        password_file.write_text(PASSWORD + "\n")
        if self._owner is not None:
            for path in (self.directory, password_file):
                os.chown(path, *self._owner)
        subprocess.run(
            [
                _binary("initdb"),
                "-D",
                str(self.data),
                "-U",
                USER,
                "--pwfile",
                str(password_file),
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
            ],
            check=True,
            capture_output=True,
            timeout=self.initdb_timeout_s,
            **self._as_owner(),  # type: ignore[call-overload]
        )
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(f"port = {self.port}\n")
            for key, value in self.settings.items():
                conf.write(f"{key} = {value}\n")
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write("host replication all 127.0.0.1/32 scram-sha-256\n")

    def start(self, timeout_s: float = 30.0) -> PostgresServer:
        """Start the server; returns once it accepts connections."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [_binary("postgres"), "-D", str(self.data)],
                stdout=log,
                stderr=subprocess.STDOUT,
                **self._as_owner(),  # type: ignore[call-overload]
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited:\n{self.log.read_text()[-3000:]}")
            if self._ready():
                return self
            time.sleep(0.1)
        raise RuntimeError(f"postgres did not start in {timeout_s} s:\n{self.log.read_text()}")

    def _ready(self) -> bool:
        result = subprocess.run(
            [_binary("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"],
            capture_output=True,
            check=False,
            timeout=self.pg_isready_timeout_s,
        )
        return result.returncode == 0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self, timeout_s: float = 30.0) -> None:
        """Fast shutdown (SIGINT: open transactions are rolled back, the data is kept)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the postmaster (its children exit when they notice)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def restart(self) -> PostgresServer:
        self.stop()
        return self.start()

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg2") -> str:
        """A SQLAlchemy URL of ``database`` as the superuser."""
        return f"{driver}://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        """A libpq connection string of ``database`` as the superuser."""
        return f"host=127.0.0.1 port={self.port} user={USER} password={PASSWORD} dbname={database}"

    def create_database(self, name: str) -> str:
        """Create database ``name``; returns its SQLAlchemy URL."""
        import psycopg2

        connection = psycopg2.connect(self.dsn())
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return self.url(name)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server (killing it if it does not stop) and remove its directory."""
        try:
            self.stop()
        finally:
            self.kill()
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[PostgresServer]:
    """One server for the whole session; tests stay apart by making databases of their own."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    """A server of the test's own (to stop, restart or kill)."""
    with PostgresServer() as server:
        yield server
