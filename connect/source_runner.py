"""Running a source task: poll → transform → convert → produce; commit offsets once acknowledged.

The loop polls the task, passes each record through the connector's transforms and converters
and produces it (``acks=all``, idempotent producer). Every ``offset.flush.interval.ms`` (and on
stop) it waits for the producer to have every record acknowledged, then writes the latest
source offset of each source partition to the offset store and calls the task's ``commit()``:
an offset is never stored before its record is in the topic, so a crash replays at most the
records of one interval (at-least-once). ``commit_record`` is called for each record once the
broker acknowledged it (at that commit), then ``commit()``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, Producer

from sluice import clients
from sluice.connect.api import OffsetStorageReader, SourceTask
from sluice.connect.data import SourceRecord
from sluice.connect.errors import ConnectError
from sluice.connect.offsets import OffsetReader, OffsetStore
from sluice.connect.task_runner import TaskRunner

__all__ = ["SourceTaskRunner"]

log = logging.getLogger("sluice.connect")


class _Context:
    def __init__(self, reader: OffsetReader) -> None:
        self.offset_storage_reader: OffsetStorageReader = reader


class SourceTaskRunner(TaskRunner):
    """Runs one :class:`~sluice.connect.api.SourceTask`; see the module docstring."""

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
        self.producer: Producer = clients.producer(
            worker_config["bootstrap.servers"],
            **{
                "client.id": f"connector-producer-{self.name}",
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                **{k[9:]: v for k, v in worker_config.items() if k.startswith("producer.")},
            },
        )
        self._pending: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._failures: list[str] = []
        self._sent: list[SourceRecord] = []  # produced since the last commit

    def _delivered(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self._failures.append(f"{message.topic()}: {error.str()}")

    def execute(self) -> None:
        task = self.task
        task.initialize(_Context(OffsetReader(self.offsets, self.connector)))
        task.start(self.config)
        last_commit = time.monotonic()
        try:
            while not self.stopping():
                self.wait_if_paused()
                if self.stopping():
                    break
                records = task.poll() or []
                for record in records:
                    self._send(record)
                self.producer.poll(0)
                if time.monotonic() - last_commit >= self.offset_flush_interval_s:
                    self.commit_offsets()
                    last_commit = time.monotonic()
            self.commit_offsets()
        finally:
            task.stop()
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
                self.producer.produce(
                    transformed.topic, value, key, on_delivery=self._delivered, **extra
                )
                break
            except BufferError:
                self.producer.poll(0.1)
        self._remember(record)
        self._sent.append(record)

    def _remember(self, record: SourceRecord) -> None:
        key = repr(sorted(record.source_partition.items()))
        self._pending[key] = (record.source_partition, record.source_offset)

    def commit_offsets(self) -> None:
        """Wait for every record to be acknowledged, then store the source offsets."""
        remaining = self.producer.flush(60)
        if remaining or self._failures:
            failures, self._failures = self._failures, []
            raise ConnectError(
                f"task {self.name}: records not acknowledged ({remaining} pending): "
                + "; ".join(failures[:3])
            )
        sent, self._sent = self._sent, []
        for record in sent:  # all acknowledged now
            self.task.commit_record(record)
        if not self._pending:
            return
        for partition, offset in self._pending.values():
            self.offsets.put(self.connector, partition, offset)
        self._pending.clear()
        self.offsets.flush()
        self.task.commit()
