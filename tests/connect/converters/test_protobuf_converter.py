"""Confluent's ``ProtobufConverter`` against a real ``sluice schema-registry`` process: every
Connect type round trips (as Confluent's ``ProtobufData`` reads proto3 back), the registered
schema is proto3 that confluent-kafka's deserializer reads, the root must be a struct."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import date_schema, time_schema, timestamp_schema
from sluice.connect.converters.schema_registry.protobuf_converter import ProtobufConverter
from tests.connect.converters.converter_fixtures import (
    PRICE_10_2,
    make_converter,
)
from tests.pg import PostgresServer, shared_postgres  # noqa: F401  (fixture)
from tests.schema_registry.conftest import RegistryProcess

# -- Protobuf

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
LINE = Schema.struct([Field("sku", Schema("string")), Field("qty", Schema("int32"))], name="Line")
EVERYTHING = Schema.struct(
    [
        Field("i8", Schema("int8")),
        Field("i16", Schema("int16")),
        Field("i32", Schema("int32")),
        Field("i64", Schema("int64")),
        Field("f32", Schema("float32")),
        Field("f64", Schema("float64")),
        Field("flag", Schema("boolean")),
        Field("text", Schema("string")),
        Field("raw", Schema("bytes")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("clock", time_schema()),
        Field("at", timestamp_schema()),
        Field("tags", Schema("array", value_schema=Schema("string"))),
        Field("lines", Schema("array", value_schema=LINE)),
        Field("counts", Schema("map", key_schema=Schema("string"), value_schema=Schema("int64"))),
        Field("by_id", Schema("map", key_schema=Schema("int32"), value_schema=LINE)),
        Field("first", LINE),
        Field("missing", Schema("struct", optional=True, name="Line", fields=LINE.fields)),
    ],
    name="shop.Everything",
)


def _everything() -> Struct:
    line = Struct(LINE, {"sku": "A-1", "qty": 2})
    return Struct(
        EVERYTHING,
        {
            "i8": -8,
            "i16": 300,
            "i32": -70_000,
            "i64": 2**40,
            "f32": 1.5,
            "f64": 2.25e300,
            "flag": True,
            "text": "héllo",
            "raw": b"\x00\xff",
            "amount": Decimal("12345678.90"),
            "day": dt.date(2024, 2, 29),
            "clock": dt.time(13, 14, 15, 123000),
            "at": dt.datetime(2024, 2, 29, 1, 2, 3, 456000, tzinfo=dt.UTC),
            "tags": ["a", "b"],
            "lines": [line, line],
            "counts": {"a": 1},
            "by_id": {7: line},
            "first": line,
            "missing": None,
        },
    )


def _as_read(schema: Schema, *, root: bool = True) -> Schema:
    """What reading gives for a schema written as Protobuf: every field optional (proto3),
    structs named by their message's full name."""
    return dataclasses.replace(
        schema,
        optional=not root,
        fields=tuple(Field(f.name, _as_read(f.schema, root=False)) for f in schema.fields),
        key_schema=None if schema.key_schema is None else _as_read(schema.key_schema, root=False),
        value_schema=None
        if schema.value_schema is None
        else _as_read(schema.value_schema, root=False),
    )


def test_protobuf_round_trips_every_connect_type(registry: RegistryProcess) -> None:
    data = make_converter(PROTOBUF, registry.url).from_connect(
        "everything", EVERYTHING, _everything()
    )
    assert data is not None and data[:1] == b"\x00" and data[5:6] == b"\x00"  # message index [0]
    schema, value = make_converter(PROTOBUF, registry.url).to_connect("everything", data)
    assert schema is not None
    line = dataclasses.replace(_as_read(LINE, root=False), name="shop.Everything.Line")
    by_name = {f.name: f.schema for f in schema.fields}
    assert by_name["i8"] == Schema("int8", optional=True)
    assert by_name["i16"] == Schema("int16", optional=True)
    assert by_name["f32"] == Schema("float32", optional=True)
    assert by_name["amount"] == dataclasses.replace(PRICE_10_2, optional=True)
    assert by_name["day"] == date_schema(optional=True)
    assert by_name["clock"] == time_schema(optional=True)
    assert by_name["at"] == timestamp_schema(optional=True)
    assert by_name["lines"] == Schema("array", optional=True, value_schema=line)
    assert by_name["by_id"] == Schema(
        "map", optional=True, key_schema=Schema("int32", optional=True), value_schema=line
    )
    assert (schema.name, schema.version, schema.optional) == ("shop.Everything", 1, False)
    expected = _everything().values
    got = value.values
    for name in ("lines", "first", "by_id"):
        expected[name] = _plain(expected[name])
        got[name] = _plain(got[name])
    assert got == expected


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {k: _plain(v) for k, v in value.values.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_protobuf_registers_a_proto3_schema_readable_by_confluents_deserializer(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct(
        [Field("id", Schema("int64")), Field("at", timestamp_schema())], name="shop.Tick"
    )
    value = Struct(schema, {"id": 3, "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)})
    converter = make_converter(PROTOBUF, registry.url)
    data = converter.from_connect("ticks", schema, value)
    client = SchemaRegistryClient({"url": registry.url})
    try:
        registered = client.get_latest_version("ticks-value").schema
    finally:
        client.close()
    assert registered.schema_type == "PROTOBUF"
    text = registered.schema_str or ""
    assert "package shop;" in text and "message Tick" in text
    assert "google.protobuf.Timestamp at = 2;" in text
    assert isinstance(converter, ProtobufConverter)
    cls = converter.protobuf_data.message_class(converter.protobuf_data.from_connect_schema(schema))
    read = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        data, SerializationContext("ticks", MessageField.VALUE)
    )
    assert (read.id, read.at.seconds) == (3, 1_704_067_200)


def test_protobuf_needs_a_struct_root(registry: RegistryProcess) -> None:
    with pytest.raises(ConverterError, match="Unsupported root schema of type string"):
        make_converter(PROTOBUF, registry.url).from_connect("t", Schema("string"), "x")
