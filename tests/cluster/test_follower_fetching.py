"""KIP-392 on real brokers: three brokers in racks a, b and c with
``replica.selector.class = RackAwareReplicaSelector``; a confluent-kafka consumer whose
``client.rack`` is the rack of a follower reads every record once, in order — from that
follower, as its per-topic ``bytes_out`` (Prometheus, consumers' bytes only) shows: the other
follower, which leads nothing and serves no consumer, sends none of the topic. When the follower
stops (and leaves the ISR) the consumer goes back to the leader and reads on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from sluice.broker.replication.replica_selector import RACK_AWARE_SELECTOR
from tests.cluster.brokers import BrokerCluster
from tests.cluster.conftest import CLUSTER_CONFIG
from tests.cluster.test_cluster_basics import create_topic, leaders
from tests.conftest import free_port
from tests.platform.scrape import scrape

RACKS = {1: "a", 2: "b", 3: "c"}
TOPIC = "near"
N = 300
TIMEOUT = 30.0
BYTES_OUT = "kafka_server_broker_topic_metrics_bytes_out_total"


@pytest.fixture
def racked(tmp_path: Path, zk_connect: str) -> Iterator[tuple[BrokerCluster, dict[int, int]]]:
    """Three brokers in racks a-c choosing read replicas by rack, with their metrics ports."""
    config = {**CLUSTER_CONFIG, "replica.selector.class": RACK_AWARE_SELECTOR}
    per_broker = {i: {"broker.rack": rack} for i, rack in RACKS.items()}
    with BrokerCluster(tmp_path / "cluster", zk_connect, 3, config, per_broker) as cluster:
        ports = {i: free_port() for i in cluster.ids}
        for i, port in ports.items():
            broker = cluster.broker(i)
            broker.args = (*broker.args, "--metrics-listen", f"127.0.0.1:{port}")
        yield cluster.start_all(), ports


def bytes_out(port: int) -> float:
    return sum(scrape(port).all(BYTES_OUT, topic=TOPIC))


def test_a_consumer_reads_from_the_follower_of_its_rack(
    racked: tuple[BrokerCluster, dict[int, int]],
) -> None:
    cluster, ports = racked
    create_topic(cluster, TOPIC, partitions=1, rf=3, **{"min.insync.replicas": "2"})
    cluster.wait_until(
        lambda: len(leaders(cluster, TOPIC, 1)[0][2]) == 3, "the partition's ISR is full"
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for n in range(N):
        producer.produce(TOPIC, f"record-{n}".encode(), partition=0)
    assert producer.flush(TIMEOUT) == 0, "every record acknowledged by the three replicas"

    leader, replicas, _ = leaders(cluster, TOPIC, 1)[0]
    near, far = (r for r in replicas if r != leader)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "near-readers",
            "enable.auto.commit": False,
            "client.rack": RACKS[near],
        }
    )
    seen: list[str] = []

    def read(count: int) -> None:
        cluster.wait_until(
            lambda: (
                seen.extend(
                    m.value().decode()
                    for m in consumer.consume(N, timeout=0.5)
                    if m.error() is None
                )
                or len(seen) >= count
            ),
            f"{count} records read",
            timeout=TIMEOUT,
        )

    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read(N)
        assert seen == [f"record-{n}" for n in range(N)], (
            f"expected the {N} records once, in order; got {len(seen)}: {seen[:3]}…{seen[-3:]}"
        )
        served = {i: bytes_out(ports[i]) for i in cluster.ids}
        # the follower leaves (and the ISR): the consumer goes back to the leader
        cluster.stop(near)
        for n in range(N, 2 * N):
            producer.produce(TOPIC, f"record-{n}".encode(), partition=0)
        assert producer.flush(TIMEOUT) == 0, "every record acknowledged by the ISR left"
        read(2 * N)
    finally:
        consumer.close()
    assert seen == [f"record-{n}" for n in range(2 * N)], (
        f"expected the {2 * N} records once, in order, after the follower stopped; got "
        f"{len(seen)}: {seen[N - 3 : N + 3]}…{seen[-3:]}"
    )
    assert served[near] > 0, (
        f"the follower in rack {RACKS[near]} (broker {near}) served no bytes: {served}, "
        f"leader {leader}"
    )
    assert served[far] == 0, (
        f"the follower in rack {RACKS[far]} (broker {far}) leads nothing and serves no "
        f"consumer, yet sent bytes of the topic: {served}"
    )
