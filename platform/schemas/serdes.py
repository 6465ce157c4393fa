"""Schema-aware serdes: Avro, JSON Schema and Protobuf in Confluent's wire format.

Each serde is a :class:`~sluice.serde.Serde` built on confluent-kafka's ``SchemaRegistryClient``
and its serializers (``JSONSerializer``/``JSONDeserializer``, ``ProtobufSerializer``/
``ProtobufDeserializer``), so the bytes are those every Confluent client writes and reads: magic
byte 0, the 4-byte schema id, (for Protobuf) the message indexes, then the payload. Avro goes
through Sluice's own codec (:mod:`sluice.schemas.avro_wire`: a schema compiled once, the header
and subject resolved once per subject or schema id), which writes the bytes confluent-kafka's
``AvroSerializer`` writes and reads what its ``AvroDeserializer`` reads, several times faster;
schemas with references or data-contract rules still go through confluent-kafka's classes.

Confluent's serializers need a ``SerializationContext(topic, KEY|VALUE)``: with the default
``TopicNameStrategy`` the subject is ``<topic>-key`` or ``<topic>-value``. A Sluice serde is two
plain functions of one argument, so a schema serde as the user makes it (``AvroSerde(schema)``)
is *unbound*, and :func:`for_topic` makes its *bound* copy for one topic and field. Streams binds
them where a topology attaches a serde to a topic, as Kafka Streams passes the topic to
``Serializer.serialize(topic, data)``: sources and sinks (input, output and repartition topics),
and state stores (their changelog topic ``<application.id>-<store>-changelog``, or the source
topic of a table read from it). The CLI binds them to the topic it reads or writes.

Values are generic records: dicts. Avro dicts are checked against the schema by fastavro, JSON
Schema dicts validated by ``jsonschema``; a Protobuf serde builds its message class from the
schema's ``.proto`` text (or takes ``message_type=``, a generated class) and converts dicts to and
from messages (field names as in the ``.proto``, enums by name).

Options use Confluent's names (booleans as ``True``/``"true"``):

==========================  =========================================================  ========
``schema.registry.url``     the registry (default: ``$SLUICE_SCHEMA_REGISTRY_URL`` or   —
                            ``http://127.0.0.1:8081``, or what the app binds with)
``basic.auth.user.info``    ``user:password`` for the registry                         —
``auto.register.schemas``   register the serde's schema under the subject when new     true
``use.latest.version``      write with (and read into) the subject's latest version    false
``normalize.schemas``       normalize the schema before registering or looking it up   false
``subject.name.strategy``   ``TopicNameStrategy``, ``RecordNameStrategy``,              Topic
                            ``TopicRecordNameStrategy`` (or Confluent's class names)
==========================  =========================================================  ========

>>> ORDER = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}'
>>> serde = AvroSerde(ORDER, {"schema.registry.url": "http://registry:8081"})
>>> serde.name, serde.topic
('avro', None)
>>> bound = for_topic(serde, "orders", is_key=False)
>>> bound.name, bound.topic, bound.subject_for()
('avro', 'orders', 'orders-value')
>>> AvroSerde(ORDER, {"auto.register": "true"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.serde.SerdeError: unknown schema serde option 'auto.register' (known: auto.register...)
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.errors import ConfigError
from sluice.schemas.avro_wire import AvroWire, full_name
from sluice.schemas.protobuf_messages import message_class, message_to_dict
from sluice.schemas.registry_client import REGISTRY_CLIENT_KEYS, registry_client_config
from sluice.serde import Serde, SerdeError

__all__ = [
    "DEFAULT_REGISTRY_URL",
    "ENV_REGISTRY_URL",
    "STRATEGIES",
    "AvroSerde",
    "JsonSchemaSerde",
    "ProtobufSerde",
    "RegistryError",
    "SchemaSerde",
    "for_topic",
    "registry_client",
    "registry_url",
]

ENV_REGISTRY_URL = "SLUICE_SCHEMA_REGISTRY_URL"
DEFAULT_REGISTRY_URL = "http://127.0.0.1:8081"

Format = Literal["avro", "json-schema", "protobuf"]

_BOOLEANS = ("auto.register.schemas", "use.latest.version", "normalize.schemas")
_STRINGS = ("schema.registry.url", "basic.auth.user.info", "subject.name.strategy")

#: Subject name strategies by Confluent's class name.
STRATEGIES = {
    "TopicNameStrategy": "TOPIC",
    "RecordNameStrategy": "RECORD",
    "TopicRecordNameStrategy": "TOPIC_RECORD",
}
_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."


class RegistryError(SerdeError):
    """The registry could not be reached or refused (unknown subject, incompatible schema…)."""


def registry_url(url: str | None = None) -> str:
    """*url*, else ``$SLUICE_SCHEMA_REGISTRY_URL``, else ``http://127.0.0.1:8081``.

    >>> registry_url("http://r:8081")
    'http://r:8081'
    """
    return url or os.environ.get(ENV_REGISTRY_URL) or DEFAULT_REGISTRY_URL


def registry_client(
    url: str,
    basic_auth_user_info: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Any:
    """confluent-kafka's ``SchemaRegistryClient`` for *url* (a new one: it caches what it learns,
    so the bound copies of one serde share theirs, and serdes made apart do not), with the
    client settings of :mod:`sluice.schemas.registry_client` (credentials, CA, client
    certificate; those of ``$SLUICE_SCHEMA_REGISTRY_CONFIG`` for ``sluice up``'s registry)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    given = dict(settings or {})
    if basic_auth_user_info:
        given["basic.auth.user.info"] = basic_auth_user_info
    try:
        return SchemaRegistryClient(registry_client_config(url, given))
    except ConfigError as error:
        raise RegistryError(f"schema registry {url!r}: {error}") from None
    except ValueError as error:
        raise RegistryError(f"schema registry {url!r}: {error}") from None


def _options(given: Mapping[str, Any] | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, raw in (given or {}).items():
        value = raw
        if name in _BOOLEANS:
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise SerdeError(f"schema serde option {name!r} must be true or false: {value!r}")
        elif name == "subject.name.strategy":
            short = str(raw).removeprefix(_STRATEGY_PACKAGE)
            if short not in STRATEGIES:
                known = ", ".join(STRATEGIES)
                raise SerdeError(f"unknown subject.name.strategy {value!r} (known: {known})")
            value = short
        elif name in _STRINGS or name in REGISTRY_CLIENT_KEYS:
            if not isinstance(value, str) or not value:
                raise SerdeError(f"schema serde option {name!r} must be a non-empty string")
        else:
            known = ", ".join(sorted({*_BOOLEANS, *_STRINGS, *REGISTRY_CLIENT_KEYS}))
            raise SerdeError(f"unknown schema serde option {name!r} (known: {known})")
        options[name] = value
    return options


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class _Spec:
    """What the user said: format, schema, options (and a Protobuf message); it owns the
    registry clients of the serde and its bound copies, closed when it goes."""

    format: Format
    schema: str | None
    options: Mapping[str, Any]
    message: str | None = None
    message_type: Any = None
    clients: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = field(
        default_factory=dict, compare=False
    )
    """The registry clients of this serde and its bound copies, by URL and client settings."""
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)

    def __post_init__(self) -> None:
        weakref.finalize(self, _close_all, self.clients)

    def client(self, url: str) -> Any:
        """The shared registry client for *url*."""
        settings = tuple(
            sorted((k, str(v)) for k, v in self.options.items() if k in REGISTRY_CLIENT_KEYS)
        )
        with self.lock:
            made = self.clients.get((url, settings))
            if made is None:
                made = self.clients[(url, settings)] = registry_client(url, None, dict(settings))
            return made

    def serializer_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "auto.register.schemas": self.options.get("auto.register.schemas", True),
            "use.latest.version": self.options.get("use.latest.version", False),
            "normalize.schemas": self.options.get("normalize.schemas", False),
        }
        strategy = self.options.get("subject.name.strategy")
        if strategy is not None:
            conf["subject.name.strategy.type"] = STRATEGIES[strategy]
        return conf

    def deserializer_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"use.latest.version": self.options.get("use.latest.version", False)}
        strategy = self.options.get("subject.name.strategy")
        if strategy is not None:
            conf["subject.name.strategy.type"] = STRATEGIES[strategy]
        return conf


def _confluent(value: Any) -> bytes:  # pragma: no cover - a marker, never called
    raise AssertionError("confluent-kafka's serializer writes this serde's values")


_CONFLUENT: Any = _confluent
"""The marker of a serde whose Avro values confluent-kafka's classes write or read."""


def _close_all(clients: dict[Any, Any]) -> None:
    for client in clients.values():
        client.close()
    clients.clear()


class _Codec:
    """The confluent-kafka serializer and deserializer of one spec, topic and field, made on
    first use (building a topology needs no registry)."""

    def __init__(self, spec: _Spec, topic: str | None, is_key: bool) -> None:
        self.spec = spec
        self.topic = topic
        self.is_key = is_key
        self._lock = threading.Lock()
        self._serializer: Callable[[Any, SerializationContext], bytes | None] | None = None
        self._deserializer: Callable[[bytes, SerializationContext], Any] | None = None
        self._message_class: Any = None
        field_ = MessageField.KEY if is_key else MessageField.VALUE
        self.context = SerializationContext(topic or "", field_)
        self.where = f"{'key' if is_key else 'value'} of topic {topic!r}" if topic else "a record"
        self._avro: AvroWire | None = None
        self._avro_writer: Callable[[Any], bytes] | None = None
        self._avro_readers: dict[int, Callable[[bytes], Any] | None] = {}

    @property
    def url(self) -> str:
        return registry_url(self.spec.options.get("schema.registry.url"))

    def client(self) -> Any:
        return self.spec.client(self.url)

    def serialize(self, value: Any) -> bytes:
        if self.spec.format == "avro" and value is not None:
            writer = self._avro_writer or self._make_avro_writer()
            if writer is not _CONFLUENT:
                try:
                    return writer(value)
                except Exception as error:
                    raise self._error("serialize", error) from error
        serializer = self._serializer or self._make_serializer()
        if self.spec.format == "protobuf" and isinstance(value, Mapping):
            value = self._to_message(value)
        try:
            data = serializer(value, self.context)
        except Exception as error:
            raise self._error("serialize", error) from error
        if data is None:
            raise SerdeError(f"{self.spec.format} serializer wrote nothing for {self.where}")
        return data

    def deserialize(self, data: bytes) -> Any:
        if self.spec.format == "avro":
            data = bytes(data)
            if len(data) > 5 and data[0] == 0:
                schema_id = int.from_bytes(data[1:5], "big")
                reader = self._avro_readers.get(schema_id, _CONFLUENT)
                if reader is _CONFLUENT:
                    reader = self._make_avro_reader(schema_id)
                if reader is not None:
                    try:
                        return reader(data)
                    except Exception as error:
                        raise self._error("deserialize", error) from error
        deserializer = self._deserializer or self._make_deserializer()
        try:
            value = deserializer(bytes(data), self.context)
        except Exception as error:
            raise self._error("deserialize", error) from error
        if self.spec.format == "protobuf" and self.spec.message_type is None:
            return message_to_dict(value)
        return value

    # -- making ------------------------------------------------------------------------------
    def _wire(self) -> AvroWire:
        if self._avro is None:
            conf = self.spec.serializer_conf()
            self._avro = AvroWire(
                self.client(),
                auto_register=conf["auto.register.schemas"],
                use_latest=conf["use.latest.version"],
                normalize=conf["normalize.schemas"],
            )
        return self._avro

    def _subject(self, record_name: str | None) -> str | None:
        """The subject as confluent-kafka's strategy functions name it."""
        strategy = self.spec.options.get("subject.name.strategy", "TopicNameStrategy")
        suffix = "key" if self.is_key else "value"
        if strategy == "TopicNameStrategy":
            return f"{self.topic or ''}-{suffix}"
        if record_name is None:
            return None
        return record_name if strategy == "RecordNameStrategy" else f"{self.topic}-{record_name}"

    def _make_avro_writer(self) -> Callable[[Any], bytes]:
        """Sluice's Avro writer for this serde's subject, or ``_CONFLUENT`` (then
        confluent-kafka's ``AvroSerializer`` writes: references, rules)."""
        spec = self.spec
        record_name = None
        if spec.schema is not None:
            try:
                record_name = full_name(json.loads(spec.schema))
            except ValueError:
                record_name = None  # a primitive's name, or bad JSON: AvroSerializer says
        strategy = spec.options.get("subject.name.strategy", "TopicNameStrategy")
        subject = self._subject(record_name)
        made: Callable[[Any], bytes] | None = None
        if subject is not None and (self.topic is not None or strategy == "RecordNameStrategy"):
            from confluent_kafka.schema_registry.error import SchemaRegistryError

            try:
                made = self._wire().writer(spec.schema, subject)
            except Exception as error:
                registry = isinstance(error, SchemaRegistryError | OSError)
                if registry or type(error).__module__.startswith("httpx"):
                    raise self._error("serialize", error) from error
                made = None  # a schema fastavro refuses: AvroSerializer gives the error
        self._avro_writer = made or _CONFLUENT
        return self._avro_writer

    def _make_avro_reader(self, schema_id: int) -> Callable[[bytes], Any] | None:
        try:
            made = self._wire().reader(schema_id, self.spec.schema, self._subject)
        except Exception:  # the registry's or the schema's error: AvroDeserializer reports it
            made = None
        self._avro_readers[schema_id] = made
        return made

    def _make_serializer(self) -> Callable[[Any, SerializationContext], bytes | None]:
        spec = self.spec
        strategy = spec.options.get("subject.name.strategy", "TopicNameStrategy")
        if self.topic is None and strategy != "RecordNameStrategy":
            raise SerdeError(
                f"this {spec.format} serde is not bound to a topic, which {strategy} needs for "
                "the subject; Sluice binds schema serdes to the topics of sources, sinks, "
                "repartition topics and store changelogs, but not inside windowed keys, table "
                "changes or join buffers: use subject.name.strategy=RecordNameStrategy there "
                "(or bind it yourself with sluice.schemas.serdes.for_topic)"
            )
        with self._lock:
            if self._serializer is not None:
                return self._serializer
            conf = spec.serializer_conf()
            client = self.client()
            made: Callable[[Any, SerializationContext], bytes | None]
            try:
                if spec.format == "avro":
                    from confluent_kafka.schema_registry.avro import AvroSerializer

                    made = AvroSerializer(client, spec.schema, conf=conf)
                elif spec.format == "json-schema":
                    from confluent_kafka.schema_registry.json_schema import JSONSerializer

                    made = JSONSerializer(spec.schema, client, conf=conf)
                else:
                    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

                    conf["use.deprecated.format"] = False
                    made = ProtobufSerializer(self.message_class(), client, conf=conf)
            except SerdeError:
                raise
            except Exception as error:
                raise SerdeError(f"bad {spec.format} schema: {error}") from None
            self._serializer = made
            return made

    def _make_deserializer(self) -> Callable[[bytes, SerializationContext], Any]:
        spec = self.spec
        with self._lock:
            if self._deserializer is not None:
                return self._deserializer
            conf = spec.deserializer_conf()
            client = self.client()
            made: Callable[[bytes, SerializationContext], Any]
            try:
                if spec.format == "avro":
                    from confluent_kafka.schema_registry.avro import AvroDeserializer

                    made = AvroDeserializer(client, spec.schema, conf=conf)
                elif spec.format == "json-schema":
                    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

                    made = JSONDeserializer(spec.schema, schema_registry_client=client, conf=conf)
                else:
                    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

                    conf["use.deprecated.format"] = False
                    made = ProtobufDeserializer(
                        self.message_class(), conf, schema_registry_client=client
                    )
            except SerdeError:
                raise
            except Exception as error:
                raise SerdeError(f"bad {spec.format} schema: {error}") from None
            self._deserializer = made
            return made

    def message_class(self) -> Any:
        if self.spec.message_type is not None:
            return self.spec.message_type
        if self._message_class is None:
            assert self.spec.schema is not None
            self._message_class = message_class(self.spec.schema, self.spec.message)
        return self._message_class

    def _to_message(self, value: Mapping[str, Any]) -> Any:
        from google.protobuf import json_format

        message = self.message_class()()
        try:
            json_format.ParseDict(dict(value), message)
        except json_format.ParseError as error:
            raise SerdeError(f"cannot serialize the {self.where} as protobuf: {error}") from None
        return message

    def _error(self, action: str, error: Exception) -> SerdeError:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, SchemaRegistryError):
                return RegistryError(
                    f"schema registry {self.url} refused ({action} the {self.where}): "
                    f"{cause.error_message} (error {cause.error_code})"
                )
            if isinstance(cause, OSError) or type(cause).__module__.startswith("httpx"):
                return RegistryError(f"schema registry {self.url} is unreachable: {cause}")
            cause = cause.__cause__ or cause.__context__
        return SerdeError(f"cannot {action} the {self.where} as {self.spec.format}: {error}")


@dataclass(frozen=True, slots=True)
class SchemaSerde(Serde):
    """A schema-aware :class:`~sluice.serde.Serde`; ``topic`` is ``None`` until bound with
    :func:`for_topic` (see the module docstring). Make one with :func:`AvroSerde`,
    :func:`JsonSchemaSerde` or :func:`ProtobufSerde`."""

    spec: _Spec | None = field(default=None, compare=False)
    topic: str | None = None
    is_key: bool = False

    def subject_for(self, record_name: str | None = None) -> str:
        """The subject this serde writes under (*record_name* for the Record strategies)."""
        assert self.spec is not None
        strategy = self.spec.options.get("subject.name.strategy", "TopicNameStrategy")
        suffix = "key" if self.is_key else "value"
        if strategy == "TopicNameStrategy":
            return f"{self.topic}-{suffix}"
        if record_name is None:
            raise SerdeError(f"{strategy} needs the record name")
        return record_name if strategy == "RecordNameStrategy" else f"{self.topic}-{record_name}"


def _serde(spec: _Spec, topic: str | None, is_key: bool) -> SchemaSerde:
    codec = _Codec(spec, topic, is_key)
    return SchemaSerde(codec.serialize, codec.deserialize, spec.format, spec, topic, is_key)


def for_topic(
    serde: Serde, topic: str, *, is_key: bool, default_registry: str | None = None
) -> Serde:
    """*serde* bound to *topic*'s key or value if it is an unbound :class:`SchemaSerde`, else
    *serde* itself. *default_registry* is the registry URL to use when the serde names none.

    >>> from sluice.serde import JSON
    >>> for_topic(JSON, "orders", is_key=False) is JSON
    True
    """
    if not isinstance(serde, SchemaSerde) or serde.topic is not None or serde.spec is None:
        return serde
    spec = serde.spec
    if default_registry and "schema.registry.url" not in spec.options:
        options = {**spec.options, "schema.registry.url": default_registry}
        spec = replace(spec, options=options, clients={}, lock=threading.Lock())
    return _serde(spec, topic, is_key)


def AvroSerde(schema: str | None, config: Mapping[str, Any] | None = None) -> SchemaSerde:  # noqa: N802 - a serde "class" as users name it
    """Avro records as dicts (fastavro's mapping: ``Decimal`` for decimals, ``datetime`` for
    timestamps). ``schema`` is the writer's schema, and the reader's when deserializing (values
    written with an older compatible version are resolved to it); ``None`` needs
    ``use.latest.version`` to write and reads with the writer's schema."""
    options = _options(config)
    if schema is None and not options.get("use.latest.version"):
        raise SerdeError("an Avro serde needs a schema, or use.latest.version=true")
    return _serde(_Spec("avro", schema, options), None, False)


def JsonSchemaSerde(schema: str | None, config: Mapping[str, Any] | None = None) -> SchemaSerde:  # noqa: N802
    """JSON values (dicts) validated against a JSON Schema before they are written."""
    options = _options(config)
    if schema is None and not options.get("use.latest.version"):
        raise SerdeError("a JSON Schema serde needs a schema, or use.latest.version=true")
    return _serde(_Spec("json-schema", schema, options), None, False)


def ProtobufSerde(  # noqa: N802
    schema: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    message: str | None = None,
    message_type: Any = None,
) -> SchemaSerde:
    """Protobuf messages: from ``.proto`` text (*message* names the message, default the first
    one; values are dicts) or a generated class *message_type* (values are its messages, or
    dicts to build them from)."""
    options = _options(config)
    if (schema is None) == (message_type is None):
        raise SerdeError("a Protobuf serde needs .proto text or message_type, one of them")
    if schema is not None:
        message_class(schema, message)  # a bad schema fails here, not at the first record
    return _serde(_Spec("protobuf", schema, options, message, message_type), None, False)
