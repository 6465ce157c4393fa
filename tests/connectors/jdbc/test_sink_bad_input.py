"""jdbc-sink and bad input: records that cannot be rows, rows the database refuses, and
``errors.tolerance`` deciding between failing the task and skipping the record."""

from __future__ import annotations

import logging

import pytest

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConnectError
from sluice.connectors.jdbc.sink import BadRecordError
from tests.connectors.jdbc.sink_fixtures import ITEM, execute, keyed, record, rows

NESTED = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("address", Schema.struct([Field("city", Schema("string"))], optional=True)),
    ]
)


def test_a_nested_struct_field_names_record_field_and_type(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, auto_create="true")
    bad = record(Struct(NESTED, {"id": 1, "address": None}), topic="people", partition=2, offset=41)
    with pytest.raises(BadRecordError) as caught:
        task.put([bad])
    assert str(caught.value) == (
        "record people[2]@41: field 'address': a struct has no SQL column type"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"id": 1, "tags": ["a"]}, "field 'tags': an array has no SQL column type"),
        ({"id": 1, "attrs": {"a": 1}}, "field 'attrs': a map has no SQL column type"),
        ("just text", "the value must be a struct or a map, not str"),
    ],
)
def test_schemaless_values_that_cannot_be_rows(jdbc_sink, sink_sqlite_url, value, message):
    task = jdbc_sink(sink_sqlite_url, auto_create="true")
    with pytest.raises(BadRecordError, match=message):
        task.put([record(value, offset=3)])


def test_a_record_without_key_for_record_key(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, pk_mode="record_key", auto_create="true")
    with pytest.raises(BadRecordError, match=r"orders\[0\]@5: pk.mode=record_key needs a key"):
        task.put([record({"item": "x"}, offset=5)])


def test_a_primitive_key_needs_one_pk_field(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, pk_mode="record_key", auto_create="true")
    with pytest.raises(ConnectError, match="exactly one pk\\.fields name"):
        task.put([record({"item": "x"}, 7)])


def test_tolerance_all_skips_bad_records_and_writes_the_rest(jdbc_sink, sink_sqlite_url, caplog):
    task = jdbc_sink(
        sink_sqlite_url, pk_mode="record_key", auto_create="true", errors_tolerance="all"
    )
    with caplog.at_level(logging.WARNING, "sluice.connectors.jdbc"):
        task.put(
            [
                keyed(1, "a", 0),
                record(Struct(NESTED, {"id": 2, "address": None}), {"id": 2}, offset=1),
                record({"item": "no key"}, offset=2),
                keyed(3, "c", 3),
            ]
        )
    assert rows(sink_sqlite_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "a"),
        (3, "c"),
    ]
    skipped = [r.getMessage() for r in caplog.records]
    assert any("orders[0]@1: field 'address'" in m for m in skipped), skipped
    assert any("orders[0]@2: pk.mode=record_key needs a key" in m for m in skipped), skipped


def test_rows_the_database_refuses_fail_the_task(jdbc_sink, sink_url):
    execute(sink_url, "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
    task = jdbc_sink(sink_url, insert_mode="upsert", pk_mode="record_key")
    with pytest.raises(ConnectError, match=r"refused a batch of 2 records \(orders\[0\]@0 to "):
        task.put([keyed(1, "a", 0), record(Struct(ITEM, {"id": 2}), {"id": 2}, offset=1)])
    assert rows(sink_url, "SELECT count(*) FROM orders") == [(0,)]  # rolled back


def test_tolerance_all_skips_only_the_rows_the_database_refuses(jdbc_sink, sink_url, caplog):
    execute(sink_url, "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
    task = jdbc_sink(sink_url, insert_mode="upsert", pk_mode="record_key", errors_tolerance="all")
    with caplog.at_level(logging.WARNING, "sluice.connectors.jdbc"):
        task.put(
            [
                keyed(1, "a", 0),
                record(Struct(ITEM, {"id": 2}), {"id": 2}, offset=1),  # item is NOT NULL
                keyed(3, "c", 2),
            ]
        )
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "a"),
        (3, "c"),
    ]
    assert any("orders[0]@1 refused by table orders" in r.getMessage() for r in caplog.records)
