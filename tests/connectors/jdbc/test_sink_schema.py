"""jdbc-sink's tables: auto.create from schemas and from schemaless values, auto.evolve, the type
mapping per dialect, and what happens without them (missing table, missing column)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConnectError
from sluice.connect.api.logical import date_schema, decimal_schema, time_schema, timestamp_schema
from sluice.connectors.jdbc._sink_types import UnmappableTypeError, column_type
from sluice.connectors.jdbc.sink import JdbcSinkConnector
from tests.connectors.jdbc.sink_fixtures import ITEM, execute, record, rows

EVERY_TYPE = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("i8", Schema("int8")),
        Field("i16", Schema("int16")),
        Field("i32", Schema("int32", optional=True)),
        Field("f32", Schema("float32")),
        Field("f64", Schema("float64")),
        Field("flag", Schema("boolean")),
        Field("text", Schema("string")),
        Field("blob", Schema("bytes")),
        Field("price", decimal_schema(2)),
        Field("day", date_schema()),
        Field("at", time_schema()),
        Field("ts", timestamp_schema()),
    ]
)
VALUES = {
    "id": 1,
    "i8": -8,
    "i16": 1600,
    "i32": None,
    "f32": 0.5,
    "f64": 1e300,
    "flag": True,
    "text": "héllo",
    "blob": b"\x00\xff",
    "price": Decimal("12.34"),
    "day": dt.date(2024, 2, 29),
    "at": dt.time(13, 14, 15, 16000),
    "ts": dt.datetime(2024, 2, 29, 23, 59, 58, 123000, tzinfo=dt.UTC),
}
EXPECTED = {
    "postgresql": [
        "BIGINT", "SMALLINT", "SMALLINT", "INTEGER", "REAL", "DOUBLE PRECISION", "BOOLEAN",
        "TEXT", "BYTEA", "NUMERIC", "DATE", "TIME WITHOUT TIME ZONE",
        "TIMESTAMP WITHOUT TIME ZONE",
    ],
    "mysql": [
        "BIGINT", "TINYINT", "SMALLINT", "INTEGER", "FLOAT", "DOUBLE", "BOOL", "TEXT", "BLOB",
        "NUMERIC(65, 2)", "DATE", "TIME(3)", "DATETIME(3)",
    ],
    "sqlite": [
        "BIGINT", "SMALLINT", "SMALLINT", "INTEGER", "REAL", "DOUBLE", "BOOLEAN", "TEXT", "BLOB",
        "NUMERIC", "DATE", "TIME", "DATETIME",
    ],
}  # fmt: skip
DIALECTS = {
    "postgresql": postgresql.dialect(),
    "mysql": mysql.dialect(),
    "sqlite": sqlite.dialect(),
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED))
def test_type_mapping_per_dialect(dialect):
    compiled = [
        str(column_type(field.schema, dialect).compile(dialect=DIALECTS[dialect]))
        for field in EVERY_TYPE.fields
    ]
    assert compiled == EXPECTED[dialect]


def test_mysql_keys_are_sized_strings_and_bytes():
    string, blob = (column_type(Schema(t), "mysql", key=True) for t in ("string", "bytes"))
    assert str(string.compile(dialect=DIALECTS["mysql"])) == "VARCHAR(256)"
    assert str(blob.compile(dialect=DIALECTS["mysql"])) == "VARBINARY(256)"


@pytest.mark.parametrize("kind", ["array", "map", "struct"])
def test_nested_types_have_no_column_type(kind):
    with pytest.raises(UnmappableTypeError, match=f"{kind} has no SQL column type"):
        column_type(Schema(kind), "postgresql")


def test_every_type_round_trips_through_sqlite(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, pk_mode="record_value", pk_fields="id", auto_create="true")
    task.put([record(Struct(EVERY_TYPE, VALUES))])
    engine = sa.create_engine(sink_sqlite_url)
    try:
        table = sa.Table("orders", sa.MetaData(), autoload_with=engine)
        assert [c.name for c in table.columns] == [f.name for f in EVERY_TYPE.fields]
        assert [c.name for c in table.primary_key] == ["id"]
        assert [c.name for c in table.columns if c.nullable] == ["i32"]
        with engine.connect() as connection:
            row = connection.execute(sa.select(table)).one()
    finally:
        engine.dispose()
    expected = {**VALUES, "ts": VALUES["ts"].replace(tzinfo=None)}  # stored as UTC
    assert row._asdict() == expected


def test_schemaless_values_get_inferred_types(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, auto_create="true")
    task.put(
        [
            record({"n": 1, "x": 2.5, "b": True, "s": "t", "d": Decimal("1.5"), "late": None}),
            record({"n": 2, "x": 3.5, "b": False, "s": "u", "d": Decimal("2.5"), "late": 7}),
        ]
    )
    engine = sa.create_engine(sink_sqlite_url)
    try:
        table = sa.Table("orders", sa.MetaData(), autoload_with=engine)
    finally:
        engine.dispose()
    types = {c.name: str(c.type) for c in table.columns}
    assert types == {
        "n": "BIGINT",
        "x": "DOUBLE",
        "b": "BOOLEAN",
        "s": "TEXT",
        "d": "NUMERIC",
        "late": "BIGINT",  # the null of the first record gave way to the 7 of the second
    }
    assert rows(sink_sqlite_url, "SELECT n, late FROM orders ORDER BY n") == [(1, None), (2, 7)]


def test_auto_evolve_adds_nullable_columns(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url, pk_mode="record_key", auto_create="true", auto_evolve="true")
    task.put([record(Struct(ITEM, {"id": 1, "item": "a"}), {"id": 1})])
    wider = Schema.struct([*ITEM.fields, Field("qty", Schema("int32"))])
    task.put([record(Struct(wider, {"id": 2, "item": "b", "qty": 5}), {"id": 2}, offset=1)])
    task.put([record({"id": 3, "note": "schemaless"}, {"id": 3}, offset=2)])
    assert rows(sink_sqlite_url, "SELECT id, item, qty, note FROM orders ORDER BY id") == [
        (1, "a", None, None),
        (2, "b", 5, None),
        (3, None, None, "schemaless"),
    ]


def test_fields_match_columns_of_another_case(jdbc_sink, sink_sqlite_url):
    execute(sink_sqlite_url, "CREATE TABLE orders (ID INTEGER PRIMARY KEY, Item TEXT)")
    task = jdbc_sink(sink_sqlite_url, insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    task.put([record({"id": 1, "item": "a"}), record({"id": 1, "item": "b"}, offset=1)])
    assert rows(sink_sqlite_url, "SELECT ID, Item FROM orders") == [(1, "b")]


def test_a_missing_column_without_auto_evolve_names_table_and_field(jdbc_sink, sink_sqlite_url):
    execute(sink_sqlite_url, "CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    task = jdbc_sink(sink_sqlite_url, pk_mode="record_key")
    with pytest.raises(ConnectError, match=r"table orders has no column for field\(s\) item"):
        task.put([record(Struct(ITEM, {"id": 1, "item": "a"}), {"id": 1}, offset=4)])


def test_a_missing_table_without_auto_create_fails_the_task(jdbc_sink, sink_sqlite_url):
    task = jdbc_sink(sink_sqlite_url)
    with pytest.raises(ConnectError, match=r"table orders does not exist .* auto\.create is false"):
        task.put([record({"n": 1})])


def test_a_missing_table_without_auto_create_fails_the_connector_at_start(sink_sqlite_url):
    connector = JdbcSinkConnector()
    config = {"connection.url": sink_sqlite_url, "topics": "orders, lines"}
    with pytest.raises(ConnectError, match=r"table orders \(of topic orders\) does not exist"):
        connector.start(config)
    execute(sink_sqlite_url, "CREATE TABLE orders (n INTEGER)", "CREATE TABLE lines (n INTEGER)")
    connector.start(config)
    assert connector.task_configs(2) == [config, config]
