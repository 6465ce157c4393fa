"""Kafka Connect schemas → SQL column types, per dialect, for ``jdbc-sink``'s auto.create/evolve.

A column's Connect schema (or, for schemaless values, a schema inferred from the Python value:
:func:`infer_schema`) picks a SQLAlchemy type (:func:`column_type`):

==========================  ===================  =================  ===================
Connect                     PostgreSQL           MySQL / MariaDB    SQLite
==========================  ===================  =================  ===================
int8                        SMALLINT             TINYINT            SMALLINT
int16                       SMALLINT             SMALLINT           SMALLINT
int32                       INTEGER              INTEGER            INTEGER
int64                       BIGINT               BIGINT             BIGINT
float32                     REAL                 FLOAT              REAL
float64                     DOUBLE PRECISION     DOUBLE             DOUBLE
boolean                     BOOLEAN              BOOL               BOOLEAN
string                      TEXT                 TEXT (keys:        TEXT
                                                 VARCHAR(256))
bytes                       BYTEA                BLOB (keys:        BLOB
                                                 VARBINARY(256))
Decimal (scale s)           NUMERIC              DECIMAL(65, s)     NUMERIC
Date                        DATE                 DATE               DATE
Time                        TIME                 TIME(3)            TIME
Timestamp                   TIMESTAMP            DATETIME(3)        DATETIME
==========================  ===================  =================  ===================

Other dialects get SQLAlchemy's generic types (strings and bytes of keys as ``VARCHAR(256)`` /
``VARBINARY(256)``). ``array``, ``map`` and ``struct`` have no column type
(:class:`UnmappableTypeError`).

Timestamps are written as UTC: to a column without time zone as a naive UTC datetime, to one
with a time zone (``TIMESTAMPTZ``) as an aware one (:func:`timestamp_adapter`).

>>> column_type(Schema("string"), "mysql", key=True)
String(length=256)
>>> infer_schema(Decimal("1.250")).parameters
(('scale', '3'),)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.types import TypeEngine

from sluice.connect import (
    DATE,
    DECIMAL,
    TIME,
    TIMESTAMP,
    Schema,
    date_schema,
    decimal_schema,
    time_schema,
    timestamp_schema,
)

__all__ = [
    "UnmappableTypeError",
    "column_type",
    "infer_schema",
    "no_column_type",
    "timestamp_adapter",
    "type_name",
]

KEY_LENGTH = 256
"""Length of string and bytes key columns where TEXT/BLOB cannot be indexed (MySQL, others)."""

_TEXT_KEYS = frozenset(["postgresql", "sqlite"])


class UnmappableTypeError(ValueError):
    """A value or schema has no SQL column type (array, map, struct…)."""


def type_name(schema: Schema) -> str:
    """The schema's type as messages name it: its logical name, else its type."""
    return schema.name or schema.type


def no_column_type(kind: str) -> str:
    """``"an array has no SQL column type"``."""
    article = "an" if kind[:1] in "aeiou" else "a"
    return f"{article} {kind} has no SQL column type"


def _decimal(schema: Schema, dialect: str) -> TypeEngine[Any]:
    parameters = dict(schema.parameters)
    scale = int(parameters.get("scale", "0"))
    precision = parameters.get("connect.decimal.precision")
    if precision is not None:
        return sa.Numeric(int(precision), scale, asdecimal=True)
    if dialect in ("mysql", "mariadb"):
        return sa.Numeric(65, scale, asdecimal=True)
    return sa.Numeric(asdecimal=True)


def column_type(schema: Schema, dialect: str, *, key: bool = False) -> TypeEngine[Any]:
    """The SQL type of a column of ``schema`` in ``dialect`` (``key``: part of the primary key).

    Raises :class:`UnmappableTypeError` for array, map and struct schemas.
    """
    is_mysql = dialect in ("mysql", "mariadb")
    name = schema.name
    if name == DECIMAL:
        return _decimal(schema, dialect)
    if name == DATE:
        return sa.Date()
    if name == TIME:
        return mysql.TIME(fsp=3) if is_mysql else sa.Time()
    if name == TIMESTAMP:
        return mysql.DATETIME(fsp=3) if is_mysql else sa.DateTime()
    kind = schema.type
    if kind == "int8":
        return mysql.TINYINT() if is_mysql else sa.SmallInteger()
    if kind == "int16":
        return sa.SmallInteger()
    if kind == "int32":
        return sa.Integer()
    if kind == "int64":
        return sa.BigInteger()
    if kind == "float32":
        return mysql.FLOAT() if is_mysql else sa.REAL()
    if kind == "float64":
        return sa.Double()
    if kind == "boolean":
        return sa.Boolean()
    if kind == "string":
        return sa.String(KEY_LENGTH) if key and dialect not in _TEXT_KEYS else sa.Text()
    if kind == "bytes":
        if key and dialect not in _TEXT_KEYS:
            return sa.VARBINARY(KEY_LENGTH)
        return sa.LargeBinary()
    raise UnmappableTypeError(no_column_type(type_name(schema)))


def infer_schema(value: Any) -> Schema:
    """The Connect schema a schemaless value's column gets (None: an optional string).

    bool → boolean, int → int64, float → float64, str → string, bytes → bytes, Decimal →
    Decimal (scale of the value), datetime → Timestamp, date → Date, time → Time.
    """
    if value is None or isinstance(value, str):
        return _OPTIONAL_STRING
    if isinstance(value, bool):
        return _OPTIONAL["boolean"]
    if isinstance(value, int):
        return _OPTIONAL["int64"]
    if isinstance(value, float):
        return _OPTIONAL["float64"]
    if isinstance(value, bytes | bytearray | memoryview):
        return _OPTIONAL["bytes"]
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return decimal_schema(scale, optional=True)
    if isinstance(value, dt.datetime):
        return _TIMESTAMP
    if isinstance(value, dt.date):
        return _DATE
    if isinstance(value, dt.time):
        return _TIME
    names: dict[type, str] = {dict: "map", list: "array", tuple: "array"}
    kind = names.get(type(value), type(value).__name__)
    raise UnmappableTypeError(no_column_type(kind))


_OPTIONAL = {kind: Schema(kind, optional=True) for kind in ("boolean", "int64", "float64", "bytes")}
_OPTIONAL_STRING = Schema("string", optional=True)
_TIMESTAMP = timestamp_schema(optional=True)
_DATE = date_schema(optional=True)
_TIME = time_schema(optional=True)


def _to_naive_utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _to_aware_utc(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def timestamp_adapter(column_type: TypeEngine[Any]) -> Callable[[Any], Any] | None:
    """What datetimes written to a column of ``column_type`` go through (None: nothing)."""
    if isinstance(column_type, sa.DateTime):
        return _to_aware_utc if column_type.timezone else _to_naive_utc
    return None
