"""jdbc-source on PostgreSQL: the in-flight transaction guard, views, typed custom queries."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import sqlalchemy as sa

from tests.connectors.jdbc.source_fixtures import (
    Database,
    SourceFactory,
    drain,
    values,
)


def _items(db: Database) -> None:
    db.execute("CREATE TABLE items (id SERIAL PRIMARY KEY, name TEXT NOT NULL)")


def test_rows_wait_until_older_transactions_end(
    source_pg: Database, jdbc_source: SourceFactory
) -> None:
    _items(source_pg)
    engine = sa.create_engine(source_pg.url)
    try:
        with engine.connect() as slow:
            slow.execute(sa.text("INSERT INTO items (name) VALUES ('slow')"))  # id 1, open
            source_pg.execute("INSERT INTO items (name) VALUES ('quick')")  # id 2, committed
            task = jdbc_source(source_pg, mode="incrementing", table_whitelist="items")
            assert drain(task) == [], "id 2 must wait for the transaction holding id 1"
            slow.commit()
        assert values(drain(task), "id", "name") == [(1, "slow"), (2, "quick")]
    finally:
        engine.dispose()


def test_without_the_guard_a_slow_transaction_is_overtaken(
    source_pg: Database, jdbc_source: SourceFactory
) -> None:
    """The gap the guard closes (and that every other database has): id 1 is never read."""
    _items(source_pg)
    engine = sa.create_engine(source_pg.url)
    try:
        with engine.connect() as slow:
            slow.execute(sa.text("INSERT INTO items (name) VALUES ('slow')"))
            source_pg.execute("INSERT INTO items (name) VALUES ('quick')")
            task = jdbc_source(
                source_pg,
                mode="incrementing",
                table_whitelist="items",
                postgres_xmin_guard="false",
            )
            assert values(drain(task), "id") == [2]
            slow.commit()
        assert drain(task) == []
    finally:
        engine.dispose()


def test_the_guard_holds_back_updates_in_timestamp_mode(
    source_pg: Database, jdbc_source: SourceFactory
) -> None:
    source_pg.execute(
        "CREATE TABLE docs (id SERIAL PRIMARY KEY, name TEXT, changed TIMESTAMPTZ NOT NULL)",
        "INSERT INTO docs (name, changed) VALUES ('a', '2024-01-01 10:00:00+00')",
    )
    task = jdbc_source(
        source_pg, mode="timestamp", table_whitelist="docs", timestamp_column_name="changed"
    )
    assert values(drain(task), "name") == ["a"]
    engine = sa.create_engine(source_pg.url)
    try:
        with engine.connect() as slow:
            slow.execute(sa.text("UPDATE docs SET changed = '2024-01-01 11:00:00+00'"))
            source_pg.execute(
                "INSERT INTO docs (name, changed) VALUES ('b', '2024-01-01 12:00:00+00')"
            )
            assert drain(task) == []
            slow.commit()
        assert values(drain(task), "name") == ["a", "b"]
    finally:
        engine.dispose()


def test_views_are_read_without_the_guard(source_pg: Database, jdbc_source: SourceFactory) -> None:
    _items(source_pg)
    source_pg.execute(
        "CREATE VIEW shouting AS SELECT id, upper(name) AS name FROM items",
        "INSERT INTO items (name) VALUES ('a'), ('b')",
    )
    task = jdbc_source(
        source_pg,
        mode="incrementing",
        table_whitelist="shouting",
        table_types="VIEW",
        incrementing_column_name="id",
        validate_non_null="false",
    )
    assert values(drain(task), "name") == ["A", "B"]


def test_a_custom_query_gets_its_types_from_the_result(
    source_pg: Database, jdbc_source: SourceFactory
) -> None:
    source_pg.execute(
        "CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, price NUMERIC(8,2), day DATE, "
        "at TIMESTAMPTZ, paid BOOLEAN, qty SMALLINT)",
        "INSERT INTO orders (price, day, at, paid, qty) VALUES "
        "(9.5, '2024-02-29', '2024-02-29 23:59:59.5+00', true, 3)",
    )
    task = jdbc_source(
        source_pg,
        mode="incrementing",
        query="SELECT id, price, day, at, paid, qty, price * 2 AS twice FROM orders",
        incrementing_column_name="id",
    )
    [record] = drain(task)
    schema = record.value_schema
    assert schema is not None
    kinds = {f.name: (f.schema.type, f.schema.name) for f in schema.fields}
    assert kinds["id"] == ("int64", None)
    assert kinds["qty"] == ("int16", None)
    assert kinds["paid"] == ("boolean", None)
    assert kinds["price"] == ("bytes", "org.apache.kafka.connect.data.Decimal")
    assert kinds["day"] == ("int32", "org.apache.kafka.connect.data.Date")
    assert kinds["at"] == ("int64", "org.apache.kafka.connect.data.Timestamp")
    assert kinds["twice"] == ("string", None)  # NUMERIC without a scale
    assert record.value.get("price") == Decimal("9.50")
    assert record.value.get("twice") == "19.00"
    assert record.value.get("at") == dt.datetime(2024, 2, 29, 23, 59, 59, 500000, tzinfo=dt.UTC)
