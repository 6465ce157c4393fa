"""Helpers of the ``spark-sink`` tests: a fake task context, records, started tasks, table reads.

The tasks are driven directly (open, put, pre_commit, close, stop) as the sink runner drives
them. Tasks that register tables or parse a declared schema share the session of the ``spark``
fixture (``_session.acquire`` finds it running and never stops it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.dataset as ds  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from sluice.connect.api.connector import TopicPartition
from sluice.connect.api.data import SinkRecord
from sluice.connectors.spark.sink import SparkSinkTask

TaskFactory = Callable[..., SparkSinkTask]


class FakeContext:
    """The runner's side of a sink task: seeks, and (optionally) an errant-record reporter."""

    def __init__(self, *, reporter: bool = False) -> None:
        self.seeks: dict[TopicPartition, int] = {}
        self.reported: list[tuple[SinkRecord, BaseException]] = []
        self._reporter = reporter

    def offset(self, partition: TopicPartition, offset: int) -> None:
        self.seeks[partition] = offset

    def assignment(self) -> set[TopicPartition]:
        return set(self.seeks)

    def request_commit(self) -> None:
        pass

    def errant_record_reporter(self) -> FakeContext | None:
        return self if self._reporter else None

    def report(self, record: SinkRecord, error: BaseException) -> None:
        self.reported.append((record, error))


def record(value: Any, offset: int, topic: str = "orders", partition: int = 0) -> SinkRecord:
    """A schemaless sink record as the JSON converter (schemas off) gives it."""
    return SinkRecord(
        topic,
        partition,
        None,
        None,
        None,
        value,
        kafka_offset=offset,
        original_topic=topic,
        original_partition=partition,
        original_offset=offset,
    )


def records(
    values: list[Any], topic: str = "orders", partition: int = 0, first: int = 0
) -> list[SinkRecord]:
    """Records of consecutive offsets from ``first``."""
    return [record(v, first + i, topic, partition) for i, v in enumerate(values)]


@pytest.fixture
def sink_task(tmp_path: Path) -> Iterator[TaskFactory]:
    """Starts tasks (warehouse in ``tmp_path`` unless given); stops them all at the end."""
    started: list[SparkSinkTask] = []

    def start(context: FakeContext | None = None, **settings: Any) -> SparkSinkTask:
        config = {"warehouse.path": str(tmp_path / "warehouse"), "register.table": "false"}
        config.update({key.replace("_", "."): str(value) for key, value in settings.items()})
        task = SparkSinkTask()
        task.initialize(context or FakeContext())
        task.start(config)
        started.append(task)
        return task

    yield start
    for task in started:
        task.stop()


def table_rows(path: Path, sort: str = "id") -> list[dict[str, Any]]:
    """Every row of a table directory as pyarrow reads it (Hive partitions as columns).

    pyarrow's directory walk also enters the sink's ``_sluice_staging`` (it skips ``_`` names
    only when reading), and a worker committing meanwhile may remove a folder under it: then
    the table is listed again."""
    for _ in range(20):
        try:
            return _table_rows(path, sort)
        except FileNotFoundError:
            time.sleep(0.05)
    return _table_rows(path, sort)


def _table_rows(path: Path, sort: str) -> list[dict[str, Any]]:
    dataset = ds.dataset(path, format="parquet", partitioning="hive")
    # every column of every file (files written before a column was added lack it)
    schema = pa.unify_schemas(
        [dataset.schema, *(f.physical_schema for f in dataset.get_fragments())]
    )
    dataset = ds.dataset(path, format="parquet", partitioning="hive", schema=schema)
    rows: list[dict[str, Any]] = dataset.to_table().to_pylist()
    return sorted(rows, key=lambda row: row[sort])


def json_values(count: int, first: int = 0, **extra: Any) -> list[str]:
    """JSON texts ``{"id": i, "name": "n<i>", **extra}``."""
    return [json.dumps({"id": i, "name": f"n{i}", **extra}) for i in range(first, first + count)]
