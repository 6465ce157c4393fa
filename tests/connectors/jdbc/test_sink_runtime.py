"""jdbc-sink through the real runtime: a standalone Worker reads a topic of the broker (JSON
with schemas) and upserts and deletes rows in PostgreSQL; offsets are committed after."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaPartition

from sluice import clients
from sluice.connect.api.logical import decimal_schema, logical_to_raw
from tests.conftest import BrokerProcess, create_topic
from tests.connect.worker_helpers import in_process_herder, wait
from tests.connectors.jdbc.sink_fixtures import rows

KEY_SCHEMA = {"type": "struct", "fields": [{"field": "id", "type": "int64"}], "optional": False}
VALUE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64"},
        {"field": "name", "type": "string"},
        {
            "field": "balance",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2"},
            "optional": True,
        },
        {
            "field": "seen",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
        },
    ],
}


def _key(id: int) -> bytes:
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": id}}).encode()


def _value(id: int, name: str, balance: str) -> bytes:
    from decimal import Decimal

    raw = logical_to_raw(decimal_schema(2), Decimal(balance))
    payload = {
        "id": id,
        "name": name,
        "balance": base64.b64encode(raw).decode(),
        "seen": 1_700_000_000_000 + id,
    }
    return json.dumps({"schema": VALUE_SCHEMA, "payload": payload}).encode()


def _table(url: str) -> list[tuple[Any, ...]] | None:
    try:
        return rows(url, "SELECT id, name, balance::text FROM customers ORDER BY id")
    except Exception:  # not created yet
        return None


def test_records_of_a_topic_become_rows_through_a_worker(
    shared_broker: BrokerProcess, shared_postgres: Any, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    url = shared_postgres.create_database("runtime_sink")
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in [
        (_key(1), _value(1, "Ada", "10.50")),
        (_key(2), _value(2, "Alan", "3.00")),
        (_key(1), _value(1, "Ada L.", "11.25")),  # upsert
        (_key(2), None),  # tombstone: delete
        (_key(3), _value(3, "Grace", "-0.01")),
    ]:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0

    herder = in_process_herder(bootstrap, tmp_path)
    try:
        herder.create_connector(
            "pg-sink",
            {
                "connector.class": "jdbc-sink",
                "topics": topic,
                "connection.url": url,
                "table.name.format": "customers",
                "insert.mode": "upsert",
                "pk.mode": "record_key",
                "delete.enabled": "true",
                "auto.create": "true",
                "key.converter": "json",
                "key.converter.schemas.enable": "true",
                "value.converter": "json",
                "value.converter.schemas.enable": "true",
            },
        )
        expected = [(1, "Ada L.", "11.25"), (3, "Grace", "-0.01")]
        try:
            wait(lambda: _table(url) == expected, "the rows")
        finally:
            status = herder.connector_status("pg-sink")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
        assert rows(url, "SELECT seen FROM customers WHERE id = 3")[0][0].isoformat() == (
            "2023-11-14T22:13:20.003000"
        )

        group = clients.consumer(bootstrap, **{"group.id": "connect-pg-sink"})
        try:

            def committed() -> int:
                (position,) = group.committed([KafkaPartition(topic, 0)], timeout=10)
                return int(position.offset)

            wait(lambda: committed() == 5, "the consumer offsets to be committed")
        finally:
            group.close()
    finally:
        herder.runtime.stop()
