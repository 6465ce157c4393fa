"""The connector API: what a connector plugin implements (Kafka Connect's, in Python).

A :class:`SourceConnector` or :class:`SinkConnector` receives its config, declares it
(:attr:`Connector.CONFIG`), and splits the work into at most ``tasks.max`` task configs; the
worker runs one :class:`SourceTask` / :class:`SinkTask` per task config, each in a thread.

- A source task's :meth:`SourceTask.poll` returns records carrying a *source partition* (where
  in the source system, e.g. ``{"file": "/var/log/a.log"}``) and a *source offset* (how far,
  e.g. ``{"position": 1024}``). The worker commits offsets only after the broker acknowledged
  the records; on restart a task reads its offsets back through
  ``context.offset_storage_reader``.
- A sink task's :meth:`SinkTask.put` receives records read from topics; the worker commits the
  consumer offsets only after :meth:`SinkTask.flush` (or :meth:`SinkTask.pre_commit`) says the
  data is written — at-least-once delivery, exactly-once where the sink is idempotent.

>>> class Lines(SourceTask):
...     def start(self, config): self.left = ["a", "b"]
...     def poll(self):
...         if not self.left: return None
...         line = self.left.pop(0)
...         return [SourceRecord({"src": "x"}, {"n": 1}, "lines", None, None, line)]
...     def stop(self): pass
>>> task = Lines(); task.start({}); [r.value for r in task.poll()]
['a']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

from sluice.connect.api.config_def import ConfigDef, ConfigValue
from sluice.connect.api.data import SinkBatch, SinkRecord, SourceBatch, SourceRecord

__all__ = [
    "Connector",
    "ConnectorContext",
    "ErrantRecordReporter",
    "OffsetStorageReader",
    "SinkBatch",
    "SinkConnector",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TopicPartition",
]


class TopicPartition(NamedTuple):
    """A topic and a partition number."""

    topic: str
    partition: int


class ConnectorContext(Protocol):
    """What a connector may ask of the runtime."""

    def request_task_reconfiguration(self) -> None:
        """Ask for :meth:`Connector.task_configs` to be called again (the input changed)."""

    def raise_error(self, error: Exception) -> None:
        """Fail the connector with ``error``."""


class OffsetStorageReader(Protocol):
    """Reads committed source offsets."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The last committed offset of one source partition (None: none yet)."""

    def offsets(
        self, partitions: list[Mapping[str, Any]]
    ) -> dict[tuple[tuple[str, Any], ...], dict[str, Any]]:
        """Committed offsets of several source partitions, by ``sorted(partition.items())``."""


class SourceTaskContext(Protocol):
    """What a source task may ask of the runtime."""

    offset_storage_reader: OffsetStorageReader


class SinkTaskContext(Protocol):
    """What a sink task may ask of the runtime."""

    def offset(self, partition: TopicPartition, offset: int) -> None:
        """Rewind (or skip) consumption of ``partition`` to ``offset``."""

    def assignment(self) -> set[TopicPartition]:
        """The partitions this task reads now."""

    def request_commit(self) -> None:
        """Ask for offsets to be committed soon (after a flush)."""

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """Kafka's KIP-610: where a task reports a record it cannot write (``put``), or None
        when the connector has no dead-letter topic and no ``errors.log.enable``."""


class ErrantRecordReporter(Protocol):
    """Sends a record the task could not write to the dead-letter topic (with Kafka's
    ``__connect.errors.*`` headers, stage ``TASK_PUT``) and logs it; under
    ``errors.tolerance=none`` it raises instead, failing the task. Reported records are in the
    dead-letter topic before the offsets after them are committed."""

    def report(self, record: SinkRecord, error: BaseException) -> None:
        """Report ``record``, which failed with ``error``."""


class Connector(ABC):
    """Base of connector plugins; see the module docstring."""

    CONFIG: ClassVar[ConfigDef] = ConfigDef()
    """The connector's settings (validated by the REST API and on start)."""

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        """Called once by the runtime, before :meth:`start`."""
        self.context = context

    def version(self) -> str:
        """The plugin's version (shown by ``GET /connector-plugins``)."""
        return "1.0"

    @abstractmethod
    def start(self, config: dict[str, Any]) -> None:
        """Begin with ``config`` (already validated against :attr:`CONFIG`)."""

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The task this connector's work runs in."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        """One config per task, at most ``max_tasks``."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release what :meth:`start` took."""

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """Problems with ``config``, per key (``PUT .../config/validate``)."""
        return self.CONFIG.validate(config)


class SourceConnector(Connector):
    """A connector that reads a source system into topics."""

    def exactly_once_support(self, config: Mapping[str, Any]) -> bool | None:
        """Whether the connector's tasks can run exactly-once with ``config`` (Kafka's
        ``SourceConnector.exactlyOnceSupport``, KIP-618): True when a source offset says
        exactly where to resume — records polled after it are polled again, the same ones —,
        False when not, None (the default) when the connector does not say. A connector
        configured ``exactly.once.support=required`` is refused unless this is True."""
        return None


class SinkConnector(Connector):
    """A connector that writes topics into a sink system."""


class Task(ABC):
    """Base of tasks."""

    def version(self) -> str:
        """The task's version."""
        return "1.0"

    @abstractmethod
    def start(self, config: dict[str, Any]) -> None:
        """Begin with the task's config."""

    @abstractmethod
    def stop(self) -> None:
        """Stop; called from another thread while :meth:`SourceTask.poll` may be running."""

    def warnings(self) -> list[str]:
        """What the task works around without failing (a file it waits for…), one line each,
        shown in its status (``warnings``) while it lasts; none by default. Called from
        another thread than the task's."""
        return []


class SourceTask(Task):
    """Reads records from a source system."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Called by the runtime before :meth:`start`."""
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """New records (block briefly, up to about a second, when there are none)."""

    def poll_batch(self) -> Sequence[SourceRecord | SourceBatch] | None:
        """What the runtime calls: like :meth:`poll`, but records may come in column form.

        A task that reads many small values of one source partition (lines of a file) may
        override it to return :class:`~sluice.connect.SourceBatch` objects beside or
        instead of records; the runtime then converts and produces the values in bulk. By
        default, :meth:`poll`.
        """
        return self.poll()

    def commit(self) -> None:
        """Offsets of everything polled so far were committed."""

    def commit_record(self, record: SourceRecord) -> None:
        """``record`` was acknowledged by the broker."""


class SinkTask(Task):
    """Writes records into a sink system."""

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the runtime before :meth:`start`."""
        self.context = context

    @abstractmethod
    def put(self, records: list[SinkRecord]) -> None:
        """Write (or buffer) ``records``; raise to fail (or retry, see errors.tolerance)."""

    def put_batch(self, batch: SinkBatch) -> None:
        """What the runtime calls: :meth:`put` of ``batch.records()`` unless overridden.

        A sink that needs only the values (a file of lines) may override it and read
        ``batch.values``, so that no record object is built.
        """
        self.put(batch.records())

    def flush(self, offsets: dict[TopicPartition, int]) -> None:
        """Make everything put so far durable; ``offsets`` are the next offsets to read."""

    def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The offsets safe to commit: by default flush, then all of them."""
        self.flush(offsets)
        return offsets

    def open(self, partitions: set[TopicPartition]) -> None:
        """Partitions assigned to this task (after a rebalance)."""

    def close(self, partitions: set[TopicPartition]) -> None:
        """Partitions taken away from this task."""
