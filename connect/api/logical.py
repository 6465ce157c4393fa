"""Kafka Connect's logical types, and the text Java's ``toString`` makes of Connect values.

A logical type is a primitive schema with a well-known ``name``; in Python its values are richer
objects (where Kafka uses ``BigDecimal`` and ``java.util.Date``):

- ``org.apache.kafka.connect.data.Decimal``: ``decimal.Decimal``, carried as bytes holding the
  unscaled two's-complement integer (big-endian), the scale in the ``scale`` parameter;
- ``org.apache.kafka.connect.data.Date``: ``datetime.date``, carried as int32 days since 1970-01-01;
- ``org.apache.kafka.connect.data.Time``: ``datetime.time``, carried as int32 milliseconds since
  midnight;
- ``org.apache.kafka.connect.data.Timestamp``: an aware UTC ``datetime.datetime``, carried as int64
  milliseconds since the epoch.

Converters and transforms move between the two with :func:`logical_to_raw` and
:func:`raw_to_logical`; a value that does not fit raises ``ValueError``.

>>> from decimal import Decimal
>>> logical_to_raw(decimal_schema(2), Decimal("-1.29"))
b'\\xff\\x7f'
>>> raw_to_logical(timestamp_schema(), 1_700_000_000_123)
datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.timezone.utc)
>>> java_string(1e7), java_string(True)
('1.0E7', 'true')
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Schema

__all__ = [
    "DATE",
    "DECIMAL",
    "LOGICAL_NAMES",
    "TIME",
    "TIMESTAMP",
    "date_schema",
    "datetime_to_millis",
    "decimal_scaled",
    "decimal_schema",
    "java_double",
    "java_string",
    "logical_to_raw",
    "millis_to_datetime",
    "millis_to_time",
    "raw_to_logical",
    "time_schema",
    "time_to_millis",
    "timestamp_schema",
]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
LOGICAL_NAMES = frozenset([DECIMAL, DATE, TIME, TIMESTAMP])

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_DATE = dt.date(1970, 1, 1)
MILLIS_PER_DAY = 86_400_000
_MILLI = dt.timedelta(milliseconds=1)


def decimal_schema(scale: int, *, optional: bool = False) -> Schema:
    """Kafka's ``Decimal`` logical schema (bytes) with ``scale`` digits after the point."""
    return Schema(
        "bytes", optional=optional, name=DECIMAL, version=1, parameters=(("scale", str(scale)),)
    )


def date_schema(*, optional: bool = False) -> Schema:
    """Kafka's ``Date`` logical schema (int32 days since 1970-01-01)."""
    return Schema("int32", optional=optional, name=DATE, version=1)


def time_schema(*, optional: bool = False) -> Schema:
    """Kafka's ``Time`` logical schema (int32 milliseconds since midnight)."""
    return Schema("int32", optional=optional, name=TIME, version=1)


def timestamp_schema(*, optional: bool = False) -> Schema:
    """Kafka's ``Timestamp`` logical schema (int64 milliseconds since the epoch, UTC)."""
    return Schema("int64", optional=optional, name=TIMESTAMP, version=1)


def millis_to_datetime(millis: int) -> dt.datetime:
    """An aware UTC datetime ``millis`` milliseconds after the epoch."""
    return EPOCH + dt.timedelta(milliseconds=millis)


def datetime_to_millis(value: dt.datetime) -> int:
    """Milliseconds since the epoch (a naive datetime is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - EPOCH) // _MILLI


def time_to_millis(value: dt.time) -> int:
    """Milliseconds since midnight."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def millis_to_time(millis: int) -> dt.time:
    """The time of day ``millis`` milliseconds after midnight (0 ≤ millis < 86 400 000)."""
    if not 0 <= millis < MILLIS_PER_DAY:
        raise ValueError(f"Time values must be milliseconds within a day, not {millis}")
    return (dt.datetime.min + dt.timedelta(milliseconds=millis)).time()


def _scale(schema: Schema) -> int:
    scale = dict(schema.parameters).get("scale")
    if scale is None:
        raise ValueError("Invalid Decimal schema: scale parameter not found.")
    return int(scale)


def _unscaled(schema: Schema, value: Decimal) -> int:
    """The integer ``value × 10^scale``, exactly (no decimal context, so no rounding)."""
    scale = _scale(schema)
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"Decimal {value} is not a finite number")
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    power: int = 10 ** abs(shift)
    if shift >= 0:
        number *= power
    else:
        number, rest = divmod(number, power)
        if rest:
            raise ValueError(f"Decimal {value} has more digits than scale {scale}")
    return -number if sign else number


def _decimal(schema: Schema, unscaled: int) -> Decimal:
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return Decimal((int(unscaled < 0), digits, -_scale(schema)))


def decimal_scaled(schema: Schema, value: Decimal) -> Decimal:
    """``value`` at the exact scale of a ``Decimal`` schema; ``ValueError`` if digits are lost."""
    return _decimal(schema, _unscaled(schema, value))


def logical_to_raw(schema: Schema, value: Any) -> Any:
    """A logical value (``Decimal``, ``date``, ``time``, ``datetime``) as its schema type's."""
    name = schema.name
    if name == DECIMAL and isinstance(value, Decimal):
        unscaled = _unscaled(schema, value)
        bits = (~unscaled if unscaled < 0 else unscaled).bit_length()
        return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
    if name == TIMESTAMP and isinstance(value, dt.datetime):
        return datetime_to_millis(value)
    if name == DATE and isinstance(value, dt.date):
        if isinstance(value, dt.datetime):
            millis = datetime_to_millis(value)
            if millis % MILLIS_PER_DAY:
                raise ValueError("Kafka Connect Date type should not have any time fields set")
            return millis // MILLIS_PER_DAY
        return (value - EPOCH_DATE).days
    if name == TIME and isinstance(value, dt.time):
        return time_to_millis(value)
    raise ValueError(f"Invalid value for {name}: {type(value).__name__}")


def raw_to_logical(schema: Schema, raw: Any) -> Any:
    """The logical value of a schema-typed value (the inverse of :func:`logical_to_raw`)."""
    name = schema.name
    if name == DECIMAL and isinstance(raw, bytes | bytearray):
        return _decimal(schema, int.from_bytes(raw, "big", signed=True))
    if isinstance(raw, int) and not isinstance(raw, bool):
        if name == TIMESTAMP:
            return millis_to_datetime(raw)
        if name == DATE:
            return EPOCH_DATE + dt.timedelta(days=raw)
        if name == TIME:
            return millis_to_time(raw)
    raise ValueError(f"Invalid value for {name}: {raw!r}")


# Java's toString, which Kafka's StringConverter and Cast use.


def java_double(value: float) -> str:
    """``Double.toString``: ``1.0``, ``1.0E7``, ``1.5E-5``, ``NaN``, ``Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(float(value))).as_tuple()
    assert isinstance(exponent, int)
    power = len(digits) - 1 + exponent
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def java_string(value: Any) -> str:
    """What Java's ``toString`` (or Kafka's date formats) makes of a Connect value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, dt.datetime):
        millis = datetime_to_millis(value)
        return millis_to_datetime(millis).strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if value is None:
        return "null"
    return str(value)
