"""What every DSL object shares: the topology being built, names, serdes and store factories.

Node names follow Kafka Streams (``KSTREAM-FILTER-0000000003``) so that a ``describe()`` reads
familiar; stores get ``KSTREAM-AGGREGATE-STATE-STORE-…`` names unless the user names them, and
their changelogs are ``<application id>-<store>-changelog``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from sluice.serde import Serde
from sluice.streams.processor import Processor
from sluice.streams.state.base import StateStore, StoreSpec
from sluice.streams.state.keyvalue import KeyValueBackend, KeyValueStore, MemoryBackend
from sluice.streams.state.session import MemorySessionBackend, SessionBackend, SessionStore
from sluice.streams.state.window import MemoryWindowBackend, WindowBackend, WindowStore
from sluice.streams.topology import Topology

__all__ = ["Builder", "StoreKind"]

StoreKind = Literal["rocksdb", "memory"]


class Builder:
    """Shared by an :class:`~sluice.dsl.App` and every stream and table made from it."""

    def __init__(self, application_id: str, store_kind: StoreKind) -> None:
        self.application_id = application_id
        self.store_kind = store_kind
        self.topology = Topology()
        self._counter = 0

    def name(self, prefix: str, given: str | None = None) -> str:
        """A fresh node name (or ``given``)."""
        if given is not None:
            return given
        self._counter += 1
        return f"{prefix}-{self._counter:010d}"

    def changelog_topic(self, store: str) -> str:
        """The changelog topic of a store (what the runtime creates for a logged store)."""
        return f"{self.application_id}-{store}-changelog"

    def store_serdes(self, store: str, key_serde: Serde, value_serde: Serde) -> tuple[Serde, Serde]:
        """The serdes bound to the store's changelog topic (schema serdes: their subjects are
        ``<application id>-<store>-changelog-key|value``, as in Kafka Streams)."""
        topic = self.changelog_topic(store)
        return (
            self.topology.bind(key_serde, topic, is_key=True),
            self.topology.bind(value_serde, topic, is_key=False),
        )

    def repartition_topic(self, name: str) -> str:
        """The full name of an internal topic."""
        return f"{self.application_id}-{name}-repartition"

    def add(
        self,
        prefix: str,
        supplier: Callable[[], Processor],
        *parents: str,
        stores: tuple[str, ...] = (),
        name: str | None = None,
    ) -> str:
        """Add a processor node; returns its name."""
        node = self.name(prefix, name)
        self.topology.add_processor(node, supplier, *parents, stores=stores)
        return node

    # -- stores -----------------------------------------------------------------------------
    def _backend(self) -> Callable[[Serde, Serde], KeyValueBackend]:
        if self.store_kind == "memory":
            return lambda key_serde, value_serde: MemoryBackend()
        from sluice.streams.state.rocksdb import RocksDBBackend

        return RocksDBBackend

    def kv_store(
        self, name: str, key_serde: Serde, value_serde: Serde, *, logged: bool = True
    ) -> str:
        """Register a key-value store (RocksDB or in memory, as the app says)."""
        backend = self._backend()
        key_serde, value_serde = self.store_serdes(name, key_serde, value_serde)

        def factory() -> StateStore:
            return KeyValueStore(key_serde, value_serde, backend(key_serde, value_serde))

        self.topology.add_state_store(StoreSpec(name, factory, logged=logged))
        return name

    def window_store(
        self,
        name: str,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        duplicates: bool = False,
    ) -> str:
        """Register a window store (RocksDB segments or in memory, as the app says)."""
        key_serde, value_serde = self.store_serdes(name, key_serde, value_serde)
        persistent = self.store_kind == "rocksdb"

        def factory() -> StateStore:
            backend: WindowBackend = MemoryWindowBackend(duplicates)
            if persistent:
                from sluice.streams.state.rocksdb_window import RocksDBWindowBackend

                backend = RocksDBWindowBackend(
                    key_serde, value_serde, retention_ms, retain_duplicates=duplicates
                )
            return WindowStore(
                key_serde, value_serde, retention_ms, retain_duplicates=duplicates, backend=backend
            )

        config = {
            "cleanup.policy": "compact,delete",
            "retention.ms": str(retention_ms + 86_400_000),
        }
        self.topology.add_state_store(StoreSpec(name, factory, changelog_config=config))
        return name

    def session_store(
        self, name: str, key_serde: Serde, value_serde: Serde, retention_ms: int
    ) -> str:
        """Register a session store (RocksDB segments or in memory, as the app says)."""
        key_serde, value_serde = self.store_serdes(name, key_serde, value_serde)
        persistent = self.store_kind == "rocksdb"

        def factory() -> StateStore:
            backend: SessionBackend = MemorySessionBackend()
            if persistent:
                from sluice.streams.state.rocksdb_session import RocksDBSessionBackend

                backend = RocksDBSessionBackend(key_serde, value_serde, retention_ms)
            return SessionStore(key_serde, value_serde, retention_ms, backend=backend)

        config = {
            "cleanup.policy": "compact,delete",
            "retention.ms": str(retention_ms + 86_400_000),
        }
        self.topology.add_state_store(StoreSpec(name, factory, changelog_config=config))
        return name
