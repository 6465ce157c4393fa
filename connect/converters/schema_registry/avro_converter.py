"""Confluent's ``io.confluent.connect.avro.AvroConverter``: Avro binary in Confluent's wire
format, the schema an Avro schema in the registry (the settings and the registry's part:
:mod:`.registry_converter`).

Writing, the Connect schema becomes an Avro schema (:mod:`.avro_data`, Confluent's
``AvroData`` rules) that is registered (or looked up) under the subject of the subject name
strategy; reading, the writer's schema is fetched by id and turned into the Connect schema
(whose version, when the schema carries no ``connect.version``, is the schema's version under
the subject the strategy names, as Confluent's converters give it). The hot path is compiled
once per schema: the Connect ↔ Avro value mapping (:mod:`.avro_compiled`) and Avro's binary
encoding (:mod:`sluice.schemas.avro_wire`), giving the bytes confluent-kafka's
``AvroSerializer`` gives; a latest version with data-contract rules goes through
confluent-kafka's ``AvroSerializer`` / ``AvroDeserializer``, which run them.

Its own settings: ``connect.meta.data`` (default true), ``enhanced.avro.schema.support``
(default false), ``schemas.cache.config`` (default 1000): see :mod:`.avro_data`.

>>> converter = AvroConverter()
>>> converter.configure({"schema.registry.url": "http://127.0.0.1:8081"}, is_key=False)
>>> converter.avro_data.from_connect_schema(Schema("int8", optional=True))
['null', {'type': 'int', 'connect.type': 'int8'}]
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.base import boolean_setting
from sluice.connect.converters.schema_registry.avro_compiled import (
    Mapping_,
    compile_to_avro,
    compile_to_connect,
)
from sluice.connect.converters.schema_registry.avro_data import AvroData
from sluice.connect.converters.schema_registry.registry_converter import (
    COMMON_KEYS,
    SchemaRegistryConverter,
)
from sluice.schemas.avro_wire import AvroWire, full_name

__all__ = ["AvroConverter"]


class AvroConverter(SchemaRegistryConverter):
    """Confluent's ``io.confluent.connect.avro.AvroConverter`` (see the module docstring)."""

    KEYS = COMMON_KEYS | {"connect.meta.data", "enhanced.avro.schema.support"}

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
