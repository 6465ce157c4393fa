"""A connection reads on while an acks=all Produce waits for its in-sync replicas: the next
Produce requests are appended at once, and every response still comes in request order
(``broker/server.py``; ``broker/protocol/deferred.py``).

A follower is paused (SIGSTOP) with ``replica.lag.time.max.ms`` and its ZooKeeper session
long enough that it stays in the ISR, so the first acks=all request cannot be answered. The
partition's size on the leader (DescribeLogDirs, from another connection) shows the requests
sent behind it appended while it waits; nothing is answered until the follower runs again, and
then everything is, in order.
"""

from __future__ import annotations

import datetime
import select
import time
from typing import Any

from kio.schema.describe_log_dirs.v4 import request as log_dirs_v4
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.produce.v9 import request as produce_v9
from kio.schema.types import TopicName

from tests.broker.conftest import Wire, decode_response, encode_request, make_batch
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_cluster_basics import create_topic, leaders

TOPIC = "piped"
WAIT_S = 20.0


def produce(value: bytes, acks: int) -> Any:
    return produce_v9.ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=60),
        topic_data=(
            produce_v9.TopicProduceData(
                name=TopicName(TOPIC),
                partition_data=(
                    produce_v9.PartitionProduceData(index=0, records=make_batch([value])),
                ),
            ),
        ),
    )


def size_on(cluster: BrokerCluster, broker: int) -> int:
    """The partition's size in bytes on ``broker``, as DescribeLogDirs tells."""
    request = log_dirs_v4.DescribeLogDirsRequest(
        topics=(log_dirs_v4.DescribableLogDirTopic(topic=TopicName(TOPIC), partitions=(0,)),)
    )
    with Wire(cluster.broker(broker).bootstrap) as wire:
        answer = wire.request(request)
    return sum(
        p.partition_size
        for result in answer.results
        for t in result.topics
        for p in t.partitions
        if t.name == TOPIC and p.partition_index == 0
    )


def wait_for_size(cluster: BrokerCluster, broker: int, above: int) -> int:
    deadline = time.monotonic() + WAIT_S
    while (size := size_on(cluster, broker)) <= above:
        assert time.monotonic() < deadline, f"the partition stayed at {size} bytes on {broker}"
        time.sleep(0.1)
    return size


def nothing_to_read(wire: Wire) -> bool:
    readable, _, _ = select.select([wire.sock], [], [], 0.5)
    return not readable


def test_produce_requests_behind_a_waiting_acks_all_one_are_appended_and_answered_in_order(
    broker_cluster_factory: Any,
) -> None:
    # the paused follower stays in the ISR, and registered, for the whole test
    cluster = broker_cluster_factory(
        **{"replica.lag.time.max.ms": "120000", "zookeeper.session.timeout.ms": "60000"}
    )
    create_topic(cluster, TOPIC, partitions=1, rf=3)
    cluster.wait_until(lambda: len(leaders(cluster, TOPIC, 1)[0][2]) == 3, "an ISR of three")
    leader, replicas, _ = leaders(cluster, TOPIC, 1)[0]
    follower = next(i for i in replicas if i != leader)
    requests = [
        produce(b"first, acks=all", -1),
        produce(b"second, acks=all", -1),
        produce(b"third, acks=1", 1),
        metadata_v9.MetadataRequest(
            topics=(metadata_v9.MetadataRequestTopic(name=TopicName(TOPIC)),),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        ),
    ]
    cluster.pause(follower)
    try:
        with Wire(cluster.broker(leader).bootstrap, timeout=WAIT_S) as wire:
            wire.send(encode_request(requests[0], 1))
            first = wait_for_size(cluster, leader, 0)
            for correlation, request in enumerate(requests[1:], start=2):
                wire.send(encode_request(request, correlation))
            # the two Produce requests behind the waiting one are in the log already
            wait_for_size(cluster, leader, first + first)
            assert nothing_to_read(wire), "a response came before the ISR had the first batch"
            cluster.resume(follower)
            answers = []
            for correlation, request in enumerate(requests, start=1):
                frame = wire.read_frame()
                assert frame is not None, f"the leader closed instead of answering {correlation}"
                answers.append(decode_response(request.__api_key__, request.__version__, frame))
    finally:
        cluster.resume(follower)
    assert [correlation for correlation, _ in answers] == [1, 2, 3, 4]
    offsets = []
    for _, response in answers[:3]:
        (partition,) = response.responses[0].partition_responses
        assert partition.error_code == ErrorCode.none, partition
        offsets.append(partition.base_offset)
    assert offsets == [0, 1, 2]
    assert answers[3][1].topics[0].error_code == ErrorCode.none
