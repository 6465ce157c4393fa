"""Sluice's compiled Avro codec against fastavro (confluent-kafka's encoder): the same bytes and
the same values for random schemas and data, fastavro's errors for what is not a value of the
schema, and the generated code used for the common case."""

from __future__ import annotations

import datetime as dt
import io
import uuid
from decimal import Decimal
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.schemas.avro_codec import AvroCodec, decode_long, encode_long

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
    {"type": "string", "logicalType": "uuid"},
]

_names = iter(range(10**9))


def _name() -> str:
    return f"N{next(_names)}"


def _zero_width(schema: Any) -> bool:
    """Whether a value of ``schema`` can take no bytes at all (null, fixed(0), a record of
    such fields)."""
    if schema == "null":
        return True
    if isinstance(schema, dict) and schema["type"] == "fixed":
        return bool(schema["size"] == 0)
    if isinstance(schema, dict) and schema["type"] == "record":
        return all(_zero_width(field["type"]) for field in schema["fields"])
    return False


def schemas(multi_unions: bool = True) -> st.SearchStrategy[Any]:
    leaves = st.sampled_from(PRIMITIVES) | st.sampled_from(LOGICAL)
    leaves |= st.builds(
        lambda n, symbols: {"type": "enum", "name": _name(), "symbols": symbols[:n]},
        st.integers(1, 4),
        st.just(["A", "B", "C", "D"]),
    )
    leaves |= st.builds(
        lambda size: {"type": "fixed", "name": _name(), "size": size}, st.integers(0, 5)
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        # items of no width make a block count of random bytes a list of that many items:
        # billions, in fastavro as in Sluice (memory until MemoryError), not a decoding case
        wide = inner.filter(lambda t: not _zero_width(t))
        options = [
            st.builds(lambda t: {"type": "array", "items": t}, wide),
            st.builds(lambda t: {"type": "map", "values": t}, wide),
            st.builds(
                lambda ts: {
                    "type": "record",
                    "name": _name(),
                    "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(ts)],
                },
                st.lists(inner, max_size=4),
            ),
            st.builds(
                lambda t, first: ["null", t] if first else [t, "null"],
                inner.filter(lambda t: t != "null" and not isinstance(t, list)),
                st.booleans(),
            ),
        ]
        if multi_unions:
            options.append(
                st.lists(
                    st.sampled_from(["null", "long", "string", "boolean"]),
                    min_size=2,
                    max_size=3,
                    unique=True,
                )
            )
        return st.one_of(options)

    return st.recursive(leaves, extend, max_leaves=8)


def values(schema: Any) -> st.SearchStrategy[Any]:
    if isinstance(schema, list):
        return st.one_of([values(branch) for branch in schema])
    kind = schema if isinstance(schema, str) else schema["type"]
    logical = schema.get("logicalType") if isinstance(schema, dict) else None
    if logical == "timestamp-millis":
        return st.datetimes(
            min_value=dt.datetime(1900, 1, 1),
            max_value=dt.datetime(2200, 1, 1),
            timezones=st.just(dt.UTC),
        ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
    if logical == "timestamp-micros":
        return st.datetimes(
            min_value=dt.datetime(1900, 1, 1),
            max_value=dt.datetime(2200, 1, 1),
            timezones=st.just(dt.UTC),
        )
    if logical == "date":
        return st.dates()
    if logical == "time-millis":
        return st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
    if logical == "decimal":
        return st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False)
    if logical == "uuid":
        return st.uuids().map(str)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(),
        "boolean": st.booleans(),
        "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1),
        "float": st.floats(width=32, allow_nan=False),
        "double": st.floats(allow_nan=False),
        "bytes": st.binary(max_size=20),
        "string": st.text(max_size=20),
    }
    if kind in simple:
        return simple[kind]
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if kind == "array":
        return st.lists(values(schema["items"]), max_size=4)
    if kind == "map":
        return st.dictionaries(st.text(max_size=5), values(schema["values"]), max_size=4)
    assert kind == "record", schema
    return st.fixed_dictionaries({f["name"]: values(f["type"]) for f in schema["fields"]})


@st.composite
def schema_and_value(draw: st.DrawFn, multi_unions: bool = True) -> tuple[Any, Any]:
    schema = draw(schemas(multi_unions))
    return schema, draw(values(schema))


def _fastavro_bytes(schema: Any, value: Any) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, parse_schema(schema), value)
    return buffer.getvalue()


def _fastavro_value(schema: Any, data: bytes) -> Any:
    return schemaless_reader(io.BytesIO(data), parse_schema(schema), None)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value())
def test_same_bytes_and_values_as_fastavro(case: tuple[Any, Any]) -> None:
    schema, value = case
    codec = AvroCodec(schema)
    expected = _fastavro_bytes(schema, value)
    data = codec.encode(value)
    assert data == expected, f"{schema}: {value!r} gave {data!r}, fastavro {expected!r}"
    assert codec.decode(data) == _fastavro_value(schema, data)
    assert codec.decode(b"\x00\x00\x00\x00\x07" + data, 5) == _fastavro_value(schema, data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value(multi_unions=False))
def test_the_generated_code_takes_the_common_case(case: tuple[Any, Any]) -> None:
    """Without unions of several types, the generated code (not fastavro) writes every value
    whose Python types are the schema's, and gives fastavro's bytes."""
    schema, value = case
    codec = AvroCodec(schema)
    assert codec.compiled
    assert codec.encode_exact(value) == _fastavro_bytes(schema, value)


@settings(max_examples=50, deadline=None)
@given(schema_and_value(), st.binary(max_size=30))
def test_any_bytes_decode_as_fastavro_reads_them(case: tuple[Any, Any], noise: bytes) -> None:
    schema, value = case
    codec = AvroCodec(schema)
    for data in (noise, _fastavro_bytes(schema, value)[:-1]):
        try:
            expected = _fastavro_value(schema, data)
        except Exception as error:  # any of fastavro's errors
            with pytest.raises(type(error)):
                codec.decode(data)
        else:
            assert codec.decode(data) == expected


@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varints(n: int) -> None:
    data = encode_long(n)
    assert data == _fastavro_bytes("long", n)
    assert decode_long(data + b"\xff", 0) == (n, len(data))


ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
        {"name": "next", "type": ["null", "Order"], "default": None},
    ],
}


def test_missing_fields_take_their_defaults_as_fastavro_does() -> None:
    codec = AvroCodec(ORDER)
    assert codec.encode_exact({"id": 1}) is None  # not the common case: fastavro writes it
    assert codec.encode({"id": 1}) == _fastavro_bytes(ORDER, {"id": 1}) == b"\x02\x00\x00\x00"


def test_recursive_records() -> None:
    codec = AvroCodec(ORDER)
    value = {
        "id": 1,
        "note": None,
        "tags": ["a"],
        "next": {"id": 2, "note": "x", "tags": [], "next": None},
    }
    data = codec.encode_exact(value)
    assert data == _fastavro_bytes(ORDER, value)
    assert codec.decode(data) == value


def test_a_value_that_is_not_the_schemas_gets_fastavros_error() -> None:
    codec = AvroCodec(ORDER)
    with pytest.raises(TypeError, match="on field id"):
        codec.encode({"id": "one"})
    with pytest.raises(EOFError):
        codec.decode(b"\x02\x02")


def test_unions_of_several_types_go_to_fastavro() -> None:
    codec = AvroCodec(["null", "long", "string"])
    assert not codec.compiled
    assert codec.encode("x") == b"\x04\x02x"
    assert codec.decode(b"\x04\x02x") == "x"


def test_logical_values_are_fastavros() -> None:
    schema = {
        "type": "record",
        "name": "L",
        "fields": [
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "price",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
            },
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        ],
    }
    value = {
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC),
        "price": Decimal("12.34"),
        "id": uuid.UUID(int=7),
    }
    codec = AvroCodec(schema)
    data = codec.encode_exact(value)
    assert data == _fastavro_bytes(schema, value)
    assert codec.decode(data) == {**value, "id": value["id"]}
