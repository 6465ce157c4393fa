"""The settings of ``jdbc-source`` (Confluent's names) and the connection they describe.

:data:`CONFIG` declares every key; :func:`problems` finds what single keys cannot (a mode
without its column, ``query`` beside ``table.whitelist``…); :func:`connection_url` builds the
SQLAlchemy URL with ``connection.user`` / ``connection.password`` applied, and :func:`masked`
removes the password from any text shown to a user.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from sluice.connect import ConfigDef, at_least, one_of
from sluice.errors import ConfigError

__all__ = ["CONFIG", "CONFLUENT", "MODES", "connection_url", "masked", "parse", "problems"]

CONFLUENT = "Confluent's JDBC source connector"

MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")


def _zone(name: str, value: Any) -> None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r}") from None


def _url(name: str, value: Any) -> None:
    try:
        sa.make_url(str(value))
    except sa.exc.ArgumentError:
        raise ValueError(
            "not a SQLAlchemy URL (dialect+driver://user:password@host:port/database, "
            "or sqlite:///path)"
        ) from None


CONFIG = (
    ConfigDef()
    .define(
        "connection.url",
        "string",
        doc="SQLAlchemy URL of the database (postgresql+psycopg2://host/db, sqlite:///path…).",
        validator=_url,
        importance="high",
    )
    .define("connection.user", "string", None, doc="User name; overrides the URL's.")
    .define("connection.password", "password", None, doc="Password; overrides the URL's.")
    .define(
        "connection.attempts",
        "int",
        3,
        doc="Attempts to reach the database before the task fails.",
        validator=at_least(1),
    )
    .define(
        "connection.backoff.ms",
        "long",
        10000,
        doc="Wait between attempts to reach the database.",
        validator=at_least(0),
    )
    .define(
        "mode",
        "string",
        doc="bulk, incrementing, timestamp or timestamp+incrementing.",
        validator=one_of(*MODES),
        importance="high",
    )
    .define(
        "incrementing.column.name",
        "string",
        "",
        doc="The strictly increasing column (default: the table's autoincrement column).",
    )
    .define(
        "timestamp.column.name",
        "list",
        [],
        doc="Timestamp column(s) of the last change; several are COALESCEd in order.",
    )
    .define(
        "timestamp.initial",
        "long",
        None,
        doc="Milliseconds since the epoch to start from without an offset (-1: now).",
    )
    .define(
        "timestamp.delay.interval.ms",
        "long",
        0,
        doc="Rows are read only once their timestamp is this much older than the database's "
        "clock, to let transactions with earlier timestamps commit.",
        validator=at_least(0),
    )
    .define(
        "validate.non.null",
        "boolean",
        True,
        doc="Fail when the incrementing or every timestamp column is nullable.",
    )
    .define("table.whitelist", "list", [], doc="Tables to copy (schema.table or table).")
    .define("table.blacklist", "list", [], doc="Tables not to copy (with no whitelist).")
    .define("table.types", "list", ["TABLE"], doc="TABLE and/or VIEW.")
    .define("query", "string", "", doc="A query to run instead of reading tables.")
    .define("topic.prefix", "string", doc="Topic = prefix + table name (or the prefix for query).")
    .define(
        "poll.interval.ms",
        "long",
        5000,
        doc="How often each table is queried for new rows.",
        validator=at_least(1),
    )
    .define("batch.max.rows", "int", 100, doc="Most rows per poll.", validator=at_least(1))
    .define(
        "table.poll.interval.ms",
        "long",
        60000,
        doc="How often the connector looks for new or dropped tables (0: never).",
        validator=at_least(0),
    )
    .define(
        "numeric.mapping",
        "string",
        "none",
        doc="none: NUMERIC → Decimal; precision_only: NUMERIC(p,0) → ints; best_fit: also "
        "NUMERIC(p,s>0) → float64.",
        validator=one_of("none", "precision_only", "best_fit"),
    )
    .define(
        "db.timezone",
        "string",
        "UTC",
        doc="Time zone of timestamps without one.",
        validator=_zone,
    )
    .define(
        "postgres.xmin.guard",
        "boolean",
        True,
        doc="PostgreSQL, incremental modes: hold back rows written by transactions newer "
        "than the oldest one still running, so that they cannot be overtaken.",
    )
    # Confluent's documented keys that Sluice does not implement: refused, never ignored.
    .refuse("dialect.name", origin=CONFLUENT, allowed=("",), hint="the URL names the dialect")
    .refuse(
        "numeric.precision.mapping",
        origin=CONFLUENT,
        allowed=("false",),
        hint="use numeric.mapping=precision_only",
    )
    .refuse("query.suffix", origin=CONFLUENT, allowed=("",))
    .refuse("transaction.isolation.mode", origin=CONFLUENT, allowed=("DEFAULT",))
    .refuse(
        "catalog.pattern",
        "schema.pattern",
        "quote.sql.identifiers",
        "query.retry.attempts",
        "timestamp.granularity",
        "table.monitoring.startup.polling.limit.ms",
        origin=CONFLUENT,
    )
    .refuse(
        "connection.*",
        origin=CONFLUENT,
        hint="JDBC driver properties do not apply: put the driver's options in the URL",
    )
)


def parse(config: Mapping[str, Any]) -> dict[str, Any]:
    """Typed values of ``config``; raises ConfigError on the first problem."""
    values = CONFIG.parse(config)
    found = problems(values)
    if found:
        key, message = found[0]
        raise ConfigError(message, key=key)
    return values


def problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with a combination of (parsed) settings, as ``(key, message)``."""
    found: list[tuple[str, str]] = []
    mode = values.get("mode")
    if mode in ("timestamp", "timestamp+incrementing") and not values["timestamp.column.name"]:
        found.append(("timestamp.column.name", f"required with mode {mode}"))
    query = values.get("query") or ""
    if query and values["table.whitelist"]:
        found.append(("query", "set either query or table.whitelist, not both"))
    if query and values["table.blacklist"]:
        found.append(("query", "set either query or table.blacklist, not both"))
    if values["table.whitelist"] and values["table.blacklist"]:
        found.append(("table.blacklist", "set either table.whitelist or table.blacklist"))
    incremental = mode in ("incrementing", "timestamp+incrementing")
    if query and incremental and not values["incrementing.column.name"]:
        found.append(("incrementing.column.name", f"required with query and mode {mode}"))
    kinds = {kind.upper() for kind in values["table.types"]}
    if not kinds or kinds - {"TABLE", "VIEW"}:
        found.append(("table.types", "must list TABLE and/or VIEW"))
    return found


def connection_url(values: Mapping[str, Any]) -> URL:
    """The SQLAlchemy URL, with ``connection.user`` and ``connection.password`` applied."""
    url = sa.make_url(values["connection.url"])
    if values.get("connection.user"):
        url = url.set(username=values["connection.user"])
    if values.get("connection.password"):
        url = url.set(password=values["connection.password"])
    return url


def masked(text: str, url: URL) -> str:
    """``text`` with the URL's password replaced by ``****``."""
    password = url.password
    if password:
        text = text.replace(str(password), "****")
    return text
