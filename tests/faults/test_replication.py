"""Kafka's ``replication_test.py`` (``ReplicationTest.test_replication_with_broker_failure``),
ported: 3 brokers, a topic of 3 partitions with RF 3 and ``min.insync.replicas=2``, an
``acks=all`` producer (idempotent or not) and a consumer running, while the leader of partition 0
or the controller fails by clean shutdown, ``kill -9``, clean bounces or hard bounces.

Checked through the history checker, as Kafka's ``end_to_end.validate_delivery``: every
acknowledged record consumed, none twice when the producer is idempotent, each partition in the
order of the sends. Kafka bounces 5 times; 3 bounces here keep the suite within its budget
(each bounce waits until the restarted broker is back in every ISR, so each one moves a
leadership again). The same with a consumer group whose coordinator is killed: the offsets it
committed survive the failover.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

from sluice.broker.internal_topic import partition_for
from tests.cluster.brokers import BrokerCluster
from tests.faults.cluster_workload import (
    CLIENT_QUIET,
    FAULT_CONFIG,
    ClusterView,
    ConsumerRecorder,
    ProducerRecorder,
    assert_delivered,
    assert_order_kept,
    create_topic,
    drain,
    last_acked,
)
from tests.faults.history import History

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "test_topic"
PARTITIONS = 3
BOUNCES = 3
"""Kafka's test bounces 5 times."""
ACKED_BETWEEN_FAULTS = 300
"""Records acknowledged between two faults, and after the last one: data flows throughout."""


def target_broker(view: ClusterView, target: str) -> int:
    """The broker a failure hits: the leader of partition 0, or the controller (chased anew
    before each bounce, as Kafka's ``broker_node``)."""
    if target == "leader":
        return view.leader(TOPIC, 0)
    return view.controller()


def fail(
    failure: str, cluster: BrokerCluster, view: ClusterView, target: str, producer: ProducerRecorder
) -> list[int]:
    """Apply ``failure`` to ``target``; the brokers it hit, in order."""
    hit: list[int] = []
    rounds = BOUNCES if failure.endswith("bounce") else 1
    for _ in range(rounds):
        broker = target_broker(view, target)
        assert broker in cluster.ids, f"no {target} to fail: Metadata names {broker}"
        hit.append(broker)
        if failure.startswith("clean"):
            code = cluster.stop(broker)
            assert code == 0, f"broker {broker} exited with {code}\n{cluster.log_tail(broker)}"
        else:
            cluster.kill(broker)
        if failure.endswith("bounce"):
            # cluster.start waits until ZooKeeper deregistered a killed broker (Kafka's
            # hard_bounce waits for the session timeout the same way).
            cluster.start(broker)
            view.wait_for_isr(TOPIC, 3)
        else:
            view.wait_for_leaders(TOPIC, among=cluster.running())
        producer.wait_acked(producer.acked + ACKED_BETWEEN_FAULTS, timeout=60)
    return hit


@pytest.mark.parametrize(
    ("target", "failure", "idempotent"),
    [
        ("leader", "clean_shutdown", True),
        ("controller", "hard_shutdown", False),
        ("leader", "clean_bounce", False),
        ("controller", "hard_bounce", True),
    ],
)
def test_replication_with_broker_failure(
    broker_cluster_factory: Callable[..., BrokerCluster],
    target: str,
    failure: str,
    idempotent: bool,
) -> None:
    cluster = broker_cluster_factory(**FAULT_CONFIG)
    view = ClusterView(cluster)
    create_topic(cluster, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
    view.wait_for_isr(TOPIC, 3)
    history = History()
    producer = ProducerRecorder(
        cluster.bootstrap, TOPIC, PARTITIONS, history, idempotent=idempotent
    ).start()
    reader = ConsumerRecorder(cluster.bootstrap, TOPIC, PARTITIONS, history).start()
    try:
        producer.wait_acked(ACKED_BETWEEN_FAULTS)
        hit = fail(failure, cluster, view, target, producer)
    finally:
        producer.stop()
    try:
        reader.wait_read(last_acked(history))
    finally:
        reader.stop()
    drain(cluster.bootstrap, TOPIC, PARTITIONS, history)

    context = (
        f"{failure} of the {target} (brokers {hit}), idempotent={idempotent}: {producer.sent} "
        f"sent, {producer.acked} acknowledged, errors {producer.errors[:3]}\n{cluster.logs(1500)}"
    )
    assert producer.unflushed == 0, f"{producer.unflushed} records never answered; {context}"
    assert not producer.fatal, f"the producer failed: {producer.fatal}; {context}"
    assert_delivered(history, exactly_once=idempotent, context=context)
    if idempotent:
        assert_order_kept(history)


def coordinator_of(view: ClusterView, group: str) -> int:
    """The broker leading the ``__consumer_offsets`` partition of ``group``."""
    partitions = int(FAULT_CONFIG["offsets.topic.num.partitions"])
    return view.leader("__consumer_offsets", partition_for(group, partitions))


def committed(bootstrap: str, group: str) -> dict[int, int]:
    """partition → the offset ``group`` committed, as a fresh member of it fetches them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CLIENT_QUIET})
    try:
        found = consumer.committed(
            [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=15
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_committed_offsets_survive_coordinator_failover(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    """A consumer group reads while its coordinator is killed (kill -9): it keeps reading and
    committing, and a second member started after the failover resumes at exactly the offsets
    the first one committed last. Every acknowledged record is read by one of the two."""
    cluster = broker_cluster_factory(**FAULT_CONFIG)
    view = ClusterView(cluster)
    create_topic(cluster, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
    view.wait_for_isr(TOPIC, 3)
    group = "survivors"
    history = History()
    producer = ProducerRecorder(cluster.bootstrap, TOPIC, PARTITIONS, history).start()
    first = ConsumerRecorder(
        cluster.bootstrap, TOPIC, PARTITIONS, history, name="first", group=group
    ).start()
    try:
        producer.wait_acked(ACKED_BETWEEN_FAULTS)
        cluster.wait_until(lambda: len(first.commits) >= 2, "the group's first commits", 60)
        coordinator = coordinator_of(view, group)
        cluster.kill(coordinator)
        commits_before = len(first.commits)
        producer.wait_acked(producer.acked + 2 * ACKED_BETWEEN_FAULTS, timeout=60)
        cluster.wait_until(
            lambda: len(first.commits) >= commits_before + 2,
            f"commits of group {group} after its coordinator (broker {coordinator}) died",
            60,
        )
    finally:
        first.stop()
    last = dict(first.committed)
    assert committed(cluster.bootstrap, group) == last, (
        f"the offsets group {group} committed last ({last}) are not what it fetches"
    )
    second = ConsumerRecorder(
        cluster.bootstrap, TOPIC, PARTITIONS, history, name="second", group=group
    ).start()
    try:
        producer.wait_acked(producer.acked + ACKED_BETWEEN_FAULTS, timeout=60)
        producer.stop()
        second.wait_read(last_acked(history))
    finally:
        second.stop()
    context = (
        f"coordinator {coordinator} killed; commits {first.commits[-3:]}; errors "
        f"{first.errors[-3:]} {second.errors[-3:]}\n{cluster.logs(1500)}"
    )
    starts = {}
    for name, p, offset, _ in history.polls:
        if name == "second":
            starts.setdefault(p, offset)
    assert starts == {p: last[p] for p in starts} and len(starts) == PARTITIONS, (
        f"the second member started at {starts}, the group had committed {last}; {context}"
    )
    assert producer.unflushed == 0 and not producer.fatal, context
    assert_delivered(history, exactly_once=True, context=context)
