"""The transactional ids of the coordinator, one :class:`TxnStatePartition` per
``__transaction_state`` partition, as Kafka's ``TransactionStateManager`` with its
``transactionMetadataCache``.

A transactional id belongs to the partition its id hashes to (Java's ``String.hashCode`` modulo
the partition count); that partition's records are its durable state, latest record per key
winning, and a tombstone forgets it. A partition is loaded (replayed) and unloaded as a unit
(:meth:`TransactionStateManager.install`, :meth:`TransactionStateManager.unload_partition`),
so the coordinator of a partition can move with its leadership. Every change is written before
it is applied in memory by the caller (:meth:`TransactionStateManager.persist`). On one node a
partition not loaded yet starts empty when first used; in a cluster (:attr:`clustered`) only the
partitions this broker leads are loaded, and an id of another raises NOT_COORDINATOR.
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.internal_topic import InternalTopic, ReplayedBatch, partition_for
from sluice.broker.txn import records as rec
from sluice.broker.txn.state import TxnMetadata


class TxnStatePartition:
    """The transactional ids of one ``__transaction_state`` partition."""

    def __init__(self, index: int, coordinator_epoch: int = 0) -> None:
        self.index = index
        self.coordinator_epoch = coordinator_epoch
        """The leader epoch of the partition when this broker loaded it: written into the
        markers this coordinator sends, so a partition can tell a stale coordinator's."""
        self.txns: dict[str, TxnMetadata] = {}

    def replay(self, batches: Iterable[ReplayedBatch]) -> None:
        """Rebuild from the partition's batches, oldest first."""
        for batch in batches:
            self.replay_batch(batch)

    def replay_batch(self, batch: ReplayedBatch) -> None:
        """Apply the next batch of the partition: the latest record of an id wins."""
        for record in batch.records:
            if record.key is None:
                continue
            txn_id = rec.decode_key(record.key)
            if record.value is None:
                self.txns.pop(txn_id, None)
            else:
                self.txns[txn_id] = rec.decode_value(txn_id, record.value)


class TransactionStateManager:
    """Every loaded partition's transactional ids, and their records."""

    def __init__(self, store: InternalTopic) -> None:
        self.store = store
        self._partitions: dict[int, TxnStatePartition] = {}
        self.clustered = False

    def install(self, loaded: TxnStatePartition) -> None:
        """Coordinate the ids of ``loaded``, a partition replayed from its records."""
        self._partitions[loaded.index] = loaded

    def unload_partition(self, index: int) -> None:
        """Forget partition ``index``'s transactional ids (another node coordinates them)."""
        self._partitions.pop(index, None)

    def partition_count(self) -> int:
        """The partitions of ``__transaction_state`` (see :meth:`InternalTopic.partition_count`)."""
        return self.store.partition_count()

    def unload_all(self) -> None:
        """Forget every partition (a broker joining a cluster loads only those it leads)."""
        self._partitions.clear()

    def loaded(self, txn_id: str) -> bool:
        """Whether ``txn_id``'s partition is loaded here (always on one node)."""
        index = partition_for(txn_id, self.store.partition_count())
        return not self.clustered or index in self._partitions

    def coordinator_epoch(self, txn_id: str) -> int:
        """The coordinator epoch of ``txn_id``'s partition (0 on one node)."""
        return self._partition(txn_id).coordinator_epoch

    def _partition(self, txn_id: str) -> TxnStatePartition:
        index = partition_for(txn_id, self.store.partition_count())
        found = self._partitions.get(index)
        if found is None:
            if self.clustered:  # the coordinator checks loaded() first
                raise KafkaError(ErrorCode.not_coordinator, f"{txn_id!r} is not coordinated here")
            # one node: every partition is ours, one not loaded yet is empty
            found = self._partitions[index] = TxnStatePartition(index)
        return found

    def get(self, txn_id: str) -> TxnMetadata | None:
        """The state of ``txn_id`` (None: unknown, or not coordinated here)."""
        if not self.loaded(txn_id):
            return None
        return self._partition(txn_id).txns.get(txn_id)

    def all(self) -> list[TxnMetadata]:
        """Every transactional id of the loaded partitions."""
        return [
            meta
            for index in sorted(self._partitions)
            for meta in self._partitions[index].txns.values()
        ]

    def persist(self, meta: TxnMetadata) -> None:
        """Write ``meta``'s record, then hold it. Raises
        :class:`~sluice.errors.StorageError` when the disk refuses the write."""
        key = meta.transactional_id
        self.store.append(key, [(rec.encode_key(key), rec.encode_value(meta))])
        self._partition(key).txns[key] = meta

    def remove(self, txn_id: str) -> None:
        """Write ``txn_id``'s tombstone, then forget it. Raises
        :class:`~sluice.errors.StorageError` when the disk refuses the write."""
        self.store.append(txn_id, [(rec.encode_key(txn_id), None)])
        self._partition(txn_id).txns.pop(txn_id, None)
