"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or the first offset at a time.

By timestamp the answer is the earliest offset whose timestamp is at or after the one asked,
found through the time index; ``-1/-1`` when there is none. ``read_committed`` requests see the
last stable offset as "latest".

Leader epochs (v4+, KIP-320): a partition's ``current_leader_epoch`` other than -1 is checked
against the partition's leader epoch (older: FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH), and
each answer carries the epoch of its offset as Kafka's does: the partition's leader epoch for
"latest", the epoch the offset was appended in otherwise (-1 when the log does not know it).

In a cluster only the partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere, except to
the debugging replica id -2), and a leader answers a consumer (replica id -1) as Kafka's
does (KIP-207): while its high watermark is below the start of its leader epoch (just elected,
the followers not caught up yet), "latest" — and a timestamp lookup whose offset is not readable
yet — is OFFSET_NOT_AVAILABLE (LEADER_NOT_AVAILABLE before v5), so that no consumer is told an
end that could move back; a timestamp lookup never returns an offset at or past the high
watermark (the last stable offset under read_committed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.log.epochs import UNDEFINED_EPOCH, check_current_leader_epoch
from sluice.broker.protocol.api_keys import LIST_OFFSETS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import denied
from sluice.broker.security.acls import ResourceType
from sluice.errors import StorageError

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import ListOffsetsRequest, ListOffsetsResponse

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
OFFSET_NOT_AVAILABLE_FROM = 5


async def handle(
    broker: Broker, request: ListOffsetsRequest, client: Connection
) -> ListOffsetsResponse:
    schema = response_schema(LIST_OFFSETS, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    replica_id = request.replica_id
    consumer = replica_id == CONSUMER_REPLICA_ID
    lagging_code = (
        ErrorCode.offset_not_available
        if request.__version__ >= OFFSET_NOT_AVAILABLE_FROM
        else ErrorCode.leader_not_available
    )
    refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        refused = denied(
            authorizer, client, LIST_OFFSETS, ResourceType.TOPIC, (t.name for t in request.topics)
        )
    topics = []
    for topic in request.topics:
        entries = []
        for wanted in topic.partitions:
            code, timestamp, offset, epoch = ErrorCode.none, -1, -1, UNDEFINED_EPOCH
            partition = broker.topics.partition(topic.name, wanted.partition_index)
            current = getattr(wanted, "current_leader_epoch", UNDEFINED_EPOCH)
            if topic.name in refused:
                code = ErrorCode.topic_authorization_failed
            elif partition is None:
                code = ErrorCode.unknown_topic_or_partition
            elif partition.offline:  # its log directory failed
                code = ErrorCode.kafka_storage_error
            elif not partition.is_leader and replica_id != DEBUGGING_REPLICA_ID:
                code = ErrorCode.not_leader_or_follower
            elif fenced := check_current_leader_epoch(current, partition.log.leader_epoch):
                code = ErrorCode(fenced)
            else:
                plog = partition.log
                leadership = partition.leadership
                cluster_consumer = consumer and leadership is not None
                lagging = (
                    cluster_consumer
                    and leadership is not None
                    and leadership.epoch_start_offset > plog.high_watermark
                )
                readable = plog.last_stable_offset if committed else plog.high_watermark
                try:
                    if wanted.timestamp == LATEST and lagging:
                        code = lagging_code
                    elif wanted.timestamp == LATEST:
                        offset = readable
                        epoch = plog.leader_epoch
                    elif wanted.timestamp == EARLIEST:
                        offset = plog.log_start_offset
                    else:
                        found = (
                            plog.max_timestamp()
                            if wanted.timestamp == MAX_TIMESTAMP
                            else plog.offset_for_timestamp(wanted.timestamp)
                        )
                        if found is not None and cluster_consumer and found[0] >= readable:
                            found = None  # not committed yet: Kafka does not tell it
                        if found is not None:
                            offset, timestamp = found
                        elif lagging:
                            code = lagging_code
                    if offset >= 0 and wanted.timestamp != LATEST:
                        appended_in = plog.leader_epochs.epoch_for_offset(offset)
                        epoch = UNDEFINED_EPOCH if appended_in is None else appended_in
                except StorageError:
                    code = ErrorCode.kafka_storage_error
            entries.append(
                make(
                    partition_cls,
                    partition_index=wanted.partition_index,
                    error_code=code,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch,
                    old_style_offsets=(offset,),
                )
            )
        topics.append(make(topic_cls, name=topic.name, partitions=tuple(entries)))
    return make(schema, throttle_time=0, topics=tuple(topics))
