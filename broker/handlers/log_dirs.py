"""DescribeLogDirs: the broker's one log directory, with the size of each partition in it.

What ``kafka-log-dirs.sh --describe`` and ``sluice status`` read. ``topics`` null means every
partition; a named topic or partition the broker does not have is left out (as Kafka does).
``total_bytes``/``usable_bytes`` (v4) are the file system's. ``offset_lag`` is 0: there are no
future replicas on one node.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import DESCRIBE_LOG_DIRS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.topics import Partition

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
    )


async def handle(
    broker: Broker, request: DescribeLogDirsRequest, _client: Connection
) -> DescribeLogDirsResponse:
    schema = response_schema(DESCRIBE_LOG_DIRS, request.__version__)
    result_cls = nested(schema, "results")
    topic_cls = nested(schema, "results", "topics")
    partition_cls = nested(schema, "results", "topics", "partitions")
    by_topic: dict[str, list[Any]] = {}
    for partition in _wanted(broker, request.topics):
        by_topic.setdefault(partition.topic, []).append(
            make(
                partition_cls,
                partition_index=partition.index,
                partition_size=partition.log.size_in_bytes,
                offset_lag=0,
                is_future_key=False,
            )
        )
    topics = tuple(
        make(topic_cls, name=name, partitions=tuple(partitions))
        for name, partitions in sorted(by_topic.items())
    )
    total, usable = _disk(broker)
    result = make(
        result_cls,
        error_code=ErrorCode.none,
        log_dir=str(broker.data_dir.absolute()),
        topics=topics,
        total_bytes=total,
        usable_bytes=usable,
    )
    return make(schema, throttle_time=0, error_code=ErrorCode.none, results=(result,))


def _wanted(broker: Broker, topics: Iterable[Any] | None) -> Iterable[Partition]:
    if topics is None:
        return list(broker.topics.all_partitions())
    found = []
    for wanted in topics:
        for index in wanted.partitions:
            partition = broker.topics.partition(wanted.topic, index)
            if partition is not None:
                found.append(partition)
    return found


def _disk(broker: Broker) -> tuple[int, int]:
    try:
        stats = os.statvfs(broker.data_dir)
    except OSError:
        return -1, -1
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
