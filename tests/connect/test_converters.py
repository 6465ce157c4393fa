"""Converters: JSON with and without the envelope, string, bytes; Kafka's exact JSON; bad input."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import date_schema, decimal_schema, time_schema, timestamp_schema
from sluice.connect.converters import (
    ByteArrayConverter,
    Converter,
    JsonConverter,
    StringConverter,
    converter_class,
    converter_from,
)
from sluice.errors import ConfigError

UTC = dt.UTC


def raises(kind: type[Exception], text: str) -> pytest.RaisesContext[Exception]:
    """``pytest.raises`` for an exception whose message contains ``text``."""
    return pytest.raises(kind, match=re.escape(text))


def json_converter(**config: Any) -> Converter:
    return converter_from("json", {k.replace("_", "."): v for k, v in config.items()}, False)


ENVELOPED = json_converter()
PLAIN = json_converter(schemas_enable="false")


# --- JSON with the envelope: Kafka's exact bytes ------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (Schema("int8"), -5, b'{"schema":{"type":"int8","optional":false},"payload":-5}'),
        (Schema("int16"), 300, b'{"schema":{"type":"int16","optional":false},"payload":300}'),
        (Schema("int32"), 42, b'{"schema":{"type":"int32","optional":false},"payload":42}'),
        (
            Schema("int64"),
            2**40,
            b'{"schema":{"type":"int64","optional":false},"payload":1099511627776}',
        ),
        (Schema("float32"), 1.5, b'{"schema":{"type":"float32","optional":false},"payload":1.5}'),
        (Schema("float64"), 2, b'{"schema":{"type":"float64","optional":false},"payload":2.0}'),
        (
            Schema("boolean"),
            True,
            b'{"schema":{"type":"boolean","optional":false},"payload":true}',
        ),
        (
            Schema("string", optional=True),
            "h\u00e9",
            '{"schema":{"type":"string","optional":true},"payload":"h\u00e9"}'.encode(),
        ),
        (
            Schema("bytes"),
            b"\x00\x01\xff",
            b'{"schema":{"type":"bytes","optional":false},"payload":"AAH/"}',
        ),
        (
            Schema("array", value_schema=Schema("int32")),
            [1, 2],
            b'{"schema":{"type":"array","items":{"type":"int32","optional":false},'
            b'"optional":false},"payload":[1,2]}',
        ),
        (
            Schema("map", key_schema=Schema("string"), value_schema=Schema("int64")),
            {"a": 1},
            b'{"schema":{"type":"map","keys":{"type":"string","optional":false},'
            b'"values":{"type":"int64","optional":false},"optional":false},"payload":{"a":1}}',
        ),
        (
            Schema("map", key_schema=Schema("int32"), value_schema=Schema("string")),
            {1: "a", 2: "b"},
            b'{"schema":{"type":"map","keys":{"type":"int32","optional":false},'
            b'"values":{"type":"string","optional":false},"optional":false},'
            b'"payload":[[1,"a"],[2,"b"]]}',
        ),
        (
            Schema("float64"),
            float("inf"),
            b'{"schema":{"type":"float64","optional":false},"payload":"Infinity"}',
        ),
    ],
)
def test_json_envelope_is_kafkas_exact_bytes(schema: Schema, value: Any, expected: bytes) -> None:
    assert ENVELOPED.from_connect("t", schema, value) == expected
    assert ENVELOPED.to_connect("t", expected) == (schema, value)


PERSON = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("name", Schema("string", optional=True)),
        Field("tags", Schema("array", value_schema=Schema("string"), optional=True)),
    ],
    name="com.example.Person",
)
PERSON_JSON = (
    b'{"schema":{"type":"struct","fields":['
    b'{"type":"int64","optional":false,"field":"id"},'
    b'{"type":"string","optional":true,"field":"name"},'
    b'{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"tags"}'
    b'],"optional":false,"name":"com.example.Person"},'
    b'"payload":{"id":7,"name":"Ada","tags":null}}'
)


def test_struct_is_a_json_object_in_schema_order() -> None:
    ada = Struct(PERSON, {"name": "Ada", "id": 7})
    assert ENVELOPED.from_connect("people", PERSON, ada) == PERSON_JSON
    schema, value = ENVELOPED.to_connect("people", PERSON_JSON)
    assert schema == PERSON
    assert value == Struct(PERSON, {"id": 7, "name": "Ada", "tags": None})


def test_schema_metadata_keys_follow_kafkas_order() -> None:
    schema = Schema(
        "int32",
        optional=True,
        name="com.example.Count",
        version=3,
        doc="how many",
        parameters=(("unit", "items"),),
        default=5,
    )
    expected = (
        b'{"schema":{"type":"int32","optional":true,"name":"com.example.Count","version":3,'
        b'"doc":"how many","parameters":{"unit":"items"},"default":5},"payload":9}'
    )
    assert ENVELOPED.from_connect("t", schema, 9) == expected
    assert ENVELOPED.to_connect("t", expected) == (schema, 9)


def test_logical_types_are_encoded_as_kafka_encodes_them() -> None:
    schema = Schema.struct(
        [
            Field("price", decimal_schema(2)),
            Field("day", date_schema()),
            Field("at", time_schema()),
            Field("ts", timestamp_schema()),
        ]
    )
    value = Struct(
        schema,
        {
            "price": Decimal("-1.29"),  # unscaled -129 = 0xff7f
            "day": dt.date(2023, 11, 14),
            "at": dt.time(22, 13, 20, 123000),
            "ts": dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC),
        },
    )
    data = ENVELOPED.from_connect("t", schema, value)
    assert data is not None
    assert data.endswith(
        b'"payload":{"price":"/38=","day":19675,"at":80000123,"ts":1700000000123}}'
    )
    assert b'"name":"org.apache.kafka.connect.data.Decimal","version":1,' in data
    assert b'"parameters":{"scale":"2"},"field":"price"' in data
    assert ENVELOPED.to_connect("t", data) == (schema, value)


def test_decimal_numeric_format_writes_a_plain_number() -> None:
    numeric = json_converter(decimal_format="numeric")
    schema = decimal_schema(3)
    data = numeric.from_connect("t", schema, Decimal("12.5"))
    assert data == (
        b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
        b'Decimal","version":1,"parameters":{"scale":"3"}},"payload":12.500}'
    )
    assert numeric.to_connect("t", data) == (schema, Decimal("12.500"))
    # A BASE64 reader accepts a numeric payload too, as Kafka's does.
    assert ENVELOPED.to_connect("t", data)[1] == Decimal("12.500")


def test_null_values() -> None:
    assert ENVELOPED.from_connect("t", None, None) is None
    assert ENVELOPED.to_connect("t", None) == (None, None)
    optional = Schema("string", optional=True)
    data = b'{"schema":{"type":"string","optional":true},"payload":null}'
    assert ENVELOPED.from_connect("t", optional, None) == data
    assert ENVELOPED.to_connect("t", data) == (optional, None)
    assert ENVELOPED.to_connect("t", b"null") == (None, None)
    assert ENVELOPED.to_connect("t", b'{"schema":null,"payload":null}') == (None, None)


def test_a_null_with_a_default_is_written_as_the_default() -> None:
    schema = Schema.struct([Field("n", Schema("int32", default=3))])
    value = Struct(schema, {"n": None})
    assert ENVELOPED.from_connect("t", schema, value) == (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"default":3,'
        b'"field":"n"}],"optional":false},"payload":{"n":3}}'
    )
    keep_null = json_converter(replace_null_with_default="false")
    with raises(ConverterError, "null value for field that is required"):
        keep_null.from_connect("t", schema, value)
    # Reading a missing field gives the default.
    data = b'{"schema":{"type":"int32","optional":false,"default":3},"payload":null}'
    assert ENVELOPED.to_connect("t", data)[1] == 3


def test_schemaless_value_inside_the_envelope() -> None:
    data = ENVELOPED.from_connect("t", None, {"a": [1, 2.5, "x", None, True]})
    assert data == b'{"schema":null,"payload":{"a":[1,2.5,"x",null,true]}}'
    assert ENVELOPED.to_connect("t", data) == (None, {"a": [1, 2.5, "x", None, True]})


def test_reads_json_written_by_kafka() -> None:
    # As Kafka's JsonConverter writes a Debezium-style key (field order and whitespace as found).
    data = (
        b'{"schema": {"type": "struct", "optional": false, "name": "dbserver1.inventory.'
        b'customers.Key", "fields": [{"type": "int32", "optional": false, "field": "id"}]},'
        b' "payload": {"id": 1004}}'
    )
    schema, value = ENVELOPED.to_connect("customers", data)
    key_schema = Schema.struct(
        [Field("id", Schema("int32"))], name="dbserver1.inventory.customers.Key"
    )
    assert schema == key_schema
    assert value == Struct(key_schema, {"id": 1004})


# --- JSON without the envelope ------------------------------------------------------------------


def test_plain_json_both_ways() -> None:
    assert PLAIN.from_connect("t", None, {"id": 1, "tags": ["a"]}) == b'{"id":1,"tags":["a"]}'
    assert PLAIN.to_connect("t", b'{"id": 1, "price": 2.5, "ok": false}') == (
        None,
        {"id": 1, "price": 2.5, "ok": False},
    )
    assert PLAIN.from_connect("t", Schema("int32"), 5) == b"5"
    assert PLAIN.from_connect("t", PERSON, Struct(PERSON, {"id": 1})) == (
        b'{"id":1,"name":null,"tags":null}'
    )
    assert PLAIN.from_connect("t", None, b"\x01") == b'"AQ=="'
    assert PLAIN.from_connect("t", None, {1: "a"}) == b'[[1,"a"]]'
    assert PLAIN.to_connect("t", b"null") == (None, None)
    assert PLAIN.to_connect("t", None) == (None, None)


# --- Malformed input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a":', "serialization error"),
        (b"\xff\xfe\xfa", "serialization error"),
        (b"NaN", "Invalid JSON token NaN"),
        (b'{"payload": 1}', 'requires "schema" and "payload" fields'),
        (b'{"schema": null, "payload": 1, "extra": 2}', 'requires "schema" and "payload"'),
        (b"[1, 2]", 'requires "schema" and "payload"'),
        (b'{"schema": {"optional": true}, "payload": 1}', "Schema must contain 'type' field"),
        (b'{"schema": {"type": "int128"}, "payload": 1}', "Unknown schema type: int128"),
        (b'{"schema": {"type": "array"}, "payload": []}', "did not specify the element type"),
        (b'{"schema": {"type": "map", "values": {"type": "int8"}}, "payload": {}}', "key type"),
        (b'{"schema": {"type": "struct", "fields": {}}, "payload": {}}', "is not an array"),
        (
            b'{"schema": {"type": "struct", "fields": [{"type": "int8"}]}, "payload": {}}',
            "field name not specified properly",
        ),
        (b'{"schema": {"type": "int32"}, "payload": "7"}', "Invalid JSON for INT32"),
        (b'{"schema": {"type": "string"}, "payload": 7}', "Invalid JSON for STRING"),
        (b'{"schema": {"type": "boolean"}, "payload": 1}', "Invalid JSON for BOOLEAN"),
        (b'{"schema": {"type": "bytes"}, "payload": "not base64!"}', "Invalid base64"),
        (b'{"schema": {"type": "int32"}, "payload": null}', "Invalid null value for required"),
        (
            b'{"schema": {"type": "struct", "fields": []}, "payload": [1]}',
            "Structs should be encoded as JSON objects, but found ARRAY",
        ),
        (
            b'{"schema": {"type": "map", "keys": {"type": "int32"}, "values": {"type": "int32"}},'
            b' "payload": {"1": 2}}',
            "JSON array of tuples, but found OBJECT",
        ),
        (
            b'{"schema": {"type": "map", "keys": {"type": "int32"}, "values": {"type": "int32"}},'
            b' "payload": [[1, 2, 3]]}',
            "invalid map entry",
        ),
        (
            b'{"schema": {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",'
            b' "parameters": {"scale": "1"}}, "payload": 1.25}',
            "more digits than scale 1",
        ),
        (
            b'{"schema": {"type": "int32", "name": "org.apache.kafka.connect.data.Time"},'
            b' "payload": 86400000}',
            "within a day",
        ),
        (b'{"schema": {"type": "int8", "version": "1"}, "payload": 1}', "version must be"),
    ],
)
def test_malformed_input_raises_converter_error(data: bytes, message: str) -> None:
    with raises(ConverterError, message):
        ENVELOPED.to_connect("t", data)


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        (Schema("int8"), 128, "out of range for INT8"),
        (Schema("int32"), "1", "Invalid type for INT32: str"),
        (Schema("int64"), True, "Invalid type for INT64: bool"),
        (Schema("string"), b"x", "Invalid type for STRING: bytes"),
        (Schema("string"), None, "null value for field that is required"),
        (PERSON, {"id": 1}, "Invalid type for STRUCT: dict"),
        (PERSON, Struct(Schema.struct([]), {}), "Mismatching schema"),
        (decimal_schema(1), Decimal("0.05"), "more digits than scale 1"),
        (date_schema(), dt.datetime(2024, 1, 1, 12, tzinfo=UTC), "Date type should not have"),
        (timestamp_schema(), 5, "Invalid value for org.apache.kafka.connect.data.Timestamp"),
        (None, {1, 2}, "set has no corresponding schema type"),
    ],
)
def test_values_that_do_not_fit_their_schema_raise(
    schema: Schema | None, value: Any, message: str
) -> None:
    with raises(ConverterError, message):
        ENVELOPED.from_connect("t", schema, value)


# --- Hypothesis round trips ---------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_plain_json_round_trip(value: Any) -> None:
    assert PLAIN.to_connect("t", PLAIN.from_connect("t", None, value)) == (None, value)


@given(json_values)
def test_schemaless_envelope_round_trip(value: Any) -> None:
    data = ENVELOPED.from_connect("t", None, value)
    assert ENVELOPED.to_connect("t", data) == (None, value)


def _millis(moment: dt.datetime) -> dt.datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


PRIMITIVE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "float32": st.floats(allow_nan=False),
    "float64": st.floats(allow_nan=False),
    "boolean": st.booleans(),
    "string": st.text(),
    "bytes": st.binary(),
}
LOGICAL: list[tuple[Schema, st.SearchStrategy[Any]]] = [
    (date_schema(), st.dates()),
    (time_schema(), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (timestamp_schema(), st.datetimes(timezones=st.just(UTC)).map(_millis)),
    *[
        (
            decimal_schema(scale),
            st.integers(-(10**30), 10**30).map(lambda n, s=scale: Decimal(n).scaleb(-s)),
        )
        for scale in (0, 2, 9)
    ],
]


def _optional(schema: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    return st.tuples(schema, st.booleans()).map(
        lambda pair: dataclasses.replace(pair[0], optional=pair[1])
    )


schemas = st.recursive(
    _optional(st.sampled_from([Schema(t) for t in PRIMITIVE_VALUES] + [s for s, _ in LOGICAL])),
    lambda children: _optional(
        children.map(lambda items: Schema("array", value_schema=items))
        | st.tuples(st.sampled_from(["string", "int32", "int64"]), children).map(
            lambda kv: Schema("map", key_schema=Schema(kv[0]), value_schema=kv[1])
        )
        | st.dictionaries(st.text(min_size=1, max_size=6), children, min_size=1, max_size=4).map(
            lambda fields: Schema.struct([Field(n, s) for n, s in fields.items()], name="S")
        )
    ),
    max_leaves=8,
)


def values_of(schema: Schema) -> st.SearchStrategy[Any]:
    if schema.type == "array":
        assert schema.value_schema is not None
        inner = st.lists(values_of(schema.value_schema), max_size=3)
    elif schema.type == "map":
        assert schema.key_schema is not None and schema.value_schema is not None
        inner = st.dictionaries(
            PRIMITIVE_VALUES[schema.key_schema.type], values_of(schema.value_schema), max_size=3
        )
    elif schema.type == "struct":
        inner = st.fixed_dictionaries({f.name: values_of(f.schema) for f in schema.fields}).map(
            lambda values: Struct(schema, values)
        )
    else:
        required = dataclasses.replace(schema, optional=False)
        inner = dict(LOGICAL).get(required, PRIMITIVE_VALUES[schema.type])
    return st.none() | inner if schema.optional else inner


@settings(max_examples=300)
@given(schemas.flatmap(lambda schema: st.tuples(st.just(schema), values_of(schema))))
def test_enveloped_json_round_trip(pair: tuple[Schema, Any]) -> None:
    schema, value = pair
    data = ENVELOPED.from_connect("t", schema, value)
    assert ENVELOPED.to_connect("t", data) == (schema, value)


@given(st.integers(-(10**40), 10**40), st.integers(-3, 12))
def test_decimal_numeric_round_trip(unscaled: int, scale: int) -> None:
    numeric = json_converter(decimal_format="NUMERIC")
    schema, value = decimal_schema(scale), Decimal(unscaled).scaleb(-scale)
    assert numeric.to_connect("t", numeric.from_connect("t", schema, value)) == (schema, value)


# --- String and bytes ---------------------------------------------------------------------------


def test_string_converter() -> None:
    strings = converter_from("org.apache.kafka.connect.storage.StringConverter", {}, False)
    assert strings.from_connect("t", Schema("string"), "h\u00e9") == "h\u00e9".encode()
    assert strings.from_connect("t", None, 1e7) == b"1.0E7"
    assert strings.from_connect("t", None, False) == b"false"
    assert strings.from_connect("t", None, 42) == b"42"
    assert strings.from_connect("t", None, None) is None
    assert strings.to_connect("t", b"abc") == (Schema("string", optional=True), "abc")
    assert strings.to_connect("t", None) == (Schema("string", optional=True), None)
    with raises(ConverterError, "Failed to deserialize string for topic t"):
        strings.to_connect("t", b"\xff")


def test_string_converter_encoding() -> None:
    latin = converter_from("string", {"converter.encoding": "ISO-8859-1"}, True)
    assert latin.from_connect("t", None, "\u00e9") == b"\xe9"
    assert latin.to_connect("t", b"\xe9")[1] == "\u00e9"
    with raises(ConfigError, "converter.encoding: unknown encoding"):
        converter_from("string", {"converter.encoding": "klingon"}, True)


def test_byte_array_converter() -> None:
    raw = converter_from("org.apache.kafka.connect.converters.ByteArrayConverter", {}, False)
    assert raw.from_connect("t", Schema("bytes"), b"\x00\x01") == b"\x00\x01"
    assert raw.from_connect("t", None, bytearray(b"ab")) == b"ab"
    assert raw.from_connect("t", None, None) is None
    assert raw.to_connect("t", b"\x00") == (Schema("bytes", optional=True), b"\x00")
    assert raw.to_connect("t", None) == (Schema("bytes", optional=True), None)
    with raises(ConverterError, "Invalid schema type for ByteArrayConverter: string"):
        raw.from_connect("t", Schema("string"), b"x")
    with raises(ConverterError, "not compatible with objects of type str"):
        raw.from_connect("t", None, "x")


# --- Factory ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("org.apache.kafka.connect.json.JsonConverter", JsonConverter),
        ("org.apache.kafka.connect.storage.StringConverter", StringConverter),
        ("org.apache.kafka.connect.converters.ByteArrayConverter", ByteArrayConverter),
        ("json", JsonConverter),
        ("string", StringConverter),
        ("bytes", ByteArrayConverter),
        ("sluice.connect.converters.JsonConverter", JsonConverter),
    ],
)
def test_converter_names(name: str, cls: type[Converter]) -> None:
    assert converter_class(name) is cls
    converter = converter_from(name, {}, is_key=True)
    assert type(converter) is cls
    assert converter.is_key


def test_converter_config_errors() -> None:
    with raises(ConfigError, "unknown converter 'avro'"):
        converter_from("avro", {}, False)
    with raises(ConfigError, "unknown converter"):
        converter_from("sluice.connect.api.data.Schema", {}, False)
    with raises(ConfigError, "schemas.enable: must be true or false, not 'yes'"):
        converter_from("json", {"schemas.enable": "yes"}, False)
    with raises(ConfigError, "decimal.format: must be BASE64 or NUMERIC"):
        converter_from("json", {"decimal.format": "HEX"}, False)
    with raises(ConfigError, "schemas.cache.size: must be an integer"):
        converter_from("json", {"schemas.cache.size": "many"}, False)
    plain = json_converter(schemas_enable=False)
    assert isinstance(plain, JsonConverter)
    assert not plain.schemas_enable


TRICKY = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("note", Schema("string", optional=True, doc=',"payload":')),
    ],
    name="tricky",
)


@pytest.mark.parametrize("schema", [TRICKY, Schema.struct([Field("id", Schema("int64"))])])
def test_the_schema_text_cache_reads_what_the_general_path_reads(schema: Schema) -> None:
    """Envelopes are read once in full and then from the cached schema text: same results,
    also when the schema's own text contains the separator the cache looks for."""
    writer, cached, fresh = json_converter(), json_converter(), json_converter()
    values = [{"id": n, "note": f"n{n}"} if schema is TRICKY else {"id": n} for n in range(3)]
    for value in values:
        data = writer.from_connect("t", schema, Struct(schema, value))
        assert data is not None and data.startswith(b'{"schema":{')
        read_schema, read = cached.to_connect("t", data)
        assert read_schema == schema and read.values == value
        assert fresh.to_connect("t", data) == (read_schema, read)
        fresh = json_converter()  # the general path, each time
    with pytest.raises(ConverterError):  # a payload that does not parse: the general path says so
        cached.to_connect("t", data[:-1] + b"x}")
