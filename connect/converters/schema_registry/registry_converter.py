"""What Confluent's registry converters (Avro, JSON Schema, Protobuf) share:
:class:`SchemaRegistryConverter`, the base of :mod:`.avro_converter`, :mod:`.json_schema_converter`
and :mod:`.protobuf_converter`.

A record's bytes are Confluent's wire format (magic byte 0, the 4-byte schema id, the body: Avro
binary, JSON, or Protobuf message indexes and the message); the schema lives in a schema
registry with Confluent's API. Writing, the Connect schema becomes the format's schema, registered
(or looked up) under the subject of the subject name strategy; reading, the writer's schema is
fetched by id and turned into the Connect schema (whose version, when the schema carries no
``connect.version``, is the schema's version under the subject the strategy names, as
Confluent's converters give it).

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
- ``schemas.cache.config`` (default 1000);
- each converter's own (see its module).

Any other setting is refused with :class:`~sluice.errors.ConfigError` naming it (Confluent has
more; none is silently ignored here). The registry is first contacted when a record is
converted, so validating a connector's config does not need it running.

>>> from sluice.connect.converters.schema_registry.avro_converter import AvroConverter
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
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import Converter, boolean_setting
from sluice.errors import ConfigError
from sluice.schemas.registry_client import REGISTRY_CLIENT_KEYS, registry_client_config

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema as RegisteredSchemaText
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import SerializationContext

__all__ = ["COMMON_KEYS", "SchemaRegistryConverter"]

_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
COMMON_KEYS = frozenset(
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

    KEYS: frozenset[str] = COMMON_KEYS

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
