"""``TimestampConverter`` and ``TimestampRouter``, with Kafka's settings.

TimestampConverter converts a ``field`` (or, with no field, the whole key or value) between
``target.type`` representations: ``string`` (text in ``format``, a ``SimpleDateFormat`` pattern,
UTC), ``unix`` (an integer in ``unix.precision``: ``seconds``, ``milliseconds``, ``microseconds``
or ``nanoseconds``), ``Date`` (``datetime.date``), ``Time`` (``datetime.time``) and ``Timestamp``
(an aware UTC ``datetime``). The input type comes from the schema (logical name, ``string`` or
``int64``) or, schemaless, from the Python type. Like Kafka, conversions keep millisecond precision.

TimestampRouter renames the topic from ``topic.format`` (``${topic}-${timestamp}``), formatting the
record's timestamp with ``timestamp.format`` (``yyyyMMdd``).

>>> from sluice.connect.api.data import ConnectRecord
>>> convert = TimestampConverterValue()
>>> convert.configure({"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm"})
>>> convert.apply(ConnectRecord("t", 0, None, None, None, {"at": 1_700_000_000_000})).value
{'at': '2023-11-14 22:13'}
>>> router = TimestampRouter()
>>> router.configure({})
>>> router.apply(ConnectRecord("logs", 0, None, None, None, "x", timestamp=1_700_000_000_000)).topic
'logs-20231114'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import TransformError
from sluice.connect.api.logical import (
    DATE,
    MILLIS_PER_DAY,
    TIME,
    TIMESTAMP,
    date_schema,
    datetime_to_millis,
    millis_to_datetime,
    time_schema,
    time_to_millis,
    timestamp_schema,
)
from sluice.connect.api.transform import (
    REPLACE_NULL,
    ConfigKey,
    KeyOrValueTransformation,
    R,
    SchemaCache,
    Settings,
    Transformation,
    copy_schema_basics,
    require_map,
    require_struct,
    struct_value,
    type_name,
)
from sluice.connect.transforms._dateformat import JavaDateFormat
from sluice.errors import ConfigError

__all__ = [
    "TimestampConverter",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
]

TYPES = ("string", "unix", "Date", "Time", "Timestamp")
PRECISIONS = {"seconds": 1_000, "milliseconds": 1, "microseconds": 1_000, "nanoseconds": 1_000_000}


def _java_divide(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Java's ``/`` and ``TimeUnit`` do."""
    quotient = abs(a) // b
    return quotient if a >= 0 else -quotient


def _millis_of(value: Any, kind: str) -> int:
    """Epoch milliseconds of a ``datetime``, ``date`` or ``time`` value."""
    if isinstance(value, dt.datetime):
        return datetime_to_millis(value)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days * MILLIS_PER_DAY
    if isinstance(value, dt.time):
        return time_to_millis(value)
    raise TransformError(f"Expected {kind} to be a datetime, but found {type_name(value)}")


def _schema_for(kind: str, optional: bool) -> Schema:
    if kind == "string":
        return Schema("string", optional=optional)
    if kind == "unix":
        return Schema("int64", optional=optional)
    factory = {"Date": date_schema, "Time": time_schema, "Timestamp": timestamp_schema}[kind]
    return factory(optional=optional)


def _kind_of_schema(schema: Schema) -> str:
    named = {TIMESTAMP: "Timestamp", DATE: "Date", TIME: "Time"}.get(schema.name or "")
    if named is not None:
        return named
    if schema.type == "string":
        return "string"
    if schema.type == "int64":
        return "unix"
    raise TransformError(
        f"Schema {schema.type} {schema.name or ''} does not correspond to a known timestamp type "
        "format"
    )


def _kind_of_value(value: Any) -> str:
    for kinds, name in (
        (dt.datetime, "Timestamp"),
        (dt.date, "Date"),
        (dt.time, "Time"),
        (str, "string"),
    ):
        if isinstance(value, kinds):
            return name
    if isinstance(value, int) and not isinstance(value, bool):
        return "unix"
    raise TransformError(
        f"TimestampConverter does not support {type_name(value)} objects as timestamps"
    )


class TimestampConverter(KeyOrValueTransformation):
    """Convert timestamps between text, Unix epoch and Connect's Date/Time/Timestamp types
    (Kafka's ``TimestampConverter``)."""

    CONFIG = (
        ConfigKey(
            "field",
            "string",
            "The field containing the timestamp, or empty if the entire value is a timestamp",
            "",
        ),
        ConfigKey(
            "target.type",
            "string",
            "The desired timestamp representation: string, unix, Date, Time, or Timestamp",
            choices=TYPES,
        ),
        ConfigKey(
            "format",
            "string",
            "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output "
            "when type=string or used to parse the input if the input is a string.",
            "",
        ),
        ConfigKey(
            "unix.precision",
            "string",
            "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, "
            "or nanoseconds. Used to generate the output when type=unix or used to parse the "
            "input if the input is a Long.",
            "milliseconds",
            choices=tuple(PRECISIONS),
        ),
        REPLACE_NULL,
    )

    def setup(self, settings: Settings) -> None:
        self.field = settings.string("field")
        self.target = settings.string("target.type")
        pattern = settings.string("format")
        self.precision = settings.string("unix.precision")
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        if self.target == "string" and not pattern.strip():
            raise ConfigError(
                "TimestampConverter requires format option to be specified when using string "
                "timestamps",
                key="format",
            )
        self.format: JavaDateFormat | None = None
        if pattern.strip():
            try:
                self.format = JavaDateFormat(pattern)
            except ValueError as error:
                raise ConfigError(
                    f"TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
                    f"timestamps: {pattern} ({error})",
                    key="format",
                ) from None
        self._schemas = SchemaCache()

    def _to_millis(self, value: Any, kind: str) -> int:
        if kind == "string":
            if not isinstance(value, str):
                raise TransformError(
                    f"Expected string timestamp to be a String, but found {type_name(value)}"
                )
            if self.format is None:
                raise TransformError("TimestampConverter needs a format to parse string timestamps")
            try:
                return self.format.parse(value)
            except ValueError as error:
                raise TransformError(f"Could not parse timestamp: {error}") from None
        if kind == "unix":
            if not isinstance(value, int) or isinstance(value, bool):
                raise TransformError(
                    f"Expected Unix timestamp to be a Long, but found {type_name(value)}"
                )
            if self.precision == "seconds":
                return value * 1000
            return _java_divide(value, PRECISIONS[self.precision])
        return _millis_of(value, kind)

    def _from_millis(self, millis: int) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            if self.precision == "seconds":
                return _java_divide(millis, 1000)
            return millis * PRECISIONS[self.precision]
        moment = millis_to_datetime(millis)
        if self.target == "Date":
            return moment.date()
        if self.target == "Time":
            return moment.time()
        return moment

    def convert(self, value: Any, kind: str | None = None) -> Any:
        """``value`` (of ``kind``, else inferred from its Python type) as the target type."""
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, kind or _kind_of_value(value)))

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if schema is None:
            if not self.field:
                return self.updated(record, None, self.convert(value))
            if value is None:
                return record
            updated = dict(require_map(value, "converting timestamp formats"))
            updated[self.field] = self.convert(updated.get(self.field))
            return self.updated(record, None, updated)
        if not self.field:
            target = _schema_for(self.target, schema.optional)
            return self.updated(record, target, self.convert(value, _kind_of_schema(schema)))
        new_schema = self._schemas.get(schema) or self._schemas.put(
            schema, self._updated_schema(schema)
        )
        if value is None:
            return self.updated(record, new_schema, None)
        struct = require_struct(value, "converting timestamp formats")
        values = {}
        for f in struct.schema.fields:
            field_value = struct_value(struct, f, self.replace_null_with_default)
            if f.name == self.field:
                field_value = self.convert(field_value, _kind_of_schema(f.schema))
            values[f.name] = field_value
        return self.updated(record, new_schema, Struct(new_schema, values))

    def _updated_schema(self, schema: Schema) -> Schema:
        fields = [
            Field(f.name, _schema_for(self.target, f.schema.optional))
            if f.name == self.field
            else f
            for f in schema.fields
        ]
        updated = copy_schema_basics(schema, fields=fields)
        return dataclasses.replace(updated, optional=schema.optional)


class TimestampConverterKey(TimestampConverter):
    """``TimestampConverter$Key``: convert the key or one of its fields."""

    SIDE = "key"


class TimestampConverterValue(TimestampConverter):
    """``TimestampConverter$Value``: convert the value or one of its fields."""

    SIDE = "value"


class TimestampRouter(Transformation):
    """Route a record to a topic named from its topic and timestamp (Kafka's ``TimestampRouter``).

    A record without a timestamp raises :class:`~sluice.connect.TransformError`.
    """

    CONFIG = (
        ConfigKey(
            "topic.format",
            "string",
            "Format string which can contain ${topic} and ${timestamp} as placeholders for the "
            "topic and timestamp, respectively.",
            "${topic}-${timestamp}",
        ),
        ConfigKey(
            "timestamp.format",
            "string",
            "Format string for the timestamp that is compatible with java.text.SimpleDateFormat.",
            "yyyyMMdd",
        ),
    )

    def setup(self, settings: Settings) -> None:
        self.topic_format = settings.string("topic.format")
        try:
            self.timestamp_format = JavaDateFormat(settings.string("timestamp.format"))
        except ValueError as error:
            raise ConfigError(str(error), key="timestamp.format") from None

    def apply(self, record: R) -> R:
        if record.timestamp is None:
            raise TransformError(f"Timestamp missing on record: {record.topic}")
        topic = self.topic_format.replace("${topic}", record.topic).replace(
            "${timestamp}", self.timestamp_format.format(record.timestamp)
        )
        return record.new_record(topic=topic)  # type: ignore[no-any-return]
