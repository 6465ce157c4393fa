"""Cluster fixtures: one real ZooKeeper per test process, a chroot per test, metadata stores.

* ``zookeeper`` (session): the process's ZooKeeper, on a free loopback port, data in a temp dir;
  stopped by PID at the end of the session.
* ``zk_connect`` (function): ``zookeeper.connect`` with a chroot of the test's own, so tests share
  the server and never each other's znodes.
* ``store_factory`` (function): opens ``ZooKeeperMetadataStore`` sessions on the test's chroot and
  closes them at teardown.
* ``private_zookeeper`` (function): a ZooKeeper of the test's own, for tests that stop or restart
  it (the shared one must stay up for the others).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.cluster.zookeeper import ZooKeeperServer
from tests.conftest import free_port

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
