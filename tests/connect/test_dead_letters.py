"""A sink connector with ``errors.tolerance=all``: records that cannot be converted go to the
dead-letter topic with Kafka Connect's context headers; the good ones reach the sink; without
tolerance the task fails and says why."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from tests.conftest import BrokerProcess, create_topic
from tests.connect.plugins_for_tests import RECEIVED
from tests.connect.worker_helpers import in_process_herder, read, wait


def _send(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value, b"k")
    assert producer.flush(30) == 0


def test_bad_records_go_to_the_dead_letter_topic_with_context(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    _send(bootstrap, topic, [b'{"n": 1}', b"{not json", b'{"n": 2}'])
    herder = in_process_herder(bootstrap, tmp_path)
    output = tmp_path / "out.txt"
    herder.create_connector(
        "sink",
        {
            "connector.class": "file-sink",
            "topics": topic,
            "file": str(output),
            "key.converter": "string",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dead,
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        wait(lambda: output.exists() and len(output.read_text().splitlines()) == 2, "2 lines")
        assert output.read_text().splitlines() == ['{"n":1}', '{"n":2}']
        found = read(bootstrap, dead, 1)
        assert len(found) == 1
        assert found[0].value() == b"{not json"
        headers = dict(found[0].headers())
        assert headers["__connect.errors.topic"] == topic.encode()
        assert headers["__connect.errors.offset"] == b"1"
        assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert headers["__connect.errors.connector.name"] == b"sink"
        assert headers["__connect.errors.exception.class.name"]
    finally:
        herder.runtime.stop()


def test_without_tolerance_the_task_fails_with_its_trace(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    _send(bootstrap, topic, [b"{not json"])
    herder = in_process_herder(bootstrap, tmp_path)
    herder.create_connector(
        "strict",
        {
            "connector.class": "file-sink",
            "topics": topic,
            "file": str(tmp_path / "out.txt"),
            "value.converter": "json",
        },
    )
    try:
        wait(lambda: herder.connector_status("strict")["tasks"][0]["state"] == "FAILED", "FAILED")
        assert "ConverterError" in herder.connector_status("strict")["tasks"][0]["trace"]
    finally:
        herder.runtime.stop()


def test_records_a_task_reports_go_to_the_dead_letter_topic(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    """KIP-610: ``context.errant_record_reporter()`` sends what ``put`` cannot write."""
    bootstrap = shared_broker.bootstrap
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    _send(bootstrap, topic, [b"good", b"bad", b"fine"])
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"picky-{topic}"
    herder.create_connector(
        name,
        {
            "connector.class": "tests.connect.plugins_for_tests.PickySink",
            "topics": topic,
            "key.converter": "string",
            "value.converter": "string",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dead,
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        wait(lambda: RECEIVED[name] == ["good", "fine"], "the good records")
        found = read(bootstrap, dead, 1)
        assert [m.value() for m in found] == [b"bad"]
        headers = dict(found[0].headers())
        assert headers["__connect.errors.stage"] == b"TASK_PUT"
        assert headers["__connect.errors.offset"] == b"1"
        assert b"the value is bad" in headers["__connect.errors.exception.message"]
    finally:
        herder.runtime.stop()


def test_reporting_without_tolerance_fails_the_task(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    _send(bootstrap, topic, [b"good", b"bad"])
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"picky-{topic}"
    config = {
        "connector.class": "tests.connect.plugins_for_tests.PickySink",
        "topics": topic,
        "key.converter": "string",
        "value.converter": "string",
        "errors.log.enable": "true",
    }
    herder.create_connector(name, config)
    try:
        wait(
            lambda: herder.connector_status(name)["tasks"][0]["state"] == "FAILED",
            "the task to fail",
        )
        trace = herder.connector_status(name)["tasks"][0]["trace"]
        assert "tolerance exceeded" in trace and "@1" in trace
    finally:
        herder.runtime.stop()
