"""``jdbc-sink``'s settings: Confluent's JDBC sink keys, parsed into :class:`SinkSettings`.

The keys are documented in :mod:`sluice.connectors.jdbc.sink`. Beside each key's own checks,
:func:`cross_problems` finds the combinations Confluent refuses (``delete.enabled`` without
``pk.mode=record_key``, ``upsert``/``update`` without a primary key, ``pk.fields`` of the wrong
length for ``pk.mode=kafka``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from sluice.connect import ConfigDef, at_least, one_of
from sluice.errors import ConfigError

__all__ = [
    "CONFIG",
    "CONFLUENT",
    "KAFKA_PK_FIELDS",
    "SinkSettings",
    "cross_problems",
    "database_url",
]

CONFLUENT = "Confluent's JDBC sink connector"

KAFKA_PK_FIELDS = ["__connect_topic", "__connect_partition", "__connect_offset"]


def _url(name: str, value: Any) -> None:
    try:
        database_url(str(value))
    except ArgumentError as error:
        raise ValueError(f"not a SQLAlchemy URL: {error}") from None


def _table_format(name: str, value: Any) -> None:
    if not str(value).strip():
        raise ValueError("must not be empty")


CONFIG = (
    ConfigDef()
    .define(
        "connection.url",
        "string",
        doc="SQLAlchemy URL of the database (postgresql+psycopg2://host/db, sqlite:///path, "
        "mysql+pymysql://host/db); Confluent's jdbc:postgresql:, jdbc:mysql:, jdbc:sqlite: "
        "URLs are accepted.",
        validator=_url,
        importance="high",
    )
    .define(
        "connection.user",
        "string",
        None,
        doc="Database user (overrides the URL's).",
        importance="high",
    )
    .define(
        "connection.password",
        "password",
        None,
        doc="Database password (overrides the URL's).",
        importance="high",
    )
    .define(
        "table.name.format",
        "string",
        "${topic}",
        doc="Table of each record: ${topic} is replaced by the record's topic; dots outside "
        "${topic} separate a schema name (archive.${topic}).",
        validator=_table_format,
    )
    .define(
        "insert.mode",
        "string",
        "insert",
        doc="insert: INSERT; upsert: insert or update by primary key; update: UPDATE only.",
        validator=one_of("insert", "upsert", "update"),
        importance="high",
    )
    .define(
        "pk.mode",
        "string",
        "none",
        doc="Where the primary key comes from: none, kafka (topic, partition, offset), "
        "record_key, record_value.",
        validator=one_of("none", "kafka", "record_key", "record_value"),
        importance="high",
    )
    .define(
        "pk.fields",
        "list",
        [],
        doc="Primary key columns: for kafka, three names (default __connect_topic,"
        "__connect_partition,__connect_offset); for record_key, the key's fields (empty: all) "
        "or the column of a primitive key; for record_value, the value's fields (empty: all).",
    )
    .define(
        "fields.whitelist",
        "list",
        [],
        doc="Value fields written as columns (empty: all).",
    )
    .define(
        "delete.enabled",
        "boolean",
        False,
        doc="Tombstones (null values) delete the row of their key (needs pk.mode=record_key); "
        "otherwise they are skipped.",
    )
    .define(
        "truncate.enabled",
        "boolean",
        False,
        doc="A Debezium truncate event (op 't', kept by unwrap's truncate.handling.mode=keep) "
        "empties the record's table; otherwise it is skipped.",
    )
    .define("auto.create", "boolean", False, doc="CREATE TABLE for a missing table.")
    .define(
        "auto.evolve",
        "boolean",
        False,
        doc="ALTER TABLE ADD (nullable) columns for fields the table lacks.",
    )
    .define(
        "batch.size",
        "int",
        3000,
        doc="Most rows per executemany call.",
        validator=at_least(1),
    )
    .define(
        "max.retries",
        "int",
        10,
        doc="Retries of a write that failed with a connection error, before the task fails.",
        validator=at_least(0),
    )
    .define(
        "retry.backoff.ms",
        "int",
        3000,
        doc="Wait between those retries (ms).",
        validator=at_least(0),
    )
    .define(
        "connection.attempts",
        "int",
        3,
        doc="Attempts to connect when the connector starts, before it fails.",
        validator=at_least(1),
    )
    .define(
        "connection.backoff.ms",
        "long",
        10000,
        doc="Wait between those attempts (ms).",
        validator=at_least(0),
    )
    # Confluent's documented keys that Sluice does not implement: refused, never ignored.
    .refuse("dialect.name", origin=CONFLUENT, allowed=("",), hint="the URL names the dialect")
    .refuse("db.timezone", origin=CONFLUENT, allowed=("UTC",), hint="timestamps are UTC")
    .refuse("date.timezone", origin=CONFLUENT, allowed=("DB_TIMEZONE", "UTC"))
    .refuse("table.types", origin=CONFLUENT, allowed=("TABLE",))
    .refuse("trim.sensitive.log", origin=CONFLUENT, allowed=("false",))
    .refuse(
        "quote.sql.identifiers",
        "mssql.use.merge.holdlock",
        "timestamp.precision.mode",
        "timestamp.fields.list",
        origin=CONFLUENT,
    )
    .refuse(
        "connection.*",
        origin=CONFLUENT,
        hint="JDBC driver properties do not apply: put the driver's options in the URL",
    )
)
"""The settings of ``jdbc-sink``."""

_JDBC = re.compile(r"jdbc:(postgresql|mysql|mariadb|sqlite):(.*)", re.DOTALL)
_JDBC_DRIVERS = {
    "postgresql": "postgresql+psycopg2",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
}


def database_url(text: str, user: str | None = None, password: str | None = None) -> URL:
    """The SQLAlchemy URL of ``connection.url`` (JDBC URLs translated), with user/password set.

    >>> database_url("jdbc:postgresql://db:5432/shop", "app", "pw").render_as_string()
    'postgresql+psycopg2://app:***@db:5432/shop'
    >>> database_url("jdbc:sqlite:/tmp/a.db").render_as_string()
    'sqlite:////tmp/a.db'
    """
    text = text.strip()
    match = _JDBC.fullmatch(text)
    if match is not None:
        kind, rest = match.groups()
        if kind == "sqlite":
            text = f"sqlite:///{rest}"
        else:
            text = f"{_JDBC_DRIVERS[kind]}:{rest.split('?')[0]}"
    url = make_url(text)
    if user:
        url = url.set(username=user)
    if password:
        url = url.set(password=password)
    return url


@dataclass(frozen=True)
class SinkSettings:
    """The parsed settings a task works with."""

    url: URL
    table_format: str
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    whitelist: frozenset[str]
    delete_enabled: bool
    truncate_enabled: bool
    auto_create: bool
    auto_evolve: bool
    batch_size: int
    max_retries: int
    retry_backoff_s: float
    connection_attempts: int
    connection_backoff_s: float
    tolerate_all: bool
    log_errors: bool

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> SinkSettings:
        """Typed settings of ``config``; a :class:`ConfigError` names the first bad key."""
        values = CONFIG.parse(config)
        problems = cross_problems(values)
        if problems:
            key, message = problems[0]
            raise ConfigError(message, key=key)
        pk_fields = list(values["pk.fields"])
        if values["pk.mode"] == "kafka" and not pk_fields:
            pk_fields = list(KAFKA_PK_FIELDS)
        return cls(
            url=database_url(
                values["connection.url"], values["connection.user"], values["connection.password"]
            ),
            table_format=values["table.name.format"],
            insert_mode=values["insert.mode"],
            pk_mode=values["pk.mode"],
            pk_fields=tuple(pk_fields),
            whitelist=frozenset(values["fields.whitelist"]),
            delete_enabled=values["delete.enabled"],
            truncate_enabled=values["truncate.enabled"],
            auto_create=values["auto.create"],
            auto_evolve=values["auto.evolve"],
            batch_size=values["batch.size"],
            max_retries=values["max.retries"],
            retry_backoff_s=values["retry.backoff.ms"] / 1000,
            connection_attempts=values["connection.attempts"],
            connection_backoff_s=values["connection.backoff.ms"] / 1000,
            tolerate_all=str(config.get("errors.tolerance", "none")).strip().lower() == "all",
            log_errors=str(config.get("errors.log.enable", "false")).strip().lower() == "true",
        )


def cross_problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) of each invalid combination of otherwise valid ``values``."""
    problems = []
    pk_mode = values.get("pk.mode")
    if values.get("delete.enabled") and pk_mode != "record_key":
        problems.append(
            ("delete.enabled", f"delete.enabled=true requires pk.mode=record_key, not {pk_mode}")
        )
    mode = values.get("insert.mode")
    if mode in ("upsert", "update") and pk_mode == "none":
        problems.append(
            ("pk.mode", f"insert.mode={mode} needs a primary key: set pk.mode (not none)")
        )
    fields = values.get("pk.fields") or []
    if pk_mode == "kafka" and fields and len(fields) != 3:
        problems.append(
            (
                "pk.fields",
                "pk.mode=kafka needs three pk.fields (topic, partition and offset columns), "
                f"not {len(fields)}",
            )
        )
    return problems
