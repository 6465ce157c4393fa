"""Confluent's ``io.confluent.connect.json.JsonSchemaConverter``: JSON in Confluent's wire
format, the schema a JSON Schema in the registry (the settings and the registry's part:
:mod:`.registry_converter`; the mapping: :mod:`.json_schema_data`). Values are written and read
with their fractional numbers exact (``Decimal``).

>>> converter = JsonSchemaConverter()
>>> converter.configure({"schema.registry.url": "http://x", "decimal.format": "HEX"}, is_key=False)
Traceback (most recent call last):
...
sluice.errors.ConfigError: decimal.format: must be BASE64 or NUMERIC, not 'HEX'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import boolean_setting
from sluice.connect.converters.schema_registry.json_schema_data import (
    JsonSchemaData,
    dumps_exact,
    referenced_documents,
)
from sluice.connect.converters.schema_registry.registry_converter import (
    COMMON_KEYS,
    SchemaRegistryConverter,
)
from sluice.errors import ConfigError

__all__ = ["JsonSchemaConverter"]


class JsonSchemaConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.json.JsonSchemaConverter``: JSON in Confluent's wire
    format, the schema a JSON Schema in the registry (see
    :mod:`~sluice.connect.converters.schema_registry.json_schema_data` for the mapping).

    Its own settings: ``decimal.format`` (``BASE64``, the default, or ``NUMERIC``),
    ``json.fail.invalid.schema`` (default false: with true, values are validated against the
    schema when written and read) and ``schemas.cache.config`` (default 1000).
    """

    KEYS = COMMON_KEYS | {
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
