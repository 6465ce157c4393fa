"""SQL column → Kafka Connect schema and value, for ``jdbc-source``.

A column's SQLAlchemy type (reflected from the table, or, for a custom query on PostgreSQL,
derived from the result's type OIDs) picks its Connect schema; the column's nullability makes
it optional. Values become the Python values of the Connect type (logical types included):

==============================================  ===========================================
SQL                                             Connect
==============================================  ===========================================
SMALLINT / INTEGER / BIGINT                     int16 / int32 / int64 (SQLite: INTEGER int64)
REAL / DOUBLE PRECISION, FLOAT                  float32 / float64 (SQLite: float64)
NUMERIC(p, s), DECIMAL                          Decimal logical type, scale s (numeric.mapping)
NUMERIC without scale                           string (float64 with best_fit)
BOOLEAN                                         boolean
CHAR, VARCHAR, TEXT, ENUM                       string
BYTEA, BLOB, BINARY                             bytes
DATE / TIME / TIMESTAMP                         Date / Time / Timestamp logical types
UUID, JSON                                      string
anything else                                   string (its text), with a warning
no declared type (SQLite)                       from the first value seen
==============================================  ===========================================

Timestamps without a time zone are read in ``db.timezone``; Timestamp values are aware UTC.

>>> import zoneinfo
>>> types = TypeContext("postgresql", "none", zoneinfo.ZoneInfo("UTC"))
>>> mapping = map_column("price", sa.Numeric(10, 2), True, types)
>>> mapping.schema.name, dict(mapping.schema.parameters), mapping.convert(Decimal("1.5"))
('org.apache.kafka.connect.data.Decimal', {'scale': '2'}, Decimal('1.50'))
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
import zoneinfo
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from sluice.connect import (
    Field,
    Schema,
    Struct,
    date_schema,
    decimal_schema,
    time_schema,
    timestamp_schema,
)

__all__ = ["ColumnMapping", "RowMapper", "TypeContext", "map_column", "type_from_oid"]

log = logging.getLogger("sluice.connectors.jdbc")

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class TypeContext:
    """What the mapping depends on beyond the column: dialect, ``numeric.mapping``, zone."""

    dialect: str
    numeric_mapping: str
    zone: zoneinfo.ZoneInfo

    def instant(self, value: Any) -> dt.datetime:
        """A database timestamp (datetime or ISO text) as an aware UTC datetime."""
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        if not isinstance(value, dt.datetime):
            raise ValueError(f"not a timestamp: {value!r}")
        instant: dt.datetime = value
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=self.zone)
        return instant.astimezone(dt.UTC)


@dataclass(frozen=True)
class ColumnMapping:
    """One column: its Connect schema and how a (non-null) database value becomes a value of it.

    ``inferred`` columns (no declared type) take their schema from the first value seen.
    """

    name: str
    schema: Schema
    convert: Convert
    inferred: bool = False


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value!r} is not a whole number")
    return int(value)


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _decimal(scale: int) -> Convert:
    quantum = Decimal(1).scaleb(-scale)

    def convert(value: Any) -> Decimal:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
        return number.quantize(quantum)

    return convert


def _date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _time(value: Any) -> dt.time:
    if isinstance(value, dt.timedelta):  # MySQL's TIME
        return (dt.datetime.min + value).time()
    if isinstance(value, dt.time):
        return value.replace(tzinfo=None)
    return dt.time.fromisoformat(str(value))


def _float(value: Any) -> float:
    return float(value)


def _bool(value: Any) -> bool:
    return bool(value)


def _integer_by_precision(precision: int) -> str | None:
    for limit, kind in ((3, "int8"), (5, "int16"), (10, "int32"), (19, "int64")):
        if precision < limit:
            return kind
    return None


def _numeric(column: sa.Numeric[Any], optional: bool, types: TypeContext) -> tuple[Schema, Convert]:
    precision, scale = column.precision, column.scale
    mapping = types.numeric_mapping
    if mapping != "none" and scale == 0 and precision:
        kind = _integer_by_precision(precision)
        if kind is not None:
            return Schema(kind, optional=optional), _int
    if mapping == "best_fit" and (scale is None or scale > 0):
        return Schema("float64", optional=optional), _float
    if scale is None:
        return Schema("string", optional=optional), str
    return decimal_schema(scale, optional=optional), _decimal(scale)


def _integer(column: sa.Integer, optional: bool, types: TypeContext) -> Schema:
    name = type(column).__name__.upper()
    if name == "TINYINT":
        kind = "int8"
    elif isinstance(column, sa.SmallInteger):
        kind = "int16"
    elif isinstance(column, sa.BigInteger) or types.dialect == "sqlite":
        kind = "int64"  # SQLite's INTEGER holds 64 bits
    else:
        kind = "int32"
    return Schema(kind, optional=optional)


def _float_schema(column: sa.Float[Any], optional: bool, types: TypeContext) -> Schema:
    single = isinstance(column, sa.REAL) or (
        column.precision is not None and column.precision <= 24
    )
    if isinstance(column, sa.Double | sa.DOUBLE_PRECISION) or types.dialect == "sqlite":
        single = False
    return Schema("float32" if single else "float64", optional=optional)


def map_column(name: str, column: Any, optional: bool, types: TypeContext) -> ColumnMapping:
    """The mapping of a column of SQLAlchemy type ``column`` (see the module docstring)."""
    if isinstance(column, sa.Boolean):
        return ColumnMapping(name, Schema("boolean", optional=optional), _bool)
    if isinstance(column, sa.Integer):
        return ColumnMapping(name, _integer(column, optional, types), _int)
    if isinstance(column, sa.Float):
        return ColumnMapping(name, _float_schema(column, optional, types), _float)
    if isinstance(column, sa.Numeric):
        schema, convert = _numeric(column, optional, types)
        return ColumnMapping(name, schema, convert)
    if isinstance(column, sa.DateTime):
        return ColumnMapping(name, timestamp_schema(optional=optional), types.instant)
    if isinstance(column, sa.Date):
        return ColumnMapping(name, date_schema(optional=optional), _date)
    if isinstance(column, sa.Time):
        return ColumnMapping(name, time_schema(optional=optional), _time)
    if isinstance(column, sa.String):
        return ColumnMapping(name, Schema("string", optional=optional), str)
    if isinstance(column, sa.LargeBinary | sa.types._Binary):
        return ColumnMapping(name, Schema("bytes", optional=optional), _bytes)
    if isinstance(column, sa.Uuid):
        return ColumnMapping(name, Schema("string", optional=optional), str)
    if isinstance(column, sa.JSON):
        return ColumnMapping(name, Schema("string", optional=optional), _json)
    if isinstance(column, sa.types.NullType):
        return ColumnMapping(name, Schema("string", optional=True), _text, inferred=True)
    log.warning(
        "column %s has type %s, which Kafka Connect has no type for: sent as text", name, column
    )
    return ColumnMapping(name, Schema("string", optional=optional), _text)


def _type_of_value(value: Any) -> Any:
    """The SQLAlchemy type a Python value suggests (columns without a declared type)."""
    if isinstance(value, bool):
        return sa.Boolean()
    if isinstance(value, int):
        return sa.BigInteger()
    if isinstance(value, float):
        return sa.Double()
    if isinstance(value, Decimal):
        return sa.Numeric()
    if isinstance(value, dt.datetime):
        return sa.DateTime(timezone=value.tzinfo is not None)
    if isinstance(value, dt.date):
        return sa.Date()
    if isinstance(value, dt.time):
        return sa.Time()
    if isinstance(value, bytes | bytearray | memoryview):
        return sa.LargeBinary()
    if isinstance(value, uuid.UUID):
        return sa.Uuid()
    if isinstance(value, dict | list):
        return sa.JSON()
    return sa.String()


# PostgreSQL type OIDs (pg_type) → SQLAlchemy types, for custom queries.
_OIDS: dict[int, Callable[[int | None, int | None], Any]] = {
    16: lambda p, s: sa.Boolean(),
    20: lambda p, s: sa.BigInteger(),
    21: lambda p, s: sa.SmallInteger(),
    23: lambda p, s: sa.Integer(),
    700: lambda p, s: sa.REAL(),
    701: lambda p, s: sa.Double(),
    # psycopg2 reports an unconstrained NUMERIC as precision and scale 65535 (max is 1000)
    1700: lambda p, s: sa.Numeric(p, s) if s is not None and (p or 0) <= 1000 else sa.Numeric(),
    25: lambda p, s: sa.String(),
    1042: lambda p, s: sa.String(),
    1043: lambda p, s: sa.String(),
    19: lambda p, s: sa.String(),
    17: lambda p, s: sa.LargeBinary(),
    1082: lambda p, s: sa.Date(),
    1083: lambda p, s: sa.Time(),
    1114: lambda p, s: sa.DateTime(),
    1184: lambda p, s: sa.DateTime(timezone=True),
    2950: lambda p, s: sa.Uuid(),
    114: lambda p, s: sa.JSON(),
    3802: lambda p, s: sa.JSON(),
}


def type_from_oid(code: Any, precision: int | None, scale: int | None) -> Any:
    """The SQLAlchemy type of a result column from its DB-API ``type_code`` (PostgreSQL OIDs;
    NullType when unknown, so that the values decide)."""
    make = _OIDS.get(code) if isinstance(code, int) else None
    if make is None:
        return sa.types.NullType() if code is None else _Unknown(code)
    return make(precision, scale)


class _Unknown(sa.types.UserDefinedType[Any]):
    """A result column whose type code has no mapping (sent as text)."""

    cache_ok = True

    def __init__(self, code: Any) -> None:
        self.code = code

    def get_col_spec(self, **kw: Any) -> str:
        return f"OID {self.code}"

    def __repr__(self) -> str:
        return f"type OID {self.code}"


@dataclass
class RowMapper:
    """Builds the value struct of each row; the struct schema is named after the table.

    Columns without a declared type (``inferred``) get their schema from the first non-null
    value seen; until then they are optional strings (so the struct schema may change once).
    """

    name: str | None
    columns: list[ColumnMapping]
    types: TypeContext
    schema: Schema = field(init=False)

    def __post_init__(self) -> None:
        self.schema = self._schema()

    def _schema(self) -> Schema:
        fields = [Field(column.name, column.schema) for column in self.columns]
        return Schema.struct(fields, name=self.name)

    def refine(self, rows: Sequence[Sequence[Any]]) -> None:
        """Decide the schema of inferred columns from ``rows`` where they hold a value."""
        changed = False
        for index, column in enumerate(self.columns):
            if not column.inferred:
                continue
            value = next((row[index] for row in rows if row[index] is not None), None)
            if value is None:
                continue
            decided = map_column(column.name, _type_of_value(value), True, self.types)
            self.columns[index] = decided
            changed = True
        if changed:
            self.schema = self._schema()

    def struct(self, row: Sequence[Any]) -> Struct:
        """The struct of one row (values in column order)."""
        values: dict[str, Any] = {}
        for column, value in zip(self.columns, row, strict=True):
            if value is None:
                values[column.name] = None
                continue
            try:
                values[column.name] = column.convert(value)
            except (TypeError, ValueError, ArithmeticError) as error:
                raise ValueError(
                    f"column {column.name}: cannot read {value!r} as {column.schema.type}"
                    f"{' ' + column.schema.name if column.schema.name else ''}: {error}"
                ) from None
        return Struct(self.schema, values)
