"""The cluster a replication benchmark measures: ZooKeeper and three brokers, started and
stopped by PID, and what ZooKeeper says about their partitions.

ZooKeeper and the brokers are the tests' own harness (``tests/cluster/zookeeper.py``,
``tests/cluster/brokers.py``): the same processes, the same readiness checks.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import KafkaException

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the cluster harness of the tests: tests/cluster/*.py
    sys.path.insert(0, str(ROOT))

from tests.cluster.brokers import BrokerCluster  # noqa: E402
from tests.cluster.zookeeper import ZooKeeperServer  # noqa: E402
from tests.conftest import free_port  # noqa: E402

CLUSTER = (1, 2, 3)
"""The brokers' ids."""
ERRORS = (RuntimeError, TimeoutError, AssertionError, KafkaException, OSError)
"""What ends one measurement (the harness's waits fail with AssertionError)."""


def cluster_keys(session_timeout_ms: int) -> dict[str, str]:
    """Every cluster broker's ``server.properties``."""
    return {
        "zookeeper.session.timeout.ms": str(session_timeout_ms),
        "min.insync.replicas": "2",
        "default.replication.factor": "3",
        "log.retention.check.interval.ms": "86400000",
        "group.initial.rebalance.delay.ms": "0",
    }


@contextlib.contextmanager
def running_cluster(
    root: Path, session_timeout_ms: int, extra_keys: dict[str, str] | None = None
) -> Iterator[BrokerCluster]:
    """ZooKeeper and three brokers under ``root`` (``extra_keys`` added to their
    ``server.properties``), started; all stopped by PID at the end."""
    with (
        ZooKeeperServer(root / "zookeeper", free_port()) as zookeeper,
        BrokerCluster(
            root / "cluster",
            f"{zookeeper.hosts}/sluice-bench",
            len(CLUSTER),
            {**cluster_keys(session_timeout_ms), **(extra_keys or {})},
        ) as cluster,
    ):
        for i in cluster.ids:  # one at a time: a start is mostly imports, 2 cores are shared
            cluster.start(i)
        yield cluster


def partition_state(
    cluster: BrokerCluster, topic: str, partition: int = 0
) -> tuple[int, list[int]]:
    """The leader and ISR that ZooKeeper holds for ``topic``-``partition``."""
    versioned = cluster.store().partition_state(topic, partition)
    if versioned is None:
        raise RuntimeError(f"{topic}-{partition} has no state in ZooKeeper")
    return versioned.value.leader, list(versioned.value.isr)


def wait_in_sync(
    cluster: BrokerCluster, topic: str, partitions: int = 1, timeout: float = 60
) -> None:
    """Wait (bounded) until every replica of every partition of ``topic`` is in its ISR."""
    assignment = cluster.store().topic_assignment(topic)
    if assignment is None:
        raise RuntimeError(f"topic {topic} is not in ZooKeeper")
    replicas = assignment.value.partitions

    def in_sync() -> bool:
        return all(
            sorted(partition_state(cluster, topic, p)[1]) == sorted(replicas[p].replicas)
            for p in range(partitions)
        )

    cluster.wait_until(in_sync, f"{topic}: every replica in the ISR", timeout)


def create_assigned(cluster: BrokerCluster, topic: str, assignment: list[list[int]]) -> None:
    """Create ``topic`` with one partition per entry of ``assignment`` (its replicas, the
    preferred leader first) and wait until every replica is in sync."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    new = NewTopic(topic, len(assignment), replica_assignment=assignment)
    for future in admin.create_topics([new]).values():
        future.result(30)
    wait_in_sync(cluster, topic, len(assignment))


def pids_leader_first(cluster: BrokerCluster, first: int) -> tuple[int, ...]:
    """The broker processes, broker ``first`` first."""
    order = [first, *(i for i in CLUSTER if i != first)]
    return tuple(cluster.broker(i).pid for i in order)


def restart_stopped(cluster: BrokerCluster) -> None:
    """Start again any broker a failed section left stopped, so that the next has three."""
    for i in cluster.ids:
        if i not in cluster.running():
            with contextlib.suppress(*ERRORS):
                cluster.start(i)
