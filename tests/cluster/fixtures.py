"""Helpers of the cluster tests: broker registrations, watch events, session expiry."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable

from kazoo.client import KazooClient

from sluice.broker.cluster.model import BrokerRegistration, Endpoint
from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore


def registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(
        broker_id,
        (Endpoint("PLAINTEXT", "127.0.0.1", port),),
        {"PLAINTEXT": "PLAINTEXT"},
        rack="r1",
        timestamp_ms=1,
    )


class Events:
    """What a watch delivered, from kazoo's thread to the test's."""

    def __init__(self) -> None:
        self._queue: queue.Queue[object] = queue.Queue()

    def __call__(self, value: object) -> None:
        self._queue.put(value)

    def next_matching(self, predicate: Callable[[object], bool], timeout: float = 10.0) -> object:
        """The first value delivered that ``predicate`` accepts (earlier ones are dropped)."""
        seen = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                value = self._queue.get(timeout=min(left, 0.1))
            except queue.Empty:
                continue
            seen.append(value)
            if predicate(value):
                return value
        raise AssertionError(f"no matching event within {timeout}s; saw {seen}")


def expire_session(hosts: str, store: ZooKeeperMetadataStore) -> None:
    """Expire ``store``'s session for real: another client attaches to the same session and
    closes it, as ZooKeeper's own tests do. The store's next reconnect finds it expired."""
    session_id, password = store.session_credentials
    intruder = KazooClient(hosts=hosts, client_id=(session_id, password))
    intruder.start(timeout=10)
    intruder.stop()
    intruder.close()
