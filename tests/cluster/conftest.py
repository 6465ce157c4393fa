"""Cluster fixtures: one real ZooKeeper per test process, a chroot per test, metadata stores.

* ``zookeeper`` (session): the process's ZooKeeper, on a free loopback port, data in a temp dir;
  stopped by PID at the end of the session.
* ``zk_connect`` (function): ``zookeeper.connect`` with a chroot of the test's own, so tests share
  the server and never each other's znodes.
* ``store_factory`` (function): opens ``ZooKeeperMetadataStore`` sessions on the test's chroot and
  closes them at teardown.
* ``private_zookeeper`` (function): a ZooKeeper of the test's own, for tests that stop or restart
  it (the shared one must stay up for the others).
* ``broker_cluster_factory`` (function): starts clusters of real broker processes
  (:class:`~tests.cluster.brokers.BrokerCluster`: ``broker_cluster_factory(size=3,
  **{"min.insync.replicas": "2"})``), each on a chroot of its own; stops them at teardown.
* ``broker_cluster`` (function): 3 brokers with :data:`CLUSTER_CONFIG`, started.
* ``shared_cluster`` (function, over a module-scoped cluster): the same 3 brokers for every test
  of a module, all running at each test's start.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.brokers import BrokerCluster
from tests.cluster.zookeeper import ZooKeeperServer
from tests.conftest import SHARED_CONFIG, free_port

#: Sessions of the stores (ZooKeeper allows 2 to 100 ticks of 200 ms here); expiry tests expire
#: them from outside rather than waiting for the timeout.
SESSION_TIMEOUT_MS = 6000


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), free_port()) as server:
        yield server


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tmp_path / "zookeeper", free_port()) as server:
        yield server


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperServer) -> str:
    return f"{zookeeper.hosts}/sluice-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store_factory(zk_connect: str) -> Iterator[Callable[..., ZooKeeperMetadataStore]]:
    stores: list[ZooKeeperMetadataStore] = []

    def open_store(
        connect: str | None = None, session_timeout_ms: int = SESSION_TIMEOUT_MS
    ) -> ZooKeeperMetadataStore:
        store = ZooKeeperMetadataStore.connect(
            connect or zk_connect,
            session_timeout_ms=session_timeout_ms,
            connection_timeout_ms=10_000,
        )
        stores.append(store)
        return store

    yield open_store
    for store in stores:
        store.close()


#: The brokers' keys unless a test says otherwise: the shared broker's (no initial rebalance
#: delay, no retention check during a test) and a ZooKeeper session of 6 s, so that a killed
#: broker leaves the cluster in seconds (Kafka's default is 18 s).
CLUSTER_CONFIG = {**SHARED_CONFIG, "zookeeper.session.timeout.ms": "6000"}


@pytest.fixture
def broker_cluster_factory(
    tmp_path: Path, zk_connect: str
) -> Iterator[Callable[..., BrokerCluster]]:
    """``broker_cluster_factory(size=3, broker_config={2: {...}}, **keys)``: a started
    :class:`BrokerCluster` with :data:`CLUSTER_CONFIG` and ``keys`` in every broker's
    ``server.properties``; each cluster of a test on a chroot of its own."""
    clusters: list[BrokerCluster] = []

    def start(
        size: int = 3,
        broker_config: dict[int, dict[str, str]] | None = None,
        **keys: str,
    ) -> BrokerCluster:
        n = len(clusters)
        cluster = BrokerCluster(
            tmp_path / f"cluster-{n}",
            zk_connect if n == 0 else f"{zk_connect}-{n}",
            size,
            {**CLUSTER_CONFIG, **keys},
            broker_config,
        )
        clusters.append(cluster)  # closed at teardown even if a broker fails to start
        return cluster.start_all()

    yield start
    for cluster in clusters:
        cluster.close()


@pytest.fixture
def broker_cluster(broker_cluster_factory: Callable[..., BrokerCluster]) -> BrokerCluster:
    """Three brokers (ids 1, 2, 3) on the test's chroot, started and ready."""
    return broker_cluster_factory()


@pytest.fixture(scope="module")
def _module_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[BrokerCluster]:
    chroot = f"{zookeeper.hosts}/sluice-module-{uuid.uuid4().hex[:12]}"
    # no automatic rebalance: a module's tests move leaders and check where they are
    config = {**CLUSTER_CONFIG, "auto.leader.rebalance.enable": "false"}
    with BrokerCluster(tmp_path_factory.mktemp("module-cluster"), chroot, 3, config) as cluster:
        yield cluster


@pytest.fixture
def shared_cluster(_module_cluster: BrokerCluster) -> BrokerCluster:
    """Three brokers shared by the tests of a module (a cluster's start costs seconds): each
    test gets all three running — those a test before it stopped or killed are started again —
    and uses topics of its own."""
    cluster = _module_cluster
    if not cluster.running():
        cluster.start_all()
    for i in set(cluster.ids) - set(cluster.running()):
        cluster.start(i)  # after a kill, once ZooKeeper dropped its registration
    for i in cluster.ids:
        cluster.wait_until(
            lambda i=i: sorted(cluster.metadata_brokers(i)) == cluster.ids,  # type: ignore[misc]
            f"broker {i} lists every broker",
        )
    return cluster
