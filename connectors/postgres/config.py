"""The settings of ``postgres-cdc`` (Debezium's PostgreSQL connector names) and the connections.

>>> settings = Settings.parse({"database.hostname": "db", "database.user": "cdc",
...     "database.dbname": "shop", "topic.prefix": "shop", "table.include.list": "public.items"})
>>> settings.slot, settings.publication, settings.snapshot_mode
('sluice', 'sluice_publication', 'initial')
>>> settings.captures("public", "items")
True
>>> settings.captures("public", "items_old")
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extensions
import psycopg2.extras

from sluice.connect import ConfigDef, ConnectError, at_least, one_of
from sluice.connectors.postgres.columns import ColumnRules
from sluice.connectors.postgres.types import SESSION_OPTIONS
from sluice.errors import ConfigError

__all__ = ["CONFIG", "DEBEZIUM", "Settings", "connect"]

DEBEZIUM = "Debezium's PostgreSQL connector"

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def _identifier(name: str, value: Any) -> None:
    if not _IDENTIFIER.fullmatch(str(value)):
        raise ValueError(f"must be a lower-case identifier (letters, digits, _), got {value!r}")


def _regexes(name: str, value: Any) -> None:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"invalid regular expression {pattern!r}: {error}") from None


def _operations(name: str, value: Any) -> None:
    for item in value:
        one_of("c", "u", "d", "t", "none")(name, item)


CONFIG = (
    ConfigDef()
    .define("database.hostname", "string", doc="PostgreSQL host.", importance="high")
    .define("database.port", "int", 5432, doc="PostgreSQL port.")
    .define("database.user", "string", doc="User (needs REPLICATION).", importance="high")
    .define("database.password", "password", "", doc="The user's password.", importance="high")
    .define("database.dbname", "string", doc="The database to capture.", importance="high")
    .define(
        "topic.prefix",
        "string",
        doc="Names the server: topics are <prefix>.<schema>.<table>.",
        importance="high",
    )
    .define(
        "database.sslmode",
        "string",
        "prefer",
        doc="libpq's sslmode: disable, allow, prefer, require, verify-ca, verify-full.",
        validator=one_of("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    )
    .define("database.sslcert", "string", "", doc="File of the client's TLS certificate.")
    .define("database.sslkey", "string", "", doc="File of the client's TLS private key.")
    .define("database.sslpassword", "password", "", doc="Password of database.sslkey.")
    .define(
        "database.sslrootcert",
        "string",
        "",
        doc="File of the CA certificate(s) the server's certificate is checked against.",
    )
    .define(
        "database.tcpKeepAlive",
        "boolean",
        True,
        doc="TCP keep-alive probes on the connections (libpq's keepalives).",
    )
    .define(
        "schema.include.list",
        "list",
        [],
        doc="Regexes matched against whole schema names; empty: every schema.",
        validator=_regexes,
    )
    .define(
        "schema.exclude.list",
        "list",
        [],
        doc="Regexes of schema names not to capture.",
        validator=_regexes,
    )
    .define(
        "table.include.list",
        "list",
        [],
        doc="Regexes matched against whole schema.table names; empty: every table.",
        validator=_regexes,
    )
    .define(
        "table.exclude.list",
        "list",
        [],
        doc="Regexes of schema.table names not to capture.",
        validator=_regexes,
    )
    .define(
        "column.include.list",
        "list",
        [],
        doc="Regexes matched against whole schema.table.column names: the columns kept in the "
        "events' values (the key keeps the primary key). Not with column.exclude.list.",
        validator=_regexes,
    )
    .define(
        "column.exclude.list",
        "list",
        [],
        doc="Regexes of schema.table.column names left out of the events' values.",
        validator=_regexes,
    )
    .define("slot.name", "string", "sluice", doc="Logical replication slot.", validator=_identifier)
    .define(
        "publication.name",
        "string",
        "sluice_publication",
        doc="The publication pgoutput streams.",
        validator=_identifier,
    )
    .define(
        "publication.autocreate.mode",
        "string",
        "all_tables",
        doc="all_tables: create FOR ALL TABLES; filtered: FOR TABLE the captured tables (and "
        "keep it in line); disabled: the publication must exist.",
        validator=one_of("all_tables", "filtered", "disabled"),
    )
    .define(
        "snapshot.mode",
        "string",
        "initial",
        doc="initial: snapshot, then stream; initial_only: snapshot only; never / no_data: "
        "stream only.",
        validator=one_of("initial", "initial_only", "never", "no_data"),
    )
    .define(
        "snapshot.fetch.size",
        "int",
        10240,
        doc="Rows fetched per round trip in a snapshot.",
        validator=at_least(1),
    )
    .define("max.batch.size", "int", 2048, doc="Most records per poll.", validator=at_least(1))
    .define(
        "poll.interval.ms",
        "long",
        500,
        doc="Longest wait for changes in one poll.",
        validator=at_least(1),
    )
    .define(
        "heartbeat.interval.ms",
        "long",
        0,
        doc="Emit a heartbeat (and confirm the position) this often; 0: never.",
        validator=at_least(0),
    )
    .define(
        "topic.heartbeat.prefix",
        "string",
        "__debezium-heartbeat",
        doc="Heartbeats go to <this>.<topic.prefix>.",
    )
    .define(
        "tombstones.on.delete",
        "boolean",
        True,
        doc="Follow each delete with a tombstone (null value) for compaction.",
    )
    .define(
        "decimal.handling.mode",
        "string",
        "precise",
        doc="numeric as precise (Decimal), double or string.",
        validator=one_of("precise", "double", "string"),
    )
    .define(
        "time.precision.mode",
        "string",
        "adaptive",
        doc="date, time and timestamp columns as Debezium's io.debezium.time types (adaptive: "
        "ms or µs as the column's precision) or Kafka Connect's Date, Time and Timestamp "
        "logical types (connect: ms; what sinks and schema converters map to SQL and Avro "
        "date and time types).",
        validator=one_of("adaptive", "connect"),
    )
    .define(
        "skipped.operations",
        "list",
        ["none"],
        doc="Operations not to emit: c, u, d, t, or none.",
        validator=_operations,
    )
    .define(
        "slot.drop.on.stop",
        "boolean",
        False,
        doc="Drop the slot when the task stops (tests, one-off captures).",
    )
    .define(
        "status.update.interval.ms",
        "long",
        10000,
        doc="How often the position is reported to the server while streaming.",
        validator=at_least(1),
    )
    # Debezium's documented keys that Sluice does not implement: refused, never ignored.
    # Where a value is what Sluice does anyway, that value is allowed.
    .refuse("plugin.name", origin=DEBEZIUM, allowed=("pgoutput",))
    .refuse("interval.handling.mode", origin=DEBEZIUM, allowed=("numeric",))
    .refuse("binary.handling.mode", origin=DEBEZIUM, allowed=("bytes",))
    .refuse("schema.name.adjustment.mode", origin=DEBEZIUM, allowed=("none",))
    .refuse("field.name.adjustment.mode", origin=DEBEZIUM, allowed=("none",))
    .refuse("snapshot.locking.mode", origin=DEBEZIUM, allowed=("none",))
    .refuse("snapshot.query.mode", origin=DEBEZIUM, allowed=("select_all",))
    .refuse("snapshot.max.threads", origin=DEBEZIUM, allowed=("1",))
    .refuse("event.processing.failure.handling.mode", origin=DEBEZIUM, allowed=("fail",))
    .refuse("schema.refresh.mode", origin=DEBEZIUM, allowed=("columns_diff",))
    .refuse("streaming.delay.ms", origin=DEBEZIUM, allowed=("0",))
    .refuse("provide.transaction.metadata", origin=DEBEZIUM, allowed=("false",))
    .refuse("flush.lsn.source", origin=DEBEZIUM, allowed=("true",))
    .refuse("xmin.fetch.interval.ms", origin=DEBEZIUM, allowed=("0",))
    .refuse("topic.delimiter", origin=DEBEZIUM, allowed=(".",))
    .refuse("read.only", origin=DEBEZIUM, allowed=("false",))
    .refuse(
        "unavailable.value.placeholder", origin=DEBEZIUM, allowed=("__debezium_unavailable_value",)
    )
    .refuse(
        "database.server.name",
        origin=DEBEZIUM,
        hint="it is Debezium 1.x's name of topic.prefix: use topic.prefix",
    )
    .refuse(
        "skip.messages.without.change",
        "hstore.handling.mode",
        "column.propagate.source.type",
        "datatype.propagate.source.type",
        "message.key.columns",
        "replica.identity.autoset.values",
        "money.fraction.digits",
        "message.prefix.include.list",
        "message.prefix.exclude.list",
        "converters",
        "snapshot.mode.configuration.based.*",
        "snapshot.mode.custom.name",
        "snapshot.locking.mode.custom.name",
        "snapshot.query.mode.custom.name",
        "snapshot.include.collection.list",
        "snapshot.lock.timeout.ms",
        "snapshot.select.statement.overrides*",
        "max.queue.size",
        "max.queue.size.in.bytes",
        "include.unknown.datatypes",
        "database.initial.statements",
        "heartbeat.action.query",
        "snapshot.delay.ms",
        "slot.stream.params",
        "slot.max.retries",
        "slot.retry.delay.ms",
        "retriable.restart.connector.wait.ms",
        "signal.data.collection",
        "signal.enabled.channels",
        "signal.kafka.*",
        "signal.consumer.*",
        "notification.enabled.channels",
        "notification.sink.topic.name",
        "incremental.snapshot.chunk.size",
        "incremental.snapshot.watermarking.strategy",
        "topic.naming.strategy",
        "topic.cache.size",
        "topic.transaction",
        "custom.metric.tags",
        "errors.max.retries",
        "database.query.timeout.ms",
        "driver.*",
        origin=DEBEZIUM,
    )
)


@dataclass(frozen=True)
class Settings:
    """The parsed settings (see :data:`CONFIG` for each key)."""

    host: str
    port: int
    user: str
    password: str
    database: str
    prefix: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    schema_include: tuple[re.Pattern[str], ...]
    schema_exclude: tuple[re.Pattern[str], ...]
    columns: ColumnRules
    tls: tuple[tuple[str, str], ...]  # libpq's ssl* parameters that are set
    keepalives: bool
    slot: str
    publication: str
    autocreate: str
    snapshot_mode: str
    fetch_size: int
    batch_size: int
    poll_interval_s: float
    heartbeat_interval_s: float
    heartbeat_topic: str
    tombstones: bool
    decimal_mode: str
    time_mode: str
    skipped: frozenset[str]
    drop_slot_on_stop: bool
    status_interval_s: float

    @classmethod
    def parse(cls, config: dict[str, Any]) -> Settings:
        """The settings of a connector config; :class:`ConfigError` names a bad key."""
        values = CONFIG.parse(config)
        tasks = config.get("tasks.max", 1)
        if str(tasks).strip() not in ("1", ""):
            raise ConfigError("the PostgreSQL connector runs exactly one task", key="tasks.max")
        prefix = values["topic.prefix"]
        if not re.fullmatch(r"[A-Za-z0-9._-]+", prefix):
            raise ConfigError(f"{prefix!r} is not usable in topic names", key="topic.prefix")
        if values["schema.include.list"] and values["schema.exclude.list"]:
            raise ConfigError(
                "schema.include.list and schema.exclude.list cannot both be set",
                key="schema.exclude.list",
            )
        tls = tuple(
            (name, str(values[f"database.{name}"]))
            for name in ("sslmode", "sslcert", "sslkey", "sslpassword", "sslrootcert")
            if values[f"database.{name}"]
        )
        return cls(
            host=values["database.hostname"],
            port=values["database.port"],
            user=values["database.user"],
            password=values["database.password"] or "",
            database=values["database.dbname"],
            prefix=prefix,
            include=tuple(re.compile(p) for p in values["table.include.list"]),
            exclude=tuple(re.compile(p) for p in values["table.exclude.list"]),
            schema_include=tuple(re.compile(p) for p in values["schema.include.list"]),
            schema_exclude=tuple(re.compile(p) for p in values["schema.exclude.list"]),
            columns=ColumnRules.parse(config),
            tls=tls,
            keepalives=values["database.tcpKeepAlive"],
            slot=values["slot.name"],
            publication=values["publication.name"],
            autocreate=values["publication.autocreate.mode"],
            snapshot_mode=values["snapshot.mode"],
            fetch_size=values["snapshot.fetch.size"],
            batch_size=values["max.batch.size"],
            poll_interval_s=values["poll.interval.ms"] / 1000,
            heartbeat_interval_s=values["heartbeat.interval.ms"] / 1000,
            heartbeat_topic=f"{values['topic.heartbeat.prefix']}.{prefix}",
            tombstones=values["tombstones.on.delete"],
            decimal_mode=values["decimal.handling.mode"],
            time_mode=values["time.precision.mode"],
            skipped=frozenset(values["skipped.operations"]) - {"none"},
            drop_slot_on_stop=values["slot.drop.on.stop"],
            status_interval_s=values["status.update.interval.ms"] / 1000,
        )

    def captures(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` is captured (schema and table include/exclude lists)."""
        if self.schema_include and not any(p.fullmatch(schema) for p in self.schema_include):
            return False
        if any(p.fullmatch(schema) for p in self.schema_exclude):
            return False
        name = f"{schema}.{table}"
        if self.include and not any(p.fullmatch(name) for p in self.include):
            return False
        return not any(p.fullmatch(name) for p in self.exclude)

    @property
    def where(self) -> str:
        """``user@host:port/database``, for messages."""
        return f"{self.user}@{self.host}:{self.port}/{self.database}"


def connect(settings: Settings, *, replication: bool = False) -> psycopg2.extensions.connection:
    """A connection (a logical replication one with ``replication``); a clear error if not."""
    factory = psycopg2.extras.LogicalReplicationConnection if replication else None
    extra: dict[str, Any] = {"keepalives": 1 if settings.keepalives else 0, **dict(settings.tls)}
    try:
        connection = psycopg2.connect(
            host=settings.host,
            port=settings.port,
            user=settings.user,
            password=settings.password,
            dbname=settings.database,
            options=SESSION_OPTIONS,
            application_name=f"sluice-cdc-{settings.prefix}",
            connect_timeout=10,
            connection_factory=factory,
            **extra,
        )
    except psycopg2.OperationalError as error:
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else repr(error)
        kind = "a replication connection" if replication else "connect"
        raise ConnectError(
            f"cannot {'open ' if replication else ''}{kind} to PostgreSQL as {settings.where}: "
            f"{reason}"
        ) from None
    if not replication:
        connection.autocommit = True
    return connection
