"""confluent-kafka (librdkafka) against a real ``sluice broker start`` process, over TCP.

Producers (plain, idempotent, every acks setting and compression codec), assign-mode consumers
(offsets, timestamps, watermarks, read_committed) and the AdminClient (topics, configs,
partitions, records, error codes).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

TIMEOUT = 15.0  # seconds: the bound on every client wait
# Record timestamps: a minute in the past, so no retention or timestamp bound interferes.
T0 = (time.time_ns() // 1_000_000) - 60_000


@dataclass(frozen=True)
class Rec:
    """What a test produces and expects back."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def make_records(n: int, tag: str = "r") -> list[Rec]:
    """``n`` records with keys, values, headers and timestamps 1 s apart, some edge cases."""
    recs = []
    for i in range(n):
        key: bytes | None = f"{tag}-key-{i}".encode()
        value: bytes | None = f"{tag}-value-{i}-".encode() * (1 + i % 7)
        headers: tuple[tuple[str, bytes | None], ...] = (
            ("i", str(i).encode()),
            ("dup", b"first"),
            ("dup", b"second"),
        )
        if i == 1:
            key = None
        if i == 2:
            value = None
        if i == 3:
            value, headers = b"", (("null-header", None),)
        if i == 4:
            headers = ()
        if i == 5:
            headers = (("ünïcode-key", b"\x00\xff binary"), ("", b"empty key"))
        recs.append(Rec(key, value, headers, T0 + 1000 * i))
    return recs


def as_rec(msg: Message) -> Rec:
    ts_type, ts = msg.timestamp()
    assert ts_type == TIMESTAMP_CREATE_TIME, f"timestamp type: expected CreateTime, got {ts_type}"
    return Rec(msg.key(), msg.value(), tuple(msg.headers() or ()), ts)


def produce(
    bootstrap: str, topic: str, recs: list[Rec], partition: int = 0, **config: Any
) -> list[Message]:
    """Produce ``recs`` to one partition, flush, and return the delivery reports (no errors)."""
    reports: list[tuple[KafkaError | None, Message]] = []
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "error_cb": errors.append,
            **config,
        }
    )
    for rec in recs:
        producer.produce(
            topic,
            value=rec.value,
            key=rec.key,
            headers=list(rec.headers),
            timestamp=rec.timestamp,
            partition=partition,
            on_delivery=lambda err, msg: reports.append((err, msg)),
        )
    left = producer.flush(TIMEOUT)
    assert left == 0, f"{left} of {len(recs)} messages undelivered after {TIMEOUT}s"
    assert not errors, f"producer errors: {errors}"
    failed = [(err, msg.offset()) for err, msg in reports if err is not None]
    assert not failed, f"delivery failed: {failed}"
    assert len(reports) == len(recs), f"expected {len(recs)} delivery reports, got {len(reports)}"
    return [msg for _, msg in reports]


def new_consumer(bootstrap: str, **config: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"compat-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **config,
        }
    )


def consume(
    bootstrap: str,
    topic: str,
    count: int,
    partition: int = 0,
    offset: int = OFFSET_BEGINNING,
    **config: Any,
) -> list[Message]:
    """Assign one partition at ``offset`` and read exactly ``count`` messages (bounded wait)."""
    consumer = new_consumer(bootstrap, **config)
    got: list[Message] = []
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=count - len(got), timeout=0.5):
                err = msg.error()
                assert err is None, f"consumer error after {len(got)} messages: {err}"
                got.append(msg)
    finally:
        consumer.close()
    assert len(got) == count, (
        f"expected {count} messages from {topic}[{partition}] at offset {offset}, "
        f"got {len(got)} within {TIMEOUT}s"
    )
    return got


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def topic_configs(bootstrap: str, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    client = admin(bootstrap)  # keep the handle alive until the result is in
    futures = client.describe_configs([resource], request_timeout=TIMEOUT)
    return dict(futures[resource].result(timeout=TIMEOUT))


def assert_config(
    configs: dict[str, ConfigEntry], name: str, value: str, source: ConfigSource
) -> None:
    entry = configs.get(name)
    assert entry is not None, f"{name} missing from describe_configs: {sorted(configs)}"
    got = (entry.value, ConfigSource(entry.source))
    assert got == (value, source), f"{name}: expected {(value, source)}, got {got}"
    assert entry.is_default == (source == ConfigSource.DEFAULT_CONFIG), (
        f"{name}: is_default {entry.is_default} disagrees with source {source}"
    )


def error_code(exc: BaseException) -> int:
    assert isinstance(exc, KafkaException), f"expected a KafkaException, got {exc!r}"
    return int(exc.args[0].code())


# -- producers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", ["all", "1", "0"])
def test_acks_round_trip(bootstrap: str, create_topic: Callable[..., str], acks: str) -> None:
    topic = create_topic()
    recs = make_records(20)
    delivered = produce(bootstrap, topic, recs, acks=acks)
    if acks != "0":  # with acks=0 the broker answers nothing, so no offsets come back
        offsets = [m.offset() for m in delivered]
        assert offsets == list(range(20)), f"delivery offsets: expected 0..19, got {offsets}"
    got = consume(bootstrap, topic, len(recs))
    assert [m.offset() for m in got] == list(range(20))
    assert [as_rec(m) for m in got] == recs


def test_idempotent_producer(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    first, second = make_records(150, "a"), make_records(50, "b")
    config = {"enable.idempotence": True, "batch.num.messages": 10, "linger.ms": 0}
    for partition in (0, 1):
        delivered = produce(bootstrap, topic, first, partition, **config)
        offsets = [m.offset() for m in delivered]
        assert offsets == list(range(150)), f"p{partition}: expected 0..149, got {offsets}"
        # A second producer (a new producer id) appends after the first.
        delivered = produce(bootstrap, topic, second, partition, **config)
        offsets = [m.offset() for m in delivered]
        assert offsets == list(range(150, 200)), f"p{partition}: expected 150..199, got {offsets}"
    for partition in (0, 1):
        got = consume(bootstrap, topic, 200, partition)
        assert [as_rec(m) for m in got] == first + second, f"partition {partition} differs"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(
    bootstrap: str, create_topic: Callable[..., str], codec: str
) -> None:
    topic = create_topic()
    recs = make_records(60, codec)
    # linger so that many records share one compressed batch
    delivered = produce(bootstrap, topic, recs, **{"compression.type": codec, "linger.ms": 50})
    assert [m.offset() for m in delivered] == list(range(60))
    got = consume(bootstrap, topic, 60)
    assert [m.offset() for m in got] == list(range(60))
    assert [as_rec(m) for m in got] == recs
    # and from the middle of a compressed batch
    middle = consume(bootstrap, topic, 23, offset=37)
    assert [m.offset() for m in middle] == list(range(37, 60))
    assert [as_rec(m) for m in middle] == recs[37:]


# -- consumers ----------------------------------------------------------------------------------


def test_assign_from_offset(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=3)
    recs = make_records(10)
    produce(bootstrap, topic, recs, partition=2)
    got = consume(bootstrap, topic, 6, partition=2, offset=4)
    assert [(m.partition(), m.offset()) for m in got] == [(2, o) for o in range(4, 10)]
    assert [as_rec(m) for m in got] == recs[4:]


def test_offsets_for_times(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic()
    produce(bootstrap, topic, make_records(10))  # timestamps T0, T0+1000, ...
    consumer = new_consumer(bootstrap)
    try:
        queries = {
            T0 - 5000: 0,  # before everything: the first offset
            T0: 0,
            T0 + 3500: 4,  # the first record at or after the timestamp
            T0 + 9000: 9,
            T0 + 9001: OFFSET_END,  # after everything: -1
        }
        for ts, expected in queries.items():
            [tp] = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT)
            assert tp.error is None, f"offsets_for_times({ts - T0:+}): {tp.error}"
            assert tp.offset == expected, (
                f"offsets_for_times(T0{ts - T0:+}): expected {expected}, got {tp.offset}"
            )
    finally:
        consumer.close()
    [msg] = consume(bootstrap, topic, 1, offset=4)
    assert msg.timestamp() == (TIMESTAMP_CREATE_TIME, T0 + 4000)


def test_watermarks(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    produce(bootstrap, topic, make_records(7), partition=1)
    consumer = new_consumer(bootstrap)
    try:
        marks = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT, cached=False)
            for p in (0, 1)
        ]
    finally:
        consumer.close()
    assert marks == [(0, 0), (0, 7)], f"watermarks: expected [(0, 0), (0, 7)], got {marks}"


def test_read_committed_sees_everything(bootstrap: str, create_topic: Callable[..., str]) -> None:
    """Non-transactional data is all stable: read_committed (librdkafka's default) sees it all."""
    topic = create_topic()
    plain, idempotent = make_records(10, "plain"), make_records(10, "idem")
    produce(bootstrap, topic, plain)
    produce(bootstrap, topic, idempotent, **{"enable.idempotence": True})
    for isolation in ("read_committed", "read_uncommitted"):
        got = consume(bootstrap, topic, 20, **{"isolation.level": isolation})
        assert [as_rec(m) for m in got] == plain + idempotent, f"{isolation} differs"
    # the default (read_committed) high watermark is the last stable offset: the end of the log
    consumer = new_consumer(bootstrap)
    try:
        marks = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT, cached=False
        )
    finally:
        consumer.close()
    assert marks == (0, 20), f"watermarks: expected (0, 20), got {marks}"


def fetch_all(consumer: Consumer, topic: str, per_partition: int) -> dict[int, list[Rec]]:
    """Read both partitions of ``topic`` from the beginning until each has ``per_partition``."""
    got: dict[int, list[Rec]] = {0: [], 1: []}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
        deadline = time.monotonic() + TIMEOUT
        while sum(map(len, got.values())) < 2 * per_partition and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=200, timeout=0.5):
                assert msg.error() is None, f"consumer error: {msg.error()}"
                got[msg.partition()].append(as_rec(msg))
    finally:
        consumer.close()
    counts = {p: len(v) for p, v in got.items()}
    expected = {0: per_partition, 1: per_partition}
    assert counts == expected, f"messages per partition: expected {expected}, got {counts}"
    return got


def test_small_fetch_sizes(bootstrap: str, create_topic: Callable[..., str]) -> None:
    """Fetch max_bytes and partition_max_bytes are honoured at batch boundaries.

    librdkafka drops the connection on a response above ``receive.message.max.bytes``, so a
    broker that overshoots ``fetch.max.bytes`` fails this test.
    """
    topic = create_topic(partitions=2)
    recs = make_records(60)
    for partition in (0, 1):
        produce(bootstrap, topic, recs, partition, **{"batch.num.messages": 5, "linger.ms": 0})
    limits = {"fetch.max.bytes": 2048, "message.max.bytes": 2048, "fetch.wait.max.ms": 50}
    strict = new_consumer(
        bootstrap,
        **limits,
        **{"max.partition.fetch.bytes": 1024, "receive.message.max.bytes": 2048 + 512},
    )
    got = fetch_all(strict, topic, 60)
    assert got[0] == got[1] == recs
    # A batch larger than both limits still comes back (alone), so the consumer progresses.
    big = Rec(b"big", b"B" * 5000, (), T0)
    for partition in (0, 1):
        produce(bootstrap, topic, [big], partition, **{"compression.type": "none"})
    lenient = new_consumer(bootstrap, **limits, **{"max.partition.fetch.bytes": 1024})
    got = fetch_all(lenient, topic, 61)
    assert got[0] == got[1] == [*recs, big]


def test_long_poll_wakes_on_produce(bootstrap: str, create_topic: Callable[..., str]) -> None:
    """A consumer waiting at the end of an empty partition gets what is produced afterwards."""
    topic = create_topic()
    consumer = new_consumer(bootstrap, **{"fetch.wait.max.ms": 5000})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        assert consumer.consume(num_messages=1, timeout=1.0) == []
        recs = make_records(3)
        produce(bootstrap, topic, recs)
        got: list[Message] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 3 and time.monotonic() < deadline:
            got.extend(consumer.consume(num_messages=3, timeout=0.5))
    finally:
        consumer.close()
    assert [m.offset() for m in got] == [0, 1, 2], f"offsets: {[m.offset() for m in got]}"
    assert [as_rec(m) for m in got] == recs


def test_log_append_time(bootstrap: str, create_topic: Callable[..., str]) -> None:
    """On a LogAppendTime topic the broker stamps its own time over the producer's."""
    topic = create_topic(config={"message.timestamp.type": "LogAppendTime"})
    before = time.time_ns() // 1_000_000
    delivered = produce(bootstrap, topic, make_records(5))
    after = time.time_ns() // 1_000_000
    for msg in [*delivered, *consume(bootstrap, topic, 5)]:
        ts_type, ts = msg.timestamp()
        assert ts_type == TIMESTAMP_LOG_APPEND_TIME, f"offset {msg.offset()}: type {ts_type}"
        assert before <= ts <= after, f"offset {msg.offset()}: {ts} not in [{before}, {after}]"


# -- admin --------------------------------------------------------------------------------------


def test_create_describe_topic(bootstrap: str, topic_name: str) -> None:
    client = admin(bootstrap)
    futures = client.create_topics(
        [
            NewTopic(
                topic_name,
                num_partitions=3,
                replication_factor=1,
                config={"retention.ms": "3600000"},
            )
        ],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    futures[topic_name].result(timeout=TIMEOUT)
    meta = client.list_topics(topic_name, timeout=TIMEOUT).topics[topic_name]
    assert meta.error is None, f"metadata error: {meta.error}"
    assert sorted(meta.partitions) == [0, 1, 2], f"partitions: {sorted(meta.partitions)}"
    for p in meta.partitions.values():
        assert p.error is None and p.leader >= 0, f"partition {p.id}: {p.error}, leader {p.leader}"
        assert p.replicas == [p.leader] and p.isrs == [p.leader], f"partition {p.id}: {p}"
    configs = topic_configs(bootstrap, topic_name)
    assert_config(configs, "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)


def test_incremental_alter_configs(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(config={"retention.ms": "3600000"})
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    client = admin(bootstrap)
    futures = client.incremental_alter_configs([resource], request_timeout=TIMEOUT)
    futures[resource].result(timeout=TIMEOUT)
    configs = topic_configs(bootstrap, topic)
    assert_config(configs, "cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "segment.bytes", "1048576", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)


def test_alter_configs_replaces_overrides(bootstrap: str, create_topic: Callable[..., str]) -> None:
    """Non-incremental AlterConfigs sets the given keys and reverts every other override."""
    topic = create_topic(config={"retention.ms": "3600000"})
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"cleanup.policy": "compact"})
    client = admin(bootstrap)
    with pytest.warns(DeprecationWarning, match="alter_configs"):
        futures = client.alter_configs([resource], request_timeout=TIMEOUT)
    futures[resource].result(timeout=TIMEOUT)
    configs = topic_configs(bootstrap, topic)
    assert_config(configs, "cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)


def test_delete_topic(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=2)
    produce(bootstrap, topic, make_records(5))
    client = admin(bootstrap)
    futures = client.delete_topics([topic], operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
    futures[topic].result(timeout=TIMEOUT)
    listed = client.list_topics(timeout=TIMEOUT).topics
    assert topic not in listed, f"{topic} still listed after delete: {sorted(listed)}"
    # the name is free again, and the new topic starts empty
    create_topic(partitions=1)
    consumer = new_consumer(bootstrap)
    try:
        marks = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT, cached=False
        )
    finally:
        consumer.close()
    assert marks == (0, 0), f"recreated topic: expected watermarks (0, 0), got {marks}"


def test_create_partitions(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic(partitions=1)
    client = admin(bootstrap)
    futures = client.create_partitions(
        [NewPartitions(topic, 4)], operation_timeout=TIMEOUT, request_timeout=TIMEOUT
    )
    futures[topic].result(timeout=TIMEOUT)
    meta = client.list_topics(topic, timeout=TIMEOUT).topics[topic]
    assert sorted(meta.partitions) == [0, 1, 2, 3], f"partitions: {sorted(meta.partitions)}"
    recs = make_records(5)
    produce(bootstrap, topic, recs, partition=3)
    assert [as_rec(m) for m in consume(bootstrap, topic, 5, partition=3)] == recs
    # the count can only grow
    futures = client.create_partitions(
        [NewPartitions(topic, 2)], operation_timeout=TIMEOUT, request_timeout=TIMEOUT
    )
    exc = futures[topic].exception(timeout=TIMEOUT)
    assert exc is not None, "shrinking partitions from 4 to 2 succeeded"
    assert error_code(exc) == KafkaError.INVALID_PARTITIONS, f"expected INVALID_PARTITIONS: {exc}"
    # nor by more than 10,000 partitions in one request
    futures = client.create_partitions(
        [NewPartitions(topic, 10_005)], operation_timeout=TIMEOUT, request_timeout=TIMEOUT
    )
    exc = futures[topic].exception(timeout=TIMEOUT)
    assert exc is not None and error_code(exc) == KafkaError.POLICY_VIOLATION, exc


def test_delete_records(bootstrap: str, create_topic: Callable[..., str]) -> None:
    topic = create_topic()
    recs = make_records(10)
    produce(bootstrap, topic, recs)
    client = admin(bootstrap)
    futures = client.delete_records(
        [TopicPartition(topic, 0, 6)], operation_timeout=TIMEOUT, request_timeout=TIMEOUT
    )
    [future] = futures.values()
    deleted = future.result(timeout=TIMEOUT)
    assert deleted.low_watermark == 6, f"low watermark: expected 6, got {deleted.low_watermark}"
    consumer = new_consumer(bootstrap)
    try:
        marks = consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=TIMEOUT, cached=False
        )
    finally:
        consumer.close()
    assert marks == (6, 10), f"watermarks: expected (6, 10), got {marks}"
    got = consume(bootstrap, topic, 4)  # from the beginning, which is now offset 6
    assert [m.offset() for m in got] == [6, 7, 8, 9]
    assert [as_rec(m) for m in got] == recs[6:]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("exists", KafkaError.TOPIC_ALREADY_EXISTS),
        ("bad name", KafkaError.TOPIC_EXCEPTION),
        ("dotdot", KafkaError.TOPIC_EXCEPTION),
        ("too long", KafkaError.TOPIC_EXCEPTION),
        ("unknown config", KafkaError.INVALID_CONFIG),
        ("bad config value", KafkaError.INVALID_CONFIG),
        ("replication 3", KafkaError.INVALID_REPLICATION_FACTOR),
        ("10,001 partitions", KafkaError.POLICY_VIOLATION),
    ],
)
def test_create_topic_errors(
    bootstrap: str, create_topic: Callable[..., str], case: str, expected: int
) -> None:
    name, partitions, factor, config = create_topic(), 1, 1, {}
    if case == "bad name":
        name = "bad name!"
    elif case == "dotdot":
        name = ".."
    elif case == "too long":
        name = "x" * 250
    elif case == "unknown config":
        name, config = name + "-2", {"no.such.config": "1"}
    elif case == "bad config value":
        name, config = name + "-2", {"retention.ms": "soon"}
    elif case == "replication 3":
        name, factor = name + "-2", 3
    elif case == "10,001 partitions":
        name, partitions = name + "-2", 10_001
    client = admin(bootstrap)
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=factor, config=config)],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    exc = futures[name].exception(timeout=TIMEOUT)
    assert exc is not None, f"creating {name!r} ({case}) succeeded"
    got = error_code(exc)
    assert got == expected, f"{case}: expected {KafkaError(expected).name()}, got {exc}"
    if case != "exists":
        listed = client.list_topics(timeout=TIMEOUT).topics
        assert name not in listed, f"{name!r} was created despite the error"


def test_message_over_max_bytes(broker_factory: Callable[..., Any], topic_name: str) -> None:
    """A batch over ``message.max.bytes`` (broker) or ``max.message.bytes`` (topic) is refused."""
    small = broker_factory(**{"message.max.bytes": "10000"})
    client = admin(small.bootstrap)
    limited = topic_name + "-limited"
    futures = client.create_topics(
        [
            NewTopic(topic_name, 1, 1),
            NewTopic(limited, 1, 1, config={"max.message.bytes": "5000"}),
        ],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    for future in futures.values():
        future.result(timeout=TIMEOUT)
    for topic, size in ((topic_name, 20_000), (limited, 8_000)):
        reports: list[tuple[KafkaError | None, Message]] = []

        def on_delivery(
            err: KafkaError | None,
            msg: Message,
            reports: list[tuple[KafkaError | None, Message]] = reports,
        ) -> None:
            reports.append((err, msg))

        producer = Producer({"bootstrap.servers": small.bootstrap, "compression.type": "none"})
        # one flush each, so the two never share a batch
        producer.produce(topic, value=b"x" * size, on_delivery=on_delivery)
        assert producer.flush(TIMEOUT) == 0, f"{topic}: big message undelivered after {TIMEOUT}s"
        producer.produce(topic, value=b"small", on_delivery=on_delivery)
        assert producer.flush(TIMEOUT) == 0, f"{topic}: small message undelivered after {TIMEOUT}s"
        assert len(reports) == 2, f"{topic}: expected 2 delivery reports, got {len(reports)}"
        (big_err, _), (small_err, small_msg) = reports
        assert big_err is not None, f"{topic}: a {size}-byte message was accepted"
        assert big_err.code() == KafkaError.MSG_SIZE_TOO_LARGE, (
            f"{topic}: expected MSG_SIZE_TOO_LARGE, got {big_err}\n{small.log_text()[-3000:]}"
        )
        assert small_err is None, f"{topic}: the small message failed: {small_err}"
        assert small_msg.offset() == 0, f"{topic}: small message at {small_msg.offset()}, not 0"
