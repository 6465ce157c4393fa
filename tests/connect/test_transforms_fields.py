"""InsertField, ReplaceField, MaskField and ValueToKey; replace.null.with.default across transforms.

Expected values are written out by hand.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from sluice.connect.api.data import (
    Field,
    Schema,
    SinkRecord,
    Struct,
)
from sluice.connect.api.errors import TransformError
from sluice.connect.api.logical import EPOCH, timestamp_schema
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
    sink_record,
)

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
