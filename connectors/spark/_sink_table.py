"""One table of ``spark-sink``: its schema (declared, inferred, evolved), rows, files, catalog.

The table's schema is kept in ``_sluice_table.json`` (see :mod:`._sink_commit`) as Spark's JSON
form of the full schema — data columns, then partition columns — so that every task, in any
process, and any later reader agree on it; it only grows (nullable columns are added, types never
change) and changes under the table's lock. Data files hold the data columns only (partition
values are directory names, as Spark writes them).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DataType,
    DateType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from sluice.connect import ConnectError
from sluice.connectors.spark._sink_commit import TableDir
from sluice.connectors.spark._sink_config import SinkSettings, catalog_name
from sluice.connectors.spark._sink_schema import (
    NewFieldsError,
    compile_row,
    infer_type,
    merge,
    timestamp_micros,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_PARTITION", "SinkTable", "partition_text"]

log = logging.getLogger("sluice.connectors.spark")

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""Spark's directory name for a null partition value."""

_PATH_UNSAFE = "\"#%'*/:=?\\\x7f{[]^"  # what Spark escapes in partition values (and controls)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def partition_text(value: Any, kind: DataType) -> str:
    """A partition value as Spark names its directory (``col=<text>``), escaped as Spark does."""
    if value is None or value == "":
        return DEFAULT_PARTITION
    if isinstance(kind, TimestampType) and isinstance(value, int):
        moment = _EPOCH + dt.timedelta(microseconds=value)
        text = moment.strftime("%Y-%m-%d %H:%M:%S")
        if moment.microsecond:
            text += f".{moment.microsecond:06d}".rstrip("0")
    elif isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, dt.date | Decimal | int | float):
        text = str(value)
    else:
        text = str(value)
    return "".join(f"%{ord(c):02X}" if c in _PATH_UNSAFE or ord(c) < 0x20 else c for c in text)


class SinkTable:
    """A table as one task sees it; not thread-safe (one task uses it)."""

    def __init__(self, name: str, settings: SinkSettings, declared: StructType | None) -> None:
        self.name = name
        self.catalog = catalog_name(name)
        self.dir = TableDir(settings.warehouse / name)
        self.settings = settings
        self.declared = declared
        self.partitions = settings.partition_columns
        self.evolve = settings.evolution == "add_columns"
        self.schema: StructType | None = None
        self._row: Callable[[Any], dict[str, Any]] | None = None
        self._arrow: pa.Schema | None = None
        self._date: Callable[[Any], Any] | None = None
        self._catalog_schema: str | None = None
        self.new_directories = False
        self._directories: set[str] = set()
        if settings.date_field:
            self._date = timestamp_micros(settings.date_field)
        self.load()

    # -- schema -------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the table's schema (merging the declared one in); create it if declared."""
        with self.dir.locked():
            meta = self.dir.read_meta()
            current = None
            if meta is not None:
                current = StructType.fromJson(meta["schema"])
                if tuple(meta["partition_columns"]) != self.partitions:
                    raise ConnectError(
                        f"spark-sink: table {self.name} ({self.dir.path}) is partitioned by "
                        f"{meta['partition_columns']}, not by partition.columns "
                        f"{list(self.partitions)}"
                    )
            wanted = current
            if self.declared is not None:
                wanted = self._layout(self.declared if current is None else current, self.declared)
            if wanted is not None and (current is None or wanted.json() != current.json()):
                self._store(wanted)
            if wanted is not None:
                self._use(wanted)

    def _layout(self, schema: StructType, extra: DataType | None) -> StructType:
        """``schema`` widened by ``extra``, partition columns typed and placed last."""
        merged = merge(schema, extra)
        assert isinstance(merged, StructType)
        by_name = {field.name: field for field in merged.fields}
        for column in self.partitions:
            if column not in by_name:
                derived = column == self.settings.date_column and self.settings.date_field
                kind = DateType() if derived and self.settings.date_is_iso else StringType()
                by_name[column] = StructField(column, kind, True)
            elif not _primitive(by_name[column].dataType):
                raise ConnectError(
                    f"spark-sink: partition column {column} of table {self.name} is a "
                    f"{by_name[column].dataType.simpleString()}; partition by a primitive column"
                )
        data = [f for f in merged.fields if f.name not in self.partitions]
        return StructType(data + [by_name[column] for column in self.partitions])

    def _declared_check(self, current: StructType) -> None:
        if self.declared is None:
            return
        types = {f.name: f.dataType for f in current.fields}
        for field in self.declared.fields:
            if field.name in types and types[field.name] != field.dataType:
                raise ConnectError(
                    f"spark-sink: column {field.name} of table {self.name} is "
                    f"{types[field.name].simpleString()}, but schema declares "
                    f"{field.dataType.simpleString()}"
                )

    def _store(self, schema: StructType) -> None:
        self._declared_check(schema)
        meta = {"version": 1, "schema": schema.jsonValue(), "partition_columns": self.partitions}
        self.dir.write_meta(meta, self._data_arrow(schema))

    def _use(self, schema: StructType) -> None:
        self.schema = schema
        nullable = {f.name: f.nullable for f in (self.declared.fields if self.declared else [])}
        # Columns keep the declared NOT NULL; partition columns are filled by the sink.
        checked = StructType(
            [StructField(f.name, f.dataType, nullable.get(f.name, True)) for f in schema.fields]
        )
        self._row = compile_row(checked, evolve=self.evolve)
        self._arrow = self._data_arrow(schema)

    def _data_arrow(self, schema: StructType) -> pa.Schema:
        data = StructType([f for f in schema.fields if f.name not in self.partitions])
        nullable = StructType([StructField(f.name, f.dataType, True) for f in data.fields])
        return to_arrow_schema(nullable, timezone="UTC")

    def _widen(self, value: Any) -> None:
        """Add the columns ``value`` brings (under the lock, over what others added)."""
        with self.dir.locked():
            meta = self.dir.read_meta()
            base = StructType.fromJson(meta["schema"]) if meta else (self.schema or StructType())
            if self.schema is not None:
                base = merge(base, self.schema)  # type: ignore[assignment]
            wanted = self._layout(base, infer_type(value))
            if meta is None or StructType.fromJson(meta["schema"]) != wanted:
                self._store(wanted)
            self._use(wanted)

    # -- rows and files -----------------------------------------------------------------------

    def row(self, value: Any) -> tuple[dict[str, Any], str]:
        """A record's value as (data row, partition directory); raises ``BadValueError``."""
        if self._row is None:
            self._widen(value)
        assert self._row is not None
        try:
            row = self._row(value)
        except NewFieldsError:
            self._widen(value)
            row = self._row(value)
        if not self.partitions:
            return row, ""
        parts = []
        assert self.schema is not None
        kinds = {f.name: f.dataType for f in self.schema.fields}
        for column in self.partitions:
            if self._date is not None and column == self.settings.date_column:
                row.pop(column, None)  # derived, whatever the record says
                raw = value.get(self.settings.date_field)  # a dict or a Struct
                text = DEFAULT_PARTITION if raw is None else self._date_text(raw)
            else:
                text = partition_text(row.pop(column, None), kinds[column])
            parts.append(f"{column}={text}")
        return row, "/".join(parts)

    def _date_text(self, raw: Any) -> str:
        assert self._date is not None
        micros = self._date(raw)
        moment = _EPOCH + dt.timedelta(microseconds=micros)
        return quote(moment.strftime(self.settings.date_format), safe=" -_.,;+@!$&()~")

    def files(
        self, rows: list[dict[str, Any]], directories: list[str], name: str
    ) -> dict[str, pa.Table]:
        """The rows as Arrow tables by final path (``<directory>/<name>``)."""
        assert self._arrow is not None
        groups: dict[str, list[dict[str, Any]]] = {}
        for row, directory in zip(rows, directories, strict=True):
            groups.setdefault(directory, []).append(row)
        files = {}
        for directory, group in groups.items():
            columns = [
                pa.array([row.get(field.name) for row in group], type=field.type)
                for field in self._arrow
            ]
            files[f"{directory}/{name}" if directory else name] = pa.Table.from_arrays(
                columns, schema=self._arrow
            )
            if directory not in self._directories:
                self._directories.add(directory)
                self.new_directories = True
        return files

    # -- catalog ------------------------------------------------------------------------------

    def register(self, spark: SparkSession) -> None:
        """Make the table visible to ``spark.sql`` as it is on disk (create, add columns,
        find new partitions, refresh)."""
        if self.schema is None:
            return
        name, schema = self.catalog, self.schema
        if self._catalog_schema != schema.json():
            if spark.catalog.tableExists(name):
                known = spark.table(name).schema
                types = {f.name: f.dataType for f in known.fields}
                missing = [f for f in schema.fields if f.name not in types]
                changed = any(types[f.name] != f.dataType for f in schema.fields if f.name in types)
                if changed or any(m.name in self.partitions for m in missing):
                    spark.sql(f"DROP TABLE {name}")  # an external table: the files stay
                    self._create(spark)
                elif missing:
                    columns = ", ".join(_column(f) for f in missing)
                    spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({columns})")
            else:
                self._create(spark)
            self._catalog_schema = schema.json()
            self.new_directories = True
        if self.new_directories and self.partitions:
            spark.sql(f"MSCK REPAIR TABLE {name}")
        self.new_directories = False
        spark.sql(f"REFRESH TABLE {name}")

    def _create(self, spark: SparkSession) -> None:
        assert self.schema is not None
        columns = ", ".join(_column(f) for f in self.schema.fields)
        partitioned = f" PARTITIONED BY ({', '.join(self.partitions)})" if self.partitions else ""
        location = str(self.dir.path.resolve()).replace("'", "\\'")
        self.dir.path.mkdir(parents=True, exist_ok=True)
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.catalog} ({columns}) USING parquet"
            f"{partitioned} LOCATION '{location}'"
        )


def _column(field: StructField) -> str:
    return f"`{field.name.replace('`', '``')}` {field.dataType.simpleString()}"


def _primitive(kind: DataType) -> bool:
    return not isinstance(kind, StructType) and "<" not in kind.simpleString()
