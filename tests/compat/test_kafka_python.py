"""kafka-python 3 against a real ``sluice broker start`` process, over TCP.

Its producer is idempotent by default (InitProducerId before the first Produce); its consumer is
used without a group (assign, seek, ``auto_offset_reset``); its admin client creates, describes
and deletes topics.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

# kafka-python 3.0.12 loads its protocol schemas with the deprecated importlib.resources
# read_text/open_text, at import time and whenever a schema module loads lazily.
READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    import kafka.errors
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

pytestmark = pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning")

TIMEOUT = 15.0  # seconds: the bound on every client wait
T0 = (time.time_ns() // 1_000_000) - 60_000


def send_all(bootstrap: str, topic: str, n: int, partitions: int = 1) -> list[tuple[Any, ...]]:
    """Send ``n`` records with the default (idempotent) producer; returns what was sent."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        request_timeout_ms=int(TIMEOUT * 1000),
        max_block_ms=int(TIMEOUT * 1000),
    )
    try:
        sent = []
        futures = []
        for i in range(n):
            rec = (
                i % partitions,
                f"k{i}".encode(),
                f"v{i}".encode() * (i % 5 + 1),
                [("i", str(i).encode()), ("dup", b"a"), ("dup", b"b")],
                T0 + i,
            )
            partition, key, value, headers, ts = rec
            futures.append(
                producer.send(
                    topic,
                    key=key,
                    value=value,
                    headers=headers,
                    partition=partition,
                    timestamp_ms=ts,
                )
            )
            sent.append(rec)
        metas = [f.get(timeout=TIMEOUT) for f in futures]
        assert producer.config["enable_idempotence"] is True, "idempotence was switched off"
        pid = producer._transaction_manager.producer_id_and_epoch.producer_id
        assert pid >= 0, f"expected a producer id from InitProducerId, got {pid}"
    finally:
        producer.close(timeout=TIMEOUT)
    for partition in range(partitions):
        offsets = [m.offset for m in metas if m.partition == partition]
        expected = list(range(len(offsets)))
        assert offsets == expected, f"p{partition} offsets: expected {expected}, got {offsets}"
    return sent


def poll_n(consumer: KafkaConsumer, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    assert len(got) == count, f"expected {count} records, got {len(got)} within {TIMEOUT}s"
    return got


def as_sent(record: Any) -> tuple[Any, ...]:
    return (record.partition, record.key, record.value, list(record.headers), record.timestamp)


def new_consumer(bootstrap: str, **config: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=int(TIMEOUT * 1000),
        **config,
    )


def test_default_producer_and_assign_seek(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    sent = send_all(bootstrap, topic, 20, partitions=2)
    consumer = new_consumer(bootstrap)
    try:
        tp = TopicPartition(topic, 1)
        consumer.assign([tp])
        consumer.seek(tp, 3)
        got = poll_n(consumer, 7)
        assert [r.offset for r in got] == list(range(3, 10))
        assert [as_sent(r) for r in got] == [s for s in sent if s[0] == 1][3:]
        assert consumer.position(tp) == 10, f"position: expected 10, got {consumer.position(tp)}"
    finally:
        consumer.close()


def test_auto_offset_reset(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic()
    sent = send_all(bootstrap, topic, 12)
    tp = TopicPartition(topic, 0)
    earliest = new_consumer(bootstrap, auto_offset_reset="earliest")
    latest = new_consumer(bootstrap, auto_offset_reset="latest")
    try:
        earliest.assign([tp])
        got = poll_n(earliest, 12)
        assert [r.offset for r in got] == list(range(12))
        assert [as_sent(r) for r in got] == sent
        latest.assign([tp])
        assert latest.position(tp, timeout_ms=int(TIMEOUT * 1000)) == 12
        marks = (
            latest.beginning_offsets([tp], timeout_ms=int(TIMEOUT * 1000))[tp],
            latest.end_offsets([tp], timeout_ms=int(TIMEOUT * 1000))[tp],
        )
        assert marks == (0, 12), f"beginning/end offsets: expected (0, 12), got {marks}"
    finally:
        earliest.close()
        latest.close()


def test_admin_create_describe_delete(bootstrap: str, topic_name: str) -> None:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    try:
        client.create_topics(
            {
                topic_name: {
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "3600000"},
                }
            }
        )
        [described] = client.describe_topics([topic_name])
        partitions = sorted(p["partition_index"] for p in described["partitions"])
        assert partitions == [0, 1, 2], f"partitions: expected [0, 1, 2], got {partitions}"

        resource = ConfigResource(ConfigResourceType.TOPIC, topic_name)
        modified = client.describe_configs([resource])["topic"][topic_name]
        assert sorted(modified) == ["retention.ms"], f"modified configs: {sorted(modified)}"
        got = (modified["retention.ms"]["value"], modified["retention.ms"]["config_source"])
        assert got == ("3600000", "DYNAMIC_TOPIC_CONFIG"), f"retention.ms: got {got}"
        everything = client.describe_configs([resource], config_filter="all")["topic"][topic_name]
        got = (everything["cleanup.policy"]["value"], everything["cleanup.policy"]["config_source"])
        assert got == ("delete", "DEFAULT_CONFIG"), f"cleanup.policy: got {got}"

        with pytest.raises(kafka.errors.TopicAlreadyExistsError):
            client.create_topics({topic_name: {"num_partitions": 1, "replication_factor": 1}})

        client.delete_topics([topic_name])
        listed = client.list_topics()
        assert topic_name not in listed, f"{topic_name} still listed after delete"
    finally:
        client.close()


def test_admin_describe_log_dirs(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    sent = send_all(bootstrap, topic, 20, partitions=2)
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    try:
        [everything] = client.describe_log_dirs()
        [log_dir] = everything["log_dirs"]
        assert log_dir["error_code"] == 0
        sizes = {
            (t["name"], p["partition_index"]): p["partition_size"]
            for t in log_dir["topics"]
            for p in t["partitions"]
        }
        assert {(topic, 0), (topic, 1)} <= sizes.keys()
        # each record is at least its value; the batches' headers come on top
        assert sizes[(topic, 0)] + sizes[(topic, 1)] > sum(len(r[2]) for r in sent)
        assert log_dir["usable_bytes"] > 0

        [one] = client.describe_log_dirs({topic: [1]})
        [only] = one["log_dirs"][0]["topics"]
        assert (only["name"], [p["partition_index"] for p in only["partitions"]]) == (topic, [1])
        assert only["partitions"][0]["partition_size"] == sizes[(topic, 1)]
    finally:
        client.close()


def test_consumes_through_an_incremental_fetch_session_and_a_partition_added(
    bootstrap: str, create_topic: Callable[..., str], topic_name: str
) -> None:
    """kafka-python keeps a fetch session when the broker gives one (KIP-227): its fetches
    after the first name only the partitions whose position moved, and the broker answers only
    the partitions with news. Every record comes once, in order, across rounds of new records
    and across a partition added to the assignment (an incremental request adds it)."""
    first = create_topic(partitions=2)
    second = create_topic(name=f"{topic_name}-added")
    tps = [TopicPartition(first, 0), TopicPartition(first, 1)]
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=int(TIMEOUT * 1000))
    consumer = new_consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100)

    def send(topic: str, n: int, partitions: int = 1) -> None:
        futures = [producer.send(topic, b"v%d" % i, partition=i % partitions) for i in range(n)]
        for future in futures:
            future.get(timeout=TIMEOUT)

    try:
        consumer.assign(tps)
        got: list[Any] = []
        for _ in range(4):  # rounds: new records for the session's partitions
            send(first, 10, partitions=2)
            got += poll_n(consumer, 10)
        for p in (0, 1):
            offsets = [r.offset for r in got if r.partition == p]
            assert offsets == list(range(20)), f"partition {p}: {offsets}"
        sessions = {
            node: handler.next_metadata
            for node, handler in consumer._fetcher._session_handlers.items()
        }
        assert any(m.session_id != 0 and m.epoch > 1 for m in sessions.values()), (
            f"no incremental fetch session was used: {sessions}"
        )

        send(second, 6)
        consumer.assign([*tps, TopicPartition(second, 0)])
        added = poll_n(consumer, 6)
        assert [(r.topic, r.offset) for r in added] == [(second, i) for i in range(6)]
        send(first, 4, partitions=2)
        send(second, 2)
        last = poll_n(consumer, 6)
        expected = [(first, p, o) for p in (0, 1) for o in (20, 21)]
        expected += [(second, 0, 6), (second, 0, 7)]
        assert sorted((r.topic, r.partition, r.offset) for r in last) == sorted(expected)
    finally:
        consumer.close()
        producer.close(timeout=TIMEOUT)
