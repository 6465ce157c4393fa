"""``sluice.clients.watermarks`` after the partition's leader moved: librdkafka asks the broker
its metadata still names and gets NOT_LEADER_OR_FOLLOWER; the helper refreshes the metadata and
asks the new leader (what failed an exactly-once Connect task's start in the cluster
quickstart's kill test: its offsets topic's end was asked right after a broker came back).
``sluice.clients.committed`` after the group's coordinator moved: librdkafka answers
NOT_COORDINATOR once and looks the coordinator up again; the helper asks again (a Streams app
assigning at ``OFFSET_STORED`` was left with partitions never fetched, in the same test)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition

from sluice import clients
from sluice.broker.internal_topic import partition_for
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_reassignment import alter, create, state

pytestmark = pytest.mark.timeout(180)


def ten_records(cluster: BrokerCluster, topic: str, replicas: list[int]) -> None:
    """``topic``, one partition on ``replicas`` (the first leads), with ten records."""
    create(cluster, topic, replicas)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(30) == 0


def test_watermarks_follow_a_partition_whose_leader_moved(broker_cluster: BrokerCluster) -> None:
    cluster = broker_cluster
    ten_records(cluster, "moved", [1, 2])
    consumer = clients.consumer(cluster.bootstrap)
    try:
        where = TopicPartition("moved", 0)
        assert clients.watermarks(consumer, [where], 30) == [(0, 10)]  # leader 1, cached

        alter(cluster, "moved", [2, 3])  # broker 1 stays up, no longer a replica
        cluster.wait_until(lambda: state(cluster, "moved")[:2] == ([2, 3], 2), "leader 2")

        with pytest.raises(KafkaException) as stale:
            consumer.get_watermark_offsets(where, timeout=10)
        assert stale.value.args[0].code() in clients.MOVING_ERRORS
        assert clients.watermarks(consumer, [where], 30) == [(0, 10)]
    finally:
        consumer.close()


def test_watermarks_follow_a_partition_whose_leader_died(broker_cluster: BrokerCluster) -> None:
    """A query to a dead leader waits in librdkafka's queue for that broker until it times out
    (what held a Streams app's commits and its close for 10 s a changelog partition after
    ``kill -9`` of a leader); each try waits ``ATTEMPT_S``, then the metadata is refreshed."""
    cluster = broker_cluster
    ten_records(cluster, "orphan", [1, 2])
    consumer = clients.consumer(cluster.bootstrap)
    try:
        where = TopicPartition("orphan", 0)
        assert clients.watermarks(consumer, [where], 30) == [(0, 10)]  # leader 1, cached

        cluster.kill(1)
        cluster.wait_until(lambda: state(cluster, "orphan")[:2] == ([1, 2], 2), "leader 2")

        with pytest.raises(KafkaException) as stale:
            consumer.get_watermark_offsets(where, timeout=5)
        assert stale.value.args[0].code() in clients.MOVING_ERRORS
        # one try waiting the whole budget would have timed out as the raw call did
        assert clients.watermarks(consumer, [where], 5) == [(0, 10)]
    finally:
        consumer.close()


def test_committed_offsets_follow_a_coordinator_that_moved(broker_cluster: BrokerCluster) -> None:
    cluster = broker_cluster
    create(cluster, "read", [1, 2])
    consumer = clients.consumer(
        cluster.bootstrap, **{"group.id": "mover", "enable.auto.commit": False}
    )
    try:
        where = TopicPartition("read", 0)
        consumer.commit(offsets=[TopicPartition("read", 0, 7)], asynchronous=False)
        index = partition_for("mover", 50)  # the coordinator librdkafka found
        _, coordinator, _ = state(cluster, "__consumer_offsets", index)
        others = [b for b in cluster.ids if b != coordinator]
        alter(cluster, "__consumer_offsets", others, index)  # it stays up, coordinating no more
        cluster.wait_until(
            lambda: state(cluster, "__consumer_offsets", index)[0] == others, "the move"
        )

        with pytest.raises(KafkaException) as stale:
            consumer.committed([where], timeout=10)
        assert stale.value.args[0].code() in clients.COORDINATOR_ERRORS
        [found] = clients.committed(consumer, [where], 30)
        assert found.offset == 7
    finally:
        consumer.close()
