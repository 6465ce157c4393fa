"""Global stores: every instance holds every partition of a global table's topic.

A global store is not logged: its topic is its changelog. The runtime reads the topic to its
end before processing starts, then keeps applying new records as they come; the test driver
applies piped records at once.
"""

from __future__ import annotations

from pathlib import Path

from sluice.serde import Serde
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.topology import Topology

__all__ = ["GlobalStores"]


def _no_send(topic: str, partition: int, key: bytes, value: bytes | None, ts: int) -> None:
    raise AssertionError("global stores are not logged")


class GlobalStores:
    """The global stores of a topology, by store name and by topic."""

    def __init__(self, topology: Topology) -> None:
        self.stores: dict[str, StateStore] = {}
        self._by_topic: dict[str, tuple[StateStore, Serde, Serde]] = {}
        for name, spec in topology.global_stores.items():
            store = spec.spec.build()
            self.stores[name] = store
            self._by_topic[spec.topic] = (store, spec.key_serde, spec.value_serde)

    def init(self, state_dir: Path | None) -> None:
        """Open every store."""
        for name, store in self.stores.items():
            directory = None if state_dir is None else state_dir / "global" / name
            store.init(StoreContext(None, 0, _no_send, directory))

    @property
    def topics(self) -> list[str]:
        """The topics global stores are filled from."""
        return list(self._by_topic)

    def reads(self, topic: str) -> bool:
        """Whether ``topic`` feeds a global store."""
        return topic in self._by_topic

    def store_of(self, topic: str) -> StateStore:
        """The store filled from ``topic``."""
        return self._by_topic[topic][0]

    def serdes(self, topic: str) -> tuple[Serde, Serde]:
        """Key and value serdes of the store filled from ``topic``."""
        _, key_serde, value_serde = self._by_topic[topic]
        return key_serde, value_serde

    def update(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        """Apply one record of ``topic`` (a tombstone deletes); records without key are skipped."""
        if key is None:
            return
        store = self._by_topic[topic][0]
        store.restore(key, value, timestamp)

    def flush(self) -> None:
        """Make applied records durable in persistent backends."""
        for store in self.stores.values():
            store.flush()

    def close(self) -> None:
        """Close every store."""
        for store in self.stores.values():
            store.close()
