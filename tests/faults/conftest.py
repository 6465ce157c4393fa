"""The fault tests run on the cluster fixtures of ``tests/cluster/conftest.py`` (one ZooKeeper per
test process, a chroot per test, clusters of real broker processes stopped at teardown)."""

from tests.cluster.conftest import (
    broker_cluster_factory,
    private_zookeeper,
    zk_connect,
    zookeeper,
)

__all__ = ["broker_cluster_factory", "private_zookeeper", "zk_connect", "zookeeper"]
