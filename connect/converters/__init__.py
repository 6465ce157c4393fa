"""Converters: Connect data ↔ the bytes of a Kafka record's key or value, as Kafka Connect does it.

A connector speaks :class:`~sluice.connect.Schema` plus value; the worker turns that into bytes
with the ``key.converter`` / ``value.converter`` of the connector (and back, for sinks). Kafka's
class names and short aliases both work:

- ``org.apache.kafka.connect.json.JsonConverter`` (``json``): JSON; with ``schemas.enable=true``
  (the default) every message is ``{"schema": ..., "payload": ...}``;
- ``org.apache.kafka.connect.storage.StringConverter`` (``string``): the value as text;
- ``org.apache.kafka.connect.converters.ByteArrayConverter`` (``bytes``): bytes unchanged.

The interface is :class:`~sluice.connect.converters.base.Converter` (a plugin converter subclasses
it); ``JsonConverter`` lives in :mod:`sluice.connect.converters.json_converter`. Both are
re-exported here.

A null value (a tombstone) is ``None`` on both sides. Malformed input raises
:class:`~sluice.connect.ConverterError`.

Kafka's logical types (``Decimal``, ``Date``, ``Time``, ``Timestamp``) are written as Kafka writes
them and read back as ``decimal.Decimal``, ``datetime.date``, ``datetime.time`` and ``datetime``
(see :mod:`sluice.connect.api.logical`).

>>> from sluice.connect.api.data import Field, Schema, Struct
>>> person = Schema.struct([Field("name", Schema("string"))], name="Person")
>>> json_converter = converter_from("json", {}, is_key=False)
>>> data = json_converter.from_connect("people", person, Struct(person, {"name": "Ada"}))
>>> data
b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"name"}],"optional":false,"name":"Person"},"payload":{"name":"Ada"}}'
>>> json_converter.to_connect("people", data)[1].values
{'name': 'Ada'}
>>> kafka_name = "org.apache.kafka.connect.json.JsonConverter"
>>> plain = converter_from(kafka_name, {"schemas.enable": "false"}, is_key=True)
>>> plain.to_connect("people", b'{"id": [1, 2.5]}')
(None, {'id': [1, 2.5]})
"""

from __future__ import annotations

import codecs
import importlib
from collections.abc import Mapping
from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import java_string
from sluice.connect.converters.base import Converter
from sluice.connect.converters.json_converter import JsonConverter
from sluice.connect.converters.schema_registry.avro_converter import AvroConverter
from sluice.connect.converters.schema_registry.json_schema_converter import JsonSchemaConverter
from sluice.connect.converters.schema_registry.protobuf_converter import ProtobufConverter
from sluice.errors import ConfigError

__all__ = [
    "OPTIONAL_BYTES",
    "OPTIONAL_STRING",
    "ByteArrayConverter",
    "Converter",
    "JsonConverter",
    "StringConverter",
    "converter_class",
    "converter_from",
]

# --- Converters ----------------------------------------------------------------------------------

# Schemas are immutable: converters hand out these constants rather than one per record.
OPTIONAL_STRING = Schema("string", optional=True)
OPTIONAL_BYTES = Schema("bytes", optional=True)
_BULK = frozenset(["utf-8", "ascii", "iso8859-1"])


class StringConverter(Converter):
    """Kafka's ``StringConverter``: text in ``converter.encoding`` (UTF-8 by default).

    Non-string values are written as Java's ``toString`` would (``true``, ``1.0E7``); reading gives
    an optional string schema. Bytes that are not valid text raise :class:`ConverterError` (Kafka
    would substitute U+FFFD).
    """

    encoding = "utf-8"

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        encoding = str(config.get("converter.encoding", "UTF-8"))
        try:
            self.encoding = codecs.lookup(encoding).name
        except LookupError as error:
            raise ConfigError(f"unknown encoding {encoding!r}", key="converter.encoding") from error

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        return None if value is None else java_string(value).encode(self.encoding)

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return OPTIONAL_STRING, None
        try:
            return OPTIONAL_STRING, bytes(data).decode(self.encoding)
        except UnicodeDecodeError as error:
            message = f"Failed to deserialize string for topic {topic}: {error}"
            raise ConverterError(message) from error

    # The two bulk methods are the connectors' hot path (a file's lines): one join, one encode
    # (or decode) and one split in C instead of a call per value. In the encodings of _BULK a
    # newline is the byte 0x0A and that byte is only ever a newline, so the split gives back the
    # values exactly, unless one held a newline itself (the count differs: one by one then).

    def from_connect_all(
        self, topic: str, schema: Schema | None, values: list[Any]
    ) -> list[bytes | None]:
        if type(self).from_connect is not StringConverter.from_connect:
            return super().from_connect_all(topic, schema, values)  # a subclass's own way
        if self.encoding in _BULK and values:
            try:
                parts = "\n".join(values).encode(self.encoding).split(b"\n")
            except (TypeError, UnicodeError):  # a value that is not text (None, a number…)
                pass
            else:
                if len(parts) == len(values):
                    return parts  # type: ignore[return-value]  # list is invariant
        return super().from_connect_all(topic, schema, values)

    def to_connect_all(
        self, topic: str, datas: list[bytes | None]
    ) -> tuple[Schema | None, list[Any]] | None:
        if type(self).to_connect is not StringConverter.to_connect:
            return None  # a subclass's own way, record by record
        if self.encoding in _BULK and datas:
            try:
                parts = b"\n".join(datas).decode(self.encoding).split("\n")  # type: ignore[arg-type]
            except (TypeError, UnicodeError):  # a null value, or bytes that are not text
                pass
            else:
                if len(parts) == len(datas):
                    return OPTIONAL_STRING, parts
        return OPTIONAL_STRING, [self.to_connect(topic, data)[1] for data in datas]


class ByteArrayConverter(Converter):
    """Kafka's ``ByteArrayConverter``: bytes pass through; the schema must be ``bytes`` or none."""

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type != "bytes":
            raise ConverterError(f"Invalid schema type for ByteArrayConverter: {schema.type}")
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise ConverterError(
                f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}"
            )
        return bytes(value)

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        return OPTIONAL_BYTES, None if data is None else bytes(data)

    def to_connect_all(
        self, topic: str, datas: list[bytes | None]
    ) -> tuple[Schema | None, list[Any]] | None:
        if type(self).to_connect is not ByteArrayConverter.to_connect:
            return None  # a subclass's own way, record by record
        return OPTIONAL_BYTES, [None if data is None else bytes(data) for data in datas]


# --- Factory -------------------------------------------------------------------------------------

CONVERTERS: dict[str, type[Converter]] = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "io.confluent.connect.avro.AvroConverter": AvroConverter,
    "io.confluent.connect.json.JsonSchemaConverter": JsonSchemaConverter,
    "io.confluent.connect.protobuf.ProtobufConverter": ProtobufConverter,
    "json": JsonConverter,
    "string": StringConverter,
    "bytes": ByteArrayConverter,
}


def converter_class(name: str) -> type[Converter]:
    """The converter class for a Kafka class name, an alias, or ``package.module.Class``."""
    found = CONVERTERS.get(name.strip())
    if found is not None:
        return found
    module, _, attribute = name.strip().replace(":", ".").rpartition(".")
    try:
        candidate = getattr(importlib.import_module(module), attribute) if module else None
    except ImportError:
        candidate = None
    if isinstance(candidate, type) and issubclass(candidate, Converter):
        return candidate
    known = ", ".join(k for k in CONVERTERS if "." not in k)
    raise ConfigError(f"unknown converter {name!r} (known: {known}, or Kafka's class names)")


def converter_from(name_or_class_path: str, config: Mapping[str, Any], is_key: bool) -> Converter:
    """A configured converter: ``converter_from("json", {"schemas.enable": "false"}, False)``."""
    converter = converter_class(name_or_class_path)()
    converter.configure(config, is_key)
    return converter
