"""Kafka Connect's data model: schemas, structs and the records connectors exchange.

A :class:`Schema` describes a value the way Kafka Connect does (``type`` is one of ``int8``,
``int16``, ``int32``, ``int64``, ``float32``, ``float64``, ``boolean``, ``string``, ``bytes``,
``array``, ``map``, ``struct``; optional ``name`` for logical types such as
``org.apache.kafka.connect.data.Timestamp``). Schemaless data is plain Python (dict, list, str,
numbers, bytes, None) with ``schema=None``.

>>> name, age = Field("name", Schema("string")), Field("age", Schema("int32", optional=True))
>>> person = Schema.struct([name, age])
>>> Struct(person, {"name": "Ada"}).get("age") is None
True
>>> record = SourceRecord({"file": "a.log"}, {"position": 10}, "lines", None, None, "hello")
>>> record.new_record(value="HELLO").value, record.source_offset
('HELLO', {'position': 10})

Tasks that move many small records may exchange them in column form instead, a
:class:`SourceBatch` or a :class:`SinkBatch` (see ``SourceTask.poll_batch`` and
``SinkTask.put_batch``): the runtime then converts and writes the values in bulk, and builds
record objects only when something (a transform, a task) needs them.

>>> lines = SourceBatch({"file": "a.log"}, "lines", Schema("string"), ["a", "b"], {"position": 4},
...                     lambda: [{"position": 2}, {"position": 4}])
>>> [(r.value, r.source_offset) for r in lines.records()]
[('a', {'position': 2}), ('b', {'position': 4})]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ConnectRecord",
    "Field",
    "Header",
    "Schema",
    "SinkBatch",
    "SinkRecord",
    "SourceBatch",
    "SourceRecord",
    "Struct",
]

PRIMITIVES = frozenset(
    ["int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes"]
)
TYPES = PRIMITIVES | {"array", "map", "struct"}


@dataclass(frozen=True)
class Field:
    """A named field of a struct schema."""

    name: str
    schema: Schema


@dataclass(frozen=True)
class Schema:
    """A Kafka Connect schema; see the module docstring."""

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    default: Any = None
    parameters: tuple[tuple[str, str], ...] = ()
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None  # map keys
    value_schema: Schema | None = None  # map values, array items

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(
                f"unknown schema type {self.type!r} (one of {', '.join(sorted(TYPES))})"
            )

    @classmethod
    def struct(
        cls, fields: list[Field], *, name: str | None = None, optional: bool = False
    ) -> Schema:
        """A struct schema with ``fields`` in order."""
        return cls("struct", optional=optional, name=name, fields=tuple(fields))

    def field(self, name: str) -> Field | None:
        """The field called ``name`` (struct schemas), or None."""
        return next((f for f in self.fields if f.name == name), None)


@dataclass
class Struct:
    """A value of a struct schema: field values by name."""

    schema: Schema
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        """The value of a field (None when absent)."""
        return self.values.get(name)

    def put(self, name: str, value: Any) -> Struct:
        """Set a field; returns the struct."""
        self.values[name] = value
        return self


Header = tuple[str, Any]
"""A header: key and value (bytes, or a converted value)."""


@dataclass
class ConnectRecord:
    """What flows through converters and transforms: topic, partition, key, value, headers."""

    topic: str
    kafka_partition: int | None
    key_schema: Schema | None
    key: Any
    value_schema: Schema | None
    value: Any
    timestamp: int | None = None
    headers: list[Header] = field(default_factory=list)

    def new_record(self, **changes: Any) -> Any:
        """A copy with ``changes`` (transforms never modify a record in place)."""
        copy = dataclasses.replace(self, **changes)
        if "headers" not in changes:
            copy.headers = list(self.headers)
        return copy


@dataclass
class SourceRecord(ConnectRecord):
    """A record a source task produced, with where it came from in the source system.

    Constructor order follows Kafka's ``SourceRecord(sourcePartition, sourceOffset, topic,
    partition, valueSchema, value)``; key and headers are keywords.
    """

    def __init__(
        self,
        source_partition: dict[str, Any],
        source_offset: dict[str, Any],
        topic: str,
        kafka_partition: int | None,
        value_schema: Schema | None,
        value: Any,
        *,
        key_schema: Schema | None = None,
        key: Any = None,
        timestamp: int | None = None,
        headers: list[Header] | None = None,
    ) -> None:
        super().__init__(
            topic, kafka_partition, key_schema, key, value_schema, value, timestamp, headers or []
        )
        self.source_partition = source_partition
        self.source_offset = source_offset

    def new_record(self, **changes: Any) -> SourceRecord:
        values = {
            "topic": self.topic,
            "kafka_partition": self.kafka_partition,
            "value_schema": self.value_schema,
            "value": self.value,
            "key_schema": self.key_schema,
            "key": self.key,
            "timestamp": self.timestamp,
            "headers": list(self.headers),
        }
        values.update(changes)
        return SourceRecord(self.source_partition, self.source_offset, **values)


@dataclass
class SinkRecord(ConnectRecord):
    """A record read from Kafka for a sink task, with its offset."""

    kafka_offset: int = -1
    timestamp_type: str = "CreateTime"
    original_topic: str | None = None
    original_partition: int | None = None
    original_offset: int | None = None


class SourceBatch:
    """Records of one source partition for one topic, in column form (``SourceTask.poll_batch``).

    Every record has ``value_schema`` and a value from ``values``, in order, and no Kafka
    partition, timestamp or headers; no key, or with ``keys`` (one per value) keys of
    ``key_schema`` (a CDC table's primary keys). ``offset`` is the source offset after the last
    record: what the runtime commits once the batch is acknowledged. ``offsets`` gives every
    record's source offset; it is called only when :meth:`records` builds the records (a
    transform or ``SourceTask.commit_record`` needs them), so a task can skip an offset per
    record.
    """

    __slots__ = (
        "_offsets",
        "_records",
        "key_schema",
        "keys",
        "offset",
        "source_partition",
        "topic",
        "value_schema",
        "values",
    )

    def __init__(
        self,
        source_partition: dict[str, Any],
        topic: str,
        value_schema: Schema | None,
        values: list[Any],
        offset: dict[str, Any],
        offsets: Callable[[], list[dict[str, Any]]],
        *,
        key_schema: Schema | None = None,
        keys: list[Any] | None = None,
    ) -> None:
        self.source_partition = source_partition
        self.topic = topic
        self.value_schema = value_schema
        self.values = values
        self.key_schema = key_schema
        self.keys = keys
        self.offset = offset
        self._offsets = offsets
        self._records: list[SourceRecord] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"SourceBatch({self.source_partition!r}, {self.topic!r}, {len(self.values)} values)"

    def records(self) -> list[SourceRecord]:
        """The batch as :class:`SourceRecord` objects (built once)."""
        if self._records is None:
            partition, topic, schema = self.source_partition, self.topic, self.value_schema
            if self.keys is None:
                self._records = [
                    SourceRecord(partition, offset, topic, None, schema, value)
                    for value, offset in zip(self.values, self._offsets(), strict=True)
                ]
            else:
                key_schema = self.key_schema
                self._records = [
                    SourceRecord(
                        partition,
                        offset,
                        topic,
                        None,
                        schema,
                        value,
                        key_schema=key_schema,
                        key=key,
                    )
                    for value, key, offset in zip(
                        self.values, self.keys, self._offsets(), strict=True
                    )
                ]
        return self._records


class SinkBatch:
    """Records read for a sink task, in column form (``SinkTask.put_batch``).

    ``values`` are the converted values, in order; :meth:`records` gives the whole records
    (topic, partition, offset, key, headers…), built on first use by ``make_records``, so a sink
    that only writes values never pays for them.

    >>> batch = SinkBatch.of([SinkRecord("t", 0, None, None, None, "v", kafka_offset=7)])
    >>> batch.values, batch.records()[0].kafka_offset
    (['v'], 7)
    """

    __slots__ = ("_make", "_records", "values")

    def __init__(self, values: list[Any], make_records: Callable[[], list[SinkRecord]]) -> None:
        self.values = values
        self._make = make_records
        self._records: list[SinkRecord] | None = None

    @classmethod
    def of(cls, records: list[SinkRecord]) -> SinkBatch:
        """A batch of records already built."""
        batch = cls([record.value for record in records], list)
        batch._records = records
        return batch

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"SinkBatch({len(self.values)} values)"

    def records(self) -> list[SinkRecord]:
        """The batch as :class:`SinkRecord` objects (built once)."""
        if self._records is None:
            self._records = self._make()
        return self._records
