"""Partition reassignment on a real three-broker cluster (AlterPartitionReassignments and
ListPartitionReassignments, KIP-455): every partition of a topic moved to other brokers, a
replication factor grown from 1 to 3 and a broker decommissioned, each while an idempotent
producer writes (nothing acknowledged lost or doubled, the old replicas' copies deleted); a
reassignment that cannot finish (its new replica paused) listed and then cancelled, Kafka's
errors, and ``sluice partitions reassign`` with Kafka's JSON plans."""

from __future__ import annotations

import datetime
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from tests.broker.conftest import Wire
from tests.cli.conftest import run_sluice
from tests.cluster.brokers import BrokerCluster

pytestmark = pytest.mark.timeout(300)


def create(cluster: BrokerCluster, topic: str, replicas: list[int], partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    [future] = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replica_assignment=[replicas] * partitions)]
    ).values()
    future.result(30)
    for index in range(partitions):
        cluster.wait_until(
            lambda index=index: state(cluster, topic, index)[1] >= 0,  # type: ignore[misc]
            f"{topic}-{index} has a leader",
        )


def state(cluster: BrokerCluster, topic: str, index: int = 0) -> tuple[list[int], int, list[int]]:
    """Replicas, leader and ISR of partition ``index`` of ``topic``, as Metadata says."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partition = admin.list_topics(topic, timeout=10).topics[topic].partitions[index]
    return list(partition.replicas), partition.leader, sorted(partition.isrs)


def alter(
    cluster: BrokerCluster, topic: str, replicas: list[int] | None, index: int = 0
) -> tuple[int, Any]:
    request = alter_v0.AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topics=(
            alter_v0.ReassignableTopic(
                name=TopicName(topic),
                partitions=(
                    alter_v0.ReassignablePartition(
                        partition_index=i32(index),
                        replicas=None if replicas is None else tuple(BrokerId(r) for r in replicas),
                    ),
                ),
            ),
        ),
    )
    with Wire(cluster.broker(2).bootstrap) as wire:  # any broker takes it
        answer = wire.request(request)
    [result] = answer.responses[0].partitions
    return result.error_code, result.error_message


def ongoing(cluster: BrokerCluster) -> dict[str, tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments (all topics), asked of broker 1."""
    request = list_v0.ListPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)), topics=None
    )
    with Wire(cluster.broker(1).bootstrap) as wire:
        answer = wire.request(request)
    return {
        f"{t.name}-{p.partition_index}": (
            list(p.replicas),
            list(p.adding_replicas),
            list(p.removing_replicas),
        )
        for t in answer.topics
        for p in t.partitions
    }


def partition_dir(cluster: BrokerCluster, broker: int, topic: str, index: int = 0) -> Path:
    return cluster.broker(broker).data_dir / f"{topic}-{index}"


class Writing:
    """An idempotent producer writing 0, 1, 2… to ``topic`` (keyless: spread over its
    partitions) in a thread, from the start of the block — once 500 are acknowledged — to its
    end; :meth:`check` then reads every partition back."""

    def __init__(self, cluster: BrokerCluster, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.acked: list[int] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=f"writing-{topic}")

    def __enter__(self) -> Writing:
        self._thread.start()
        self.cluster.wait_until(lambda: len(self.acked) > 500, "records acknowledged first")
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(1)  # more records through the replicas as they are now
        self._stop.set()
        self._thread.join(90)

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.cluster.bootstrap, "enable.idempotence": True}
        )

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append(int(msg.value()))

        for n in range(100_000):  # bounded
            if self._stop.is_set():
                break
            producer.produce(self.topic, str(n).encode(), on_delivery=report)
            producer.poll(0.002)
        assert producer.flush(60) == 0

    def check(self, partitions: int = 1) -> None:
        """No producer error, and every acknowledged record read back once."""
        assert self.errors == []
        consumer = Consumer(
            {
                "bootstrap.servers": self.cluster.bootstrap,
                "group.id": f"check-{self.topic}",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(partitions)])
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < len(self.acked) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1):
                if msg.error() is None:
                    seen.append(int(msg.value()))
        consumer.close()
        assert sorted(seen) == sorted(self.acked) == list(range(len(self.acked)))


def test_every_partition_moves_under_load_and_the_old_copies_go(
    broker_cluster: BrokerCluster,
) -> None:
    cluster = broker_cluster
    topic = "moving"
    create(cluster, topic, [1, 2], partitions=3)
    targets = {0: [2, 3], 1: [3, 2], 2: [3, 1]}
    with Writing(cluster, topic) as writing:
        for index, target in targets.items():
            assert alter(cluster, topic, target, index) == (ErrorCode.none, None)
        for index, target in targets.items():
            cluster.wait_until(
                lambda index=index, target=target: (  # type: ignore[misc]
                    (now := state(cluster, topic, index))[0] == target and now[2] == sorted(target)
                ),
                f"{topic}-{index} on brokers {target} only, both in sync",
                timeout=120,
            )
        cluster.wait_until(lambda: not ongoing(cluster), "nothing in progress")
    for index, target in targets.items():
        assert state(cluster, topic, index)[1] in target
        for gone in {1, 2, 3} - set(target):
            cluster.wait_until(
                lambda gone=gone, index=index: (  # type: ignore[misc]
                    not partition_dir(cluster, gone, topic, index).exists()
                ),
                f"broker {gone} deleted its copy of {topic}-{index}",
            )
    assert partition_dir(cluster, 3, topic).exists()
    writing.check(partitions=3)


def test_a_replication_factor_grows_and_a_stuck_move_is_cancelled(
    broker_cluster: BrokerCluster,
) -> None:
    cluster = broker_cluster
    create(cluster, "grow", [1])
    with Writing(cluster, "grow") as writing:
        assert alter(cluster, "grow", [1, 2, 3]) == (ErrorCode.none, None)
        cluster.wait_until(
            lambda: state(cluster, "grow") == ([1, 2, 3], 1, [1, 2, 3]), "grow on three replicas"
        )
    writing.check()

    create(cluster, "stuck", [1, 2])
    cluster.pause(3)  # the new replica cannot catch up: the move stays in progress
    try:
        assert alter(cluster, "stuck", [1, 3]) == (ErrorCode.none, None)
        cluster.wait_until(  # broker 1's cache learns it through its watch
            lambda: ongoing(cluster).get("stuck-0") == ([1, 3, 2], [3], [2]),
            "the move listed in progress: replicas 1, 3, 2, adding 3, removing 2",
        )
        time.sleep(2)  # the controller's passes leave it so: broker 3 is not in sync
        assert ongoing(cluster).get("stuck-0") == ([1, 3, 2], [3], [2])
        status = run_sluice("status", "--json", "--interval", "0", "--timeout", "3",
                            "-b", cluster.broker(1).bootstrap)  # fmt: skip
        assert json.loads(status.out)["broker"]["reassigning"] == ["stuck-0"], status
        assert alter(cluster, "stuck", None) == (ErrorCode.none, None)
        cluster.wait_until(lambda: not ongoing(cluster), "the move cancelled")
        assert state(cluster, "stuck")[0] == [1, 2]
    finally:
        cluster.resume(3)
    cluster.wait_until(
        lambda: not partition_dir(cluster, 3, "stuck").exists(),
        "broker 3 dropped what it had copied",
    )


def test_kafkas_errors(broker_cluster: BrokerCluster) -> None:
    cluster = broker_cluster
    create(cluster, "errors", [1, 2])
    assert alter(cluster, "nope", [1])[0] == ErrorCode.unknown_topic_or_partition
    assert alter(cluster, "errors", [1, 1])[0] == ErrorCode.invalid_replica_assignment
    assert alter(cluster, "errors", [1, 9])[0] == ErrorCode.invalid_replica_assignment
    assert alter(cluster, "errors", [])[0] == ErrorCode.invalid_replica_assignment
    assert alter(cluster, "errors", None)[0] == ErrorCode.no_reassignment_in_progress
    assert alter(cluster, "errors", [1, 2]) == (ErrorCode.none, None)  # nothing to move
    assert ongoing(cluster) == {}


def test_the_cli_generates_executes_verifies_and_cancels_kafkas_plans(
    broker_cluster: BrokerCluster, tmp_path: Path
) -> None:
    """``sluice partitions reassign`` with Kafka's JSON plans: a plan generated onto brokers 2
    and 3, executed (the rollback plan printed), verified until completed; a malformed plan is
    named with its problem; a cancel of a plan no longer in progress cancels nothing; and
    ``sluice brokers decommission`` empties a broker."""
    cluster = broker_cluster
    create(cluster, "planned", [1, 2])
    bs = ("-b", cluster.bootstrap)
    generated = run_sluice("partitions", "reassign", "--generate", "--topics", "planned",
                           "--brokers", "2,3", *bs)  # fmt: skip
    assert generated.code == 0, generated
    lines = generated.out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": "planned", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
        ],
    }
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert sorted(proposed["partitions"][0]["replicas"]) == [2, 3]
    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])

    executed = run_sluice("partitions", "reassign", "--execute", str(plan), *bs)
    assert executed.code == 0, executed
    assert json.loads(executed.out.splitlines()[2])["partitions"][0]["replicas"] == [1, 2]
    assert "Successfully started partition reassignments for planned-0" in executed.out
    cluster.wait_until(
        lambda: run_sluice("partitions", "reassign", "--verify", str(plan), *bs).code == 0,
        "--verify says completed",
    )
    verified = run_sluice("partitions", "reassign", "--verify", str(plan), *bs)
    assert "Reassignment of partition planned-0 is completed." in verified.out
    assert sorted(state(cluster, "planned")[0]) == [2, 3]

    cancelled = run_sluice("partitions", "reassign", "--cancel", str(plan), *bs)
    assert cancelled.code == 0, cancelled
    assert "for: none (nothing of the plan in progress)" in cancelled.out

    plan.write_text('{"version": 1, "partitions": [{"topic": "planned", "partition": "0"}]}')
    bad = run_sluice("partitions", "reassign", "--execute", str(plan), *bs)
    assert bad.code == 2
    assert f"{plan}: partitions[0].partition must be a partition number" in bad.err

    # decommission, under load: every replica of broker 1 (planned-0 left it) moves elsewhere
    create(cluster, "leaving", [1, 3])
    with Writing(cluster, "leaving") as writing:
        emptied = run_sluice("brokers", "decommission", "1", "--wait", *bs, timeout=180)
    assert emptied.code == 0, f"{emptied}\n{cluster.logs()}"
    assert "broker 1 holds no replica" in emptied.out
    assert state(cluster, "leaving")[0] == [2, 3]
    assert not any(1 in replicas for replicas in all_replicas(cluster))
    writing.check()  # last: its consumer's group creates __consumer_offsets (on broker 1 too)


def all_replicas(cluster: BrokerCluster) -> list[list[int]]:
    """The replicas of every partition of every topic, internal ones included."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = admin.list_topics(timeout=10).topics.values()
    return [list(p.replicas) for t in topics for p in t.partitions.values()]
