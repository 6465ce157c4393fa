"""KIP-392 in the Fetch handler: a leader with ``replica.selector.class`` sends a consumer of
another rack to an in-sync follower of its rack (``preferred_read_replica``, no records), and a
follower serves consumers' Fetch v11+ up to its own high watermark, never beyond, with Kafka's
leader-epoch and offset checks. A real broker answers through ``Server.handle``
(:class:`tests.replication.test_leader_requests.Node`); the cluster it would know from
ZooKeeper is an in-memory metadata cache."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v10 import request as fetch_v10
from kio.schema.fetch.v12 import request as fetch_v12

from sluice.broker.cluster.metadata_cache import ClusterMetadata
from sluice.broker.cluster.model import (
    BrokerRegistration,
    Endpoint,
    LiveBroker,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
    Versioned,
)
from sluice.broker.config import BrokerConfig
from sluice.broker.records.batch import iter_headers
from sluice.broker.replication.replica_selector import RACK_AWARE_SELECTOR
from sluice.broker.topics import Partition
from tests.replication.test_leader_requests import TOPIC, Node, produce, serving

RACKS = {0: "a", 1: "b", 2: "c"}
"""The racks of brokers 0 (the node under test), 1 and 2."""


def know_cluster(node: Node, leader: int, isr: Sequence[int], epoch: int = 3) -> None:
    """Give the node the metadata cache a cluster member would hold: brokers 0-2 in racks
    a-c, the topic's partition 0 led by ``leader`` in ``epoch``."""
    cache = ClusterMetadata()
    for broker_id, rack in RACKS.items():
        registration = BrokerRegistration(
            broker_id,
            (Endpoint("PLAINTEXT", "127.0.0.1", 9092 + broker_id),),
            {"PLAINTEXT": "PLAINTEXT"},
            rack=rack,
        )
        cache.brokers[broker_id] = LiveBroker(registration, epoch=broker_id + 1)
    state = PartitionState(leader, epoch, tuple(isr), controller_epoch=1)
    cache.set_state(TOPIC, 0, Versioned(state, 0))
    node.broker.cluster = SimpleNamespace(cache=cache)  # type: ignore[assignment]


def select_replicas(node: Node, selector: str | None) -> None:
    props = {"log.dirs": str(node.broker.data_dir)}
    if selector is not None:
        props["replica.selector.class"] = selector
    node.broker.config = BrokerConfig.from_properties(props)


async def follower_with(node: Node, records: int, high_watermark: int) -> Partition:
    """Partition 0 written with ``records`` one-record batches, then followed by this node
    with ``high_watermark`` (what the leader told it)."""
    node.broker.topics.create(TOPIC, 1, {})
    for i in range(records):
        await node.request(produce(f"r{i}".encode(), acks=1))
    partition = node.broker.topics.partition(TOPIC, 0)
    assert partition is not None
    partition.is_leader = False
    partition.log.set_high_watermark(high_watermark)
    return partition


def fetch(offset: int, *, rack: str = "", epoch: int = -1, replica_id: int = -1) -> Any:
    return fetch_v12.FetchRequest(
        replica_id=replica_id,
        max_wait=timedelta(0),
        min_bytes=0,
        rack_id=rack,
        topics=(
            fetch_v12.FetchTopic(
                topic=TOPIC,
                partitions=(
                    fetch_v12.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def fetch_v10_request(offset: int) -> Any:
    return fetch_v10.FetchRequest(
        replica_id=-1,
        max_wait=timedelta(0),
        min_bytes=0,
        topics=(
            fetch_v10.FetchTopic(
                topic=TOPIC,
                partitions=(
                    fetch_v10.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def answered(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def offsets(partition: Any) -> list[int]:
    return [h.base_offset for h in iter_headers(partition.records or b"")]


def test_a_follower_serves_consumers_up_to_its_high_watermark_only(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            await follower_with(node, records=3, high_watermark=1)
            know_cluster(node, leader=1, isr=(0, 1, 2))
            got = answered(await node.request(fetch(0, rack="a", epoch=3)))
            assert (got.error_code, got.high_watermark, offsets(got)) == (
                ErrorCode.none,
                1,
                [0],
            ), f"expected offset 0 only (the follower's high watermark is 1), got {got}"
            assert got.preferred_read_replica == -1
            for beyond in (1, 2, 3):  # at or past the high watermark, within the log: nothing
                got = answered(await node.request(fetch(beyond)))
                assert (got.error_code, offsets(got)) == (ErrorCode.none, []), (beyond, got)
            past_end = answered(await node.request(fetch(4)))
            assert past_end.error_code == ErrorCode.offset_out_of_range, past_end

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("epoch", "code"),
    [(2, ErrorCode.fenced_leader_epoch), (4, ErrorCode.unknown_leader_epoch), (-1, 0), (3, 0)],
)
def test_a_follower_checks_the_consumers_leader_epoch(
    tmp_path: Path, epoch: int, code: int
) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            await follower_with(node, records=1, high_watermark=1)
            know_cluster(node, leader=1, isr=(0, 1, 2), epoch=3)
            got = answered(await node.request(fetch(0, epoch=epoch)))
            assert got.error_code == code, f"current_leader_epoch {epoch}: {got}"

    asyncio.run(scenario())


def test_a_follower_sends_back_to_the_leader_what_it_may_not_serve(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            await follower_with(node, records=1, high_watermark=1)
            not_leader = ErrorCode.not_leader_or_follower
            know_cluster(node, leader=1, isr=(1, 2))  # out of the ISR
            assert answered(await node.request(fetch(0))).error_code == not_leader
            know_cluster(node, leader=1, isr=(0, 1, 2))
            old = answered(await node.request(fetch_v10_request(0)))
            assert old.error_code == not_leader, f"Fetch v10 has no rack: leader only, got {old}"
            replica = answered(await node.request(fetch(0, replica_id=2)))
            assert replica.error_code == not_leader, replica
            assert answered(await node.request(fetch(0))).error_code == ErrorCode.none

    asyncio.run(scenario())


def leader_with_followers(node: Node, fetched: dict[int, int]) -> Partition:
    partition, leadership, _ = node.lead(followers=2, epoch=3)
    for follower, offset in fetched.items():
        leadership.follower_fetched(follower, offset, node.broker.clock())
    return partition


@pytest.mark.parametrize(
    ("selector", "rack", "isr", "preferred"),
    [
        (RACK_AWARE_SELECTOR, "b", (0, 1, 2), 1),  # the follower of the consumer's rack
        (RACK_AWARE_SELECTOR, "c", (0, 1, 2), 2),
        (RACK_AWARE_SELECTOR, "a", (0, 1, 2), -1),  # the leader is in the rack
        (RACK_AWARE_SELECTOR, "z", (0, 1, 2), -1),  # no replica in the rack
        (RACK_AWARE_SELECTOR, "", (0, 1, 2), -1),  # no client.rack
        (RACK_AWARE_SELECTOR, "b", (0, 2), -1),  # the follower of the rack is out of the ISR
        (None, "b", (0, 1, 2), -1),  # no selector: the leader serves
        ("", "b", (0, 1, 2), -1),
    ],
)
def test_the_leader_names_the_preferred_read_replica(
    tmp_path: Path, selector: str | None, rack: str, isr: tuple[int, ...], preferred: int
) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            assert node.leader == 0
            select_replicas(node, selector)
            partition = leader_with_followers(node, {})
            await node.request(produce(b"a", acks=1))
            partition.leadership.follower_fetched(1, 1, node.broker.clock())  # type: ignore[union-attr]
            partition.leadership.follower_fetched(2, 1, node.broker.clock())  # type: ignore[union-attr]
            know_cluster(node, leader=0, isr=isr)
            partition.leadership.update_state(  # type: ignore[union-attr]
                Versioned(PartitionState(0, 3, isr, controller_epoch=1), 1)
            )
            got = answered(await node.request(fetch(0, rack=rack, epoch=3)))
            assert got.error_code == ErrorCode.none, got
            assert got.preferred_read_replica == preferred, (
                f"rack {rack!r}, isr {isr}, selector {selector}: expected {preferred}, got {got}"
            )
            expected_records = [] if preferred >= 0 else [0]
            assert offsets(got) == expected_records, got
            assert got.high_watermark == 1, got

    asyncio.run(scenario())


def test_the_leader_keeps_a_follower_behind_the_fetch_offset(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            select_replicas(node, RACK_AWARE_SELECTOR)
            partition, leadership, _ = node.lead(followers=2, min_isr=1, epoch=3)
            await node.request(produce(b"a", acks=1))
            await node.request(produce(b"b", acks=1))
            leadership.follower_fetched(1, 1, node.broker.clock())  # rack b: ends at offset 1
            know_cluster(node, leader=0, isr=(0, 1, 2))
            at_2 = answered(await node.request(fetch(2, rack="b")))
            assert (at_2.preferred_read_replica, offsets(at_2)) == (-1, []), (
                f"follower 1 ends at offset 1: the leader serves offset 2, got {at_2}"
            )
            at_0 = answered(await node.request(fetch(0, rack="b")))
            assert at_0.preferred_read_replica == 1, at_0
            assert partition.bytes_out == 0, "no records were sent"

    asyncio.run(scenario())


def test_a_broker_no_longer_a_replica_answers_not_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            await follower_with(node, records=1, high_watermark=1)
            node.broker.topics.create("other", 1, {})  # hosted here, unlike orders-1
            know_cluster(node, leader=1, isr=(0, 1, 2))
            cache = node.broker.cluster.cache  # type: ignore[union-attr]
            moved = {0: ReplicaAssignment((0, 1, 2)), 1: ReplicaAssignment((1, 2))}
            cache.assignments[TOPIC] = Versioned(TopicAssignment(moved, uuid.uuid4()), 0)
            request = fetch(0)
            request = dataclasses.replace(
                request,
                topics=(
                    dataclasses.replace(
                        request.topics[0],
                        partitions=(
                            dataclasses.replace(request.topics[0].partitions[0], partition=1),
                        ),
                    ),
                ),
            )
            got = answered(await node.request(request))
            assert got.error_code == ErrorCode.not_leader_or_follower, (
                f"partition 1 is the cluster's but not hosted here: expected "
                f"NOT_LEADER_OR_FOLLOWER (the client asks its metadata again), got {got}"
            )
            cache.assignments.clear()
            unknown = answered(await node.request(request))
            assert unknown.error_code == ErrorCode.unknown_topic_or_partition, unknown

    asyncio.run(scenario())


def test_the_leader_keeps_a_follower_whose_log_starts_after_the_fetch_offset(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as node:
            select_replicas(node, RACK_AWARE_SELECTOR)
            _, leadership, _ = node.lead(followers=2, min_isr=1, epoch=3)
            await node.request(produce(b"a", acks=1))
            await node.request(produce(b"b", acks=1))
            # follower 2 (rack c) has offset 1 on, its retention having deleted offset 0
            leadership.follower_fetched(2, 2, node.broker.clock(), log_start_offset=1)
            know_cluster(node, leader=0, isr=(0, 1, 2))
            at_0 = answered(await node.request(fetch(0, rack="c")))
            assert (at_0.error_code, at_0.preferred_read_replica) == (ErrorCode.none, -1), (
                f"follower 2 lacks offset 0: the leader serves it, got {at_0}"
            )
            at_1 = answered(await node.request(fetch(1, rack="c")))
            assert at_1.preferred_read_replica == 2, at_1

    asyncio.run(scenario())
