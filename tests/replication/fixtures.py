"""Helpers of the replication tests: a plain Fetch v12 request, as a consumer (``replica_id``
-1) or a follower sends it, and a Produce v9 request that writes exactly one batch."""

from __future__ import annotations

import datetime

from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.produce.v9 import request as produce_v9
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from tests.broker.conftest import make_batch


def fetch_request(
    topic: str, offset: int, *, replica_id: int = -1, max_bytes: int = 1 << 24
) -> fetch_v12.FetchRequest:
    """A Fetch v12 of partition 0 of ``topic`` from ``offset`` that does not wait."""
    return fetch_v12.FetchRequest(
        replica_id=BrokerId(replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(max_bytes),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            fetch_v12.FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    fetch_v12.FetchPartition(
                        partition=i32(0),
                        fetch_offset=i64(offset),
                        partition_max_bytes=i32(max_bytes),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def produce_request(topic: str, values: list[bytes]) -> produce_v9.ProduceRequest:
    """An acks=all Produce v9 of ``values`` to partition 0 of ``topic`` as one batch — exactly one,
    which a client's linger only makes likely."""
    return produce_v9.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        topic_data=(
            produce_v9.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    produce_v9.PartitionProduceData(index=i32(0), records=make_batch(values)),
                ),
            ),
        ),
    )
