"""``spark.read.format("sluice")``: batch reads on a real local Spark against the real broker."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from sluice.connectors.spark.source import register
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.connectors.spark.source_helpers import Produced, produce, rows, source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


@pytest.fixture(scope="module")
def topic3(shared_broker: BrokerProcess) -> tuple[str, list[Produced]]:
    """A 3-partition topic of 90 records with headers on odd ones, 30 per partition."""
    topic = create_topic(shared_broker.bootstrap, 3)
    return topic, produce(shared_broker.bootstrap, topic, 90, headers=True)


def test_batch_read_returns_what_was_produced(
    session: SparkSession,
    shared_broker: BrokerProcess,
    topic3: tuple[str, list[Produced]],
) -> None:
    topic, produced = topic3
    df = source(session, shared_broker.bootstrap, subscribe=topic, includeHeaders="true").load()
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    got = rows(df)
    assert got == produced, f"first differences: {[g for g in got if g not in produced][:3]}"
    assert {r["topic"] for r in df.select("topic").distinct().collect()} == {topic}
    assert {r[0] for r in df.select("timestampType").distinct().collect()} == {0}
    plain = source(session, shared_broker.bootstrap, subscribe=topic).load()
    assert "headers" not in plain.columns
    assert plain.count() == 90


def test_starting_and_ending_offsets(
    session: SparkSession,
    shared_broker: BrokerProcess,
    topic3: tuple[str, list[Produced]],
) -> None:
    topic, produced = topic3
    boot = shared_broker.bootstrap
    specific = source(
        session,
        boot,
        subscribe=topic,
        startingOffsets=f'{{"{topic}": {{"0": 5, "1": -2, "2": 28}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 7, "1": 3, "2": -1}}}}',
    ).load()
    got = {(r["partition"], r["offset"]) for r in specific.select("partition", "offset").collect()}
    assert got == {(0, 5), (0, 6), (1, 0), (1, 1), (1, 2), (2, 28), (2, 29)}
    earliest_latest = source(
        session, boot, subscribe=topic, startingOffsets="earliest", endingOffsets="latest"
    ).load()
    assert earliest_latest.count() == len(produced)
    # assign: only the named partitions
    assigned = source(session, boot, assign=f'{{"{topic}": [2]}}').load()
    assert {r[0] for r in assigned.select("partition").distinct().collect()} == {2}
    assert assigned.count() == 30


def test_min_partitions_splits_ranges_into_more_tasks(
    session: SparkSession,
    shared_broker: BrokerProcess,
    topic3: tuple[str, list[Produced]],
) -> None:
    topic, produced = topic3
    df = source(session, shared_broker.bootstrap, subscribe=topic, minPartitions=7).load()
    assert df.rdd.getNumPartitions() >= 7
    without_headers = [dataclasses.replace(p, headers=None) for p in produced]
    assert rows(df) == without_headers, "split ranges lost or repeated records"
    unsplit = source(session, shared_broker.bootstrap, subscribe=topic).load()
    assert unsplit.rdd.getNumPartitions() == 3


def test_empty_ranges_read_nothing(session: SparkSession, shared_broker: BrokerProcess) -> None:
    topic = create_topic(shared_broker.bootstrap, 2)
    assert source(session, shared_broker.bootstrap, subscribe=topic).load().count() == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "no-such-topic-q1"}, "topic(s) no-such-topic-q1 do not exist"),
        ({"subscribe": "{topic}", "startingOffsets": "{{oops"}, "startingOffsets must be"),
        ({"subscribe": "{topic}", "startingOffsets": "latest"}, "not allowed in a batch query"),
        (
            {"subscribe": "{topic}", "startingOffsets": '{{"{topic}": {{"0": 1}}}}'},
            "must name every partition of the subscription",
        ),
    ],
)
def test_bad_input_fails_with_a_clear_error(
    session: SparkSession,
    shared_broker: BrokerProcess,
    topic3: tuple[str, list[Produced]],
    options: dict[str, str],
    message: str,
) -> None:
    topic = topic3[0]
    filled = {k: v.format(topic=topic) for k, v in options.items()}
    with pytest.raises(Exception) as info:  # Spark wraps the Python error
        source(session, shared_broker.bootstrap, **filled).load().collect()
    assert message in str(info.value), f"expected {message!r} in: {str(info.value)[:2000]}"


def test_fail_on_data_loss(session: SparkSession, shared_broker: BrokerProcess) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot, 1)
    produce(boot, topic, 20, partitions=1)
    admin = AdminClient({"bootstrap.servers": boot})
    for future in admin.delete_records([KafkaTopicPartition(topic, 0, 8)]).values():
        future.result(CLIENT_TIMEOUT)
    from_zero = f'{{"{topic}": {{"0": 0}}}}'
    with pytest.raises(Exception) as info:  # Spark wraps the Python error
        source(session, boot, subscribe=topic, startingOffsets=from_zero).load().collect()
    assert "offsets 0..7 are no longer in the log" in str(info.value), str(info.value)[:2000]
    assert "failOnDataLoss=false" in str(info.value)
    lenient = source(
        session, boot, subscribe=topic, startingOffsets=from_zero, failOnDataLoss="false"
    ).load()
    assert sorted(r[0] for r in lenient.select("offset").collect()) == list(range(8, 20))
