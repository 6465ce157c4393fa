"""Fixtures and helpers of the jdbc-source tests: databases, started tasks, offsets, draining.

The tasks are driven directly (start, poll until empty, stop), as units of the connector,
against real databases: SQLite files in ``tmp_path`` and databases of the session's PostgreSQL
server (``shared_postgres``, from this folder's conftest). A fake offset store plays the
runtime's committed offsets (``context.offset_storage_reader``), fed by ``offsets.commit``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice.connect.api.data import SourceRecord
from sluice.connectors.jdbc.source import JdbcSourceTask
from tests.connectors.source_offsets import FakeContext, FakeOffsets
from tests.pg import PostgresServer


@dataclass
class Database:
    """A database to read from: its URL, its dialect, and how to run SQL on it."""

    url: str
    dialect: str

    @property
    def serial(self) -> str:
        """The DDL of an autoincrement integer primary key."""
        return "INTEGER PRIMARY KEY" if self.dialect == "sqlite" else "SERIAL PRIMARY KEY"

    @property
    def timestamp(self) -> str:
        """The DDL type of a time-zone-aware timestamp (SQLite stores text)."""
        return "TIMESTAMP" if self.dialect == "sqlite" else "TIMESTAMPTZ"

    def execute(self, *statements: str, **params: Any) -> None:
        """Run statements in one committed transaction."""
        engine = sa.create_engine(self.url)
        try:
            with engine.begin() as connection:
                for statement in statements:
                    connection.execute(sa.text(statement), params)
        finally:
            engine.dispose()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as connection:
                return [tuple(row) for row in connection.execute(sa.text(sql))]
        finally:
            engine.dispose()


def sqlite_database(tmp_path: Path) -> Database:
    return Database(f"sqlite:///{tmp_path / 'source.db'}", "sqlite")


def postgres_database(server: PostgresServer) -> Database:
    """A new database of ``server`` whose sessions use UTC (as the tests' literals do)."""
    name = f"src_{uuid.uuid4().hex[:10]}"
    database = Database(server.create_database(name), "postgresql")
    database.execute(f"ALTER DATABASE {name} SET timezone = 'UTC'")
    return database


@pytest.fixture(params=["sqlite", "postgresql"])
def source_db(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """A fresh, empty database: a SQLite file, then a PostgreSQL database (parametrized)."""
    if request.param == "sqlite":
        return sqlite_database(tmp_path)
    return postgres_database(request.getfixturevalue("shared_postgres"))


@pytest.fixture
def source_sqlite(tmp_path: Path) -> Database:
    """A fresh SQLite database file."""
    return sqlite_database(tmp_path)


@pytest.fixture
def source_pg(shared_postgres: PostgresServer) -> Database:
    """A fresh PostgreSQL database of the shared server."""
    return postgres_database(shared_postgres)


@pytest.fixture
def source_offsets() -> FakeOffsets:
    """The committed offsets every task of one test shares."""
    return FakeOffsets()


SourceFactory = Callable[..., JdbcSourceTask]


@pytest.fixture
def jdbc_source(source_offsets: FakeOffsets) -> Iterator[SourceFactory]:
    """``jdbc_source(db, mode="incrementing", table_whitelist="t", ...)``: a started
    JdbcSourceTask reading ``db`` with the shared offsets (underscores in keywords become dots;
    topic prefix ``db-``, poll interval 20 ms, one connection attempt unless given)."""
    started: list[JdbcSourceTask] = []

    def make(db: Database, **config: Any) -> JdbcSourceTask:
        settings = {
            "connection_url": db.url,
            "topic_prefix": "db-",
            "poll_interval_ms": 20,
            "connection_attempts": 1,
            **config,
        }
        task = JdbcSourceTask()
        task.initialize(FakeContext(source_offsets))
        task.start({key.replace("_", "."): value for key, value in settings.items()})
        started.append(task)
        return task

    yield make
    for task in started:
        task.stop()


def drain(task: JdbcSourceTask, timeout: float = 10.0) -> list[SourceRecord]:
    """Poll until a poll returns nothing; fails if that takes longer than ``timeout``."""
    came: list[SourceRecord] = []
    deadline = time.monotonic() + timeout
    while True:
        records = task.poll()
        if not records:
            return came
        came.extend(records)
        if time.monotonic() > deadline:
            raise AssertionError(f"still polling after {timeout}s: {len(came)} records came")


def values(records: list[SourceRecord], *fields: str) -> list[Any]:
    """The given fields of each record's struct (one field: the values themselves)."""
    if len(fields) == 1:
        return [record.value.get(fields[0]) for record in records]
    return [tuple(record.value.get(f) for f in fields) for record in records]
