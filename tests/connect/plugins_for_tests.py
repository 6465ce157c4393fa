"""Tiny connector plugins for the Connect tests, loaded by dotted path.

- :class:`CountingSource` writes ``count`` records (``"<task>-<n>"``) per task to ``topic``, with
  the source partition ``{"task": <task>}`` and the source offset ``{"n": <n + 1>}``; a restarted
  task carries on after its committed offset. The task numbered ``fail.task`` raises at once.
- :class:`CollectingSink` appends the values it receives to :data:`RECEIVED` under the
  connector's name.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from sluice.connect.api.config_def import ConfigDef, at_least
from sluice.connect.api.connector import SinkConnector, SinkTask, SourceConnector, SourceTask, Task
from sluice.connect.api.data import SinkRecord, SourceRecord

RECEIVED: defaultdict[str, list[Any]] = defaultdict(list)
"""Values received by :class:`CollectingSink` tasks, by connector name."""
_RECEIVED_LOCK = threading.Lock()


class CountingSource(SourceConnector):
    """Counts to ``count`` in every task; see the module docstring."""

    CONFIG = (
        ConfigDef()
        .define("topic", "string", doc="Topic to write to.", importance="high")
        .define("count", "int", 3, doc="Records per task.", validator=at_least(0))
        .define("fail.task", "int", -1, doc="The task that fails at start (-1: none).")
        .define("api.key", "password", None, doc="A secret, never shown.")
    )

    def start(self, config: dict[str, Any]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{"task.index": str(i)} for i in range(max_tasks)]

    def version(self) -> str:
        return "0.0.1"


class CountingSourceTask(SourceTask):
    """One task of :class:`CountingSource`."""

    def start(self, config: dict[str, Any]) -> None:
        self.index = int(config["task.index"])
        if self.index == int(config.get("fail.task", -1)):
            raise RuntimeError(f"task {self.index} fails on purpose")
        self.topic = str(config["topic"])
        self.count = int(config.get("count", 3))
        committed = self.context.offset_storage_reader.offset({"task": self.index})
        self.next = int(committed["n"]) if committed else 0

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            time.sleep(0.05)
            return None
        n, self.next = self.next, self.next + 1
        return [
            SourceRecord(
                {"task": self.index}, {"n": n + 1}, self.topic, None, None, f"{self.index}-{n}"
            )
        ]

    def stop(self) -> None:
        pass


class CollectingSink(SinkConnector):
    """Collects what it reads into :data:`RECEIVED`."""

    CONFIG = ConfigDef().define("topics", "list", doc="Topics to read.", importance="high")

    def start(self, config: dict[str, Any]) -> None:
        self.config = config

    def task_class(self) -> type[Task]:
        return CollectingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{} for _ in range(max_tasks)]


class CollectingSinkTask(SinkTask):
    """One task of :class:`CollectingSink`."""

    def start(self, config: dict[str, Any]) -> None:
        self.name = str(config["name"])

    def put(self, records: list[SinkRecord]) -> None:
        with _RECEIVED_LOCK:
            RECEIVED[self.name].extend(record.value for record in records)

    def stop(self) -> None:
        pass


class BadTaskConfigSource(CountingSource):
    """A CountingSource whose task configs name a converter that does not exist."""

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{**c, "value.converter": "no.such.Converter"} for c in super().task_configs(1)]


class PickySink(CollectingSink):
    """A CollectingSink whose tasks report (KIP-610) every record whose value says ``"bad"``."""

    def task_class(self) -> type[Task]:
        return PickySinkTask


class PickySinkTask(CollectingSinkTask):
    """Reports the bad records through ``context.errant_record_reporter()``, keeps the rest."""

    def put(self, records: list[SinkRecord]) -> None:
        reporter = self.context.errant_record_reporter()
        kept = []
        for record in records:
            if record.value == "bad":
                if reporter is None:
                    raise ValueError(f"bad record at offset {record.kafka_offset}")
                reporter.report(record, ValueError("the value is bad"))
            else:
                kept.append(record)
        super().put(kept)
