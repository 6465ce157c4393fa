"""The multi-broker harness (:mod:`tests.cluster.brokers`): real broker processes that join one
ZooKeeper, stopped, killed, paused and restarted by PID."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.brokers import READY, BrokerCluster

pytestmark = pytest.mark.timeout(180)


def registered(store: ZooKeeperMetadataStore) -> dict[int, int]:
    """``broker id -> port`` of every broker registered in ZooKeeper."""
    return {i: live.registration.endpoints[0].port for i, live in store.live_brokers().items()}


def test_three_brokers_register_list_each_other_and_stop_cleanly(
    broker_cluster: BrokerCluster, store_factory: Callable[..., ZooKeeperMetadataStore]
) -> None:
    cluster = broker_cluster
    store = store_factory()
    ports = {i: cluster.broker(i).port for i in cluster.ids}
    assert registered(store) == ports, cluster.logs()
    assert cluster.bootstrap == ",".join(f"127.0.0.1:{ports[i]}" for i in (1, 2, 3))
    for i in cluster.ids:
        properties = Path(f"{cluster.broker(i).data_dir}.properties").read_text()
        assert "zookeeper.session.timeout.ms=6000" in properties, properties
        assert cluster.broker(i).log_text().count(READY) == 1
        cluster.wait_until(
            lambda i=i: cluster.metadata_brokers(i) == [1, 2, 3],
            f"Metadata from broker {i} listing brokers 1, 2 and 3",
            timeout=20,
        )

    for i in cluster.ids:
        assert cluster.stop(i) == 0, cluster.log_tail(i)
        # a clean shutdown ends the session: the registration goes at once
        cluster.wait_until(lambda i=i: i not in store.live_brokers(), f"broker {i} gone", 5)
    assert cluster.running() == []
    for i in cluster.ids:
        assert "Traceback" not in cluster.broker(i).log_text(), cluster.log_tail(i)


def test_a_killed_broker_restarts_on_its_data_dir(
    broker_cluster_factory: Callable[..., BrokerCluster],
    store_factory: Callable[..., ZooKeeperMetadataStore],
) -> None:
    cluster = broker_cluster_factory(**{"zookeeper.session.timeout.ms": "2000"})
    store = store_factory()
    victim = cluster.broker(2)
    first_pid = victim.pid
    meta = (victim.data_dir / "meta.properties").read_text()

    cluster.kill(2)
    assert victim.proc is not None and victim.proc.returncode == -signal.SIGKILL
    assert cluster.running() == [1, 3]
    cluster.start(2)  # waits out the dead session's registration first

    assert victim.pid != first_pid and cluster.running() == [1, 2, 3]
    assert (victim.data_dir / "meta.properties").read_text() == meta, "the same data dir"
    assert victim.log_text().count(READY) == 2, cluster.log_tail(2)
    assert registered(store)[2] == victim.port, "registered again on the same port"


def test_a_paused_broker_is_resumed_and_stopped_by_close(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(size=1)
    cluster.pause(1)
    assert cluster.running() == [1], "a paused broker is still alive"
    cluster.close()  # SIGCONT, then SIGTERM: a clean exit, not a kill
    proc = cluster.broker(1).proc
    assert proc is not None and proc.returncode == 0, cluster.log_tail(1)


def test_a_broker_that_cannot_start_fails_with_its_log(tmp_path: Path, zk_connect: str) -> None:
    # an id already registered by a live broker is refused: the second cluster's broker 1 exits
    with BrokerCluster(tmp_path / "a", zk_connect, size=1) as first:
        first.start_all()
        with BrokerCluster(tmp_path / "b", zk_connect, size=1) as second:
            with pytest.raises(AssertionError) as failed:
                second.start_all()
            text = str(failed.value)
            assert "broker 1" in text and "broker.id" in text, text
            assert second.running() == []
