"""Connector plugins for the column-form (batch) tests, loaded by dotted path.

- :class:`BatchSource` writes ``count`` values (``"v<n>"``) to ``topic`` as
  :class:`~sluice.connect.data.SourceBatch` objects of ``batch`` values, source partition
  ``{"batch-source": <connector>}``, the offset after value ``n`` being ``{"n": n + 1}``; every
  record the broker acknowledged is appended to :data:`ACKED` (``commit_record``).
- :class:`RecordingSink` appends every record it is given (all its fields) to :data:`RECORDED`;
  it does not override ``put_batch``, so the runtime builds its records.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from sluice.connect.api import SinkConnector, SinkTask, SourceConnector, SourceTask, Task
from sluice.connect.config_def import ConfigDef
from sluice.connect.data import Schema, SinkRecord, SourceBatch, SourceRecord

ACKED: defaultdict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
"""(value, source offset) of the records acknowledged to :class:`BatchSource` tasks."""
RECORDED: defaultdict[str, list[tuple[Any, ...]]] = defaultdict(list)
"""The records :class:`RecordingSink` tasks were given, as tuples of every field."""
_LOCK = threading.Lock()


class BatchSource(SourceConnector):
    """See the module docstring."""

    CONFIG = (
        ConfigDef()
        .define("topic", "string", doc="Topic to write to.", importance="high")
        .define("count", "int", 10, doc="Values in all.")
        .define("batch", "int", 4, doc="Values per batch.")
    )

    def start(self, config: dict[str, Any]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return BatchSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{}]


class BatchSourceTask(SourceTask):
    """See the module docstring."""

    def start(self, config: dict[str, Any]) -> None:
        self.name = str(config["name"])
        self.topic = str(config["topic"])
        self.count = int(config.get("count", 10))
        self.size = int(config.get("batch", 4))
        self.partition = {"batch-source": self.name}
        committed = self.context.offset_storage_reader.offset(self.partition)
        self.next = int(committed["n"]) if committed else 0

    def poll_batch(self) -> list[SourceRecord | SourceBatch] | None:
        if self.next >= self.count:
            time.sleep(0.05)
            return None
        first = self.next
        last = min(self.count, first + self.size)
        self.next = last
        values = [f"v{n}" for n in range(first, last)]
        return [
            SourceBatch(
                self.partition,
                self.topic,
                Schema("string"),
                values,
                {"n": last},
                lambda: [{"n": n + 1} for n in range(first, last)],
            )
        ]

    def poll(self) -> list[SourceRecord] | None:
        polled = self.poll_batch()
        if polled is None:
            return None
        return [r for item in polled if isinstance(item, SourceBatch) for r in item.records()]

    def commit_record(self, record: SourceRecord) -> None:
        with _LOCK:
            ACKED[self.name].append((record.value, dict(record.source_offset)))

    def stop(self) -> None:
        pass


class RecordingSink(SinkConnector):
    """See the module docstring."""

    CONFIG = ConfigDef().define("topics", "list", doc="Topics to read.", importance="high")

    def start(self, config: dict[str, Any]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return RecordingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{}]


class RecordingSinkTask(SinkTask):
    """See the module docstring."""

    def start(self, config: dict[str, Any]) -> None:
        self.name = str(config["name"])

    def put(self, records: list[SinkRecord]) -> None:
        rows = [
            (
                r.topic,
                r.kafka_partition,
                r.kafka_offset,
                r.key_schema,
                r.key,
                r.value_schema,
                r.value,
                r.timestamp,
                r.timestamp_type,
                r.headers,
                r.original_topic,
                r.original_partition,
                r.original_offset,
            )
            for r in records
        ]
        with _LOCK:
            RECORDED[self.name].extend(rows)

    def stop(self) -> None:
        pass
