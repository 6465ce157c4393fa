"""The record collector of the runtime: a confluent-kafka producer shared by all tasks.

Sends never block the processing loop for long: when librdkafka's queue is full the collector
serves delivery reports and retries. Delivery failures are reported through a producer-wide
callback (``delivery.report.only.error``: no Python call per successful record) and, at the
next :meth:`KafkaCollector.flush` or :meth:`KafkaCollector.check`, handed to ``on_failure``
(the production exception handler): a record it does not skip is raised, so a commit never
covers output that was lost.

A record refused because of the producer's state, not its own — its transaction became
abortable (a record of it could not be delivered: ``_STATE``) or the producer was fenced
(``_FATAL``) — raises :class:`TransactionStateError`: no handler can skip that, since no record
can be written until the thread has aborted the transaction (Kafka's ``RecordCollectorImpl``
raises ``TaskMigratedException`` or ``TaskCorruptedException`` instead of asking the handler).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from sluice.streams.errors import StreamsError
from sluice.streams.record import Headers

__all__ = ["KafkaCollector", "TransactionStateError", "refuses_every_record"]

log = logging.getLogger("sluice.streams")

_ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner chooses


class TransactionStateError(StreamsError):
    """The producer refused a record because of its state (see the module docstring); what the
    thread does about it depends on whether the producer was fenced."""


def refuses_every_record(error: KafkaError) -> bool:
    """Whether ``produce`` failed for the producer's state rather than the record's:

    >>> refuses_every_record(KafkaError(KafkaError._STATE, "Erroneous state"))
    True
    >>> refuses_every_record(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    False
    """
    return (
        error.code() in (KafkaError._STATE, KafkaError._FATAL)
        or error.fatal()
        or error.txn_requires_abort()
    )


class KafkaCollector:
    """Sends task output and changelog records; see the module docstring."""

    producer: Producer
    raw_produce: Any
    """The producer's own ``produce``, for the sinks' fast path: records without headers, sent
    positionally as ``(topic, value, key, -1, None, None, timestamp)`` (``-1``: the partitioner
    picks), falling back to :meth:`send` on ``BufferError``."""

    def __init__(
        self,
        partitions_of: Any,
        on_failure: Callable[[KafkaError, Any], bool] | None = None,
    ) -> None:
        self._partitions_of = partitions_of
        self._on_failure = on_failure
        """``on_failure(error, message) -> skipped?`` for a record the producer could not write."""
        self.failed: list[tuple[KafkaError, Any]] = []

    def bind(self, producer: Producer) -> None:
        """Send through ``producer`` (made after the collector: it needs ``on_delivery``)."""
        self.producer = producer
        self._produce = self.raw_produce = producer.produce

    def on_delivery(self, error: KafkaError | None, message: Any) -> None:
        """Producer-wide delivery callback (errors only)."""
        if error is not None:
            self.failed.append((error, message))

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        partition: int | None,
    ) -> None:
        # Positional arguments only (topic, value, key, partition, callback, on_delivery,
        # timestamp, headers): keywords cost confluent-kafka about 1 µs per call to parse.
        if partition is None:
            partition = _ANY_PARTITION
        try:
            if not headers:
                try:
                    self._produce(topic, value, key, partition, None, None, timestamp)
                    return
                except BufferError:
                    pass  # the queue is full: the slow path below waits for room
            header_list: Any = list(headers) if headers else None
            for _ in range(10_000):
                try:
                    self._produce(topic, value, key, partition, None, None, timestamp, header_list)
                    return
                except BufferError:
                    self.producer.poll(0.05)
        except KafkaException as error:
            if refuses_every_record(error.args[0]):
                raise TransactionStateError(
                    f"the producer refuses records for {topic}: {error.args[0].str()}"
                ) from error
            raise
        raise StreamsError(f"cannot send to {topic}: the producer queue stays full")

    def partitions_of(self, topic: str) -> int:
        return int(self._partitions_of(topic))

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until every record sent so far is acknowledged; raise if any was lost (records
        that the handler skipped are not lost: what it sends instead is waited for too)."""
        for _ in range(10):
            remaining = self.producer.flush(timeout_s)
            if remaining:
                raise StreamsError(f"{remaining} records still unacknowledged after {timeout_s} s")
            if not self.check():
                return
        raise StreamsError("output could not be written: deliveries keep failing")

    def check(self) -> int:
        """Raise if a delivery failed since the last check, unless ``on_failure`` skipped it;
        the number of records skipped."""
        if not self.failed:
            return 0
        failed, self.failed = self.failed, []
        lost = []
        for error, message in failed:
            if self._on_failure is None or not self._on_failure(error, message):
                lost.append(f"{message.topic()}[{message.partition()}]: {error.str()}")
        if lost:
            raise StreamsError(f"output could not be written: {'; '.join(lost[:5])}")
        return len(failed)
