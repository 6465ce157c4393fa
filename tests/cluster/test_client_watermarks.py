"""``sluice.clients.watermarks`` after the partition's leader moved: librdkafka asks the broker
its metadata still names and gets NOT_LEADER_OR_FOLLOWER; the helper refreshes the metadata and
asks the new leader (what failed an exactly-once Connect task's start in the cluster
quickstart's kill test: its offsets topic's end was asked right after a broker came back)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition

from sluice import clients
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_reassignment import alter, create, state

pytestmark = pytest.mark.timeout(180)


def test_watermarks_follow_a_partition_whose_leader_moved(broker_cluster: BrokerCluster) -> None:
    cluster = broker_cluster
    create(cluster, "moved", [1, 2])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("moved", b"%d" % i)
    assert producer.flush(30) == 0
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
