"""Leader epochs on a real broker (KIP-101/320): batches stamped on disk, the
``leader-epoch-checkpoint`` across restarts, OffsetForLeaderEpoch and ListOffsets answering and
fencing by raw requests, a log written before epochs, and kafka-python and librdkafka consumers
validating their positions after a leader change.

A leader change on one node is made as a controller would make it: with the broker down, the
partition's ``leader-epoch`` file gets a newer epoch (the broker reads it at start).
"""

from __future__ import annotations

import gc
import logging
import struct
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.offset_for_leader_epoch.v2 import request as ofle_v2
from kio.schema.offset_for_leader_epoch.v4 import request as ofle_v4

from sluice.broker.log.epochs import LEADER_EPOCH, LEADER_EPOCH_CHECKPOINT
from sluice.broker.records.batch import iter_headers
from tests.broker.conftest import Wire, produce_values, read_partition
from tests.conftest import BrokerProcess, create_topic
from tests.platform.scrape import scrape, scrape_until

READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]

TIMEOUT = 15.0
LATEST, EARLIEST = -1, -2


def stamped(directory: Path) -> list[tuple[int, int]]:
    """``(base offset, partition_leader_epoch)`` of every batch in a partition directory."""
    out = []
    for path in sorted(directory.glob("*.log")):
        out += [(h.base_offset, h.partition_leader_epoch) for h in iter_headers(path.read_bytes())]
    return out


def metadata_epochs(bootstrap: str, topic: str) -> list[int]:
    with Wire(bootstrap) as conn:
        answer = conn.request(
            metadata_v9.MetadataRequest(
                topics=(metadata_v9.MetadataRequestTopic(name=topic),),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
        )
    (found,) = answer.topics
    assert found.error_code == ErrorCode.none, found
    return [p.leader_epoch for p in sorted(found.partitions, key=lambda p: p.partition_index)]


def offset_for_leader_epoch(
    bootstrap: str, topic: str, *asked: tuple[int, int, int], version: int = 4
) -> list[tuple[ErrorCode, int, int]]:
    """``(error, epoch, end offset)`` for each ``(partition, current_leader_epoch, epoch)``."""
    module: Any = ofle_v4 if version == 4 else ofle_v2
    partitions = tuple(
        module.OffsetForLeaderPartition(partition=p, current_leader_epoch=c, leader_epoch=e)
        for p, c, e in asked
    )
    topics = (module.OffsetForLeaderTopic(topic=topic, partitions=partitions),)
    request = (
        module.OffsetForLeaderEpochRequest(replica_id=-1, topics=topics)
        if version == 4
        else module.OffsetForLeaderEpochRequest(topics=topics)
    )
    with Wire(bootstrap) as conn:
        answer = conn.request(request)
    (result,) = answer.topics
    assert result.topic == topic
    return [(p.error_code, p.leader_epoch, p.end_offset) for p in result.partitions]


def list_offsets(
    bootstrap: str, topic: str, timestamp: int, current_leader_epoch: int
) -> tuple[ErrorCode, int, int]:
    """``(error, offset, leader epoch)`` of ListOffsets v7 for partition 0."""
    with Wire(bootstrap) as conn:
        answer = conn.request(
            list_offsets_v7.ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=(
                    list_offsets_v7.ListOffsetsTopic(
                        name=topic,
                        partitions=(
                            list_offsets_v7.ListOffsetsPartition(
                                partition_index=0,
                                current_leader_epoch=current_leader_epoch,
                                timestamp=timestamp,
                            ),
                        ),
                    ),
                ),
            )
        )
    (partition,) = answer.topics[0].partitions
    return partition.error_code, partition.offset, partition.leader_epoch


def fetch(bootstrap: str, topic: str, current_leader_epoch: int) -> tuple[ErrorCode, int, bool]:
    """``(error, high watermark, whether records came)`` of Fetch v12 for partition 0."""
    with Wire(bootstrap) as conn:
        answer = conn.request(
            fetch_v12.FetchRequest(
                max_wait=timedelta(0),
                min_bytes=0,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=(
                    fetch_v12.FetchTopic(
                        topic=topic,
                        partitions=(
                            fetch_v12.FetchPartition(
                                partition=0,
                                current_leader_epoch=current_leader_epoch,
                                fetch_offset=0,
                                partition_max_bytes=1 << 20,
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
        )
    (partition,) = answer.responses[0].partitions
    return partition.error_code, partition.high_watermark, bool(partition.records)


def elect(broker: BrokerProcess, partition_dir: Path, epoch: int) -> None:
    """A new leader epoch for a partition, as a controller's election would give it."""
    assert broker.stop() == 0
    (partition_dir / LEADER_EPOCH).write_text(f"{epoch}\n")
    broker.start()


def test_batches_and_the_checkpoint_carry_the_epoch_across_restarts(broker: BrokerProcess):
    topic = create_topic(broker.bootstrap, partitions=2)
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c"], one_batch_each=True)
    group = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "epoch-stampers"})
    group.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    group.close()
    partition_dir = broker.data_dir / f"{topic}-0"

    assert stamped(partition_dir) == [(0, 0), (1, 0), (2, 0)]
    offsets_dirs = list(broker.data_dir.glob("__consumer_offsets-*"))
    internal = [epoch for d in offsets_dirs for _, epoch in stamped(d)]
    assert internal and set(internal) == {0}, f"__consumer_offsets batches carry {internal}"
    assert (partition_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"
    assert (broker.data_dir / f"{topic}-1" / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"
    assert metadata_epochs(broker.bootstrap, topic) == [0, 0]

    assert broker.stop() == 0
    broker.start()
    assert (partition_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"
    assert metadata_epochs(broker.bootstrap, topic) == [0, 0]
    produce_values(broker.bootstrap, topic, [b"d"])
    assert stamped(partition_dir) == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert offset_for_leader_epoch(broker.bootstrap, topic, (0, 0, 0)) == [(ErrorCode.none, 0, 4)]


def test_offset_for_leader_epoch_and_list_offsets_answer_and_fence(broker: BrokerProcess):
    topic = create_topic(broker.bootstrap)
    partition_dir = broker.data_dir / f"{topic}-0"
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c"])
    elect(broker, partition_dir, 2)
    produce_values(broker.bootstrap, topic, [b"d", b"e"])

    assert metadata_epochs(broker.bootstrap, topic) == [2]
    assert (partition_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n2 3\n"
    assert [epoch for _, epoch in stamped(partition_dir)][-1] == 2

    for version in (2, 4):
        answers = offset_for_leader_epoch(
            broker.bootstrap,
            topic,
            (0, 2, 2),  # the current epoch ends at the log end
            (0, -1, 0),  # an older epoch ends where the next starts
            (0, 2, 1),  # an epoch the log never had: the one below it
            (0, 2, 3),  # newer than every epoch: unknown
            (0, 1, 0),  # the sender's metadata is older than the broker's
            (0, 3, 0),  # the sender knows of an election the broker does not
            (7, -1, 0),  # no such partition
            version=version,
        )
        assert answers == [
            (ErrorCode.none, 2, 5),
            (ErrorCode.none, 0, 3),
            (ErrorCode.none, 0, 3),
            (ErrorCode.none, -1, -1),
            (ErrorCode.fenced_leader_epoch, -1, -1),
            (ErrorCode.unknown_leader_epoch, -1, -1),
            (ErrorCode.unknown_topic_or_partition, -1, -1),
        ], f"OffsetForLeaderEpoch v{version}"

    assert list_offsets(broker.bootstrap, topic, LATEST, 2) == (ErrorCode.none, 5, 2)
    assert list_offsets(broker.bootstrap, topic, LATEST, -1) == (ErrorCode.none, 5, 2)
    assert list_offsets(broker.bootstrap, topic, EARLIEST, 2) == (ErrorCode.none, 0, 0)
    assert list_offsets(broker.bootstrap, topic, 0, -1) == (ErrorCode.none, 0, 0)
    fenced = list_offsets(broker.bootstrap, topic, LATEST, 1)
    assert fenced == (ErrorCode.fenced_leader_epoch, -1, -1)
    unknown = list_offsets(broker.bootstrap, topic, EARLIEST, 3)
    assert unknown == (ErrorCode.unknown_leader_epoch, -1, -1)
    assert fetch(broker.bootstrap, topic, 2) == (ErrorCode.none, 5, True)
    assert fetch(broker.bootstrap, topic, -1) == (ErrorCode.none, 5, True)
    assert fetch(broker.bootstrap, topic, 1) == (ErrorCode.fenced_leader_epoch, -1, False)
    assert fetch(broker.bootstrap, topic, 3) == (ErrorCode.unknown_leader_epoch, -1, False)
    assert [r.value for r in read_partition(broker.bootstrap, topic)] == [
        b"a",
        b"b",
        b"c",
        b"d",
        b"e",
    ]


def test_a_log_written_before_epochs_loads(broker: BrokerProcess):
    """Batches stamped -1 and no epoch files, as a Sluice before epochs left them."""
    topic = create_topic(broker.bootstrap)
    partition_dir = broker.data_dir / f"{topic}-0"
    produce_values(broker.bootstrap, topic, [b"a", b"b", b"c"], one_batch_each=True)
    assert broker.stop() == 0
    (partition_dir / LEADER_EPOCH).unlink()
    (partition_dir / LEADER_EPOCH_CHECKPOINT).unlink()
    for segment in partition_dir.glob("*.log"):
        data = bytearray(segment.read_bytes())
        for header in iter_headers(data):
            struct.pack_into(">i", data, header.position + 12, -1)
        segment.write_bytes(data)
    broker.start()

    produce_values(broker.bootstrap, topic, [b"d"])
    assert stamped(partition_dir) == [(0, -1), (1, -1), (2, -1), (3, 0)]
    assert (partition_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 3\n"
    assert (partition_dir / LEADER_EPOCH).read_text() == "0\n"
    assert metadata_epochs(broker.bootstrap, topic) == [0]
    assert offset_for_leader_epoch(broker.bootstrap, topic, (0, 0, 0)) == [(ErrorCode.none, 0, 4)]
    assert list_offsets(broker.bootstrap, topic, EARLIEST, 0) == (ErrorCode.none, 0, -1)
    assert [r.value for r in read_partition(broker.bootstrap, topic)] == [b"a", b"b", b"c", b"d"]


@pytest.fixture
def kafka_python() -> Iterator[Callable[..., Any]]:
    """Make kafka-python consumers, closed at teardown.

    While the broker restarts, kafka-python's refused connection attempts leave their sockets
    to the garbage collector (a ResourceWarning each), and its error log records hold the
    exceptions, so the sockets, for as long as pytest keeps the records: its loggers are quiet
    below CRITICAL here, and the sockets are collected at teardown with the warning silenced."""
    made: list[Any] = []
    kafka_logger = logging.getLogger("kafka")
    level = kafka_logger.level
    kafka_logger.setLevel(logging.CRITICAL)

    def make(*topics: str, **config: Any) -> Any:
        made.append(KafkaConsumer(*topics, **config))
        return made[-1]

    try:
        yield make
    finally:
        for consumer in made:
            consumer.close()
        made.clear()
        kafka_logger.setLevel(level)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def poll_values(poll: Callable[[], list[Any]], count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 2 * TIMEOUT
    while len(got) < count and time.monotonic() < deadline:
        got += poll()
    return got


@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")  # see kafka_python
def test_consumers_validate_their_positions_after_a_leader_change(
    metered: tuple[BrokerProcess, int], kafka_python: Callable[..., Any]
):
    """KIP-320: after the epoch moves on, librdkafka and kafka-python consumers ask
    OffsetForLeaderEpoch where the epoch of their position ends, find no truncation, and go on
    from where they were: no reset, nothing skipped, nothing read twice."""
    broker, port = metered
    topic = create_topic(broker.bootstrap)
    first = [f"v{i}".encode() for i in range(10)]
    produce_values(broker.bootstrap, topic, first)

    def validations() -> float:
        return scrape(port).total(
            "kafka_network_request_metrics_requests_total", request="OffsetForLeaderEpoch"
        )

    librdkafka = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"epochs-rd-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
            "fetch.wait.max.ms": 100,
        }
    )
    python = kafka_python(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=f"epochs-py-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=500,
        fetch_max_wait_ms=100,
        request_timeout_ms=int(TIMEOUT * 1000),
    )
    try:
        librdkafka.subscribe([topic])

        def poll_librdkafka() -> list[bytes]:
            msg = librdkafka.poll(0.2)
            if msg is None:
                return []
            error = msg.error()
            if error is not None:  # the broker restarting
                assert error.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), (
                    f"librdkafka: {error}"
                )
                return []
            return [msg.value()]

        def poll_python() -> list[Any]:
            return [r for rs in python.poll(timeout_ms=200).values() for r in rs]

        assert poll_values(poll_librdkafka, 10) == first
        read = poll_values(poll_python, 10)
        assert [r.value for r in read] == first
        assert read[-1].leader_epoch == 0, "records carry their batch's leader epoch"

        elect(broker, broker.data_dir / f"{topic}-0", 1)
        second = [f"w{i}".encode() for i in range(5)]
        produce_values(broker.bootstrap, topic, second)

        assert poll_values(poll_librdkafka, 5) == second
        scrape_until(port, lambda _: validations() >= 1, what="librdkafka's OffsetForLeaderEpoch")
        before = validations()
        # kafka-python forgets its position's epoch at the next empty fetch it hands out, so it
        # validates only when it learns the new epoch before it polls again: wait for that
        cluster = python._client.cluster
        partition = KafkaTopicPartition(topic, 0)
        deadline = time.monotonic() + TIMEOUT
        while cluster.leader_epoch_for_partition(partition) != 1:
            assert time.monotonic() < deadline, "kafka-python never saw leader epoch 1"
            time.sleep(0.1)
        read = poll_values(poll_python, 5)
        assert [r.value for r in read] == second
        assert read[0].leader_epoch == 1
        assert validations() > before, "kafka-python did not validate its position"
        assert metadata_epochs(broker.bootstrap, topic) == [1]
    finally:
        librdkafka.close()
