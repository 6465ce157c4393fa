"""Every documented key of each connector's anchor — Debezium's PostgreSQL connector,
Confluent's JDBC source and sink — is either implemented or refused naming the key: never
accepted and silently ignored.

The lists are the anchors' documented sets, as data: Debezium's ``postgresql.adoc``
(connector properties, required and advanced, and the pass-through ones: signals,
notifications, ``driver.*``), Confluent's "Configuration Reference for JDBC Source/Sink
Connector" (``connection.*`` driver properties as one example). Each key is fed alone, beside a
minimal valid config, to what ``PUT /connector-plugins/{type}/config/validate`` answers
(:func:`~sluice.connect.runtime.validation.config_infos`) and to what a task parses on start.
Implemented keys' behaviour is tested with each connector; here they must pass validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from sluice.connect.api.connector import Connector
from sluice.connect.runtime.validation import config_infos
from sluice.connectors.jdbc import _sink_config, _source_config
from sluice.connectors.jdbc.sink import JdbcSinkConnector
from sluice.connectors.jdbc.source import JdbcSourceConnector
from sluice.connectors.postgres.config import Settings
from sluice.connectors.postgres.source import PostgresCdcConnector
from sluice.errors import ConfigError

IMPLEMENTED, REFUSED = "implemented", "refused"

# key: (a value to feed, what Sluice does with the key)
DEBEZIUM_POSTGRES: dict[str, tuple[str, str]] = {
    # required connector configuration properties
    "name": ("cdc", IMPLEMENTED),
    "connector.class": ("io.debezium.connector.postgresql.PostgresConnector", IMPLEMENTED),
    "tasks.max": ("1", IMPLEMENTED),
    "plugin.name": ("decoderbufs", REFUSED),  # pgoutput only
    "slot.name": ("debezium", IMPLEMENTED),
    "slot.drop.on.stop": ("true", IMPLEMENTED),
    "publication.name": ("dbz_publication", IMPLEMENTED),
    "database.hostname": ("db", IMPLEMENTED),
    "database.port": ("5433", IMPLEMENTED),
    "database.user": ("cdc", IMPLEMENTED),
    "database.password": ("secret", IMPLEMENTED),
    "database.dbname": ("shop", IMPLEMENTED),
    "topic.prefix": ("shop", IMPLEMENTED),
    "schema.include.list": ("public", IMPLEMENTED),
    "schema.exclude.list": ("audit", IMPLEMENTED),
    "table.include.list": ("public.orders", IMPLEMENTED),
    "table.exclude.list": ("public.tmp_.*", IMPLEMENTED),
    "column.include.list": ("public.orders.id", IMPLEMENTED),
    "column.exclude.list": (r"public\.customers\.ssn", IMPLEMENTED),
    "skip.messages.without.change": ("true", REFUSED),
    "time.precision.mode": ("connect", IMPLEMENTED),
    "decimal.handling.mode": ("string", IMPLEMENTED),
    "hstore.handling.mode": ("map", REFUSED),
    "interval.handling.mode": ("string", REFUSED),
    "database.sslmode": ("require", IMPLEMENTED),
    "database.sslcert": ("/etc/cdc/client.crt", IMPLEMENTED),
    "database.sslkey": ("/etc/cdc/client.key", IMPLEMENTED),
    "database.sslpassword": ("secret", IMPLEMENTED),
    "database.sslrootcert": ("/etc/cdc/root.crt", IMPLEMENTED),
    "database.tcpKeepAlive": ("false", IMPLEMENTED),
    "tombstones.on.delete": ("false", IMPLEMENTED),
    "column.truncate.to.20.chars": ("public.orders.note", IMPLEMENTED),
    "column.mask.with.8.chars": ("public.customers.email", IMPLEMENTED),
    "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": ("public.customers.name", IMPLEMENTED),
    "column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": ("public.customers.phone", IMPLEMENTED),
    "column.propagate.source.type": (".*", REFUSED),
    "datatype.propagate.source.type": (".+\\.NUMERIC", REFUSED),
    "message.key.columns": ("public.orders:id", REFUSED),
    "publication.autocreate.mode": ("filtered", IMPLEMENTED),
    "replica.identity.autoset.values": ("public.orders:FULL", REFUSED),
    "binary.handling.mode": ("base64", REFUSED),
    "schema.name.adjustment.mode": ("avro", REFUSED),
    "field.name.adjustment.mode": ("avro", REFUSED),
    "money.fraction.digits": ("3", REFUSED),
    "message.prefix.include.list": ("audit", REFUSED),
    "message.prefix.exclude.list": (".*", REFUSED),
    # advanced connector configuration properties
    "converters": ("isbn", REFUSED),
    "snapshot.mode": ("no_data", IMPLEMENTED),
    "snapshot.mode.configuration.based.snapshot.data": ("true", REFUSED),
    "snapshot.mode.configuration.based.snapshot.schema": ("true", REFUSED),
    "snapshot.mode.configuration.based.start.stream": ("true", REFUSED),
    "snapshot.mode.configuration.based.snapshot.on.schema.error": ("true", REFUSED),
    "snapshot.mode.configuration.based.snapshot.on.data.error": ("true", REFUSED),
    "snapshot.mode.custom.name": ("mine", REFUSED),
    "snapshot.locking.mode": ("shared", REFUSED),
    "snapshot.locking.mode.custom.name": ("mine", REFUSED),
    "snapshot.query.mode": ("custom", REFUSED),
    "snapshot.query.mode.custom.name": ("mine", REFUSED),
    "snapshot.include.collection.list": ("public.orders", REFUSED),
    "snapshot.lock.timeout.ms": ("5000", REFUSED),
    "snapshot.select.statement.overrides": ("public.orders", REFUSED),
    "snapshot.select.statement.overrides.public.orders": ("SELECT * FROM orders", REFUSED),
    "event.processing.failure.handling.mode": ("warn", REFUSED),
    "max.batch.size": ("512", IMPLEMENTED),
    "max.queue.size": ("4096", REFUSED),
    "max.queue.size.in.bytes": ("1000000", REFUSED),
    "poll.interval.ms": ("250", IMPLEMENTED),
    "include.unknown.datatypes": ("true", REFUSED),
    "database.initial.statements": ("SET search_path=shop", REFUSED),
    "status.update.interval.ms": ("5000", IMPLEMENTED),
    "heartbeat.interval.ms": ("10000", IMPLEMENTED),
    "heartbeat.action.query": ("INSERT INTO heartbeat VALUES (now())", REFUSED),
    "schema.refresh.mode": ("columns_diff_exclude_unchanged_toast", REFUSED),
    "snapshot.delay.ms": ("1000", REFUSED),
    "streaming.delay.ms": ("1000", REFUSED),
    "snapshot.fetch.size": ("1000", IMPLEMENTED),
    "slot.stream.params": ("include-lsn=true", REFUSED),
    "slot.max.retries": ("3", REFUSED),
    "slot.retry.delay.ms": ("5000", REFUSED),
    "unavailable.value.placeholder": ("hex:00", REFUSED),
    "provide.transaction.metadata": ("true", REFUSED),
    "flush.lsn.source": ("false", REFUSED),
    "retriable.restart.connector.wait.ms": ("5000", REFUSED),
    "skipped.operations": ("t", IMPLEMENTED),
    "signal.data.collection": ("public.debezium_signal", REFUSED),
    "signal.enabled.channels": ("source,kafka", REFUSED),
    "notification.enabled.channels": ("log", REFUSED),
    "incremental.snapshot.chunk.size": ("2048", REFUSED),
    "incremental.snapshot.watermarking.strategy": ("insert_delete", REFUSED),
    "read.only": ("true", REFUSED),
    "xmin.fetch.interval.ms": ("1000", REFUSED),
    "topic.naming.strategy": ("io.debezium.schema.DefaultTopicNamingStrategy", REFUSED),
    "topic.delimiter": ("_", REFUSED),
    "topic.cache.size": ("100", REFUSED),
    "topic.heartbeat.prefix": ("beats", IMPLEMENTED),
    "topic.transaction": ("tx", REFUSED),
    "snapshot.max.threads": ("4", REFUSED),
    "custom.metric.tags": ("env=prod", REFUSED),
    "errors.max.retries": ("3", REFUSED),
    "database.query.timeout.ms": ("1000", REFUSED),
    # pass-through properties: signals over Kafka, notifications, the JDBC driver
    "signal.kafka.topic": ("signals", REFUSED),
    "signal.kafka.bootstrap.servers": ("kafka:9092", REFUSED),
    "signal.kafka.groupId": ("cdc-signals", REFUSED),
    "signal.kafka.poll.timeout.ms": ("100", REFUSED),
    "signal.consumer.security.protocol": ("SSL", REFUSED),
    "notification.sink.topic.name": ("notifications", REFUSED),
    "driver.connectTimeout": ("10", REFUSED),
    # Debezium 1.x's name of topic.prefix, common in migrated configs
    "database.server.name": ("shop", REFUSED),
}

CONFLUENT_JDBC_SOURCE: dict[str, tuple[str, str]] = {
    # Database
    "connection.url": ("sqlite:///other.db", IMPLEMENTED),
    "connection.user": ("reader", IMPLEMENTED),
    "connection.password": ("secret", IMPLEMENTED),
    "connection.attempts": ("5", IMPLEMENTED),
    "connection.backoff.ms": ("1000", IMPLEMENTED),
    "catalog.pattern": ("shop", REFUSED),
    "table.whitelist": ("orders", IMPLEMENTED),
    "table.blacklist": ("audit", IMPLEMENTED),
    "schema.pattern": ("public", REFUSED),
    "numeric.precision.mapping": ("true", REFUSED),
    "numeric.mapping": ("best_fit", IMPLEMENTED),
    "dialect.name": ("PostgreSqlDatabaseDialect", REFUSED),
    "connection.loginTimeout": ("10", REFUSED),  # a JDBC driver property (connection.*)
    # Mode
    "mode": ("bulk", IMPLEMENTED),
    "incrementing.column.name": ("id", IMPLEMENTED),
    "timestamp.column.name": ("updated_at", IMPLEMENTED),
    "timestamp.initial": ("-1", IMPLEMENTED),
    "validate.non.null": ("false", IMPLEMENTED),
    "query": ("SELECT * FROM orders", IMPLEMENTED),
    "quote.sql.identifiers": ("never", REFUSED),
    "query.suffix": ("FOR UPDATE", REFUSED),
    "transaction.isolation.mode": ("SERIALIZABLE", REFUSED),
    "query.retry.attempts": ("3", REFUSED),
    # Connector
    "table.types": ("TABLE,VIEW", IMPLEMENTED),
    "poll.interval.ms": ("1000", IMPLEMENTED),
    "batch.max.rows": ("500", IMPLEMENTED),
    "table.poll.interval.ms": ("30000", IMPLEMENTED),
    "topic.prefix": ("db-", IMPLEMENTED),
    "timestamp.delay.interval.ms": ("100", IMPLEMENTED),
    "db.timezone": ("Europe/Paris", IMPLEMENTED),
    "timestamp.granularity": ("nanos_long", REFUSED),
    "table.monitoring.startup.polling.limit.ms": ("5000", REFUSED),
}

CONFLUENT_JDBC_SINK: dict[str, tuple[str, str]] = {
    # framework keys the reference lists
    "name": ("db-sink", IMPLEMENTED),
    "connector.class": ("io.confluent.connect.jdbc.JdbcSinkConnector", IMPLEMENTED),
    "tasks.max": ("2", IMPLEMENTED),
    "topics": ("orders", IMPLEMENTED),
    # Connection
    "connection.attempts": ("5", IMPLEMENTED),
    "connection.backoff.ms": ("1000", IMPLEMENTED),
    "connection.url": ("sqlite:///other.db", IMPLEMENTED),
    "connection.user": ("writer", IMPLEMENTED),
    "connection.password": ("secret", IMPLEMENTED),
    "dialect.name": ("SqliteDatabaseDialect", REFUSED),
    "connection.loginTimeout": ("10", REFUSED),  # a JDBC driver property (connection.*)
    # Writes
    "insert.mode": ("insert", IMPLEMENTED),  # upsert/update need pk.mode too
    "batch.size": ("500", IMPLEMENTED),
    "delete.enabled": ("false", IMPLEMENTED),
    "table.types": ("VIEW", REFUSED),
    # Data mapping
    "table.name.format": ("kafka_${topic}", IMPLEMENTED),
    "pk.mode": ("kafka", IMPLEMENTED),
    "pk.fields": ("id", IMPLEMENTED),
    "fields.whitelist": ("id,name", IMPLEMENTED),
    "db.timezone": ("Europe/Paris", REFUSED),
    "date.timezone": ("Europe/Paris", REFUSED),
    "timestamp.precision.mode": ("nanoseconds", REFUSED),
    "timestamp.fields.list": ("updated_at", REFUSED),
    # DDL support
    "auto.create": ("true", IMPLEMENTED),
    "auto.evolve": ("true", IMPLEMENTED),
    "quote.sql.identifiers": ("never", REFUSED),
    "mssql.use.merge.holdlock": ("false", REFUSED),
    # Retries
    "max.retries": ("3", IMPLEMENTED),
    "retry.backoff.ms": ("100", IMPLEMENTED),
    "trim.sensitive.log": ("true", REFUSED),
}

# What Sluice does anyway: these values of otherwise refused keys pass.
ALLOWED = {
    PostgresCdcConnector: {
        "plugin.name": "pgoutput",
        "snapshot.locking.mode": "none",
        "provide.transaction.metadata": "false",
        "unavailable.value.placeholder": "__debezium_unavailable_value",
    },
    JdbcSourceConnector: {"dialect.name": "", "transaction.isolation.mode": "DEFAULT"},
    JdbcSinkConnector: {"db.timezone": "UTC", "table.types": "TABLE", "date.timezone": "UTC"},
}

BASE: dict[type[Connector], dict[str, str]] = {
    PostgresCdcConnector: {
        "name": "cdc",
        "connector.class": "postgres-cdc",
        "database.hostname": "127.0.0.1",
        "database.user": "cdc",
        "database.dbname": "shop",
        "topic.prefix": "shop",
    },
    JdbcSourceConnector: {
        "name": "db-source",
        "connector.class": "jdbc-source",
        "connection.url": "sqlite:///shop.db",
        "mode": "bulk",
        "topic.prefix": "db-",
    },
    JdbcSinkConnector: {
        "name": "db-sink",
        "connector.class": "jdbc-sink",
        "connection.url": "sqlite:///shop.db",
        "topics": "orders",
    },
}

PARSE: dict[type[Connector], Callable[[Mapping[str, Any]], object]] = {
    PostgresCdcConnector: Settings.parse,  # type: ignore[dict-item]
    JdbcSourceConnector: _source_config.parse,
    JdbcSinkConnector: _sink_config.SinkSettings.parse,  # type: ignore[dict-item]
}

ANCHORS = [
    (PostgresCdcConnector, DEBEZIUM_POSTGRES, "Debezium's PostgreSQL connector"),
    (JdbcSourceConnector, CONFLUENT_JDBC_SOURCE, "Confluent's JDBC source connector"),
    (JdbcSinkConnector, CONFLUENT_JDBC_SINK, "Confluent's JDBC sink connector"),
]
CASES = [
    pytest.param(cls, key, value, verdict, origin, id=f"{cls.__name__}-{key}")
    for cls, anchor, origin in ANCHORS
    for key, (value, verdict) in anchor.items()
]


def _errors(cls: type[Connector], config: dict[str, str]) -> dict[str, list[str]]:
    infos = config_infos(cls, config)
    return {
        c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]
    }


@pytest.mark.parametrize(("cls", "key", "value", "verdict", "origin"), CASES)
def test_every_documented_key_is_implemented_or_refused_by_name(
    cls: type[Connector], key: str, value: str, verdict: str, origin: str
) -> None:
    config = {**BASE[cls], key: value}
    errors = _errors(cls, config)
    if verdict == IMPLEMENTED:
        assert errors == {}, f"{key}={value!r} is implemented, yet validation says {errors}"
        PARSE[cls](config)
        return
    assert list(errors) == [key], f"{key}={value!r} should be refused by name; got {errors}"
    (message,) = errors[key]
    assert f"a key of {origin} that Sluice does not implement" in message, message
    with pytest.raises(ConfigError) as refused:
        PARSE[cls](config)  # what a task does on start: refused there too
    assert refused.value.key == key


@pytest.mark.parametrize("cls", list(ALLOWED), ids=lambda cls: cls.__name__)
def test_values_that_are_what_sluice_does_pass(cls: type[Connector]) -> None:
    config = {**BASE[cls], **ALLOWED[cls]}
    assert _errors(cls, config) == {}
    PARSE[cls](config)
    for key, value in ALLOWED[cls].items():
        message = _errors(cls, {**BASE[cls], key: value + "-other"}).get(key, [""])[0]
        assert f"only {value!r} is accepted" in message or "only '" in message, message


def test_the_base_configs_are_valid() -> None:
    for cls, config in BASE.items():
        assert _errors(cls, config) == {}, cls
        PARSE[cls](config)
