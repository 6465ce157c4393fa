"""Faults of a 3-broker cluster under an ``acks=all`` producer and a reading consumer, each run
checked by the history checker (every acknowledged record read, none twice, in order):

* a leader paused (SIGSTOP) past its ZooKeeper session, then resumed: it acknowledges nothing
  after it lost its leadership — a write sent to it while it was paused is refused — and the
  tail it appended meanwhile is truncated away: the three replicas end identical;
* 2 of 3 brokers down: ``acks=all`` writes are refused with ``NOT_ENOUGH_REPLICAS``
  (``min.insync.replicas=2``) and none of them is ever read; nothing acknowledged is missing
  once they are back;
* ZooKeeper restarted under load: nothing acknowledged is lost, and the controller still
  elects afterwards;
* a follower down while thousands of records are written: it catches up, rejoins every ISR and
  its replicas end identical to the others'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce_v9
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from sluice.broker.records.codec import Record, encode_batch
from tests.broker.conftest import Wire, decode_response, encode_request
from tests.cluster.brokers import BrokerCluster
from tests.cluster.conftest import CLUSTER_CONFIG
from tests.cluster.zookeeper import ZooKeeperServer
from tests.faults.cluster_workload import (
    FAULT_CONFIG,
    ClusterView,
    ConsumerRecorder,
    ProducerRecorder,
    assert_delivered,
    assert_order_kept,
    create_topic,
    drain,
    last_acked,
    note,
    wait_for_identical_replicas,
)
from tests.faults.history import History

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "faults"
PARTITIONS = 3
FLOWING = 300
"""Records acknowledged before a fault and after it heals: data flows throughout."""
ZOMBIE_VALUE = 1_000_000
"""The value of the write sent to a paused leader (the producers' values count from 0)."""


class Run:
    """A cluster's topic with an idempotent ``acks=all`` producer and a reading consumer."""

    def __init__(self, cluster: BrokerCluster, **producer_config: Any) -> None:
        self.cluster = cluster
        self.view = ClusterView(cluster)
        create_topic(cluster, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
        self.view.wait_for_isr(TOPIC, 3)
        self.history = History()
        self.producer = ProducerRecorder(
            cluster.bootstrap, TOPIC, PARTITIONS, self.history, **producer_config
        )
        self.reader = ConsumerRecorder(cluster.bootstrap, TOPIC, PARTITIONS, self.history)

    def __enter__(self) -> Run:
        self.producer.start()
        self.reader.start()
        self.producer.wait_acked(FLOWING)
        note("flowing")
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.producer.stop()
        finally:
            self.reader.stop()

    def flowing(self, timeout: float = 60) -> None:
        """Wait until :data:`FLOWING` more records are acknowledged."""
        self.producer.wait_acked(self.producer.acked + FLOWING, timeout=timeout)
        note(f"{self.producer.acked} acknowledged")

    def finish(self, *, exactly_once: bool = True) -> None:
        """Stop producing, let the consumer read every acknowledged record, drain every
        partition, and check the history."""
        self.producer.stop()
        self.reader.wait_read(last_acked(self.history))
        self.reader.stop()
        drain(self.cluster.bootstrap, TOPIC, PARTITIONS, self.history)
        note("drained")
        context = (
            f"{self.producer.sent} sent, {self.producer.acked} acknowledged, errors "
            f"{self.producer.errors[:3]}\n{self.cluster.logs(1500)}"
        )
        assert not self.producer.fatal, f"{self.producer.fatal}; {context}"
        assert self.producer.unflushed == 0, f"records never answered; {context}"
        assert_delivered(self.history, exactly_once=exactly_once, context=context)
        if exactly_once:
            assert_order_kept(self.history)


def zombie_write(value: int) -> bytes:
    """A Produce v9 request (``acks=all``, 5 s) of one record ``value`` to partition 0."""
    now = int(time.time() * 1000)
    batch = encode_batch(
        base_offset=0,
        records=[Record(0, 0, None, str(value).encode())],
        compression=0,
        base_timestamp=now,
        max_timestamp=now,
    )
    request = produce_v9.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(milliseconds=5000)),
        topic_data=(
            produce_v9.TopicProduceData(
                name=TopicName(TOPIC),
                partition_data=(produce_v9.PartitionProduceData(index=i32(0), records=batch),),
            ),
        ),
    )
    return encode_request(request, correlation_id=1)


def test_a_paused_leader_is_fenced_and_truncated(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(**FAULT_CONFIG)
    with Run(cluster, **{"request.timeout.ms": 5000}) as run:
        zombie = run.view.leader(TOPIC, 0)
        with Wire(cluster.broker(zombie).bootstrap, timeout=20) as wire:
            cluster.pause(zombie)
            run.view.unreachable.add(zombie)
            # Sent while it sleeps: the first thing it reads when it wakes up, before it can
            # have noticed that its session ended.
            wire.send(zombie_write(ZOMBIE_VALUE))
            run.history.sent(ZOMBIE_VALUE)
            others = [i for i in cluster.ids if i != zombie]
            run.view.wait_for_leaders(TOPIC, among=others, timeout=30)
            run.flowing()  # the new leaders take writes while the zombie sleeps
            cluster.resume(zombie)
            frame = wire.read_frame()
        run.view.unreachable.clear()
        acknowledged = False
        if frame is None:
            outcome = "the connection closed"
        else:
            _, response = decode_response(0, 9, frame)
            (answer,) = response.responses[0].partition_responses
            outcome = f"{ErrorCode(answer.error_code).name} at {answer.base_offset}"
            if answer.error_code == ErrorCode.none:
                acknowledged = True
                run.history.acked(ZOMBIE_VALUE, 0, answer.base_offset)
        assert not acknowledged, (
            f"broker {zombie} acknowledged an acks=all write after it lost its leadership: "
            f"{outcome}\n{cluster.log_tail(zombie)}"
        )
        run.view.wait_for_isr(TOPIC, 3)  # the zombie follows again
        run.flowing()
        run.finish()
    assert ZOMBIE_VALUE not in {value for *_, value in run.history.polls}, (
        f"the write the zombie refused ({outcome}) was read"
    )
    wait_for_identical_replicas(cluster, TOPIC, PARTITIONS, cluster.ids)


def test_two_of_three_down_refuses_acks_all_and_loses_nothing(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    note("start")
    cluster = broker_cluster_factory(**FAULT_CONFIG)
    note("cluster started")
    # No retries and no idempotence: a NOT_ENOUGH_REPLICAS refusal is the outcome of the one
    # attempt, so the history knows the write cannot be in the log.
    # Writes appended before the ISR shrank wait for the dead followers until their request
    # times out (as in Kafka): 5 s rather than 30.
    settings = {"max.in.flight": 1, "request.timeout.ms": 5000}
    with Run(cluster, idempotent=False, retries=0, **settings) as run:
        survivor = run.view.controller()
        down = [i for i in cluster.ids if i != survivor]
        for i in down:
            cluster.kill(i)
        run.view.wait_for_leaders(TOPIC, among=[survivor], timeout=30)
        note(f"broker {survivor} leads every partition")
        refusals = run.producer.error_codes
        cluster.wait_until(
            lambda: refusals.count(KafkaError.NOT_ENOUGH_REPLICAS) >= 10,
            "acks=all writes refused with NOT_ENOUGH_REPLICAS",
            timeout=30,
        )
        acked_alone, refused = run.producer.acked, refusals.count(KafkaError.NOT_ENOUGH_REPLICAS)
        cluster.wait_until(
            lambda: refusals.count(KafkaError.NOT_ENOUGH_REPLICAS) >= refused + 10,
            "more acks=all writes refused",
            timeout=30,
        )
        assert run.producer.acked == acked_alone, (
            f"{run.producer.acked - acked_alone} writes acknowledged by broker {survivor} alone"
        )
        note("refusals seen")
        cluster.start_all()  # both at once: their sessions ended (the survivor leads all)
        note("restarted")
        run.view.wait_for_isr(TOPIC, 3)
        run.flowing()
        run.finish(exactly_once=False)  # no retries: nothing is written twice, but no promise
    definite = [v for v, sure in run.history.failures.items() if sure]
    assert definite, "no write was refused definitely"


@pytest.fixture
def zk_cluster(tmp_path: Path, private_zookeeper: ZooKeeperServer) -> Iterator[BrokerCluster]:
    """Three brokers on a ZooKeeper of the test's own, stopped at teardown."""
    with BrokerCluster(
        tmp_path / "cluster",
        f"{private_zookeeper.hosts}/sluice",
        3,
        {**CLUSTER_CONFIG, **FAULT_CONFIG},
    ) as cluster:
        yield cluster.start_all()


def test_zookeeper_restarted_under_load_loses_nothing(
    zk_cluster: BrokerCluster, private_zookeeper: ZooKeeperServer
) -> None:
    cluster = zk_cluster
    with Run(cluster) as run:
        private_zookeeper.stop()
        run.flowing()  # the leaders keep taking writes without ZooKeeper
        time.sleep(1.0)  # down for a while (less than the brokers' 4 s sessions)
        private_zookeeper.start()
        run.flowing()
        # The controller still works on the restarted ZooKeeper: a dead leader is replaced.
        leader = run.view.leader(TOPIC, 0)
        cluster.kill(leader)
        run.view.wait_for_leaders(TOPIC, among=[i for i in cluster.ids if i != leader])
        run.flowing()
        run.finish()


def test_a_follower_down_for_long_catches_up(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(**FAULT_CONFIG)
    with Run(cluster) as run:
        follower = next(i for i in cluster.ids if i != run.view.controller())
        cluster.kill(follower)
        others = [i for i in cluster.ids if i != follower]
        run.view.wait_for_leaders(TOPIC, among=others, timeout=30)
        run.producer.rate = 1000
        # thousands of records it does not have
        run.producer.wait_acked(run.producer.acked + 3000, timeout=60)
        run.producer.rate = 300
        cluster.start(follower)
        run.view.wait_for_isr(TOPIC, 3)
        run.flowing()
        # Every record read through the others' leaders, and from the follower's own log.
        run.finish()
    wait_for_identical_replicas(cluster, TOPIC, PARTITIONS, cluster.ids)
