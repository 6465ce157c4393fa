"""jdbc-source's connector side and its failures: tables and tasks, bad input, a database away."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from sluice.connect.api.errors import ConnectError
from sluice.connectors.jdbc.source import JdbcSourceConnector
from sluice.errors import ConfigError
from tests.connectors.jdbc.source_fixtures import (
    Database,
    SourceFactory,
    drain,
    postgres_database,
    values,
)
from tests.pg import PostgresServer

SECRET = "not-the-password-42"


class Reconfigurations:
    """A connector context that records reconfiguration requests."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.errors: list[Exception] = []

    def request_task_reconfiguration(self) -> None:
        self.requested.set()

    def raise_error(self, error: Exception) -> None:
        self.errors.append(error)


def _connector(db: Database, **config: Any) -> JdbcSourceConnector:
    connector = JdbcSourceConnector()
    connector.initialize(Reconfigurations())
    settings = {"connection.url": db.url, "topic.prefix": "db-", "connection.attempts": 1}
    connector.start({**settings, **{k.replace("_", "."): v for k, v in config.items()}})
    return connector


def _tables(configs: list[dict[str, Any]]) -> list[list[str]]:
    return [json.loads(config["tables"]) for config in configs]


def test_tables_are_split_over_tasks_and_filtered(source_db: Database) -> None:
    for table in ("a", "b", "c", "skipped"):
        source_db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
    connector = _connector(source_db, mode="bulk", table_blacklist="skipped")
    try:
        assert _tables(connector.task_configs(2)) == [["a", "b"], ["c"]]
        assert _tables(connector.task_configs(8)) == [["a"], ["b"], ["c"]]
        assert _tables(connector.task_configs(1)) == [["a", "b", "c"]]
    finally:
        connector.stop()


def test_new_tables_make_the_connector_reconfigure_its_tasks(source_sqlite: Database) -> None:
    source_sqlite.execute("CREATE TABLE first (id INTEGER PRIMARY KEY)")
    connector = _connector(source_sqlite, mode="incrementing", table_poll_interval_ms=20)
    try:
        context = connector.context
        assert isinstance(context, Reconfigurations)
        assert _tables(connector.task_configs(4)) == [["first"]]
        source_sqlite.execute("CREATE TABLE second (id INTEGER PRIMARY KEY)")
        assert context.requested.wait(10), "no reconfiguration was requested"
        assert _tables(connector.task_configs(4)) == [["first"], ["second"]]
    finally:
        connector.stop()


def test_wrong_credentials_fail_the_connector_without_showing_the_password(
    source_pg: Database,
) -> None:
    with pytest.raises(ConnectError) as failure:
        _connector(source_pg, mode="bulk", connection_password=SECRET)
    message = str(failure.value)
    assert "password authentication failed" in message
    assert SECRET not in message and "sluice:sluice@" not in message
    assert "***" in message  # the URL, password hidden


def test_a_missing_whitelisted_table_fails_the_connector(source_db: Database) -> None:
    source_db.execute("CREATE TABLE present (id INTEGER PRIMARY KEY)")
    with pytest.raises(ConnectError, match=r"no such table.*: absent"):
        _connector(source_db, mode="bulk", table_whitelist="present,absent")


def test_a_failing_query_fails_the_task(source_db: Database, jdbc_source: SourceFactory) -> None:
    task = jdbc_source(source_db, mode="bulk", query="SELECT missing FROM nowhere")
    with pytest.raises(ConnectError, match=r"reading the query failed.*nowhere"):
        task.poll()


def test_a_nullable_incrementing_column_is_refused(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    source_db.execute("CREATE TABLE loose (id INTEGER, name TEXT)")
    task = jdbc_source(
        source_db, mode="incrementing", table_whitelist="loose", incrementing_column_name="id"
    )
    with pytest.raises(
        ConnectError, match=r"table loose: cannot read incrementally by column id: it is nullable"
    ):
        task.poll()


def test_a_missing_column_is_named(source_db: Database, jdbc_source: SourceFactory) -> None:
    source_db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    task = jdbc_source(
        source_db, mode="timestamp", table_whitelist="t", timestamp_column_name="changed"
    )
    with pytest.raises(ConnectError, match=r"table t: no column 'changed' \(columns: id, name\)"):
        task.poll()


@pytest.mark.parametrize(
    ("config", "key", "message"),
    [
        ({"mode": "timestamp"}, "timestamp.column.name", "required with mode timestamp"),
        ({"mode": "sometimes"}, "mode", "must be one of bulk"),
        ({"mode": "bulk", "query": "SELECT 1", "table.whitelist": "t"}, "query", "either"),
        ({"mode": "incrementing", "query": "SELECT 1"}, "incrementing.column.name", "required"),
        ({"mode": "bulk", "connection.url": "not a url"}, "connection.url", "SQLAlchemy URL"),
    ],
)
def test_bad_settings_are_reported_per_key(config: dict[str, Any], key: str, message: str) -> None:
    full = {"connection.url": "sqlite:///x.db", "topic.prefix": "p-", **config}
    problems = {v.name: v.errors for v in JdbcSourceConnector().validate(full)}
    assert any(message in error for error in problems[key]), problems
    with pytest.raises(ConfigError, match=key):
        JdbcSourceConnector().start(full)


def test_a_database_away_for_a_while_is_retried(
    postgres: PostgresServer, jdbc_source: SourceFactory, caplog: pytest.LogCaptureFixture
) -> None:
    db = postgres_database(postgres)
    db.execute("CREATE TABLE items (id SERIAL PRIMARY KEY, name TEXT NOT NULL)")
    db.execute("INSERT INTO items (name) VALUES ('before')")
    task = jdbc_source(
        db,
        mode="incrementing",
        table_whitelist="items",
        connection_attempts=1000,
        connection_backoff_ms=20,
    )
    assert values(drain(task), "name") == ["before"]
    postgres.stop()
    for _ in range(3):
        assert not task.poll()  # logged, not failed
    assert "cannot reach" in caplog.text and "sluice:***@" in caplog.text
    postgres.start()
    db.execute("INSERT INTO items (name) VALUES ('after')")
    came: list[str] = []
    deadline = time.monotonic() + 30
    while not came and time.monotonic() < deadline:
        came = values(task.poll() or [], "name")
    assert came == ["after"]


def test_a_database_away_for_too_long_fails_the_task(
    postgres: PostgresServer, jdbc_source: SourceFactory
) -> None:
    db = postgres_database(postgres)
    db.execute("CREATE TABLE items (id SERIAL PRIMARY KEY)")
    task = jdbc_source(
        db,
        mode="incrementing",
        table_whitelist="items",
        connection_attempts=2,
        connection_backoff_ms=20,
    )
    assert drain(task) == []
    postgres.stop()
    with pytest.raises(ConnectError, match=r"cannot reach the database .* after 2 attempt"):
        for _ in range(5):
            task.poll()
