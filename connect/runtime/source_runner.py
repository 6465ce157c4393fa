"""Running a source task: poll → transform → convert → produce; commit offsets once acknowledged.

The loop polls the task, passes each record through the connector's transforms and converters
and produces it (``acks=all``, idempotent producer). Every ``offset.flush.interval.ms`` (and on
stop), once the producer has every record acknowledged, it writes the latest source offset of
each source partition to the offset store and calls the task's ``commit()``: an offset is never
stored before its record is in the topic, so a crash replays at most the records of an interval
or two (at-least-once). The commit is tried after each poll, before its records are sent, and
taken when nothing is in flight then (the acknowledgements usually come while the task waits
for input), so that it does not stall the read; from twice the interval on, the loop waits for
the acknowledgements. ``commit_record`` is called for each record once the
broker acknowledged it (at that commit), then ``commit()``.

The loop calls four hooks — :meth:`SourceTaskRunner.prepare` (before the task starts),
:meth:`~SourceTaskRunner.before_send` and :meth:`~SourceTaskRunner.after_send` (around the
records of each poll), :meth:`~SourceTaskRunner.close_producer` — and
:meth:`~SourceTaskRunner.commit_offsets`; this runner's are the at-least-once commit above,
:class:`~.exactly_once.ExactlyOnceSourceTaskRunner`'s commit records and offsets
in one transaction (Kafka's ``WorkerSourceTask`` and ``ExactlyOnceWorkerSourceTask``). Both
send records through the same code below.

Hot path: the loop calls ``poll_batch``; a :class:`~sluice.connect.SourceBatch` (a file's
lines) is, when the connector has no transforms, converted in one call and produced with one
``produce()`` per value and nothing else per record: its offset is remembered once per batch,
and record objects are built only for a task that overrides ``commit_record``. The producer
reports failed deliveries only (``delivery.report.only.error``): ``flush()`` returning 0 with
no failure reported means every record was acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Producer

from sluice import clients
from sluice.connect.api.connector import OffsetStorageReader, SourceTask
from sluice.connect.api.data import SourceBatch, SourceRecord
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.client_configs import task_clients
from sluice.connect.runtime.offsets import OffsetReader, OffsetStore
from sluice.connect.runtime.task_runner import TaskRunner

__all__ = ["SourceTaskRunner"]

log = logging.getLogger("sluice.connect")


class _Context:
    def __init__(self, reader: OffsetReader) -> None:
        self.offset_storage_reader: OffsetStorageReader = reader


def _failure_collector(failures: list[str]) -> Callable[[KafkaError | None, Any], None]:
    """The producer's delivery callback (failures only). Not a bound method of the runner: the
    producer would hold the runner and the runner the producer, a cycle only the garbage
    collector could free, and with it the producer's threads and connections."""

    def delivered(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            failures.append(f"{message.topic()}: {error.str()}")

    return delivered


class SourceTaskRunner(TaskRunner):
    """Runs one :class:`~sluice.connect.SourceTask`; see the module docstring."""

    kind = "source"

    def __init__(
        self,
        connector: str,
        task_id: int,
        task: SourceTask,
        config: dict[str, Any],
        worker_config: dict[str, Any],
        offsets: OffsetStore,
    ) -> None:
        super().__init__(connector, task_id, config, worker_config)
        self.task = task
        self.offsets = offsets
        self.worker_config = worker_config
        self._last_commit = 0.0  # time.monotonic() of the last commit
        self._failures: list[str] = []  # failed deliveries since the last commit
        self.producer: Producer = clients.producer(
            worker_config["bootstrap.servers"], **self.producer_settings()
        )
        # source partition (as a key) → (partition, latest offset) produced since the last commit
        self._pending: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        # The partition (object) of the last record and its key: most records share their
        # predecessor's, so that the key is built once per batch rather than per record.
        self._last_partition: dict[str, Any] | None = None
        self._last_key = ""
        self._sent: list[SourceRecord] = []  # produced since the last commit (for commit_record)
        self._track_records = type(task).commit_record is not SourceTask.commit_record

    def producer_settings(self) -> dict[str, Any]:
        """The task producer's librdkafka settings (the worker's security settings and its
        ``producer.*`` on top: :mod:`.client_configs`)."""
        worker_config = self.worker_config
        return {
            "client.id": f"connector-producer-{self.name}",
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "delivery.report.only.error": True,
            "on_delivery": _failure_collector(self._failures),
            **task_clients(worker_config, "producer"),
        }

    def execute(self) -> None:
        task = self.task
        self.prepare()
        task.initialize(_Context(OffsetReader(self.offsets, self.connector)))
        task.start(self.config)
        self._last_commit = time.monotonic()
        metrics = self.metrics
        try:
            while not self.stopping():
                self.wait_if_paused()
                if self.stopping():
                    break
                items = task.poll_batch() or ()
                self.before_send(items)
                for item in items:
                    if type(item) is SourceBatch:
                        metrics.source_record_poll += len(item.values)
                        self._send_batch(item)
                    else:
                        metrics.source_record_poll += 1
                        self._send(item)  # type: ignore[arg-type]  # a SourceRecord
                self.after_send()
            self.commit_offsets()
        finally:
            task.stop()
            self.close_producer()

    def prepare(self) -> None:
        """Before the task starts (and reads its offsets)."""

    def before_send(self, items: Any) -> None:
        """Before the records of a poll are sent: the periodic commit.

        Committed before sending what came: the records sent before were likely acknowledged
        while the task waited, so the commit need not block the read. Only when they never are
        does it wait (twice the interval on)."""
        since = time.monotonic() - self._last_commit
        interval = self.offset_flush_interval_s
        if since >= interval and self.commit_offsets(wait=since >= 2 * interval):
            self._last_commit = time.monotonic()

    def after_send(self) -> None:
        """After the records of a poll were handed to the producer."""
        self.producer.poll(0)

    def close_producer(self) -> None:
        """When the task stopped: send what is queued."""
        self.producer.flush(30)

    def _send(self, record: SourceRecord) -> None:
        transformed = self.transforms.apply(record)
        if transformed is None:
            self._remember(record)
            return
        try:
            key = self.key_converter.from_connect(
                transformed.topic, transformed.key_schema, transformed.key
            )
            value = self.value_converter.from_connect(
                transformed.topic, transformed.value_schema, transformed.value
            )
        except Exception as error:
            if not self.errors.tolerate_all:
                raise
            self.metrics.record_error(skipped=True, logged=self.errors.log_errors)
            if self.errors.log_errors:
                log.error("%s: skipping a record that cannot be converted: %s", self.name, error)
            self._remember(record)
            return
        extra: dict[str, Any] = {}
        if transformed.kafka_partition is not None:
            extra["partition"] = transformed.kafka_partition
        if transformed.timestamp is not None:
            extra["timestamp"] = transformed.timestamp
        if transformed.headers:
            extra["headers"] = [
                (name, v if isinstance(v, bytes | None) else str(v).encode())
                for name, v in transformed.headers
            ]
        while True:
            try:
                self.producer.produce(transformed.topic, value, key, **extra)
                break
            except BufferError:  # the local queue is full: let librdkafka send some
                self.producer.poll(0.005)
        self.metrics.source_record_write += 1
        self._remember(record)
        if self._track_records:
            self._sent.append(record)

    def _send_batch(self, batch: SourceBatch) -> None:
        if self.transforms.stages:
            for record in batch.records():
                self._send(record)
            return
        topic = batch.topic
        try:
            values = self.value_converter.from_connect_all(topic, batch.value_schema, batch.values)
            key = self.key_converter.from_connect(topic, None, None)
            keys = None
            if batch.keys is not None:  # a key per value (a CDC table's primary keys)
                keys = self.key_converter.from_connect_all(topic, batch.key_schema, batch.keys)
        except Exception:
            if not self.errors.tolerate_all:
                raise
            for record in batch.records():  # one by one: the bad ones are skipped
                self._send(record)
            return
        produce = self.producer.produce
        # Hot loop, by hand: one C call per record, the rare full queue handled outside it.
        if keys is not None:
            for value, each in zip(values, keys, strict=True):
                try:
                    produce(topic, value, each)
                except BufferError:
                    self._produce_when_room(topic, value, each)
        elif key is None:
            for value in values:
                try:
                    produce(topic, value)
                except BufferError:
                    self._produce_when_room(topic, value, None)
        else:
            for value in values:
                try:
                    produce(topic, value, key)
                except BufferError:
                    self._produce_when_room(topic, value, key)
        self.metrics.source_record_write += len(values)
        self._remember_offset(batch.source_partition, batch.offset)
        if self._track_records:
            self._sent.extend(batch.records())

    def _produce_when_room(self, topic: str, value: bytes | None, key: bytes | None) -> None:
        while True:
            self.producer.poll(0.005)
            try:
                self.producer.produce(topic, value, key)
                return
            except BufferError:
                continue

    def _remember(self, record: SourceRecord) -> None:
        self._remember_offset(record.source_partition, record.source_offset)

    def _remember_offset(self, partition: dict[str, Any], offset: dict[str, Any]) -> None:
        if partition is not self._last_partition:
            self._last_key = repr(sorted(partition.items()))
            self._last_partition = partition
        self._pending[self._last_key] = (partition, offset)

    def commit_offsets(self, wait: bool = True) -> bool:
        """Wait for every record to be acknowledged, then store the source offsets.

        Without ``wait``, only when every record is already acknowledged: False (nothing done)
        while some are in flight."""
        if not wait:
            self.producer.poll(0)
            if len(self.producer) and not self._failures:
                return False
        remaining = self.producer.flush(60)
        if remaining or self._failures:
            failures = self._failures[:]
            self._failures.clear()  # in place: the delivery callback holds this list
            raise ConnectError(
                f"task {self.name}: records not acknowledged ({remaining} pending): "
                + "; ".join(failures[:3])
            )
        sent, self._sent = self._sent, []
        for record in sent:  # all acknowledged now
            self.task.commit_record(record)
        if not self._pending:
            return True
        for partition, offset in self._pending.values():
            self.offsets.put(self.connector, partition, offset)
        self._pending.clear()
        self.offsets.flush()
        self.task.commit()
        return True
