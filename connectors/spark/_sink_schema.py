"""Records as rows of a Spark table: schema inference and evolution, value coercion, Arrow types.

A value reaches the sink as a dict (the JSON converter without schemas), a
:class:`~sluice.connect.Struct` (with schemas), or a string/bytes holding a JSON object
(the string converter). It becomes a row by :func:`compile_row` against the table's schema:

- a field declared ``NOT NULL`` that is missing or null, a value of the wrong type, a number
  out of range → :class:`BadValueError` naming the field (the sink then skips or fails the record);
- integers are accepted where a ``double`` or ``decimal`` is expected, and integral doubles
  where an integer is; decimals are rounded half-up to the column's scale;
- ``timestamp``: a datetime (naive is UTC), an ISO-8601 string, or epoch **milliseconds**
  (Kafka Connect's convention); ``date``: a date, an ISO string, or days since the epoch;
  ``binary``: bytes or base64 text;
- a field the table does not have raises :class:`NewFieldsError` when the schema evolves
  (``add_columns``; the caller widens the table with :func:`merge` of :func:`infer_type` and
  tries again), and is dropped otherwise.

Inference (no declared schema): bool → boolean, int → bigint, float → double, str → string,
bytes → binary, Decimal → decimal(38, 18), datetime → timestamp, date → date, dict → struct,
list → array of the first non-null element's type; a Connect schema maps type by type
(int8 → tinyint … ``Timestamp`` → timestamp, ``Decimal`` → decimal(38, scale)). Null values add
no column (their type is unknown).

>>> from pyspark.sql.types import StructType, StructField, LongType, StringType
>>> table = StructType([StructField("id", LongType(), False), StructField("name", StringType())])
>>> row = compile_row(table, evolve=False)
>>> row({"id": 1.0, "name": "Ada", "other": 1})
{'id': 1, 'name': 'Ada'}
>>> row({"name": "Ada"})
Traceback (most recent call last):
...
sluice.connectors.spark._sink_schema.BadValueError: id: required field is missing
>>> merge(table, infer_type({"id": 2, "score": 1.5})).simpleString()
'struct<id:bigint,name:string,score:double>'
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from sluice.connect import Schema, Struct

__all__ = [
    "BadValueError",
    "NewFieldsError",
    "compile_row",
    "connect_type",
    "infer_type",
    "merge",
    "plain",
    "timestamp_micros",
]

Convert = Callable[[Any], Any]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INT_BITS: dict[type[DataType], int] = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
_CONNECT = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
    "bytes": BinaryType(),
}


class BadValueError(ValueError):
    """A value does not fit its column; ``field`` is the dotted path of the column."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


class NewFieldsError(Exception):
    """A value has fields the table lacks (``schema.evolution=add_columns``)."""

    def __init__(self, fields: list[str]) -> None:
        super().__init__(", ".join(fields))
        self.fields = fields


def plain(value: Any) -> Any:
    """A Connect value with :class:`Struct` objects turned into dicts (recursively)."""
    if isinstance(value, Struct):
        return {name: plain(item) for name, item in value.values.items()}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def connect_type(schema: Schema) -> DataType:
    """The Spark type of a Kafka Connect schema."""
    name = schema.name or ""
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int(dict(schema.parameters).get("scale", "0"))
        return DecimalType(38, min(scale, 38))
    if name == "org.apache.kafka.connect.data.Timestamp":
        return TimestampType()
    if name == "org.apache.kafka.connect.data.Date":
        return DateType()
    if name == "org.apache.kafka.connect.data.Time":
        return StringType()  # Spark's TIME type is too new for Parquet readers
    if schema.type == "struct":
        return StructType([StructField(f.name, connect_type(f.schema)) for f in schema.fields])
    if schema.type == "array":
        assert schema.value_schema is not None
        return ArrayType(connect_type(schema.value_schema))
    if schema.type == "map":
        assert schema.key_schema is not None and schema.value_schema is not None
        return MapType(connect_type(schema.key_schema), connect_type(schema.value_schema))
    return _CONNECT[schema.type]


def infer_type(value: Any) -> DataType | None:
    """The Spark type of a plain (JSON-like) value; None for null (or an empty list)."""
    if value is None:
        return None
    if isinstance(value, Struct):
        return connect_type(value.schema)
    if isinstance(value, bool):
        return BooleanType()
    if isinstance(value, int):
        return LongType()
    if isinstance(value, float):
        return DoubleType()
    if isinstance(value, str):
        return StringType()
    if isinstance(value, bytes | bytearray):
        return BinaryType()
    if isinstance(value, Decimal):
        return DecimalType(38, 18)
    if isinstance(value, dt.datetime):
        return TimestampType()
    if isinstance(value, dt.date):
        return DateType()
    if isinstance(value, dt.time):
        return StringType()
    if isinstance(value, dict):
        fields = []
        for key, item in value.items():
            kind = infer_type(item)
            if kind is not None:
                fields.append(StructField(str(key), kind))
        return StructType(fields)
    if isinstance(value, list | tuple):
        element = next((infer_type(item) for item in value if item is not None), None)
        return None if element is None else ArrayType(element)
    return StringType()


def merge(table: DataType, other: DataType | None) -> DataType:
    """``table`` with the struct fields of ``other`` it lacks added as nullable (recursively).

    Types of existing fields never change. Returns ``table`` itself when nothing was added.
    """
    if other is None:
        return table
    if isinstance(table, StructType) and isinstance(other, StructType):
        fields = list(table.fields)
        index = {field.name: i for i, field in enumerate(fields)}
        changed = False
        for field in other.fields:
            if field.name not in index:
                fields.append(StructField(field.name, field.dataType, True))
                changed = True
                continue
            mine = fields[index[field.name]]
            widened = merge(mine.dataType, field.dataType)
            if widened is not mine.dataType:
                fields[index[field.name]] = StructField(mine.name, widened, mine.nullable)
                changed = True
        return StructType(fields) if changed else table
    if isinstance(table, ArrayType) and isinstance(other, ArrayType):
        element = merge(table.elementType, other.elementType)
        if element is table.elementType:
            return table
        return ArrayType(element, table.containsNull)
    if isinstance(table, MapType) and isinstance(other, MapType):
        values = merge(table.valueType, other.valueType)
        if values is table.valueType:
            return table
        return MapType(table.keyType, values, table.valueContainsNull)
    return table


def compile_row(schema: StructType, *, evolve: bool) -> Callable[[Any], dict[str, Any]]:
    """A function turning a dict (or Struct) into a row of ``schema``; see the module doc."""
    convert = _struct(schema, "", evolve)

    def row(value: Any) -> dict[str, Any]:
        result: dict[str, Any] = convert(value)
        return result

    return row


def _converter(kind: DataType, path: str, evolve: bool) -> Convert:
    if isinstance(kind, StructType):
        return _struct(kind, path, evolve)
    if isinstance(kind, ArrayType):
        element = _converter(kind.elementType, path + "[]", evolve)

        def array(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _wrong(path, "an array", value)
            return [None if item is None else element(item) for item in value]

        return array
    if isinstance(kind, MapType):
        keys = _converter(kind.keyType, path + ".key", evolve)
        values = _converter(kind.valueType, path + ".value", evolve)

        def mapping(value: Any) -> Any:
            if isinstance(value, Struct):
                value = value.values
            if not isinstance(value, dict):
                raise _wrong(path, "a map", value)
            return {keys(k): None if v is None else values(v) for k, v in value.items()}

        return mapping
    for types, make in _PRIMITIVES:
        if isinstance(kind, types):
            return make(kind, path)
    raise BadValueError(path, f"columns of type {kind.simpleString()} are not supported")


def _struct(schema: StructType, path: str, evolve: bool) -> Convert:
    prefix = path + "." if path else ""
    fields = [
        (f.name, f.nullable, _converter(f.dataType, prefix + f.name, evolve)) for f in schema.fields
    ]
    names = frozenset(f.name for f in schema.fields)

    def struct(value: Any) -> Any:
        if isinstance(value, Struct):
            value = value.values
        if not isinstance(value, dict):
            raise _wrong(path, "an object", value)
        if evolve and not value.keys() <= names:
            new = [prefix + key for key in value if key not in names and value[key] is not None]
            if new:
                raise NewFieldsError(new)
        row: dict[str, Any] = {}
        for name, nullable, convert in fields:
            item = value.get(name)
            if item is None:
                if not nullable:
                    missing = "missing" if name not in value else "null"
                    raise BadValueError(prefix + name, f"required field is {missing}")
                row[name] = None
            else:
                row[name] = convert(item)
        return row

    return struct


def _wrong(path: str, expected: str, value: Any) -> BadValueError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return BadValueError(path, f"expected {expected}, got {shown} ({type(value).__name__})")


def _boolean(kind: DataType, path: str) -> Convert:
    def convert(value: Any) -> Any:
        if isinstance(value, bool):
            return value
        raise _wrong(path, "a boolean", value)

    return convert


def _integer(kind: DataType, path: str) -> Convert:
    bits = _INT_BITS[type(kind)]
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    name = kind.simpleString()

    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise _wrong(path, f"an integer ({name})", value)
        if not isinstance(value, int):
            if not math.isfinite(value) or value != int(value):
                raise _wrong(path, f"an integer ({name})", value)
            value = int(value)
        if not low <= value <= high:
            raise BadValueError(path, f"{value} is out of range for {name}")
        return value

    return convert


def _floating(kind: DataType, path: str) -> Convert:
    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise _wrong(path, "a number", value)
        return float(value)

    return convert


def _decimal(kind: DataType, path: str) -> Convert:
    assert isinstance(kind, DecimalType)
    precision, scale = kind.precision, kind.scale
    quantum = Decimal(1).scaleb(-scale)

    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
            raise _wrong(path, "a decimal", value)
        try:
            number = Decimal(str(value)).quantize(quantum, rounding=ROUND_HALF_UP)
        except InvalidOperation:
            raise _wrong(path, f"a decimal({precision},{scale})", value) from None
        if not number.is_finite() or len(number.as_tuple().digits) > precision:
            raise BadValueError(path, f"{value} does not fit decimal({precision},{scale})")
        return number

    return convert


def _string(kind: DataType, path: str) -> Convert:
    def convert(value: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, dt.time):
            return value.isoformat()
        raise _wrong(path, "a string", value)

    return convert


def _binary(kind: DataType, path: str) -> Convert:
    def convert(value: Any) -> Any:
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error:
                raise _wrong(path, "bytes or base64 text", value) from None
        raise _wrong(path, "bytes or base64 text", value)

    return convert


def _date(kind: DataType, path: str) -> Convert:
    def convert(value: Any) -> Any:
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return _EPOCH_DATE + dt.timedelta(days=value)
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value[:10])
            except ValueError:
                pass
        raise _wrong(path, "a date (ISO text or days since 1970-01-01)", value)

    return convert


def _timestamp(kind: DataType, path: str) -> Convert:
    naive = isinstance(kind, TimestampNTZType)

    def convert(value: Any) -> Any:
        """Microseconds since the epoch (what the Arrow column is built from)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return value * 1000  # epoch milliseconds, as Kafka Connect's Timestamp
        moment = value
        if isinstance(value, str):
            try:
                moment = dt.datetime.fromisoformat(value)
            except ValueError:
                raise _wrong(path, "a timestamp (ISO-8601 or epoch millis)", value) from None
        if not isinstance(moment, dt.datetime):
            raise _wrong(path, "a timestamp (ISO-8601 or epoch millis)", value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        elif naive:
            moment = moment.astimezone(dt.UTC)
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds

    return convert


def timestamp_micros(field: str) -> Convert:
    """A function reading a timestamp (as a ``timestamp`` column accepts it) as epoch micros."""
    return _timestamp(TimestampType(), field)


_PRIMITIVES: list[tuple[type | tuple[type, ...], Callable[[DataType, str], Convert]]] = [
    (BooleanType, _boolean),
    ((ByteType, ShortType, IntegerType, LongType), _integer),
    ((FloatType, DoubleType), _floating),
    (DecimalType, _decimal),
    (StringType, _string),
    (BinaryType, _binary),
    (DateType, _date),
    ((TimestampType, TimestampNTZType), _timestamp),
]
