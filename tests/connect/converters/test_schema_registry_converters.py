"""Confluent's ``AvroConverter`` and ``JsonSchemaConverter`` against a real ``sluice
schema-registry`` process: Connect schema + value → Confluent wire-format bytes → Connect schema
+ value for every Connect type; the schemas registered as Confluent's ``AvroData`` /
``JsonSchemaData`` write them; refused settings; bytes that are not the wire format."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import date_schema, decimal_schema, time_schema, timestamp_schema
from sluice.connect.converters import converter_from
from sluice.connect.converters.schema_registry.avro_data import AvroData
from sluice.connect.converters.schema_registry.json_schema_data import JsonSchemaData
from sluice.errors import ConfigError
from tests.connect.converters.converter_fixtures import (
    AVRO,
    FORMATS,
    JSON_SCHEMA,
    PRICE_10_2,
    avro_converter,
    make_converter,
)
from tests.pg import PostgresServer, shared_postgres  # noqa: F401  (fixture)
from tests.schema_registry.conftest import RegistryProcess

# -- every Connect type, one round trip each

PRICE = decimal_schema(2)
CASES: list[tuple[str, Schema, Any]] = [
    ("int8", Schema("int8"), -8),
    ("int16", Schema("int16"), 300),
    ("int32", Schema("int32"), -70_000),
    ("int64", Schema("int64"), 2**40),
    ("float32", Schema("float32"), 1.5),
    ("float64", Schema("float64"), 2.25e300),
    ("boolean", Schema("boolean"), True),
    ("string", Schema("string"), "héllo"),
    ("bytes", Schema("bytes"), b"\x00\xff"),
    ("decimal", PRICE, Decimal("-1.29")),
    ("decimal-precision", PRICE_10_2, Decimal("12345678.90")),
    ("date", date_schema(), dt.date(2024, 2, 29)),
    ("time", time_schema(), dt.time(13, 14, 15, 123000)),
    ("timestamp", timestamp_schema(), dt.datetime(2024, 2, 29, 1, 2, 3, 456000, tzinfo=dt.UTC)),
    ("array", Schema("array", value_schema=Schema("int32")), [1, 2, 3]),
    (
        "map-string",
        Schema("map", key_schema=Schema("string"), value_schema=Schema("int64")),
        {"a": 1, "b": 2},
    ),
    (
        "map-int",
        Schema("map", key_schema=Schema("int32"), value_schema=Schema("string")),
        {1: "one", 2: "two"},
    ),
    ("optional-string", Schema("string", optional=True), None),
    ("named-primitive", Schema("string", name="my.Name", version=3, doc="d"), "x"),
]


@FORMATS
@pytest.mark.parametrize(("name", "schema", "value"), CASES, ids=[c[0] for c in CASES])
def test_every_connect_type_round_trips(
    registry: RegistryProcess, kind: str, name: str, schema: Schema, value: Any
) -> None:
    converter = make_converter(kind, registry.url)
    topic = f"types-{name}-{kind.rsplit('.', 1)[1]}"
    data = converter.from_connect(topic, schema, value)
    if value is None:
        assert data is None
        return
    assert data is not None and data[0] == 0  # Confluent's magic byte, then the schema id
    back_schema, back = make_converter(kind, registry.url).to_connect(topic, data)  # a fresh one
    # A schema without a Connect version gets the subject's version (1 here), as Confluent's do.
    assert back_schema == _versioned(schema)
    assert back == value


def _versioned(schema: Schema, version: int = 1) -> Schema:
    return schema if schema.version is not None else dataclasses.replace(schema, version=version)


ADDRESS = Schema.struct(
    [Field("street", Schema("string")), Field("zip", Schema("string", optional=True))],
    name="shop.Address",
)
ORDER = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("at", timestamp_schema(optional=True)),
        Field("note", Schema("string", optional=True, doc="free text")),
        Field("qty", Schema("int32", default=1)),
        Field("home", ADDRESS),
        Field("work", Schema("struct", optional=True, name="shop.Address", fields=ADDRESS.fields)),
        Field(
            "lines", Schema("array", value_schema=Schema.struct([Field("sku", Schema("string"))]))
        ),
        Field(
            "tags",
            Schema(
                "map", key_schema=Schema("string"), value_schema=Schema("string", optional=True)
            ),
        ),
    ],
    name="shop.Order",
)


def _order() -> Struct:
    line = Struct(ORDER.fields[8].schema.value_schema, {"sku": "A-1"})  # type: ignore[arg-type]
    return Struct(
        ORDER,
        {
            "id": 7,
            "amount": Decimal("10.50"),
            "day": dt.date(2024, 1, 2),
            "at": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            "note": None,
            "qty": 3,
            "home": Struct(ADDRESS, {"street": "Main", "zip": None}),
            "work": Struct(ORDER.fields[7].schema, {"street": "Dock", "zip": "123"}),
            "lines": [line, line],
            "tags": {"a": None, "b": "x"},
        },
    )


@FORMATS
def test_nested_structs_optional_fields_and_defaults_round_trip(
    registry: RegistryProcess, kind: str
) -> None:
    topic = f"nested-{kind.rsplit('.', 1)[1]}"
    data = make_converter(kind, registry.url).from_connect(topic, ORDER, _order())
    schema, value = make_converter(kind, registry.url).to_connect(topic, data)
    assert schema == _versioned(ORDER)
    assert value == dataclasses.replace(_order(), schema=_versioned(ORDER))


def test_registered_schema_is_confluents_avro_data_form(registry: RegistryProcess) -> None:
    converter = avro_converter(registry.url)
    converter.from_connect("orders", ORDER, _order())
    client = SchemaRegistryClient({"url": registry.url})
    registered = client.get_latest_version("orders-value")  # TopicNameStrategy
    avro = json.loads(registered.schema.schema_str or "null")
    assert (avro["type"], avro["name"], avro["namespace"]) == ("record", "Order", "shop")
    assert avro["connect.name"] == "shop.Order"
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["amount"]["type"] == {
        "type": "bytes",
        "scale": 2,
        "precision": 10,
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }
    assert fields["day"]["type"]["logicalType"] == "date"
    assert fields["at"]["type"][0] == "null" and fields["at"]["default"] is None
    assert fields["at"]["type"][1]["logicalType"] == "timestamp-millis"
    assert fields["note"]["doc"] == "free text"
    assert fields["qty"] == {
        "name": "qty",
        "type": {"type": "int", "connect.default": 1},
        "default": 1,
    }
    # Defined once, then referred to by name (relative to the namespace "shop", or not).
    assert fields["work"]["type"][0] == "null"
    assert fields["work"]["type"][1] in ("shop.Address", "Address")
    assert fields["lines"]["type"]["items"]["name"] == "ConnectDefault"
    assert fields["tags"]["type"]["type"] == "map"
    client.close()


def test_confluent_serializer_and_converter_agree(registry: RegistryProcess) -> None:
    """Bytes written by confluent-kafka's own AvroSerializer read through the converter, and the
    converter's bytes read by its AvroDeserializer (logical types as Python values)."""
    client = SchemaRegistryClient({"url": registry.url})
    avro = {
        "type": "record",
        "name": "Payment",
        "namespace": "bank",
        "doc": "a payment",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                        "precision": 12, "scale": 3}},
            {"name": "currency", "type": {"type": "enum", "name": "Currency",
                                          "symbols": ["EUR", "USD"]}},
            {"name": "memo", "type": ["null", "string"], "default": None},
        ],
    }  # fmt: skip
    ctx = SerializationContext("payments", MessageField.VALUE)
    data = AvroSerializer(client, json.dumps(avro))(
        {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}, ctx
    )
    schema, value = avro_converter(registry.url).to_connect("payments", data)
    assert schema is not None and (schema.name, schema.version) == ("bank.Payment", 1)
    assert dict(schema.parameters) == {"connect.record.doc": "a payment"}
    assert schema.field("amount").schema.parameters == (  # type: ignore[union-attr]
        ("scale", "3"),
        ("connect.decimal.precision", "12"),
    )
    currency = schema.field("currency").schema  # type: ignore[union-attr]
    assert (currency.type, currency.name) == ("string", "bank.Currency")
    assert dict(currency.parameters)["io.confluent.connect.avro.Enum.USD"] == "USD"
    assert schema.field("memo").schema.optional  # type: ignore[union-attr]
    assert value.values == {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}
    # Back out with enhanced support: the enum is an enum again, readable by Confluent's reader.
    enhanced = avro_converter(registry.url, {"enhanced.avro.schema.support": "true"})
    again = enhanced.from_connect("payments-copy", schema, value)
    read = AvroDeserializer(client)(
        again, SerializationContext("payments-copy", MessageField.VALUE)
    )
    assert read == {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}
    client.close()


def test_keys_use_the_key_subject_and_record_name_strategy(registry: RegistryProcess) -> None:
    key_schema = Schema.struct([Field("id", Schema("int32"))], name="shop.OrderKey")
    converter = avro_converter(
        registry.url,
        {"key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
        is_key=True,
    )
    data = converter.from_connect("orders", key_schema, Struct(key_schema, {"id": 5}))
    client = SchemaRegistryClient({"url": registry.url})
    assert "shop.OrderKey" in client.get_subjects()
    client.close()
    assert avro_converter(registry.url, is_key=True).to_connect("orders", data)[1].values == {
        "id": 5
    }


def test_without_auto_register_a_missing_schema_is_an_error(registry: RegistryProcess) -> None:
    converter = avro_converter(registry.url, {"auto.register.schemas": "false"})
    with pytest.raises(ConverterError, match="Failed to serialize Avro data"):
        converter.from_connect("unregistered", Schema("string"), "x")


@FORMATS
def test_bytes_not_in_the_wire_format_are_a_converter_error(
    registry: RegistryProcess, kind: str
) -> None:
    converter = make_converter(kind, registry.url)
    with pytest.raises(ConverterError, match="Unknown magic byte"):
        converter.to_connect("t", b'{"json": true}')
    with pytest.raises(ConverterError, match="schema id 99999"):
        converter.to_connect("t", b"\x00\x00\x01\x86\x9f\x02")
    assert converter.to_connect("t", None) == (None, None)


@FORMATS
def test_null_for_a_required_field_is_a_converter_error(
    registry: RegistryProcess, kind: str
) -> None:
    schema = Schema.struct([Field("id", Schema("int64"))], name="R")
    with pytest.raises(ConverterError, match=r"id: .*null value for"):
        make_converter(kind, registry.url).from_connect("t", schema, Struct(schema, {}))


def test_json_schema_registered_as_confluents_json_schema_data_form(
    registry: RegistryProcess,
) -> None:
    converter = make_converter(JSON_SCHEMA, registry.url)
    data = converter.from_connect("orders-json", ORDER, _order())
    client = SchemaRegistryClient({"url": registry.url})
    try:
        registered = client.get_latest_version("orders-json-value").schema
    finally:
        client.close()
    assert registered.schema_type == "JSON"
    document = json.loads(registered.schema_str or "null")
    assert (document["type"], document["title"]) == ("object", "shop.Order")
    props = document["properties"]
    assert props["id"] == {"type": "integer", "connect.type": "int64", "connect.index": 0}
    assert props["amount"] == {
        "type": "number",
        "title": "org.apache.kafka.connect.data.Decimal",
        "connect.type": "bytes",
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.index": 1,
    }
    assert props["at"]["oneOf"][0] == {"type": "null"} and props["at"]["connect.index"] == 3
    assert props["tags"]["connect.type"] == "map"
    # The payload is plain JSON after the 5-byte header; BASE64 decimals (Confluent's default).
    payload = json.loads(data[5:])  # type: ignore[index]
    assert payload["amount"] == "BBo="  # 1050 unscaled, scale 2
    assert payload["day"] == (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days


def test_json_schema_numeric_decimals_and_confluents_json_serializer(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct([Field("price", PRICE), Field("n", Schema("int32"))], name="P")
    numeric = make_converter(JSON_SCHEMA, registry.url, {"decimal.format": "NUMERIC"})
    data = numeric.from_connect(
        "prices", schema, Struct(schema, {"price": Decimal("-1.20"), "n": 1})
    )
    assert data is not None and json.loads(data[5:]) == {"price": -1.2, "n": 1}
    assert b'"price":-1.20' in data
    back = numeric.to_connect("prices", data)[1]
    assert back.values == {"price": Decimal("-1.20"), "n": 1}
    # A value written by confluent-kafka's own JSONSerializer with a hand-written schema.
    client = SchemaRegistryClient({"url": registry.url})
    try:
        document = {
            "type": "object",
            "title": "shop.Item",
            "properties": {
                "sku": {"type": "string"},
                "qty": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "price": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/money"}]},
            },
            "definitions": {"money": {"type": "number"}},
        }
        ctx = SerializationContext("items", MessageField.VALUE)
        written = JSONSerializer(json.dumps(document), client)(
            {"sku": "A-1", "qty": 2, "tags": ["x"], "price": 2.5}, ctx
        )
    finally:
        client.close()
    schema_read, value = make_converter(JSON_SCHEMA, registry.url).to_connect("items", written)
    assert schema_read is not None and (schema_read.name, schema_read.version) == ("shop.Item", 1)
    assert [(f.name, f.schema.type, f.schema.optional) for f in schema_read.fields] == [
        ("sku", "string", False),
        ("qty", "int64", False),
        ("tags", "array", False),
        ("price", "float64", True),
    ]
    assert value.values == {"sku": "A-1", "qty": 2, "tags": ["x"], "price": 2.5}


def test_json_schema_with_validation_refuses_a_value_off_its_schema(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct([Field("price", PRICE)], name="Q")
    strict = make_converter(JSON_SCHEMA, registry.url, {"json.fail.invalid.schema": "true"})
    # BASE64 decimals are text, which the schema's "type": "number" refuses when validating.
    with pytest.raises(ConverterError, match="Failed to serialize JSON data"):
        strict.from_connect("strict", schema, Struct(schema, {"price": Decimal("1.00")}))


def test_json_schema_combinations_without_connect_form_are_refused() -> None:
    # oneOf/anyOf of several types are union structs (test_json_schema_unions.py)
    with pytest.raises(ConverterError, match="oneOf/anyOf must be a non-empty array"):
        JsonSchemaData().to_connect_schema({"oneOf": []})
    with pytest.raises(ConverterError, match="allOf"):
        JsonSchemaData().to_connect_schema({"allOf": [{"type": "string"}]})


# -- settings (no registry needed: the client connects on first use)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "schema.registry.url: is required"),
        ({"schema.registry.url": "localhost:8081"}, "not an http"),
        ({"schema.registry.url": "http://x", "scrub.invalid.names": "true"}, "not supported"),
        ({"schema.registry.url": "http://x", "schemas.enable": "false"}, "schemas.enable"),
        ({"schema.registry.url": "http://x", "latest.compatibility.strict": "false"}, "latest"),
        (
            {"schema.registry.url": "http://x", "value.subject.name.strategy": "my.Strategy"},
            "unknown strategy",
        ),
        (
            {"schema.registry.url": "http://x", "basic.auth.credentials.source": "SASL_INHERIT"},
            "SASL_INHERIT is not supported",
        ),
        (
            {"schema.registry.url": "http://x", "basic.auth.credentials.source": "USER_INFO"},
            "must be user:password",
        ),
        ({"schema.registry.url": "http://x", "use.latest.version": "true"}, "auto.register"),
        ({"schema.registry.url": "http://x", "connect.meta.data": "maybe"}, "true or false"),
        ({"schema.registry.url": "http://x", "schemas.cache.config": "0"}, "at least 1"),
    ],
)
def test_unsupported_or_bad_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        converter_from(AVRO, settings, is_key=False)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"decimal.format": "HEX"}, "BASE64 or NUMERIC"),
        ({"connect.meta.data": "true"}, "not supported by Sluice's JsonSchemaConverter"),
        ({"object.additional.properties": "false"}, "not supported"),
        ({"json.fail.invalid.schema": "yes"}, "true or false"),
    ],
)
def test_json_schema_converter_refuses_what_it_does_not_implement(
    settings: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        converter_from(JSON_SCHEMA, {"schema.registry.url": "http://x", **settings}, False)


def test_connect_meta_data_false_leaves_out_connect_properties() -> None:
    schema = Schema.struct([Field("d", date_schema())], name="x.R")
    plain = AvroData(connect_meta_data=False).from_connect_schema(schema)
    assert plain == {
        "type": "record",
        "name": "R",
        "namespace": "x",
        "fields": [{"name": "d", "type": {"type": "int", "logicalType": "date"}}],
    }
    full = AvroData().from_connect_schema(schema)
    assert full["connect.name"] == "x.R"
    assert full["fields"][0]["type"]["connect.name"] == "org.apache.kafka.connect.data.Date"


def test_avro_unions_of_several_types_are_union_structs() -> None:
    # the mapping both ways: test_avro_unions.py
    schema = AvroData().to_connect_schema(["null", "string", "long"])
    assert schema.name == "io.confluent.connect.avro.Union" and schema.optional
    assert [f.name for f in schema.fields] == ["string", "long"]
