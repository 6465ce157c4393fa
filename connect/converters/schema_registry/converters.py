"""Confluent's registry converters (Avro, JSON Schema, Protobuf) and what they share.

A record's bytes are Confluent's wire format (magic byte 0, the 4-byte schema id, the body: Avro
binary, JSON, or Protobuf message indexes and the message); the schema lives in a schema
registry with Confluent's API. The Avro converter is described here; the others follow it.
Writing, the Connect schema becomes an Avro schema (:mod:`.avro_data`, Confluent's
``AvroData`` rules) that is registered (or looked up) under the subject of the subject name
strategy; reading, the writer's schema is fetched by id and turned into the Connect schema
(whose version, when the schema carries no ``connect.version``, is the schema's version under
the subject the strategy names, as Confluent's converters give it). The hot path is compiled
once per schema: the Connect ↔ Avro value mapping (:mod:`.avro_compiled`) and Avro's binary
encoding (:mod:`sluice.schemas.avro_wire`), giving the bytes confluent-kafka's
``AvroSerializer`` gives; a latest version with data-contract rules goes through
confluent-kafka's ``AvroSerializer`` / ``AvroDeserializer``, which run them.

Settings (Confluent's names, given with the ``key.converter.`` / ``value.converter.`` prefix
removed):

- ``schema.registry.url`` (required; several URLs separated by commas);
- ``basic.auth.credentials.source`` (``URL``, the default: user and password in the URL, or
  ``USER_INFO``) and ``basic.auth.user.info`` (``user:password``; also
  ``schema.registry.basic.auth.user.info``);
- ``auto.register.schemas`` (default true), ``use.latest.version`` (default false: with it, and
  ``auto.register.schemas=false``, records are written with the subject's latest schema),
  ``normalize.schemas`` (default false);
- ``key.subject.name.strategy`` / ``value.subject.name.strategy``: Confluent's
  ``io.confluent.kafka.serializers.subject.TopicNameStrategy`` (the default),
  ``RecordNameStrategy`` or ``TopicRecordNameStrategy`` (class name or short name);
- ``connect.meta.data`` (default true), ``enhanced.avro.schema.support`` (default false),
  ``schemas.cache.config`` (default 1000): see :mod:`.avro_data`.

Any other setting is refused with :class:`~sluice.errors.ConfigError` naming it (Confluent has
more; none is silently ignored here). The registry is first contacted when a record is
converted, so validating a connector's config does not need it running.

>>> converter = AvroConverter()
>>> converter.configure({"schema.registry.url": "http://127.0.0.1:8081"}, is_key=False)
>>> converter.configure(  # doctest: +ELLIPSIS
...     {"schema.registry.url": "http://x", "scrub.invalid.names": "true"}, is_key=False
... )
Traceback (most recent call last):
...
sluice.errors.ConfigError: scrub.invalid.names: not supported by Sluice's AvroConverter ...
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import Converter, boolean_setting
from sluice.connect.converters.schema_registry.avro_compiled import (
    Mapping_,
    compile_to_avro,
    compile_to_connect,
)
from sluice.connect.converters.schema_registry.avro_data import AvroData
from sluice.connect.converters.schema_registry.json_schema_data import (
    JsonSchemaData,
    dumps_exact,
    referenced_documents,
)
from sluice.connect.converters.schema_registry.protobuf_data import (
    ProtobufData,
    registered_descriptor,
)
from sluice.errors import ConfigError
from sluice.schemas.avro_wire import AvroWire, full_name
from sluice.schemas.registry_client import REGISTRY_CLIENT_KEYS, registry_client_config

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema as RegisteredSchemaText
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import SerializationContext

__all__ = ["AvroConverter", "JsonSchemaConverter", "ProtobufConverter", "SchemaRegistryConverter"]

_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_COMMON_KEYS = frozenset(
    [
        "schema.registry.url",
        "basic.auth.credentials.source",
        "basic.auth.user.info",
        "schema.registry.basic.auth.user.info",
        "auto.register.schemas",
        "use.latest.version",
        "normalize.schemas",
        "key.subject.name.strategy",
        "value.subject.name.strategy",
        "schemas.cache.config",
        *REGISTRY_CLIENT_KEYS,
    ]
)


def _int_setting(config: Mapping[str, Any], key: str, default: int) -> int:
    raw = config.get(key, default)
    try:
        value = int(raw)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"must be an integer, not {raw!r}", key=key) from error
    if value < 1:
        raise ConfigError(f"must be at least 1, not {value}", key=key)
    return value


class SchemaRegistryConverter(Converter):
    """What Confluent's registry converters share: the settings, the registry client, the
    subject name strategy and the serializer configuration. A subclass adds its format."""

    KEYS: frozenset[str] = _COMMON_KEYS

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        unknown = sorted(set(config) - self.KEYS)
        if unknown:
            supported = ", ".join(sorted(self.KEYS))
            raise ConfigError(
                f"not supported by Sluice's {type(self).__name__} (supported: {supported})",
                key=unknown[0],
            )
        self._cache_size = _int_setting(config, "schemas.cache.config", 1000)
        url = str(config.get("schema.registry.url") or "").strip()
        if not url:
            raise ConfigError("is required", key="schema.registry.url")
        for part in url.split(","):
            if not part.strip().startswith(("http://", "https://")):
                raise ConfigError(
                    f"not an http(s) URL: {part.strip()!r}", key="schema.registry.url"
                )
        source = str(config.get("basic.auth.credentials.source", "URL")).strip().upper()
        if source not in ("URL", "USER_INFO"):
            raise ConfigError(
                f"must be URL or USER_INFO, not {source!r} (SASL_INHERIT is not supported)",
                key="basic.auth.credentials.source",
            )
        if source == "URL" and (
            config.get("basic.auth.user.info") or config.get("schema.registry.basic.auth.user.info")
        ):
            raise ConfigError(
                "is used only with basic.auth.credentials.source=USER_INFO",
                key="basic.auth.user.info",
            )
        client = registry_client_config(
            url,
            {k: v for k, v in config.items() if k in REGISTRY_CLIENT_KEYS},
            environment=False,
        )
        self._client_config = client
        self._contexts: dict[str, SerializationContext] = {}
        self._by_schema: dict[int, tuple[Schema, Callable[..., bytes | None]]] = {}
        self._client: SchemaRegistryClient | None = None
        strategy_key = "key.subject.name.strategy" if is_key else "value.subject.name.strategy"
        strategy = str(config.get(strategy_key, "TopicNameStrategy")).strip()
        short = strategy.removeprefix(_STRATEGY_PACKAGE)
        if short not in _STRATEGIES:
            raise ConfigError(
                f"unknown strategy {strategy!r} (one of {', '.join(_STRATEGIES)}, in package "
                f"{_STRATEGY_PACKAGE.rstrip('.')})",
                key=strategy_key,
            )
        self._strategy = short
        self._serializer_config: dict[str, Any] = {
            "auto.register.schemas": boolean_setting(config, "auto.register.schemas", True),
            "use.latest.version": boolean_setting(config, "use.latest.version", False),
            "normalize.schemas": boolean_setting(config, "normalize.schemas", False),
        }
        if (
            self._serializer_config["use.latest.version"]
            and self._serializer_config["auto.register.schemas"]
        ):
            raise ConfigError(
                "use.latest.version=true needs auto.register.schemas=false",
                key="use.latest.version",
            )

    @property
    def client(self) -> SchemaRegistryClient:
        """confluent-kafka's registry client (made on first use)."""
        if self._client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            self._client = SchemaRegistryClient(self._client_config)
        return self._client

    def close(self) -> None:
        """Close the registry client's connections (the converter may be used again: a new
        client is made on next use)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _strategy_function(self) -> Callable[..., Any]:
        import confluent_kafka.schema_registry as registry

        return {
            "TopicNameStrategy": registry.topic_subject_name_strategy,
            "RecordNameStrategy": registry.record_subject_name_strategy,
            "TopicRecordNameStrategy": registry.topic_record_subject_name_strategy,
        }[self._strategy]

    def _remember(self, cache: dict[Any, Any], key: Any, value: Any) -> None:
        """Keep ``value`` in ``cache``; a full cache (``schemas.cache.config`` entries) is
        emptied first, so that a converter fed ever-new schemas stays bounded."""
        if len(cache) >= self._cache_size:
            cache.clear()
        cache[key] = value

    def _context(self, topic: str) -> SerializationContext:
        found = self._contexts.get(topic)
        if found is None:
            from confluent_kafka.serialization import MessageField, SerializationContext

            field = MessageField.KEY if self.is_key else MessageField.VALUE
            found = self._contexts[topic] = SerializationContext(topic, field)
        return found

    def _serializer_of(
        self, schema: Schema, make: Callable[[], Callable[..., bytes | None]]
    ) -> Callable[..., bytes | None]:
        """The serializer of a Connect schema (hot path: by the schema object's identity, as a
        source hands the same schema object to record after record)."""
        cached = self._by_schema.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        serializer = make()
        self._remember(self._by_schema, id(schema), (schema, serializer))
        return serializer

    def _with_registered_version(
        self, topic: str, schema: Schema, registered: RegisteredSchemaText, record_name: str | None
    ) -> Schema:
        """``schema`` with the version of ``registered`` under the subject the strategy names,
        when the schema carries no Connect version of its own (as Confluent's converters do:
        the registry's version stands in)."""
        if schema.version is not None:
            return schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        subject = self._strategy_function()(self._context(topic), record_name)
        if subject is None:
            return schema
        try:
            found = self.client.lookup_schema(subject, registered)
        except SchemaRegistryError as error:
            if error.http_status_code == 404:  # written under another subject: no version
                return schema
            raise
        return dataclasses.replace(schema, version=found.version)

    @staticmethod
    def _schema_id(topic: str, data: bytes) -> int:
        if len(data) < 5 or data[0] != 0:
            raise ConverterError(
                f"Converting byte[] to Kafka Connect data failed due to serialization error of "
                f"topic {topic}: Unknown magic byte! (the record was not written in Confluent's "
                f"wire format)"
            )
        schema_id: int = struct.unpack(">I", data[1:5])[0]
        return schema_id


class AvroConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.avro.AvroConverter`` (see the module docstring)."""

    KEYS = _COMMON_KEYS | {"connect.meta.data", "enhanced.avro.schema.support"}

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        self.avro_data = AvroData(
            connect_meta_data=boolean_setting(config, "connect.meta.data", True),
            enhanced_schema_support=boolean_setting(config, "enhanced.avro.schema.support", False),
            cache_size=self._cache_size,
        )
        self._serializers: dict[str, Callable[..., bytes | None]] = {}
        self._readers: dict[tuple[str, int], tuple[Schema, Callable[[bytes], Any], Mapping_]] = {}
        self._deserializer: Callable[..., Any] | None = None
        self._writing: dict[int, _Writing] = {}
        self._wire: AvroWire | None = None

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None and (schema is None or schema.default is None):
            return None  # a tombstone stays one, as Confluent's serializer writes null
        if schema is None:
            raise ConverterError(
                f"AvroConverter needs a schema to write a value of topic {topic} (schemaless "
                f"values are not supported)"
            )
        writing = self._writing.get(id(schema))
        if writing is None or writing.schema is not schema:
            writing = self._writing_of(schema)
        try:
            datum = writing.to_avro(value)
        except Exception:  # not the common case: the generic mapping's result or error
            datum = self.avro_data.from_connect_data(schema, value)
        try:
            writer = writing.writers.get(topic)
            if writer is None:
                writer = writing.writers[topic] = self._writer(writing, topic)
            serialized: bytes | None = writer(datum)
        except ConverterError:
            raise
        except Exception as error:  # the registry's or fastavro's, about this record
            raise ConverterError(
                f"Failed to serialize Avro data from topic {topic}: {error}"
            ) from error
        return serialized

    def _writing_of(self, schema: Schema) -> _Writing:
        avro = self.avro_data.from_connect_schema(schema)
        writing = _Writing(
            schema,
            compile_to_avro(schema, self.avro_data.from_connect_data),
            json.dumps(avro, separators=(",", ":")),
            full_name(avro),
        )
        self._remember(self._writing, id(schema), writing)
        return writing

    def _writer(self, writing: _Writing, topic: str) -> Callable[[Any], bytes | None]:
        """Sluice's codec for the subject of *topic* (confluent-kafka's ``AvroSerializer``
        where it does not write: a latest version with references or rules)."""
        subject = self._strategy_function()(self._context(topic), writing.record_name)
        if subject is not None:
            made = self._avro_wire().writer(writing.text, subject)
            if made is not None:
                return made
        serializer = self._serializer(writing.text)
        context = self._context(topic)
        return lambda datum: serializer(datum, context)

    def _avro_wire(self) -> AvroWire:
        """Sluice's Avro writers and readers on this converter's registry client."""
        if self._wire is None:
            self._wire = AvroWire(
                self.client,
                auto_register=self._serializer_config["auto.register.schemas"],
                use_latest=self._serializer_config["use.latest.version"],
                normalize=self._serializer_config["normalize.schemas"],
            )
        return self._wire

    def _serializer(self, text: str) -> Callable[..., bytes | None]:
        found = self._serializers.get(text)
        if found is None:
            from confluent_kafka.schema_registry.avro import AvroSerializer

            config = {**self._serializer_config, "subject.name.strategy": self._strategy_function()}
            found = AvroSerializer(self.client, text, conf=config)
            self._remember(self._serializers, text, found)
        return found

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return None, None
        data = bytes(data)
        schema_id = self._schema_id(topic, data)
        try:
            found = self._readers.get((topic, schema_id))
            if found is None:
                found = self._reader(topic, schema_id)
            schema, read, to_connect = found
            datum = read(data)
        except ConverterError:
            raise
        except Exception as error:  # the registry's (unknown id) or fastavro's (bad bytes)
            raise ConverterError(
                f"Failed to deserialize Avro data of topic {topic} (schema id {schema_id}): {error}"
            ) from error
        return schema, to_connect(datum)

    def close(self) -> None:
        super().close()
        self._wire = None  # its codecs and ids belong to the closed client's registry

    def _reader(
        self, topic: str, schema_id: int
    ) -> tuple[Schema, Callable[[bytes], Any], Mapping_]:
        registered = self.client.get_schema(schema_id)
        if registered.schema_type not in (None, "AVRO"):
            raise ConverterError(
                f"Schema id {schema_id} is a {registered.schema_type} schema, not Avro"
            )
        if registered.references:
            raise ConverterError(
                f"Schema id {schema_id} has references, which AvroConverter does not resolve here"
            )
        avro = json.loads(registered.schema_str or "null")
        schema = self.avro_data.to_connect_schema(avro)
        record = isinstance(avro, dict) and avro.get("type") == "record"
        schema = self._with_registered_version(
            topic, schema, registered, full_name(avro) if record else None
        )
        read = self._avro_wire().reader(schema_id)
        if read is None:  # rules: confluent-kafka's deserializer runs them
            from confluent_kafka.schema_registry.avro import AvroDeserializer

            if self._deserializer is None:
                self._deserializer = AvroDeserializer(self.client)
            deserializer, context = self._deserializer, self._context(topic)

            def read_confluent(data: bytes) -> Any:
                return deserializer(data, context)

            read = read_confluent
        found = (schema, read, compile_to_connect(schema, self.avro_data.to_connect_data))
        self._remember(self._readers, (topic, schema_id), found)
        return found


@dataclasses.dataclass
class _Writing:
    """What writing values of one Connect schema needs: its compiled mapping, its Avro
    schema's text and record name, and the writer of each topic."""

    schema: Schema
    to_avro: Mapping_
    text: str
    record_name: str | None
    writers: dict[str, Callable[[Any], bytes | None]] = dataclasses.field(default_factory=dict)


class JsonSchemaConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.json.JsonSchemaConverter``: JSON in Confluent's wire
    format, the schema a JSON Schema in the registry (see
    :mod:`~sluice.connect.converters.schema_registry.json_schema_data` for the mapping).

    Its own settings: ``decimal.format`` (``BASE64``, the default, or ``NUMERIC``),
    ``json.fail.invalid.schema`` (default false: with true, values are validated against the
    schema when written and read) and ``schemas.cache.config`` (default 1000).
    """

    KEYS = _COMMON_KEYS | {
        "decimal.format",
        "json.fail.invalid.schema",
        "generalized.sum.type.support",
    }

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        fmt = str(config.get("decimal.format", "BASE64")).strip().upper()
        if fmt not in ("BASE64", "NUMERIC"):
            raise ConfigError(f"must be BASE64 or NUMERIC, not {fmt!r}", key="decimal.format")
        self.json_data = JsonSchemaData(
            decimal_numeric=fmt == "NUMERIC",
            cache_size=self._cache_size,
            generalized_sum_type_support=boolean_setting(
                config, "generalized.sum.type.support", False
            ),
        )
        self._validate = boolean_setting(config, "json.fail.invalid.schema", False)
        self._serializers: dict[str, Callable[..., bytes | None]] = {}
        self._readers: dict[tuple[str, int], Schema] = {}
        self._deserializer: Callable[..., Any] | None = None

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None and (schema is None or schema.default is None):
            return None
        if schema is None:
            raise ConverterError(
                f"JsonSchemaConverter needs a schema to write a value of topic {topic} "
                f"(schemaless values are not supported)"
            )
        node = self.json_data.from_connect_data(schema, value)
        try:
            serializer = self._serializer_of(
                schema, lambda: self._serializer(self.json_data.from_connect_schema(schema))
            )
            return serializer(node, self._context(topic))
        except ConverterError:
            raise
        except Exception as error:  # the registry's, or a validation error
            raise ConverterError(
                f"Failed to serialize JSON data from topic {topic}: {error}"
            ) from error

    def _serializer(self, document: dict[str, Any]) -> Callable[..., bytes | None]:
        text = json.dumps(document, separators=(",", ":"))
        found = self._serializers.get(text)
        if found is None:
            from confluent_kafka.schema_registry.json_schema import JSONSerializer

            config = {
                **self._serializer_config,
                "subject.name.strategy": self._strategy_function(),
                "validate": self._validate,
            }
            found = JSONSerializer(text, self.client, conf=config, json_encode=dumps_exact)
            self._remember(self._serializers, text, found)
        return found

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return None, None
        data = bytes(data)
        schema_id = self._schema_id(topic, data)
        try:
            schema = self._reader(topic, schema_id)
            if self._deserializer is None:
                from confluent_kafka.schema_registry.json_schema import JSONDeserializer

                self._deserializer = JSONDeserializer(
                    None,
                    schema_registry_client=self.client,
                    conf={"validate": self._validate},
                    json_decode=_loads_exact,
                )
            node = self._deserializer(data, self._context(topic))
        except ConverterError:
            raise
        except Exception as error:  # the registry's (unknown id), bad JSON, validation
            raise ConverterError(
                f"Failed to deserialize JSON data of topic {topic} (schema id {schema_id}): {error}"
            ) from error
        return schema, self.json_data.to_connect_data(schema, node)

    def _reader(self, topic: str, schema_id: int) -> Schema:
        found = self._readers.get((topic, schema_id))
        if found is None:
            registered = self.client.get_schema(schema_id)
            if registered.schema_type != "JSON":
                raise ConverterError(
                    f"Schema id {schema_id} is a {registered.schema_type or 'AVRO'} schema, "
                    f"not JSON"
                )
            document = json.loads(registered.schema_str or "null")
            references = referenced_documents(self.client, registered)
            found = self.json_data.to_connect_schema(document, references)
            title = document.get("title") if isinstance(document, dict) else None
            found = self._with_registered_version(
                topic, found, registered, title if isinstance(title, str) else None
            )
            self._remember(self._readers, (topic, schema_id), found)
        return found


def _loads_exact(data: str | bytes) -> Any:
    """JSON with its fractional numbers as exact ``Decimal`` (converted per schema later)."""
    return json.loads(data, parse_float=Decimal)


class ProtobufConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.protobuf.ProtobufConverter``: proto3 messages in
    Confluent's wire format (with the message indexes), the schema a ``.proto`` file in the
    registry (see :mod:`~sluice.connect.converters.schema_registry.protobuf_data` for the
    mapping). The record's Connect schema must be a struct. Its own setting:
    ``schemas.cache.config`` (default 1000)."""

    KEYS = _COMMON_KEYS | {"generalized.sum.type.support"}

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        self.protobuf_data = ProtobufData(
            cache_size=self._cache_size,
            generalized_sum_type_support=boolean_setting(
                config, "generalized.sum.type.support", False
            ),
        )
        self._readers: dict[tuple[str, int, tuple[int, ...]], tuple[Schema, Any]] = {}

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None and (schema is None or schema.default is None):
            return None
        if schema is None:
            raise ConverterError(
                f"ProtobufConverter needs a schema to write a value of topic {topic} "
                f"(schemaless values are not supported)"
            )
        file = self.protobuf_data.from_connect_schema(schema)
        cls = self.protobuf_data.message_class(file)
        message = self.protobuf_data.fill(
            cls(), schema, value if value is not None else schema.default
        )
        try:
            serializer = self._serializer_of(schema, lambda: self._serializer(cls))
            return serializer(message, self._context(topic))
        except ConverterError:
            raise
        except Exception as error:  # the registry's
            raise ConverterError(
                f"Failed to serialize Protobuf data from topic {topic}: {error}"
            ) from error

    def _serializer(self, cls: Any) -> Callable[..., bytes | None]:
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        config = {**self._serializer_config, "subject.name.strategy": self._strategy_function()}
        serializer: Callable[..., bytes | None] = ProtobufSerializer(cls, self.client, conf=config)
        return serializer

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return None, None
        import io

        from confluent_kafka.schema_registry.common.serde import SchemaId

        data = bytes(data)
        schema_id = self._schema_id(topic, data)
        try:
            header = SchemaId("PROTOBUF")
            payload = header.from_bytes(io.BytesIO(data))
            indexes = tuple(header.message_indexes or [0])
            schema, cls = self._reader(topic, schema_id, indexes)
            message = cls()
            message.ParseFromString(payload.read())
        except ConverterError:
            raise
        except Exception as error:  # the registry's (unknown id), or bytes that do not parse
            raise ConverterError(
                f"Failed to deserialize Protobuf data of topic {topic} (schema id "
                f"{schema_id}): {error}"
            ) from error
        return schema, self.protobuf_data.to_connect_data(schema, message)

    def _reader(self, topic: str, schema_id: int, indexes: tuple[int, ...]) -> tuple[Schema, Any]:
        found = self._readers.get((topic, schema_id, indexes))
        if found is None:
            from google.protobuf import message_factory

            registered = self.client.get_schema(schema_id, fmt="serialized")
            if registered.schema_type != "PROTOBUF":
                raise ConverterError(
                    f"Schema id {schema_id} is a {registered.schema_type or 'AVRO'} schema, "
                    f"not Protobuf"
                )
            descriptor = registered_descriptor(
                self.client, registered, f"schema-{schema_id}.proto", indexes
            )
            full = descriptor.full_name
            schema = self.protobuf_data.to_connect_schema(descriptor)
            schema = self._with_registered_version(topic, schema, registered, full)
            found = (schema, message_factory.GetMessageClass(descriptor))
            self._remember(self._readers, (topic, schema_id, indexes), found)
        return found
