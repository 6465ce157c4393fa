"""DeleteRecords: move a partition's log start offset forward (-1: to the high watermark).

Segments wholly below the new start are deleted; reads below it get OFFSET_OUT_OF_RANGE.
An offset above the high watermark is refused with OFFSET_OUT_OF_RANGE. In a cluster only the
partition's leader deletes (NOT_LEADER_OR_FOLLOWER elsewhere); its followers learn the new log
start offset from their fetches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import DELETE_RECORDS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import denied
from sluice.broker.security.acls import ResourceType
from sluice.errors import StorageError

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        DeleteRecordsRequest,
        DeleteRecordsResponse,
    )


async def handle(
    broker: Broker, request: DeleteRecordsRequest, client: Connection
) -> DeleteRecordsResponse:
    schema = response_schema(DELETE_RECORDS, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        refused = denied(
            authorizer, client, DELETE_RECORDS, ResourceType.TOPIC, (t.name for t in request.topics)
        )
    topics = []
    for topic in request.topics:
        entries = []
        for wanted in topic.partitions:
            code, low = ErrorCode.none, -1
            partition = broker.topics.partition(topic.name, wanted.partition_index)
            if topic.name in refused:
                code = ErrorCode.topic_authorization_failed
            elif partition is None:
                code = ErrorCode.unknown_topic_or_partition
            elif partition.offline:  # its log directory failed
                code = ErrorCode.kafka_storage_error
            elif not partition.is_leader:
                code = ErrorCode.not_leader_or_follower
            else:
                plog = partition.log
                offset = plog.high_watermark if wanted.offset == -1 else wanted.offset
                if not 0 <= offset <= plog.high_watermark:
                    code = ErrorCode.offset_out_of_range
                else:
                    try:
                        low = plog.delete_records_before(offset)
                    except StorageError:
                        code = ErrorCode.kafka_storage_error
            entries.append(
                make(
                    partition_cls,
                    partition_index=wanted.partition_index,
                    low_watermark=low,
                    error_code=code,
                )
            )
        topics.append(make(topic_cls, name=topic.name, partitions=tuple(entries)))
    return make(schema, throttle_time=0, topics=tuple(topics))
