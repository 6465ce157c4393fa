"""Confluent's ``JsonSchemaConverter`` with ``oneOf``/``anyOf``/``allOf`` and schema references,
against a real ``sluice schema-registry`` process: confluent-kafka's ``JSONSerializer`` writes
the bytes the converter reads, and its ``JSONDeserializer`` reads the bytes the converter
writes; the Connect forms are those of Confluent's ``JsonSchemaData``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema as RegisteredSchema
from confluent_kafka.schema_registry import SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.schema_registry.json_schema_data import (
    JsonSchemaData,
    referenced_documents,
)
from tests.connect.converters.converter_fixtures import JSON_SCHEMA, make_converter
from tests.schema_registry.conftest import RegistryProcess

ONE_OF = "io.confluent.connect.json.OneOf"
PAYMENT = {
    "type": "object",
    "title": "shop.Payment",
    "properties": {
        "id": {"type": "integer"},
        "method": {
            "oneOf": [
                {"type": "null"},
                {"type": "string"},
                {
                    "type": "object",
                    "title": "shop.Card",
                    "properties": {"number": {"type": "string"}, "cvc": {"type": "integer"}},
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "title": "shop.Transfer",
                    "properties": {"iban": {"type": "string"}},
                    "additionalProperties": False,
                },
            ]
        },
        "amount": {"anyOf": [{"type": "integer"}, {"type": "number"}, {"type": "boolean"}]},
        "status": {"type": "string", "enum": ["PAID", "REFUNDED"]},
    },
}


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_one_of_and_any_of_read_as_confluents_one_of_structs(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(registry.url)
    serializer = JSONSerializer(json.dumps(PAYMENT), client)
    records = [
        {"id": 1, "method": "cash", "amount": 5, "status": "PAID"},
        {"id": 2, "method": {"number": "4111", "cvc": 123}, "amount": 2.5, "status": "PAID"},
        {"id": 3, "method": {"iban": "DE89"}, "amount": True, "status": "REFUNDED"},
        {"id": 4, "method": None, "amount": 0, "status": "PAID"},
    ]
    converter = make_converter(JSON_SCHEMA, registry.url)
    schema, _ = converter.to_connect("payments", serializer(records[0], _ctx("payments")))
    assert schema is not None
    method, amount = schema.field("method"), schema.field("amount")
    assert method is not None and amount is not None
    assert (method.schema.name, method.schema.optional) == (ONE_OF, True)
    alternatives = method.schema.fields
    assert [(f.name, f.schema.type, f.schema.name, f.schema.optional) for f in alternatives] == [
        (f"{ONE_OF}.field.0", "string", None, True),
        (f"{ONE_OF}.field.1", "struct", "shop.Card", True),
        (f"{ONE_OF}.field.2", "struct", "shop.Transfer", True),
    ]  # fmt: skip
    assert (amount.schema.name, amount.schema.optional) == (ONE_OF, False)
    assert [f.schema.type for f in amount.schema.fields] == ["int64", "float64", "boolean"]
    got = [
        _plain(converter.to_connect("payments", serializer(r, _ctx("payments")))[1])
        for r in records
    ]
    assert got == [
        {"id": 1, "method": {f"{ONE_OF}.field.0": "cash"}, "amount": {f"{ONE_OF}.field.0": 5},
         "status": "PAID"},
        {"id": 2, "method": {f"{ONE_OF}.field.1": {"number": "4111", "cvc": 123}},
         "amount": {f"{ONE_OF}.field.1": 2.5}, "status": "PAID"},
        {"id": 3, "method": {f"{ONE_OF}.field.2": {"iban": "DE89"}},
         "amount": {f"{ONE_OF}.field.2": True}, "status": "REFUNDED"},
        {"id": 4, "method": None, "amount": {f"{ONE_OF}.field.0": 0}, "status": "PAID"},
    ], got  # fmt: skip


def test_unions_written_back_are_one_of_that_confluents_deserializer_reads(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(registry.url)
    serializer = JSONSerializer(json.dumps(PAYMENT), client)
    reader = make_converter(JSON_SCHEMA, registry.url)
    writer = make_converter(JSON_SCHEMA, registry.url)
    # Not validated: a oneOf written back from Connect is not exclusive for objects (Connect
    # keeps no "required" nor "additionalProperties": false), with Confluent's converter too.
    deserializer = JSONDeserializer(None, schema_registry_client=client, conf={"validate": False})
    records = [
        {"id": 2, "method": {"number": "4111", "cvc": 123}, "amount": 2.5, "status": "PAID"},
        {"id": 3, "method": {"iban": "DE89"}, "amount": True, "status": "REFUNDED"},
        {"id": 4, "method": None, "amount": 7, "status": "PAID"},
    ]
    for record in records:
        schema, value = reader.to_connect("payments-in", serializer(record, _ctx("payments-in")))
        data = writer.from_connect("payments-out", schema, value)
        assert data is not None
        assert deserializer(data, _ctx("payments-out")) == record
    document = json.loads(client.get_latest_version("payments-out-value").schema.schema_str or "")
    method = document["properties"]["method"]
    assert method["connect.index"] == 1
    assert method["oneOf"][0] == {"type": "null"}
    assert [s.get("title") for s in method["oneOf"][1:]] == [None, "shop.Card", "shop.Transfer"]
    assert [s["connect.index"] for s in method["oneOf"][1:]] == [0, 1, 2]
    assert document["properties"]["status"]["enum"] == ["PAID", "REFUNDED"]


def test_all_of_properties_make_one_struct_and_a_string_all_of_a_string(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    document = {
        "title": "shop.Customer",
        "allOf": [
            {"$ref": "#/$defs/Named"},
            {"type": "object", "properties": {"since": {"allOf": [{"type": "string"},
                                                                  {"format": "date"}]}}},
        ],
        "$defs": {"Named": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }  # fmt: skip
    client = sr_client(registry.url)
    data = JSONSerializer(json.dumps(document), client)(
        {"name": "Ada", "since": "2020-01-02"}, _ctx("customers")
    )
    schema, value = make_converter(JSON_SCHEMA, registry.url).to_connect("customers", data)
    assert schema is not None
    assert [(f.name, f.schema.type) for f in schema.fields] == [
        ("name", "string"),
        ("since", "string"),
    ]
    assert value.values == {"name": "Ada", "since": "2020-01-02"}


def test_generalized_sum_types_use_connect_union_names() -> None:
    data = JsonSchemaData(generalized_sum_type_support=True)
    schema = data.to_connect_schema(PAYMENT)
    method, amount, status = (schema.field(n) for n in ("method", "amount", "status"))
    assert method is not None and amount is not None and status is not None
    assert method.schema.name == "connect_union_0" and amount.schema.name == "connect_union_1"
    assert dict(method.schema.parameters) == {
        "org.apache.kafka.connect.data.Union": "connect_union_0"
    }
    assert [f.name for f in method.schema.fields] == [f"connect_union_field_{i}" for i in range(3)]
    assert dict(status.schema.parameters) == {
        "org.apache.kafka.connect.data.Enum": "",
        "org.apache.kafka.connect.data.Enum.PAID": "0",
        "org.apache.kafka.connect.data.Enum.REFUNDED": "1",
    }
    assert data.to_connect_schema(data.from_connect_schema(schema)) == schema
    value = data.to_connect_data(schema, {"id": 1, "method": "x", "amount": 1, "status": "PAID"})
    assert _plain(value)["method"] == {"connect_union_field_0": "x"}


def test_a_value_no_alternative_takes_and_bad_combinations_are_converter_errors() -> None:
    data = JsonSchemaData()
    union = data.to_connect_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
    with pytest.raises(ConverterError, match="Did not find matching oneof field"):
        data.to_connect_data(union, [1, 2])
    with pytest.raises(ConverterError, match="Unsupported criterion allOf"):
        data.to_connect_schema({"allOf": [{"type": "string"}, {"type": "integer"}]})
    with pytest.raises(ConverterError, match="non-empty array"):
        data.to_connect_schema({"oneOf": []})
    with pytest.raises(
        ConverterError, match=r"neither local .* nor one of the schema's references"
    ):
        data.to_connect_schema({"$ref": "address.json"})
    required = Schema("struct", name=ONE_OF, fields=(Field("a", Schema("string", optional=True)),))
    with pytest.raises(ConverterError, match="null value for field that is required"):
        data.from_connect_data(required, Struct(required, {"a": None}))


def test_references_resolve_through_the_registry(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(registry.url)
    address = {
        "$id": "https://shop.example/address.json",
        "type": "object",
        "title": "shop.Address",
        "properties": {"city": {"$ref": "#/$defs/City"}, "zip": {"type": "string"}},
        "$defs": {"City": {"type": "string"}},
    }
    client.register_schema("address", RegisteredSchema(json.dumps(address), "JSON"))
    order = {
        "type": "object",
        "title": "shop.Order",
        "properties": {
            "id": {"type": "integer"},
            "ship_to": {"$ref": "address.json"},
            "bill_to": {"oneOf": [{"type": "null"}, {"$ref": "address.json"}]},
        },
    }
    main = RegisteredSchema(
        json.dumps(order), "JSON", [SchemaReference("address.json", "address", 1)]
    )
    record = {"id": 7, "ship_to": {"city": "Lyon", "zip": "69001"}, "bill_to": None}
    data = JSONSerializer(main, client)(record, _ctx("orders"))
    assert data is not None
    registered = client.get_schema(int.from_bytes(data[1:5], "big"))
    documents = referenced_documents(client, registered)
    assert list(documents) == ["address.json"]
    json_data = JsonSchemaData()
    schema = json_data.to_connect_schema(json.loads(registered.schema_str or ""), documents)
    ship_to, bill_to = schema.field("ship_to"), schema.field("bill_to")
    assert ship_to is not None and bill_to is not None
    assert ship_to.schema.name == "shop.Address" and not ship_to.schema.optional
    assert [(f.name, f.schema.type) for f in ship_to.schema.fields] == [
        ("city", "string"),
        ("zip", "string"),
    ]
    assert bill_to.schema == dataclasses.replace(ship_to.schema, optional=True)
    node = JSONDeserializer(None, schema_registry_client=client)(data, _ctx("orders"))
    assert _plain(json_data.to_connect_data(schema, node)) == record


_KINDS = {
    # (within ±2**53: an integer read into a float64 alternative stays the same number)
    "int64": (Schema("int64", optional=True), st.integers(-(2**53), 2**53)),
    "float64": (
        Schema("float64", optional=True),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()),
    ),
    "boolean": (Schema("boolean", optional=True), st.booleans()),
    "string": (Schema("string", optional=True), st.text(max_size=5)),
    "array": (
        Schema("array", optional=True, value_schema=Schema("string")),
        st.lists(st.text(max_size=3), max_size=3),
    ),
}


@st.composite
def _union_and_value(draw: st.DrawFn) -> tuple[Schema, int, Any]:
    kinds = draw(st.lists(st.sampled_from(sorted(_KINDS)), min_size=2, max_size=5, unique=True))
    fields = tuple(Field(f"{ONE_OF}.field.{i}", _KINDS[k][0]) for i, k in enumerate(kinds))
    union = Schema("struct", optional=draw(st.booleans()), name=ONE_OF, fields=fields)
    chosen = draw(st.integers(0, len(kinds) - 1))
    return union, chosen, draw(_KINDS[kinds[chosen]][1])


@settings(max_examples=60, deadline=None)
@given(_union_and_value())
def test_union_schemas_and_values_round_trip_through_json(case: tuple[Schema, int, Any]) -> None:
    union, chosen, item = case
    data = JsonSchemaData()
    assert data.to_connect_schema(data.from_connect_schema(union)) == union
    field = union.fields[chosen].name
    node = json.loads(json.dumps(data.from_connect_data(union, Struct(union, {field: item}))))
    read = data.to_connect_data(union, node)
    # read into the first alternative of the value's JSON type (an integer fits a float64 too)
    kinds = [f.schema.type for f in union.fields]
    first = next(
        i
        for i, k in enumerate(kinds)
        if k == kinds[chosen] or (k, kinds[chosen]) == ("float64", "int64")
    )
    assert read.values == {union.fields[first].name: item}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {k: _plain(v) for k, v in value.values.items()}
    return value
