"""The ``sluice`` PySpark data source: read Kafka topics in batch and streaming queries.

It mirrors Spark's built-in Kafka source (same options, schema and checkpointed offsets), so a
pipeline switches between the two by changing ``format("kafka")`` to ``format("sluice")``. It
only speaks the Kafka protocol (through confluent_kafka), so it reads Apache Kafka as well as a
Sluice broker.

Example (``register`` once per session; the broker at ``localhost:9092``)::

    from sluice.connectors.spark import register

    register(spark)
    stream = (
        spark.readStream.format("sluice")
        .option("kafka.bootstrap.servers", "localhost:9092")
        .option("subscribe", "orders")
        .option("maxOffsetsPerTrigger", 10000)
        .load()
    )
    stream.selectExpr("CAST(value AS STRING)").writeStream.format("parquet") \\
        .option("path", "/data/orders").option("checkpointLocation", "/chk/orders").start()

Where things run: the stream reader lives in one long-lived Python process of the driver
(``initialOffset``, ``latestOffset``, ``partitions``, ``commit``); ``read`` runs in the Python
workers of the executors, one call per input partition (a topic-partition's offset range, or a
slice of it with ``minPartitions``). Options are checked when ``load()`` is called; topics are
looked up when the query starts (a streaming query then fails with the error, which
``query.exception()`` / ``awaitTermination()`` report).

On a secured cluster the options carry Kafka's client security settings as Spark's Kafka source
takes them (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location`` as a PEM file …): they are translated once, when the options
are checked, by the translation every Sluice client uses, and the translated settings travel to
the executors with the options (a file they name must exist there too). A failed
authentication fails the query at once, naming the options to check.

Registry-encoded keys and values (``valueFormat=avro|protobuf|json-schema``, ``keyFormat``)
become typed columns: the reader schema is looked up when ``load()`` runs (on the driver;
:mod:`._registry_schema`), each record is decoded by its own schema id in the executors
(:mod:`._registry_decode`).

Exactly once: Spark writes each micro-batch's end offsets to the checkpoint's ``offsets/`` log
before running it, and replays the same ranges after a crash; the ranges are read exactly, so a
sink that commits atomically with Spark's commit log (the Parquet / file sink) holds every record
once. Nothing is committed to Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)
from typing_extensions import override

from sluice.connectors.spark._kafka_read import DataLossError, read_range
from sluice.connectors.spark._metadata import KafkaMetadata
from sluice.connectors.spark._offsets import (
    OffsetRange,
    PartitionOffsets,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)
from sluice.connectors.spark._options import SourceOptions
from sluice.connectors.spark._registry_decode import ColumnDecoder
from sluice.connectors.spark._registry_schema import Resolved, resolve

__all__ = ["KafkaInputPartition", "SluiceDataSource", "register"]

log = logging.getLogger(__name__)

_KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
_HEADERS = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)


def register(spark: Any) -> None:
    """Make ``format("sluice")`` available in ``spark`` (a SparkSession); call once per session."""
    spark.dataSource.register(SluiceDataSource)


class SluiceDataSource(DataSource):
    """``spark.read.format("sluice")`` and ``spark.readStream.format("sluice")``.

    Options (as Spark's Kafka source): ``kafka.bootstrap.servers``; one of ``subscribe``,
    ``subscribePattern``, ``assign``; ``startingOffsets``, ``endingOffsets`` (batch),
    ``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``, ``includeHeaders``,
    ``kafkaConsumer.pollTimeoutMs`` and ``kafka.*`` consumer settings, Kafka's client security
    settings among them (``kafka.security.protocol``, ``kafka.sasl.jaas.config``,
    ``kafka.ssl.truststore.location`` …, translated for librdkafka). Ours: ``rowsPerBatch``,
    and ``valueFormat`` / ``keyFormat`` (``avro``, ``protobuf``, ``json-schema``: typed columns
    decoded through the schema registry at ``schema.registry.url``, with ``valueSubject``,
    ``valueSchemaVersion``, ``valueSchemaId``, ``valueMessageName``, ``mode``; the reader
    schema: :mod:`sluice.connectors.spark._registry_schema`, the records:
    :mod:`sluice.connectors.spark._registry_decode`). See docs/connectors.md.
    """

    @classmethod
    def name(cls) -> str:
        return "sluice"

    def schema(self) -> StructType:
        # Called once when load() runs: check the options there, before any query starts.
        options = SourceOptions.parse(self.options, batch=None)
        # Spark pickles this instance after schema() for the planning that follows: the reader
        # schemas found now are the ones the query decodes into.
        self._formats = _resolve_formats(options)
        fields = list(_KAFKA_SCHEMA.fields)
        for resolved in self._formats:
            if resolved is not None:
                fields[0 if resolved.field == "key" else 1] = resolved.column
        if options.include_headers:
            fields.append(_HEADERS)
        return StructType(fields)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = SourceOptions.parse(self.options, batch=True)
        return SluiceBatchReader(options, self._resolved(options))

    @override
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = SourceOptions.parse(self.options)
        return SluiceStreamReader(options, self._resolved(options))

    def _resolved(self, options: SourceOptions) -> _Formats:
        found: _Formats | None = getattr(self, "_formats", None)
        return found if found is not None else _resolve_formats(options)


_Formats = tuple[Resolved | None, Resolved | None]  # the key's and the value's reader schemas


def _resolve_formats(options: SourceOptions) -> _Formats:
    """The reader schemas of ``keyFormat`` and ``valueFormat`` (None where bytes are read)."""
    topics = options.subject_topics()
    url, auth = options.registry_url, options.registry_auth
    return (
        None if options.key_format is None else resolve(options.key_format, topics, url, auth),
        None if options.value_format is None else resolve(options.value_format, topics, url, auth),
    )


class KafkaInputPartition(InputPartition):
    """One Spark task: offsets ``[start, end)`` of one topic-partition."""

    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.range = rng


def _read(options: SourceOptions, formats: _Formats, partition: InputPartition) -> Iterator[Any]:
    if not isinstance(partition, KafkaInputPartition):
        return iter(())  # Spark's placeholder partition when a batch query has nothing to read
    batches = read_range(
        options.consumer_config(),
        partition.range,
        include_headers=options.include_headers,
        rows_per_batch=options.rows_per_batch,
        poll_timeout_s=options.poll_timeout_s,
    )
    if formats == (None, None):
        return batches
    return _decoded(options, formats, batches)


def _decoded(options: SourceOptions, formats: _Formats, batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` with the key and value columns decoded through the schema registry."""
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information

    decoders = [
        (index, _decoder(resolved, options))
        for index, resolved in enumerate(formats)
        if resolved is not None
    ]
    for batch in batches:
        columns = list(batch.columns)
        fields = list(batch.schema)
        topic = batch.column(2)[0].as_py()
        partition = batch.column(3)[0].as_py()
        offsets = batch.column(4).to_pylist()
        for index, decoder in decoders:
            columns[index] = decoder.decode(columns[index], topic, partition, offsets)
            fields[index] = pa.field(fields[index].name, decoder.arrow_type)
        yield pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


_decoders: dict[tuple[Resolved, str, str | None, bool], ColumnDecoder] = {}


def _decoder(resolved: Resolved, options: SourceOptions) -> ColumnDecoder:
    """The worker process's decoder of a column: writers' schemas are fetched once per process."""
    key = (resolved, options.registry_url, options.registry_auth, options.permissive)
    found = _decoders.get(key)
    if found is None:
        found = _decoders[key] = ColumnDecoder(
            resolved, options.registry_url, options.registry_auth, permissive=options.permissive
        )
    return found


def _plan(
    options: SourceOptions,
    metadata: KafkaMetadata,
    start: PartitionOffsets,
    end: PartitionOffsets,
) -> list[InputPartition]:
    """Input partitions for ``start`` → ``end``; partitions missing from ``start`` (new ones)
    start at their earliest offset. Checks for lost data first (``failOnDataLoss``)."""
    earliest = metadata.earliest(sorted(end))
    ranges = []
    for tp, until in sorted(end.items()):
        topic, partition = tp
        if tp not in start and earliest[tp] > 0:
            _data_loss(
                options,
                f"new partition {topic}-{partition} starts at offset {earliest[tp]}, not 0: "
                f"offsets 0..{earliest[tp] - 1} were deleted before they could be read",
            )
        begin = start.get(tp, earliest[tp])
        if begin < earliest[tp]:
            _data_loss(
                options,
                f"{topic}-{partition}: offsets {begin}..{earliest[tp] - 1} are no longer in "
                "the log (deleted by retention or DeleteRecords)",
            )
            begin = earliest[tp]
        if until < begin:
            _data_loss(
                options,
                f"{topic}-{partition}: the log now ends at {until}, before offset {begin} "
                "(was the topic deleted and recreated?)",
            )
            continue
        ranges.append(OffsetRange(topic, partition, begin, until))
    pieces = split_ranges(ranges, options.min_partitions)
    return [KafkaInputPartition(rng) for rng in pieces]


def _data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost. If that is expected, set the option "
            "failOnDataLoss=false to skip it."
        )
    log.warning("%s; skipped (failOnDataLoss=false)", message)


class SluiceBatchReader(DataSourceReader):
    """A batch query: ``startingOffsets`` (default earliest) to ``endingOffsets`` (latest)."""

    def __init__(self, options: SourceOptions, formats: _Formats = (None, None)) -> None:
        self.options = options
        self.formats = formats
        self.metadata = KafkaMetadata(options)

    def partitions(self) -> Sequence[InputPartition]:
        partitions = self.metadata.partitions(strict=True)
        earliest = self.metadata.earliest(partitions)
        latest = self.metadata.latest(partitions)
        start = self.options.starting.resolve(partitions, earliest, latest, "startingOffsets")
        end = self.options.ending.resolve(partitions, earliest, latest, "endingOffsets")
        try:
            return _plan(self.options, self.metadata, start, end)
        finally:
            self.metadata.close()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, self.formats, partition)


class SluiceStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming query's reader; its offsets are Spark's Kafka source offsets (see _offsets)."""

    def __init__(self, options: SourceOptions, formats: _Formats = (None, None)) -> None:
        self.options = options
        self.formats = formats
        self.metadata = KafkaMetadata(options)
        self._latest: PartitionOffsets | None = None  # last seen log ends, for reportLatestOffset
        self._target: PartitionOffsets | None = None  # Trigger.AvailableNow's end

    @override
    def initialOffset(self) -> dict[str, dict[str, int]]:
        partitions = self.metadata.partitions(strict=True)
        earliest = self.metadata.earliest(partitions)
        latest = self.metadata.latest(partitions)
        start = self.options.starting.resolve(partitions, earliest, latest, "startingOffsets")
        return offsets_to_json(start)

    @override
    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    @override
    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._fetch_latest()

    @override
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        begin = offsets_from_json(start)
        latest = dict(self._target) if self._target is not None else self._fetch_latest()
        gone = [tp for tp in begin if tp not in latest]
        if gone:  # left out of the end offset: if they come back, they are read as new ones
            names = ", ".join(f"{t}-{p}" for t, p in gone)
            _data_loss(self.options, f"partitions {names} no longer exist")
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in begin]
            from_ = {**begin, **self.metadata.earliest(new)}
            end = rate_limit(from_, latest, limit.max_rows)
        else:
            end = latest
        return offsets_to_json(end)

    @override
    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return _plan(self.options, self.metadata, offsets_from_json(start), offsets_from_json(end))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, self.formats, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in Kafka."""

    def stop(self) -> None:
        self.metadata.close()

    def _fetch_latest(self) -> PartitionOffsets:
        """The end of every subscribed partition now (new partitions included)."""
        self._latest = self.metadata.latest(self.metadata.partitions(strict=False))
        return dict(self._latest)
