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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ConnectRecord",
    "Field",
    "Header",
    "Schema",
    "SinkRecord",
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
