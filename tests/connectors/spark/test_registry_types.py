"""Registry schemas as Spark types, fastavro's values as Spark's, and the source's format options:
pure functions, no Spark session, no registry (writers' schemas are given to the decoder)."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest
from pyspark.sql.types import StructType

from sluice.connectors.spark._options import SourceOptions
from sluice.connectors.spark._registry_decode import ColumnDecoder, RecordDecodeError
from sluice.connectors.spark._registry_schema import Resolved
from sluice.connectors.spark._registry_types import avro_type, json_schema_type, protobuf_type
from sluice.schemas.serdes import message_class

EVENT = {
    "type": "record",
    "name": "Event",
    "namespace": "shop",
    "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "who", "type": ["null", "string", {"type": "record", "name": "User",
                                                     "fields": [{"name": "n", "type": "int"}]}]},
        {"name": "again", "type": ["null", "User"]},
        {"name": "wide", "type": ["null", "float", "double"]},
    ],
}  # fmt: skip


def test_avro_types_follow_sparks_from_avro() -> None:
    kind, nullable = avro_type(EVENT)
    assert not nullable
    assert isinstance(kind, StructType)
    assert kind.simpleString() == (
        "struct<at:timestamp,local:timestamp_ntz,t:int,id:string,hash:binary,"
        "m:map<string,double>,who:struct<member0:string,member1:struct<n:int>>,"
        "again:struct<n:int>,wide:double>"
    )
    assert [f.name for f in kind.fields if f.nullable] == ["who", "again", "wide"]
    assert kind["m"].dataType.valueContainsNull
    with pytest.raises(ValueError, match=r"decimal.40, 2. has no Spark type"):
        avro_type({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2})
    with pytest.raises(ValueError, match="'Missing' is not defined"):
        avro_type({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Missing"}]})


def test_avro_values_become_the_spark_types_values() -> None:
    """Multi-type unions as member structs (a record branch recognised by name), a named type
    used again by reference, times as numbers, UUIDs as text."""
    resolved = Resolved("value", "avro", json.dumps(EVENT), (), "", avro_type(EVENT)[0], False)
    decoder = ColumnDecoder(resolved, "http://unused:8081", None, permissive=False)
    decoder._writers[3] = decoder._avro_reader(json.dumps(EVENT), {})
    at = dt.datetime(2024, 2, 28, 12, 0, 0, 123456, tzinfo=dt.UTC)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    base = {
        "at": at, "local": dt.datetime(2024, 2, 28, 13), "t": dt.time(0, 0, 1, 500000),
        "id": str(ident), "hash": b"ab", "m": {"a": 1.5, "b": None}, "again": None, "wide": 2.5,
    }  # fmt: skip
    values = [{**base, "who": "ada"}, {**base, "who": {"n": 7}, "again": {"n": 8}}]
    column = pa.array([_avro(EVENT, v, 3) for v in values], pa.binary())
    got = decoder.decode(column, "events", 0, [0, 1]).to_pylist()
    assert got[0]["who"] == {"member0": "ada", "member1": None}
    assert got[1]["who"] == {"member0": None, "member1": {"n": 7}}
    assert got[1]["again"] == {"n": 8}
    assert got[0]["t"] == 1500
    assert got[0]["id"] == str(ident)
    assert got[0]["at"] == at
    assert got[0]["m"] == [("a", 1.5), ("b", None)]  # pyarrow's map form


def test_avro_schema_resolution_and_bad_records() -> None:
    """A record of an older writer schema gets the reader's default; bytes that are not Avro of
    the writer's schema fail with topic, partition and offset, or are null when permissive."""
    price = {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}
    at = {"type": "long", "logicalType": "timestamp-micros"}
    reader = {"type": "record", "name": "O", "fields": [
        {"name": "id", "type": "long"}, {"name": "price", "type": price, "default": "\u0001"},
        {"name": "at", "type": at, "default": 1500000}, {"name": "b", "type": "bytes",
        "default": "\u00ff"}]}  # fmt: skip
    writer = {"type": "record", "name": "O", "fields": [{"name": "id", "type": "int"}]}
    resolved = Resolved("value", "avro", json.dumps(reader), (), "", avro_type(reader)[0], False)
    epoch = dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC)
    for permissive in (False, True):
        decoder = ColumnDecoder(resolved, "http://unused:8081", None, permissive=permissive)
        decoder._writers[1] = decoder._avro_reader(json.dumps(writer), {})
        good = _avro(writer, {"id": 5}, 1)
        column = pa.array([good, b"\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff"], pa.binary())
        if permissive:
            assert decoder.decode(column, "t", 2, [10, 11]).to_pylist() == [
                {"id": 5, "price": Decimal("0.01"), "at": epoch, "b": b"\xff"},
                None,
            ]
        else:
            with pytest.raises(RecordDecodeError, match="value of t-2 at offset 11 as avro"):
                decoder.decode(column, "t", 2, [10, 11])


def _avro(schema: Any, value: Any, schema_id: int) -> bytes:
    out = io.BytesIO()
    out.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_protobuf_and_json_schema_types() -> None:
    cls = message_class(
        'syntax = "proto3"; message P { uint32 a = 1; fixed64 b = 2; sint32 c = 3; '
        "optional string d = 4; bytes e = 5; } message R { S s = 1; } message S { R r = 1; }"
    )
    assert protobuf_type(cls.DESCRIPTOR.fields_by_name["a"].containing_type)[0].simpleString() == (
        "struct<a:bigint,b:decimal(20,0),c:int,d:string,e:binary>"
    )
    with pytest.raises(ValueError, match="R is recursive"):
        protobuf_type(cls.DESCRIPTOR.file.message_types_by_name["R"])
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "connect.type": "int16"},
            "day": {"type": "integer", "title": "org.apache.kafka.connect.data.Date"},
            "node": {"$ref": "#/$defs/Node"},
            "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "free": {"type": "object"},
        },
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    }
    with pytest.raises(ValueError, match="#/\\$defs/Node is recursive"):
        json_schema_type(schema)
    del schema["properties"]["node"]  # type: ignore[attr-defined]
    assert json_schema_type(schema)[0].simpleString() == (
        "struct<n:smallint,day:date,any:string,free:map<string,string>>"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"valueFormat": "xml"}, "'valueFormat' must be avro, protobuf, json-schema or binary"),
        ({"valueSubject": "s"}, "'valueSubject' needs 'valueFormat'"),
        ({"schema.registry.url": "http://r"}, "'schema.registry.url' applies to registry"),
        ({"mode": "PERMISSIVE"}, "'mode' applies to registry-encoded records"),
        ({"valueFormat": "avro", "mode": "lenient"}, "'mode' must be FAILFAST or PERMISSIVE"),
        (
            {"valueFormat": "avro", "valueSchemaId": "3", "valueSchemaVersion": "2"},
            "'valueSchemaId' and 'valueSchemaVersion' exclude each other",
        ),
        ({"keyFormat": "avro", "keySchemaVersion": "0"}, "'keySchemaVersion' must be a positive"),
        ({"valueFormat": "avro", "valueMessageName": "M"}, "for valueFormat=protobuf only"),
    ],
)
def test_format_options_are_checked(options: dict[str, str], message: str) -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}
    with pytest.raises(ValueError, match=message):
        SourceOptions.parse({**base, **options})


def test_format_options_parse() -> None:
    parsed = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": "b:9092",
            "assign": '{"t": [0]}',
            "valueFormat": "Protobuf",
            "valueMessageName": "shop.Order",
            "valueSchemaVersion": "2",
            "schema.registry.url": "http://r:8081",
            "schema.registry.basic.auth.user.info": "u:secret",
            "mode": "permissive",
        }
    )
    assert parsed.value_format is not None and parsed.key_format is None
    assert (parsed.value_format.format, parsed.value_format.version) == ("protobuf", 2)
    assert parsed.value_format.message == "shop.Order"
    assert parsed.subject_topics() == ("t",)
    assert parsed.permissive and parsed.registry_url == "http://r:8081"
    assert "secret" not in repr(parsed)
