"""Connector plugins for the column-form (batch) tests, loaded by dotted path.

- :class:`BatchSource` writes ``count`` values (``"v<n>"``; ``"vé<n>"`` for every ``n`` that is a
  multiple of ``accent.every``, when set) to ``topic`` as :class:`~sluice.connect.SourceBatch`
  objects of ``batch`` values (``form=batch``, the default) or as the same values in
  :class:`~sluice.connect.SourceRecord` objects (``form=records``), with keys ``"k<n>"`` when
  ``keyed``, source partition ``{"batch-source": <connector>}``, the offset after value ``n``
  being ``{"n": n + 1}``; every record the broker acknowledged is appended to :data:`ACKED`
  (``commit_record``).
- :class:`RecordingSink` appends every record it is given (all its fields) to :data:`RECORDED`;
  it does not override ``put_batch``, so the runtime builds its records.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from sluice.connect.api.config_def import ConfigDef, one_of
from sluice.connect.api.connector import SinkConnector, SinkTask, SourceConnector, SourceTask, Task
from sluice.connect.api.data import Schema, SinkRecord, SourceBatch, SourceRecord

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
        .define(
            "form",
            "string",
            "batch",
            doc="Batches or records.",
            validator=one_of("batch", "records"),
        )
        .define("keyed", "boolean", False, doc="A key per value.")
        .define("accent.every", "int", 0, doc="Every n-th value is not ASCII (0: none).")
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
        self.form = str(config.get("form", "batch"))
        self.keyed = str(config.get("keyed", False)).lower() == "true"
        self.accent = int(config.get("accent.every", 0))
        self.partition = {"batch-source": self.name}
        committed = self.context.offset_storage_reader.offset(self.partition)
        self.next = int(committed["n"]) if committed else 0

    def poll_batch(self) -> list[SourceRecord | SourceBatch] | None:
        if self.form == "records":
            return self.poll()  # type: ignore[return-value]  # list is invariant
        return self._next_batch()

    def poll(self) -> list[SourceRecord] | None:
        batch = self._next_batch()
        if batch is None:
            return None
        return [r for item in batch for r in item.records()]

    def _next_batch(self) -> list[SourceBatch] | None:
        if self.next >= self.count:
            time.sleep(0.05)
            return None
        first = self.next
        last = min(self.count, first + self.size)
        self.next = last
        accent = self.accent
        values = [f"vé{n}" if accent and n % accent == 0 else f"v{n}" for n in range(first, last)]
        keyed = {"key_schema": Schema("string"), "keys": [f"k{n}" for n in range(first, last)]}
        return [
            SourceBatch(
                self.partition,
                self.topic,
                Schema("string"),
                values,
                {"n": last},
                lambda: [{"n": n + 1} for n in range(first, last)],
                **(keyed if self.keyed else {}),  # type: ignore[arg-type]
            )
        ]

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
