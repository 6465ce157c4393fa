"""Fixtures and helpers of the jdbc-sink tests: started tasks, databases, records, rows.

The tasks are driven directly (start, put, flush, stop), as units of the connector, against
real databases: SQLite files in ``tmp_path`` and databases of the session's PostgreSQL server.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice.connect.api.connector import TopicPartition
from sluice.connect.api.data import Field, Schema, SinkRecord, Struct
from sluice.connectors.jdbc.sink import JdbcSinkTask
from tests.pg import PostgresServer

SinkFactory = Callable[..., JdbcSinkTask]

ID_KEY = Schema.struct([Field("id", Schema("int64"))], name="key")
ITEM = Schema.struct(
    [Field("id", Schema("int64")), Field("item", Schema("string", optional=True))], name="value"
)


def record(
    value: Any,
    key: Any = None,
    *,
    offset: int = 0,
    topic: str = "orders",
    partition: int = 0,
    value_schema: Schema | None = None,
    key_schema: Schema | None = None,
) -> SinkRecord:
    """A sink record; struct values and keys bring their schema."""
    if isinstance(value, Struct) and value_schema is None:
        value_schema = value.schema
    if isinstance(key, Struct) and key_schema is None:
        key_schema = key.schema
    return SinkRecord(topic, partition, key_schema, key, value_schema, value, kafka_offset=offset)


def keyed(key: int, item: str | None, offset: int = 0, topic: str = "orders") -> SinkRecord:
    """A record keyed by struct ``{id}`` with value struct ``{id, item}`` (None: tombstone)."""
    value = None if item is None else Struct(ITEM, {"id": key, "item": item})
    return record(value, Struct(ID_KEY, {"id": key}), offset=offset, topic=topic)


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """The rows of a query, read through a connection of its own."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def execute(url: str, *statements: str) -> None:
    """Run DDL/DML statements in one transaction."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.exec_driver_sql(statement)
    finally:
        engine.dispose()


def flush(task: JdbcSinkTask, *records: SinkRecord) -> None:
    """What the runtime does after put: flush the offsets of ``records``."""
    task.flush(
        {TopicPartition(r.topic, r.kafka_partition or 0): r.kafka_offset + 1 for r in records}
    )


@pytest.fixture
def jdbc_sink() -> Iterator[SinkFactory]:
    """``jdbc_sink(url, insert_mode=..., sleep=...)``: a started JdbcSinkTask (underscores of
    keywords become dots; ``sleep`` replaces the retry back-off's sleep)."""
    started: list[JdbcSinkTask] = []

    def make(url: str, sleep: Callable[[float], None] | None = None, **config: Any) -> JdbcSinkTask:
        task = JdbcSinkTask() if sleep is None else JdbcSinkTask(sleep=sleep)
        settings = {key.replace("_", "."): str(value) for key, value in config.items()}
        task.start({"connection.url": url, **settings})
        started.append(task)
        return task

    yield make
    for task in started:
        task.stop()


@pytest.fixture
def sink_sqlite_url(tmp_path: Path) -> str:
    """A SQLite database file of the test's own."""
    return f"sqlite:///{tmp_path / 'sink.db'}"


@pytest.fixture
def sink_pg_url(shared_postgres: PostgresServer) -> str:
    """A fresh database on the session's PostgreSQL server."""
    return shared_postgres.create_database(f"sink_{uuid.uuid4().hex[:10]}")


@pytest.fixture(params=["sqlite", "postgresql"])
def sink_url(request: pytest.FixtureRequest) -> str:
    """Each database the sink is tested on: a SQLite file, then a PostgreSQL database."""
    name = "sink_sqlite_url" if request.param == "sqlite" else "sink_pg_url"
    url: str = request.getfixturevalue(name)
    return url
