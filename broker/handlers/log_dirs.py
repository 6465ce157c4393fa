"""DescribeLogDirs and AlterReplicaLogDirs: the broker's log directories (``log.dirs``).

**DescribeLogDirs** is what ``kafka-log-dirs.sh --describe`` and ``sluice status`` read. One
result per directory, in the order of ``log.dirs``; an offline directory answers
KAFKA_STORAGE_ERROR with no topics (as Kafka's). ``topics`` null means every partition; a named
topic or partition the broker does not have is left out (as Kafka does).
``total_bytes``/``usable_bytes`` (v4) are the file system's (-1 when offline). A replica moving
to another directory shows there too, with ``is_future_key`` true and ``offset_lag`` how far
its copy is behind (:mod:`sluice.broker.future_replicas`); the current replica's lag is 0.

**AlterReplicaLogDirs** moves this broker's replica of each partition named to the directory
given (``kafka-reassign-partitions.sh`` with ``log_dirs``), as Kafka's ``ReplicaManager``
answers: a path that is not one of ``log.dirs`` gets LOG_DIR_NOT_FOUND (57), an offline one
(or any offline directory on the broker, so that a future log is never made twice)
KAFKA_STORAGE_ERROR (56), a replica in an offline directory KAFKA_STORAGE_ERROR; a partition
not hosted here has the directory remembered for when it is created and gets
REPLICA_NOT_AVAILABLE (9); a replica already there, or already moving there, NONE.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.log_dirs import LogDir
from sluice.broker.protocol.api_keys import ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import refuses_cluster
from sluice.broker.topics import Partition, Topic
from sluice.errors import StorageError

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AlterReplicaLogDirsRequest,
        AlterReplicaLogDirsResponse,
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
    )


async def handle(
    broker: Broker, request: DescribeLogDirsRequest, client: Connection
) -> DescribeLogDirsResponse:
    schema = response_schema(DESCRIBE_LOG_DIRS, request.__version__)
    if refuses_cluster(broker.authorizer, client, DESCRIBE_LOG_DIRS):  # v1-2: nothing listed
        return make(
            schema, throttle_time=0, error_code=ErrorCode.cluster_authorization_failed, results=()
        )
    result_cls = nested(schema, "results")
    topic_cls = nested(schema, "results", "topics")
    partition_cls = nested(schema, "results", "topics", "partitions")
    wanted = _wanted(broker, request.topics)
    results = []
    for directory in broker.log_dirs:
        if not directory.online:
            results.append(
                make(
                    result_cls,
                    error_code=ErrorCode.kafka_storage_error,
                    log_dir=str(directory.path),
                    topics=(),
                    total_bytes=-1,
                    usable_bytes=-1,
                )
            )
            continue
        by_topic: dict[str, list[Any]] = {}
        for partition in wanted:
            if partition.log_dir is directory:
                by_topic.setdefault(partition.topic, []).append(
                    make(
                        partition_cls,
                        partition_index=partition.index,
                        partition_size=partition.log.size_in_bytes,
                        offset_lag=0,
                        is_future_key=False,
                    )
                )
            future = broker.topics.futures.future_of(partition.topic, partition.index)
            if future is not None and future.log_dir is directory:
                by_topic.setdefault(partition.topic, []).append(
                    make(
                        partition_cls,
                        partition_index=partition.index,
                        partition_size=future.log.size_in_bytes,
                        offset_lag=future.offset_lag,
                        is_future_key=True,
                    )
                )
        topics = tuple(
            make(topic_cls, name=name, partitions=tuple(partitions))
            for name, partitions in sorted(by_topic.items())
        )
        total, usable = directory.disk()
        results.append(
            make(
                result_cls,
                error_code=ErrorCode.none,
                log_dir=str(directory.path),
                topics=topics,
                total_bytes=total,
                usable_bytes=usable,
            )
        )
    return make(schema, throttle_time=0, error_code=ErrorCode.none, results=tuple(results))


def _wanted(broker: Broker, topics: Iterable[Any] | None) -> list[Partition]:
    if topics is None:
        return list(broker.topics.all_partitions())
    found = []
    for wanted in topics:
        for index in wanted.partitions:
            partition = broker.topics.partition(wanted.topic, index)
            if partition is not None and not partition.offline:
                found.append(partition)
    return found


async def alter_replica_log_dirs(
    broker: Broker, request: AlterReplicaLogDirsRequest, client: Connection
) -> AlterReplicaLogDirsResponse:
    schema = response_schema(ALTER_REPLICA_LOG_DIRS, request.__version__)
    topic_cls = nested(schema, "results")
    partition_cls = nested(schema, "results", "partitions")
    by_path = {str(d.path): d for d in broker.log_dirs}
    results: dict[str, list[Any]] = {}
    denied = refuses_cluster(broker.authorizer, client, ALTER_REPLICA_LOG_DIRS)
    for wanted in request.dirs:
        directory = by_path.get(os.path.abspath(wanted.path)) if wanted.path else None
        for topic_entry in wanted.topics:
            for index in topic_entry.partitions:
                code = (
                    ErrorCode.cluster_authorization_failed
                    if denied
                    else _move(broker, directory, topic_entry.name, index)
                )
                results.setdefault(topic_entry.name, []).append(
                    make(partition_cls, partition_index=index, error_code=code)
                )
    return make(
        schema,
        throttle_time=0,
        results=tuple(
            make(topic_cls, topic_name=name, partitions=tuple(partitions))
            for name, partitions in results.items()
        ),
    )


def _move(broker: Broker, directory: LogDir | None, name: str, index: int) -> ErrorCode:
    """Kafka's ``ReplicaManager.alterReplicaLogDirs`` for one partition (module docs)."""
    if directory is None:
        return ErrorCode.log_dir_not_found
    if not directory.online:
        return ErrorCode.kafka_storage_error
    topic: Topic | None = broker.topics.get(name)
    partition = None if topic is None else topic.partitions.get(index)
    if partition is not None and partition.offline:
        return ErrorCode.kafka_storage_error
    if partition is None or topic is None:
        broker.topics.preferred_dirs[(name, index)] = directory
        return ErrorCode.replica_not_available
    if len(broker.log_dirs.online()) < len(broker.log_dirs.dirs):
        return ErrorCode.kafka_storage_error  # Kafka: no future log while a directory is offline
    try:
        broker.topics.futures.start(topic, partition, directory)
    except (OSError, StorageError) as exc:
        broker.storage_failed(directory.path / f"{name}-{index}", str(exc))
        return ErrorCode.kafka_storage_error
    return ErrorCode.none
