"""Truncates end to end: Debezium's truncate event, kept by ``unwrap`` with
``truncate.handling.mode=keep``, empties the sink's table with ``truncate.enabled`` — in the
batch's order, so rows written after it in the same ``put`` stay."""

from __future__ import annotations

from sluice.connect.api.data import ConnectRecord
from sluice.connectors.postgres.unwrap import ExtractNewRecordState
from tests.connectors.jdbc.sink_fixtures import SinkFactory, keyed, record, rows

TRUNCATE = {"before": None, "after": None, "op": "t", "source": {"table": "orders"}, "ts_ms": 1}


def test_a_truncate_event_empties_the_table_in_batch_order(
    jdbc_sink: SinkFactory, sink_url: str
) -> None:
    task = jdbc_sink(
        sink_url,
        insert_mode="upsert",
        pk_mode="record_key",
        auto_create="true",
        delete_enabled="true",
        truncate_enabled="true",
    )
    task.put([keyed(1, "tea", 0), keyed(2, "cake", 1)])
    task.put([keyed(3, "jam", 2), record(TRUNCATE, offset=3), keyed(4, "bun", 4)])
    assert rows(sink_url, "SELECT id, item FROM orders ORDER BY id") == [(4, "bun")]


def test_without_truncate_enabled_the_event_is_skipped(
    jdbc_sink: SinkFactory, sink_sqlite_url: str
) -> None:
    task = jdbc_sink(
        sink_sqlite_url, insert_mode="upsert", pk_mode="record_key", auto_create="true"
    )
    task.put([keyed(1, "tea", 0), record(TRUNCATE, offset=1)])
    assert rows(sink_sqlite_url, "SELECT id, item FROM orders") == [(1, "tea")]


def test_unwrap_drops_truncates_unless_told_to_keep_them() -> None:
    event = ConnectRecord("shop.public.orders", None, None, None, None, TRUNCATE)
    dropping, keeping = ExtractNewRecordState(), ExtractNewRecordState()
    dropping.configure({})
    keeping.configure({"truncate.handling.mode": "keep"})
    assert dropping.apply(event) is None
    assert keeping.apply(event) is event
