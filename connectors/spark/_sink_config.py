"""``spark-sink``'s settings, parsed into :class:`SinkSettings` (documented in the sink module).

>>> settings = SinkSettings.parse({"warehouse.path": "/data/lake", "topics": "orders",
...                                "spark.conf.spark.driver.memory": "2g"})
>>> settings.table_name("orders"), settings.spark_conf, settings.evolution
('orders', {'spark.driver.memory': '2g'}, 'add_columns')
>>> strftime_format("yyyy-MM-dd/HH")
'%Y-%m-%d/%H'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.connect import ConfigDef, at_least, one_of
from sluice.errors import ConfigError
from sluice.schemas.serdes import registry_url

__all__ = ["CONFIG", "SPARK_CONF_PREFIX", "SinkSettings", "catalog_name", "strftime_format"]

SPARK_CONF_PREFIX = "spark.conf."

_TOPIC = "${topic}"
_JAVA_TOKENS = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H")]
_JAVA_TOKENS += [("mm", "%M"), ("ss", "%S")]
_ISO_DATE = "%Y-%m-%d"


def strftime_format(pattern: str) -> str:
    """A Java date pattern (``yyyy-MM-dd``: letters y, M, d, H, m, s) as a strftime format;
    a pattern holding ``%`` is a strftime format already."""
    if "%" in pattern:
        return pattern
    out = pattern
    for token, directive in _JAVA_TOKENS:
        out = out.replace(token, directive)
    leftover = re.sub(r"%[YymdHMS]", "", out)
    if re.search(r"[A-Za-z]", leftover):
        raise ValueError(
            f"unsupported letters in date pattern {pattern!r} (use yyyy, yy, MM, dd, HH, mm, ss, "
            "or a strftime format such as %Y-%m-%d)"
        )
    return out


def catalog_name(table: str) -> str:
    """The name a table is registered under in Spark's catalog (letters, digits and ``_``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", table)


def _date_pattern(name: str, value: Any) -> None:
    strftime_format(str(value))


def _version(name: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text != "latest" and not (text.isdigit() and int(text) > 0):
        raise ValueError(f"must be latest or a version number, got {value!r}")


def _table_format(name: str, value: Any) -> None:
    text = str(value)
    if not text.strip():
        raise ValueError("must not be empty")
    if "/" in text or text.startswith("_") or text.startswith("."):
        raise ValueError("must be a plain name (no '/', not starting with '_' or '.')")


CONFIG = (
    ConfigDef()
    .define(
        "warehouse.path",
        "string",
        doc="Directory of the tables: table T lands in <warehouse.path>/T.",
        importance="high",
    )
    .define(
        "table.name.format",
        "string",
        _TOPIC,
        doc="Table of each record; ${topic} is replaced by the record's topic.",
        validator=_table_format,
    )
    .define(
        "spark.master",
        "string",
        "local[2]",
        doc="Master of the worker's SparkSession (shared by the tasks of one worker process).",
    )
    .define(
        "schema",
        "string",
        "",
        doc="The tables' columns as a Spark DDL string ('id bigint not null, name string, "
        "ts timestamp'); empty: inferred from the records.",
        importance="high",
    )
    .define(
        "value.subject",
        "string",
        "",
        doc="A schema registry subject whose schema (Avro record, Protobuf message or JSON "
        "Schema object) gives the tables' columns, typed as the sluice Spark source types them; "
        "read when the task starts. Excludes 'schema'.",
        importance="high",
    )
    .define(
        "value.subject.version",
        "string",
        "latest",
        doc="Version of value.subject to take: latest (read at each task start) or a number.",
        validator=_version,
    )
    .define(
        "schema.registry.url",
        "string",
        None,
        doc="The schema registry of value.subject. Default: value.converter.schema.registry.url, "
        "else $SLUICE_SCHEMA_REGISTRY_URL, else http://127.0.0.1:8081.",
    )
    .define(
        "schema.evolution",
        "string",
        None,
        doc="add_columns: a new field adds a nullable column; none: fields not in the table are "
        "dropped. Default: add_columns without a declared schema, none with one (schema or "
        "value.subject).",
        validator=one_of("add_columns", "none"),
    )
    .define(
        "partition.columns",
        "list",
        [],
        doc="Columns the tables are partitioned by (directories col=value/).",
    )
    .define(
        "partition.date.field",
        "string",
        None,
        doc="A timestamp field from which the date partition column is derived.",
    )
    .define(
        "partition.date.column",
        "string",
        "date",
        doc="Name of the derived date partition column.",
    )
    .define(
        "partition.date.format",
        "string",
        "yyyy-MM-dd",
        doc="Format of the derived column (Java letters y M d H m s, or strftime); yyyy-MM-dd "
        "gives a date column, any other format a string column.",
        validator=_date_pattern,
    )
    .define(
        "register.table",
        "boolean",
        True,
        doc="Register each table in the session's catalog (CREATE TABLE ... USING parquet "
        "LOCATION), evolve it (ALTER TABLE ADD COLUMNS) and refresh it after each commit.",
    )
    .define(
        "flush.size",
        "int",
        10_000,
        doc="Rows buffered per topic-partition before they are committed (they are also "
        "committed at every offset flush).",
        validator=at_least(1),
    )
)


@dataclass(frozen=True)
class SinkSettings:
    """What a task works with."""

    warehouse: Path
    table_format: str
    master: str
    spark_conf: dict[str, str]
    schema_ddl: str | None
    subject: str | None
    subject_version: int | None  # None: the latest
    registry_url: str
    evolution: str
    partition_columns: tuple[str, ...]
    date_field: str | None
    date_column: str
    date_format: str
    register: bool
    flush_size: int
    tolerate_all: bool
    log_errors: bool

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> SinkSettings:
        """Typed settings of ``config``; a :class:`ConfigError` names the first bad key."""
        values = CONFIG.parse(config)
        for key, message in cross_problems(values):
            raise ConfigError(message, key=key)
        ddl = str(values["schema"]).strip() or None
        subject = str(values["value.subject"]).strip() or None
        declared = ddl is not None or subject is not None
        evolution = values["schema.evolution"] or ("none" if declared else "add_columns")
        version = str(values["value.subject.version"]).strip().lower()
        url = values["schema.registry.url"] or config.get("value.converter.schema.registry.url")
        partitions = list(values["partition.columns"])
        date_field = values["partition.date.field"] or None
        if date_field and values["partition.date.column"] not in partitions:
            partitions.append(values["partition.date.column"])
        return cls(
            warehouse=Path(values["warehouse.path"]).expanduser(),
            table_format=values["table.name.format"],
            master=values["spark.master"],
            spark_conf={
                key[len(SPARK_CONF_PREFIX) :]: str(value)
                for key, value in config.items()
                if key.startswith(SPARK_CONF_PREFIX)
            },
            schema_ddl=ddl,
            subject=subject,
            subject_version=None if version == "latest" else int(version),
            registry_url=registry_url(str(url) if url else None),
            evolution=evolution,
            partition_columns=tuple(partitions),
            date_field=date_field,
            date_column=values["partition.date.column"],
            date_format=strftime_format(values["partition.date.format"]),
            register=values["register.table"],
            flush_size=values["flush.size"],
            tolerate_all=str(config.get("errors.tolerance", "none")).strip().lower() == "all",
            log_errors=str(config.get("errors.log.enable", "false")).strip().lower() == "true",
        )

    def table_name(self, topic: str) -> str:
        """The table of ``topic``."""
        return self.table_format.replace(_TOPIC, topic)

    @property
    def date_is_iso(self) -> bool:
        """Whether the derived date column is a ``date`` (else a string)."""
        return self.date_format == _ISO_DATE


def cross_problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Combinations of settings that do not work together, as (key, message)."""
    problems = []
    if str(values.get("schema") or "").strip() and str(values.get("value.subject") or "").strip():
        problems.append(
            ("value.subject", "takes the columns from the registry: leave 'schema' empty")
        )
    columns = list(values.get("partition.columns") or [])
    if len(set(columns)) != len(columns):
        problems.append(("partition.columns", f"names a column twice: {columns}"))
    if values.get("partition.date.field") and values.get("partition.date.column") == values.get(
        "partition.date.field"
    ):
        problems.append(
            ("partition.date.column", "must differ from partition.date.field (it is derived)")
        )
    return problems
