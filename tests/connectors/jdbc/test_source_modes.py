"""jdbc-source's modes, against SQLite and PostgreSQL: what each poll reads, offsets, resuming."""

from __future__ import annotations

from tests.connectors.jdbc.source_fixtures import (
    Database,
    SourceFactory,
    drain,
    values,
)
from tests.connectors.source_offsets import FakeOffsets


def _items(db: Database) -> None:
    db.execute(f"CREATE TABLE items (id {db.serial}, name VARCHAR(20) NOT NULL)")


def test_incrementing_reads_new_rows_in_id_order(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _items(source_db)
    source_db.execute("INSERT INTO items (name) VALUES ('a'), ('b'), ('c')")
    task = jdbc_source(source_db, mode="incrementing", table_whitelist="items")
    records = drain(task)
    assert values(records, "id", "name") == [(1, "a"), (2, "b"), (3, "c")]
    first = records[0]
    assert (first.topic, first.source_partition, first.key) == (
        "db-items",
        {"table": "items"},
        None,
    )
    assert [r.source_offset for r in records] == [{"incrementing": n} for n in (1, 2, 3)]
    assert first.value_schema is not None and first.value_schema.name == "items"
    assert [f.name for f in first.value_schema.fields] == ["id", "name"]
    source_db.execute("INSERT INTO items (name) VALUES ('d'), ('e')")
    assert values(drain(task), "name") == ["d", "e"]
    assert drain(task) == []


def test_incrementing_column_defaults_to_the_autoincrement_one_and_respects_batches(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _items(source_db)
    source_db.execute("INSERT INTO items (name) VALUES ('a'), ('b'), ('c'), ('d'), ('e')")
    task = jdbc_source(source_db, mode="incrementing", table_whitelist="items", batch_max_rows=2)
    polls = [task.poll() for _ in range(3)]
    assert [values(p or [], "name") for p in polls] == [["a", "b"], ["c", "d"], ["e"]]


def test_restart_resumes_after_the_committed_offset(
    source_db: Database, jdbc_source: SourceFactory, source_offsets: FakeOffsets
) -> None:
    _items(source_db)
    source_db.execute("INSERT INTO items (name) VALUES ('a'), ('b'), ('c')")
    first = jdbc_source(source_db, mode="incrementing", table_whitelist="items")
    records = drain(first)
    source_offsets.commit(records[:2])  # 'c' was polled but never acknowledged
    first.stop()
    source_db.execute("INSERT INTO items (name) VALUES ('d')")
    second = jdbc_source(source_db, mode="incrementing", table_whitelist="items")
    assert values(drain(second), "name") == ["c", "d"]


def test_bulk_copies_the_whole_table_every_time(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _items(source_db)
    source_db.execute("INSERT INTO items (name) VALUES ('a'), ('b')")
    task = jdbc_source(source_db, mode="bulk", table_whitelist="items")
    first = task.poll() or []
    assert values(first, "name") == ["a", "b"]
    assert first[0].source_offset == {}
    source_db.execute("UPDATE items SET name = 'B' WHERE id = 2")
    assert values(task.poll() or [], "name") == ["a", "B"]  # the next copy


def _events(db: Database) -> None:
    db.execute(
        f"CREATE TABLE events (id {db.serial}, name VARCHAR(20) NOT NULL, "
        f"changed {db.timestamp} NOT NULL, created {db.timestamp})"
    )


def test_timestamp_reads_new_and_updated_rows_in_time_order(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _events(source_db)
    source_db.execute(
        "INSERT INTO events (name, changed) VALUES "
        "('late', '2024-01-01 10:00:02'), ('early', '2024-01-01 10:00:01')"
    )
    task = jdbc_source(
        source_db, mode="timestamp", table_whitelist="events", timestamp_column_name="changed"
    )
    records = drain(task)
    assert values(records, "name") == ["early", "late"]
    assert records[-1].source_offset == {"timestamp": 1704103202000, "timestamp_nanos": 0}
    assert records[-1].value.get("changed").isoformat() == "2024-01-01T10:00:02+00:00"
    source_db.execute("UPDATE events SET changed = '2024-01-01 10:00:03' WHERE name = 'early'")
    assert values(drain(task), "name") == ["early"]


def test_timestamp_skips_rows_newer_than_the_clock_minus_the_delay(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _events(source_db)
    source_db.execute(
        "INSERT INTO events (name, changed) VALUES "
        "('old', '2024-01-01 10:00:00'), ('future', '2999-01-01 00:00:00')"
    )
    task = jdbc_source(
        source_db,
        mode="timestamp",
        table_whitelist="events",
        timestamp_column_name="changed",
        timestamp_delay_interval_ms=1000,
    )
    assert values(drain(task), "name") == ["old"]


def test_timestamp_incrementing_keeps_rows_that_share_a_timestamp(
    source_db: Database, jdbc_source: SourceFactory, source_offsets: FakeOffsets
) -> None:
    _events(source_db)
    source_db.execute(
        "INSERT INTO events (name, changed) VALUES ('a', '2024-01-01 10:00:00'), "
        "('b', '2024-01-01 10:00:00'), ('c', '2024-01-01 10:00:00'), ('d', '2024-01-01 09:00:00')"
    )
    config = {
        "mode": "timestamp+incrementing",
        "table_whitelist": "events",
        "timestamp_column_name": "changed",
        "incrementing_column_name": "id",
        "batch_max_rows": 1,
    }
    task = jdbc_source(source_db, **config)
    first = task.poll() or []
    second = task.poll() or []
    assert values(first + second, "name") == ["d", "a"]
    assert second[0].source_offset == {
        "timestamp": 1704103200000,
        "timestamp_nanos": 0,
        "incrementing": 1,
    }
    source_offsets.commit(second)
    task.stop()
    resumed = jdbc_source(source_db, **config)  # picks up between rows of one timestamp
    assert values(drain(resumed), "name") == ["b", "c"]
    source_db.execute("UPDATE events SET changed = '2024-01-01 11:00:00' WHERE name = 'a'")
    assert values(drain(resumed), "name") == ["a"]


def test_timestamp_columns_are_coalesced_in_order(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    source_db.execute(
        f"CREATE TABLE docs (id {source_db.serial}, name VARCHAR(20), "
        f"updated {source_db.timestamp}, created {source_db.timestamp} NOT NULL)"
    )
    source_db.execute(
        "INSERT INTO docs (name, updated, created) VALUES "
        "('edited', '2024-01-01 12:00:00', '2024-01-01 08:00:00'), "
        "('new', NULL, '2024-01-01 10:00:00')"
    )
    task = jdbc_source(
        source_db,
        mode="timestamp",
        table_whitelist="docs",
        timestamp_column_name="updated,created",
    )
    assert values(drain(task), "name") == ["new", "edited"]


def test_custom_query_is_wrapped_with_the_mode_criteria(
    source_db: Database, jdbc_source: SourceFactory
) -> None:
    _items(source_db)
    source_db.execute("INSERT INTO items (name) VALUES ('a'), ('skip'), ('c')")
    task = jdbc_source(
        source_db,
        mode="incrementing",
        query="SELECT id, UPPER(name) AS shout FROM items WHERE name NOT LIKE 'sk%'",
        incrementing_column_name="id",
        topic_prefix="shouts",
    )
    records = drain(task)
    assert values(records, "id", "shout") == [(1, "A"), (3, "C")]
    assert (records[0].topic, records[0].source_partition) == ("shouts", {"query": "query"})
    assert records[-1].source_offset == {"incrementing": 3}
    source_db.execute("INSERT INTO items (name) VALUES ('d')")
    assert values(drain(task), "shout") == ["D"]


def test_one_task_reads_several_tables(source_db: Database, jdbc_source: SourceFactory) -> None:
    for table in ("one", "two"):
        source_db.execute(f"CREATE TABLE {table} (id {source_db.serial}, name VARCHAR(20))")
        source_db.execute(f"INSERT INTO {table} (name) VALUES ('{table}-a'), ('{table}-b')")
    task = jdbc_source(source_db, mode="incrementing", tables='["one", "two"]')
    records = drain(task)
    assert sorted(values(records, "name")) == ["one-a", "one-b", "two-a", "two-b"]
    assert {r.topic for r in records} == {"db-one", "db-two"}
