"""The settings of a Streams application, under Kafka Streams' names in snake case.

Kafka's dotted names are accepted too (:data:`KAFKA_NAMES`): :meth:`StreamsConfig.of` takes a
mapping of them, as Kafka's ``Properties``, and :func:`settings_of` turns a mixture of both forms
into the fields (``App(**settings)`` goes through it).

>>> c = StreamsConfig("orders-app", processing_guarantee="exactly_once_v2")
>>> c.commit_interval_ms   # Kafka's default under exactly-once
100
>>> StreamsConfig("a").commit_interval_ms
30000
>>> c = StreamsConfig.of({"application.id": "a", "errors.deadletterqueue.topic.name": "a-dlq"})
>>> c.dead_letter_topic
'a-dlq'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_type_hints

from sluice.client_security import client_settings, is_security_key
from sluice.errors import ConfigError
from sluice.metrics import parse_listen
from sluice.streams.errors import HandlerSpec, StreamsError, handler_from

__all__ = [
    "CLIENT_PREFIXES",
    "ENV_CONFIG",
    "KAFKA_NAMES",
    "ProcessingGuarantee",
    "StreamsConfig",
    "client_role",
    "settings_from_text",
    "settings_of",
]

ProcessingGuarantee = Literal["at_least_once", "exactly_once_v2"]

KAFKA_NAMES: dict[str, str] = {
    "application.id": "application_id",
    "bootstrap.servers": "bootstrap_servers",
    "processing.guarantee": "processing_guarantee",
    "commit.interval.ms": "commit_interval_ms",
    "statestore.cache.max.bytes": "statestore_cache_max_bytes",
    "cache.max.bytes.buffering": "statestore_cache_max_bytes",  # its name before Kafka 3.4
    "num.standby.replicas": "num_standby_replicas",
    "state.dir": "state_dir",
    "replication.factor": "replication_factor",
    "default.deserialization.exception.handler": "deserialization_exception_handler",
    "deserialization.exception.handler": "deserialization_exception_handler",
    "processing.exception.handler": "processing_exception_handler",
    "default.production.exception.handler": "production_exception_handler",
    "production.exception.handler": "production_exception_handler",
    "errors.deadletterqueue.topic.name": "dead_letter_topic",
    "poll.ms": "poll_ms",
    "max.poll.records": "max_poll_records",
    "transaction.timeout.ms": "transaction_timeout_ms",
    "session.timeout.ms": "session_timeout_ms",
    # Confluent's serde setting, as Kafka Streams apps give it in their properties
    "schema.registry.url": "schema_registry_url",
    "application.server": "application_server",
    "max.warmup.replicas": "max_warmup_replicas",
    "acceptable.recovery.lag": "acceptable_recovery_lag",
    "probing.rebalance.interval.ms": "probing_rebalance_interval_ms",
}
"""Kafka Streams' (and its clients') dotted config names, and the field each one sets. Kafka 4.0
dropped the ``default.`` of the two handler names; both spellings are taken."""


def settings_of(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` by field name: dotted Kafka names translated, unknown names and a setting
    given twice (``dead_letter_topic`` and ``errors.deadletterqueue.topic.name``) refused.

    >>> settings_of({"processing.exception.handler": "log_and_continue", "poll_ms": 50})
    {'processing_exception_handler': 'log_and_continue', 'poll_ms': 50}
    """
    known = {f.name for f in fields(StreamsConfig)}
    named: dict[str, str] = {}
    result: dict[str, Any] = {}
    clients: dict[str, dict[str, Any]] = {}  # field → Java client settings to translate
    for name, value in settings.items():
        role = client_role(name)
        if role is not None:
            target, key = role
            clients.setdefault(target, {})[key] = value
            continue
        target = KAFKA_NAMES.get(name, name)
        if target not in known:
            raise StreamsError(
                f"unknown Streams setting {name!r} (settings: {', '.join(sorted(known))}; or "
                f"Kafka's names: {', '.join(sorted(KAFKA_NAMES))})"
            )
        if target in named:
            raise StreamsError(f"{target} is given twice: as {named[target]!r} and as {name!r}")
        named[target] = name
        result[target] = value
    for target, java in clients.items():
        try:
            translated = client_settings(java, source="Streams settings")
        except ConfigError as error:
            raise StreamsError(str(error)) from None
        # a key given in the field's own dict (librdkafka's name) wins over the Java one
        result[target] = {**translated, **result.get(target, {})}
    return result


CLIENT_PREFIXES: dict[str, str] = {
    "consumer.": "consumer_config",
    "main.consumer.": "consumer_config",
    "restore.consumer.": "consumer_config",
    "global.consumer.": "consumer_config",
    "producer.": "producer_config",
    "admin.": "admin_config",
}
"""Kafka Streams' prefixes for one kind of client's settings, and the field they go to. Sluice's
app has one consumer setting for all its consumers, so the three consumer prefixes share it."""


def client_role(name: str) -> tuple[str, str] | None:
    """``(field, client key)`` when ``name`` is a client setting rather than a Streams one: a
    security setting for every client (``client_config``) or a prefixed one for one kind.

    >>> client_role("sasl.mechanism"), client_role("producer.linger.ms"), client_role("poll.ms")
    (('client_config', 'sasl.mechanism'), ('producer_config', 'linger.ms'), None)
    """
    if is_security_key(name):
        return "client_config", name
    for prefix in sorted(CLIENT_PREFIXES, key=len, reverse=True):
        if name.startswith(prefix) and len(name) > len(prefix):
            return CLIENT_PREFIXES[prefix], name[len(prefix) :]
    return None


ENV_CONFIG = "SLUICE_STREAMS_CONFIG"
"""The environment variable in which a deployment (``sluice up``'s ``config:``) gives an app its
settings, as one JSON object of strings under Kafka Streams' names (:func:`settings_from_text`);
``App`` reads it, and its settings win over those in the app's code."""


def settings_from_text(values: Mapping[str, str]) -> dict[str, Any]:
    """Settings written as strings (a deployment's ``config:``) by field name, each converted to
    its field's type; a setting that is not a plain value (the client config dicts) is refused.

    >>> settings_from_text({"commit.interval.ms": "500", "errors.deadletterqueue.topic.name": "d"})
    {'commit_interval_ms': 500, 'dead_letter_topic': 'd'}
    """
    types = get_type_hints(StreamsConfig)
    result: dict[str, Any] = {}
    for name, value in settings_of(values).items():
        kind = str(types[name])
        if "dict" in kind and isinstance(value, dict):
            result[name] = value  # client settings, already translated by settings_of
        elif "dict" in kind:
            raise StreamsError(f"{name} cannot be given as text; set it in the app's code")
        if "int" in kind and "Callable" not in kind:
            try:
                result[name] = int(value)
            except ValueError:
                raise StreamsError(f"{name} must be a whole number, got {value!r}") from None
        elif "Path" in kind:
            result[name] = Path(value)
        else:
            result[name] = value
    return result


@dataclass
class StreamsConfig:
    """``application_id`` is the consumer group id and the prefix of internal topics.

    ``consumer_config`` / ``producer_config`` / ``admin_config`` are librdkafka properties that
    win over Sluice's (for example ``{"security.protocol": "SSL"}``); ``client_config`` goes to
    every client, under those three. Kafka's client security settings (``security.protocol``,
    ``sasl.jaas.config``, ``ssl.truststore.location`` …) and Kafka Streams' prefixed client
    settings (``producer.``, ``consumer.``, ``main.consumer.``, ``restore.consumer.``,
    ``global.consumer.``, ``admin.``) are taken by :meth:`of` and :func:`settings_of`, translated
    to librdkafka's keys (:mod:`sluice.client_security`). The four are left out of ``repr()``:
    they may hold passwords. ``metrics_listen``
    (``HOST:PORT``) serves Prometheus metrics at ``/metrics`` there while the application runs
    (:mod:`sluice.streams.runtime.metrics`). The three ``*_exception_handler`` settings and
    ``dead_letter_topic`` (Kafka's ``errors.deadletterqueue.topic.name``) are described in
    :mod:`sluice.streams.errors` and :mod:`sluice.streams.runtime.dead_letter`.
    ``schema_registry_url`` (Confluent's ``schema.registry.url``) is where the schema serdes
    (:mod:`sluice.schemas.serdes`) that name no registry of their own go.
    """

    application_id: str
    bootstrap_servers: str = "localhost:9092"
    processing_guarantee: ProcessingGuarantee = "at_least_once"
    commit_interval_ms: int | None = None
    statestore_cache_max_bytes: int = 10 * 1024 * 1024
    """The record caches' byte budget (``statestore.cache.max.bytes``, Kafka's default 10 MiB;
    0 forwards every update at once): :mod:`sluice.streams.state.cache`."""
    num_standby_replicas: int = 0
    state_dir: Path | None = None
    replication_factor: int = 1
    deserialization_exception_handler: HandlerSpec = "log_and_fail"
    processing_exception_handler: HandlerSpec = "log_and_fail"
    production_exception_handler: HandlerSpec = "log_and_fail"
    dead_letter_topic: str | None = None
    poll_ms: int = 100
    max_poll_records: int = 1000
    transaction_timeout_ms: int = 10_000
    session_timeout_ms: int = 10_000
    consumer_config: dict[str, Any] = field(default_factory=dict, repr=False)
    producer_config: dict[str, Any] = field(default_factory=dict, repr=False)
    admin_config: dict[str, Any] = field(default_factory=dict, repr=False)
    metrics_listen: str | None = None
    client_config: dict[str, Any] = field(default_factory=dict, repr=False)
    schema_registry_url: str | None = None
    """Where schema-aware serdes that name no registry go (``schema.registry.url``)."""
    application_server: str | None = None
    """``host:port`` where this instance answers interactive queries (``application.server``),
    made known to the other instances through the group
    (:mod:`sluice.streams.runtime.instances`)."""
    serve_queries: bool = False
    """Serve this instance's stores over HTTP at ``application_server``
    (:mod:`sluice.streams.runtime.query_server`)."""
    max_warmup_replicas: int = 2
    """Warm-up replicas placed at once, in the whole application (``max.warmup.replicas``):
    :mod:`sluice.streams.runtime.assignor`."""
    acceptable_recovery_lag: int = 10_000
    """Changelog records an instance may lack and still count as caught up on a task
    (``acceptable.recovery.lag``)."""
    probing_rebalance_interval_ms: int = 600_000
    """How long after placing warm-ups the leader rebalances to see whether they caught up
    (``probing.rebalance.interval.ms``)."""

    def __post_init__(self) -> None:
        if self.processing_guarantee not in ("at_least_once", "exactly_once_v2"):
            raise StreamsError(
                f"processing_guarantee must be 'at_least_once' or 'exactly_once_v2', "
                f"got {self.processing_guarantee!r}"
            )
        if not self.application_id or any(c in self.application_id for c in "/\\ "):
            raise StreamsError(f"application_id {self.application_id!r} cannot name topics")
        handler_from(self.deserialization_exception_handler, "deserialization")
        handler_from(self.processing_exception_handler, "processing")
        handler_from(self.production_exception_handler, "production")
        if self.dead_letter_topic is not None and (
            not isinstance(self.dead_letter_topic, str)
            or not self.dead_letter_topic
            or any(c in self.dead_letter_topic for c in "/\\ ")
        ):
            raise StreamsError(f"dead_letter_topic {self.dead_letter_topic!r} cannot name a topic")
        if self.commit_interval_ms is None:
            self.commit_interval_ms = 100 if self.exactly_once else 30_000
        if (
            not isinstance(self.statestore_cache_max_bytes, int)
            or isinstance(self.statestore_cache_max_bytes, bool)
            or self.statestore_cache_max_bytes < 0
        ):
            raise StreamsError(
                "statestore_cache_max_bytes must be a whole number of bytes, 0 or more, "
                f"got {self.statestore_cache_max_bytes!r}"
            )
        if self.metrics_listen:
            try:
                parse_listen(self.metrics_listen, key="metrics_listen")
            except ConfigError as error:
                raise StreamsError(str(error)) from None
        if self.application_server is not None:
            try:
                parse_listen(self.application_server, key="application_server")
            except ConfigError as error:
                raise StreamsError(str(error)) from None
        for name in ("max_warmup_replicas", "acceptable_recovery_lag"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise StreamsError(f"{name} must be a whole number, 0 or more, got {value!r}")
        if self.max_warmup_replicas < 1:
            raise StreamsError("max_warmup_replicas must be at least 1 (Kafka's rule)")
        interval = self.probing_rebalance_interval_ms
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1000:
            raise StreamsError(
                f"probing_rebalance_interval_ms must be 1000 or more, got {interval!r}"
            )
        if self.serve_queries and self.application_server is None:
            raise StreamsError("serve_queries needs application_server (host:port) to serve on")
        if self.client_config:  # under each kind's own settings, which win
            self.consumer_config = {**self.client_config, **self.consumer_config}
            self.producer_config = {**self.client_config, **self.producer_config}
            self.admin_config = {**self.client_config, **self.admin_config}
        if self.state_dir is None:
            self.state_dir = Path(".sluice") / "streams"
        self.state_dir = Path(self.state_dir)

    @classmethod
    def of(cls, properties: Mapping[str, Any]) -> StreamsConfig:
        """A config from Kafka's dotted names (or the fields' names); ``application.id`` is
        required."""
        settings = settings_of(properties)
        if "application_id" not in settings:
            raise StreamsError("application.id is required")
        return cls(**settings)

    @property
    def exactly_once(self) -> bool:
        """Whether output, state and offsets commit together in transactions."""
        return self.processing_guarantee == "exactly_once_v2"

    @property
    def isolation_level(self) -> str:
        """What the app's consumers read: only committed transactions under exactly-once."""
        return "read_committed" if self.exactly_once else "read_uncommitted"
