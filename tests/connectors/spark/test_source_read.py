"""Reading one offset range into Arrow batches (what a Spark task does), against the real broker."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from sluice.connectors.spark._kafka_read import DataLossError, KafkaReadError, read_range
from sluice.connectors.spark._metadata import KafkaMetadata, KafkaMetadataError
from sluice.connectors.spark._offsets import OffsetRange
from sluice.connectors.spark._options import SourceOptions
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.connectors.spark.source_helpers import BASE_TS, produce


def options(bootstrap: str, topic: str, **extra: str) -> SourceOptions:
    return SourceOptions.parse({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **extra})


def read(
    opts: SourceOptions, rng: OffsetRange, rows_per_batch: int = 10_000
) -> list[dict[str, Any]]:
    batches = list(
        read_range(
            opts.consumer_config(),
            rng,
            include_headers=opts.include_headers,
            rows_per_batch=rows_per_batch,
            poll_timeout_s=opts.poll_timeout_s,
        )
    )
    return [row for batch in batches for row in batch.to_pylist()]


def test_reads_exactly_the_range_in_batches_column_wise(shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap, 1)
    produced = produce(shared_broker.bootstrap, topic, 50, partitions=1, headers=True)
    opts = options(shared_broker.bootstrap, topic, includeHeaders="true")
    batches = list(
        read_range(
            opts.consumer_config(),
            OffsetRange(topic, 0, 10, 35),
            include_headers=True,
            rows_per_batch=10,
            poll_timeout_s=CLIENT_TIMEOUT,
        )
    )
    assert [b.num_rows for b in batches] == [10, 10, 5]
    got = [row for b in batches for row in b.to_pylist()]
    assert [r["offset"] for r in got] == list(range(10, 35))
    first = got[0]
    assert (first["key"], first["value"], first["topic"], first["partition"]) == (
        produced[10].key,
        b"v10",
        topic,
        0,
    )
    assert int(first["timestamp"].timestamp() * 1000) == BASE_TS + 10
    assert first["timestampType"] == 0  # CreateTime, as Kafka numbers it
    assert got[1]["headers"] == [{"key": "n", "value": b"11"}, {"key": "tag", "value": b"x"}]
    assert first["headers"] is None


def test_transaction_markers_and_aborted_records_end_the_range(
    shared_broker: BrokerProcess,
) -> None:
    topic = create_topic(shared_broker.bootstrap, 1)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "transactional.id": topic})
    producer.init_transactions(CLIENT_TIMEOUT)
    for values, commit in ((b"c1 c2 c3", True), (b"a1 a2", False), (b"c4 c5", True)):
        producer.begin_transaction()
        for value in values.split():
            producer.produce(topic, value=value, partition=0)
        producer.flush(CLIENT_TIMEOUT)  # the aborted records reach the log before the abort
        if commit:
            producer.commit_transaction(CLIENT_TIMEOUT)
        else:
            producer.abort_transaction(CLIENT_TIMEOUT)
    # log: c1 c2 c3 COMMIT a1 a2 ABORT c4 c5 COMMIT -> 10 offsets, the last one a marker
    for isolation, expected in (
        ("read_committed", [b"c1", b"c2", b"c3", b"c4", b"c5"]),
        ("read_uncommitted", [b"c1", b"c2", b"c3", b"a1", b"a2", b"c4", b"c5"]),
    ):
        opts = options(shared_broker.bootstrap, topic, **{"kafka.isolation.level": isolation})
        meta = KafkaMetadata(opts)
        end = meta.latest([(topic, 0)])[topic, 0]
        assert end == 10, f"{isolation}: log end {end}, expected 10"
        got = read(opts, OffsetRange(topic, 0, 0, end))
        assert [r["value"] for r in got] == expected, isolation


def test_start_below_the_log_start_is_data_loss(shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap, 1)
    produce(shared_broker.bootstrap, topic, 30, partitions=1)
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    futures = admin.delete_records([KafkaTopicPartition(topic, 0, 10)])
    for future in futures.values():
        future.result(CLIENT_TIMEOUT)
    with pytest.raises(DataLossError, match=r"offset 0 is no longer in the log.*failOnDataLoss"):
        read(options(shared_broker.bootstrap, topic), OffsetRange(topic, 0, 0, 30))
    lenient = options(shared_broker.bootstrap, topic, failOnDataLoss="false")
    got = read(lenient, OffsetRange(topic, 0, 0, 30))
    assert [r["offset"] for r in got] == list(range(10, 30))


def test_a_range_the_broker_never_delivers_fails_within_the_poll_bound(
    shared_broker: BrokerProcess,
) -> None:
    topic = create_topic(shared_broker.bootstrap, 1)
    produce(shared_broker.bootstrap, topic, 5, partitions=1)
    opts = options(shared_broker.bootstrap, topic, **{"kafkaConsumer.pollTimeoutMs": "1000"})
    with pytest.raises(KafkaReadError, match=r"no records arrived within 1 s \(next offset 5"):
        read(opts, OffsetRange(topic, 0, 0, 100))


def test_metadata_lists_subscriptions_and_refuses_unknown_topics(
    shared_broker: BrokerProcess,
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot, 2)
    pattern = SourceOptions.parse({"kafka.bootstrap.servers": boot, "subscribePattern": topic})
    assert KafkaMetadata(pattern).partitions(strict=True) == [(topic, 0), (topic, 1)]
    missing = options(boot, f"{topic},no-such-topic-{topic}")
    with pytest.raises(KafkaMetadataError, match=f"no-such-topic-{topic} do not exist"):
        KafkaMetadata(missing).partitions(strict=True)
    assert KafkaMetadata(missing).partitions(strict=False) == [(topic, 0), (topic, 1)]
    assign = SourceOptions.parse({"kafka.bootstrap.servers": boot, "assign": f'{{"{topic}": [5]}}'})
    with pytest.raises(
        KafkaMetadataError, match=r"partitions that do not exist: .*-5 \(topic has 2"
    ):
        KafkaMetadata(assign).partitions(strict=True)
