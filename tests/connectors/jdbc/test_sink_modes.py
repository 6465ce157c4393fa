"""jdbc-sink on SQLite and PostgreSQL (each test on both): insert/upsert/update modes, pk
modes, deletes, coalescing in a batch."""

from __future__ import annotations

import pytest

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connectors.jdbc._sink_config import SinkSettings
from sluice.connectors.jdbc._sink_records import RecordPlanner
from sluice.connectors.jdbc._sink_sql import write
from sluice.connectors.jdbc._sink_tables import TableCatalog
from sluice.connectors.jdbc.sink import JdbcSinkConnector, JdbcSinkTask, create_engine
from sluice.errors import ConfigError
from tests.connectors.jdbc.sink_fixtures import ITEM, execute, flush, keyed, record, rows

UPSERT = {
    "insert_mode": "upsert",
    "pk_mode": "record_key",
    "auto_create": "true",
    "delete_enabled": "true",
}


def test_insert_mode_creates_the_table_and_inserts(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, auto_create="true")
    batch = [record(Struct(ITEM, {"id": n, "item": f"i{n}"}), offset=n) for n in range(5)]
    task.put(batch)
    flush(task, *batch)
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [
        (n, f"i{n}") for n in range(5)
    ]


def test_upsert_keeps_the_last_write_of_each_key_in_a_batch(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, **UPSERT)
    task.put([keyed(1, "a", 0), keyed(2, "b", 1), keyed(1, "c", 2), keyed(2, "d", 3)])
    task.put([keyed(1, "e", 4), keyed(3, "f", 5)])
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "e"),
        (2, "d"),
        (3, "f"),
    ]


def test_deletes_keep_their_place_among_writes_of_a_batch(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, **UPSERT)
    task.put(
        [
            keyed(1, "a", 0),
            keyed(1, None, 1),  # delete
            keyed(1, "b", 2),  # and back
            keyed(2, "x", 3),
            keyed(2, None, 4),  # deleted for good
            keyed(3, None, 5),  # a key that never was: nothing to delete
        ]
    )
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [(1, "b")]


def test_insert_delete_insert_in_insert_mode(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, **{**UPSERT, "insert_mode": "insert"})
    task.put([keyed(1, "a", 0), keyed(1, None, 1), keyed(1, "b", 2)])
    assert rows(sink_url, "SELECT id, item FROM orders") == [(1, "b")]


def test_tombstones_are_skipped_without_delete_enabled(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, **{**UPSERT, "delete_enabled": "false"})
    task.put([keyed(1, "a", 0), keyed(1, None, 1)])
    assert rows(sink_url, "SELECT id, item FROM orders") == [(1, "a")]


def test_update_mode_changes_existing_rows_only(jdbc_sink, sink_url):
    execute(
        sink_url,
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)",
        "INSERT INTO orders VALUES (1, 'old'), (2, 'old')",
    )
    task = jdbc_sink(sink_url, insert_mode="update", pk_mode="record_key")
    task.put([keyed(1, "new", 0), keyed(3, "never", 1), keyed(1, "newer", 2)])
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "newer"),
        (2, "old"),
    ]


def test_pk_mode_kafka_makes_redelivery_harmless(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, insert_mode="upsert", pk_mode="kafka", auto_create="true")
    batch = [record({"item": f"i{n}"}, offset=n, partition=n % 2) for n in range(4)]
    task.put(batch)
    task.put(batch[2:])  # delivered again after a crash
    assert rows(
        sink_url,
        "SELECT __connect_topic, __connect_partition, __connect_offset, item FROM orders "
        "ORDER BY __connect_offset",
    ) == [("orders", n % 2, n, f"i{n}") for n in range(4)]


def test_pk_mode_kafka_with_own_column_names(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, pk_mode="kafka", pk_fields="t,p,o", auto_create="true")
    task.put([record({"item": "x"}, offset=7)])
    assert rows(sink_url, "SELECT t, p, o, item FROM orders") == [("orders", 0, 7, "x")]


def test_pk_mode_record_value_with_pk_fields(jdbc_sink, sink_url):
    task = jdbc_sink(
        sink_url,
        insert_mode="upsert",
        pk_mode="record_value",
        pk_fields="region,code",
        auto_create="true",
    )
    task.put(
        [
            record({"region": "eu", "code": 1, "name": "a"}, offset=0),
            record({"region": "us", "code": 1, "name": "b"}, offset=1),
            record({"region": "eu", "code": 1, "name": "c"}, offset=2),
        ]
    )
    assert rows(sink_url, "SELECT region, code, name FROM orders ORDER BY region") == [
        ("eu", 1, "c"),
        ("us", 1, "b"),
    ]


def test_a_primitive_key_is_the_one_pk_field(jdbc_sink, sink_url):
    task = jdbc_sink(
        sink_url, insert_mode="upsert", pk_mode="record_key", pk_fields="sku",
        auto_create="true", delete_enabled="true",
    )  # fmt: skip
    task.put(
        [
            record({"qty": 1}, "A-1", offset=0, key_schema=Schema("string")),
            record({"qty": 2}, "B-2", offset=1, key_schema=Schema("string")),
            record({"qty": 3}, "A-1", offset=2, key_schema=Schema("string")),
            record(None, "B-2", offset=3, key_schema=Schema("string")),
        ]
    )
    assert rows(sink_url, "SELECT sku, qty FROM orders") == [("A-1", 3)]


def test_a_map_key_and_schemaless_values(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, insert_mode="upsert", pk_mode="record_key", auto_create="true")
    task.put(
        [
            record({"name": "Ada", "score": 1.5}, {"uid": 1, "site": "x"}, offset=0),
            record({"name": "Alan", "score": None}, {"uid": 2, "site": "x"}, offset=1),
            record({"name": "Ada L.", "score": 2.5}, {"uid": 1, "site": "x"}, offset=2),
        ]
    )
    assert rows(sink_url, "SELECT uid, site, name, score FROM orders ORDER BY uid") == [
        (1, "x", "Ada L.", 2.5),
        (2, "x", "Alan", None),
    ]


def test_fields_whitelist_limits_the_columns(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, pk_mode="record_key", auto_create="true", fields_whitelist="item")
    secret = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("item", Schema("string")),
            Field("pin", Schema("string")),
        ]
    )
    task.put([record(Struct(secret, {"id": 1, "item": "a", "pin": "1234"}), {"id": 1})])
    assert rows(sink_url, "SELECT * FROM orders") == [(1, "a")]


def test_table_name_format_and_batch_size(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(
        sink_sqlite_url, auto_create="true", table_name_format="main.kafka_${topic}", batch_size=3
    )
    batch = [record({"n": n}, offset=n, topic="a.b") for n in range(10)]
    task.put(batch)
    assert rows(sink_sqlite_url, 'SELECT count(*), sum(n) FROM "kafka_a.b"') == [(10, 45)]


def test_several_topics_go_to_their_tables_in_one_transaction(jdbc_sink, sink_url):
    task = jdbc_sink(sink_url, auto_create="true")
    task.put([record({"n": 1}, topic="left"), record({"s": "x"}, topic="right")])
    assert rows(sink_url, 'SELECT n FROM "left"') == [(1,)]  # reserved words: quoted
    assert rows(sink_url, 'SELECT s FROM "right"') == [("x",)]


@pytest.mark.parametrize(
    ("config", "key", "message"),
    [
        ({"delete.enabled": "true"}, "delete.enabled", "requires pk.mode=record_key"),
        ({"insert.mode": "upsert"}, "pk.mode", "needs a primary key"),
        ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields", "three pk.fields"),
        ({"insert.mode": "merge"}, "insert.mode", "must be one of insert, upsert, update"),
    ],
)
def test_invalid_combinations_are_reported_per_key(sink_sqlite_url, config, key, message):
    settings = {"connection.url": sink_sqlite_url, **config}
    problems = {v.name: v.errors for v in JdbcSinkConnector().validate(settings) if v.errors}
    assert list(problems) == [key], problems
    assert message in problems[key][0]
    with pytest.raises(ConfigError, match=message):
        JdbcSinkTask().start(settings)


def test_the_generic_upsert_updates_then_inserts(sink_url):
    """What dialects without a native upsert get, exercised on SQLite."""
    settings = SinkSettings.parse(
        {"connection.url": sink_url, "insert.mode": "upsert", "pk.mode": "record_key",
         "auto.create": "true", "delete.enabled": "true"}
    )  # fmt: skip
    planner = RecordPlanner(settings)
    engine = create_engine(settings)
    catalog = TableCatalog(engine, auto_create=True, auto_evolve=False)
    batches = [
        [keyed(1, "a", 0), keyed(2, "b", 1), keyed(1, "c", 2)],
        [keyed(2, "d", 3), keyed(3, "e", 4), keyed(3, None, 5), keyed(4, "f", 6)],
    ]
    try:
        for batch in batches:
            operations = [op for op in map(planner.operation, batch) if op is not None]
            tables = catalog.prepare(operations)
            with engine.begin() as connection:
                write(connection, tables, operations, 100, dialect="generic")
    finally:
        engine.dispose()
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "c"),
        (2, "d"),
        (4, "f"),
    ]
