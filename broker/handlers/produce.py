"""Produce: validate each partition's record batch and append it to the log.

Per partition the broker does constant work in Python: one header unpack, one CRC-32C over the
batch (C), one patch of the base offset, one write — never a loop over records, except when the
topic's ``compression.type`` differs from the producer's codec and the batch is recompressed.
Big batches arrive as writable views of the request's buffer (:mod:`sluice.broker.framing`,
:func:`~sluice.broker.protocol.codec.decode_request`): the base offset is patched there, in
place, so their bytes are not copied between the socket and the log's ``pwrite``. Small ones
come as ``bytes`` (kio reads them faster than a walk in Python would) and are copied once into
a buffer that can be patched.

Checks, with the error code Kafka answers:

- unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION
- batch larger than ``max.message.bytes`` → MESSAGE_TOO_LARGE
- not exactly one well-formed v2 batch → INVALID_RECORD (magic < 2: UNSUPPORTED_FOR_MESSAGE_FORMAT)
- a record without a key on a compacted topic → INVALID_RECORD (the cleaner would drop it; the
  one case where the records are decoded)

A batch refused because of some of its records (:class:`~sluice.broker.log.errors.
RecordValidationError`: keyless records on a compacted topic, INVALID_RECORD; bad timestamps,
INVALID_TIMESTAMP) is refused whole, as Kafka's ``LogValidator`` does, and the response (v8+)
lists each bad record's ``batch_index`` and message in ``record_errors``, with Kafka's summary in
``error_message``, so that a client fails exactly those records.
- a topic with ``confluent.value.schema.validation`` / ``confluent.key.schema.validation``:
  records without an allowed schema id → INVALID_RECORD, each named in ``record_errors``; the
  registry unreachable → REQUEST_TIMED_OUT (:mod:`sluice.broker.schema_validation`; the one
  await before an append, and only for such topics)
- CRC mismatch or torn batch → CORRUPT_MESSAGE
- idempotence: sequence gaps → OUT_OF_ORDER_SEQUENCE_NUMBER, stale epoch →
  INVALID_PRODUCER_EPOCH, unknown producer → UNKNOWN_PRODUCER_ID; a duplicate of one of the
  producer's last five batches is answered with its original offset and not appended again
- the disk refused the write → KAFKA_STORAGE_ERROR (the log stays readable)

acks: 0 (no response), 1 and -1 (all) — on a single node the leader is the whole ISR, so an
acks=-1 write to a topic whose ``min.insync.replicas`` is above 1 gets NOT_ENOUGH_REPLICAS (19).

In a cluster a partition this broker does not lead is answered NOT_LEADER_OR_FOLLOWER (6), and
one it leads has a :class:`~sluice.broker.replication.leadership.Leadership`: with acks=-1 its
ISR must hold ``min(min.insync.replicas, replication factor)`` replicas before the append (else
NOT_ENOUGH_REPLICAS, nothing written), and the answer waits until the ISR has the batch — every
such partition of the request waited for at once (a :class:`~sluice.broker.protocol.deferred.
Deferred` response: the connection's next Produce requests are read meanwhile), up to the
request's ``timeout_ms``
(REQUEST_TIMED_OUT, the batch stays in the log), NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when the
ISR fell below the minimum meanwhile, NOT_LEADER_OR_FOLLOWER when the broker stopped leading.
Each append advances the partition's high watermark as far as its ISR allows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.errors import KafkaError
from sluice.broker.log import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from sluice.broker.log.errors import RecordValidationError
from sluice.broker.protocol.api_keys import PRODUCE
from sluice.broker.protocol.codec import make, millis, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.deferred import Deferred
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.records import batch as rb
from sluice.broker.records.codec import decode_records, recompress
from sluice.broker.replication.leadership import Leadership
from sluice.broker.schema_validation import REGISTRY_URL, check_batch, validates
from sluice.broker.security.access import allowed, denied
from sluice.broker.security.acls import ResourceType
from sluice.broker.topics import Partition
from sluice.errors import StorageError

TOPIC, TXN_ID = ResourceType.TOPIC, ResourceType.TRANSACTIONAL_ID

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import ProduceRequest, ProduceResponse

log = logging.getLogger(__name__)

CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_WAIT_ERRORS = {
    ErrorCode.request_timed_out: "{}: the in-sync replicas did not all get the batch in time "
    "(it is in the leader's log and may still be committed)",
    ErrorCode.not_enough_replicas_after_append: "{}: the batch is in the log, but the in-sync "
    "replicas fell below min.insync.replicas before it was committed",
    ErrorCode.not_leader_or_follower: "{}: this broker stopped leading the partition before "
    "the batch was committed",
}


async def handle(
    broker: Broker, request: ProduceRequest, client: Connection
) -> ProduceResponse | Deferred[ProduceResponse] | None:
    acks = request.acks
    refused: set[str] = set()
    txn_refused = False
    if (authorizer := broker.authorizer) is not None:
        txn_id = request.transactional_id
        txn_refused = txn_id is not None and not allowed(
            authorizer, client, PRODUCE, TXN_ID, txn_id, "transactional"
        )
        refused = denied(authorizer, client, PRODUCE, TOPIC, (t.name for t in request.topic_data))
    schema = response_schema(PRODUCE, request.__version__)
    topic_cls = nested(schema, "responses")
    partition_cls = nested(schema, "responses", "partition_responses")
    record_error_cls = nested(schema, "responses", "partition_responses", "record_errors")
    now = broker.clock()
    answers: list[tuple[str, list[dict[str, Any]]]] = []
    replicating: list[tuple[dict[str, Any], Leadership, int]] = []
    """acks=-1 answers that wait for the ISR: (answer, leadership, offset after the batch)."""
    for topic_data in request.topic_data:
        partitions: list[dict[str, Any]] = []
        for data in topic_data.partition_data:
            base_offset, append_time, start = -1, -1, -1
            code, message = ErrorCode.none, None
            waiting: tuple[Leadership, int] | None = None
            record_errors: tuple[Any, ...] = ()
            if acks not in (0, 1, -1):
                code = ErrorCode.invalid_required_acks
            elif txn_refused:
                code = ErrorCode.transactional_id_authorization_failed
            elif topic_data.name in refused:
                code = ErrorCode.topic_authorization_failed
            elif (partition := broker.topics.partition(topic_data.name, data.index)) is None:
                code = ErrorCode.unknown_topic_or_partition
            elif partition.offline:
                code = ErrorCode.kafka_storage_error
                message = f"the log directory of {topic_data.name}-{data.index} is offline"
                partition.total_produce_requests += 1
                partition.failed_produce_requests += 1
            elif not partition.is_leader:
                code = ErrorCode.not_leader_or_follower
                message = f"this broker does not lead {topic_data.name}-{data.index}"
                partition.total_produce_requests += 1
                partition.failed_produce_requests += 1
            elif acks == -1 and (isr := _short_isr(broker, partition)) is not None:
                code = ErrorCode.not_enough_replicas
                message = (
                    f"The size of the current ISR Set({', '.join(map(str, isr))}) is "
                    f"insufficient to satisfy the min.isr requirement of "
                    f"{partition.log.settings.min_insync_replicas} for partition "
                    f"{topic_data.name}-{data.index}"
                )
                partition.total_produce_requests += 1
                partition.failed_produce_requests += 1
            else:
                partition.total_produce_requests += 1
                try:
                    if validates(config := partition.log.config):  # confluent.*.schema.validation
                        await check_batch(
                            broker.config.values[REGISTRY_URL],
                            topic_data.name,
                            data.records,
                            config,
                            broker.config.values,
                        )
                        _still_leading(broker, partition)  # other requests ran meanwhile
                    base_offset, append_time, start, end = _append(partition, data.records, now)
                    if partition.leadership is not None and acks == -1:
                        waiting = (partition.leadership, end)
                except KafkaError as exc:
                    code, message = exc.code, exc.message
                    partition.failed_produce_requests += 1
                    if code == ErrorCode.kafka_storage_error:  # the disk failed: offline
                        broker.storage_failed(partition.log.directory, message)
                except RecordValidationError as exc:
                    code, message = ErrorCode(exc.code), str(exc)
                    start = partition.log.log_start_offset
                    partition.failed_produce_requests += 1
                    if record_error_cls is not type(None):
                        record_errors = tuple(
                            make(record_error_cls, batch_index=i, batch_index_error_message=text)
                            for i, text in exc.record_errors
                        )
            answer = {
                "index": data.index,
                "error_code": code,
                "base_offset": base_offset,
                "log_append_time": append_time,
                "log_start_offset": start,
                "record_errors": record_errors,
                "error_message": message,
            }
            if waiting is not None:
                replicating.append((answer, *waiting))
            partitions.append(answer)
        answers.append((topic_data.name, partitions))

    def respond() -> ProduceResponse:
        topics = tuple(
            make(
                topic_cls,
                name=name,
                partition_responses=tuple(make(partition_cls, **answer) for answer in partitions),
            )
            for name, partitions in answers
        )
        return make(schema, responses=topics, throttle_time=0)

    if acks == 0:
        return None
    if not replicating:
        return respond()

    timeout_ms = millis(request.timeout)  # the request's batches are not kept past here

    async def when_replicated() -> ProduceResponse:
        await _wait_for_replication(replicating, timeout_ms)
        return respond()

    # the appends are done: the connection reads on while the ISR catches up
    return Deferred(when_replicated())


def _still_leading(broker: Broker, partition: Partition) -> None:
    """Refuse the append when ``partition`` was deleted, went offline or lost its leadership
    while its batch waited for the schema registry."""
    name = f"{partition.topic}-{partition.index}"
    if broker.topics.partition(partition.topic, partition.index) is not partition:
        raise KafkaError(
            ErrorCode.unknown_topic_or_partition,
            f"{name} was deleted while its batch was validated",
        )
    if partition.offline or not partition.is_leader:
        raise KafkaError(
            ErrorCode.not_leader_or_follower,
            f"this broker stopped leading {name} while its batch was validated",
        )


def _short_isr(broker: Broker, partition: Partition) -> tuple[int, ...] | None:
    """The ISR when it is too small for an acks=-1 write to ``partition``, else None."""
    if partition.leadership is not None:
        if partition.leadership.check_min_isr() == ErrorCode.not_enough_replicas:
            return partition.leadership.isr
        return None
    if partition.log.settings.min_insync_replicas > 1:
        return (broker.node_id,)  # one node: the in-sync replica set is this broker alone
    return None


async def _wait_for_replication(
    replicating: Iterable[tuple[dict[str, Any], Leadership, int]], timeout_ms: int
) -> None:
    """Wait, all at once, until each partition's ISR has its batch; errors go into the
    answers (the offsets stay, as Kafka's do)."""
    waits = list(replicating)
    codes = await asyncio.gather(
        *(leadership.wait_for_replication(end, timeout_ms) for _, leadership, end in waits)
    )
    for (answer, leadership, _), code in zip(waits, codes, strict=True):
        if code != ErrorCode.none:
            answer["error_code"] = code
            explained = _WAIT_ERRORS.get(code)
            answer["error_message"] = explained.format(leadership.name) if explained else None


def _append(
    partition: Partition, records: bytes | memoryview | None, now: int
) -> tuple[int, int, int, int]:
    """Validate and append one partition's batch; returns (base offset, append time, start,
    the offset after the batch)."""
    if not records:
        raise KafkaError(ErrorCode.invalid_record, "no record batch")
    config = partition.log.config
    if len(records) > config["max.message.bytes"]:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch of {len(records)} bytes exceeds max.message.bytes "
            f"{config['max.message.bytes']}",
        )
    try:
        header = rb.read_header(records)
        if header.size != len(records):
            raise KafkaError(
                ErrorCode.invalid_record,
                "a produce request must hold exactly one record batch per partition",
            )
        rb.validate(records, header)
    except rb.InvalidBatchError as exc:
        if exc.corrupt:
            raise KafkaError(ErrorCode.corrupt_message, exc.reason) from None
        raise KafkaError(ErrorCode.unsupported_for_message_format, exc.reason) from None
    if header.is_control:
        raise KafkaError(ErrorCode.invalid_record, "clients may not produce control batches")
    if header.record_count <= 0 or header.record_count != header.last_offset_delta + 1:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"record count {header.record_count} does not match last offset delta "
            f"{header.last_offset_delta}",
        )
    if "compact" in config["cleanup.policy"]:
        _require_keys(records, header, f"{partition.topic}-{partition.index}")
    data = _writable(_recompressed(records, header, config))
    try:
        result = partition.log.append(data, now_ms=now)
    except OutOfOrderSequenceError as exc:
        raise KafkaError(ErrorCode.out_of_order_sequence_number, str(exc)) from None
    except InvalidProducerEpochError as exc:
        raise KafkaError(ErrorCode.invalid_producer_epoch, str(exc)) from None
    except UnknownProducerIdError as exc:
        raise KafkaError(ErrorCode.unknown_producer_id, str(exc)) from None
    except StorageError as exc:
        log.error("append to %s-%d failed: %s", partition.topic, partition.index, exc)
        raise KafkaError(ErrorCode.kafka_storage_error, str(exc)) from None
    if not result.duplicate:
        partition.appended(now)
        partition.bytes_in += len(records)  # metrics: per batch, the count from its header
        partition.messages_in += header.record_count
    end = result.last_offset + 1
    return result.base_offset, result.log_append_time_ms, result.log_start_offset, end


def _require_keys(records: bytes | memoryview, header: rb.BatchHeader, where: str) -> None:
    """Compaction keeps the latest record per key: refuse keyless records, as Kafka does, naming
    each one (:class:`RecordValidationError`, INVALID_RECORD)."""
    try:
        decoded = decode_records(records, header)
    except rb.InvalidBatchError as exc:
        code = ErrorCode.corrupt_message if exc.corrupt else ErrorCode.unsupported_compression_type
        raise KafkaError(code, exc.reason) from None
    message = f"Compacted topic cannot accept message without key in topic partition {where}."
    keyless = [(i, message) for i, record in enumerate(decoded) if record.key is None]
    if keyless:
        raise RecordValidationError(keyless)


def _recompressed(
    records: bytes | memoryview, header: rb.BatchHeader, config: Mapping[str, Any]
) -> bytes | memoryview:
    """The batch as the topic's ``compression.type`` (at its ``compression.<codec>.level``)
    wants it stored."""
    topic_codec = config["compression.type"]
    if topic_codec == "producer" or CODECS[topic_codec] == header.compression:
        return records
    level = config.get(f"compression.{topic_codec}.level")
    if topic_codec == "gzip" and level == -1:
        level = None  # Kafka's -1: the codec's default
    return recompress(records, header, CODECS[topic_codec], level=level)


def _writable(data: bytes | memoryview) -> bytearray | memoryview:
    """The batch in a buffer whose base offset the log may patch: the request's own buffer when
    the server handed us a writable view of it (the usual case, no copy), else a copy."""
    if isinstance(data, memoryview) and not data.readonly:
        return data
    return bytearray(data)
