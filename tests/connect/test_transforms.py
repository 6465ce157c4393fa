"""Every transformation, schemaless and with a schema, Key and Value; the chain built from config.

Expected values are written out by hand.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest

from sluice.connect.data import (
    ConnectRecord,
    Field,
    Header,
    Schema,
    SinkRecord,
    SourceRecord,
    Struct,
)
from sluice.connect.errors import TransformError
from sluice.connect.logical import EPOCH, date_schema, time_schema, timestamp_schema
from sluice.connect.transforms import (
    TRANSFORMS,
    Transformation,
    TransformChain,
    transform_class,
)
from sluice.errors import ConfigError

UTC = dt.UTC
TS = 1_700_000_000_123  # 2023-11-14T22:13:20.123Z
TS_DATETIME = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)

PERSON = Schema.struct(
    [Field("id", Schema("int64")), Field("name", Schema("string", optional=True))],
    name="com.example.Person",
)


def person(id: int = 7, name: str | None = "Ada") -> Struct:
    return Struct(PERSON, {"id": id, "name": name})


def raises(kind: type[Exception], text: str) -> pytest.RaisesContext[Exception]:
    """``pytest.raises`` for an exception whose message contains ``text``."""
    return pytest.raises(kind, match=re.escape(text))


def record(
    value: Any = None,
    value_schema: Schema | None = None,
    *,
    key: Any = None,
    key_schema: Schema | None = None,
    topic: str = "orders",
    timestamp: int | None = TS,
    headers: list[Header] | None = None,
) -> SourceRecord:
    return SourceRecord(
        {"file": "a"},
        {"pos": 1},
        topic,
        3,
        value_schema,
        value,
        key_schema=key_schema,
        key=key,
        timestamp=timestamp,
        headers=headers,
    )


def sink_record(value: Any, value_schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("orders", 3, None, "k", value_schema, value, TS, [], kafka_offset=42)


def make(name: str, config: dict[str, Any] | None = None) -> Transformation:
    transformation = transform_class(name)()
    transformation.configure(config or {})
    return transformation


def apply(name: str, config: dict[str, Any], rec: ConnectRecord) -> Any:
    out = make(name, config).apply(rec)
    assert out is not None
    return out


# --- InsertField --------------------------------------------------------------------------------


def test_insert_field_schemaless() -> None:
    config = {
        "topic.field": "topic",
        "partition.field": "part",
        "timestamp.field": "ts",
        "static.field": "env",
        "static.value": "prod",
    }
    original = record({"id": 7}, key="k")
    out = apply("InsertField$Value", config, original)
    assert out.value == {"id": 7, "topic": "orders", "part": 3, "ts": TS, "env": "prod"}
    assert out.key == "k"
    assert original.value == {"id": 7}, "the input record must not change"
    assert out.source_offset == {"pos": 1}
    key_out = apply("InsertField$Key", {"topic.field": "t"}, record("v", key={"id": 1}))
    assert (key_out.key, key_out.value) == ({"id": 1, "t": "orders"}, "v")


def test_insert_field_with_schema() -> None:
    config = {"topic.field": "topic!", "partition.field": "part", "timestamp.field": "ts?"}
    out = apply("InsertField$Value", config, record(person(), PERSON))
    expected_schema = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("name", Schema("string", optional=True)),
            Field("topic", Schema("string")),
            Field("part", Schema("int32", optional=True)),
            Field("ts", timestamp_schema(optional=True)),
        ],
        name="com.example.Person",
    )
    assert out.value_schema == expected_schema
    assert out.value == Struct(
        expected_schema,
        {"id": 7, "name": "Ada", "topic": "orders", "part": 3, "ts": TS_DATETIME},
    )


def test_insert_field_offset_needs_a_sink_record() -> None:
    out = apply("InsertField$Value", {"offset.field": "offset"}, sink_record({"id": 1}))
    assert out.value == {"id": 1, "offset": 42}
    assert isinstance(out, SinkRecord) and out.kafka_offset == 42
    with raises(TransformError, "Only SinkRecord supported for [field insertion]"):
        make("InsertField$Value", {"offset.field": "offset"}).apply(record({"id": 1}))


def test_insert_field_missing_metadata_and_tombstones() -> None:
    no_ts = record({"id": 1}, timestamp=None)
    assert apply("InsertField$Value", {"timestamp.field": "ts"}, no_ts).value == {"id": 1}
    tombstone = record(None)
    assert make("InsertField$Value", {"topic.field": "t"}).apply(tombstone) is tombstone
    with raises(TransformError, "Only Map objects supported in absence of schema"):
        make("InsertField$Value", {"topic.field": "t"}).apply(record("text"))
    with raises(TransformError, "Only Struct objects supported for [field insertion], found: dict"):
        make("InsertField$Value", {"topic.field": "t"}).apply(record({"a": 1}, PERSON))


def test_insert_field_config_errors() -> None:
    with raises(ConfigError, "No field insertion configured"):
        make("InsertField$Value", {})
    with raises(ConfigError, "static.value: No value specified for static field: env"):
        make("InsertField$Value", {"static.field": "env"})


# --- ReplaceField -------------------------------------------------------------------------------


def test_replace_field_schemaless() -> None:
    value = {"id": 1, "name": "Ada", "card": "4111", "city": "Paris"}
    out = apply(
        "ReplaceField$Value", {"exclude": "card", "renames": "name:full_name"}, record(value)
    )
    assert out.value == {"id": 1, "full_name": "Ada", "city": "Paris"}
    only = apply("ReplaceField$Value", {"include": "id, card", "exclude": "card"}, record(value))
    assert only.value == {"id": 1}
    key = apply("ReplaceField$Key", {"renames": "id:key_id"}, record("v", key={"id": 1}))
    assert (key.key, key.value) == ({"key_id": 1}, "v")


def test_replace_field_with_schema() -> None:
    out = apply("ReplaceField$Value", {"renames": "id:person_id,name:n"}, record(person(), PERSON))
    renamed = Schema.struct(
        [Field("person_id", Schema("int64")), Field("n", Schema("string", optional=True))],
        name="com.example.Person",
    )
    assert out.value_schema == renamed
    assert out.value == Struct(renamed, {"person_id": 7, "n": "Ada"})
    dropped = apply("ReplaceField$Value", {"exclude": "name"}, record(person(), PERSON))
    assert dropped.value == Struct(
        Schema.struct([Field("id", Schema("int64"))], name="com.example.Person"), {"id": 7}
    )


def test_replace_field_null_with_default() -> None:
    schema = Schema.struct([Field("n", Schema("int32", optional=True, default=5))])
    value = Struct(schema, {"n": None})
    assert apply("ReplaceField$Value", {}, record(value, schema)).value.values == {"n": 5}
    keep = {"replace.null.with.default": "false"}
    assert apply("ReplaceField$Value", keep, record(value, schema)).value.values == {"n": None}


def test_replace_field_errors_and_tombstones() -> None:
    with raises(ConfigError, "renames: Invalid rename mapping: a:b:c"):
        make("ReplaceField$Value", {"renames": "a:b:c"})
    with raises(ConfigError, "replace.null.with.default: must be true or false, not 'maybe'"):
        make("ReplaceField$Value", {"replace.null.with.default": "maybe"})
    tombstone = record(None, PERSON)
    assert make("ReplaceField$Value", {"exclude": "id"}).apply(tombstone) is tombstone


# --- MaskField ----------------------------------------------------------------------------------


def test_mask_field_schemaless_uses_the_empty_value_of_each_type() -> None:
    value = {
        "n": 5,
        "f": 1.5,
        "s": "secret",
        "b": True,
        "l": [1],
        "m": {"a": 1},
        "d": Decimal("9.99"),
        "ts": TS_DATETIME,
        "day": dt.date(2024, 5, 6),
        "at": dt.time(12, 30),
        "keep": "visible",
    }
    fields = "n,f,s,b,l,m,d,ts,day,at,missing"
    out = apply("MaskField$Value", {"fields": fields}, record(value))
    assert out.value == {
        "n": 0,
        "f": 0.0,
        "s": "",
        "b": False,
        "l": [],
        "m": {},
        "d": Decimal(0),
        "ts": EPOCH,
        "day": dt.date(1970, 1, 1),
        "at": dt.time(0),
        "keep": "visible",
        "missing": None,  # Kafka puts every listed field
    }


def test_mask_field_replacement() -> None:
    value = {"n": 5, "f": 2.5, "s": "secret", "d": Decimal("1.5")}
    out = apply("MaskField$Value", {"fields": "n,f,s,d", "replacement": "0"}, record(value))
    assert out.value == {"n": 0, "f": 0.0, "s": "0", "d": Decimal("0")}
    stars = apply("MaskField$Key", {"fields": "s", "replacement": "***"}, record(key={"s": "x"}))
    assert stars.key == {"s": "***"}
    with raises(TransformError, "Unable to convert *** to number"):
        make("MaskField$Value", {"fields": "n", "replacement": "***"}).apply(record({"n": 1}))
    with raises(TransformError, "Cannot mask value of type bool with custom replacement."):
        make("MaskField$Value", {"fields": "b", "replacement": "x"}).apply(record({"b": True}))
    with raises(TransformError, "Cannot mask value of type: bytes"):
        make("MaskField$Value", {"fields": "b"}).apply(record({"b": b"\x00"}))


def test_mask_field_with_schema() -> None:
    out = apply("MaskField$Value", {"fields": "name"}, record(person(), PERSON))
    assert out.value_schema == PERSON
    assert out.value == Struct(PERSON, {"id": 7, "name": ""})
    nulls = apply("MaskField$Value", {"fields": "name"}, record(person(name=None), PERSON))
    assert nulls.value == Struct(PERSON, {"id": 7, "name": None})


def test_mask_field_config_errors() -> None:
    with raises(ConfigError, "fields: required"):
        make("MaskField$Value", {})
    with raises(ConfigError, "fields: Empty list"):
        make("MaskField$Value", {"fields": " , "})
    with raises(ConfigError, "replacement: String may not be empty"):
        make("MaskField$Value", {"fields": "a", "replacement": ""})


# --- ValueToKey ---------------------------------------------------------------------------------


def test_value_to_key() -> None:
    out = apply("ValueToKey", {"fields": "id,name"}, record({"id": 1, "name": "Ada", "x": 2}))
    assert (out.key_schema, out.key) == (None, {"id": 1, "name": "Ada"})
    assert out.value == {"id": 1, "name": "Ada", "x": 2}
    with_schema = apply("ValueToKey", {"fields": "name"}, record(person(), PERSON))
    key_schema = Schema.struct([Field("name", Schema("string", optional=True))])
    assert with_schema.key_schema == key_schema
    assert with_schema.key == Struct(key_schema, {"name": "Ada"})
    assert with_schema.value == person()


def test_value_to_key_errors() -> None:
    with raises(TransformError, "Field does not exist: nope"):
        make("ValueToKey", {"fields": "nope"}).apply(record(person(), PERSON))
    with raises(TransformError, "Only Map objects supported"):
        make("ValueToKey", {"fields": "id"}).apply(record(None))
    with raises(ConfigError, "fields: Duplicate fields are not allowed"):
        make("ValueToKey", {"fields": "a,a"})
    with raises(ConfigError, "fields: required"):
        make("ValueToKey", {})


# --- ExtractField -------------------------------------------------------------------------------


def test_extract_field() -> None:
    out = apply("ExtractField$Value", {"field": "id"}, record({"id": 1, "x": 2}))
    assert (out.value_schema, out.value) == (None, 1)
    missing = apply("ExtractField$Value", {"field": "nope"}, record({"id": 1}))
    assert missing.value is None
    key = apply("ExtractField$Key", {"field": "id"}, record("v", key={"id": 9}))
    assert (key.key, key.value) == (9, "v")
    typed = apply("ExtractField$Value", {"field": "name"}, record(person(), PERSON))
    assert (typed.value_schema, typed.value) == (Schema("string", optional=True), "Ada")
    null = apply("ExtractField$Value", {"field": "id"}, record(None, PERSON))
    assert (null.value_schema, null.value) == (Schema("int64"), None)
    assert apply("ExtractField$Value", {"field": "id"}, record(None)).value is None


def test_extract_field_errors() -> None:
    with raises(TransformError, "Unknown field: nope"):
        make("ExtractField$Value", {"field": "nope"}).apply(record(person(), PERSON))
    with raises(TransformError, "Only Map objects supported"):
        make("ExtractField$Value", {"field": "id"}).apply(record([1]))
    with raises(ConfigError, "field: required"):
        make("ExtractField$Value", {})


# --- HoistField ---------------------------------------------------------------------------------


def test_hoist_field() -> None:
    assert apply("HoistField$Value", {"field": "n"}, record(42)).value == {"n": 42}
    assert apply("HoistField$Value", {"field": "n"}, record(None)).value == {"n": None}
    out = apply("HoistField$Key", {"field": "id"}, record("v", key=5, key_schema=Schema("int64")))
    hoisted = Schema.struct([Field("id", Schema("int64"))])
    assert (out.key_schema, out.key, out.value) == (hoisted, Struct(hoisted, {"id": 5}), "v")
    nested = apply("HoistField$Value", {"field": "p"}, record(person(), PERSON))
    assert nested.value == Struct(Schema.struct([Field("p", PERSON)]), {"p": person()})


# --- Flatten ------------------------------------------------------------------------------------


def test_flatten_schemaless() -> None:
    value = {"a": {"b": 1, "c": {"d": "x"}}, "l": [{"k": 1}], "n": None, "e": {}}
    out = apply("Flatten$Value", {}, record(value))
    assert out.value == {"a.b": 1, "a.c.d": "x", "l": [{"k": 1}], "n": None}
    dashed = apply("Flatten$Key", {"delimiter": "_"}, record(key={"a": {"b": True}}))
    assert dashed.key == {"a_b": True}
    with raises(TransformError, "Flatten transformation does not support Decimal"):
        make("Flatten$Value").apply(record({"a": {"b": Decimal(1)}}))
    tombstone = record(None)
    assert make("Flatten$Value").apply(tombstone) is tombstone


def test_flatten_with_schema() -> None:
    address = Schema.struct(
        [Field("city", Schema("string")), Field("zip", Schema("int32", default=75000))],
        optional=True,
    )
    schema = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("home", address),
            Field("tags", Schema("array", value_schema=Schema("string"))),
        ],
        name="com.example.Customer",
    )
    flat = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("home.city", Schema("string", optional=True)),
            Field("home.zip", Schema("int32", optional=True, default=75000)),
            Field("tags", Schema("array", value_schema=Schema("string"))),
        ],
        name="com.example.Customer",
    )
    value = Struct(
        schema, {"id": 1, "home": Struct(address, {"city": "Paris", "zip": 75001}), "tags": ["a"]}
    )
    out = apply("Flatten$Value", {}, record(value, schema))
    assert out.value_schema == flat
    assert out.value == Struct(
        flat, {"id": 1, "home.city": "Paris", "home.zip": 75001, "tags": ["a"]}
    )
    homeless = Struct(schema, {"id": 2, "home": None, "tags": []})
    assert apply("Flatten$Value", {}, record(homeless, schema)).value == Struct(
        flat, {"id": 2, "home.city": None, "home.zip": None, "tags": []}
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


# --- TimestampRouter and RegexRouter ------------------------------------------------------------


def test_timestamp_router() -> None:
    out = apply("TimestampRouter", {}, record("v"))
    assert (out.topic, out.kafka_partition, out.value) == ("orders-20231114", 3, "v")
    custom = {"topic.format": "${timestamp}.${topic}", "timestamp.format": "yyyy-MM"}
    assert apply("TimestampRouter", custom, record("v")).topic == "2023-11.orders"
    with raises(TransformError, "Timestamp missing on record: orders"):
        make("TimestampRouter").apply(record("v", timestamp=None))
    with raises(ConfigError, "timestamp.format: Illegal pattern character 'b'"):
        make("TimestampRouter", {"timestamp.format": "bb"})


def test_regex_router() -> None:
    config = {"regex": "(.*)-(staging|prod)", "replacement": "$2.$1"}
    assert apply("RegexRouter", config, record("v", topic="orders-prod")).topic == "prod.orders"
    untouched = record("v", topic="orders-prod-eu")
    assert make("RegexRouter", config).apply(untouched) is untouched
    named = {"regex": "(?<app>[a-z]+)_(?<n>\\d+)", "replacement": "${app}-v$2 \\$"}
    assert apply("RegexRouter", named, record("v", topic="shop_12")).topic == "shop-v12 $"
    # $12 reads as group 1 then "2" when there is no group 12, as in Java.
    assert (
        apply("RegexRouter", {"regex": "(a)", "replacement": "$12"}, record("v", topic="a")).topic
        == "a2"
    )


def test_regex_router_config_errors() -> None:
    with raises(ConfigError, "regex: invalid regex '(unclosed'"):
        make("RegexRouter", {"regex": "(unclosed", "replacement": "x"})
    with raises(ConfigError, "replacement: No group 2"):
        make("RegexRouter", {"regex": "(a)", "replacement": "$2"})
    with raises(ConfigError, "replacement: No group with name {x}"):
        make("RegexRouter", {"regex": "(a)", "replacement": "${x}"})
    with raises(ConfigError, "replacement: required"):
        make("RegexRouter", {"regex": "a"})


# --- Filter and the header transformations ------------------------------------------------------


def test_filter_drops_everything() -> None:
    assert make("org.apache.kafka.connect.transforms.Filter").apply(record("v")) is None


def test_header_from_schemaless() -> None:
    existing: list[Header] = [("h0", b"x")]
    value = {"id": 7, "name": "Ada", "city": "Paris"}
    config = {"fields": "id,name", "headers": "x-id,x-name", "operation": "copy"}
    copied = apply("HeaderFrom$Value", config, record(value, headers=existing))
    assert copied.value == value
    assert copied.headers == [("h0", b"x"), ("x-id", 7), ("x-name", "Ada")]
    moved = apply("HeaderFrom$Value", {**config, "operation": "move"}, record(value))
    assert (moved.value, moved.headers) == ({"city": "Paris"}, [("x-id", 7), ("x-name", "Ada")])
    key = apply("HeaderFrom$Key", {**config, "operation": "move"}, record("v", key={"id": 1}))
    assert (key.key, key.value, key.headers) == ({}, "v", [("x-id", 1), ("x-name", None)])


def test_header_from_with_schema() -> None:
    config = {"fields": "name", "headers": "who", "operation": "move"}
    out = apply("HeaderFrom$Value", config, record(person(), PERSON))
    remaining = Schema.struct([Field("id", Schema("int64"))], name="com.example.Person")
    assert (out.value_schema, out.value) == (remaining, Struct(remaining, {"id": 7}))
    assert out.headers == [("who", "Ada")]
    copied = apply("HeaderFrom$Value", {**config, "operation": "copy"}, record(person(), PERSON))
    assert (copied.value_schema, copied.value, copied.headers) == (
        PERSON,
        person(),
        [("who", "Ada")],
    )
    with raises(TransformError, "nope is not a valid field name"):
        make("HeaderFrom$Value", {**config, "fields": "nope"}).apply(record(person(), PERSON))


def test_header_from_config_errors() -> None:
    with raises(ConfigError, "headers: 'fields' config must have the same number of elements"):
        make("HeaderFrom$Value", {"fields": "a,b", "headers": "h", "operation": "copy"})
    with raises(ConfigError, "operation: must be one of move, copy, not 'cut'"):
        make("HeaderFrom$Value", {"fields": "a", "headers": "h", "operation": "cut"})


@pytest.mark.parametrize(
    ("literal", "value"),
    [("42", 42), ("-1.5", -1.5), ("true", True), ("FALSE", False), ("hello world", "hello world")],
)
def test_insert_header(literal: str, value: Any) -> None:
    out = apply(
        "InsertHeader", {"header": "h", "value.literal": literal}, record("v", headers=[("a", 1)])
    )
    assert out.headers == [("a", 1), ("h", value)]


def test_insert_header_config_errors() -> None:
    with raises(ConfigError, "header: required"):
        make("InsertHeader", {"value.literal": "x"})
    with raises(ConfigError, "value.literal: required"):
        make("InsertHeader", {"header": "h"})


def test_drop_headers() -> None:
    headers: list[Header] = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    out = apply("DropHeaders", {"headers": "a,c"}, record("v", headers=headers))
    assert out.headers == [("b", 2)]
    with raises(ConfigError, "headers: Empty list"):
        make("DropHeaders", {"headers": ""})


# --- The registry and the chain -----------------------------------------------------------------


@pytest.mark.parametrize("short", sorted(TRANSFORMS))
def test_every_kafka_transform_name_resolves(short: str) -> None:
    cls = transform_class(f"org.apache.kafka.connect.transforms.{short}")
    assert cls is transform_class(short) is TRANSFORMS[short]
    assert cls.__doc__, f"{cls.__name__} has no docstring"
    for key in cls.CONFIG:
        assert key.doc, f"{short}: {key.name} has no doc"


def test_unknown_transform_names() -> None:
    with raises(ConfigError, "unknown transformation 'InsertField'"):
        transform_class("InsertField")
    with raises(ConfigError, "unknown transformation 'org.apache.kafka.connect.transforms.Nope'"):
        transform_class("org.apache.kafka.connect.transforms.Nope")
    assert transform_class("sluice.connect.transforms.fields.InsertFieldValue").__name__ == (
        "InsertFieldValue"
    )


def chain(config: dict[str, Any]) -> TransformChain:
    return TransformChain.from_config(config)


def test_chain_applies_in_order_and_keeps_the_record_type() -> None:
    steps = chain(
        {
            "transforms": "insert, extract",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.offset.field": "offset",
            "transforms.extract.type": "ExtractField$Value",
            "transforms.extract.field": "offset",
        }
    )
    assert len(steps) == 2
    out = steps.apply(sink_record({"id": 1}))
    assert isinstance(out, SinkRecord)
    assert (out.value, out.kafka_offset) == (42, 42)
    nothing = chain({})
    original = record("v")
    assert nothing.apply(original) is original


def test_chain_predicates_and_negate() -> None:
    config = {
        "transforms": "mark",
        "transforms.mark.type": "InsertHeader",
        "transforms.mark.header": "big",
        "transforms.mark.value.literal": "true",
        "transforms.mark.predicate": "isOrders",
        "predicates": "isOrders",
        "predicates.isOrders.type": "org.apache.kafka.connect.transforms.predicates."
        "TopicNameMatches",
        "predicates.isOrders.pattern": "orders",
    }

    def headers(steps: TransformChain, topic: str) -> list[Header]:
        out = steps.apply(record("v", topic=topic))
        assert out is not None
        return out.headers

    plain, negated = chain(config), chain({**config, "transforms.mark.negate": "true"})
    assert headers(plain, "orders") == [("big", True)]
    assert headers(plain, "users") == []
    assert headers(negated, "orders") == []
    assert headers(negated, "users") == [("big", True)]


def test_chain_stops_at_a_dropped_record() -> None:
    steps = chain(
        {
            "transforms": "drop,route",
            "transforms.drop.type": "Filter",
            "transforms.route.type": "TimestampRouter",
        }
    )
    assert steps.apply(record("v", timestamp=None)) is None


def test_chain_names_the_failing_transform() -> None:
    steps = chain(
        {
            "transforms": "pick",
            "transforms.pick.type": "ExtractField$Value",
            "transforms.pick.field": "x",
        }
    )
    with raises(TransformError, "transforms.pick (ExtractFieldValue): Unknown field: x"):
        steps.apply(record(person(), PERSON))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"transforms": "a"}, "transforms.a.type: required"),
        (
            {"transforms": "a", "transforms.a.type": "Nope"},
            "transforms.a.type: unknown transformation 'Nope'",
        ),
        (
            {"transforms": "a", "transforms.a.type": "ExtractField$Key"},
            "transforms.a.field: required",
        ),
        (
            {"transforms": "a", "transforms.a.type": "InsertField$Value"},
            "transforms.a: No field insertion configured",
        ),
        (
            {"transforms": "a,a", "transforms.a.type": "Filter"},
            "transforms: Duplicate alias provided.",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.predicate": "p"},
            "transforms.a.predicate: unknown predicate 'p' (predicates: none)",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "true"},
            "transforms.a.negate: negate needs a predicate",
        ),
        (
            {
                "transforms": "a",
                "transforms.a.type": "Filter",
                "transforms.a.predicate": "p",
                "transforms.a.negate": "yes",
                "predicates": "p",
                "predicates.p.type": "RecordIsTombstone",
            },
            "transforms.a.negate: must be true or false, not 'yes'",
        ),
        ({"predicates": "p"}, "predicates.p.type: required"),
        (
            {"predicates": "p", "predicates.p.type": "IsBig"},
            "predicates.p.type: unknown predicate 'IsBig'",
        ),
        ({"predicates": "p", "predicates.p.type": "HasHeaderKey"}, "predicates.p.name: required"),
    ],
)
def test_chain_config_errors_name_the_key(config: dict[str, Any], message: str) -> None:
    with raises(ConfigError, message):
        chain(config)


def test_chain_accepts_lists_and_closes_every_plugin_once() -> None:
    closed: list[str] = []

    class Tracking(Transformation):
        """Records its close."""

        def apply(self, record: Any) -> Any:
            return record

        def close(self) -> None:
            closed.append("t")

    steps = chain(
        {
            "transforms": ["a", "b"],
            "transforms.a.type": "Filter",
            "transforms.a.predicate": "p",
            "transforms.b.type": "Filter",
            "transforms.b.predicate": "p",
            "transforms.b.negate": True,
            "predicates": ["p"],
            "predicates.p.type": "RecordIsTombstone",
        }
    )
    assert steps.apply(record(None)) is None  # a: tombstone dropped
    assert steps.apply(record("v")) is None  # b: not a tombstone, negated: dropped
    steps.stages[0].transformation = Tracking()
    steps.close()
    assert closed == ["t"]


# --- replace.null.with.default (KIP-1040) -------------------------------------------------------

DEFAULTED = Schema.struct(
    [Field("n", Schema("int32", optional=True, default=5)), Field("s", Schema("string"))]
)


@pytest.mark.parametrize(
    ("name", "config", "read"),
    [
        (
            "InsertField$Value",
            {"static.field": "e", "static.value": "v"},
            lambda r: r.value.get("n"),
        ),
        ("ReplaceField$Value", {"renames": "s:t"}, lambda r: r.value.get("n")),
        ("MaskField$Value", {"fields": "s"}, lambda r: r.value.get("n")),
        ("Cast$Value", {"spec": "s:string"}, lambda r: r.value.get("n")),
        ("ExtractField$Value", {"field": "n"}, lambda r: r.value),
        ("ValueToKey", {"fields": "n"}, lambda r: r.key.get("n")),
        (
            "HeaderFrom$Value",
            {"fields": "n", "headers": "h", "operation": "copy"},
            lambda r: r.headers[0][1],
        ),
        (
            "TimestampConverter$Value",
            {"field": "x", "target.type": "unix"},
            lambda r: r.value.get("n"),
        ),
    ],
)
def test_replace_null_with_default(name: str, config: dict[str, Any], read: Any) -> None:
    value = Struct(DEFAULTED, {"n": None, "s": "x"})
    assert read(apply(name, config, record(value, DEFAULTED))) == 5
    keep = {**config, "replace.null.with.default": "false"}
    assert read(apply(name, keep, record(value, DEFAULTED))) is None


def test_cast_passes_null_with_a_schema() -> None:
    tombstone = record(None, Schema("int64", optional=True))
    assert make("Cast$Value", {"spec": "string"}).apply(tombstone) is tombstone
    assert make("Cast$Value", {"spec": "id:string"}).apply(record(None, PERSON)).value is None
