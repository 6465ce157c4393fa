"""The leader's answer to a follower's Fetch (``replica_id >= 0``): records up to the log end
offset, ``diverging_epoch`` when the follower's last fetched epoch and offset do not match the
leader's epochs (KIP-279), OFFSET_OUT_OF_RANGE for an epoch the leader never had, and
NOT_LEADER_OR_FOLLOWER from a broker that follows the partition.

On a real broker process by raw requests; a leader change is made as in
``test_leader_epochs.py`` (the partition's ``leader-epoch`` file, with the broker down). What a
single node cannot show — a partition it follows, a high watermark below the log end — is shown
on an in-process broker whose partition state is set as the cluster member sets it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata_v12

from sluice.broker.log.epochs import LEADER_EPOCH
from sluice.broker.protocol.api_keys import FETCH
from sluice.broker.protocol.codec import make, nested
from sluice.broker.records.batch import iter_headers
from tests.broker.conftest import Wire, make_batch, produce_values
from tests.broker.inprocess import InProcessBroker
from tests.conftest import BrokerProcess, create_topic

pytestmark = pytest.mark.timeout(120)

FOLLOWER = 2
CONSUMER = -1


def fetch_request(
    version: int,
    topic: str | Any,
    fetch_offset: int,
    *,
    replica_id: int,
    last_fetched_epoch: int = -1,
    current_leader_epoch: int = -1,
    max_wait_ms: int = 0,
) -> Any:
    """A Fetch of partition 0 (``topic``: a name below v13, a topic id from v13)."""
    schema = load_request_schema(FETCH, version)
    partition = make(
        nested(schema, "topics", "partitions"),
        partition=0,
        fetch_offset=fetch_offset,
        partition_max_bytes=1 << 20,
        current_leader_epoch=current_leader_epoch,
        last_fetched_epoch=last_fetched_epoch,
        log_start_offset=-1,
    )
    named = {"topic_id": topic} if version >= 13 else {"topic": topic}
    replica = {}
    if version >= 15:
        replica["replica_state"] = make(
            nested(schema, "replica_state"), replica_id=replica_id, replica_epoch=-1
        )
    else:
        replica["replica_id"] = replica_id
    return make(
        schema,
        **replica,
        max_wait=max_wait_ms,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(make(nested(schema, "topics"), **named, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def only_partition(answer: Any) -> Any:
    assert answer.error_code == ErrorCode.none, f"top-level error {answer.error_code}"
    (topic,) = answer.responses
    (partition,) = topic.partitions
    return partition


def batches(records: bytes | None) -> list[tuple[int, int]]:
    """``(base offset, partition leader epoch)`` of each batch of a records field."""
    return [(h.base_offset, h.partition_leader_epoch) for h in iter_headers(records or b"")]


def elect(broker: BrokerProcess, partition_dir: Path, epoch: int) -> None:
    """A new leader epoch for a partition, as a controller's election would give it."""
    assert broker.stop() == 0
    (partition_dir / LEADER_EPOCH).write_text(f"{epoch}\n")
    broker.start()


def topic_id(wire: Wire, topic: str) -> Any:
    answer = wire.request(
        metadata_v12.MetadataRequest(
            topics=(metadata_v12.MetadataRequestTopic(name=topic, topic_id=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    return answer.topics[0].topic_id


def test_a_replica_fetch_gets_the_batches_a_consumer_gets_with_the_same_bounds(
    broker: BrokerProcess,
) -> None:
    topic = create_topic(broker.bootstrap)
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c", b"d"], one_batch_each=True)
    with Wire(broker.bootstrap) as wire:
        follower = only_partition(wire.request(fetch_request(12, topic, 1, replica_id=FOLLOWER)))
        consumer = only_partition(wire.request(fetch_request(12, topic, 1, replica_id=CONSUMER)))
    assert follower.error_code == ErrorCode.none
    assert batches(follower.records) == [(1, 0), (2, 0), (3, 0)]
    assert follower.records == consumer.records, "the batches as stored, for both"
    assert (follower.high_watermark, follower.log_start_offset) == (4, 0)
    assert follower.diverging_epoch.epoch == -1 and follower.diverging_epoch.end_offset == -1


@pytest.mark.parametrize("version", [12, 15])
def test_a_follower_whose_log_diverges_gets_the_leaders_epoch_end_and_no_records(
    broker: BrokerProcess, version: int
) -> None:
    """The leader's log: offsets 0-2 in epoch 0, 3-4 in epoch 3."""
    topic = create_topic(broker.bootstrap)
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c"], one_batch_each=True)
    elect(broker, broker.data_dir / f"{topic}-0", 3)
    produce_values(broker.bootstrap, topic, [b"d", b"e"], one_batch_each=True)
    with Wire(broker.bootstrap) as wire:
        name = topic_id(wire, topic) if version >= 13 else topic

        def answer(offset: int, last_epoch: int, *, current: int = 3) -> Any:
            request = fetch_request(
                version,
                name,
                offset,
                replica_id=FOLLOWER,
                last_fetched_epoch=last_epoch,
                current_leader_epoch=current,
            )
            return only_partition(wire.request(request))

        # an epoch the leader never had (1): its log holds epoch 0 up to 3, then epoch 3
        diverged = answer(2, 1)
        assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 3)
        assert diverged.error_code == ErrorCode.none and not diverged.records
        assert diverged.high_watermark == 5
        # epoch 0 past where the leader's epoch 0 ends
        past = answer(4, 0)
        assert (past.diverging_epoch.epoch, past.diverging_epoch.end_offset) == (0, 3)
        assert not past.records
        # no divergence: epoch 0 up to its end, then the records of epoch 3
        matching = answer(3, 0)
        assert matching.diverging_epoch.epoch == -1 and batches(matching.records) == [
            (3, 3),
            (4, 3),
        ]
        assert batches(answer(1, 0).records) == [(1, 0), (2, 0), (3, 3), (4, 3)]
        # an epoch newer than any of the leader's: out of range, as Kafka answers
        assert answer(5, 4, current=-1).error_code == ErrorCode.offset_out_of_range
        # the epoch check comes first
        assert answer(2, 1, current=2).error_code == ErrorCode.fenced_leader_epoch
        # a consumer's fetch is not checked against epochs of batches
        consumer = fetch_request(version, name, 4, replica_id=CONSUMER, last_fetched_epoch=0)
        assert batches(only_partition(wire.request(consumer)).records) == [(4, 3)]


def test_a_diverging_epoch_is_answered_without_waiting(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap)
    produce_values(broker.bootstrap, topic, [b"a"])
    elect(broker, broker.data_dir / f"{topic}-0", 2)
    # the fetch would wait a minute for data; the socket gives up after 20 s
    with Wire(broker.bootstrap, timeout=20) as wire:
        request = fetch_request(
            12, topic, 5, replica_id=FOLLOWER, last_fetched_epoch=1, max_wait_ms=60_000
        )
        started = time.monotonic()
        partition = only_partition(wire.request(request))
        waited = time.monotonic() - started
    assert (partition.diverging_epoch.epoch, partition.diverging_epoch.end_offset) == (0, 1)
    assert waited < 20


def test_a_fetch_of_a_followed_partition_is_not_leader_or_follower(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path / "data") as node:
        topic = node.broker.topics.create("followed", 1, {})
        partition = topic.partitions[0]
        partition.log.append(bytearray(make_batch([b"a"])), now_ms=1_000)
        partition.is_leader = False  # what the cluster member sets for a followed partition
        for replica_id in (CONSUMER, FOLLOWER):
            answer = only_partition(
                node.request(fetch_request(12, "followed", 0, replica_id=replica_id))
            )
            assert answer.error_code == ErrorCode.not_leader_or_follower, (
                f"replica {replica_id}: expected NOT_LEADER_OR_FOLLOWER, got {answer.error_code}"
            )
            assert not answer.records


def test_a_follower_reads_past_the_high_watermark_a_consumer_stops_at(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path / "data") as node:
        partition = node.broker.topics.create("replicated", 1, {}).partitions[0]
        for value in (b"a", b"b", b"c"):
            partition.log.append(bytearray(make_batch([value])), now_ms=1_000)
        partition.log.set_high_watermark(1)  # what the ISR has, as a leader's replication sets it
        consumer = only_partition(node.request(fetch_request(12, "replicated", 0, replica_id=-1)))
        follower = only_partition(node.request(fetch_request(12, "replicated", 0, replica_id=7)))
    assert batches(consumer.records) == [(0, 0)]
    assert batches(follower.records) == [(0, 0), (1, 0), (2, 0)]
    assert consumer.high_watermark == follower.high_watermark == 1
