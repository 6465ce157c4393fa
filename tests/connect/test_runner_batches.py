"""Records in column form (``SourceBatch``, ``SinkBatch``): the runners' fast path gives what the
record-by-record path gives — same bytes in the topic, same records for a sink, same offsets —
and anything it cannot take (a transform, bytes that are not text) goes record by record,
through the error policy."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from sluice.connect.offsets import FileOffsetStore
from tests.conftest import BrokerProcess, create_topic
from tests.connect.batch_plugins import ACKED, RECORDED
from tests.connect.worker_helpers import in_process_worker, read, wait

SOURCE = "tests.connect.batch_plugins.BatchSource"
SINK = "tests.connect.batch_plugins.RecordingSink"
STRINGS = {"key.converter": "string", "value.converter": "string"}


def test_a_sink_without_put_batch_gets_the_records_the_record_path_builds(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, b"one", b"k1", headers=[("h", b"x")], timestamp=1_700_000_000_000)
    producer.produce(topic, b"two\nlines", None)
    producer.produce(topic, None, b"tombstone")
    producer.produce(topic, "été".encode(), "clé".encode())
    assert producer.flush(30) == 0
    never = {  # a transform whose predicate never matches: the record-by-record path
        "transforms": "noop",
        "transforms.noop.type": "DropHeaders",
        "transforms.noop.headers": "h",
        "transforms.noop.predicate": "never",
        "predicates": "never",
        "predicates.never.type": "TopicNameMatches",
        "predicates.never.pattern": "no-such-topic",
    }
    worker = in_process_worker(bootstrap, tmp_path)
    fast, slow = f"fast-{topic}", f"slow-{topic}"
    worker.start_connector(fast, {"connector.class": SINK, "topics": topic, **STRINGS})
    worker.start_connector(slow, {"connector.class": SINK, "topics": topic, **STRINGS, **never})
    try:
        wait(lambda: len(RECORDED[fast]) >= 4 and len(RECORDED[slow]) >= 4, "4 records each")
        assert RECORDED[fast] == RECORDED[slow]
        assert [row[6] for row in RECORDED[fast]] == ["one", "two\nlines", None, "été"]
        assert RECORDED[fast][0][7:10] == (1_700_000_000_000, "CreateTime", [("h", b"x")])
    finally:
        worker.stop()


def test_bytes_that_are_not_text_go_to_the_dead_letter_topic_and_the_rest_to_the_file(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic, dead = create_topic(bootstrap), create_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in (b"good 1", b"\xff\xfe bad", b"good 2"):
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    output = tmp_path / "out.txt"
    worker = in_process_worker(bootstrap, tmp_path)
    worker.start_connector(
        "sink",
        {
            "connector.class": "file-sink",
            "topics": topic,
            "file": str(output),
            **STRINGS,
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dead,
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        wait(lambda: output.exists() and len(output.read_text().splitlines()) == 2, "2 lines")
        assert output.read_text() == "good 1\ngood 2\n"
        found = read(bootstrap, dead, 1)
        assert [m.value() for m in found] == [b"\xff\xfe bad"]
        assert dict(found[0].headers())["__connect.errors.stage"] == b"VALUE_CONVERTER"
    finally:
        worker.stop()


def test_source_batches_are_acknowledged_record_by_record_and_their_offsets_committed(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    worker = in_process_worker(bootstrap, tmp_path)
    name = f"batches-{topic}"
    worker.start_connector(
        name, {"connector.class": SOURCE, "topic": topic, "count": 10, **STRINGS}
    )
    try:
        wait(lambda: len(ACKED[name]) == 10, "10 acknowledged records")
        assert ACKED[name] == [(f"v{n}", {"n": n + 1}) for n in range(10)]
        assert [m.value() for m in read(bootstrap, topic, 10)] == [
            f"v{n}".encode() for n in range(10)
        ]
        store = FileOffsetStore(tmp_path / "offsets.json")
        wait(
            lambda: FileOffsetStore(store.path).get(name, {"batch-source": name}) == {"n": 10},
            "the last offset committed",
        )
    finally:
        worker.stop()


def test_source_batches_go_through_transforms_record_by_record(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    routed = create_topic(bootstrap)
    worker = in_process_worker(bootstrap, tmp_path)
    name = f"routed-{topic}"
    worker.start_connector(
        name,
        {
            "connector.class": SOURCE,
            "topic": topic,
            "count": 6,
            **STRINGS,
            "transforms": "route",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": ".*",
            "transforms.route.replacement": routed,
        },
    )
    try:
        found = read(bootstrap, routed, 6)
        assert [m.value() for m in found] == [f"v{n}".encode() for n in range(6)]
        wait(
            lambda: (
                FileOffsetStore(tmp_path / "offsets.json").get(name, {"batch-source": name})
                == {"n": 6}
            ),
            "the last offset committed",
        )
    finally:
        worker.stop()
