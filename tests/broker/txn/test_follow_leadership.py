"""The transaction coordinator in a cluster (driven directly, no network): only the ids of the
partitions led here are coordinated, markers carry the coordinator epoch, and producer ids come
from a block source claimed off the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from kio.schema.errors import ErrorCode

from sluice.broker.cluster.model import PartitionState, Versioned
from sluice.broker.config import BrokerConfig
from sluice.broker.group.coordinator import GroupCoordinator
from sluice.broker.internal_topic import partition_for
from sluice.broker.log.markers import decode_marker
from sluice.broker.producer_ids import ProducerIdManager, ProducerIdsUnavailableError
from sluice.broker.records.batch import iter_headers
from sluice.broker.replication.leadership import Leadership
from sluice.broker.topics import TopicManager
from sluice.broker.txn.coordinator import TXN_TOPIC, TransactionCoordinator
from sluice.broker.txn.state import TxnState

PARTITIONS = 3


class Blocks:
    """A blocking block source, as the cluster's store is: records the thread of each claim."""

    blocking = True

    def __init__(self, size: int = 2, fail: bool = False) -> None:
        self.size = size
        self.fail = fail
        self.next = 5000
        self.threads: list[int] = []

    def claim(self) -> tuple[int, int]:
        self.threads.append(threading.get_ident())
        if self.fail:
            raise ProducerIdsUnavailableError("store unreachable")
        first, self.next = self.next, self.next + self.size
        return first, self.next


class NoIsrChanges:
    """An ISR store for a partition with one replica: no ISR change is ever proposed."""

    async def propose_isr(
        self, topic: str, partition: int, state: Versioned[PartitionState], isr: tuple[int, ...]
    ) -> Versioned[PartitionState] | None:
        return None


def lead(topics: TopicManager, config: BrokerConfig, topic: str, epoch: int) -> None:
    """Make this broker (id 1, the only replica) the leader of every partition of ``topic``,
    as the cluster member does on an election."""
    found = topics.get(topic)
    assert found is not None
    for partition in found.partitions.values():
        partition.log.become_leader(epoch)
        state = Versioned(PartitionState(1, epoch, (1,), 1), 0)
        partition.leadership = Leadership(
            partition, 1, (1,), state, config, lambda: 1_000, NoIsrChanges(), lambda: {1}
        )
        partition.is_leader = True


class Routes:
    def __init__(self, topics: TopicManager) -> None:
        self.topics = topics

    def leader(self, topic: str, index: int) -> tuple[int, str, int] | None:
        return None

    def exists(self, topic: str, index: int) -> bool:
        return self.topics.partition(topic, index) is not None


def test_only_loaded_ids_are_coordinated_and_markers_carry_the_coordinator_epoch(
    tmp_path: Path,
) -> None:
    config = BrokerConfig.from_properties({"transaction.state.log.num.partitions": str(PARTITIONS)})
    topics = TopicManager(tmp_path, config)
    topics.load()
    topics.create(TXN_TOPIC, PARTITIONS, {"cleanup.policy": "compact"})
    topics.create("t", 1, {})
    blocks = Blocks()
    ids = ProducerIdManager(blocks)
    groups = GroupCoordinator(topics, config, clock=lambda: 1_000)
    c = TransactionCoordinator(topics, groups, lambda: ids, config, clock=lambda: 1_000)
    c.follow_leadership(Routes(topics))
    lead(topics, config, TXN_TOPIC, 7)
    lead(topics, config, "t", 3)
    txn = "a"
    index = partition_for(txn, PARTITIONS)

    async def body() -> None:
        refused = await c.init_producer_id(txn, 60_000, -1, -1)
        assert refused == (ErrorCode.not_coordinator, -1, -1)
        assert c.coordinator_error(txn) is ErrorCode.not_coordinator
        assert await c.end_txn(txn, 0, 0, True) is ErrorCode.not_coordinator
        c.load_partition(index, coordinator_epoch=7)
        code, producer_id, epoch = await c.init_producer_id(txn, 60_000, -1, -1)
        assert code is ErrorCode.none and producer_id == 5000, (code, producer_id)
        assert blocks.threads and threading.get_ident() not in blocks.threads, (
            "a blocking source was claimed on the event loop's thread"
        )
        assert c.add_partitions(txn, producer_id, epoch, [("t", 0), ("gone", 0)]) == {
            ("t", 0): ErrorCode.operation_not_attempted,
            ("gone", 0): ErrorCode.unknown_topic_or_partition,
        }
        assert c.add_partitions(txn, producer_id, epoch, [("t", 0)]) == {("t", 0): ErrorCode.none}
        assert await c.end_txn(txn, producer_id, epoch, True) is ErrorCode.none
        meta = c.describe(txn)
        assert meta is not None and meta.state is TxnState.COMPLETE_COMMIT
        c.unload_partition(index)
        assert c.coordinator_error(txn) is ErrorCode.not_coordinator
        assert c.describe(txn) is None

    asyncio.run(asyncio.wait_for(body(), 10))
    partition = topics.partition("t", 0)
    assert partition is not None
    data = partition.log.read(0, 1 << 20).data
    markers = [h for h in iter_headers(data) if h.is_control]
    assert len(markers) == 1
    assert decode_marker(data, markers[0]).coordinator_epoch == 7
    topics.close()


def test_a_block_source_that_fails_raises_and_a_new_block_is_claimed_when_one_is_used() -> None:
    async def body() -> None:
        ids = ProducerIdManager(Blocks(size=2))
        assert [await ids.next_async() for _ in range(5)] == [5000, 5001, 5002, 5003, 5004]
        failing = ProducerIdManager(Blocks(fail=True))
        try:
            await failing.next_async()
        except ProducerIdsUnavailableError:
            pass
        else:
            raise AssertionError("a failed claim handed out an id")

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_partition_loads_in_the_background_and_finishes_its_prepared_transaction(
    tmp_path: Path,
) -> None:
    """A ``__transaction_state`` partition led here is replayed in a task: its ids are
    COORDINATOR_LOAD_IN_PROGRESS (InitProducerId, EndTxn, ListTransactions too) until it is
    loaded; then a transaction found prepared is completed, with the new coordinator epoch."""
    config = BrokerConfig.from_properties({"transaction.state.log.num.partitions": str(PARTITIONS)})
    topics = TopicManager(tmp_path, config)
    topics.load()
    topics.create(TXN_TOPIC, PARTITIONS, {"cleanup.policy": "compact"})
    topics.create("t", 1, {})
    ids = ProducerIdManager(Blocks(size=1000))
    groups = GroupCoordinator(topics, config, clock=lambda: 1_000)
    c = TransactionCoordinator(topics, groups, lambda: ids, config, clock=lambda: 1_000)
    c.follow_leadership(Routes(topics))
    lead(topics, config, TXN_TOPIC, 7)
    lead(topics, config, "t", 3)
    txn = "a"
    index = partition_for(txn, PARTITIONS)
    others = [f"other-{i}" for i in range(200) if partition_for(f"other-{i}", PARTITIONS) == index]

    async def body() -> None:
        c.load_partition(index, coordinator_epoch=7)
        for other in others:  # batches enough for several slices
            assert (await c.init_producer_id(other, 60_000, -1, -1))[0] is ErrorCode.none
        code, producer_id, epoch = await c.init_producer_id(txn, 60_000, -1, -1)
        assert code is ErrorCode.none
        assert c.add_partitions(txn, producer_id, epoch, [("t", 0)]) == {("t", 0): ErrorCode.none}
        meta = c.describe(txn)
        assert meta is not None
        meta.state = TxnState.PREPARE_COMMIT  # written, and then the broker died
        c.state.persist(meta)
        c.unload_partition(index)

        c.begin_loading(index, coordinator_epoch=9)
        assert c.coordinator_error(txn) is ErrorCode.coordinator_load_in_progress
        assert (await c.init_producer_id(txn, 60_000, -1, -1))[0] is (
            ErrorCode.coordinator_load_in_progress
        )
        assert c.loading()
        for _ in range(100 * len(others)):  # bounded
            if not c.loading():
                break
            await asyncio.sleep(0)
        assert c.coordinator_error(txn) is ErrorCode.none and not c.loading()
        loaded = c.describe(txn)
        assert loaded is not None and loaded.state is TxnState.COMPLETE_COMMIT, loaded

    asyncio.run(asyncio.wait_for(body(), 10))
    partition = topics.partition("t", 0)
    assert partition is not None
    data = partition.log.read(0, 1 << 20).data
    markers = [h for h in iter_headers(data) if h.is_control]
    assert [decode_marker(data, h).coordinator_epoch for h in markers] == [9], (
        "the prepared transaction was not completed by the coordinator that loaded it"
    )
    topics.close()
