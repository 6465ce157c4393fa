"""``spark-sink``: lands topics in Spark tables — Parquet under a warehouse path — exactly once.

Each topic goes to a table (``table.name.format``, default ``${topic}``) stored as Parquet files
in ``<warehouse.path>/<table>``, partitioned Hive-style (``date=2024-05-01/``) by
``partition.columns``, and registered in the worker's Spark catalog (``register.table``) so that
``spark.sql("SELECT … FROM orders")`` sees it. Settings (the full table is in
``docs/spark-sink.md``):

==========================  ===============  ================================================
key                         default
==========================  ===============  ================================================
``topics``                                   the topics to read (or ``topics.regex``)
``warehouse.path``          (required)       directory of the tables
``table.name.format``       ``${topic}``     table of each record
``schema``                                   Spark DDL of the columns (``id bigint not null,
                                             ts timestamp``); empty: inferred
``value.subject``                            a schema registry subject whose schema gives
                                             the columns (instead of ``schema``)
``value.subject.version``   ``latest``       the version of it to take (at task start)
``schema.registry.url``     see doc          its registry (default: the value converter's)
``schema.evolution``        see doc          ``add_columns`` (default without ``schema`` or
                                             ``value.subject``): new fields add nullable
                                             columns; ``none``
``partition.columns``                        partition columns (``country``, ``date``)
``partition.date.field``                     a timestamp field the ``date`` column is derived
                                             from (``partition.date.column``,
                                             ``partition.date.format`` = ``yyyy-MM-dd``)
``register.table``          true             ``CREATE TABLE … USING parquet LOCATION …``
``flush.size``              10000            rows per topic-partition before a commit
``spark.master``            ``local[2]``     master of the worker's shared SparkSession
``spark.conf.*``                             settings of that session
==========================  ===============  ================================================

**Exactly once.** Rows are buffered per topic-partition and committed when ``flush.size`` rows
are waiting and at every offset flush (``pre_commit``): the rows become Parquet files that are
published together with the offset range they hold, by the protocol of
:mod:`sluice.connectors.spark._sink_commit` (staged files, a commit record renamed into place as
the commit point, then the files renamed into the table). ``pre_commit`` returns the offsets
published, so the consumer group only ever lags the table; when a partition is assigned
(``open``), the task finishes any half-published commit, deletes unpublished files, and resumes
from the table's offsets — the consumer seeks there and records below are dropped. A ``kill -9``
at any moment thus leaves every record in the table once.

**Writing.** Data files are written by pyarrow, column by column, from the rows (no JVM round
trip and no Spark job per commit, and the sink names every file, which the protocol needs); the
SparkSession parses the declared schema and maintains the catalog. The files are plain Parquet
as Spark writes them (timestamps as UTC microseconds, Hive-style partition directories), and
``_common_metadata`` carries the newest schema, so ``spark.read.parquet(path)`` sees every
column even when older files lack the newer ones.

**Bad records.** A value that is not a JSON object, lacks a ``NOT NULL`` field or holds a value
of the wrong type fails the task with ``topic[partition]@offset`` and the field; with
``errors.tolerance=all`` it is skipped — handed to the runtime's errant-record reporter (the
dead-letter topic, when one is configured or ``errors.log.enable``: Kafka's KIP-610), logged
otherwise. Tombstones (null values) are skipped.

>>> import tempfile, pyarrow.parquet as pq
>>> from sluice.connect import SinkRecord
>>> from sluice.connect import TopicPartition
>>> warehouse = tempfile.mkdtemp()
>>> task = SparkSinkTask()
>>> task.start({"warehouse.path": warehouse, "register.table": "false"})
>>> task.put([SinkRecord("orders", 0, None, None, None, {"id": 1, "item": "tea"}, kafka_offset=0),
...           SinkRecord("orders", 0, None, None, None, '{"id": 2}', kafka_offset=1)])
>>> task.pre_commit({TopicPartition("orders", 0): 2})
{TopicPartition(topic='orders', partition=0): 2}
>>> pq.read_table(f"{warehouse}/orders").to_pylist()
[{'id': 1, 'item': 'tea'}, {'id': 2, 'item': None}]
>>> task.stop()
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import DataType, StructType

from sluice.connect import (
    ConfigValue,
    ConnectError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)
from sluice.connectors.spark import _session
from sluice.connectors.spark._registry_schema import subject_columns
from sluice.connectors.spark._sink_config import CONFIG, SinkSettings, cross_problems
from sluice.connectors.spark._sink_schema import BadValueError
from sluice.connectors.spark._sink_table import SinkTable
from sluice.serde import SerdeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BadRecordError", "SparkSinkConnector", "SparkSinkTask"]

log = logging.getLogger("sluice.connectors.spark")


class BadRecordError(ConnectError):
    """A record cannot be a row of its table (names topic, partition, offset and field)."""


class SparkSinkConnector(SinkConnector):
    """Lands topics in Spark tables exactly once (``spark-sink``); see the module docstring.

    Every task gets the same config; the topics' partitions are shared among them.
    """

    CONFIG = CONFIG

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        values = super().validate(config)
        if all(not value.errors for value in values):
            by_name = {value.name: value for value in values}
            for key, message in cross_problems({v.name: v.value for v in values}):
                by_name[key].errors.append(message)
        return values

    def start(self, config: dict[str, Any]) -> None:
        SinkSettings.parse(config)
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return SparkSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [dict(self._config) for _ in range(max_tasks)]


@dataclass
class _Buffer:
    """Rows of one topic-partition since its last commit, covering offsets [start, end)."""

    table: SinkTable
    start: int
    end: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)


class SparkSinkTask(SinkTask):
    """Buffers rows per topic-partition and publishes them; see the module docstring.

    Not thread-safe (the runtime calls a task from one thread); tasks share the process's
    SparkSession.
    """

    def __init__(self) -> None:
        self._spark: SparkSession | None = None
        self._tables: dict[str, SinkTable] = {}
        self._buffers: dict[TopicPartition, _Buffer] = {}
        self._published: dict[TopicPartition, int] = {}
        self._pending_seeks: dict[TopicPartition, int] = {}
        self._opened: set[TopicPartition] = set()

    def start(self, config: dict[str, Any]) -> None:
        self.settings = settings = SinkSettings.parse(config)
        self._name = str(config.get("name", "spark-sink"))
        self._declared: StructType | None = None
        if settings.register or settings.schema_ddl:
            self._spark = _session.acquire(settings.master, settings.spark_conf)
        try:
            if settings.schema_ddl:
                self._declared = _parse_ddl(settings.schema_ddl)
            elif settings.subject:
                self._declared = _subject_columns(settings)
            settings.warehouse.mkdir(parents=True, exist_ok=True)
        except BaseException:
            self.stop()  # the runtime does not stop a task whose start failed
            raise

    def _table(self, topic: str) -> SinkTable:
        name = self.settings.table_name(topic)
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = SinkTable(name, self.settings, self._declared)
            self._register(table)
        return table

    # -- assignment ---------------------------------------------------------------------------

    def open(self, partitions: set[TopicPartition]) -> None:
        for partition in sorted(partitions):
            self._opened.add(partition)
            table = self._table(partition.topic)
            end = table.dir.recover(partition.topic, partition.partition)
            if end is None:
                continue
            self._published[partition] = end
            log.info("%s: %s[%d] resumes at %d (table %s)", self._name, *partition, end, table.name)
            try:
                self.context.offset(partition, end)
            except Exception as error:
                # Seeking during the assignment callback may not be possible yet: seek when the
                # partition's first record shows up (records below `end` are dropped anyway).
                log.debug("%s: seek of %s deferred: %s", self._name, partition, error)
                self._pending_seeks[partition] = end

    def close(self, partitions: set[TopicPartition]) -> None:
        """Forget the partitions; rows not committed are dropped (they are read again)."""
        for partition in partitions:
            self._buffers.pop(partition, None)
            self._published.pop(partition, None)
            self._pending_seeks.pop(partition, None)
            self._opened.discard(partition)

    # -- records ------------------------------------------------------------------------------

    def put(self, records: list[SinkRecord]) -> None:
        for record in records:
            topic = record.original_topic or record.topic
            number = record.original_partition
            if number is None:
                number = record.kafka_partition or 0
            offset = record.original_offset
            if offset is None:
                offset = record.kafka_offset
            partition = TopicPartition(topic, number)
            if partition not in self._opened:
                self.open({partition})  # recovery first, whoever forgot to open it
            published = self._published.get(partition)
            if published is not None and offset < published:
                self._seek_past_published(partition)
                continue
            buffer = self._buffers.get(partition)
            if buffer is None:
                table = self._table(topic)
                buffer = self._buffers[partition] = _Buffer(table, offset, offset + 1)
            buffer.end = offset + 1
            try:
                value = _value(record.value)
                if value is None:
                    continue  # a tombstone: nothing to append
                row, directory = buffer.table.row(value)
            except BadValueError as error:
                self._bad(record, buffer.table, error)
                continue
            buffer.rows.append(row)
            buffer.directories.append(directory)
            if len(buffer.rows) >= self.settings.flush_size:
                self._commit(partition)
                self._register(buffer.table)

    def _seek_past_published(self, partition: TopicPartition) -> None:
        end = self._pending_seeks.pop(partition, None)
        if end is not None:
            try:
                self.context.offset(partition, end)
            except Exception as error:
                log.warning("%s: cannot seek %s to %d: %s", self._name, partition, end, error)

    def _bad(self, record: SinkRecord, table: SinkTable, error: BadValueError) -> None:
        where = f"{record.topic}[{record.kafka_partition}]@{record.kafka_offset}"
        problem = BadRecordError(
            f"spark-sink: record {where} does not fit table {table.name}: {error}"
        )
        if not self.settings.tolerate_all:
            raise problem from None
        reporter = self.context.errant_record_reporter()
        if reporter is not None:
            reporter.report(record, problem)
        else:
            log.warning("%s: skipping %s", self._name, problem)

    # -- commits ------------------------------------------------------------------------------

    def _commit(self, partition: TopicPartition) -> None:
        buffer = self._buffers.pop(partition, None)
        if buffer is None:
            return
        topic, number = partition
        name = f"part-{topic}-{number}-{buffer.start}-{buffer.end}.parquet"
        files = buffer.table.files(buffer.rows, buffer.directories, name) if buffer.rows else {}
        buffer.table.dir.publish(topic, number, buffer.start, buffer.end, files)
        self._published[partition] = buffer.end

    def flush(self, offsets: dict[TopicPartition, int]) -> None:
        """Publish every buffered row (with the offsets it covers)."""
        tables = {buffer.table.name: buffer.table for buffer in self._buffers.values()}
        for partition in sorted(self._buffers):
            self._commit(partition)
        for table in tables.values():
            self._register(table)

    def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Publish, then the offsets the table holds (never more than was published)."""
        self.flush(offsets)
        return {p: self._published[p] for p in offsets if p in self._published}

    def _register(self, table: SinkTable) -> None:
        if self._spark is None or not self.settings.register:
            return
        try:
            table.register(self._spark)
        except Exception as error:  # the data is published; the catalog is tried again later
            table.new_directories = True
            log.warning("%s: registering table %s failed: %s", self._name, table.catalog, error)

    def stop(self) -> None:
        self._buffers.clear()
        if self._spark is not None:
            self._spark = None
            _session.release()


def _value(value: Any) -> Any:
    """A record value as a dict (or Struct); None for a tombstone."""
    if isinstance(value, bytes | bytearray):
        try:
            value = value.decode()
        except UnicodeDecodeError:
            raise BadValueError("", "the value is not UTF-8 text") from None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise BadValueError("", f"the value is not JSON ({error})") from None
        if value is None:
            return None
    if value is None or hasattr(value, "get"):
        return value
    raise BadValueError("", f"the value is not a JSON object but {type(value).__name__}")


def _subject_columns(settings: SinkSettings) -> StructType:
    """The columns of ``value.subject`` (typed as the sluice source types registry values)."""
    try:
        return subject_columns(
            settings.registry_url, None, str(settings.subject), settings.subject_version
        )
    except (ValueError, SerdeError) as error:
        raise ConnectError(f"spark-sink: value.subject: {error}") from None


def _parse_ddl(ddl: str) -> StructType:
    """The declared schema (parsed by Spark's own DDL parser)."""
    try:
        parsed: DataType = DataType.fromDDL(ddl)
    except Exception as error:
        raise ConnectError(f"spark-sink: schema is not valid Spark DDL: {error}") from None
    if not isinstance(parsed, StructType):
        raise ConnectError(f"spark-sink: schema must list columns, got {parsed.simpleString()}")
    return parsed
