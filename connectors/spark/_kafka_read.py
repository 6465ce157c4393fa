"""Read offsets ``[start, end)`` of one topic-partition into Arrow record batches (a Spark task).

Runs in Spark's Python worker. A confluent_kafka Consumer is assigned the partition at ``start``
(no group membership, nothing committed); its records come from ``consume()`` in lists and are
appended column by column (one list comprehension per column, no Python loop per record); every
``rows_per_batch`` records become one ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` (plus
``headers`` when asked for).

The range ends at the first record at or past ``end``, or at a partition-EOF event at or past
``end``: offsets inside the range may be missing (compacted away, transaction markers, aborted
records under ``read_committed``), so the reader never waits for ``end - 1`` itself. A broker that
delivers nothing for ``poll_timeout_s`` seconds fails the task with what was expected.

If ``start`` is below the log start offset (records deleted by retention or DeleteRecords), the
consumer reports it: with ``failOnDataLoss`` (the default) the task fails with a clear message,
without it the consumer skips to the log start and the skipped offsets are logged.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from sluice.connectors.spark._metadata import is_security_failure
from sluice.connectors.spark._offsets import OffsetRange

__all__ = [
    "ARROW_SCHEMA",
    "HEADERS_TYPE",
    "DataLossError",
    "KafkaReadError",
    "arrow_schema",
    "read_range",
]

log = logging.getLogger(__name__)

HEADERS_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
)
# confluent_kafka's timestamp types (0 none, 1 create, 2 log append) → Kafka's ids (-1, 0, 1)
_KAFKA_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


class KafkaReadError(RuntimeError):
    """The broker did not deliver the records of a range, or reported an error."""


class DataLossError(KafkaReadError):
    """Offsets to read are gone from the log (deleted or compacted) and ``failOnDataLoss`` holds."""


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects for the source's Spark schema."""
    return (
        ARROW_SCHEMA.append(pa.field("headers", HEADERS_TYPE)) if include_headers else ARROW_SCHEMA
    )


class _Columns:
    """Records of one batch, one Python list per column."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.header_counts: list[int | None] = []
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []

    def extend(self, messages: list[Message], offsets: list[int]) -> None:
        """Append ``messages`` (records without error) at ``offsets``, column by column."""
        self.keys += [m.key() for m in messages]
        self.values += [m.value() for m in messages]
        self.offsets += offsets
        stamps = [m.timestamp() for m in messages]
        self.timestamps += [ts * 1000 for _, ts in stamps]
        kinds = _KAFKA_TIMESTAMP_TYPE
        self.types += [kinds.get(kind, -1) for kind, _ in stamps]
        if self.include_headers:
            for msg in messages:
                self._append_headers(msg.headers())

    def _append_headers(self, headers: Any) -> None:
        pairs = list(headers.items()) if isinstance(headers, dict) else headers
        if pairs:
            self.header_counts.append(len(pairs))
            for key, value in pairs:
                self.header_keys.append(key)
                self.header_values.append(value.encode() if isinstance(value, str) else value)
        else:
            self.header_counts.append(None)

    def __len__(self) -> int:
        return len(self.offsets)

    def batch(self, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self.offsets)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(self.types, pa.int32()),
        ]
        if self.include_headers:
            arrays.append(self._headers())
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(self.include_headers))

    def _headers(self) -> pa.Array:
        positions = [0]
        valid = []
        for count in self.header_counts:
            positions.append(positions[-1] + (count or 0))
            valid.append(count is not None)
        items = pa.StructArray.from_arrays(
            [pa.array(self.header_keys, pa.string()), pa.array(self.header_values, pa.binary())],
            fields=list(HEADERS_TYPE.value_type),
        )
        mask = pa.array([not v for v in valid], pa.bool_())
        return pa.ListArray.from_arrays(
            pa.array(positions, pa.int32()), items, type=HEADERS_TYPE, mask=mask
        )


def read_range(
    config: dict[str, str | bool | int],
    rng: OffsetRange,
    *,
    include_headers: bool,
    rows_per_batch: int,
    poll_timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as record batches; the consumer is closed when done."""
    if rng.size == 0:
        return
    where = f"{rng.topic}-{rng.partition} [{rng.start}, {rng.end})"
    client_errors: list[KafkaError] = []  # the client's own errors (not a partition's)
    try:
        consumer = Consumer({**config, "error_cb": client_errors.append})
    except (KafkaException, ValueError, TypeError) as exc:
        raise KafkaReadError(
            f"{where}: librdkafka refuses the source's kafka.* options (option "
            f"'kafka.<property>' for the property it names): {exc}"
        ) from None
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        columns = _Columns(include_headers)
        last_progress = clock()
        last_error = ""
        position = rng.start
        while position < rng.end:
            wanted = min(rows_per_batch - len(columns), rng.end - position)
            messages = consumer.consume(max(1, wanted), min(1.0, poll_timeout_s))
            for client_error in client_errors:  # a failed login or TLS handshake: fail now
                _check_denied(client_error, rng, where)
                last_error = client_error.str()
            client_errors.clear()
            if not messages:
                if clock() - last_progress > poll_timeout_s:
                    raise KafkaReadError(
                        f"{where}: no records arrived within {poll_timeout_s:.0f} s (next offset "
                        f"{position}, broker {config.get('bootstrap.servers')}"
                        f"{', last error: ' + last_error if last_error else ''}); "
                        "the option kafkaConsumer.pollTimeoutMs sets this bound"
                        f"{_ACL_HINT.format(rng.topic) if _secured(config) else ''}"
                    )
                continue
            records = [m for m in messages if m.error() is None]
            if records:
                last_progress = clock()
                found = [m.offset() for m in records]
                if None in found:  # records always have an offset; skip any without, as before
                    records = [m for m, o in zip(records, found, strict=True) if o is not None]
                    found = [o for o in found if o is not None]
                offsets = cast(list[int], found)
                if offsets and position == rng.start and offsets[0] > rng.start:
                    gap = f"{rng.start}..{offsets[0] - 1}"
                    log.info("%s: offsets %s are not in the log", where, gap)
                if offsets and offsets[-1] >= rng.end:  # offsets ascend: keep those below end
                    cut = bisect.bisect_left(offsets, rng.end)
                    records, offsets = records[:cut], offsets[:cut]
                    position = rng.end
                if offsets:
                    columns.extend(records, offsets)
                    position = max(position, offsets[-1] + 1)
            if len(records) < len(messages):  # error events (partition EOF, mostly)
                for msg in messages:
                    error = msg.error()
                    if error is not None:
                        position = _handle_error(error, msg.offset(), position, rng, where)
                        if error.code() != KafkaError.GROUP_AUTHORIZATION_FAILED:
                            last_error = error.str()
            if len(columns) >= rows_per_batch:
                yield columns.batch(rng.topic, rng.partition)
                columns = _Columns(include_headers)
        if len(columns):
            yield columns.batch(rng.topic, rng.partition)
    finally:
        consumer.close()


_ACL_HINT = " (under ACLs: may the source's principal Read topic {}?)"


def _secured(config: dict[str, Any]) -> bool:
    return str(config.get("security.protocol", "plaintext")).lower() != "plaintext"


def _check_denied(error: KafkaError, rng: OffsetRange, where: str) -> None:
    """Raise when the cluster refuses the source's principal: retrying does not cure a wrong
    password, an untrusted certificate or a missing ACL."""
    if is_security_failure(error):
        raise KafkaReadError(
            f"{where}: {error.str()} (check the options kafka.security.protocol, "
            "kafka.sasl.mechanism, kafka.sasl.jaas.config and kafka.ssl.truststore.location)"
        )
    if error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise KafkaReadError(
            f"{where}: not authorized ({error.str()}): the source's principal needs Read on "
            f"topic {rng.topic}"
        )


def _handle_error(
    error: KafkaError, offset: int | None, position: int, rng: OffsetRange, where: str
) -> int:
    """The position after an error event; raises when the range cannot be read.

    Other errors are informational (librdkafka retries by itself): the poll bound applies.
    """
    code = error.code()
    if code == KafkaError._PARTITION_EOF:
        # At or past `end`, the range is complete even if its last offsets are missing. Before
        # it, the log is shorter than planned (a follower catching up?): wait, bounded by the poll.
        return rng.end if offset is not None and offset >= rng.end else position
    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        raise DataLossError(
            f"{where}: offset {position} is no longer in the log (deleted by retention or "
            "DeleteRecords, or the topic was recreated): some data is lost. "
            "Set the option failOnDataLoss=false to skip to the earliest available offset "
            f"instead. The broker said: {error.str()}"
        )
    _check_denied(error, rng, where)
    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
        # librdkafka looks up the coordinator of the consumer's group, which the source never
        # joins nor commits to: without Describe on the group the read works all the same
        log.debug("%s: %s (the source does not use the group)", where, error.str())
        return position
    if error.fatal():
        raise KafkaReadError(f"{where}: {error.str()}")
    log.warning("%s: %s", where, error.str())
    return position
