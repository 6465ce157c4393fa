"""Fetch: whole record batches straight from the segments, with long polling.

Segment bytes are passed to the response as they are on disk — never parsed or re-encoded.
Limits are honoured at batch boundaries: ``partition_max_bytes`` per partition and
``max_bytes`` for the response, except that the first batch of the first non-empty partition is
returned whole even when larger (KIP-74), so a consumer always makes progress.

If fewer than ``min_bytes`` are available the request waits, up to ``max_wait_ms``, for an
append to any of its partitions. ``read_uncommitted`` reads up to the high watermark;
``read_committed`` up to the last stable offset (the first offset of the oldest open
transaction), and the response lists the aborted transactions in the range read so that the
client drops their records. Fetch sessions (KIP-227) are not kept: the response's session id
is 0, which tells clients to send full fetch requests.

From v13 topics are named by their topic id (KIP-516), in the request and the response: the id is
resolved once per topic with a dict lookup, and an unknown id (a deleted topic, or one deleted
and re-created, which has a new id) is answered UNKNOWN_TOPIC_ID for each of its partitions, so
that the client refreshes its metadata. Versions 15 and 16 add only fields of replica fetches
and of leader changes, which a single node does not use.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.log import OffsetOutOfRangeError
from sluice.broker.protocol.api_keys import FETCH
from sluice.broker.protocol.codec import make, millis, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.messages import FetchRequest, FetchResponse, response_schema
from sluice.broker.topics import Partition, Topic
from sluice.errors import StorageError

READ_COMMITTED = 1
TOPIC_IDS_FROM = 13
"""The first version that names topics by id."""

# one topic of the response: (name, id, [(partition or None, the partition's response fields)])
_TopicResult = tuple[str | None, Any, list[tuple[Partition | None, dict[str, Any]]]]


async def handle(broker: Broker, request: FetchRequest, _client: Connection) -> FetchResponse:
    schema = response_schema(FETCH, request.__version__)
    topic_cls = nested(schema, "responses")
    partition_cls = nested(schema, "responses", "partitions")
    aborted_cls = nested(schema, "responses", "partitions", "aborted_transactions")
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    max_bytes = getattr(request, "max_bytes", 2**31 - 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + millis(request.max_wait) / 1000

    while True:
        results, total, waitable = _read_all(broker, request, max_bytes, committed, aborted_cls)
        remaining = deadline - loop.time()
        if total >= request.min_bytes or remaining <= 0 or not waitable:
            break
        waiter: asyncio.Future[None] = loop.create_future()
        for partition in waitable:
            partition.waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, remaining)
        except TimeoutError:
            pass
        finally:
            for partition in waitable:
                partition.waiters.discard(waiter)

    topics = []
    for name, topic_id, partitions in results:
        for read, fields in partitions:  # metrics: bytes out, once per partition with data
            if read is not None and fields["records"]:
                read.bytes_out += len(fields["records"])
        entries = tuple(make(partition_cls, **fields) for _, fields in partitions)
        topics.append(make(topic_cls, topic=name, topic_id=topic_id, partitions=entries))
    return make(
        schema, throttle_time=0, error_code=ErrorCode.none, session_id=0, responses=tuple(topics)
    )


def _read_all(
    broker: Broker, request: Any, max_bytes: int, committed: bool, aborted_cls: type[Any]
) -> tuple[list[_TopicResult], int, list[Partition]]:
    total = 0
    results: list[_TopicResult] = []
    waitable: list[Partition] = []
    by_id = request.__version__ >= TOPIC_IDS_FROM
    for topic in request.topics:
        found: Topic | None
        if by_id:
            found = broker.topics.by_id(topic.topic_id) if topic.topic_id is not None else None
            missing = ErrorCode.unknown_topic_id
        else:
            found = broker.topics.get(topic.topic)
            missing = ErrorCode.unknown_topic_or_partition
        entries: list[tuple[Partition | None, dict[str, Any]]] = []
        for wanted in topic.partitions:
            partition = (
                found.partitions[wanted.partition]
                if found is not None and 0 <= wanted.partition < len(found.partitions)
                else None
            )
            entry: dict[str, Any] = {
                "partition_index": wanted.partition,
                "error_code": ErrorCode.none,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": () if committed else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            entries.append((partition, entry))
            if partition is None:
                entry["error_code"] = (
                    missing if found is None else ErrorCode.unknown_topic_or_partition
                )
                continue
            plog = partition.log
            hwm, lso = plog.high_watermark, plog.last_stable_offset
            entry.update(
                high_watermark=hwm, last_stable_offset=lso, log_start_offset=plog.log_start_offset
            )
            budget = min(wanted.partition_max_bytes, max_bytes - total)
            try:
                read = plog.read(
                    wanted.fetch_offset,
                    max(budget, 0),
                    upper_bound=lso if committed else hwm,
                    min_one_batch=total == 0,
                )
            except OffsetOutOfRangeError:
                entry["error_code"] = ErrorCode.offset_out_of_range
                continue
            except StorageError:
                entry["error_code"] = ErrorCode.kafka_storage_error
                continue
            data = read.data
            if data:
                entry["records"] = bytes(data)
                total += len(data)
                if committed:
                    entry["aborted_transactions"] = tuple(
                        make(aborted_cls, producer_id=pid, first_offset=first)
                        for pid, first in plog.aborted_transactions(wanted.fetch_offset, lso)
                    )
            else:
                waitable.append(partition)
        if by_id:
            results.append((None, topic.topic_id, entries))
        else:
            results.append((topic.topic, None, entries))
    return results, total, waitable
