"""Avro unions of several types as Confluent's ``io.confluent.connect.avro.Union`` structs, both
ways: the schema mapping, values through the codec, and records confluent-kafka's
``AvroSerializer`` wrote, read and written again by the converter."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import timestamp_schema
from sluice.connect.converters.schema_registry.avro_data import AVRO_TYPE_UNION, AvroData
from sluice.schemas.avro_codec import AvroCodec
from tests.connect.converters.converter_fixtures import avro_converter
from tests.schema_registry.conftest import RegistryProcess

EMAIL = {
    "type": "record",
    "name": "Email",
    "namespace": "shop",
    "fields": [{"name": "to", "type": "string"}],
}
SMS = {
    "type": "record",
    "name": "Sms",
    "namespace": "shop",
    "fields": [{"name": "phone", "type": "long"}],
}
CONTACT = {
    "type": "record",
    "name": "Contact",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "via", "type": ["null", EMAIL, SMS]},
        {
            "name": "tag",
            "type": ["int", "string", {"type": "long", "logicalType": "timestamp-millis"}],
            "default": 3,
        },
    ],
}


def test_a_union_of_several_types_is_a_union_struct() -> None:
    data = AvroData()
    schema = data.to_connect_schema(CONTACT)
    via, tag = schema.fields[1].schema, schema.fields[2].schema
    assert via.name == tag.name == AVRO_TYPE_UNION
    assert via.optional and not tag.optional
    assert [f.name for f in via.fields] == ["Email", "Sms"]
    assert [f.name for f in tag.fields] == ["int", "string", "long"]
    assert all(f.schema.optional for f in (*via.fields, *tag.fields))
    assert via.fields[0].schema.name == "shop.Email"
    assert tag.fields[2].schema == timestamp_schema(optional=True)
    assert tag.default.values == {"int": 3}  # a union's default is of its first branch
    assert [
        f.name
        for f in AvroData(enhanced_schema_support=True)
        .to_connect_schema(CONTACT)
        .fields[1]
        .schema.fields
    ] == [
        "shop.Email",
        "shop.Sms",
    ]
    back = data.from_connect_schema(schema)
    assert back["fields"][1]["type"][0] == "null" and back["fields"][1]["default"] is None
    assert [b["name"] for b in back["fields"][1]["type"][1:]] == ["Email", "Sms"]
    assert back["fields"][2]["type"][:2] == ["int", "string"]
    assert data.to_connect_schema(back) == schema


@pytest.mark.parametrize(
    ("field", "branch", "member"),
    [
        ("via", "Email", {"to": "a@b"}),
        ("via", "Sms", {"phone": 5}),
        ("via", None, None),
        ("tag", "int", 7),
        ("tag", "string", "x"),
        ("tag", "long", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=dt.UTC)),
    ],
)
def test_union_values_round_trip_through_the_branch_of_their_field(
    field: str, branch: str | None, member: Any
) -> None:
    data = AvroData()
    schema = data.to_connect_schema(CONTACT)
    tag = schema.fields[2].schema
    record = Struct(schema, {"id": 1, "via": None, "tag": Struct(tag, {"int": 1})})
    if branch is not None:
        union = schema.fields[[f.name for f in schema.fields].index(field)].schema
        branch_schema = union.fields[[f.name for f in union.fields].index(branch)].schema
        if isinstance(member, dict):
            member = Struct(branch_schema, member)
        record.values[field] = Struct(union, {branch: member})
    codec = AvroCodec(data.from_connect_schema(schema))
    encoded = codec.encode(data.from_connect_data(schema, record))
    assert data.to_connect_data(schema, codec.decode(encoded)) == record


def test_a_non_optional_union_needs_a_field_set() -> None:
    data = AvroData()
    schema = data.to_connect_schema(CONTACT)
    union = schema.fields[2].schema
    with pytest.raises(ConverterError, match="tag: No field of the non-optional union"):
        data.from_connect_data(
            schema, Struct(schema, {"id": 1, "via": None, "tag": Struct(union, {})})
        )


def test_records_avro_serializer_wrote_read_and_written_again(registry: RegistryProcess) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    try:
        context = SerializationContext("contacts", MessageField.VALUE)
        serializer = AvroSerializer(client, json.dumps(CONTACT))
        for datum in (
            {"id": 1, "via": {"to": "a@b"}, "tag": "vip"},
            {"id": 2, "via": {"phone": 123}, "tag": 3},
            {"id": 3, "via": None, "tag": ("long", dt.datetime(2024, 1, 1, tzinfo=dt.UTC))},
        ):
            written = serializer(datum, context)
            assert written is not None
            converter = avro_converter(registry.url)
            schema, value = converter.to_connect("contacts", written)
            assert schema is not None and value.values["id"] == datum["id"]
            again = converter.from_connect("contacts", schema, value)
            assert again is not None and again[5:] == written[5:]
    finally:
        client.close()


def test_union_struct_schema_in_a_record_is_a_plain_union() -> None:
    union = Schema.struct(
        [
            Field("int", Schema("int32", optional=True)),
            Field("string", Schema("string", optional=True)),
        ],
        name=AVRO_TYPE_UNION,
    )
    record = Schema.struct([Field("u", union)], name="r.R")
    avro = AvroData().from_connect_schema(record)
    assert avro["fields"][0] == {"name": "u", "type": ["int", "string"]}
