"""jdbc-source's SQL → Connect type mapping, against SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

import pytest

from sluice.connect.api.data import Schema
from sluice.connect.converters.json_converter import JsonConverter
from tests.connectors.jdbc.source_fixtures import (
    Database,
    SourceFactory,
    drain,
)

DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _kinds(schema: Schema | None) -> dict[str, tuple[str, str | None, bool]]:
    assert schema is not None
    return {f.name: (f.schema.type, f.schema.name, f.schema.optional) for f in schema.fields}


def test_columns_map_to_connect_types_and_values(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    blob = "BLOB" if source_db.dialect == "sqlite" else "BYTEA"
    source_db.execute(
        f"CREATE TABLE kinds (id {source_db.serial}, small SMALLINT NOT NULL, whole INTEGER, "
        "big BIGINT, single REAL, twice DOUBLE PRECISION, price NUMERIC(10,2), flag BOOLEAN, "
        f"label VARCHAR(10), note TEXT, data {blob}, day DATE, clock TIME, at TIMESTAMP)"
    )
    source_db.execute(
        "INSERT INTO kinds (small, whole, big, single, twice, price, flag, label, note, data, "
        "day, clock, at) VALUES (-3, 70000, 5000000000, 1.5, 2.25, 12.5, TRUE, 'x', 'long', "
        ":data, '2024-02-29', '13:14:15.5', '2024-02-29 13:14:15.25')",
        data=b"\x00\xff",
    )
    source_db.execute("INSERT INTO kinds (small) VALUES (0)")
    task = jdbc_source(source_db, mode="incrementing", table_whitelist="kinds")
    full, empty = drain(task)
    sqlite = source_db.dialect == "sqlite"
    assert _kinds(full.value_schema) == {
        "id": ("int64" if sqlite else "int32", None, False),
        "small": ("int16", None, False),
        "whole": ("int64" if sqlite else "int32", None, True),
        "big": ("int64", None, True),
        "single": ("float64" if sqlite else "float32", None, True),
        "twice": ("float64", None, True),
        "price": ("bytes", DECIMAL, True),
        "flag": ("boolean", None, True),
        "label": ("string", None, True),
        "note": ("string", None, True),
        "data": ("bytes", None, True),
        "day": ("int32", "org.apache.kafka.connect.data.Date", True),
        "clock": ("int32", "org.apache.kafka.connect.data.Time", True),
        "at": ("int64", "org.apache.kafka.connect.data.Timestamp", True),
    }
    assert full.value.values == {
        "id": 1,
        "small": -3,
        "whole": 70000,
        "big": 5000000000,
        "single": 1.5,
        "twice": 2.25,
        "price": Decimal("12.50"),
        "flag": True,
        "label": "x",
        "note": "long",
        "data": b"\x00\xff",
        "day": dt.date(2024, 2, 29),
        "clock": dt.time(13, 14, 15, 500000),
        "at": dt.datetime(2024, 2, 29, 13, 14, 15, 250000, tzinfo=dt.UTC),
    }
    assert [k for k, v in empty.value.values.items() if v is not None] == ["id", "small"]
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)
    encoded = converter.from_connect("db-kinds", full.value_schema, full.value)
    assert encoded is not None and b'"at":1709212455250' in encoded


def test_best_fit_maps_numerics_to_ints_and_doubles(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    source_db.execute(
        f"CREATE TABLE nums (id {source_db.serial}, count NUMERIC(5,0), ratio NUMERIC(6,3))",
        "INSERT INTO nums (count, ratio) VALUES (42, 0.125)",
    )
    task = jdbc_source(
        source_db, mode="incrementing", table_whitelist="nums", numeric_mapping="best_fit"
    )
    [record] = drain(task)
    kinds = _kinds(record.value_schema)
    assert (kinds["count"][0], kinds["ratio"][0]) == ("int32", "float64")
    assert (record.value.get("count"), record.value.get("ratio")) == (42, 0.125)


def test_naive_timestamps_are_read_in_the_configured_zone(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    source_db.execute(
        f"CREATE TABLE times (id {source_db.serial}, at TIMESTAMP NOT NULL)",
        "INSERT INTO times (at) VALUES ('2024-07-01 12:00:00')",
    )
    task = jdbc_source(
        source_db,
        mode="timestamp",
        table_whitelist="times",
        timestamp_column_name="at",
        db_timezone="Europe/Paris",
    )
    [record] = drain(task)
    assert record.value.get("at") == dt.datetime(2024, 7, 1, 10, 0, tzinfo=dt.UTC)
    assert record.source_offset["timestamp"] == 1719828000000


def test_unknown_types_are_sent_as_text_with_a_warning(
    source_pg: Database, jdbc_source: SourceFactory, caplog: pytest.LogCaptureFixture
) -> None:
    source_pg.execute(
        "CREATE TABLE odd (id SERIAL PRIMARY KEY, span INTERVAL, tags INT[])",
        "INSERT INTO odd (span, tags) VALUES ('1 day', '{1,2}')",
    )
    with caplog.at_level(logging.WARNING, logger="sluice.connectors.jdbc"):
        task = jdbc_source(source_pg, mode="incrementing", table_whitelist="odd")
        [record] = drain(task)
    assert _kinds(record.value_schema)["span"] == ("string", None, True)
    assert record.value.get("span") == "1 day, 0:00:00"
    assert record.value.get("tags") == "[1, 2]"
    assert "column span has type INTERVAL" in caplog.text


def test_sqlite_columns_without_a_type_take_it_from_their_values(
    source_sqlite: Database, jdbc_source: SourceFactory
) -> None:
    source_sqlite.execute(
        "CREATE TABLE loose (id INTEGER PRIMARY KEY, anything)",
        "INSERT INTO loose (anything) VALUES (NULL), (7)",
    )
    task = jdbc_source(source_sqlite, mode="incrementing", table_whitelist="loose")
    records = drain(task)
    assert [r.value.get("anything") for r in records] == [None, 7]
    assert _kinds(records[-1].value_schema)["anything"] == ("int64", None, True)
