"""Network partitions in a real 3-broker cluster: no acknowledged ``acks=all`` record is lost.

Every link of the cluster passes through a :class:`~tests.faults.netfault.FaultNetwork`;
an idempotent ``acks=all`` producer runs through each fault, and the history checker
(:mod:`tests.faults.history`) judges what it sent, what was acknowledged and what a drain of
the partition reads after the network healed.

1. the leader cut from its followers (clients still reach it): its ISR shrinks to itself, so
   with ``min.insync.replicas=2`` nothing is acknowledged until the network heals
   (NOT_ENOUGH_REPLICAS for a new write), then the followers catch up and the held records are;
2. the leader cut from ZooKeeper past its session: the controller elects a follower, the old
   leader — a zombie that still believes it leads — acknowledges nothing, and once healed it
   learns its session expired, gives its leadership up and follows.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.brokers import BrokerCluster
from tests.cluster.zookeeper import ZooKeeperServer
from tests.conftest import SHARED_CONFIG
from tests.faults.cluster_workload import (
    CLIENT_QUIET,
    FAULT_CONFIG,
    ProducerRecorder,
    assert_delivered,
    drain,
)
from tests.faults.history import History
from tests.faults.netfault import CLIENTS, ZOOKEEPER, FaultNetwork, cluster_behind

TOPIC = "cut"
DEFINITE = (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_LEADER_FOR_PARTITION)
"""Errors that refuse a write before its append: it cannot be in the log."""
REQUEST_TIMEOUT: dict[str, Any] = {"request.timeout.ms": 5000}
"""The workload producer's wait for an answer: a zombie's timeouts come back in 5 s."""
WAIT = 30.0
"""The bound on every wait for the cluster to reach a state."""


@pytest.fixture
def cluster(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> Iterator[tuple[BrokerCluster, FaultNetwork]]:
    """Three brokers (:data:`FAULT_CONFIG`: a 4 s session, a 2 s lag limit, min ISR 2) behind a
    fault network; healed, stopped and closed at teardown, also when the test failed."""
    with FaultNetwork() as network:
        brokers = cluster_behind(
            network,
            tmp_path / "cluster",
            ("127.0.0.1", zookeeper.port),
            f"/sluice-netfault-{uuid.uuid4().hex[:12]}",
            config={**SHARED_CONFIG, **FAULT_CONFIG},
        )
        try:
            brokers.start_all()
            yield brokers, network
        finally:
            network.heal()  # a controlled shutdown needs the links
            brokers.close()


def producer(brokers: BrokerCluster, history: History) -> ProducerRecorder:
    """The idempotent ``acks=all`` workload on partition 0, 200 records a second."""
    return ProducerRecorder(
        brokers.bootstrap,
        TOPIC,
        1,
        history,
        rate=200,
        max_seconds=80.0,
        **REQUEST_TIMEOUT,
    ).start()


def wait_until(
    brokers: BrokerCluster, condition: Callable[[], bool], what: str, work: ProducerRecorder
) -> None:
    """:meth:`BrokerCluster.wait_until` bounded by :data:`WAIT`, failing early if the
    producer hit a fatal error."""
    brokers.wait_until(lambda: bool(work.fatal) or condition(), what, timeout=WAIT)
    assert not work.fatal, f"the idempotent producer failed fatally: {work.fatal}"


def create_topic(cluster: BrokerCluster, replicas: list[int]) -> None:
    """Partition 0 on ``replicas``, the first its preferred leader."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **CLIENT_QUIET})
    futures = admin.create_topics(
        [NewTopic(TOPIC, num_partitions=1, replica_assignment=[replicas])],
        operation_timeout=30,
        request_timeout=40,
    )
    futures[TOPIC].result(timeout=45)


def state(cluster: BrokerCluster) -> tuple[int, int, tuple[int, ...]]:
    """Partition 0's (leader, leader epoch, ISR) in ZooKeeper."""
    found = cluster.store().partition_state(TOPIC, 0)
    assert found is not None, f"{TOPIC}-0 has no state in ZooKeeper"
    return found.value.leader, found.value.leader_epoch, tuple(sorted(found.value.isr))


def probe(bootstrap: str, value: int, history: History) -> tuple[int, KafkaError | None]:
    """Send ``value`` once (``acks=all``, no retry) to the leader of partition 0 that the first
    broker of ``bootstrap`` names: that leader, and the error, or None if the write was
    acknowledged (recorded in ``history``)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "message.timeout.ms": 6000,
            "request.timeout.ms": 5000,
            "topic.metadata.refresh.interval.ms": 60_000,
            **CLIENT_QUIET,
        }
    )
    # the first Metadata can only come from the bootstrap broker: the produce goes where it says
    leader = int(producer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0].leader)
    outcome: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        outcome.append(err)
        if err is None:
            history.acked(value, msg.partition(), msg.offset())
        else:
            history.failed(value, definite=err.code() in DEFINITE)

    history.sent(value)
    producer.produce(TOPIC, value=str(value).encode(), partition=0, on_delivery=delivered)
    assert producer.flush(15) == 0, "the probe got no answer at all"
    return leader, outcome[0]


def test_a_cut_link_holds_bytes_both_ways_until_healed() -> None:
    """The proxy alone, on an echo server: bytes pass, a cut holds them (and new
    connections) without resetting anything, other links keep flowing, a heal delivers."""

    def echo(sock: socket.socket) -> None:
        while data := sock.recv(4096):
            sock.sendall(data)
        sock.close()

    with socket.create_server(("127.0.0.1", 0)) as server, FaultNetwork() as network:
        port = network.broker_proxy(1)
        network.route(1, server.getsockname()[:2])
        threads: list[threading.Thread] = []

        def connect(client_id: str) -> socket.socket:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            name = client_id.encode()
            sock.sendall(struct.pack(">ihhih", 10 + len(name), 1, 12, 1, len(name)) + name)
            peer, _ = server.accept()
            threads.append(threading.Thread(target=echo, args=(peer,), daemon=True))
            threads[-1].start()
            assert sock.recv(64).endswith(name)  # the header came back through the proxy
            return sock

        follower = connect("sluice-replica-fetcher-2")
        client = connect("rdkafka")
        network.cut(2, 1)
        follower.sendall(b"held")
        client.sendall(b"flows")
        assert client.recv(64) == b"flows"
        follower.settimeout(0.5)
        with pytest.raises(TimeoutError):
            follower.recv(64)  # silence, not a reset
        late = socket.create_connection(("127.0.0.1", port), timeout=5)
        late.sendall(struct.pack(">ihhih", 34, 1, 12, 1, 24) + b"sluice-replica-fetcher-2")
        server.settimeout(0.5)
        with pytest.raises(TimeoutError):
            server.accept()  # not forwarded while cut
        network.heal()
        follower.settimeout(5)
        assert follower.recv(64) == b"held"
        server.settimeout(5)
        peer, _ = server.accept()
        peer.close()
        for sock in (follower, client, late):
            sock.close()
        assert network.describe().count("cut 2 | 1") == 1, network.describe()
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive(), "an echo connection was not closed by the proxy"


def test_leader_cut_from_its_followers_acknowledges_nothing_and_loses_nothing(
    cluster: tuple[BrokerCluster, FaultNetwork],
) -> None:
    brokers, network = cluster
    create_topic(brokers, [1, 2, 3])
    history = History()
    work = producer(brokers, history)
    try:
        wait_until(brokers, lambda: state(brokers)[::2] == (1, (1, 2, 3)), "a full ISR", work)
        work.wait_acked(100)

        network.isolate(1, 2, 3)  # the leader from its followers; clients still reach everyone
        wait_until(brokers, lambda: state(brokers)[2] == (1,), "the ISR shrunk to the leader", work)
        time.sleep(1.0)  # answers already on their way arrive
        acked_at_shrink = work.acked
        _, refused = probe(brokers.broker(1).bootstrap, -1, history)
        time.sleep(1.0)
        acked_before_heal = work.acked
        assert refused is not None and refused.code() == KafkaError.NOT_ENOUGH_REPLICAS, (
            f"a write to a leader alone in its ISR (min.insync.replicas=2) got {refused}"
        )
        assert acked_before_heal == acked_at_shrink, (
            f"{acked_before_heal - acked_at_shrink} records acknowledged by a leader alone in "
            f"its ISR ({network.describe()})"
        )

        network.heal()
        wait_until(brokers, lambda: state(brokers)[2] == (1, 2, 3), "the followers back", work)
        work.wait_acked(acked_before_heal + 100)
    finally:
        network.heal()  # the records held by the cut can be answered
        work.stop()
    assert work.unflushed == 0, f"{work.unflushed} records neither acknowledged nor failed"
    drain(brokers.bootstrap, TOPIC, 1, history)
    assert_delivered(history, exactly_once=True, context=f"{network.describe()}\n{brokers.logs()}")


def test_leader_cut_from_zookeeper_is_replaced_and_its_zombie_acknowledges_nothing(
    cluster: tuple[BrokerCluster, FaultNetwork],
) -> None:
    brokers, network = cluster
    registration = brokers.store().controller()
    assert registration is not None, "no controller"
    old = next(i for i in brokers.ids if i != registration.value.broker_id)  # not the controller
    followers = [i for i in brokers.ids if i != old]
    create_topic(brokers, [old, *followers])
    history = History()
    work = producer(brokers, history)
    try:
        wait_until(brokers, lambda: state(brokers)[::2] == (old, (1, 2, 3)), "a full ISR", work)
        work.wait_acked(100)
        _, epoch, _ = state(brokers)

        network.cut(old, ZOOKEEPER)  # clients and the other brokers still reach it
        wait_until(brokers, lambda: state(brokers)[0] in followers, "a follower elected", work)
        new, new_epoch, isr = state(brokers)
        assert new_epoch > epoch and old not in isr, f"elected {new} epoch {new_epoch} ISR {isr}"
        network.isolate(CLIENTS, *followers)  # a client that reaches only the zombie
        believed, zombie_answer = probe(brokers.broker(old).bootstrap, -1, history)
        for follower in followers:
            network.mend(CLIENTS, follower)
        assert zombie_answer is not None, (
            f"broker {old}, which names {believed} as the leader, acknowledged an acks=all "
            f"write after broker {new} took over with epoch {new_epoch}"
        )
        # The workload's producer keeps retrying the zombie, which answers REQUEST_TIMED_OUT
        # (it needs its followers, who left it): the partition is unavailable to it, not lost,
        # until the zombie learns that its session ended, as in Kafka's ZooKeeper mode.
        time.sleep(2.0)

        network.heal()
        wait_until(
            brokers,
            lambda: state(brokers)[::2] == (new, (1, 2, 3)),
            "the old leader back in the ISR as a follower",
            work,
        )
        work.wait_acked(work.acked + 100)
    finally:
        network.heal()  # the records held by the cut can be answered
        work.stop()
    assert work.unflushed == 0, f"{work.unflushed} records neither acknowledged nor failed"
    assert "session expired" in brokers.broker(old).log_text(), brokers.log_tail(old)
    drain(brokers.bootstrap, TOPIC, 1, history)
    assert_delivered(history, exactly_once=True, context=f"{network.describe()}\n{brokers.logs()}")
