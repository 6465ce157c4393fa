"""What the topic keys Sluice implements do, seen through real clients against the real broker:
timestamp bounds and LogAppendTime, max.compaction.lag.ms, file.delete.delay.ms, compression
levels. Every wait is bounded."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaError, Producer, TopicPartition

from sluice.broker.records import compression
from sluice.broker.records.batch import HEADER_SIZE, read_header
from tests.broker.conftest import consumer, create_topic, produce_values, read_partition
from tests.conftest import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT = 30.0
HOUR = 3_600_000


def wait_until(condition: Callable[[], Any], what: Callable[[], str]) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"not within {WAIT}s: {what()}")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def produce_outcomes(bootstrap: str, topic: str, timestamps: list[int]) -> list[int | None]:
    """Produce one record per timestamp (one batch each); the error code of each, None if
    written."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    outcomes: dict[int, int | None] = {}

    def report(index: int) -> Callable[[Any, Any], None]:
        def done(err: Any, _msg: Any) -> None:
            outcomes[index] = err.code() if err is not None else None

        return done

    for index, ts in enumerate(timestamps):
        producer.produce(topic, value=b"v", timestamp=ts, on_delivery=report(index))
        producer.flush(20)
    assert producer.flush(20) == 0
    return [outcomes[i] for i in range(len(timestamps))]


# --- timestamps ----------------------------------------------------------------------------


def test_timestamps_outside_the_bounds_are_refused_invalid_timestamp(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = "ts-bounds"
    create_topic(
        bootstrap,
        topic,
        config={
            "message.timestamp.before.max.ms": str(HOUR),
            "message.timestamp.after.max.ms": str(HOUR),
        },
    )
    now = now_ms()
    outcomes = produce_outcomes(bootstrap, topic, [now - 2 * HOUR, now, now + 2 * HOUR, now - 60])
    assert outcomes == [KafkaError.INVALID_TIMESTAMP, None, KafkaError.INVALID_TIMESTAMP, None]
    assert len(read_partition(bootstrap, topic)) == 2


def test_legacy_difference_bound_applies_when_before_and_after_are_unset(
    shared_broker: BrokerProcess,
) -> None:
    topic = "ts-difference"
    create_topic(
        shared_broker.bootstrap, topic, config={"message.timestamp.difference.max.ms": str(HOUR)}
    )
    now = now_ms()
    outcomes = produce_outcomes(shared_broker.bootstrap, topic, [now - 2 * HOUR, now + 2 * HOUR])
    assert outcomes == [KafkaError.INVALID_TIMESTAMP, KafkaError.INVALID_TIMESTAMP]


def test_log_append_time_is_stamped_by_the_broker(shared_broker: BrokerProcess) -> None:
    bootstrap = shared_broker.bootstrap
    topic = "ts-log-append"
    create_topic(
        bootstrap,
        topic,
        config={
            "message.timestamp.type": "LogAppendTime",
            "message.timestamp.before.max.ms": "1000",  # not checked under LogAppendTime
        },
    )
    before = now_ms()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    acknowledged: list[tuple[int, int]] = []
    for value, ts in ((b"a", 1_000), (b"b", 2_000)):
        producer.produce(
            topic,
            value=value,
            timestamp=ts,
            on_delivery=lambda e, m: acknowledged.append(
                (-1, -1) if e is not None else m.timestamp()
            ),
        )
        producer.flush(20)
    after = now_ms()
    assert len(acknowledged) == 2 and all(  # the Produce response's log_append_time_ms
        kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after for kind, ts in acknowledged
    ), f"delivery reports {acknowledged}, expected LogAppendTime in [{before}, {after}]"
    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen: list[tuple[int, int]] = []
        deadline = time.monotonic() + WAIT
        while len(seen) < 2 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.timestamp())
    finally:
        c.close()
    assert len(seen) == 2, f"consumed {seen}"
    for kind, ts in seen:
        assert kind == TIMESTAMP_LOG_APPEND_TIME, f"timestamp type {kind}, expected LogAppendTime"
        assert before - 1000 <= ts <= after + 1000, (
            f"{ts} not the broker's time [{before}, {after}]"
        )


def test_create_time_is_kept_by_default(shared_broker: BrokerProcess) -> None:
    topic = "ts-create-time"
    create_topic(shared_broker.bootstrap, topic)
    produce_values(shared_broker.bootstrap, topic, [b"a"], timestamps=[1_234])
    assert [r.timestamp for r in read_partition(shared_broker.bootstrap, topic)] == [1_234]


# --- compaction lag ------------------------------------------------------------------------


@pytest.fixture
def cleaner_broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    return broker_factory(
        **{"log.cleaner.backoff.ms": "300", "log.retention.check.interval.ms": "300"}
    )


def test_max_compaction_lag_cleans_a_log_below_its_dirty_ratio(
    cleaner_broker: BrokerProcess,
) -> None:
    bootstrap = cleaner_broker.bootstrap
    common = {
        "cleanup.policy": "compact",
        "segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.9",
    }
    create_topic(bootstrap, "lagged", config={**common, "max.compaction.lag.ms": "1000"})
    create_topic(bootstrap, "unlagged", config=common)
    for topic in ("lagged", "unlagged"):
        keys = [f"base-{i:03}".encode() for i in range(100)]
        produce_values(bootstrap, topic, [b"v"] * 100, keys=keys, one_batch_each=True)
    for topic in ("lagged", "unlagged"):  # the first pass (all dirty) has run
        checkpoint = cleaner_broker.data_dir / f"{topic}-0" / "cleaner-offset-checkpoint"
        wait_until(checkpoint.exists, lambda t=topic: f"first cleaning pass of {t}")
    for topic in ("lagged", "unlagged"):
        keys = [b"dup"] * 10 + [f"fill-{i:03}".encode() for i in range(30)]
        produce_values(bootstrap, topic, [b"v"] * 40, keys=keys, one_batch_each=True)

    def dups(topic: str) -> int:
        return sum(1 for r in read_partition(bootstrap, topic) if r.key == b"dup")

    wait_until(lambda: dups("lagged") == 1, lambda: f"{dups('lagged')} dup records in lagged")
    time.sleep(2)  # several more cleaner passes
    assert dups("unlagged") == 10, "a log under its dirty ratio without max lag was cleaned"


# --- file.delete.delay.ms ------------------------------------------------------------------


def _files(directory: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in directory.glob(pattern))


def test_deleted_segments_wait_file_delete_delay_before_removal(
    cleaner_broker: BrokerProcess,
) -> None:
    bootstrap = cleaner_broker.bootstrap
    topic = "delete-delay"
    create_topic(
        bootstrap,
        topic,
        config={"segment.bytes": "1024", "retention.ms": str(HOUR), "file.delete.delay.ms": "4000"},
    )
    old = now_ms() - 2 * HOUR
    produce_values(bootstrap, topic, [b"x" * 100] * 30, timestamps=[old] * 30, one_batch_each=True)
    directory = cleaner_broker.data_dir / f"{topic}-0"
    deleted = wait_until(
        lambda: _files(directory, "*.log.deleted"),
        lambda: f"no segment renamed .deleted: {_files(directory, '*')}",
    )
    seen_at = time.monotonic()
    assert _files(directory, "*.index.deleted"), "indexes are renamed with their segment"
    wait_until(
        lambda: not _files(directory, "*.deleted"),
        lambda: f"still there: {_files(directory, '*.deleted')}",
    )
    assert time.monotonic() - seen_at > 1.0, f"{deleted} were removed before the delay"


# --- compression levels --------------------------------------------------------------------


def _stored_batches(directory: Path) -> list[tuple[int, bytes]]:
    """(codec, records payload) of every batch of the partition's segments."""
    found = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        position = 0
        while position + HEADER_SIZE <= len(data):
            header = read_header(data, position)
            found.append(
                (header.compression, data[position + HEADER_SIZE : position + header.size])
            )
            position += header.size
    return found


@pytest.mark.parametrize(
    ("codec", "key", "level", "other"),
    [
        ("gzip", "compression.gzip.level", 9, 1),
        ("zstd", "compression.zstd.level", 19, 1),
    ],
)
def test_recompression_uses_the_topic_level(
    shared_broker: BrokerProcess, codec: str, key: str, level: int, other: int
) -> None:
    topic = f"level-{codec}"
    create_topic(
        shared_broker.bootstrap, topic, config={"compression.type": codec, key: str(level)}
    )
    values = [f"record {i} ".encode() * (5 + i % 7) + bytes(range(i % 50)) for i in range(300)]
    produce_values(
        shared_broker.bootstrap, topic, values, config={"compression.type": "none", "linger.ms": 50}
    )
    batches = _stored_batches(shared_broker.data_dir / f"{topic}-0")
    assert batches, "nothing stored"
    number = {"gzip": compression.GZIP, "zstd": compression.ZSTD, "lz4": compression.LZ4}[codec]
    distinguishable = False
    for stored_codec, body in batches:
        assert stored_codec == number
        payload = compression.decompress(number, body)
        assert body == compression.compress(number, payload, level=level), (
            f"the stored {codec} body is not level {level}'s"
        )
        distinguishable |= body != compression.compress(number, payload, level=other)
    assert distinguishable, "levels are indistinguishable on this data: the test cannot fail"


# --- min.insync.replicas -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acks", "expected"), [("all", KafkaError.NOT_ENOUGH_REPLICAS), ("1", None)]
)
def test_min_insync_replicas_above_one_refuses_acks_all_on_one_node(
    shared_broker: BrokerProcess, acks: str, expected: int | None
) -> None:
    topic = f"min-isr-{acks}"
    create_topic(shared_broker.bootstrap, topic, config={"min.insync.replicas": "2"})
    producer = Producer(
        {"bootstrap.servers": shared_broker.bootstrap, "acks": acks, "retries": 0, "linger.ms": 0}
    )
    outcome: list[Any] = []
    producer.produce(topic, value=b"v", on_delivery=lambda err, _m: outcome.append(err))
    assert producer.flush(30) == 0
    [error] = outcome
    assert (error.code() if error is not None else None) == expected, error
