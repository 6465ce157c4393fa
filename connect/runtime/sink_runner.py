"""Running a sink task: consume → convert → transform → ``put``; commit offsets after flush.

The task's consumer is a member of the group ``connect-<connector>`` (Kafka Connect's name), so
that the tasks of a connector share the partitions of its ``topics`` (or ``topics.regex``).
Every ``offset.flush.interval.ms``, on rebalance and on stop, the runner asks the task which
offsets are safe (``pre_commit``, which flushes by default) and commits exactly those: a record
is never marked consumed before the sink has it (at-least-once; idempotent sinks make it
exactly-once). A record that cannot be converted or transformed fails the task, or with
``errors.tolerance=all`` is skipped and sent to the dead-letter topic with
``__connect.errors.*`` headers.

Hot path: without transforms, and with converters that give every record one schema (string,
bytes), a consumed batch is converted in one call per column (values, keys) and handed to
``put_batch`` as a :class:`~sluice.connect.SinkBatch` whose records are built only if the
task asks for them. A batch holding anything unusual (a consumer error, bytes that do not
convert) takes the record-by-record path, which applies the error policy.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from sluice import clients
from sluice.connect.api.connector import SinkTask, TopicPartition
from sluice.connect.api.data import Schema, SinkBatch, SinkRecord
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.client_configs import task_clients
from sluice.connect.runtime.task_runner import TaskRunner
from sluice.connect.runtime.tolerance import dead_letter_headers

__all__ = ["SinkTaskRunner"]

log = logging.getLogger("sluice.connect")


class _Context:
    def __init__(self, runner: SinkTaskRunner) -> None:
        self.runner = runner

    def offset(self, partition: TopicPartition, offset: int) -> None:
        if self.runner.opening is not None:  # inside open(): applied with the assignment
            self.runner.opening[partition] = offset
            return
        self.runner.consumer.seek(KafkaPartition(partition.topic, partition.partition, offset))

    def assignment(self) -> set[TopicPartition]:
        return set(self.runner.assigned)

    def request_commit(self) -> None:
        self.runner.commit_requested = True

    def errant_record_reporter(self) -> _Reporter | None:
        errors = self.runner.errors
        if errors.dead_letter_topic is None and not errors.log_errors:
            return None
        return _Reporter(self.runner)


class _Reporter:
    """KIP-610's reporter (see :class:`~sluice.connect.ErrantRecordReporter`)."""

    def __init__(self, runner: SinkTaskRunner) -> None:
        self.runner = runner

    def report(self, record: SinkRecord, error: BaseException) -> None:
        runner = self.runner
        where = f"{record.original_topic}[{record.original_partition}]@{record.original_offset}"
        if not runner.errors.tolerate_all:
            raise ConnectError(
                f"task {runner.name}: tolerance exceeded in the error handler: {where}: {error}"
            ) from error
        runner.metrics.record_error(skipped=True, logged=runner.errors.log_errors)
        if runner.errors.log_errors:
            log.error("%s: skipping %s (TASK_PUT): %s", runner.name, where, error)
        message = runner.message_of(record)
        if message is not None:
            runner.dead_letter(message, "TASK_PUT", error)


class SinkTaskRunner(TaskRunner):
    """Runs one :class:`~sluice.connect.SinkTask`; see the module docstring."""

    kind = "sink"

    def __init__(
        self,
        connector: str,
        task_id: int,
        task: SinkTask,
        config: dict[str, Any],
        worker_config: dict[str, Any],
    ) -> None:
        super().__init__(connector, task_id, config, worker_config)
        self.task = task
        self.assigned: set[TopicPartition] = set()
        self.commit_requested = False
        self._positions: dict[TopicPartition, int] = {}
        self._closing = False
        self._paused = False
        bootstrap = worker_config["bootstrap.servers"]
        self.consumer: Consumer = clients.consumer(
            bootstrap,
            **{
                "group.id": f"connect-{connector}",
                "client.id": f"connector-consumer-{self.name}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                # librdkafka stops fetching a partition for fetch.queue.backoff.ms (1 s by
                # default) once queued.min.messages are waiting: a sink that drains the queue in
                # a fraction of that would then sit idle. Check again soon instead.
                "fetch.queue.backoff.ms": 20,
                # A subscribed topic that does not exist yet (a source about to create it) is
                # looked for again only at librdkafka's periodic metadata refresh, every 5 min by
                # default; Kafka's Java consumer asks again at once. Look every few seconds.
                "topic.metadata.refresh.interval.ms": 5_000,
                **task_clients(worker_config, "consumer"),
            },
        )
        # rewinds asked by the task during open(), applied when the partitions are assigned
        self.opening: dict[TopicPartition, int] | None = None
        self._messages: list[Any] = []  # the batch being put (for reported records)
        self._by_offset: dict[tuple[str, int, int], Any] | None = None
        self._dead_letters: Producer | None = None
        if self.errors.dead_letter_topic:
            self._dead_letters = clients.producer(
                bootstrap, **{"acks": "all", **task_clients(worker_config, "producer")}
            )

    def _topics(self) -> list[str]:
        topics = [t.strip() for t in str(self.config.get("topics", "")).split(",") if t.strip()]
        regex = self.config.get("topics.regex")
        if regex:
            topics.append("^" + str(regex))
        return topics

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        new = {TopicPartition(p.topic, p.partition) for p in partitions}
        self.assigned |= new
        self.opening = {}
        try:
            self.task.open(new)
            rewinds = self.opening
        finally:
            self.opening = None
        for partition in partitions:
            rewind = rewinds.get(TopicPartition(partition.topic, partition.partition))
            if rewind is not None:
                partition.offset = rewind
        consumer.assign(partitions)
        if self._paused:
            consumer.pause(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        if self._closing:
            return  # the teardown commits (or, after a failure, must not) and closes
        gone = {TopicPartition(p.topic, p.partition) for p in partitions}
        self.commit_offsets()
        self.task.close(gone)
        self.assigned -= gone
        for partition in gone:
            self._positions.pop(partition, None)

    def execute(self) -> None:
        task = self.task
        task.initialize(_Context(self))
        task.start(self.config)
        self.consumer.subscribe(
            self._topics(), on_assign=self._on_assign, on_revoke=self._on_revoke
        )
        last_commit = time.monotonic()
        metrics = self.metrics
        try:
            while not self.stopping():
                self._follow_pause()
                try:
                    messages = self.consumer.consume(500, 0.2)
                except KafkaException as error:
                    raise ConnectError(f"task {self.name}: consumer failed: {error}") from None
                metrics.sink_record_read += len(messages)
                positions: dict[TopicPartition, int] = {}
                batch = self._batch(messages, positions) if messages else None
                if batch is None:
                    records = [r for r in (self._record(m, positions) for m in messages) if r]
                    batch = SinkBatch.of(records) if records else None
                self._messages, self._by_offset = messages, None
                if batch is not None:
                    self.errors.retry(
                        lambda batch=batch: task.put_batch(batch),  # type: ignore[misc]
                        f"{self.name} put",
                        self.stopping,
                    )
                    metrics.sink_record_send += len(batch)
                # only now are these records the sink's: their offsets may be committed
                self._positions.update(positions)
                if (
                    self.commit_requested
                    or time.monotonic() - last_commit >= self.offset_flush_interval_s
                ):
                    self.commit_offsets()
                    last_commit = time.monotonic()
            self.commit_offsets()
        finally:
            # After a failure nothing more is committed: the records of the failed batch were
            # not written, and a restart must read them again.
            self._closing = True
            try:
                self.consumer.close()
            finally:
                try:
                    task.close(set(self.assigned))
                finally:
                    task.stop()
                    if self._dead_letters is not None:
                        self._dead_letters.flush(30)

    def release(self) -> None:
        self.consumer.close()
        if self._dead_letters is not None:
            self._dead_letters.flush(10)

    def _follow_pause(self) -> None:
        """Paused: stop fetching but keep polling (the group membership stays alive)."""
        wanted = not self._resume.is_set()
        if wanted != self._paused:
            assignment = self.consumer.assignment()
            if wanted:
                self.consumer.pause(assignment)
            else:
                self.consumer.resume(assignment)
            self._paused = wanted

    def _batch(self, messages: list[Any], positions: dict[TopicPartition, int]) -> SinkBatch | None:
        """The fast path (see the module docstring), or None for record by record."""
        if self.transforms.stages:
            return None
        # Hot path, by hand: a C call per message and column, in comprehensions.
        for message in messages:
            if message.error() is not None:
                return None
        datas = [message.value() for message in messages]
        keys = [message.key() for message in messages]
        topic = messages[0].topic()  # for error messages: these converters read no topic
        try:
            converted = self.value_converter.to_connect_all(topic, datas)
            if keys.count(None) != len(keys):
                converted_keys = self.key_converter.to_connect_all(topic, keys)
            else:  # no keys (the usual case): only their schema to learn
                converted_keys = self.key_converter.to_connect_all(topic, [])
                if converted_keys is not None:
                    converted_keys = converted_keys[0], keys
        except Exception:
            return None  # record by record: the error policy decides about the bad ones
        if converted is None or converted_keys is None:
            return None
        if len(self.assigned) == 1:
            # One partition assigned: every message is from it and the last one gives the
            # position (were one from another partition, that one's position would merely not
            # advance now: redelivery, never a loss).
            last = messages[-1]
            positions[TopicPartition(last.topic(), last.partition())] = last.offset() + 1
        else:
            latest = {(m.topic(), m.partition()): m.offset() for m in messages}
            for (name, partition), offset in latest.items():
                positions[TopicPartition(name, partition)] = offset + 1
        value_schema, values = converted
        key_schema, key_values = converted_keys
        return SinkBatch(
            values, lambda: _records(messages, key_schema, key_values, value_schema, values)
        )

    def _record(self, message: Any, positions: dict[TopicPartition, int]) -> SinkRecord | None:
        problem = message.error()
        if problem is not None:
            log.warning("%s: consumer: %s", self.name, problem.str())
            return None
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        positions[TopicPartition(topic, partition)] = offset + 1
        stage = "KEY_CONVERTER"
        try:
            key_schema, key = self.key_converter.to_connect(topic, message.key())
            stage = "VALUE_CONVERTER"
            value_schema, value = self.value_converter.to_connect(topic, message.value())
            record = _sink_record(message, key_schema, key, value_schema, value)
            stage = "TRANSFORMATION"
            transformed: SinkRecord | None = self.transforms.apply(record)
            return transformed
        except Exception as error:
            if not self.errors.tolerate_all:
                raise
            self.metrics.record_error(skipped=True, logged=self.errors.log_errors)
            if self.errors.log_errors:
                log.error(
                    "%s: skipping %s[%d]@%d (%s): %s",
                    self.name,
                    topic,
                    partition,
                    offset,
                    stage,
                    error,
                )
            self.dead_letter(message, stage, error)
            return None

    def message_of(self, record: SinkRecord) -> Any:
        """The consumed message ``record`` came from, in the batch being put (None: not there)."""
        if self._by_offset is None:
            self._by_offset = {(m.topic(), m.partition(), m.offset()): m for m in self._messages}
        key = (record.original_topic, record.original_partition, record.original_offset)
        return self._by_offset.get(key)  # type: ignore[arg-type]

    def dead_letter(self, message: Any, stage: str, error: BaseException) -> None:
        """Send ``message`` to the dead-letter topic (if any) with the context headers."""
        producer = self._dead_letters
        topic = self.errors.dead_letter_topic
        if producer is None or topic is None:
            return
        headers = list(message.headers() or [])
        if self.errors.context_headers:
            headers += dead_letter_headers(
                topic=message.topic(),
                partition=message.partition(),
                offset=message.offset(),
                connector=self.connector,
                task=self.task_id,
                stage=stage,
                plugin=type(self.task).__qualname__,
                error=error,
            )
        self.metrics.deadletterqueue_produce_requests += 1
        try:
            producer.produce(topic, message.value(), message.key(), headers=headers)
        except Exception:
            self.metrics.deadletterqueue_produce_failures += 1
            raise
        producer.poll(0)

    def commit_offsets(self) -> None:
        """Commit the offsets the task says are written (``pre_commit``)."""
        self.commit_requested = False
        if not self._positions:
            return
        if self._dead_letters is not None:
            self._dead_letters.flush(30)  # skipped records are in the DLQ before we move on
        safe = self.task.pre_commit(dict(self._positions))
        if safe:
            self.consumer.commit(
                offsets=[KafkaPartition(p.topic, p.partition, o) for p, o in safe.items()],
                asynchronous=False,
            )
            self.metrics.offset_commit_completion += 1


def _records(
    messages: list[Any],
    key_schema: Schema | None,
    keys: list[Any],
    value_schema: Schema | None,
    values: list[Any],
) -> list[SinkRecord]:
    """The records of a fast-path batch (converted in bulk)."""
    return [
        _sink_record(message, key_schema, key, value_schema, value)
        for message, key, value in zip(messages, keys, values, strict=True)
    ]


def _sink_record(
    message: Any, key_schema: Schema | None, key: Any, value_schema: Schema | None, value: Any
) -> SinkRecord:
    """The record a sink task gets for a consumer ``message`` with its converted key and value."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    kind, timestamp = message.timestamp()
    return SinkRecord(
        topic,
        partition,
        key_schema,
        key,
        value_schema,
        value,
        timestamp if timestamp >= 0 else None,
        list(message.headers() or []),
        kafka_offset=offset,
        timestamp_type="LogAppendTime" if kind == 2 else "CreateTime",
        original_topic=topic,
        original_partition=partition,
        original_offset=offset,
    )
