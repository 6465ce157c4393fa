"""Registry-encoded keys and values decoded in the executors: the typed ``keyFormat`` /
``valueFormat`` columns of the ``sluice`` source.

A :class:`ColumnDecoder` turns each Arrow batch's binary column into the type of the reader
schema planning resolved (:mod:`._registry_schema`): every record is decoded with its *own*
schema (the writer's, by the id in its Confluent wire-format header, fetched once per id and
process) and projected onto the reader's — Avro by Avro's schema resolution (fastavro), Protobuf
and JSON Schema by field name (fields the reader lacks are dropped, fields the writer lacks are
null); :mod:`._registry_values` makes the decoded values those of the Spark type.

A record that cannot be decoded (no magic byte, an id the registry does not know, a schema of
another format, bytes that are not what the schema says, a value that does not fit the reader's
type) fails the task with the topic, partition and offset; with the option ``mode=PERMISSIVE``
(Spark's ``from_avro`` option) its column is null instead. A null (tombstone) stays null.
>>> from pyspark.sql.types import LongType
>>> resolved = Resolved("value", "json-schema", '{"type": "integer"}', (), "", LongType(), True)
>>> decoder = ColumnDecoder(resolved, "http://registry:8081", None, permissive=False)
>>> import pyarrow as pa
>>> column = pa.array([b"\\x00\\x00\\x00\\x00\\x01" + b"42", None], pa.binary())
>>> decoder._writers[1] = decoder._json_reader()  # schema id 1 known (no registry here)
>>> decoder.decode(column, "orders", 0, [7, 8]).to_pylist()
[42, None]
>>> decoder.decode(pa.array([b"42"], pa.binary()), "orders", 0, [9])
Traceback (most recent call last):
...
sluice.connectors.spark._registry_decode.RecordDecodeError: cannot decode the value of orders-0 \
at offset 9 as json-schema: not in Confluent's wire format: the first byte is 0x34, not the \
magic byte 0 (option mode=PERMISSIVE makes it null)
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructField, StructType

from sluice.connectors.spark._registry_schema import (
    FORMATS,
    Resolved,
    fetch_references,
)
from sluice.connectors.spark._registry_types import avro_named_types
from sluice.connectors.spark._registry_values import (
    avro_adapter,
    identity,
    json_adapter,
    protobuf_value,
)
from sluice.connectors.spark._sink_schema import BadValueError, compile_row
from sluice.schemas.protobuf_messages import descriptor_pool_of
from sluice.schemas.serdes import RegistryError, registry_client
from sluice.schemas.wire_format import read_header, read_message_indexes
from sluice.serde import SerdeError

__all__ = ["ColumnDecoder", "RecordDecodeError"]

Reader = Callable[[bytes, list[int] | None], Any]


class RecordDecodeError(RuntimeError):
    """A record's key or value cannot be decoded (names topic, partition and offset)."""


class ColumnDecoder:
    """Decodes one key or value column of the source's Arrow batches (in a Spark worker)."""

    def __init__(self, resolved: Resolved, url: str, auth: str | None, *, permissive: bool) -> None:
        self.resolved = resolved
        self.url = url
        self.auth = auth
        self.permissive = permissive
        self.arrow_type = to_arrow_type(resolved.spark_type, timezone="UTC")
        wrapper = StructType([StructField(resolved.field, resolved.spark_type, resolved.nullable)])
        self._fit = compile_row(wrapper, evolve=False)
        self._writers: dict[int, Reader] = {}
        self._client: Any = None
        if resolved.format == "avro":
            self._adapt: Callable[[Any], Any] = avro_adapter(
                json.loads(resolved.schema), self._named()
            )
        elif resolved.format == "json-schema":
            self._adapt = json_adapter(resolved.spark_type)
        else:
            self._adapt = identity

    def close(self) -> None:
        """Close the registry client (if one was made)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def decode(self, column: pa.Array, topic: str, partition: int, offsets: list[int]) -> pa.Array:
        """*column* (binary, one entry per record at *offsets*) as the resolved type."""
        values: list[Any] = []
        for data, offset in zip(column.to_pylist(), offsets, strict=True):
            if data is None:
                values.append(None)
                continue
            try:
                values.append(self._decode_one(data))
            except (SerdeError, BadValueError, ValueError, TypeError, KeyError) as error:
                if isinstance(error, RegistryError):  # the registry, not the record
                    raise RecordDecodeError(
                        f"cannot decode the {self.resolved.field} of {topic}-{partition} at "
                        f"offset {offset}: {error}"
                    ) from None
                if self.permissive:
                    values.append(None)
                    continue
                raise RecordDecodeError(
                    f"cannot decode the {self.resolved.field} of {topic}-{partition} at offset "
                    f"{offset} as {self.resolved.format}: {error} (option mode=PERMISSIVE makes "
                    "it null)"
                ) from None
        try:
            return pa.array(values, type=self.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
            raise RecordDecodeError(
                f"decoded {self.resolved.field}s of {topic}-{partition} at offsets "
                f"{offsets[0]}..{offsets[-1]} do not fit {self.resolved.spark_type.simpleString()}:"
                f" {error}"
            ) from None

    def _decode_one(self, data: bytes) -> Any:
        schema_id, offset = read_header(data)
        reader = self._writers.get(schema_id)
        if reader is None:
            reader = self._writers[schema_id] = self._writer(schema_id)
        indexes = None
        if self.resolved.format == "protobuf":
            indexes, offset = read_message_indexes(data, offset)
        value = self._adapt(reader(data[offset:], indexes))
        return self._fit({self.resolved.field: value})[self.resolved.field]

    # -- writers' schemas --------------------------------------------------------------------

    def _registry(self) -> Any:
        if self._client is None:
            self._client = registry_client(self.url, self.auth)
        return self._client

    def _writer(self, schema_id: int) -> Reader:
        """How to read a payload written with *schema_id* (fetched from the registry)."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        client = self._registry()
        try:
            schema = client.get_schema(schema_id)
            references = fetch_references(client, schema, self.url)
        except SchemaRegistryError as error:
            if error.error_code == 40403:
                raise SerdeError(f"schema id {schema_id} is not in the registry") from None
            raise RegistryError(f"schema registry {self.url}: {error.error_message}") from None
        except RegistryError:
            raise
        except Exception as error:
            raise RegistryError(f"schema registry {self.url} is unreachable: {error}") from None
        wanted = FORMATS[self.resolved.format]
        if schema.schema_type != wanted:
            raise SerdeError(f"schema id {schema_id} is {schema.schema_type}, not {wanted}")
        if self.resolved.format == "avro":
            return self._avro_reader(schema.schema_str, references)
        if self.resolved.format == "json-schema":
            return self._json_reader()
        return self._protobuf_reader(schema.schema_str, references)

    def _named(self) -> dict[str, Any]:
        named: dict[str, Any] = {}
        for _, body in self.resolved.references:
            avro_named_types(json.loads(body), named)
        return named

    def _avro_reader(self, text: str, references: dict[str, str]) -> Reader:
        import fastavro
        from fastavro.schema import parse_schema

        def parse(body: str, refs: dict[str, str]) -> Any:
            named: dict[str, Any] = {}
            for ref in refs.values():
                parse_schema(json.loads(ref), named_schemas=named)
            return parse_schema(json.loads(body), named_schemas=named)

        writer = parse(text, references)
        reader = parse(self.resolved.schema, dict(self.resolved.references))
        same = text == self.resolved.schema

        def read(payload: bytes, _: list[int] | None) -> Any:
            try:
                return fastavro.schemaless_reader(
                    io.BytesIO(payload), writer, None if same else reader, return_named_type=True
                )
            except Exception as error:  # fastavro raises many kinds for bad bytes
                raise SerdeError(f"not Avro of its schema: {error}") from None

        return read

    def _json_reader(self) -> Reader:
        def read(payload: bytes, _: list[int] | None) -> Any:
            try:
                return json.loads(payload)
            except ValueError as error:
                raise SerdeError(f"not JSON: {error}") from None

        return read

    def _protobuf_reader(self, text: str, references: dict[str, str]) -> Reader:
        from google.protobuf import message_factory
        from google.protobuf.message import DecodeError

        pool, _ = descriptor_pool_of(text, references)
        from sluice.schemas.formats import format_named

        parsed: Any = format_named("PROTOBUF").parse(text, references)
        classes: dict[tuple[int, ...], Any] = {}

        def read(payload: bytes, indexes: list[int] | None) -> Any:
            path = tuple(indexes or [0])
            cls = classes.get(path)
            if cls is None:
                name = parsed.message_name(list(path))
                cls = classes[path] = message_factory.GetMessageClass(
                    pool.FindMessageTypeByName(name)
                )
            message = cls()
            try:
                message.ParseFromString(payload)
            except DecodeError as error:
                raise SerdeError(f"not a Protobuf {cls.DESCRIPTOR.full_name}: {error}") from None
            return protobuf_value(message)

        return read
