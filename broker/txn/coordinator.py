"""The transaction coordinator: transactional ids, epochs and fencing, the two-phase end.

Every change of a transaction's state is appended to ``__transaction_state`` before it is
answered, so a restarted broker resumes where it was: a transaction found in PrepareCommit or
PrepareAbort gets its markers (again) and completes; an Ongoing one is aborted when its timeout
passes. Ending a transaction is Kafka's two-phase protocol:

1. PrepareCommit / PrepareAbort is written to ``__transaction_state`` (in a cluster, and
   replicated to its in-sync replicas);
2. a COMMIT or ABORT control batch (marker) is appended to every partition of the transaction,
   including the ``__consumer_offsets`` partition holding its offsets (which then become visible
   or are dropped) — in a cluster, to the partitions led by this broker at once and to the
   others' leaders through WriteTxnMarkers (:mod:`~sluice.broker.txn.markers`), EndTxn being
   answered meanwhile and the transaction's next request CONCURRENT_TRANSACTIONS until done;
3. CompleteCommit / CompleteAbort is written (and on one node EndTxn answered).

A crash between 1 and 3 repeats step 2 at the next start (or on the partition's next leader);
a partition that gets a marker twice ignores the second; the periodic job below also completes
a transaction whose markers could not be sent. In a cluster only the ids of the
``__transaction_state`` partitions led here are loaded
(:meth:`TransactionCoordinator.follow_leadership`), in the background
(:meth:`TransactionCoordinator.begin_loading`: COORDINATOR_LOAD_IN_PROGRESS until loaded); the
others are answered NOT_COORDINATOR.
``transaction.timeout.ms`` is enforced every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``: a timed-out transaction is
aborted with the producer's epoch bumped, which fences the producer that left it open.
A transactional id idle (no transaction in progress) for ``transactional.id.expiration.ms`` is
forgotten every ``transaction.remove.expired.transaction.cleanup.interval.ms``, a tombstone
written for it (:meth:`TransactionCoordinator.expire_transactional_ids`).

The state of the transactional ids is held by a
:class:`~sluice.broker.txn.state_manager.TransactionStateManager`, one shard per
``__transaction_state`` partition, loaded and unloaded as a unit
(:meth:`TransactionCoordinator.load_partition`, :meth:`TransactionCoordinator.begin_loading`,
:meth:`TransactionCoordinator.unload_partition`);
this class holds the protocol. The offsets a transaction commits are the group coordinator's,
told when the markers are written.
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.coordinator_loads import CoordinatorLoads
from sluice.broker.errors import KafkaError
from sluice.broker.group.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sluice.broker.internal_topic import InternalTopic, partition_for, write_error
from sluice.broker.producer_ids import ProducerIdManager, ProducerIdsUnavailableError
from sluice.broker.topics import TopicManager
from sluice.broker.txn.markers import MarkerChannel, MarkerRoutes, TxnMarker, write_marker
from sluice.broker.txn.state import TxnMetadata, TxnState
from sluice.broker.txn.state_manager import TransactionStateManager, TxnStatePartition
from sluice.errors import StorageError

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
MAX_EPOCH = 2**15 - 1
T = TxnState


class TransactionCoordinator:
    """Every transactional id of the broker."""

    def __init__(
        self,
        topics: TopicManager,
        groups: GroupCoordinator,
        producer_ids: Callable[[], ProducerIdManager],
        config: BrokerConfig,
        clock: Callable[[], int],
    ) -> None:
        self.topics = topics
        self.groups = groups
        self.producer_ids = producer_ids
        self.clock = clock
        self.max_timeout = int(config["transaction.max.timeout.ms"])
        self.id_expiration_ms = int(config["transactional.id.expiration.ms"])
        self.store = InternalTopic(
            topics,
            TXN_TOPIC,
            int(config["transaction.state.log.num.partitions"]),
            int(config["transaction.state.log.segment.bytes"]),
            clock,
            replication_factor=int(config["transaction.state.log.replication.factor"]),
            cluster_config={  # Kafka's TransactionLog topic configs
                "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                "unclean.leader.election.enable": "false",
                "compression.type": "uncompressed",
            },
        )
        self.state = TransactionStateManager(self.store)
        self.markers = MarkerChannel(config.node_id)
        self._loads = CoordinatorLoads(TXN_TOPIC)
        self._ending: set[str] = set()
        """Sends markers to partitions led by other brokers (in a cluster)."""
        self.timeout_ms = int(config["offsets.commit.timeout.ms"])
        self.partition_exists: Callable[[str, int], bool] = lambda topic, index: (
            topics.partition(topic, index) is not None
        )
        """Whether a topic partition exists (AddPartitionsToTxn of unknown ones is refused):
        hosted here on one node, known to the cluster in a cluster."""
        self.clustered = False

    def follow_leadership(self, routes: MarkerRoutes) -> None:
        """Cluster mode: a ``__transaction_state`` partition is loaded when this broker
        becomes its leader and unloaded when it stops leading it; the ids of the others are
        answered NOT_COORDINATOR. ``routes``: where the cluster's partitions are led."""
        self.clustered = True
        self.store.clustered = True
        self.state.clustered = True
        self.state.unload_all()
        self.partition_exists = routes.exists
        self.markers.routes = routes

    def coordinator_error(self, txn_id: str) -> ErrorCode:
        """NONE when this broker coordinates ``txn_id`` (always on one node),
        COORDINATOR_LOAD_IN_PROGRESS while its partition is being loaded here, else
        NOT_COORDINATOR."""
        if self.state.loaded(txn_id):
            return ErrorCode.none
        if self._loads.loading(partition_for(txn_id, self.store.partition_count())):
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.not_coordinator

    async def replicated(self, txn_id: str) -> ErrorCode:
        """Wait until what was written for ``txn_id`` is on its partition's in-sync replicas
        (``offsets.commit.timeout.ms``); NONE, or the error to answer (Kafka's mapping for the
        transaction log: :func:`~sluice.broker.internal_topic.write_error`)."""
        code = await self.store.replicated(txn_id, self.timeout_ms)
        return write_error(code, written="transaction")

    # -- loading --------------------------------------------------------------------------

    def load(self) -> None:
        """Load every partition of ``__transaction_state`` (one node leads them all)."""
        count = 0
        for index in range(self.state.partition_count()):
            count += self.load_partition(index)
        log.info("loaded %d transactional ids from %s", count, TXN_TOPIC)

    def load_partition(self, index: int, coordinator_epoch: int = 0) -> int:
        """Become the coordinator of partition ``index`` at once (one node, before serving):
        rebuild its transactional ids and finish the transactions caught mid-way; returns how
        many ids it holds."""
        self.unload_partition(index)
        loaded = TxnStatePartition(index, coordinator_epoch)
        loaded.replay(self.store.replay_partition(index))
        return self._install(loaded)

    def begin_loading(self, index: int, coordinator_epoch: int) -> None:
        """Cluster mode: this broker now leads partition ``index`` in epoch
        ``coordinator_epoch``; it coordinates the partition's ids once the partition is
        replayed in the background (:class:`~sluice.broker.coordinator_loads.CoordinatorLoads`),
        COORDINATOR_LOAD_IN_PROGRESS until then. Call in the event loop."""
        self.unload_partition(index)
        loaded = TxnStatePartition(index, coordinator_epoch)
        self._loads.start(
            index,
            self.store.replay_partition(index),
            loaded.replay_batch,
            lambda: f"{self._install(loaded)} transactional ids",
        )

    def _install(self, loaded: TxnStatePartition) -> int:
        self._cancel_markers(loaded.index)  # a new epoch here: the prepared ones are sent again
        self.state.install(loaded)
        for meta in list(loaded.txns.values()):
            if meta.state in (T.PREPARE_COMMIT, T.PREPARE_ABORT):
                log.info(
                    "completing transaction %s left in %s", meta.transactional_id, meta.state.label
                )
                try:
                    self._complete(meta)
                except StorageError as exc:
                    log.error("could not complete %s: %s", meta.transactional_id, exc)
        return len(loaded.txns)

    def unload_partition(self, index: int) -> None:
        """Stop coordinating partition ``index`` (or loading it): its transactional ids are
        forgotten here, and the markers still being sent for them stop (the next coordinator
        sends them)."""
        self._loads.cancel(index)
        self.state.unload_partition(index)
        self._cancel_markers(index)

    def loading(self) -> bool:
        """Whether a partition is being loaded (ListTransactions answers
        COORDINATOR_LOAD_IN_PROGRESS then, as Kafka's)."""
        return self._loads.any()

    def _cancel_markers(self, index: int) -> None:
        count = self.store.partition_count()
        self.markers.cancel(lambda txn_id: partition_for(txn_id, count) == index)

    def close(self) -> None:
        """Stop loading, stop sending markers and close the connections to other brokers."""
        self._loads.cancel_all()
        self.markers.close()

    # -- InitProducerId -------------------------------------------------------------------

    async def init_producer_id(
        self, txn_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        if not txn_id:
            return ErrorCode.invalid_request, -1, -1
        refused = self.coordinator_error(txn_id)
        if refused is not ErrorCode.none:
            return refused, -1, -1
        if not 0 < timeout_ms <= self.max_timeout:
            return ErrorCode.invalid_transaction_timeout, -1, -1
        self.store.ensure()
        meta = self.state.get(txn_id)
        try:
            if meta is None:
                meta = TxnMetadata(txn_id, await self.producer_ids().next_async(), 0, timeout_ms)
                meta.last_update_timestamp = self.clock()
                self.state.persist(meta)
                code = await self.replicated(txn_id)
                if code is not ErrorCode.none:
                    return code, -1, -1
                return ErrorCode.none, meta.producer_id, meta.producer_epoch
            if producer_id >= 0 and (
                producer_id != meta.producer_id or producer_epoch != meta.producer_epoch
            ):
                code = (
                    ErrorCode.invalid_producer_id_mapping
                    if producer_id != meta.producer_id
                    else ErrorCode.producer_fenced
                )
                return code, -1, -1
            if self._busy(txn_id):
                return ErrorCode.concurrent_transactions, -1, -1  # markers still on their way
            if meta.state in (T.PREPARE_COMMIT, T.PREPARE_ABORT):
                self._complete(meta)  # a retry finishes what a failed write left
                if self._busy(txn_id):
                    return ErrorCode.concurrent_transactions, -1, -1
            if meta.state is T.ONGOING:
                log.info("%s: a new producer instance fences the open transaction", txn_id)
                await self._bump_epoch(meta)
                code = await self._end(meta, commit=False)
                if code is not ErrorCode.none:
                    return code, -1, -1
                if self._busy(txn_id):  # the client retries until they are written
                    return ErrorCode.concurrent_transactions, -1, -1
            await self._bump_epoch(meta)
            meta.state, meta.partitions, meta.timeout_ms = T.EMPTY, set(), timeout_ms
            meta.last_update_timestamp = self.clock()
            self.state.persist(meta)
        except StorageError as exc:
            log.error("InitProducerId %s failed: %s", txn_id, exc)
            return ErrorCode.coordinator_not_available, -1, -1
        except ProducerIdsUnavailableError as exc:
            log.warning("InitProducerId %s: %s", txn_id, exc)
            return ErrorCode.coordinator_load_in_progress, -1, -1
        code = await self.replicated(txn_id)
        if code is not ErrorCode.none:
            return code, -1, -1
        return ErrorCode.none, meta.producer_id, meta.producer_epoch

    async def _bump_epoch(self, meta: TxnMetadata) -> None:
        if meta.producer_epoch >= MAX_EPOCH - 1:
            meta.producer_id, meta.producer_epoch = await self.producer_ids().next_async(), 0
        else:
            meta.producer_epoch += 1

    # -- the transaction ------------------------------------------------------------------

    def _check(self, txn_id: str, producer_id: int, producer_epoch: int) -> TxnMetadata:
        meta = self.state.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping,
                f"producer {producer_id} is not the producer of {txn_id!r}",
            )
        if producer_epoch != meta.producer_epoch:
            raise KafkaError(
                ErrorCode.producer_fenced,
                f"epoch {producer_epoch} of {txn_id!r} is fenced by {meta.producer_epoch}",
            )
        return meta

    def add_partitions(
        self,
        txn_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        wanted = list(partitions)
        try:
            meta = self._check(txn_id, producer_id, producer_epoch)
            if meta.state in (T.PREPARE_COMMIT, T.PREPARE_ABORT):
                raise KafkaError(ErrorCode.concurrent_transactions, "transaction is ending")
        except KafkaError as exc:
            return dict.fromkeys(wanted, exc.code)
        unknown = [tp for tp in wanted if not self.partition_exists(*tp)]
        if unknown:
            return {
                tp: ErrorCode.unknown_topic_or_partition
                if tp in unknown
                else ErrorCode.operation_not_attempted
                for tp in wanted
            }
        now = self.clock()
        if meta.state is not T.ONGOING:
            meta.state, meta.partitions, meta.start_timestamp = T.ONGOING, set(), now
        before = set(meta.partitions)
        meta.partitions.update(wanted)
        meta.last_update_timestamp = now
        try:
            if meta.partitions != before:
                self.state.persist(meta)
        except StorageError:
            meta.partitions = before
            return dict.fromkeys(wanted, ErrorCode.coordinator_not_available)
        return dict.fromkeys(wanted, ErrorCode.none)

    def add_offsets(
        self, txn_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        partition = self.groups.partition_for(group_id)
        codes = self.add_partitions(
            txn_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, partition)]
        )
        return next(iter(codes.values()))

    def check_offset_commit(self, txn_id: str, producer_id: int, producer_epoch: int) -> ErrorCode:
        """Whether a TxnOffsetCommit comes from the current producer of an open transaction."""
        try:
            meta = self._check(txn_id, producer_id, producer_epoch)
        except KafkaError as exc:
            return exc.code
        return ErrorCode.none if meta.state is T.ONGOING else ErrorCode.invalid_txn_state

    async def end_txn(
        self, txn_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """EndTxn: answered once PrepareCommit/PrepareAbort is replicated and the markers of
        the partitions led here are written; markers for other brokers' partitions are sent
        after (Kafka's marker channel), the transaction completing when they are written."""
        refused = self.coordinator_error(txn_id)
        if refused is not ErrorCode.none:
            return refused
        try:
            meta = self._check(txn_id, producer_id, producer_epoch)
        except KafkaError as exc:
            return exc.code
        done, prepared = (
            (T.COMPLETE_COMMIT, T.PREPARE_COMMIT) if commit else (T.COMPLETE_ABORT, T.PREPARE_ABORT)
        )
        try:
            if meta.state is done:
                return ErrorCode.none  # a retry of an EndTxn that succeeded
            if meta.state is prepared:
                if self._busy(txn_id):
                    return ErrorCode.concurrent_transactions  # Kafka's answer to a retry
                self._complete(meta)  # a retry finishes what a failed write left
                return ErrorCode.none
            if meta.state is not T.ONGOING:
                return ErrorCode.invalid_txn_state
            return await self._end(meta, commit=commit)
        except StorageError as exc:
            log.error("EndTxn %s failed: %s", txn_id, exc)
            return ErrorCode.coordinator_not_available

    def _busy(self, txn_id: str) -> bool:
        """Whether ``txn_id``'s transaction is ending: its prepare being replicated, or its
        markers being sent (nothing else may touch it meanwhile)."""
        return txn_id in self._ending or self.markers.pending(txn_id)

    async def _end(self, meta: TxnMetadata, *, commit: bool) -> ErrorCode:
        """Prepare, and once the prepare is replicated, write the markers."""
        meta.state = T.PREPARE_COMMIT if commit else T.PREPARE_ABORT
        meta.last_update_timestamp = self.clock()
        self.state.persist(meta)
        self._ending.add(meta.transactional_id)
        try:
            code = await self.replicated(meta.transactional_id)
        finally:
            self._ending.discard(meta.transactional_id)
        if code is not ErrorCode.none:
            return code  # prepared here: a retry (or the next coordinator) completes it
        txn_id = meta.transactional_id
        if self.state.loaded(txn_id) and self.state.get(txn_id) is meta:  # still coordinated
            self._complete(meta)
        return ErrorCode.none

    def _complete(self, meta: TxnMetadata) -> None:
        """Write the markers of a prepared transaction — to the partitions led here at once,
        to other brokers' through :attr:`markers` — then record it complete."""
        commit = meta.state is T.PREPARE_COMMIT
        txn_id = meta.transactional_id
        coordinator_epoch = self.state.coordinator_epoch(txn_id)
        marker = TxnMarker(meta.producer_id, meta.producer_epoch, commit, coordinator_epoch)
        now = self.clock()
        remote: list[tuple[str, int]] = []
        for topic, index in sorted(meta.partitions):
            code = write_marker(
                self.topics, topic, index, marker, now, self.groups.complete_transaction
            )
            if code is ErrorCode.not_leader_or_follower:
                if self.clustered and self.partition_exists(topic, index):
                    remote.append((topic, index))  # led by another broker
                # (on one node: deleted since, nothing to mark)
            elif code is ErrorCode.kafka_storage_error:
                raise StorageError(f"the marker of {txn_id!r} for {topic}-{index} failed")
            elif code is not ErrorCode.none:
                log.warning("marker of %s for %s-%d refused: %s", txn_id, topic, index, code.name)
        if remote:
            self.markers.send(txn_id, marker, remote, lambda: self._completed(meta, commit))
            return
        self._completed(meta, commit)

    def _completed(self, meta: TxnMetadata, commit: bool) -> None:
        self.groups.complete_transaction(meta.producer_id, commit)
        meta.state = T.COMPLETE_COMMIT if commit else T.COMPLETE_ABORT
        meta.partitions = set()
        meta.last_update_timestamp = self.clock()
        self.state.persist(meta)

    # -- timeouts and admin ---------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Abort transactions open longer than their timeout, fencing their producer; and
        complete those left prepared (a failed write, markers that could not be sent)."""
        now = self.clock()
        aborted = 0
        for meta in self.state.all():
            txn_id = meta.transactional_id
            if self._busy(txn_id):
                continue
            try:
                if meta.state in (T.PREPARE_COMMIT, T.PREPARE_ABORT):
                    self._complete(meta)
                elif meta.state is T.ONGOING and meta.start_timestamp + meta.timeout_ms <= now:
                    log.info(
                        "aborting transaction %s: open for more than %d ms",
                        txn_id,
                        meta.timeout_ms,
                    )
                    await self._bump_epoch(meta)
                    await self._end(meta, commit=False)
                    aborted += 1
            except (StorageError, ProducerIdsUnavailableError) as exc:
                log.error("could not abort %s: %s", txn_id, exc)
        return aborted

    def expire_transactional_ids(self) -> int:
        """Forget the transactional ids idle for ``transactional.id.expiration.ms``: no
        transaction in progress (Empty, CompleteCommit, CompleteAbort) and no update since.
        A tombstone in ``__transaction_state`` keeps them forgotten after a restart (Kafka's
        ``TransactionStateManager.removeExpiredTransactionalIds``); returns how many went."""
        horizon = self.clock() - self.id_expiration_ms
        idle = (T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT)
        expired = 0
        for meta in self.state.all():
            if meta.state not in idle or meta.last_update_timestamp > horizon:
                continue
            key = meta.transactional_id
            try:
                self.state.remove(key)
            except StorageError as exc:
                log.error("could not expire transactional id %s: %s", key, exc)
                continue
            meta.state = T.DEAD
            expired += 1
            log.info(
                "expired transactional id %s: idle for more than %d ms", key, self.id_expiration_ms
            )
        return expired

    def describe(self, txn_id: str) -> TxnMetadata | None:
        """The state of ``txn_id`` (None: unknown)."""
        return self.state.get(txn_id)

    def list(self, states: set[str], producer_ids: set[int]) -> list[TxnMetadata]:
        return [
            m
            for m in self.state.all()
            if (not states or m.state.label in states)
            and (not producer_ids or m.producer_id in producer_ids)
        ]
