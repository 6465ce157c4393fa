"""``auto.offset.reset`` for a group without committed offsets, as Kafka's clients define it.

earliest → from the first record; latest → only records produced after the member's position
was set; none (librdkafka: ``error``) → an error and no record, for a group without offsets, and
plain consumption from the committed offset for a group that has one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from tests.compat.groups.conftest import (
    SESSION_MS,
    TIMEOUT,
    produce,
    wait_until,
)
from tests.conftest import create_topic


class Member:
    """An in-process confluent-kafka member whose librdkafka statistics show its fetch state."""

    def __init__(self, bootstrap: str, group: str, topic: str, reset: str) -> None:
        self.stats: dict[str, Any] = {}
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": reset,
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 500,
                "statistics.interval.ms": 100,
                "stats_cb": self._on_stats,
            }
        )
        self.consumer.subscribe([topic])
        self.records: list[int] = []
        self.errors: list[KafkaError] = []

    def _on_stats(self, text: str) -> None:
        self.stats = json.loads(text)

    def fetching_from(self) -> int | None:
        """Where partition 0 fetches from, once its position is set (``fetch_state`` active)."""
        part = self.stats.get("topics", {}).get(self.topic, {}).get("partitions", {}).get("0", {})
        return part.get("next_offset") if part.get("fetch_state") == "active" else None

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msg = self.consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error() is not None:
                self.errors.append(msg.error())
            else:
                self.records.append(msg.offset())


@pytest.fixture
def member_factory() -> Iterator[Any]:
    started: list[Member] = []

    def start(bootstrap: str, group: str, topic: str, reset: str) -> Member:
        started.append(Member(bootstrap, group, topic, reset))
        return started[-1]

    yield start
    for m in started:
        m.consumer.close()


def test_earliest(bootstrap: str, group_id: str, member_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, {0: 5})
    member = member_factory(bootstrap, group_id, topic, "earliest")
    wait_until(
        lambda: member.poll(0.2) or len(member.records) >= 5,
        30,
        lambda: f"earliest: got offsets {member.records}, errors {member.errors}",
    )
    assert member.records == [0, 1, 2, 3, 4] and not member.errors, (
        f"earliest: expected offsets 0-4, got {member.records}, errors {member.errors}"
    )


def test_latest(bootstrap: str, group_id: str, member_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, {0: 5})
    member = member_factory(bootstrap, group_id, topic, "latest")
    wait_until(
        lambda: member.poll(0.2) or member.fetching_from() is not None,
        30,
        lambda: f"latest: partition 0 never fetched; stats {member.stats.get('topics')}",
    )
    assert member.fetching_from() == 5, f"latest: fetching from {member.fetching_from()}, not 5"
    produce(bootstrap, topic, {0: 3})
    wait_until(
        lambda: member.poll(0.2) or len(member.records) >= 3,
        30,
        lambda: f"latest: got offsets {member.records}, errors {member.errors}",
    )
    member.poll(0.5)
    assert member.records == [5, 6, 7] and not member.errors, (
        f"latest: expected only the new offsets 5-7, got {member.records}, errors {member.errors}"
    )


def test_none_without_committed_offsets(bootstrap: str, group_id: str, member_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, {0: 5})
    member = member_factory(bootstrap, group_id, topic, "error")
    wait_until(
        lambda: member.poll(0.2) or member.errors or member.records,
        30,
        lambda: "auto.offset.reset=error: neither an error nor a record",
    )
    member.poll(0.5)
    codes = [e.code() for e in member.errors]
    assert KafkaError._AUTO_OFFSET_RESET in codes, (
        f"expected the _AUTO_OFFSET_RESET error for a group without offsets, got {member.errors}"
    )
    assert not member.records, f"records delivered without a committed offset: {member.records}"


def test_none_with_committed_offsets(bootstrap: str, group_id: str, member_factory: Any) -> None:
    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, {0: 5})
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    finally:
        committer.close()
    member = member_factory(bootstrap, group_id, topic, "error")
    wait_until(
        lambda: member.poll(0.2) or len(member.records) >= 3 or member.errors,
        30,
        lambda: f"none with a committed offset: got {member.records}",
    )
    member.poll(0.3)
    assert member.records == [2, 3, 4] and not member.errors, (
        f"expected offsets 2-4 from the committed offset 2, got {member.records}, "
        f"errors {member.errors}"
    )


# kafka-python 3.0.12 loads its protocol schemas with the deprecated importlib.resources read_text
@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
def test_none_kafka_python(bootstrap: str, group_id: str) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import NoOffsetForPartitionError

    topic = create_topic(bootstrap, 1)
    produce(bootstrap, topic, {0: 2})
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group_id,
        auto_offset_reset="none",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
        # a join before the topic's metadata arrived assigns nothing; kafka-python rejoins
        # when its metadata changes, which it refreshes every 5 minutes by default
        metadata_max_age_ms=500,
    )
    try:
        # so the first join already knows the partition (a rejoin can take longer than
        # TIMEOUT on a loaded machine: that is how this test once failed)
        assert consumer.partitions_for_topic(topic) == {0}
        consumer.subscribe([topic])
        deadline = time.monotonic() + 2 * TIMEOUT
        raised: Exception | None = None
        while time.monotonic() < deadline and raised is None:
            try:
                got = consumer.poll(timeout_ms=200)
            except NoOffsetForPartitionError as exc:
                raised = exc
            else:
                assert not got, f"records delivered without a committed offset: {got}"
        assert raised is not None, "kafka-python auto_offset_reset='none' raised nothing"
    finally:
        consumer.close()
