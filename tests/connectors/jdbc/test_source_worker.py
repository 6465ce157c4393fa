"""jdbc-source through the real runtime: a standalone worker, the broker, a PostgreSQL table."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from sluice import clients
from sluice.connect.runtime.offsets import FileOffsetStore
from tests.conftest import BrokerProcess, create_topic
from tests.connect.worker_helpers import in_process_herder
from tests.connectors.jdbc.source_fixtures import Database

TIMEOUT = 60.0


def _read(bootstrap: str, topic: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` messages of ``topic``, decoded from JSON."""
    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(found) < count and time.monotonic() < deadline:
            for message in consumer.consume(10, 0.5):
                assert message.error() is None, message.error()
                assert message.key() is None
                found.append(json.loads(message.value()))
    finally:
        consumer.close()
    assert len(found) == count, f"expected {count} messages, got {found}"
    return found


def _wait_for_offset(offsets: Path, connector: str, expected: dict[str, Any]) -> None:
    deadline = time.monotonic() + TIMEOUT
    store: list[tuple[dict[str, Any], dict[str, Any]]] = []
    while time.monotonic() < deadline:
        store = FileOffsetStore(offsets).connector_offsets(connector) if offsets.exists() else []
        if store == [({"table": "orders"}, expected)]:
            return
        time.sleep(0.1)
    raise AssertionError(f"expected offset {expected}, stored: {store}")


def test_rows_arrive_as_json_and_a_restart_resumes(
    shared_broker: BrokerProcess, source_pg: Database, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    prefix = f"pg-{uuid.uuid4().hex[:8]}-"
    topic = create_topic(bootstrap, name=prefix + "orders")
    source_pg.execute(
        "CREATE TABLE orders (id SERIAL PRIMARY KEY, item TEXT NOT NULL, qty INTEGER)",
        "INSERT INTO orders (item, qty) VALUES ('apple', 3), ('pear', NULL)",
    )
    config = {
        "connector.class": "jdbc-source",
        "connection.url": source_pg.url,
        "mode": "incrementing",
        "table.whitelist": "orders",
        "topic.prefix": prefix,
        "poll.interval.ms": "50",
    }
    offsets = tmp_path / "offsets.json"
    herder = in_process_herder(bootstrap, tmp_path, **{"offset.flush.interval.ms": 100})
    try:
        herder.create_connector("orders-source", config)
        first = _read(bootstrap, topic, 2)
        _wait_for_offset(offsets, "orders-source", {"incrementing": 2})
        assert herder.connector_status("orders-source")["tasks"][0]["state"] == "RUNNING"
    finally:
        herder.runtime.stop()
    assert first[0]["schema"]["name"] == "orders"
    assert [m["payload"] for m in first] == [
        {"id": 1, "item": "apple", "qty": 3},
        {"id": 2, "item": "pear", "qty": None},
    ]
    source_pg.execute("INSERT INTO orders (item, qty) VALUES ('plum', 1)")
    herder = in_process_herder(bootstrap, tmp_path, **{"offset.flush.interval.ms": 100})
    try:
        herder.create_connector("orders-source", config)
        _wait_for_offset(offsets, "orders-source", {"incrementing": 3})
    finally:
        herder.runtime.stop()
    assert [m["payload"]["item"] for m in _read(bootstrap, topic, 3)] == ["apple", "pear", "plum"]
