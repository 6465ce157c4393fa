"""Coordinators follow leadership: on three real brokers, a group's and a transactional id's
coordinator is the leader of their internal-topic partition, other brokers answer
NOT_COORDINATOR, committed offsets survive the coordinator's death, transactions spanning
partitions led by other brokers commit and abort through WriteTxnMarkers, and producer ids are
unique across the cluster."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.errors import ErrorCode

from sluice import wire
from sluice.broker.internal_topic import partition_for
from tests.cluster.brokers import BrokerCluster

FIND_COORDINATOR_V4 = wire.Api(10, "FindCoordinator", 4, 4)
FIND_COORDINATOR_V3 = wire.Api(10, "FindCoordinator", 3, 3)
HEARTBEAT = wire.Api(12, "Heartbeat", 4, 4)
OFFSET_FETCH = wire.Api(9, "OffsetFetch", 7, 7)
INIT_PRODUCER_ID = wire.Api(22, "InitProducerId", 4, 4)
GROUP, TXN = 0, 1
OFFSETS_PARTITIONS = 5
TXN_PARTITIONS = 4

KEYS = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
}


def call(cluster: BrokerCluster, i: int, api: wire.Api, **values: Any) -> Any:
    with wire.connect(cluster.broker(i).bootstrap, timeout=10) as conn:
        return conn.call(api, **values)


def coordinator(cluster: BrokerCluster, via: int, key: str, key_type: int = GROUP) -> int:
    """The coordinator broker ``via`` names for ``key`` (FindCoordinator v4), retried while
    it is not available yet (the internal topic being created, its leaders elected)."""
    found: list[int] = []

    def ask() -> bool:
        answer = call(cluster, via, FIND_COORDINATOR_V4, key_type=key_type, coordinator_keys=(key,))
        (entry,) = answer.coordinators
        if entry.error_code != ErrorCode.none:
            return False
        found.append(entry.node_id)
        assert (entry.host, entry.port) == ("127.0.0.1", cluster.broker(entry.node_id).port)
        return True

    cluster.wait_until(ask, f"broker {via} names the coordinator of {key!r}", timeout=60)
    return found[-1]


def partition_leader(cluster: BrokerCluster, topic: str, index: int, via: int = 1) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.broker(via).bootstrap})
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[index].leader)


def test_find_coordinator_names_the_leader_of_the_key_s_partition(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(**KEYS)
    named = {i: coordinator(cluster, i, "orders-group") for i in cluster.ids}
    assert len(set(named.values())) == 1, f"brokers disagree on the coordinator: {named}"
    index = partition_for("orders-group", OFFSETS_PARTITIONS)
    assert named[1] == partition_leader(cluster, "__consumer_offsets", index)
    txn = coordinator(cluster, 2, "payments-txn", TXN)
    assert txn == partition_leader(
        cluster, "__transaction_state", partition_for("payments-txn", TXN_PARTITIONS)
    )
    # the internal topics: replicated 3 times (offsets.topic.replication.factor's default),
    # compacted, __transaction_state with its own min ISR, as Kafka creates them
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for topic, partitions in (
        ("__consumer_offsets", OFFSETS_PARTITIONS),
        ("__transaction_state", TXN_PARTITIONS),
    ):
        described = admin.list_topics(topic, timeout=10).topics[topic].partitions
        assert len(described) == partitions
        assert all(len(p.replicas) == 3 for p in described.values()), described
    resource = ConfigResource(ConfigResource.Type.TOPIC, "__transaction_state")
    configs = admin.describe_configs([resource])[resource].result(timeout=10)
    assert configs["min.insync.replicas"].value == "2"
    assert configs["cleanup.policy"].value == "compact"
    # a broker that does not coordinate the group answers NOT_COORDINATOR
    other = next(i for i in cluster.ids if i != named[1])
    answer = call(
        cluster,
        other,
        HEARTBEAT,
        group_id="orders-group",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
    )
    assert answer.error_code == ErrorCode.not_coordinator, answer
    fetched = call(
        cluster, other, OFFSET_FETCH, group_id="orders-group", topics=None, require_stable=False
    )
    assert fetched.error_code == ErrorCode.not_coordinator, fetched
    # v3 (one key) says the same as v4
    single = call(cluster, 3, FIND_COORDINATOR_V3, key="orders-group", key_type=GROUP)
    assert (single.error_code, single.node_id) == (ErrorCode.none, named[1])


def test_too_few_live_brokers_for_the_offsets_topic_is_coordinator_not_available(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(size=2, **{**KEYS, "offsets.topic.replication.factor": "3"})
    for _ in range(3):
        answer = call(cluster, 1, FIND_COORDINATOR_V3, key="g", key_type=GROUP)
        assert answer.error_code == ErrorCode.coordinator_not_available, answer
        assert answer.node_id == -1
    assert (
        "__consumer_offsets"
        not in AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).topics
    )


def test_producer_ids_are_unique_across_the_cluster(broker_cluster: BrokerCluster) -> None:
    ids = []
    for _ in range(3):
        for i in broker_cluster.ids:
            answer = call(
                broker_cluster,
                i,
                INIT_PRODUCER_ID,
                transactional_id=None,
                transaction_timeout=datetime.timedelta(seconds=60),
                producer_id=-1,
                producer_epoch=-1,
            )
            assert answer.error_code == ErrorCode.none, answer
            ids.append(int(answer.producer_id))
    assert len(set(ids)) == len(ids), f"a producer id was handed out twice: {sorted(ids)}"


def test_committed_offsets_survive_the_coordinator_s_death(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(**KEYS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("events", 3, 3)])["events"].result(timeout=30)
    group = "survivors"
    first = coordinator(cluster, 1, group)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        wanted = [TopicPartition("events", p, 100 + p) for p in range(3)]
        committed = consumer.commit(offsets=wanted, asynchronous=False)
        assert committed is not None and all(tp.error is None for tp in committed), committed
    finally:
        consumer.close()
    cluster.kill(first)
    survivor = next(i for i in cluster.ids if i != first)
    cluster.wait_until(
        lambda: coordinator(cluster, survivor, group) != first, "a new coordinator", timeout=60
    )
    second = coordinator(cluster, survivor, group)
    assert second != first
    reader = Consumer({"bootstrap.servers": cluster.broker(second).bootstrap, "group.id": group})
    try:
        got = reader.committed([TopicPartition("events", p) for p in range(3)], timeout=30)
    finally:
        reader.close()
    assert [(tp.partition, tp.offset) for tp in got] == [(0, 100), (1, 101), (2, 102)], got


def read_committed(cluster: BrokerCluster, topic: str, partitions: int) -> list[bytes]:
    """Every record of ``topic`` a read_committed consumer sees (bounded: 30 s, or 3 s
    after the last record)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 30
        quiet_until = time.monotonic() + 5
        while time.monotonic() < min(deadline, quiet_until):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
                quiet_until = time.monotonic() + 3
    finally:
        consumer.close()
    return seen


def test_a_transaction_over_partitions_of_every_broker_commits_and_aborts(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(**KEYS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("ledger", 3, 3)])["ledger"].result(timeout=30)
    cluster.wait_until(
        lambda: {partition_leader(cluster, "ledger", p) for p in range(3)} == {1, 2, 3},
        "the ledger's partitions led by the three brokers",
    )
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": "ledger-writer",
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for n in range(30):
        producer.produce("ledger", value=f"kept-{n}".encode(), partition=n % 3)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for n in range(30):
        producer.produce("ledger", value=f"dropped-{n}".encode(), partition=n % 3)
    producer.abort_transaction(60)
    producer.begin_transaction()
    producer.produce("ledger", value=b"last", partition=0)
    producer.commit_transaction(60)
    seen = read_committed(cluster, "ledger", 3)
    assert sorted(seen) == sorted([f"kept-{n}".encode() for n in range(30)] + [b"last"]), seen
