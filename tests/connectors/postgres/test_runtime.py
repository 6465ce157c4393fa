"""postgres-cdc through the real runtime: a standalone worker captures a table into the broker's
topics; a consumer reads the Debezium events back; offsets are stored and the slot confirmed."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition as KafkaPartition

from sluice import clients
from sluice.connect.runtime.offsets import FileOffsetStore
from tests.conftest import BrokerProcess, create_topic
from tests.connect.worker_helpers import in_process_herder, wait
from tests.connectors.postgres.fixtures import Database


def _slot_exists(db: Database) -> bool:
    return bool(db.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (db.slot,)))


def _read(bootstrap: str, topic: str, count: int) -> list[tuple[Any, Any]]:
    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    try:
        consumer.assign([KafkaPartition(topic, 0, 0)])
        found: list[tuple[Any, Any]] = []
        deadline = time.monotonic() + 60
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            key, value = message.key(), message.value()
            found.append(
                (
                    None if key is None else json.loads(key),
                    None if value is None else json.loads(value),
                )
            )
        assert len(found) >= count, f"expected {count} messages in {topic}, got {found}"
        return found
    finally:
        consumer.close()


def test_a_worker_captures_a_table_into_topics(
    shared_broker: BrokerProcess, db: Database, tmp_path: Path
) -> None:
    prefix = f"rt{uuid.uuid4().hex[:8]}"
    topic = create_topic(shared_broker.bootstrap, name=f"{prefix}.public.items")
    db.execute(
        "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)",
        "INSERT INTO items VALUES (1, 'pen'), (2, 'ink')",
    )
    settings = {
        "offset.flush.interval.ms": 100,
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
    }
    herder = in_process_herder(shared_broker.bootstrap, tmp_path, **settings)
    try:
        config = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector"}
        herder.create_connector("pg", {**config, **db.config(**{"topic.prefix": prefix})})
        assert herder.runtime.connectors["pg"].state == "RUNNING", herder.runtime.connectors[
            "pg"
        ].trace
        # once the task's slot exists, its snapshot is fixed: later changes are streamed
        wait(lambda: _slot_exists(db), "the replication slot")
        db.execute(
            "INSERT INTO items VALUES (3, 'cap')",
            "UPDATE items SET name = 'pencil' WHERE id = 1",
            "DELETE FROM items WHERE id = 2",
        )
        last_change = db.current_lsn()
        messages = _read(shared_broker.bootstrap, topic, 6)
        summary = [
            (key, value and value["op"], value and (value["before"], value["after"]))
            for key, value in messages
        ]
        assert summary == [
            ({"id": 1}, "r", (None, {"id": 1, "name": "pen"})),
            ({"id": 2}, "r", (None, {"id": 2, "name": "ink"})),
            ({"id": 3}, "c", (None, {"id": 3, "name": "cap"})),
            ({"id": 1}, "u", (None, {"id": 1, "name": "pencil"})),
            ({"id": 2}, "d", ({"id": 2, "name": ""}, None)),
            ({"id": 2}, None, None),
        ]
        source = messages[2][1]["source"]
        assert (source["connector"], source["name"], source["table"]) == (
            "postgresql",
            prefix,
            "items",
        )

        def stored() -> dict[str, Any] | None:
            return FileOffsetStore(tmp_path / "offsets.json").get("pg", {"server": prefix})

        offset = wait(lambda: (o := stored()) and "snapshot" not in o and o, "stored offsets")
        assert offset["lsn"] == messages[4][1]["source"]["lsn"]
        wait(lambda: db.confirmed_flush() >= last_change, "the slot confirmed after the commit")
        task = herder.runtime.tasks[("pg", 0)]
        assert task.state == "RUNNING", task.trace
    finally:
        herder.runtime.stop()
