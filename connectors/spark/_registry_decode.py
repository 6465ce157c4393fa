"""Registry-encoded keys and values as typed columns: the ``keyFormat`` / ``valueFormat`` of the
``sluice`` source.

At planning time (``load()``, on the driver) :func:`resolve` asks the schema registry for the
*reader* schema: the latest version of the subject (``<topic>-value`` by Confluent's
``TopicNameStrategy``, or ``valueSubject``), a pinned ``valueSchemaVersion``, or a
``valueSchemaId``; its Spark type (:mod:`._registry_types`) is the column's type. In the
executors a :class:`ColumnDecoder` turns each Arrow batch's binary column into that type: every
record is decoded with its *own* schema (the writer's, by the id in its Confluent wire-format
header, fetched once per id and process) and projected onto the reader's — Avro by Avro's schema
resolution (fastavro), Protobuf and JSON Schema by field name (fields the reader lacks are
dropped, fields the writer lacks are null).

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

import contextlib
import datetime as dt
import io
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from sluice.connectors.spark._registry_types import (
    avro_named_types,
    avro_type,
    is_avro_null,
    is_multi_union,
    json_schema_type,
    protobuf_type,
)
from sluice.connectors.spark._sink_schema import BadValueError, compile_row
from sluice.schemas.serdes import RegistryError, registry_client
from sluice.schemas.wire_format import read_header, read_message_indexes
from sluice.serde import SerdeError

__all__ = [
    "FORMATS",
    "ColumnDecoder",
    "FieldFormat",
    "RecordDecodeError",
    "Resolved",
    "resolve",
    "subject_columns",
]

#: The formats by option value, with Confluent's ``schemaType``.
FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}

Reader = Callable[[bytes, list[int] | None], Any]


class RecordDecodeError(RuntimeError):
    """A record's key or value cannot be decoded (names topic, partition and offset)."""


@dataclass(frozen=True)
class FieldFormat:
    """What the options say about the key's or the value's format (checked, picklable)."""

    field: str  # "key" or "value"
    format: str  # a key of FORMATS
    subject: str | None  # None: <topic>-<field> (TopicNameStrategy)
    version: int | None  # None: the latest (unless schema_id)
    schema_id: int | None
    message: str | None  # Protobuf: the reader's message (default: the first)


@dataclass(frozen=True)
class Resolved:
    """The reader schema of a key or value column, as planning found it (picklable)."""

    field: str
    format: str
    schema: str  # the reader schema's text
    references: tuple[tuple[str, str], ...]  # resolved references (name, text), transitively
    message: str  # Protobuf: the reader's message, full name ("" otherwise)
    spark_type: DataType
    nullable: bool

    @property
    def column(self) -> StructField:
        """The column of the source's schema (nullable: a tombstone has no value)."""
        return StructField(self.field, self.spark_type, True)


def resolve(wanted: FieldFormat, topics: tuple[str, ...], url: str, auth: str | None) -> Resolved:
    """The reader schema of *wanted*, from the registry at *url*; ``ValueError`` says why not."""
    option = "keySubject" if wanted.field == "key" else "valueSubject"
    subject = wanted.subject
    if subject is None and wanted.schema_id is None:
        if len(topics) != 1:
            raise ValueError(
                f"option '{option}' must be set: the {wanted.field}s' subject is "
                f"<topic>-{wanted.field} only when one topic is subscribed by name"
            )
        subject = f"{topics[0]}-{wanted.field}"
    client = registry_client(url, auth)
    try:
        schema, where = _reader_schema(client, wanted, subject, url)
        if schema.schema_type != FORMATS[wanted.format]:
            raise ValueError(
                f"{where} is a {schema.schema_type} schema, not {wanted.format} "
                f"(option '{wanted.field}Format')"
            )
        references = tuple(sorted(_references(client, schema, url).items()))
    finally:
        client.close()
    try:
        spark_type, nullable, message = _spark_type(
            wanted.format, schema.schema_str, dict(references), wanted.message
        )
    except (ValueError, SerdeError) as error:
        raise ValueError(f"{where} has no Spark type: {error}") from None
    return Resolved(
        wanted.field,
        wanted.format,
        schema.schema_str,
        references,
        message,
        spark_type,
        nullable,
    )


def _reader_schema(client: Any, wanted: FieldFormat, subject: str | None, url: str) -> Any:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    if wanted.schema_id is not None:
        where = f"schema id {wanted.schema_id}"
    elif wanted.version is not None:
        where = f"version {wanted.version} of subject {subject!r}"
    else:
        where = f"the latest version of subject {subject!r}"
    try:
        if wanted.schema_id is not None:
            return client.get_schema(wanted.schema_id), where
        if wanted.version is not None:
            return client.get_version(subject, wanted.version).schema, where
        return client.get_latest_version(subject).schema, where
    except SchemaRegistryError as error:
        raise ValueError(
            f"schema registry {url}: {where}: {error.error_message} (error {error.error_code})"
        ) from None
    except Exception as error:
        raise ValueError(f"schema registry {url} is unreachable: {error}") from None


def _references(client: Any, schema: Any, url: str) -> dict[str, str]:
    """Every schema *schema* references, by reference name, transitively."""
    found: dict[str, str] = {}
    pending = list(schema.references or [])
    while pending:
        reference = pending.pop()
        if reference.name in found:
            continue
        try:
            registered = client.get_version(reference.subject, reference.version)
        except Exception as error:
            raise RegistryError(
                f"schema registry {url}: reference {reference.name!r} (subject "
                f"{reference.subject!r} version {reference.version}): {error}"
            ) from None
        found[reference.name] = registered.schema.schema_str
        pending.extend(registered.schema.references or [])
    return found


def subject_columns(url: str, auth: str | None, subject: str, version: int | None) -> StructType:
    """The columns a value of *subject* (its *version*, or the latest) becomes: the Spark type
    of its schema, which must be a struct (an Avro record, a Protobuf message, a JSON Schema
    object with properties); ``ValueError`` says why not."""
    fmt = next(iter(FORMATS))  # checked below, by the schema's own type
    client = registry_client(url, auth)
    try:
        wanted = FieldFormat("value", fmt, subject, version, None, None)
        schema, where = _reader_schema(client, wanted, subject, url)
        references = _references(client, schema, url)
    finally:
        client.close()
    by_type = {schema_type: name for name, schema_type in FORMATS.items()}
    if schema.schema_type not in by_type:
        raise ValueError(f"{where} is a {schema.schema_type} schema, which has no Spark type")
    try:
        kind, _, _ = _spark_type(by_type[schema.schema_type], schema.schema_str, references, None)
    except (ValueError, SerdeError) as error:
        raise ValueError(f"{where} has no Spark type: {error}") from None
    if not isinstance(kind, StructType) or not kind.fields:
        raise ValueError(f"{where} is not a record of fields but {kind.simpleString()}")
    return kind


def _spark_type(
    fmt: str, text: str, references: dict[str, str], message: str | None
) -> tuple[DataType, bool, str]:
    if fmt == "avro":
        named: dict[str, Any] = {}
        for body in references.values():
            avro_named_types(json.loads(body), named)
        kind, nullable = avro_type(json.loads(text), named)
        return kind, nullable, ""
    if fmt == "json-schema":
        kind, nullable = json_schema_type(json.loads(text))
        return kind, nullable, ""
    pool, names = _protobuf_pool(text, references)
    full = names[0]
    if message is not None:
        matches = [n for n in names if n == message or n.rsplit(".", 1)[-1] == message]
        if not matches:
            raise ValueError(f"no message {message!r} in the schema (it has {', '.join(names)})")
        full = matches[0]
    kind, nullable = protobuf_type(pool.FindMessageTypeByName(full))
    return kind, nullable, full


# -- Protobuf descriptors ----------------------------------------------------------------------

_pools: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[Any, list[str]]] = {}
_pools_lock = threading.Lock()


def _protobuf_pool(text: str, references: dict[str, str]) -> tuple[Any, list[str]]:
    """A descriptor pool with *text* compiled (its imports: references and well-known files),
    and the full names of every message in it (top-level first)."""
    key = (text, tuple(sorted(references.items())))
    with _pools_lock:
        if key in _pools:
            return _pools[key]
    from google.protobuf import descriptor_pool

    from sluice.schemas.formats import InvalidSchemaError, format_named

    fmt = format_named("PROTOBUF")
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, body: str) -> Any:
        try:
            others = {k: v for k, v in references.items() if k != name}
            parsed: Any = fmt.parse(body, others)
        except InvalidSchemaError as error:
            raise SerdeError(f"bad Protobuf schema {name}: {error}") from None
        proto = parsed.descriptor
        proto.name = name
        for dependency in proto.dependency:
            if dependency in added:
                continue
            if dependency in references:
                add(dependency, references[dependency])
            else:
                _add_well_known(pool, dependency)
            added.add(dependency)
        pool.Add(proto)
        return parsed

    parsed = add("sluice_spark_reader.proto", text)
    names: list[str] = list(parsed.record_names())
    if not names:
        raise SerdeError("the Protobuf schema defines no message")
    with _pools_lock:
        _pools[key] = (pool, names)
    return pool, names


def _add_well_known(pool: Any, name: str) -> None:
    from google.protobuf import descriptor_pool
    from google.protobuf.descriptor_pb2 import FileDescriptorProto

    from sluice.schemas.protobuf_messages import message_class

    message_class('syntax = "proto3"; message _Warm {}')  # imports the well-known modules
    try:
        known = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        raise SerdeError(f"the Protobuf schema imports {name!r}: not a reference") from None
    proto = FileDescriptorProto()
    known.CopyToProto(proto)
    for dependency in proto.dependency:
        _add_well_known(pool, dependency)
    with contextlib.suppress(TypeError, ValueError):  # added already (imported twice)
        pool.Add(proto)


# -- decoding ----------------------------------------------------------------------------------


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
            self._adapt: Callable[[Any], Any] = _avro_adapter(
                json.loads(resolved.schema), self._named()
            )
        elif resolved.format == "json-schema":
            self._adapt = _json_adapter(resolved.spark_type)
        else:
            self._adapt = _identity

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
            references = _references(client, schema, self.url)
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

        pool, _ = _protobuf_pool(text, references)
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
            return _protobuf_value(message)

        return read


def _identity(value: Any) -> Any:
    return value


# -- Avro values -------------------------------------------------------------------------------

_EPOCH_DAY = dt.date(1970, 1, 1)


def _avro_adapter(schema: Any, named: dict[str, Any]) -> Callable[[Any], Any]:
    """A function turning fastavro's value of *schema* (read with ``return_named_type``) into
    the value of its Spark type: named types unwrapped, multi-type unions as ``member`` structs,
    times as the stored number, UUIDs as text."""
    return _AvroAdapter(dict(named)).make(schema, None)


class _AvroAdapter:
    def __init__(self, known: dict[str, Any]) -> None:
        self.known = known

    def make(self, schema: Any, space: str | None) -> Callable[[Any], Any]:
        if isinstance(schema, list):
            return self.union(schema, space)
        if isinstance(schema, str):
            if schema == "bytes":
                return _bytes_default
            full = schema if "." in schema or not space else f"{space}.{schema}"
            for candidate in (full, schema):
                if candidate in self.known:
                    return self.lazy(candidate)
            return _plain
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.make(kind, space)
        logical = schema.get("logicalType")
        if logical in ("time-millis", "time-micros") and kind in ("int", "long"):
            scale = 1000 if logical == "time-millis" else 1_000_000
            return lambda v: _time_number(v, scale)
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return _decimal_default(int(schema.get("scale", 0)))
        if kind == "long" and isinstance(logical, str) and "timestamp-" in logical:
            return _timestamp_default(logical)
        if kind in ("bytes", "fixed"):
            return _bytes_default
        if kind in ("record", "error", "enum", "fixed"):
            name = str(schema.get("name"))
            namespace = schema.get("namespace", space) if "." not in name else None
            full = name if "." in name or not namespace else f"{namespace}.{name}"
            self.known.setdefault(full, schema)
            if kind in ("enum", "fixed"):
                return _plain
            return self.record(schema, full)
        if kind == "array":
            items = self.make(schema.get("items"), space)
            return lambda v: None if v is None else [items(i) for i in v]
        if kind == "map":
            values = self.make(schema.get("values"), space)
            return lambda v: None if v is None else {k: values(i) for k, i in v.items()}
        return _plain

    def lazy(self, full: str) -> Callable[[Any], Any]:
        """A named type by reference (made when first used: records may nest themselves)."""
        made: list[Callable[[Any], Any]] = []

        def adapt(value: Any) -> Any:
            if not made:
                definition = self.known[full]
                made.append(self.make(definition, full.rsplit(".", 1)[0] if "." in full else None))
            return made[0](value)

        return adapt

    def record(self, schema: Any, full: str) -> Callable[[Any], Any]:
        space = full.rsplit(".", 1)[0] if "." in full else None
        fields = [(str(f["name"]), self.make(f["type"], space)) for f in schema.get("fields", [])]

        def adapt(value: Any) -> Any:
            value = _unnamed(value)
            if not isinstance(value, dict):
                return value
            return {name: convert(value.get(name)) for name, convert in fields}

        return adapt

    def union(self, branches: list[Any], space: str | None) -> Callable[[Any], Any]:
        real = [b for b in branches if not is_avro_null(b)]
        adapters = [self.make(b, space) for b in real]
        if not is_multi_union(branches):
            single = adapters[0] if len(adapters) == 1 else _plain
            return lambda v: None if v is None else single(v)
        names = [self.branch_name(b, space) for b in real]

        def adapt(value: Any) -> Any:
            if value is None:
                return None
            index = self.branch_of(value, real, names)
            return {
                f"member{i}": adapters[i](value) if i == index else None for i in range(len(real))
            }

        return adapt

    def branch_name(self, branch: Any, space: str | None) -> str:
        if isinstance(branch, str):
            if branch in ("boolean", "int", "long", "float", "double", "bytes", "string"):
                return branch
            return branch if "." in branch or not space else f"{space}.{branch}"
        kind = branch.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = str(branch.get("name"))
            namespace = branch.get("namespace", space) if "." not in name else None
            return name if "." in name or not namespace else f"{namespace}.{name}"
        logical = branch.get("logicalType")
        return f"{kind}:{logical}" if logical else str(kind)

    def branch_of(self, value: Any, real: list[Any], names: list[str]) -> int:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            for i, name in enumerate(names):
                if name == value[0] or name.endswith("." + value[0]):
                    return i
        wanted = _python_kinds(value)
        for i, name in enumerate(names):
            if name in wanted:
                return i
        raise SerdeError(f"{value!r} matches no branch of the union {names}")


def _python_kinds(value: Any) -> tuple[str, ...]:
    """The Avro branch names a fastavro value of an unnamed type may come from."""
    if isinstance(value, bool):
        return ("boolean",)
    if isinstance(value, int):
        return ("int", "long")
    if isinstance(value, float):
        return ("float", "double")
    if isinstance(value, str):
        return ("string", "string:uuid")
    if isinstance(value, bytes):
        return ("bytes",)
    if isinstance(value, Decimal):
        return ("bytes:decimal",)
    if isinstance(value, dt.datetime):
        return (
            "long:timestamp-millis",
            "long:timestamp-micros",
            "long:local-timestamp-millis",
            "long:local-timestamp-micros",
        )
    if isinstance(value, dt.date):
        return ("int:date",)
    if isinstance(value, dt.time):
        return ("int:time-millis", "long:time-micros")
    if isinstance(value, uuid.UUID):
        return ("string:uuid",)
    if isinstance(value, list):
        return ("array",)
    if isinstance(value, dict):
        return ("map",)
    return ()


def _unnamed(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def _plain(value: Any) -> Any:
    value = _unnamed(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


# fastavro gives a field's default as the schema's JSON has it (logical types not applied):
# bytes as a string of code points 0-255, timestamps as numbers.


def _bytes_default(value: Any) -> Any:
    value = _unnamed(value)
    return value.encode("latin-1") if isinstance(value, str) else value


def _decimal_default(scale: int) -> Callable[[Any], Any]:
    def adapt(value: Any) -> Any:
        value = _bytes_default(value)
        if isinstance(value, bytes):
            return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)
        return value

    return adapt


def _timestamp_default(logical: str) -> Callable[[Any], Any]:
    per_second = 1000 if logical.endswith("millis") else 1_000_000
    local = logical.startswith("local-")

    def adapt(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            moment = dt.datetime(1970, 1, 1, tzinfo=None if local else dt.UTC)
            micros = value * (1_000_000 // per_second)
            return moment + dt.timedelta(microseconds=micros)
        return value

    return adapt


def _time_number(value: Any, scale: int) -> Any:
    if isinstance(value, dt.time):
        seconds = value.hour * 3600 + value.minute * 60 + value.second
        return seconds * scale + value.microsecond * scale // 1_000_000
    return value


# -- JSON values -------------------------------------------------------------------------------


def _json_adapter(kind: DataType) -> Callable[[Any], Any]:
    """A function turning a parsed JSON value into the value of *kind*: string columns take
    the JSON text of a value that is not a string (as ``from_json`` does)."""
    if isinstance(kind, StructType):
        fields = [(f.name, _json_adapter(f.dataType)) for f in kind.fields]

        def struct(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            return {name: convert(value.get(name)) for name, convert in fields}

        return struct
    if isinstance(kind, ArrayType):
        element = _json_adapter(kind.elementType)
        return lambda v: [element(i) for i in v] if isinstance(v, list) else v
    if isinstance(kind, MapType):
        values = _json_adapter(kind.valueType)
        return lambda v: {k: values(i) for k, i in v.items()} if isinstance(v, dict) else v
    if isinstance(kind, StringType):
        return lambda v: v if v is None or isinstance(v, str) else json.dumps(v)
    return _identity


# -- Protobuf values ---------------------------------------------------------------------------


def _protobuf_value(message: Any) -> Any:
    """A message as a dict by field name: enums by name, ``Timestamp`` as a UTC datetime,
    unset message fields (and unset fields with presence) as None, other unset fields as
    their defaults (Spark's ``emit.default.values=true``)."""
    if message.DESCRIPTOR.full_name == "google.protobuf.Timestamp":
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return moment + dt.timedelta(seconds=message.seconds, microseconds=message.nanos // 1000)
    result: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            result[field.name] = {k: _protobuf_field(value_field, v) for k, v in value.items()}
        elif _repeated(field):
            result[field.name] = [_protobuf_field(field, item) for item in value]
        elif field.has_presence and not message.HasField(field.name):
            result[field.name] = None
        else:
            result[field.name] = _protobuf_field(field, value)
    return result


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:  # pragma: no cover - protobuf before 5.x
        return bool(field.label == field.LABEL_REPEATED)
    return bool(repeated)


def _protobuf_field(field: Any, value: Any) -> Any:
    if field.message_type is not None:
        return _protobuf_value(value)
    if field.enum_type is not None:
        number = field.enum_type.values_by_number.get(value)
        return number.name if number is not None else str(value)
    if isinstance(value, int) and field.type in (field.TYPE_UINT64, field.TYPE_FIXED64):
        return Decimal(value)
    return value
