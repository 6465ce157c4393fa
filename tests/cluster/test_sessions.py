"""Sessions: expiry, controller failover, an unreachable ZooKeeper, a ZooKeeper restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from sluice.broker.cluster.metadata_store import (
    MetadataStoreUnavailableError,
    MetadataStoreUnreachableError,
)
from sluice.broker.cluster.model import (
    LiveBroker,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
)
from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.fixtures import Events, expire_session, registration
from tests.cluster.zookeeper import ZooKeeperServer
from tests.conftest import free_port

StoreFactory = Callable[..., ZooKeeperMetadataStore]


def test_an_expired_session_drops_the_registration_and_tells_both_sides(
    zookeeper: ZooKeeperServer, store_factory: StoreFactory
) -> None:
    observer, broker = store_factory(), store_factory()
    expired = threading.Event()
    broker.on_session_expired(expired.set)
    first_epoch = broker.register_broker(registration(3))
    live = Events()
    observer.watch_live_brokers(live)
    live.next_matching(lambda ids: ids == frozenset({3}))

    expire_session(zookeeper.hosts, broker)

    live.next_matching(lambda ids: ids == frozenset())  # the other member's watch fired
    assert expired.wait(10), "the broker was not told its session expired"
    # the store has a new session: the broker registers again, with a newer broker epoch
    deadline = time.monotonic() + 10
    while True:
        try:
            second_epoch = broker.register_broker(registration(3))
            break
        except MetadataStoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert second_epoch > first_epoch
    live.next_matching(lambda ids: ids == frozenset({3}))


def test_a_closed_store_reports_no_expiry(store_factory: StoreFactory) -> None:
    store = store_factory()
    expired = threading.Event()
    store.on_session_expired(expired.set)
    store.close()
    store.close()  # idempotent
    assert not expired.wait(1.0)


def test_the_controller_fails_over_when_its_session_expires(
    zookeeper: ZooKeeperServer, store_factory: StoreFactory
) -> None:
    first, second = store_factory(), store_factory()
    first.create_topic("t", TopicAssignment({0: ReplicaAssignment((1, 2))}), {})
    old = first.elect_controller(1)
    assert old is not None and old.epoch == 1
    assert first.create_partition_state("t", 0, PartitionState(1, 0, (1, 2), 1), old) == 0
    controllers = Events()
    second.watch_controller(controllers)
    controllers.next_matching(lambda c: c == 1)
    assert second.elect_controller(2) is None

    expire_session(zookeeper.hosts, first)

    controllers.next_matching(lambda c: c is None)
    new = second.elect_controller(2)
    assert new is not None and new.epoch == 2 and new.epoch_version > old.epoch_version
    controllers.next_matching(lambda c: c == 2)
    state = second.partition_state("t", 0)
    assert state is not None
    assert second.set_partition_state("t", 0, PartitionState(2, 1, (2,), 2), 0, new) == 1


def test_an_unreachable_zookeeper_is_reported_quickly() -> None:
    port = free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(MetadataStoreUnreachableError) as info:
        ZooKeeperMetadataStore.connect(f"127.0.0.1:{port}/sluice", connection_timeout_ms=1500)
    elapsed = time.monotonic() - started
    assert elapsed < 5, f"took {elapsed:.1f}s to give up"
    message = str(info.value)
    assert f"Timed out waiting for connection to ZooKeeper at 127.0.0.1:{port}/sluice" in message
    assert "zookeeper.connection.timeout.ms=1500" in message


def live_brokers_once_back(
    store: ZooKeeperMetadataStore, timeout: float = 15
) -> dict[int, LiveBroker]:
    """The live brokers, asked until ZooKeeper answers again (at most ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return store.live_brokers()
        except MetadataStoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_sessions_and_data_survive_a_zookeeper_restart(private_zookeeper: ZooKeeperServer) -> None:
    store = ZooKeeperMetadataStore.connect(
        private_zookeeper.hosts + "/restart",
        session_timeout_ms=10_000,
        connection_timeout_ms=10_000,
    )
    try:
        expired = threading.Event()
        store.on_session_expired(expired.set)
        epoch = store.register_broker(registration(1))
        store.create_topic("kept", TopicAssignment({0: ReplicaAssignment((1,))}), {})

        private_zookeeper.restart()  # well inside the session timeout

        live = live_brokers_once_back(store)
        assert live[1].epoch == epoch  # the same session, the same registration
        assert store.topics() == frozenset({"kept"})
        assert not expired.is_set()
    finally:
        store.close()


def test_a_session_survives_an_outage_longer_than_its_timeout(
    private_zookeeper: ZooKeeperServer,
) -> None:
    # ZooKeeper counts a session's timeout from its own start: a client that comes back within
    # the timeout of that keeps its session, however long the server was down. Kazoo's default
    # reconnect back-off doubles up to an hour; after a 6 s outage its next try came ~6 s late
    # and the session had expired (a broker's registration gone; once in the clean-clone CI).
    connect = private_zookeeper.hosts + "/outage"
    ZooKeeperMetadataStore.connect(connect, connection_timeout_ms=20_000).close()  # warm JVM
    store = ZooKeeperMetadataStore.connect(
        connect, session_timeout_ms=4000, connection_timeout_ms=2000
    )
    try:
        expired = threading.Event()
        store.on_session_expired(expired.set)
        epoch = store.register_broker(registration(1))
        private_zookeeper.stop()
        time.sleep(6)  # longer than the session timeout
        private_zookeeper.start()
        live = live_brokers_once_back(store)
        assert not expired.is_set(), "the session expired: the client came back too late"
        assert 1 in live and live[1].epoch == epoch
    finally:
        store.close()


def test_calls_while_zookeeper_is_down_fail_within_the_connection_timeout(
    private_zookeeper: ZooKeeperServer,
) -> None:
    connect = private_zookeeper.hosts + "/down"
    # a fresh JVM answers its first sessions slowly: warm it up (and create the chroot) first
    ZooKeeperMetadataStore.connect(connect, connection_timeout_ms=20_000).close()
    store = ZooKeeperMetadataStore.connect(
        connect, session_timeout_ms=6000, connection_timeout_ms=2000
    )
    try:
        store.register_broker(registration(1))
        private_zookeeper.stop()
        started = time.monotonic()
        with pytest.raises(MetadataStoreUnavailableError, match="ZooKeeper did not answer"):
            store.live_brokers()
        elapsed = time.monotonic() - started
        assert elapsed < 6, f"a call waited {elapsed:.1f}s, past the connection timeout of 2 s"
        with pytest.raises(MetadataStoreUnavailableError):
            store.watch_topics(lambda topics: None)
    finally:
        store.close()
