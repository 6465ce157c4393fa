"""Cast, SetSchemaMetadata and TimestampConverter.

Expected values are written out by hand.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from sluice.connect.api.data import (
    Field,
    Schema,
    Struct,
)
from sluice.connect.api.errors import TransformError
from sluice.connect.api.logical import date_schema, time_schema, timestamp_schema
from sluice.errors import ConfigError
from tests.connect.transform_helpers import (
    PERSON,
    TS,
    TS_DATETIME,
    apply,
    make,
    person,
    raises,
    record,
)

# --- Cast ---------------------------------------------------------------------------------------


def test_cast_schemaless_fields() -> None:
    spec = "a:int8,b:int16,c:int32,d:int64,e:float32,f:float64,g:boolean,h:string,i:string"
    value = {
        "a": 300,
        "b": 70000,
        "c": "123",
        "d": -1.9,
        "e": "2.5",
        "f": True,
        "g": "TRUE",
        "h": 1e7,
        "i": b"\x00\x01",
        "other": "kept",
    }
    out = apply("Cast$Value", {"spec": spec}, record(value))
    assert out.value == {
        "a": 44,
        "b": 4464,
        "c": 123,
        "d": -1,
        "e": 2.5,
        "f": 1.0,
        "g": True,
        "h": "1.0E7",
        "i": "AAE=",
        "other": "kept",
    }


def test_cast_whole_value() -> None:
    assert apply("Cast$Value", {"spec": "int32"}, record("42")).value == 42
    assert apply("Cast$Key", {"spec": "string"}, record(key=False)).key == "false"
    assert apply("Cast$Value", {"spec": "boolean"}, record(0.5)).value is False
    out = apply("Cast$Value", {"spec": "string"}, record(5, Schema("int64", optional=True)))
    assert (out.value_schema, out.value) == (Schema("string", optional=True), "5")
    ts = apply("Cast$Value", {"spec": "STRING"}, record(TS_DATETIME, timestamp_schema()))
    assert (ts.value_schema, ts.value) == (Schema("string"), "2023-11-14T22:13:20.123Z")
    day = apply("Cast$Value", {"spec": "string"}, record(dt.date(2023, 11, 14), date_schema()))
    assert day.value == "2023-11-14"
    at = apply("Cast$Value", {"spec": "string"}, record(dt.time(9, 5, 1), time_schema()))
    assert at.value == "09:05:01.000Z"
    tombstone = record(None)
    assert make("Cast$Value", {"spec": "int8"}).apply(tombstone) is tombstone


def test_cast_with_schema() -> None:
    schema = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("score", Schema("float64", optional=True, default=1.5)),
            Field("name", Schema("string")),
        ],
        name="Row",
    )
    value = Struct(schema, {"id": 3, "score": 9.75, "name": "x"})
    out = apply("Cast$Value", {"spec": "id:string,score:int32"}, record(value, schema))
    cast_schema = Schema.struct(
        [
            Field("id", Schema("string")),
            Field("score", Schema("int32", optional=True, default=1)),
            Field("name", Schema("string")),
        ],
        name="Row",
    )
    assert out.value_schema == cast_schema
    assert out.value == Struct(cast_schema, {"id": "3", "score": 9, "name": "x"})
    decimal = Schema.struct(
        [
            Field(
                "d",
                Schema(
                    "bytes",
                    name="org.apache.kafka.connect.data.Decimal",
                    version=1,
                    parameters=(("scale", "2"),),
                ),
            )
        ]
    )
    price = apply(
        "Cast$Value",
        {"spec": "d:float64"},
        record(Struct(decimal, {"d": Decimal("1.25")}), decimal),
    )
    assert price.value.values == {"d": 1.25}


def test_cast_errors() -> None:
    with raises(TransformError, "Value (abc) was out of range for requested data type"):
        make("Cast$Value", {"spec": "int32"}).apply(record("abc"))
    with raises(TransformError, "Value (300) was out of range for requested data type"):
        make("Cast$Value", {"spec": "int8"}).apply(record("300"))
    with raises(TransformError, "does not support casting from STRUCT"):
        make("Cast$Value", {"spec": "string"}).apply(record(person(), PERSON))
    with raises(TransformError, "Cast transformation was passed a value of type Decimal"):
        make("Cast$Value", {"spec": "int8"}).apply(record(Decimal(1)))
    with raises(TransformError, "Unexpected type in Cast transformation: bytes"):
        make("Cast$Value", {"spec": "int8"}).apply(record(b"1"))
    with raises(ConfigError, "spec: Cast transformation does not support casting to BYTES"):
        make("Cast$Value", {"spec": "a:bytes"})
    with raises(ConfigError, "spec: Invalid type found in casting spec: uint8"):
        make("Cast$Value", {"spec": "a:uint8"})
    with raises(ConfigError, "spec: Cast transformations that specify a type to cast the entire"):
        make("Cast$Value", {"spec": "int8,a:int16"})
    with raises(ConfigError, "spec: Must specify at least one field to cast."):
        make("Cast$Value", {"spec": ""})


# --- SetSchemaMetadata -------------------------------------------------------------------------


def test_set_schema_metadata() -> None:
    config = {"schema.name": "com.example.V2", "schema.version": "2"}
    out = apply("SetSchemaMetadata$Value", config, record(person(), PERSON))
    renamed = dataclasses.replace(PERSON, name="com.example.V2", version=2)
    assert (out.value_schema, out.value) == (renamed, Struct(renamed, {"id": 7, "name": "Ada"}))
    key = apply(
        "SetSchemaMetadata$Key",
        {"schema.version": "5"},
        record(key=3, key_schema=Schema("int32", name="N")),
    )
    assert (key.key_schema, key.key) == (Schema("int32", name="N", version=5), 3)
    null = apply(
        "SetSchemaMetadata$Value",
        {"schema.name": "X"},
        record(None, Schema("string", optional=True)),
    )
    assert (null.value_schema, null.value) == (Schema("string", optional=True, name="X"), None)


def test_set_schema_metadata_errors() -> None:
    with raises(TransformError, "Schema required for [updating schema metadata]"):
        make("SetSchemaMetadata$Value", {"schema.name": "X"}).apply(record({"a": 1}))
    with raises(ConfigError, "Neither schema name nor version configured"):
        make("SetSchemaMetadata$Value", {})
    with raises(ConfigError, "schema.version: must be an integer, not 'two'"):
        make("SetSchemaMetadata$Value", {"schema.version": "two"})


# --- TimestampConverter -------------------------------------------------------------------------


def test_timestamp_converter_schemaless() -> None:
    to_text = {"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS"}
    out = apply("TimestampConverter$Value", to_text, record({"at": TS, "x": 1}))
    assert out.value == {"at": "2023-11-14 22:13:20.123", "x": 1}
    to_unix = {"field": "at", "target.type": "unix", "format": "yyyy-MM-dd HH:mm:ss.SSS"}
    back = apply("TimestampConverter$Value", to_unix, record(out.value))
    assert back.value == {"at": TS, "x": 1}
    seconds = {"target.type": "unix", "unix.precision": "seconds"}
    assert apply("TimestampConverter$Value", seconds, record(TS_DATETIME)).value == 1_700_000_000
    micros = {"target.type": "Timestamp", "unix.precision": "microseconds"}
    as_ts = apply("TimestampConverter$Key", micros, record(key=1_700_000_000_123_456))
    assert as_ts.key == TS_DATETIME
    nanos = {"target.type": "unix", "unix.precision": "nanoseconds"}
    assert apply("TimestampConverter$Value", nanos, record(TS_DATETIME)).value == TS * 1_000_000
    # The precision reads integers too: TS nanoseconds are 1 700 000 ms, truncated.
    assert apply("TimestampConverter$Value", nanos, record(TS)).value == 1_700_000 * 1_000_000
    day = apply("TimestampConverter$Value", {"target.type": "Date"}, record(TS_DATETIME))
    assert day.value == dt.date(2023, 11, 14)
    time = apply("TimestampConverter$Value", {"target.type": "Time"}, record(TS))
    assert time.value == dt.time(22, 13, 20, 123000)
    assert apply("TimestampConverter$Value", {"target.type": "unix"}, record(None)).value is None


def test_timestamp_converter_with_schema() -> None:
    schema = Schema.struct(
        [Field("id", Schema("int64")), Field("at", Schema("int64", optional=True))], name="E"
    )
    config = {"field": "at", "target.type": "Timestamp"}
    out = apply(
        "TimestampConverter$Value", config, record(Struct(schema, {"id": 1, "at": TS}), schema)
    )
    converted = Schema.struct(
        [Field("id", Schema("int64")), Field("at", timestamp_schema(optional=True))], name="E"
    )
    assert out.value_schema == converted
    assert out.value == Struct(converted, {"id": 1, "at": TS_DATETIME})
    whole = {"target.type": "string", "format": "yyyyMMdd"}
    day = apply("TimestampConverter$Value", whole, record(dt.date(2024, 2, 29), date_schema()))
    assert (day.value_schema, day.value) == (Schema("string"), "20240229")
    text = Schema("string", optional=True)
    parsed = apply(
        "TimestampConverter$Value",
        {"target.type": "Date", "format": "dd/MM/yyyy"},
        record("29/02/2024", text),
    )
    assert (parsed.value_schema, parsed.value) == (date_schema(optional=True), dt.date(2024, 2, 29))


def test_timestamp_converter_errors() -> None:
    with raises(ConfigError, "target.type: must be one of string, unix, Date, Time, Timestamp"):
        make("TimestampConverter$Value", {"target.type": "date"})
    with raises(ConfigError, "format: TimestampConverter requires format option"):
        make("TimestampConverter$Value", {"target.type": "string"})
    with raises(ConfigError, "format: TimestampConverter requires a SimpleDateFormat-compatible"):
        make("TimestampConverter$Value", {"target.type": "string", "format": "yyyy-bb"})
    with raises(ConfigError, "unix.precision: must be one of"):
        make("TimestampConverter$Value", {"target.type": "unix", "unix.precision": "days"})
    parse = make("TimestampConverter$Value", {"target.type": "unix", "format": "yyyy-MM-dd"})
    with raises(TransformError, "Could not parse timestamp: value (May 1st) does not match"):
        parse.apply(record("May 1st"))
    with raises(TransformError, "TimestampConverter does not support float objects"):
        parse.apply(record(1.5))
    with raises(TransformError, "does not correspond to a known timestamp type format"):
        parse.apply(record(1, Schema("int32")))
    with raises(TransformError, "Expected Unix timestamp to be a Long, but found str"):
        parse.apply(record("1", Schema("int64")))


def test_cast_passes_null_with_a_schema() -> None:
    tombstone = record(None, Schema("int64", optional=True))
    assert make("Cast$Value", {"spec": "string"}).apply(tombstone) is tombstone
    assert make("Cast$Value", {"spec": "id:string"}).apply(record(None, PERSON)).value is None
