"""Schema'd keys and values (AVRO, JSONSCHEMA, PROTOBUF) through a Schema Registry, with
confluent-kafka's own serializers.

A v3 produce request names its schema as Confluent REST Proxy's ``ProduceRequestData`` does:
an inline ``schema`` (registered under the subject, or found there if it is already), a
``schema_id``, a ``schema_version`` of the subject, or nothing (the subject's latest version).
The subject is ``subject`` if given, else the one the ``subject_name_strategy`` names
(``TOPIC_NAME``, the default: ``<topic>-key``/``<topic>-value``; ``RECORD_NAME``;
``TOPIC_RECORD_NAME``). As with Confluent's serializers, the schema must be registered under
that subject (a ``schema_id`` registered only under other subjects is refused).

Serializers (``AvroSerializer``, ``JSONSerializer``, ``ProtobufSerializer``) are made once per
(subject, schema id) and reused; deserializers once per schema id. Every call here may ask the
registry over HTTP: call it off the event loop.
"""

from __future__ import annotations

import decimal
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import json_format

from sluice.rest_proxy.errors import (
    BAD_REQUEST,
    INVALID_SCHEMA,
    JSON_CONVERSION,
    SERIALIZATION,
    RestError,
)
from sluice.rest_proxy.formats import EmbeddedFormat
from sluice.schemas.protobuf_messages import message_class
from sluice.serde import SerdeError

__all__ = ["STRATEGIES", "RegisteredSchema", "SchemaRequest", "SchemaSerdes", "to_json"]

STRATEGIES = ("TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME")
"""Confluent's ``subject_name_strategy`` values."""
_MAX_REFERENCES = 1000  # files one Protobuf schema may import, transitively


@dataclass(frozen=True)
class SchemaRequest:
    """What a request says of a key's or value's schema (each part optional)."""

    fmt: EmbeddedFormat | None = None
    schema: str | None = None
    schema_id: int | None = None
    schema_version: int | None = None
    subject: str | None = None
    strategy: str | None = None


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it under a subject."""

    fmt: EmbeddedFormat
    subject: str
    schema_id: int
    version: int | None
    schema: Schema


def to_json(value: Any) -> Any:
    """A deserialized value as JSON can carry it: Avro bytes as ISO-8859-1 text (Avro's JSON
    encoding), decimals as strings, dates and times in ISO-8601.

    >>> to_json({"b": b"\\x01A", "d": decimal.Decimal("1.50"), "l": [date(2024, 1, 2)]})
    {'b': '\\x01A', 'd': '1.50', 'l': ['2024-01-02']}
    """
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _record_name(fmt: EmbeddedFormat, text: str, message: Callable[[], Any]) -> str:
    """The record name RECORD_NAME strategies use: Avro's full name, a JSON Schema's
    ``title``, the first Protobuf message's full name (of the class ``message()`` makes)."""
    if fmt is EmbeddedFormat.PROTOBUF:
        return str(message().DESCRIPTOR.full_name)
    try:
        parsed = json.loads(text)
    except ValueError as error:
        raise RestError(INVALID_SCHEMA, f"Invalid schema: {error}") from None
    if not isinstance(parsed, dict):
        raise RestError(INVALID_SCHEMA, "Invalid schema: RECORD_NAME needs a named schema")
    if fmt is EmbeddedFormat.JSONSCHEMA:
        title = parsed.get("title")
        if not isinstance(title, str):
            raise RestError(INVALID_SCHEMA, "Invalid schema: RECORD_NAME needs a 'title'")
        return title
    name, namespace = parsed.get("name"), parsed.get("namespace")
    if not isinstance(name, str):
        raise RestError(INVALID_SCHEMA, "Invalid schema: RECORD_NAME needs a named schema")
    return name if "." in name or not isinstance(namespace, str) else f"{namespace}.{name}"


def _id(schema_id: int | None) -> int:
    if schema_id is None:
        raise RestError(SERIALIZATION, "Schema Registry: the answer carries no schema id")
    return schema_id


def _registry_error(error: SchemaRegistryError) -> RestError:
    if error.error_code in (42201, 42202) or error.http_status_code == 422:
        return RestError(INVALID_SCHEMA, f"Invalid schema: {error.error_message}")
    return RestError(SERIALIZATION, f"Schema Registry: {error.error_message} ({error.error_code})")


class SchemaSerdes:
    """Schema look-ups, serializers and deserializers over one registry (``url``; ``None``
    for a proxy without one: every schema'd request is then refused)."""

    def __init__(self, url: str | None, config: dict[str, Any] | None = None) -> None:
        self.url = url
        self.client = SchemaRegistryClient({"url": url, **(config or {})}) if url else None
        # the serializers' own client: its cache holds schemas in the forms they ask for
        # (Protobuf's "serialized" descriptors), apart from the texts looked up here
        self._serde_client = SchemaRegistryClient({"url": url, **(config or {})}) if url else None
        self._serializers: dict[tuple[str, int], Callable[[Any, SerializationContext], Any]] = {}
        self._deserializers: dict[
            tuple[str, int], Callable[[bytes, SerializationContext], Any]
        ] = {}
        self._lock = threading.Lock()

    def _client(self, *, serde: bool = False) -> SchemaRegistryClient:
        client = self._serde_client if serde else self.client
        if client is None:
            raise RestError(
                BAD_REQUEST,
                "Schema'd formats need a Schema Registry: this proxy "
                "was started without one (--schema-registry URL)",
            )
        return client

    def _message_class(self, schema: Schema) -> Any:
        """The class of a Protobuf schema's first message, its references fetched from the
        registry (each import path with the text of the version it names, and theirs)."""
        client = self._client()
        texts: dict[str, str] = {}
        pending = list(schema.references or [])
        while pending:
            reference = pending.pop()
            name, subject, version = reference.name, reference.subject, reference.version
            if name is None or subject is None or version is None:
                raise RestError(INVALID_SCHEMA, f"Invalid schema: incomplete reference {reference}")
            if name in texts:
                continue
            if len(texts) >= _MAX_REFERENCES:
                raise RestError(INVALID_SCHEMA, "Invalid schema: too many references")
            found = client.get_version(subject, version).schema
            texts[name] = found.schema_str or ""
            pending.extend(found.references or [])
        return message_class(schema.schema_str or "", references=texts)

    def _subject(
        self,
        topic: str,
        is_key: bool,
        request: SchemaRequest,
        fmt: EmbeddedFormat,
        schema: Schema | None,
    ) -> str:
        if request.subject:
            return request.subject
        strategy = (request.strategy or "TOPIC_NAME").upper()
        if strategy == "TOPIC_NAME":
            return f"{topic}-{'key' if is_key else 'value'}"
        if schema is None:
            raise RestError(BAD_REQUEST, f"{strategy} needs the schema or its schema_id")
        record = _record_name(fmt, schema.schema_str or "", lambda: self._message_class(schema))
        return record if strategy == "RECORD_NAME" else f"{topic}-{record}"

    def resolve(self, topic: str, is_key: bool, request: SchemaRequest) -> RegisteredSchema:
        """The registered schema a request means (see the module's docstring)."""
        client = self._client()
        fmt = request.fmt
        try:
            if request.schema is not None:
                fmt = fmt or EmbeddedFormat.AVRO
                if fmt is EmbeddedFormat.PROTOBUF:
                    message_class(request.schema)  # protoc's diagnostics before the registry's
                schema = Schema(request.schema, fmt.schema_type)
                subject = self._subject(topic, is_key, request, fmt, schema)
                registered = client.register_schema_full_response(subject, schema)
                found = client.lookup_schema(subject, schema)
                return RegisteredSchema(
                    fmt, subject, _id(registered.schema_id), found.version, found.schema
                )
            if request.schema_id is not None:
                schema = client.get_schema(request.schema_id)
                fmt = EmbeddedFormat.of_schema_type(schema.schema_type)
                subject = self._subject(topic, is_key, request, fmt, schema)
                found = client.lookup_schema(subject, schema)
                return RegisteredSchema(fmt, subject, request.schema_id, found.version, schema)
            subject = self._subject(topic, is_key, request, fmt or EmbeddedFormat.AVRO, None)
            if request.schema_version is not None:
                found = client.get_version(subject, request.schema_version)
            else:
                found = client.get_latest_version(subject)
            kind = EmbeddedFormat.of_schema_type(found.schema.schema_type)
            return RegisteredSchema(
                kind, subject, _id(found.schema_id), found.version, found.schema
            )
        except SchemaRegistryError as error:
            raise _registry_error(error) from None
        except SerdeError as error:  # the Protobuf text protoc refuses
            raise RestError(INVALID_SCHEMA, f"Invalid schema: {error}") from None

    def _serializer(
        self, registered: RegisteredSchema
    ) -> Callable[[Any, SerializationContext], Any]:
        key = (registered.subject, registered.schema_id)
        with self._lock:
            found = self._serializers.get(key)
        if found is not None:
            return found
        client = self._client(serde=True)
        conf = {
            "auto.register.schemas": False,
            "use.schema.id": registered.schema_id,
            "subject.name.strategy": lambda ctx, name: registered.subject,
        }
        made: Callable[[Any, SerializationContext], Any]
        if registered.fmt is EmbeddedFormat.AVRO:
            made = AvroSerializer(client, registered.schema, conf=conf)
        elif registered.fmt is EmbeddedFormat.JSONSCHEMA:
            made = JSONSerializer(registered.schema, client, conf=conf)
        else:
            cls = self._message_class(registered.schema)
            proto = ProtobufSerializer(cls, client, conf={**conf, "use.deprecated.format": False})

            def made(data: Any, ctx: SerializationContext) -> Any:
                return proto(json_format.ParseDict(data, cls()), ctx)

        with self._lock:
            self._serializers[key] = made
        return made

    def serialize(self, topic: str, is_key: bool, registered: RegisteredSchema, data: Any) -> bytes:
        """``data`` (JSON) in Confluent's wire format under ``registered``; 42203 when the data
        do not fit the schema."""
        ctx = SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
        try:
            serializer = self._serializer(registered)
            out = serializer(data, ctx)
        except SchemaRegistryError as error:
            raise _registry_error(error) from None
        except SerdeError as error:  # the Protobuf text protoc refuses
            raise RestError(INVALID_SCHEMA, f"Invalid schema: {error}") from None
        except Exception as error:  # the serializers' own errors, fastavro's, protobuf's
            raise RestError(
                JSON_CONVERSION, f"Conversion of JSON to Object failed: {error}"
            ) from None
        assert isinstance(out, bytes)
        return out

    def schema_id_of(self, data: bytes) -> int | None:
        """The schema id of Confluent-framed bytes (magic byte 0), or ``None``."""
        if len(data) < 5 or data[0] != 0:
            return None
        return int.from_bytes(data[1:5], "big")

    def deserialize(self, topic: str, is_key: bool, fmt: EmbeddedFormat, data: bytes | None) -> Any:
        """The JSON form of Confluent-framed bytes of a schema'd format (``ValueError`` when
        they are not such bytes)."""
        if data is None:
            return None
        schema_id = self.schema_id_of(data)
        if schema_id is None:
            raise ValueError("not in Confluent's wire format (no magic byte 0)")
        ctx = SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
        with self._lock:
            deserializer = self._deserializers.get((fmt.value, schema_id))
        if deserializer is None:
            deserializer = self._deserializer(fmt, schema_id)
            with self._lock:
                self._deserializers[(fmt.value, schema_id)] = deserializer
        return to_json(deserializer(data, ctx))

    def _deserializer(
        self, fmt: EmbeddedFormat, schema_id: int
    ) -> Callable[[bytes, SerializationContext], Any]:
        client = self._client(serde=True)
        if fmt is EmbeddedFormat.AVRO:
            return AvroDeserializer(client)  # type: ignore[no-any-return]
        if fmt is EmbeddedFormat.JSONSCHEMA:
            return JSONDeserializer(None, schema_registry_client=client)  # type: ignore[no-any-return]
        cls = self._message_class(self._client().get_schema(schema_id))
        proto = ProtobufDeserializer(cls, {"use.deprecated.format": False}, client)

        def read(data: bytes, ctx: SerializationContext) -> Any:
            message = proto(data, ctx)
            return json_format.MessageToDict(message, preserving_proto_field_name=True)

        return read
