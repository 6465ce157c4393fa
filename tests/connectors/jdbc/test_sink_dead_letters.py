"""``jdbc-sink`` under ``errors.tolerance=all``: records the database refuses (a NOT NULL
constraint, a value its column cannot hold) and records that cannot be rows (a nested value) go
to the dead-letter topic with Kafka Connect's context headers, through the runtime's
errant-record reporter; the good ones land in the table. Real broker, real worker, SQLite."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from confluent_kafka import Producer

from tests.conftest import BrokerProcess, create_topic
from tests.connect.worker_helpers import in_process_herder, read, wait


def _send(bootstrap: str, topic: str, values: list[dict[str, object]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, json.dumps(value).encode(), b"k")
    assert producer.flush(30) == 0


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT id, name, score FROM people ORDER BY id").fetchall()


def test_refused_records_go_to_the_dead_letter_topic_and_good_ones_land(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    database = tmp_path / "people.db"
    with sqlite3.connect(database) as db:
        db.execute(
            "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "score INTEGER CHECK (typeof(score) = 'integer'))"
        )
    _send(
        bootstrap,
        topic,
        [
            {"id": 1, "name": "ada", "score": 3},
            {"id": 2, "name": None, "score": 1},  # NOT NULL: the database refuses it
            {"id": 3, "name": "alan", "score": 5},
            {"id": 4, "name": "bob", "address": {"city": "x"}},  # a nested struct: no row
            {"id": 5, "name": "eve", "score": "many"},  # not an integer for the column
            {"id": 6, "name": "joan", "score": 7},
        ],
    )
    herder = in_process_herder(bootstrap, tmp_path)
    herder.create_connector(
        "db-sink",
        {
            "connector.class": "jdbc-sink",
            "topics": topic,
            "connection.url": f"sqlite:///{database}",
            "table.name.format": "people",
            "key.converter": "string",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dead,
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        wait(lambda: len(_rows(database)) == 3, "the 3 good rows")
        found = read(bootstrap, dead, 3)
        status = herder.connector_status("db-sink")
    finally:
        herder.runtime.stop()
    assert _rows(database) == [(1, "ada", 3), (3, "alan", 5), (6, "joan", 7)]
    assert status["tasks"][0]["state"] == "RUNNING", status
    # records that cannot be rows are reported while the batch is planned, those the
    # database refuses once it was written: by id, each with its own context
    by_id = {json.loads(m.value())["id"]: dict(m.headers()) for m in found}
    assert sorted(by_id) == [2, 4, 5]
    for number, headers in by_id.items():
        assert headers["__connect.errors.topic"] == topic.encode()
        assert headers["__connect.errors.partition"] == b"0"
        assert headers["__connect.errors.offset"] == str(number - 1).encode()
        assert headers["__connect.errors.stage"] == b"TASK_PUT"
        assert headers["__connect.errors.connector.name"] == b"db-sink"
        assert headers["__connect.errors.exception.class.name"]
    assert b"NOT NULL" in by_id[2]["__connect.errors.exception.message"]
    assert b"address" in by_id[4]["__connect.errors.exception.message"]
    assert b"people" in by_id[5]["__connect.errors.exception.message"]


def test_without_tolerance_a_refused_record_fails_the_task_naming_it(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    database = tmp_path / "people.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    _send(bootstrap, topic, [{"id": 1, "name": None}])
    herder = in_process_herder(bootstrap, tmp_path)
    herder.create_connector(
        "strict-sink",
        {
            "connector.class": "jdbc-sink",
            "topics": topic,
            "connection.url": f"sqlite:///{database}",
            "table.name.format": "people",
            "key.converter": "string",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "errors.deadletterqueue.topic.name": dead,  # without tolerance: unused
        },
    )
    try:
        wait(
            lambda: herder.connector_status("strict-sink")["tasks"][0]["state"] == "FAILED",
            "FAILED",
        )
        trace = herder.connector_status("strict-sink")["tasks"][0]["trace"]
    finally:
        herder.runtime.stop()
    assert "NOT NULL" in trace and f"{topic}[0]@0" in trace, trace
