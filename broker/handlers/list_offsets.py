"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or the first offset at a time.

By timestamp the answer is the earliest offset whose timestamp is at or after the one asked,
found through the time index; ``-1/-1`` when there is none. ``read_committed`` requests see the
last stable offset as "latest".

Leader epochs (v4+, KIP-320): a partition's ``current_leader_epoch`` other than -1 is checked
against the partition's leader epoch (older: FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH), and
each answer carries the epoch of its offset as Kafka's does: the partition's leader epoch for
"latest", the epoch the offset was appended in otherwise (-1 when the log does not know it).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.log.epochs import UNDEFINED_EPOCH, check_current_leader_epoch
from sluice.broker.protocol.api_keys import LIST_OFFSETS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from sluice.broker.protocol.response_schema import response_schema
from sluice.errors import StorageError

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1


async def handle(
    broker: Broker, request: ListOffsetsRequest, _client: Connection
) -> ListOffsetsResponse:
    schema = response_schema(LIST_OFFSETS, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    topics = []
    for topic in request.topics:
        entries = []
        for wanted in topic.partitions:
            code, timestamp, offset, epoch = ErrorCode.none, -1, -1, UNDEFINED_EPOCH
            partition = broker.topics.partition(topic.name, wanted.partition_index)
            current = getattr(wanted, "current_leader_epoch", UNDEFINED_EPOCH)
            if partition is None:
                code = ErrorCode.unknown_topic_or_partition
            elif fenced := check_current_leader_epoch(current, partition.log.leader_epoch):
                code = ErrorCode(fenced)
            else:
                plog = partition.log
                try:
                    if wanted.timestamp == LATEST:
                        offset = plog.last_stable_offset if committed else plog.high_watermark
                        epoch = plog.leader_epoch
                    elif wanted.timestamp == EARLIEST:
                        offset = plog.log_start_offset
                    else:
                        found = (
                            plog.max_timestamp()
                            if wanted.timestamp == MAX_TIMESTAMP
                            else plog.offset_for_timestamp(wanted.timestamp)
                        )
                        if found is not None:
                            offset, timestamp = found
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
