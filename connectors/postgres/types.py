"""PostgreSQL column types as Debezium maps them: a Connect schema and a parser of the text form.

pgoutput sends every value in its text form, and the snapshot reads columns cast to ``text``,
so one parser per type serves both. The connection settings (:data:`SESSION_OPTIONS`) pin the
text forms: ISO dates, UTC time zone, ISO 8601 intervals, hex bytea, round-trip floats.

Mapping (Debezium's defaults: ``time.precision.mode=adaptive``, ``binary.handling.mode=bytes``,
``interval.handling.mode=numeric``):

============================  ============================================================
PostgreSQL                    Connect schema (logical name) → Python value
============================  ============================================================
bool                          boolean
int2 / int4 / int8, oid       int16 / int32 / int64, int64
float4 / float8               float32 / float64
numeric(p, s)                 ``Decimal`` (bytes, scale s) → ``decimal.Decimal``; with
                              ``decimal.handling.mode`` ``double``: float64, ``string``: string
numeric (no scale)            ``io.debezium.data.VariableScaleDecimal`` struct (scale, value)
text, varchar, char, name…    string
bytea                         bytes
date                          ``io.debezium.time.Date`` int32 days since 1970-01-01
time(p)                       ``io.debezium.time.Time`` int32 ms (p ≤ 3), else ``MicroTime`` µs
timestamp(p)                  ``io.debezium.time.Timestamp`` ms (p ≤ 3), else ``MicroTimestamp`` µs
timestamptz                   ``io.debezium.time.ZonedTimestamp`` string, UTC, ``…T…Z``
timetz                        ``io.debezium.time.ZonedTime`` string, UTC
interval                      ``io.debezium.time.MicroDuration`` int64 µs (a month = 30.4375 days)
uuid / json, jsonb / xml      string named ``io.debezium.data.Uuid`` / ``Json`` / ``Xml``
one-dimensional arrays of     array of the element's schema (elements optional)
the types above
anything else (enums, inet…)  string (the text form)
============================  ============================================================

With ``time.precision.mode=connect`` (Debezium's option) date, time and timestamp columns are
Kafka Connect's ``Date`` (int32 days), ``Time`` (int32 ms) and ``Timestamp`` (int64 ms) logical
types instead — what ``jdbc-sink``, ``spark-sink`` and the schema registry converters map to
SQL, Parquet and Avro date and time types (sub-millisecond digits are dropped, as Debezium does).

SQL NULL is None; ``NaN`` numerics and infinite dates or timestamps become None too.

>>> t = column_type(1700, numeric_modifier(10, 2), optional=True)
>>> t.schema.name, dict(t.schema.parameters)["scale"], t.parse("12.50")
('org.apache.kafka.connect.data.Decimal', '2', Decimal('12.50'))
>>> column_type(1114, -1, optional=False).parse("2024-01-02 03:04:05.5")
1704164645500000
>>> column_type(1184, -1, optional=True).parse("2024-01-02 03:04:05.25+00")
'2024-01-02T03:04:05.25Z'
>>> column_type(1007, -1, optional=True).parse('{1,NULL,3}')
[1, None, 3]
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sluice.connect import (
    Field,
    Schema,
    Struct,
    date_schema,
    raw_to_logical,
    time_schema,
    timestamp_schema,
)

__all__ = [
    "SESSION_OPTIONS",
    "UNAVAILABLE",
    "ColumnType",
    "column_type",
    "numeric_modifier",
    "parse_array",
]

SESSION_OPTIONS = (
    "-c DateStyle=ISO,MDY -c TimeZone=UTC -c IntervalStyle=iso_8601 "
    "-c bytea_output=hex -c extra_float_digits=3"
)
"""libpq ``options`` of every connection (replication included): pins the text forms parsed here."""

UNAVAILABLE = "__debezium_unavailable_value"
"""Debezium's placeholder for an unchanged TOASTed value that PostgreSQL did not send."""

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
MICROS_PER_MONTH = 2_629_800_000_000  # 30.4375 days, Debezium's average month

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = Schema.struct(
    [Field("scale", Schema("int32")), Field("value", Schema("bytes"))],
    name="io.debezium.data.VariableScaleDecimal",
)

_ARRAYS = {
    1000: 16,
    1001: 17,
    1005: 21,
    1007: 23,
    1016: 20,
    1021: 700,
    1022: 701,
    1009: 25,
    1015: 1043,
    1014: 1042,
    1231: 1700,
    2951: 2950,
    1182: 1082,
    1115: 1114,
    1185: 1184,
    1183: 1083,
    199: 114,
    3807: 3802,
    1028: 26,
}
_NAMED_STRINGS = {2950: "io.debezium.data.Uuid", 114: "io.debezium.data.Json"}
_NAMED_STRINGS |= {3802: "io.debezium.data.Json", 142: "io.debezium.data.Xml"}


@dataclass(frozen=True)
class ColumnType:
    """A column's Connect schema, its text parser and its stand-in values.

    ``unavailable`` stands for an unchanged TOASTed value (Debezium's placeholder where the
    schema can hold it); ``fallback`` is what Debezium puts in a required field whose value is
    missing (a delete's before image carries only the key with the default replica identity).
    """

    schema: Schema
    parse: Callable[[str], Any]
    unavailable: Any
    fallback: Any


def numeric_modifier(precision: int, scale: int) -> int:
    """The type modifier PostgreSQL stores for ``numeric(precision, scale)``."""
    return ((precision << 16) | (scale & 0x7FF)) + 4


def _numeric_scale(modifier: int) -> tuple[int, int] | None:
    if modifier < 4:
        return None
    value = modifier - 4
    return (value >> 16) & 0xFFFF, ((value & 0x7FF) ^ 1024) - 1024


def _precision(modifier: int) -> int:
    return modifier if modifier >= 0 else 6


def _bool(text: str) -> bool:
    return text in ("t", "true")


def _bytes(text: str) -> bytes:
    if text.startswith("\\x"):
        return bytes.fromhex(text[2:])
    raise ValueError(f"bytea text {text[:20]!r} is not in hex form")


def _days(text: str) -> int | None:
    if "infinity" in text or text.endswith(" BC"):
        return None
    return (dt.date.fromisoformat(text) - EPOCH_DATE).days


def _time_micros(text: str) -> int:
    if text.startswith("24:00:00"):
        return 86_400_000_000
    value = dt.time.fromisoformat(text)
    seconds = (value.hour * 60 + value.minute) * 60 + value.second
    return seconds * 1_000_000 + value.microsecond


def _timestamp_micros(text: str) -> int | None:
    if "infinity" in text or text.endswith(" BC"):
        return None
    delta = dt.datetime.fromisoformat(text) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _iso_fraction(micros: int) -> str:
    return f".{micros:06d}".rstrip("0") if micros else ""


def _zoned_timestamp(text: str) -> str | None:
    if "infinity" in text or text.endswith(" BC"):
        return None
    value = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S") + _iso_fraction(value.microsecond) + "Z"


_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?$")


def _zoned_time(text: str) -> str:
    match = _OFFSET.search(text)
    offset = dt.timedelta()
    if match is not None:
        sign = -1 if match.group(1) == "-" else 1
        hours, minutes, seconds = (int(group or 0) for group in match.groups()[1:])
        offset = sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
        text = text[: match.start()]
    local = dt.datetime.combine(EPOCH_DATE, dt.time.fromisoformat(text))
    value = (local - offset).time()
    return value.strftime("%H:%M:%S") + _iso_fraction(value.microsecond) + "Z"


_INTERVAL = re.compile(
    r"P(?:(?P<Y>-?\d+)Y)?(?:(?P<M>-?\d+)M)?(?:(?P<D>-?\d+)D)?"
    r"(?:T(?:(?P<h>-?\d+)H)?(?:(?P<m>-?\d+)M)?(?:(?P<s>-?[\d.]+)S)?)?$"
)


def _interval_micros(text: str) -> int:
    match = _INTERVAL.match(text)
    if match is None:
        raise ValueError(f"interval {text!r} is not in ISO 8601 form")
    part = {key: int(value) for key, value in match.groupdict().items() if value and key != "s"}
    months = part.get("Y", 0) * 12 + part.get("M", 0)
    seconds = (part.get("D", 0) * 24 + part.get("h", 0)) * 3600 + part.get("m", 0) * 60
    fraction = Decimal(match.group("s") or 0) * 1_000_000
    return months * MICROS_PER_MONTH + seconds * 1_000_000 + int(fraction)


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"invalid numeric {text!r}") from None
    return value if value.is_finite() else None


def _variable_decimal(text: str) -> Struct | None:
    value = _decimal(text)
    if value is None:
        return None
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -exponent
    if scale < 0:  # Debezium keeps the scale ≥ 0
        unscaled, scale = unscaled * 10**-scale, 0
    bits = (~unscaled if unscaled < 0 else unscaled).bit_length()
    raw = unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
    return Struct(VARIABLE_DECIMAL, {"scale": scale, "value": raw})


def _double(text: str) -> float | None:
    value = _decimal(text)
    return None if value is None else float(value)


def _numeric(modifier: int, mode: str) -> tuple[Schema, Callable[[str], Any], Any]:
    if mode == "double":
        return Schema("float64"), _double, 0.0
    if mode == "string":
        return Schema("string"), str, ""
    shape = _numeric_scale(modifier)
    if shape is None:
        zero = Struct(VARIABLE_DECIMAL, {"scale": 0, "value": b"\0"})
        return VARIABLE_DECIMAL, _variable_decimal, zero
    precision, scale = shape
    schema = Schema(
        "bytes",
        name=DECIMAL,
        version=1,
        parameters=(("scale", str(scale)), ("connect.decimal.precision", str(precision))),
    )
    return schema, _decimal, Decimal(0).scaleb(-scale)


def _connect_time(type_oid: int) -> tuple[Schema, Callable[[str], Any], Any] | None:
    """``time.precision.mode=connect``: Kafka Connect's logical types (ms), their values the
    Python ones (``date``, ``time``, an aware UTC ``datetime``)."""
    raw_of: Callable[[str], int | None]
    if type_oid == 1082:
        schema, raw_of = date_schema(), _days
    elif type_oid == 1083:
        schema, raw_of = time_schema(), _time_millis
    elif type_oid == 1114:
        schema, raw_of = timestamp_schema(), _timestamp_millis
    else:
        return None

    def parse(text: str) -> Any:
        raw = raw_of(text)
        return None if raw is None else raw_to_logical(schema, raw)

    return schema, parse, raw_to_logical(schema, 0)


def _time_millis(text: str) -> int:
    return min(_time_micros(text) // 1000, 86_399_999)  # 24:00:00 is not a Python time


def _timestamp_millis(text: str) -> int | None:
    return _millis(_timestamp_micros(text))


def _scalar(
    type_oid: int, modifier: int, mode: str, time_mode: str = "adaptive"
) -> tuple[Schema, Callable[[str], Any], Any]:
    if time_mode == "connect" and (connect := _connect_time(type_oid)) is not None:
        return connect
    """(schema, parser, fallback) of a non-array type."""
    if type_oid == 16:
        return Schema("boolean"), _bool, False
    if type_oid in (20, 21, 23, 26):
        kind = {20: "int64", 21: "int16", 23: "int32", 26: "int64"}[type_oid]
        return Schema(kind), int, 0
    if type_oid in (700, 701):
        return Schema("float32" if type_oid == 700 else "float64"), float, 0.0
    if type_oid == 1700:
        return _numeric(modifier, mode)
    if type_oid == 17:
        return Schema("bytes"), _bytes, b""
    if type_oid == 1082:
        return Schema("int32", name="io.debezium.time.Date", version=1), _days, 0
    if type_oid == 1083:
        if _precision(modifier) <= 3:
            schema = Schema("int32", name="io.debezium.time.Time", version=1)
            return schema, lambda text: _time_micros(text) // 1000, 0
        return Schema("int64", name="io.debezium.time.MicroTime", version=1), _time_micros, 0
    if type_oid == 1114:
        if _precision(modifier) <= 3:
            schema = Schema("int64", name="io.debezium.time.Timestamp", version=1)
            return schema, lambda text: _millis(_timestamp_micros(text)), 0
        schema = Schema("int64", name="io.debezium.time.MicroTimestamp", version=1)
        return schema, _timestamp_micros, 0
    if type_oid == 1184:
        schema = Schema("string", name="io.debezium.time.ZonedTimestamp", version=1)
        return schema, _zoned_timestamp, "1970-01-01T00:00:00Z"
    if type_oid == 1266:
        schema = Schema("string", name="io.debezium.time.ZonedTime", version=1)
        return schema, _zoned_time, "00:00:00Z"
    if type_oid == 1186:
        schema = Schema("int64", name="io.debezium.time.MicroDuration", version=1)
        return schema, _interval_micros, 0
    name = _NAMED_STRINGS.get(type_oid)
    return Schema("string", name=name, version=1 if name else None), str, ""


def _millis(micros: int | None) -> int | None:
    return None if micros is None else micros // 1000


def _optional(schema: Schema, optional: bool) -> Schema:
    if schema.optional == optional:
        return schema
    return Schema(
        schema.type,
        optional=optional,
        name=schema.name,
        version=schema.version,
        parameters=schema.parameters,
        fields=schema.fields,
        value_schema=schema.value_schema,
    )


def column_type(
    type_oid: int,
    modifier: int,
    *,
    optional: bool,
    decimal_mode: str = "precise",
    time_mode: str = "adaptive",
) -> ColumnType:
    """The :class:`ColumnType` of a column of type ``type_oid`` with type modifier ``modifier``."""
    element_oid = _ARRAYS.get(type_oid)
    if element_oid is not None:
        item, parse_item, _ = _scalar(element_oid, modifier, decimal_mode, time_mode)
        schema = Schema("array", optional=optional, value_schema=_optional(item, True))
        placeholder = [UNAVAILABLE] if item.type == "string" else None
        return ColumnType(schema, lambda text: parse_array(text, parse_item), placeholder, [])
    schema, parse, fallback = _scalar(type_oid, modifier, decimal_mode, time_mode)
    unavailable: Any = None
    if schema.type == "string":
        unavailable = UNAVAILABLE
    elif schema.type == "bytes" and schema.name is None:
        unavailable = UNAVAILABLE.encode()
    return ColumnType(_optional(schema, optional), parse, unavailable, fallback)


def parse_array(text: str, parse_item: Callable[[str], Any]) -> list[Any]:
    """The items of a one-dimensional array literal (``{a,"b c",NULL}``), each parsed.

    >>> parse_array('{"a,b",NULL,"say \\\\"hi\\\\"",plain}', str)
    ['a,b', None, 'say "hi"', 'plain']
    """
    if text.startswith("["):  # explicit bounds: [0:2]={…}
        text = text[text.index("=") + 1 :]
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"not an array literal: {text[:40]!r}")
    body = text[1:-1]
    if body.startswith("{"):
        raise ValueError("multi-dimensional arrays are not supported")
    items: list[Any] = []
    position = 0
    while position < len(body):
        if body[position] == '"':
            chars = []
            position += 1
            while body[position] != '"':
                if body[position] == "\\":
                    position += 1
                chars.append(body[position])
                position += 1
            items.append(parse_item("".join(chars)))
            position += 2  # the quote and the comma
            continue
        end = body.find(",", position)
        end = len(body) if end < 0 else end
        raw = body[position:end].strip()
        items.append(None if raw == "NULL" else parse_item(raw))
        position = end + 1
    return items
