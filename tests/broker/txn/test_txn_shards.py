"""The transaction coordinator's state, one shard per ``__transaction_state`` partition,
driven directly (no network)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from sluice.broker.config import BrokerConfig
from sluice.broker.group.coordinator import GroupCoordinator
from sluice.broker.internal_topic import partition_for
from sluice.broker.producer_ids import LocalBlocks, ProducerIdManager
from sluice.broker.topics import TopicManager
from sluice.broker.txn.coordinator import TransactionCoordinator
from sluice.broker.txn.state import TxnState


def test_a_partition_of_transactional_ids_is_loaded_and_unloaded_as_a_unit(
    tmp_path: Path,
) -> None:
    config = BrokerConfig.from_properties({"transaction.state.log.num.partitions": "3"})
    topics = TopicManager(tmp_path, config)
    topics.load()
    topics.create("t", 1, {})
    ids = ProducerIdManager(LocalBlocks(tmp_path))
    groups = GroupCoordinator(topics, config, clock=lambda: 1_000)
    c = TransactionCoordinator(topics, groups, lambda: ids, config, clock=lambda: 1_000)
    c.load()
    # "a" and "c" hash to different partitions of 3 (Java's String.hashCode: 97 and 99).
    assert partition_for("a", 3) != partition_for("c", 3)
    started = {}
    for txn_id in ("a", "c"):
        code, producer_id, epoch = asyncio.run(c.init_producer_id(txn_id, 60_000, -1, -1))
        assert code is ErrorCode.none, code
        started[txn_id] = (producer_id, epoch)
        codes = c.add_partitions(txn_id, producer_id, epoch, [("t", 0)])
        assert codes == {("t", 0): ErrorCode.none}, codes
    index = partition_for("a", 3)
    c.unload_partition(index)
    assert c.describe("a") is None, "the unloaded partition's id is still there"
    assert c.describe("c") is not None, "another partition's id went with it"
    assert c.load_partition(index) == 1
    meta = c.describe("a")
    assert meta is not None and meta.state is TxnState.ONGOING, meta
    assert (meta.producer_id, meta.producer_epoch) == started["a"]
    assert meta.partitions == {("t", 0)}
    topics.close()
