"""A failed log directory in a cluster (Kafka's ``log_dir_failure_test``): broker 3 has two log
directories, the second a small tmpfs that an idempotent ``acks=all`` producer fills. The
partitions whose broker-3 replica is there go offline on broker 3 only: the controller learns it
(``/log_dir_event_notification``), takes broker 3 out of their ISR and moves the leadership of
those broker 3 led; every acknowledged record is read back; broker 3 keeps serving its other
directory; restarted with the directory healthy, its replicas catch up and rejoin the ISR.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9 import request as metadata_v9

from sluice.broker.cluster.model import TopicPartition as StoreTopicPartition
from tests.broker.conftest import Wire
from tests.broker.test_jbod import alter_replica_log_dirs, describe_log_dirs, fill, mount_tmpfs
from tests.cluster.brokers import BrokerCluster
from tests.cluster.conftest import CLUSTER_CONFIG

pytestmark = pytest.mark.timeout(180)

TOPIC = "jbod"
PARTITIONS = 4


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "small"
    mount_tmpfs(directory, "3m")
    yield directory
    subprocess.run(["umount", "-l", str(directory)], check=False)


def states(cluster: BrokerCluster) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition → (leader, isr) as the controller wrote them."""
    store = cluster.store()
    found = {}
    for index in range(PARTITIONS):
        state = store.partition_state(TOPIC, index)
        assert state is not None, f"{TOPIC}-{index} has no state"
        found[index] = (state.value.leader, tuple(state.value.isr))
    return found


def offline_replicas(bootstrap: str) -> dict[int, tuple[int, ...]]:
    """partition → offline replicas, as a Metadata (v9) answer from ``bootstrap`` lists them."""
    with Wire(bootstrap) as conn:
        answer = conn.request(
            metadata_v9.MetadataRequest(
                topics=(metadata_v9.MetadataRequestTopic(name=TOPIC),),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
        )
    (topic,) = answer.topics
    return {p.partition_index: tuple(p.offline_replicas) for p in topic.partitions}


def read_all(bootstrap: str, expected: int) -> dict[tuple[int, int], bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 60
        while len(seen) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            seen[(msg.partition(), msg.offset())] = msg.value()
        return seen
    finally:
        consumer.close()


def test_failed_dir_moves_leadership_and_loses_nothing(
    tmp_path: Path, zk_connect: str, small: Path
) -> None:
    config = {**CLUSTER_CONFIG, "auto.leader.rebalance.enable": "false"}
    with BrokerCluster(tmp_path / "cluster", zk_connect, 3, config) as cluster:
        cluster.broker(3).more_log_dirs = (small,)
        cluster.start_all()
        # broker 3 leads every partition (first in each assignment): the failure must move
        # the leadership of those on its tmpfs, and leave the others with it
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = NewTopic(
            TOPIC,
            num_partitions=PARTITIONS,
            replica_assignment=[[3, 1, 2], [3, 2, 1]] * (PARTITIONS // 2),
            config={"min.insync.replicas": "2", "segment.bytes": "1048576"},
        )
        admin.create_topics([topic], request_timeout=40)[TOPIC].result(timeout=45)
        cluster.wait_until(
            lambda: all(len(isr) == 3 for _, isr in states(cluster).values()), "a full ISR"
        )
        on_small = sorted(p for p in range(PARTITIONS) if (small / f"{TOPIC}-{p}").is_dir())
        on_healthy = sorted(set(range(PARTITIONS)) - set(on_small))
        assert on_small and on_healthy, f"broker 3 put {on_small} on the tmpfs"
        store = cluster.store()
        assert all(leader == 3 for leader, _ in states(cluster).values()), states(cluster)

        filler = fill(small, 1_200_000)
        acked: dict[tuple[int, int], bytes] = {}
        failed: list[str] = []

        def delivered(err: object, msg: object) -> None:
            if err is not None:
                failed.append(str(err))
            else:
                acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60_000,
            }
        )
        offline = False
        for n in range(1500):
            value = f"{n:06d}".encode() + os.urandom(4_000)
            producer.produce(TOPIC, value, partition=n % PARTITIONS, on_delivery=delivered)
            producer.poll(0)
            if n % 50 == 49:
                producer.flush(60)
                offline = offline or "is offline" in cluster.broker(3).log_text()
                if offline and n > 400:
                    break
        assert producer.flush(60) == 0, "records still unacknowledged"
        assert offline, "the tmpfs never filled\n" + cluster.log_tail(3)
        assert not failed, f"deliveries failed: {failed[:5]}"

        # the controller moved the partitions off broker 3's failed directory
        def moved() -> bool:
            now = states(cluster)
            return all(now[p][0] != 3 and 3 not in now[p][1] for p in on_small)

        cluster.wait_until(moved, "leadership and ISR off the failed directory", timeout=30)
        recorded = store.admin.offline_replicas()
        assert recorded.get(3, frozenset()) >= {StoreTopicPartition(TOPIC, p) for p in on_small}, (
            recorded
        )
        expected = {p: (3,) if p in on_small else () for p in range(PARTITIONS)}
        for i in cluster.ids:  # every broker lists the replicas on the failed directory
            cluster.wait_until(
                lambda i=i: offline_replicas(cluster.broker(i).bootstrap) == expected,
                f"broker {i}'s Metadata listing the offline replicas",
                timeout=10,
            )
        # broker 3 keeps serving its other directory: in the ISR, leading what it led there
        now = states(cluster)
        assert all(3 in now[p][1] for p in on_healthy), now
        assert all(now[p][0] == 3 for p in on_healthy), now
        assert cluster.broker(3).proc is not None and cluster.broker(3).proc.poll() is None
        with Wire(cluster.broker(3).bootstrap) as conn:
            described = describe_log_dirs(conn)
        assert described[str(small)] == (ErrorCode.kafka_storage_error, {}), described

        read = read_all(cluster.bootstrap, len(acked))
        missing = set(acked) - set(read)
        assert not missing, f"{len(missing)} acknowledged records not read back"
        assert all(read[k] == v for k, v in acked.items()), "a record read back differs"

        # healthy again: restarted, broker 3's replicas catch up and rejoin the ISR
        cluster.stop(3)
        filler.unlink()
        cluster.start(3)
        cluster.wait_until(
            lambda: all(3 in isr for _, isr in states(cluster).values()),
            "broker 3 back in every ISR",
            timeout=60,
        )
        assert store.admin.offline_replicas().get(3) is None


def test_a_leader_moves_a_replica_between_its_dirs_under_acks_all(
    tmp_path: Path, zk_connect: str
) -> None:
    """AlterReplicaLogDirs on the leader while an idempotent ``acks=all`` producer writes: the
    replica ends in the other directory, followers stay in sync, nothing acknowledged is lost."""
    second = tmp_path / "second"
    config = {**CLUSTER_CONFIG, "auto.leader.rebalance.enable": "false"}
    with BrokerCluster(tmp_path / "cluster", zk_connect, 3, config) as cluster:
        cluster.broker(1).more_log_dirs = (second,)
        cluster.start_all()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = NewTopic(
            TOPIC,
            num_partitions=PARTITIONS,
            replica_assignment=[[1, 2, 3], [1, 3, 2]] * (PARTITIONS // 2),
            config={"min.insync.replicas": "2"},
        )
        admin.create_topics([topic], request_timeout=40)[TOPIC].result(timeout=45)
        cluster.wait_until(
            lambda: all(len(isr) == 3 for _, isr in states(cluster).values()), "a full ISR"
        )
        first = cluster.broker(1).data_dir
        moving = sorted(p for p in range(PARTITIONS) if (first / f"{TOPIC}-{p}").is_dir())
        assert moving, "broker 1 put every partition in its second directory"
        acked: dict[tuple[int, int], bytes] = {}

        def delivered(err: object, msg: object) -> None:
            assert err is None, err
            acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all"}
        )
        for n in range(2000):
            value = f"{n:06d}".encode() + os.urandom(4_000)
            producer.produce(TOPIC, value, partition=n % PARTITIONS, on_delivery=delivered)
            producer.poll(0)
            if n == 1000:
                producer.flush(30)
                with Wire(cluster.broker(1).bootstrap) as conn:
                    answer = alter_replica_log_dirs(
                        conn, {str(second): [(TOPIC, p) for p in moving]}
                    )
                assert set(answer.values()) == {ErrorCode.none}, answer
        assert producer.flush(60) == 0
        cluster.wait_until(
            lambda: (
                all((second / f"{TOPIC}-{p}").is_dir() for p in moving)
                and not any((first / f"{TOPIC}-{p}").exists() for p in moving)
            ),
            "the replicas in broker 1's second directory",
            timeout=30,
        )
        cluster.wait_until(
            lambda: all(s[0] == 1 and len(s[1]) == 3 for s in states(cluster).values()),
            "broker 1 leading with a full ISR",
            timeout=30,
        )
        read = read_all(cluster.bootstrap, len(acked))
        assert not set(acked) - set(read), f"{len(set(acked) - set(read))} records lost"
        assert all(read[k] == v for k, v in acked.items()), "a record read back differs"
