"""jdbc-sink on a real PostgreSQL: ON CONFLICT upserts, types, evolution, credentials, and the
database stopped in the middle of a stream."""

from __future__ import annotations

import datetime as dt
import threading
import time
from decimal import Decimal

import pytest

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConnectError
from sluice.connectors.jdbc.sink import JdbcSinkConnector
from tests.connect.worker_helpers import in_process_herder
from tests.connectors.jdbc.sink_fixtures import ITEM, execute, keyed, record, rows
from tests.connectors.jdbc.test_sink_schema import EVERY_TYPE, EXPECTED, VALUES

UPSERT = {
    "insert_mode": "upsert",
    "pk_mode": "record_key",
    "auto_create": "true",
    "delete_enabled": "true",
}


def test_upserts_and_deletes_with_repeated_keys_in_a_batch(jdbc_sink, sink_pg_url):
    task = jdbc_sink(sink_pg_url, **UPSERT)
    task.put(
        [
            keyed(1, "a", 0),
            keyed(2, "b", 1),
            keyed(1, "c", 2),  # same key, same run: last write wins
            keyed(2, None, 3),
            keyed(2, "d", 4),  # deleted, then back
            keyed(3, "e", 5),
            keyed(3, None, 6),
        ]
    )
    task.put([keyed(1, "f", 7), keyed(4, "g", 8)])
    assert rows(sink_pg_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "f"),
        (2, "d"),
        (4, "g"),
    ]


def test_every_type_is_created_and_written(jdbc_sink, sink_pg_url):
    task = jdbc_sink(
        sink_pg_url, pk_mode="record_value", pk_fields="id", insert_mode="upsert",
        auto_create="true",
    )  # fmt: skip
    task.put([record(Struct(EVERY_TYPE, VALUES))])
    task.put([record(Struct(EVERY_TYPE, VALUES), offset=1)])  # again: an upsert of every column
    types = rows(
        sink_pg_url,
        "SELECT upper(data_type), is_nullable FROM information_schema.columns "
        "WHERE table_name = 'orders' ORDER BY ordinal_position",
    )
    assert [t for t, _ in types] == EXPECTED["postgresql"]
    assert [n for _, n in types].count("YES") == 1  # i32, the optional field
    (row,) = rows(sink_pg_url, "SELECT * FROM orders")
    assert (*row[:8], bytes(row[8]), *row[9:]) == (
        1, -8, 1600, None, 0.5, 1e300, True, "héllo", b"\x00\xff", Decimal("12.34"),
        dt.date(2024, 2, 29), dt.time(13, 14, 15, 16000),
        dt.datetime(2024, 2, 29, 23, 59, 58, 123000),
    )  # fmt: skip


def test_timestamps_are_utc_in_both_kinds_of_columns(jdbc_sink, sink_pg_url):
    execute(
        sink_pg_url,
        "SET TIME ZONE 'America/New_York'",
        "ALTER DATABASE " + sink_pg_url.rsplit("/", 1)[1] + " SET timezone TO 'Asia/Tokyo'",
        "CREATE TABLE events (id BIGINT PRIMARY KEY, plain TIMESTAMP, zoned TIMESTAMPTZ)",
    )
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    schema = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("plain", Schema("int64", name="org.apache.kafka.connect.data.Timestamp")),
            Field("zoned", Schema("int64", name="org.apache.kafka.connect.data.Timestamp")),
        ]
    )
    task = jdbc_sink(sink_pg_url, table_name_format="events")
    task.put([record(Struct(schema, {"id": 1, "plain": moment, "zoned": moment}))])
    assert rows(sink_pg_url, "SELECT plain, zoned AT TIME ZONE 'UTC' FROM events") == [
        (moment.replace(tzinfo=None), moment.replace(tzinfo=None))
    ]


def test_auto_evolve_on_postgres(jdbc_sink, sink_pg_url):
    task = jdbc_sink(sink_pg_url, **UPSERT, auto_evolve="true", table_name_format="public.${topic}")
    task.put([keyed(1, "a", 0)])
    wider = Schema.struct([*ITEM.fields, Field("Qty", Schema("int32"))])  # mixed case: quoted
    task.put([record(Struct(wider, {"id": 1, "item": "a", "Qty": 2}), {"id": 1}, offset=1)])
    assert rows(sink_pg_url, 'SELECT id, item, "Qty" FROM orders') == [(1, "a", 2)]
    nullable = rows(
        sink_pg_url,
        "SELECT is_nullable FROM information_schema.columns WHERE column_name = 'Qty'",
    )
    assert nullable == [("YES",)]


def test_two_tasks_creating_one_table_at_once(jdbc_sink, sink_pg_url):
    tasks = [jdbc_sink(sink_pg_url, **UPSERT) for _ in range(4)]
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            tasks[index].put([keyed(index, f"by {index}", index)])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert rows(sink_pg_url, "SELECT count(*) FROM orders") == [(4,)]


def test_wrong_password_fails_the_connector_with_the_databases_message(sink_pg_url, tmp_path):
    wrong = "not-the-password-42"
    connector = JdbcSinkConnector()
    config = {
        "connection.url": sink_pg_url,
        "connection.password": wrong,
        "connection.attempts": "1",
        "topics": "orders",
        "auto.create": "true",
    }
    with pytest.raises(ConnectError) as caught:
        connector.start(config)
    message = str(caught.value)
    assert "password authentication failed" in message, message
    assert wrong not in message, message

    # The worker (its broker is never reached: the connector fails before any task starts)
    herder = in_process_herder("127.0.0.1:1", tmp_path)
    try:
        herder.create_connector("pg-sink", {"connector.class": "jdbc-sink", **config})
        status = herder.connector_status("pg-sink")
    finally:
        herder.runtime.stop()
    assert status["connector"]["state"] == "FAILED", status
    assert "password authentication failed" in status["connector"]["trace"]
    assert wrong not in str(status)


def test_an_unreachable_database_fails_the_connector(sink_pg_url):
    from tests.conftest import free_port

    url = f"postgresql+psycopg2://sluice:secret@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(ConnectError, match=r"cannot connect to .*\*\*\*@127.0.0.1.*refused"):
        JdbcSinkConnector().start(
            {"connection.url": url, "auto.create": "true", "connection.attempts": "1"}
        )


def test_the_database_stopped_mid_stream_loses_nothing(jdbc_sink, postgres):
    url = postgres.create_database("outage")
    retried = threading.Event()

    def sleep(seconds: float) -> None:
        retried.set()
        time.sleep(seconds)

    task = jdbc_sink(url, **UPSERT, max_retries=200, retry_backoff_ms=100, sleep=sleep)
    task.put([keyed(n, f"first {n}", n) for n in range(50)])
    postgres.stop()

    def restart_once_retrying() -> None:
        retried.wait(60)
        postgres.start()

    restarter = threading.Thread(target=restart_once_retrying)
    restarter.start()
    try:
        # blocks, retrying, until the server is back: nothing acknowledged before it is written
        task.put([keyed(n, f"second {n}", 100 + n) for n in range(25, 75)])
    finally:
        restarter.join(60)
    assert retried.is_set()
    assert rows(url, "SELECT count(*), min(id), max(id) FROM orders") == [(75, 0, 74)]
    assert rows(url, "SELECT item FROM orders WHERE id IN (24, 25) ORDER BY id") == [
        ("first 24",),
        ("second 25",),
    ]


def test_the_task_fails_once_retries_are_used_up(jdbc_sink, postgres):
    url = postgres.create_database("gone")
    task = jdbc_sink(url, **UPSERT, max_retries=2, retry_backoff_ms=0)
    task.put([keyed(1, "a", 0)])
    postgres.stop()
    with pytest.raises(ConnectError, match=r"writing 1 records to .* failed after 2 retries: "):
        task.put([keyed(2, "b", 1)])
