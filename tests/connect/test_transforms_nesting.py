"""ExtractField, HoistField and Flatten.

Expected values are written out by hand.
"""

from __future__ import annotations

from decimal import Decimal

from sluice.connect.api.data import (
    Field,
    Schema,
    Struct,
)
from sluice.connect.api.errors import TransformError
from sluice.errors import ConfigError
from tests.connect.transform_helpers import (
    PERSON,
    apply,
    make,
    person,
    raises,
    record,
)

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
