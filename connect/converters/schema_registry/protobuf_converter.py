"""Confluent's ``io.confluent.connect.protobuf.ProtobufConverter``: proto3 messages in
Confluent's wire format (with the message indexes), the schema a ``.proto`` file in the
registry (the settings and the registry's part: :mod:`.registry_converter`; the mapping:
:mod:`.protobuf_data`).

>>> ProtobufConverter().configure(  # doctest: +ELLIPSIS
...     {"schema.registry.url": "http://x", "connect.meta.data": "false"}, is_key=False
... )
Traceback (most recent call last):
...
sluice.errors.ConfigError: connect.meta.data: not supported by Sluice's ProtobufConverter ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import boolean_setting
from sluice.connect.converters.schema_registry.protobuf_data import (
    ProtobufData,
    registered_descriptor,
)
from sluice.connect.converters.schema_registry.registry_converter import (
    COMMON_KEYS,
    SchemaRegistryConverter,
)

__all__ = ["ProtobufConverter"]


class ProtobufConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.protobuf.ProtobufConverter``: proto3 messages in
    Confluent's wire format (with the message indexes), the schema a ``.proto`` file in the
    registry (see :mod:`~sluice.connect.converters.schema_registry.protobuf_data` for the
    mapping). The record's Connect schema must be a struct. Its own setting:
    ``schemas.cache.config`` (default 1000)."""

    KEYS = COMMON_KEYS | {"generalized.sum.type.support"}

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
