"""The options of the ``sluice`` Spark source, checked once, named as in Spark's Kafka source.

Option names are case-insensitive (Spark hands the source a case-insensitive dictionary whose keys
are lower-cased). ``kafka.*`` options go to the consumer (``kafka.`` stripped); the few that the
source must own are refused, as Spark refuses them.

Kafka's client security settings come as in Spark's Kafka source, under the Java client's names
(``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location`` as a PEM file …), and go through the translation every Sluice
client uses (:func:`sluice.client_security.client_settings`: JAAS to ``sasl.username`` /
``sasl.password``, PEM stores to ``ssl.ca.location`` …); librdkafka's own names work too. A
mistake is a ``ValueError`` naming the option; secrets show as ``[hidden]`` in the options' repr.

>>> jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
...         'username="u" password="pw";')
>>> secured = SourceOptions.parse({"kafka.bootstrap.servers": "b:9093", "subscribe": "t",
...     "kafka.security.protocol": "SASL_SSL", "kafka.sasl.jaas.config": jaas})
>>> secured.admin_config()["sasl.username"], "pw" in repr(secured)
('u', False)
>>> SourceOptions.parse({"kafka.bootstrap.servers": "b:9093", "subscribe": "t",
...     "kafka.sasl.jaas.config": jaas.replace(' password="pw"', "")})
Traceback (most recent call last):
...
ValueError: option 'kafka.sasl.jaas.config': PlainLoginModule needs password

>>> opts = SourceOptions.parse({"kafka.bootstrap.servers": "b:9092", "subscribe": "a, b"})
>>> opts.subscription
Subscription(kind='subscribe', topics=('a', 'b'), pattern='', assign=())
>>> SourceOptions.parse({"subscribe": "a"})
Traceback (most recent call last):
...
ValueError: option 'kafka.bootstrap.servers' must be set (the Kafka cluster to read from)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sluice.client_security import client_settings, masked_client, split_security
from sluice.connectors.spark._offsets import OffsetsOption, TopicPartition, parse_offsets_option
from sluice.connectors.spark._registry_schema import FORMATS, FieldFormat
from sluice.errors import ConfigError
from sluice.schemas.serdes import registry_url

__all__ = ["SourceOptions", "Subscription"]

# Kafka consumer settings that the source owns, with what to use instead (as Spark says it).
_REFUSED = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "enable.auto.commit": "the source does not commit offsets to Kafka; Spark checkpoints them",
    "key.deserializer": "keys are read as bytes, or decoded by the option 'keyFormat'",
    "value.deserializer": "values are read as bytes, or decoded by the option 'valueFormat'",
    "enable.partition.eof": "the source needs partition EOF events to find the end of a range",
}
# Connection settings that the metadata client (an AdminClient) takes from the kafka.* options.
_ADMIN_PREFIXES = (
    "security.", "sasl.", "ssl.", "enable.sasl.", "enable.ssl.", "socket.", "client.", "broker.",
    "reconnect.",
)  # fmt: skip
_ADMIN_KEYS = {"bootstrap.servers", "metadata.max.age.ms", "api.version.request", "debug"}


@dataclass(frozen=True)
class Subscription:
    """What to read: ``subscribe`` (topic names), ``subscribePattern`` (a regex) or ``assign``."""

    kind: str  # "subscribe", "subscribePattern" or "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assign: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class SourceOptions:
    """Every option of the source, checked. Picklable: it travels to Spark's Python workers."""

    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetsOption
    ending: OffsetsOption
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_s: float
    rows_per_batch: int
    kafka: tuple[tuple[str, str], ...]  # librdkafka settings from kafka.* options, sorted
    key_format: FieldFormat | None = None  # keyFormat and its options; None: bytes
    value_format: FieldFormat | None = None  # valueFormat and its options; None: bytes
    registry_url: str = ""  # schema.registry.url (resolved on the driver)
    registry_auth: str | None = None  # schema.registry.basic.auth.user.info
    permissive: bool = False  # mode=PERMISSIVE: a record that does not decode gives null

    def __repr__(self) -> str:
        """The options with secret settings (passwords, JAAS, keys) shown as ``[hidden]``."""
        shown = {name: getattr(self, name) for name in self.__dataclass_fields__}
        shown["kafka"] = tuple(masked_client(dict(self.kafka)).items())
        if self.registry_auth is not None:
            shown["registry_auth"] = "[hidden]"
        return f"SourceOptions({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def secured(self) -> bool:
        """Whether the source authenticates (SASL) or speaks TLS to the cluster."""
        return dict(self.kafka).get("security.protocol", "plaintext").lower() != "plaintext"

    @property
    def isolation_level(self) -> str:
        """``read_uncommitted`` (Kafka's default) unless ``kafka.isolation.level`` is set."""
        return dict(self.kafka).get("isolation.level", "read_uncommitted")

    def consumer_config(self) -> dict[str, str | bool | int]:
        """librdkafka settings of a consumer that reads assigned partitions and never commits."""
        config: dict[str, str | bool | int] = {
            "group.id": "spark-sluice-source",
            # a task reads one partition's range: fetch up to 10 MiB of it per request (librdkafka's
            # 1 MiB default costs a round trip per ~9,000 records of 100 B); kafka.* overrides it
            "max.partition.fetch.bytes": 10 * 1024 * 1024,
            **dict(self.kafka),
            "bootstrap.servers": self.bootstrap_servers,
            "isolation.level": self.isolation_level,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error" if self.fail_on_data_loss else "earliest",
        }
        return config

    def admin_config(self) -> dict[str, str | int | float | bool]:
        """Settings of the AdminClient that lists partitions and offsets (connection keys only)."""
        config: dict[str, str | int | float | bool] = {
            key: value
            for key, value in self.kafka
            if key in _ADMIN_KEYS or key.startswith(_ADMIN_PREFIXES)
        }
        config["bootstrap.servers"] = self.bootstrap_servers
        return config

    @classmethod
    def parse(cls, options: Mapping[str, str], *, batch: bool | None = False) -> SourceOptions:
        """Check ``options`` (a Spark options map); ``ValueError`` says which option is wrong.

        ``batch``: for a batch query (True), a streaming one (False) or either (None: the
        checks that depend on the kind of query are left to when it is known).
        """
        opts = {key.lower(): value for key, value in options.items()}
        kafka = {
            key[len("kafka.") :]: value for key, value in opts.items() if key.startswith("kafka.")
        }
        bootstrap = kafka.pop("bootstrap.servers", None) or opts.get("bootstrap.servers")
        if not bootstrap:
            raise ValueError(
                "option 'kafka.bootstrap.servers' must be set (the Kafka cluster to read from)"
            )
        for key, instead in _REFUSED.items():
            if key in kafka:
                raise ValueError(f"Kafka option 'kafka.{key}' is not supported: {instead}")
        kafka = _translate_security(kafka)
        if batch is False and "endingoffsets" in opts:
            raise ValueError("option 'endingOffsets' is for batch queries only (spark.read)")
        key_format = _field_format(opts, "key")
        value_format = _field_format(opts, "value")
        decoding = key_format is not None or value_format is not None
        for name in ("schema.registry.url", "schema.registry.basic.auth.user.info", "mode"):
            if name in opts and not decoding:
                raise ValueError(
                    f"option '{name}' applies to registry-encoded records: set 'valueFormat' or "
                    "'keyFormat' too"
                )
        return cls(
            bootstrap_servers=bootstrap,
            subscription=_subscription(opts),
            starting=parse_offsets_option(
                "startingOffsets",
                opts.get("startingoffsets"),
                "earliest" if batch else "latest",
                batch=bool(batch),
            ),
            ending=parse_offsets_option(
                "endingOffsets", opts.get("endingoffsets"), "latest", batch=batch is not False
            ),
            max_offsets_per_trigger=_positive_int(opts, "maxOffsetsPerTrigger"),
            min_partitions=_positive_int(opts, "minPartitions"),
            fail_on_data_loss=_boolean(opts, "failOnDataLoss", default=True),
            include_headers=_boolean(opts, "includeHeaders", default=False),
            poll_timeout_s=(_positive_int(opts, "kafkaConsumer.pollTimeoutMs") or 120_000) / 1000,
            rows_per_batch=_positive_int(opts, "rowsPerBatch") or 10_000,
            kafka=tuple(sorted(kafka.items())),
            key_format=key_format,
            value_format=value_format,
            registry_url=registry_url(opts.get("schema.registry.url")) if decoding else "",
            registry_auth=opts.get("schema.registry.basic.auth.user.info") or None,
            permissive=_mode(opts),
        )

    def subject_topics(self) -> tuple[str, ...]:
        """The topics named by the subscription (none for a pattern): the subject of a key or
        value is ``<topic>-key`` / ``<topic>-value`` when there is exactly one."""
        if self.subscription.kind == "assign":
            return tuple(dict.fromkeys(topic for topic, _ in self.subscription.assign))
        return self.subscription.topics


def _field_format(opts: Mapping[str, str], field: str) -> FieldFormat | None:
    """``keyFormat`` / ``valueFormat`` with their subject, version, id and message options."""
    names = {
        part: f"{field}{part}"
        for part in ("Format", "Subject", "SchemaVersion", "SchemaId", "MessageName")
    }
    raw = opts.get(names["Format"].lower())
    fmt = (raw or "binary").strip().lower()
    if fmt not in (*FORMATS, "binary"):
        raise ValueError(
            f"option '{names['Format']}' must be avro, protobuf, json-schema or binary (the "
            f"default: bytes), got {raw!r}"
        )
    if fmt == "binary":
        given = [name for part, name in names.items() if part != "Format" and name.lower() in opts]
        if given:
            raise ValueError(
                f"option '{given[0]}' needs '{names['Format']}' (avro, protobuf, json-schema)"
            )
        return None
    version_text = opts.get(names["SchemaVersion"].lower(), "latest").strip().lower()
    version = None if version_text == "latest" else _positive_int(opts, names["SchemaVersion"])
    schema_id = _positive_int(opts, names["SchemaId"])
    if schema_id is not None and names["SchemaVersion"].lower() in opts:
        raise ValueError(
            f"options '{names['SchemaId']}' and '{names['SchemaVersion']}' exclude each other"
        )
    message = opts.get(names["MessageName"].lower())
    if message is not None and fmt != "protobuf":
        raise ValueError(f"option '{names['MessageName']}' is for {field}Format=protobuf only")
    subject = opts.get(names["Subject"].lower())
    if subject is not None and not subject.strip():
        raise ValueError(f"option '{names['Subject']}' must not be empty")
    return FieldFormat(
        field,
        fmt,
        subject.strip() if subject else None,
        version,
        schema_id,
        message.strip() if message else None,
    )


def _mode(opts: Mapping[str, str]) -> bool:
    """Whether ``mode`` is PERMISSIVE (FAILFAST, the default, fails the query)."""
    raw = opts.get("mode", "FAILFAST").strip().upper()
    if raw not in ("FAILFAST", "PERMISSIVE"):
        raise ValueError(f"option 'mode' must be FAILFAST or PERMISSIVE, got {opts['mode']!r}")
    return raw == "PERMISSIVE"


def _translate_security(kafka: dict[str, str]) -> dict[str, str]:
    """``kafka`` with its security settings written for the Java client translated to
    librdkafka's (the translation of ``--command-config``); ``ValueError`` names the option."""
    security, others = split_security(kafka)
    if not security:
        return kafka
    try:
        translated = client_settings(security, source="the sluice source's options")
    except ConfigError as exc:
        if exc.key is None:
            raise ValueError(str(exc)) from None
        raise ValueError(f"option 'kafka.{exc.key}': {exc.reason}") from None
    return {**others, **translated}


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [name for name in ("subscribe", "subscribePattern", "assign") if name.lower() in opts]
    if len(given) != 1:
        raise ValueError(
            "exactly one of the options 'subscribe', 'subscribePattern', 'assign' must be set, "
            f"got {given or 'none'}"
        )
    kind = given[0]
    value = opts[kind.lower()].strip()
    if kind == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise ValueError("option 'subscribe' must name at least one topic (comma-separated)")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"option 'subscribePattern' is not a valid regex: {exc}") from None
        if not value:
            raise ValueError("option 'subscribePattern' must not be empty")
        return Subscription(kind, pattern=value)
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError:
        decoded = None
    valid = isinstance(decoded, dict) and all(
        isinstance(t, str)
        and isinstance(ps, list)
        and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in ps)
        for t, ps in decoded.items()
    )
    if not valid or not decoded:
        raise ValueError(f"option 'assign' must be JSON like {{\"topic\": [0, 1]}}, got {value!r}")
    assert isinstance(decoded, dict)
    pairs = sorted({(topic, p) for topic, ps in decoded.items() for p in ps})
    return Subscription(kind, assign=tuple(pairs))


def _positive_int(opts: Mapping[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"option '{name}' must be a positive integer, got {raw!r}")
    return value


def _boolean(opts: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise ValueError(f"option '{name}' must be true or false, got {raw!r}")
    return raw.strip().lower() == "true"
