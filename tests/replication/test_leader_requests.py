"""What clients and followers get from a partition leader (and from a replica that does not
lead): Produce with ``acks=all`` answered once the followers' replica fetches carried the batch,
NOT_ENOUGH_REPLICAS, timeouts, NOT_LEADER_OR_FOLLOWER, ListOffsets while the high watermark
lags. A real broker answers through ``Server.handle`` in the test's event loop, so that a
produce request can wait while the followers' fetches come in; the partition's leadership is
given to it as the cluster member would, with an in-memory partition state."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.delete_records.v2 import request as delete_records_v2
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.offset_for_leader_epoch.v4 import request as ofle_v4
from kio.schema.produce.v9 import request as produce_v9

from sluice.broker.broker import Broker
from sluice.broker.cluster.model import PartitionState, Versioned
from sluice.broker.config import BrokerConfig
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.fetch_response import OutgoingFrame
from sluice.broker.records.codec import Record, encode_batch
from sluice.broker.replication.leadership import Leadership
from sluice.broker.server import Server
from sluice.broker.topics import Partition
from tests.broker.conftest import decode_response, encode_request
from tests.replication.isr_store import MemoryIsrStore

TOPIC = "orders"
TIMESTAMP = 1_700_000_000_000


class Node:
    """A broker answering requests in this event loop, as its connections would."""

    def __init__(self, data_dir: Path) -> None:
        config = BrokerConfig.from_properties(
            {"log.dirs": str(data_dir), "replica.lag.time.max.ms": "10000"}
        )
        self.broker = Broker(config)
        self.server = Server(self.broker)
        self.client = Connection("/127.0.0.1")
        self._correlation = 0

    @property
    def leader(self) -> int:
        return self.broker.node_id

    async def request(self, body: Any) -> Any:
        self._correlation += 1
        sent = self._correlation
        frame = encode_request(body, sent)[4:]
        answer = await self.server.handle(bytearray(frame), self.client)
        if isinstance(answer, asyncio.Future):  # a deferred response (acks=all)
            answer = await answer
        if isinstance(answer, OutgoingFrame):
            outgoing, answer = answer, None
            try:
                answer = outgoing.to_bytes()
            finally:
                outgoing.close()
        assert answer is not None, f"no response to {body}"
        correlation, response = decode_response(body.__api_key__, body.__version__, answer[4:])
        assert correlation == sent, f"answer {correlation} to request {sent}"
        return response

    def lead(
        self,
        isr: Sequence[int] | None = None,
        min_isr: int = 1,
        followers: int = 2,
        epoch: int = 0,
    ) -> tuple[Partition, Leadership, MemoryIsrStore]:
        """Lead partition 0 of the topic (created unless it exists) in leader epoch ``epoch``
        with ``followers`` other replicas, as the cluster member does on an election (the high
        watermark from a checkpoint: 0)."""
        if self.broker.topics.get(TOPIC) is None:
            self.broker.topics.create(TOPIC, 1, {"min.insync.replicas": str(min_isr)})
        partition = self.broker.topics.partition(TOPIC, 0)
        assert partition is not None
        replicas = tuple(range(self.leader, self.leader + followers + 1))
        partition.log.set_high_watermark(0)
        partition.log.become_leader(epoch)
        state = Versioned(
            PartitionState(self.leader, epoch, tuple(isr or replicas), controller_epoch=1), 0
        )
        store = MemoryIsrStore(state, (TOPIC, 0))
        leadership = Leadership(
            partition,
            self.leader,
            replicas,
            state,
            self.broker.config,
            self.broker.clock,
            store,
            lambda: replicas,
        )
        partition.leadership = leadership
        return partition, leadership, store


@contextlib.asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[Node]:
    node = Node(tmp_path / "data")
    node.broker.open()
    try:
        yield node
    finally:
        await node.broker.close()


def batch(*values: bytes, timestamp: int = TIMESTAMP) -> bytes:
    records = [Record(i, 0, None, v) for i, v in enumerate(values)]
    return encode_batch(
        base_offset=0,
        records=records,
        compression=0,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
    )


def produce(
    *values: bytes, acks: int = -1, timeout_ms: int = 10_000, timestamp: int = TIMESTAMP
) -> Any:
    return produce_v9.ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=timedelta(milliseconds=timeout_ms),
        topic_data=(
            produce_v9.TopicProduceData(
                name=TOPIC,
                partition_data=(
                    produce_v9.PartitionProduceData(
                        index=0, records=batch(*values, timestamp=timestamp)
                    ),
                ),
            ),
        ),
    )


def fetch(offset: int, replica_id: int = -1) -> Any:
    return fetch_v12.FetchRequest(
        replica_id=replica_id,
        max_wait=timedelta(0),
        min_bytes=0,
        topics=(
            fetch_v12.FetchTopic(
                topic=TOPIC,
                partitions=(
                    fetch_v12.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def list_offsets(timestamp: int, replica_id: int = -1) -> Any:
    return list_offsets_v7.ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=0,
        topics=(
            list_offsets_v7.ListOffsetsTopic(
                name=TOPIC,
                partitions=(
                    list_offsets_v7.ListOffsetsPartition(
                        partition_index=0, current_leader_epoch=-1, timestamp=timestamp
                    ),
                ),
            ),
        ),
    )


def offset_for_leader_epoch(replica_id: int) -> Any:
    return ofle_v4.OffsetForLeaderEpochRequest(
        replica_id=replica_id,
        topics=(
            ofle_v4.OffsetForLeaderTopic(
                topic=TOPIC,
                partitions=(
                    ofle_v4.OffsetForLeaderPartition(
                        partition=0, current_leader_epoch=-1, leader_epoch=0
                    ),
                ),
            ),
        ),
    )


def delete_records(offset: int) -> Any:
    return delete_records_v2.DeleteRecordsRequest(
        topics=(
            delete_records_v2.DeleteRecordsTopic(
                name=TOPIC,
                partitions=(
                    delete_records_v2.DeleteRecordsPartition(partition_index=0, offset=offset),
                ),
            ),
        ),
        timeout=timedelta(seconds=5),
    )


def produced(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


def fetched(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def listed(response: Any) -> Any:
    (topic,) = response.topics
    (partition,) = topic.partitions
    return partition


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_acks_all_is_answered_once_every_in_sync_follower_fetched_the_batch(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            partition, _, _ = node.lead()
            f1, f2 = node.leader + 1, node.leader + 2
            answer = asyncio.create_task(node.request(produce(b"a", b"b", b"c")))
            await settle()
            assert partition.log.log_end_offset == 3
            consumer = fetched(await node.request(fetch(0)))
            assert (consumer.high_watermark, bool(consumer.records)) == (0, False), (
                f"a consumer read past the high watermark: {consumer}"
            )
            replica = fetched(await node.request(fetch(0, replica_id=f1)))
            assert replica.error_code == ErrorCode.none and replica.records, (
                f"a follower did not get the uncommitted batch: {replica}"
            )
            await node.request(fetch(3, replica_id=f1))
            await settle()
            assert not answer.done(), "acks=all answered before follower 3 had the batch"
            await node.request(fetch(3, replica_id=f2))
            result = produced(await asyncio.wait_for(answer, 5))
            assert (result.error_code, result.base_offset) == (ErrorCode.none, 0), result
            assert fetched(await node.request(fetch(0))).high_watermark == 3
            # the request metrics tell the followers' fetches from the consumers', as Kafka's
            metrics = node.server.requests
            assert (metrics.count("FetchFollower"), metrics.count("FetchConsumer")) == (3, 2)
            assert metrics.count("Produce") == 1

    asyncio.run(scenario())


def test_acks_all_times_out_and_the_batch_stays(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            partition, _, _ = node.lead()
            result = produced(await node.request(produce(b"a", timeout_ms=100)))
            assert result.error_code == ErrorCode.request_timed_out, result
            assert result.error_message and "in time" in result.error_message, result
            assert partition.log.log_end_offset == 1
            assert partition.log.high_watermark == 0

    asyncio.run(scenario())


def test_acks_all_to_a_too_small_isr_is_refused_before_the_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            partition, _, _ = node.lead(isr=(node.leader,), min_isr=2)
            result = produced(await node.request(produce(b"a")))
            assert result.error_code == ErrorCode.not_enough_replicas, result
            assert result.error_message == (
                f"The size of the current ISR Set({node.leader}) is insufficient to satisfy "
                f"the min.isr requirement of 2 for partition {TOPIC}-0"
            ), result
            assert partition.log.log_end_offset == 0, "a refused batch was appended"
            one = produced(await node.request(produce(b"b", acks=1)))
            assert one.error_code == ErrorCode.none, "acks=1 is not held to min.insync.replicas"
            assert partition.log.high_watermark == 0, "it is not committed below the minimum"

    asyncio.run(scenario())


def test_acks_1_does_not_wait_for_the_followers(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            partition, _, _ = node.lead()
            result = produced(await asyncio.wait_for(node.request(produce(b"a", acks=1)), 5))
            assert (result.error_code, result.base_offset) == (ErrorCode.none, 0)
            assert partition.log.high_watermark == 0

    asyncio.run(scenario())


def test_a_leader_that_resigns_answers_the_waiting_writes_not_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            partition, leadership, _ = node.lead()
            answer = asyncio.create_task(node.request(produce(b"a")))
            await settle()
            partition.is_leader = False
            leadership.resign()
            partition.leadership = None
            result = produced(await asyncio.wait_for(answer, 5))
            assert result.error_code == ErrorCode.not_leader_or_follower, result

    asyncio.run(scenario())


def test_a_replica_that_does_not_lead_sends_clients_to_the_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            node.broker.topics.create(TOPIC, 1, {})
            partition = node.broker.topics.partition(TOPIC, 0)
            assert partition is not None
            await node.request(produce(b"a", acks=1))
            partition.is_leader = False
            not_leader = ErrorCode.not_leader_or_follower
            assert produced(await node.request(produce(b"b"))).error_code == not_leader
            assert listed(await node.request(list_offsets(-1))).error_code == not_leader
            debug = listed(await node.request(list_offsets(-2, replica_id=-2)))
            assert (debug.error_code, debug.offset) == (ErrorCode.none, 0), (
                "the debugging replica id may read a follower's offsets"
            )
            for asker in (-1, node.leader + 1):
                answer = await node.request(offset_for_leader_epoch(asker))
                assert listed(answer).error_code == not_leader, f"replica id {asker}"
            assert listed(await node.request(delete_records(1))).error_code == not_leader
            assert partition.log.log_end_offset == 1 and partition.log.log_start_offset == 0

    asyncio.run(scenario())


def test_list_offsets_waits_for_the_high_watermark_to_reach_the_new_epoch(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            node.broker.topics.create(TOPIC, 1, {})
            await node.request(produce(b"a", b"b", acks=1))  # led by another broker before
            node.lead(followers=1, epoch=1)
            lagging = listed(await node.request(list_offsets(-1)))
            assert lagging.error_code == ErrorCode.offset_not_available, lagging
            found = listed(await node.request(list_offsets(TIMESTAMP)))
            assert found.error_code == ErrorCode.offset_not_available, found
            earliest = listed(await node.request(list_offsets(-2)))
            assert (earliest.error_code, earliest.offset) == (ErrorCode.none, 0)
            await node.request(fetch(2, replica_id=node.leader + 1))
            latest = listed(await node.request(list_offsets(-1)))
            assert (latest.error_code, latest.offset, latest.leader_epoch) == (
                ErrorCode.none,
                2,
                1,
            ), latest
            later = TIMESTAMP + 1_000
            await node.request(produce(b"c", acks=1, timestamp=later))  # offset 2, uncommitted
            newest = listed(await node.request(list_offsets(-3)))
            assert (newest.error_code, newest.offset) == (ErrorCode.none, -1), (
                f"an uncommitted offset was told: {newest}"
            )
            assert listed(await node.request(list_offsets(later))).offset == -1
            found = listed(await node.request(list_offsets(TIMESTAMP)))
            assert (found.error_code, found.offset) == (ErrorCode.none, 0), found

    asyncio.run(scenario())
