"""The task runners' two paths, one suite: every test runs over the column-form (batch) path and
the record-by-record path, so that what reaches the topic or the sink, the error policy (skips,
failures, dead letters with context headers) and the committed offsets cannot drift apart.

- source: :class:`~tests.connect.batch_plugins.BatchSource` returns ``SourceBatch`` objects
  (``form=batch``) or the same values as ``SourceRecord`` objects (``form=records``);
- sink: a connector without transforms takes the batch path; a transform whose predicate never
  matches (``noop`` below) sends the same records record by record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaPartition

from sluice import clients
from sluice.connect.api.data import Schema
from sluice.connect.runtime.offsets import FileOffsetStore
from tests.conftest import BrokerProcess, create_topic
from tests.connect.batch_plugins import ACKED, RECORDED
from tests.connect.worker_helpers import in_process_herder, read, wait

SOURCE = "tests.connect.batch_plugins.BatchSource"
SINK = "tests.connect.batch_plugins.RecordingSink"
STRINGS = {"key.converter": "string", "value.converter": "string"}

SOURCE_PATHS = {"batch": {"form": "batch"}, "record": {"form": "records"}}
SINK_PATHS: dict[str, dict[str, str]] = {
    "batch": {},
    "record": {  # a transform whose predicate never matches: the record-by-record path
        "transforms": "noop",
        "transforms.noop.type": "DropHeaders",
        "transforms.noop.headers": "h",
        "transforms.noop.predicate": "never",
        "predicates": "never",
        "predicates.never.type": "TopicNameMatches",
        "predicates.never.pattern": "no-such-topic",
    },
}
TEXT = Schema("string", optional=True)


def committed_offset(bootstrap: str, connector: str, topic: str) -> int:
    """The offset the sink connector's group committed for partition 0 of ``topic``."""
    consumer = clients.consumer(bootstrap, **{"group.id": f"connect-{connector}"})
    try:
        found = consumer.committed([KafkaPartition(topic, 0)], timeout=10)
        return int(found[0].offset)
    finally:
        consumer.close()


def good_bad_good(bootstrap: str) -> tuple[str, str]:
    """A new topic holding ``good 1``, bytes that are not text, ``good 2`` (each with a header
    ``origin: test``), and a new topic for dead letters."""
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in (b"good 1", b"\xff\xfe bad", b"good 2"):
        producer.produce(topic, value, headers=[("origin", b"test")])
    assert producer.flush(30) == 0
    return topic, dead


def dead_letters(topic: str) -> dict[str, str]:
    """Settings that skip bad records to dead-letter ``topic``, with the context headers."""
    return {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": topic,
        "errors.deadletterqueue.context.headers.enable": "true",
    }


def source_offset(tmp_path: Path, name: str) -> dict[str, Any] | None:
    """The source offset the worker of ``tmp_path`` committed for a BatchSource ``name``."""
    return FileOffsetStore(tmp_path / "offsets.json").get(name, {"batch-source": name})


# --- Source --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SOURCE_PATHS)
def test_source_records_reach_the_topic_are_acknowledged_and_their_offsets_committed(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"batches-{topic}"
    config = {"connector.class": SOURCE, "topic": topic, "count": 10, "keyed": "true"}
    herder.create_connector(name, {**config, **STRINGS, **SOURCE_PATHS[path]})
    try:
        wait(lambda: len(ACKED[name]) == 10, "10 acknowledged records")
        assert ACKED[name] == [(f"v{n}", {"n": n + 1}) for n in range(10)]
        found = read(bootstrap, topic, 10)
        assert [(m.key(), m.value()) for m in found] == [
            (f"k{n}".encode(), f"v{n}".encode()) for n in range(10)
        ]
        assert [m.headers() for m in found] == [None] * 10
        wait(lambda: source_offset(tmp_path, name) == {"n": 10}, "the last offset committed")
    finally:
        herder.runtime.stop()


@pytest.mark.parametrize("path", SOURCE_PATHS)
def test_source_values_that_cannot_be_converted_are_skipped_and_their_offsets_committed(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"skips-{topic}"
    config = {
        "connector.class": SOURCE,
        "topic": topic,
        "count": 10,
        "accent.every": 3,  # v0, v3, v6, v9 are not ASCII
        "value.converter.converter.encoding": "ascii",
        "errors.tolerance": "all",
    }
    herder.create_connector(name, {**config, **STRINGS, **SOURCE_PATHS[path]})
    kept = [n for n in range(10) if n % 3]
    try:
        wait(lambda: len(ACKED[name]) == len(kept), f"{len(kept)} acknowledged records")
        assert ACKED[name] == [(f"v{n}", {"n": n + 1}) for n in kept]
        assert [m.value() for m in read(bootstrap, topic, len(kept))] == [
            f"v{n}".encode() for n in kept
        ]
        wait(lambda: source_offset(tmp_path, name) == {"n": 10}, "the last offset committed")
        status = herder.connector_status(name)["tasks"][0]
        assert status["state"] == "RUNNING", status
    finally:
        herder.runtime.stop()


@pytest.mark.parametrize("path", SOURCE_PATHS)
def test_a_source_value_that_cannot_be_converted_fails_the_task_and_commits_nothing(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"strict-{topic}"
    config = {
        "connector.class": SOURCE,
        "topic": topic,
        "count": 10,
        "accent.every": 3,  # v0 is the first value, and not ASCII
        "value.converter.converter.encoding": "ascii",
    }
    herder.create_connector(name, {**config, **STRINGS, **SOURCE_PATHS[path]})
    try:
        wait(
            lambda: herder.connector_status(name)["tasks"][0]["state"] == "FAILED",
            "the task to fail",
        )
        assert "ascii" in herder.connector_status(name)["tasks"][0]["trace"]
        assert ACKED[name] == []
        assert source_offset(tmp_path, name) is None
    finally:
        herder.runtime.stop()


@pytest.mark.parametrize("path", SOURCE_PATHS)
def test_source_records_go_through_transforms(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    routed = create_topic(bootstrap)
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"routed-{topic}"
    herder.create_connector(
        name,
        {
            "connector.class": SOURCE,
            "topic": topic,
            "count": 6,
            **STRINGS,
            **SOURCE_PATHS[path],
            "transforms": "route",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": ".*",
            "transforms.route.replacement": routed,
        },
    )
    try:
        found = read(bootstrap, routed, 6)
        assert [m.value() for m in found] == [f"v{n}".encode() for n in range(6)]
        wait(lambda: source_offset(tmp_path, name) == {"n": 6}, "the last offset committed")
    finally:
        herder.runtime.stop()


# --- Sink ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SINK_PATHS)
def test_a_sink_gets_every_field_of_its_records_and_their_offsets_are_committed(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, b"one", b"k1", headers=[("h", b"x")], timestamp=1_700_000_000_000)
    producer.produce(topic, b"two\nlines", None, timestamp=1_700_000_000_001)
    producer.produce(topic, None, b"tombstone", timestamp=1_700_000_000_002)
    producer.produce(topic, "été".encode(), "clé".encode(), timestamp=1_700_000_000_003)
    assert producer.flush(30) == 0
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"{path}-{topic}"
    config = {"connector.class": SINK, "topics": topic, **STRINGS, **SINK_PATHS[path]}
    herder.create_connector(name, config)
    try:
        wait(lambda: len(RECORDED[name]) >= 4, "4 records")
        rows = [("one", "k1", [("h", b"x")]), ("two\nlines", None, []), (None, "tombstone", [])]
        rows.append(("été", "clé", []))
        expected = []
        for n, (value, key, headers) in enumerate(rows):
            stamp = 1_700_000_000_000 + n
            fields = (topic, 0, n, TEXT, key, TEXT, value, stamp, "CreateTime", headers)
            expected.append((*fields, topic, 0, n))  # then original topic, partition, offset
        assert RECORDED[name] == expected
        wait(lambda: committed_offset(bootstrap, name, topic) == 4, "offset 4 committed")
    finally:
        herder.runtime.stop()


@pytest.mark.parametrize("path", SINK_PATHS)
def test_sink_bytes_that_are_not_text_go_to_the_dead_letter_topic_with_their_context(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = good_bad_good(bootstrap)
    herder = in_process_herder(bootstrap, tmp_path)
    name = f"dlq-{path}-{topic}"
    config = {"connector.class": SINK, "topics": topic, **STRINGS, **SINK_PATHS[path]}
    herder.create_connector(name, {**config, **dead_letters(dead)})
    try:
        wait(lambda: len(RECORDED[name]) >= 2, "2 records")
        assert [(row[2], row[6]) for row in RECORDED[name]] == [(0, "good 1"), (2, "good 2")]
        found = read(bootstrap, dead, 1)
        assert [m.value() for m in found] == [b"\xff\xfe bad"]
        headers = dict(found[0].headers())
        assert headers["origin"] == b"test"
        assert {key: headers[key] for key in headers if key.count(".") == 2} == {
            "__connect.errors.topic": topic.encode(),
            "__connect.errors.partition": b"0",
            "__connect.errors.offset": b"1",
            "__connect.errors.stage": b"VALUE_CONVERTER",
        }
        wait(lambda: committed_offset(bootstrap, name, topic) == 3, "offset 3 committed")
    finally:
        herder.runtime.stop()


@pytest.mark.parametrize("path", SINK_PATHS)
def test_bytes_that_are_not_text_go_to_the_dead_letter_topic_and_the_rest_to_the_file(
    shared_broker: BrokerProcess, tmp_path: Path, path: str
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = good_bad_good(bootstrap)
    output = tmp_path / "out.txt"
    herder = in_process_herder(bootstrap, tmp_path)
    config = {"connector.class": "file-sink", "topics": topic, "file": str(output), **STRINGS}
    herder.create_connector("sink", {**config, **SINK_PATHS[path], **dead_letters(dead)})
    try:
        wait(lambda: output.exists() and len(output.read_text().splitlines()) == 2, "2 lines")
        assert output.read_text() == "good 1\ngood 2\n"
        found = read(bootstrap, dead, 1)
        assert [m.value() for m in found] == [b"\xff\xfe bad"]
        assert dict(found[0].headers())["__connect.errors.stage"] == b"VALUE_CONVERTER"
    finally:
        herder.runtime.stop()
