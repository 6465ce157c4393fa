"""Confluent's ``ProtobufConverter`` with ``oneof``, ``enum`` and schema references, against a
real ``sluice schema-registry`` process: confluent-kafka's ``ProtobufSerializer`` writes the
bytes the converter reads, and the bytes the converter writes parse, through confluent-kafka's
``ProtobufDeserializer``, as messages of the writer's original class (same numbers and types);
the Connect forms are those of Confluent's ``ProtobufData``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.schema_registry.protobuf_data import (
    ProtobufData,
    registered_descriptor,
)
from sluice.schemas.serdes import message_class
from tests.connect.converters.converter_fixtures import make_converter
from tests.schema_registry.conftest import RegistryProcess

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
UNION = "io.confluent.connect.protobuf.Union"
ENUM = "io.confluent.connect.protobuf.Enum"
TAG = "io.confluent.connect.protobuf.Tag"
PAYMENT = """syntax = "proto3";
package shop;

message Payment {
  int64 id = 1;
  oneof method {
    string card = 2;
    Transfer transfer = 3;
  }
  Status status = 4;
  repeated Status history = 5;
  map<string, Status> by_step = 6;

  message Transfer { string iban = 1; }
  enum Status { UNKNOWN = 0; PAID = 1; REFUNDED = 2; }
}
"""
STATUS_PARAMS = (
    (ENUM, "Status"),
    (f"{ENUM}.UNKNOWN", "0"),
    (f"{ENUM}.PAID", "1"),
    (f"{ENUM}.REFUNDED", "2"),
)
SERDE_CONF = {"use.deprecated.format": False}


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _payments(cls: Any) -> list[Any]:
    return [
        cls(id=1, card="4111", status=1, history=[0, 1], by_step={"a": 1}),
        cls(id=2, transfer=cls.Transfer(iban="DE89"), status=2, history=[2]),
        cls(id=3),
    ]


def test_oneof_and_enums_read_as_confluents_union_struct_and_enum_strings(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    cls = message_class(PAYMENT)
    serializer = ProtobufSerializer(cls, sr_client(registry.url), SERDE_CONF)
    converter = make_converter(PROTOBUF, registry.url)
    read = [
        converter.to_connect("payments", serializer(m, _ctx("payments"))) for m in _payments(cls)
    ]
    schema = read[0][0]
    assert schema is not None
    assert [f.name for f in schema.fields] == ["method_0", "id", "status", "history", "by_step"]
    method = schema.fields[0].schema
    assert (method.type, method.name, method.optional) == (
        "struct",
        f"{UNION}.shop.Payment.method",
        True,
    )
    assert [(f.name, f.schema.type, dict(f.schema.parameters).get(TAG)) for f in method.fields] == [
        ("card", "string", "2"),
        ("transfer", "struct", "3"),
    ]
    status = schema.fields[2].schema
    assert status == Schema(
        "string", optional=True, name="shop.Payment.Status", parameters=STATUS_PARAMS
    )
    assert [_plain(value) for _, value in read] == [
        {"method_0": {"card": "4111"}, "id": 1, "status": "PAID",
         "history": ["UNKNOWN", "PAID"], "by_step": {"a": "PAID"}},
        {"method_0": {"transfer": {"iban": "DE89"}}, "id": 2, "status": "REFUNDED",
         "history": ["REFUNDED"], "by_step": {}},
        {"method_0": None, "id": 3, "status": "UNKNOWN", "history": [], "by_step": {}},
    ]  # fmt: skip


def test_unions_and_enums_written_back_parse_as_the_original_messages(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    cls = message_class(PAYMENT)
    client = sr_client(registry.url)
    serializer = ProtobufSerializer(cls, client, SERDE_CONF)
    reader, writer = make_converter(PROTOBUF, registry.url), make_converter(PROTOBUF, registry.url)
    deserializer = ProtobufDeserializer(cls, SERDE_CONF)
    for message in _payments(cls):
        schema, value = reader.to_connect("pay-in", serializer(message, _ctx("pay-in")))
        data = writer.from_connect("pay-out", schema, value)
        assert deserializer(data, _ctx("pay-out")) == message
        assert writer.to_connect("pay-out", data) == (schema, value)
    text = client.get_latest_version("pay-out-value").schema.schema_str or ""
    assert "oneof method {" in text and "enum Status {" in text, text
    assert "string card = 2;" in text and "Status status = 4;" in text, text


def test_an_unknown_symbol_or_an_enum_without_zero_is_a_converter_error(
    registry: RegistryProcess,
) -> None:
    status = Schema("string", name="Status", parameters=STATUS_PARAMS)
    schema = Schema.struct([Field("status", status)], name="shop.P")
    converter = make_converter(PROTOBUF, registry.url)
    with pytest.raises(
        ConverterError, match=r"'LOST' is not a symbol of enum Status \(UNKNOWN, PAID"
    ):
        converter.from_connect("p", schema, Struct(schema, {"status": "LOST"}))
    no_zero = Schema("string", name="Status", parameters=((ENUM, "Status"), (f"{ENUM}.PAID", "1")))
    bad = Schema.struct([Field("status", no_zero)], name="shop.Q")
    with pytest.raises(ConverterError, match="no value numbered 0"):
        converter.from_connect("q", bad, Struct(bad, {"status": "PAID"}))
    # enum values are scoped in the message that holds both enums: UNKNOWN twice clashes
    kind = Schema("string", name="Kind", parameters=((ENUM, "Kind"), (f"{ENUM}.UNKNOWN", "0")))
    both = Schema.struct([Field("status", status), Field("kind", kind)], name="shop.R")
    with pytest.raises(ConverterError, match=r"no valid proto3 form: .*duplicate symbol"):
        converter.from_connect("r", both, Struct(both, {"status": "PAID", "kind": "UNKNOWN"}))


def test_a_union_written_from_connect_numbers_members_after_the_tags_in_use() -> None:
    union = Schema(
        "struct",
        optional=True,
        name=f"{UNION}.pay",
        fields=(
            Field("card", Schema("string", optional=True, parameters=((TAG, "1"),))),
            Field("iban", Schema("string", optional=True)),
        ),
    )
    schema = Schema.struct([Field("pay_0", union), Field("id", Schema("int64"))], name="shop.P")
    data = ProtobufData()
    file = data.from_connect_schema(schema)
    message = file.message_type[0]
    assert [o.name for o in message.oneof_decl] == ["pay"]
    assert [(f.name, f.number, f.HasField("oneof_index")) for f in message.field] == [
        ("card", 1, True),
        ("iban", 2, True),
        ("id", 3, False),
    ]
    filled = data.fill(data.message_class(file)(), schema, {"pay_0": {"iban": "X"}, "id": 5})
    assert (filled.WhichOneof("pay"), filled.iban, filled.id) == ("iban", "X", 5)
    generalized = ProtobufData(generalized_sum_type_support=True)
    read = generalized.to_connect_schema(data.message_class(file).DESCRIPTOR)
    assert dict(read.fields[0].schema.parameters) == {"org.apache.kafka.connect.data.Union": "pay"}


def test_references_resolve_through_the_registry(
    registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(registry.url)
    # (no "/" in the file name: Sluice's registry does not yet route a subject with %2F)
    common = descriptor_pb2.FileDescriptorProto(
        name="shop_common.proto", package="shop.common", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=3, label=1)  # int64
    money.field.add(name="currency", number=2, type=14, label=1, type_name=".shop.common.Currency")
    currency = common.enum_type.add(name="Currency")
    currency.value.add(name="EUR", number=0)
    currency.value.add(name="USD", number=1)
    order = descriptor_pb2.FileDescriptorProto(
        name="shop_order.proto", package="shop", syntax="proto3", dependency=["shop_common.proto"]
    )
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=3, label=1)
    message.field.add(name="total", number=2, type=11, label=1, type_name=".shop.common.Money")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(order)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    value = cls(id=9)
    value.total.cents, value.total.currency = 1250, 1
    # confluent-kafka's serializer registers the import as a subject of its own, referenced
    data = ProtobufSerializer(cls, client, SERDE_CONF)(value, _ctx("orders"))
    assert data is not None
    registered = client.get_schema(int.from_bytes(data[1:5], "big"), fmt="serialized")
    assert [r.name for r in registered.references] == ["shop_common.proto"]
    descriptor = registered_descriptor(client, registered, "orders.proto", (0,))
    protobuf_data = ProtobufData()
    schema = protobuf_data.to_connect_schema(descriptor)
    total = schema.field("total")
    assert total is not None and total.schema.name == "shop.common.Money"
    assert [f.name for f in total.schema.fields] == ["cents", "currency"]
    read = message_factory.GetMessageClass(descriptor)()
    read.ParseFromString(data[6:])  # magic byte, id, message indexes [0]
    got = _plain(protobuf_data.to_connect_data(schema, read))
    assert got == {"id": 9, "total": {"cents": 1250, "currency": "USD"}}
    with pytest.raises(ConverterError, match=r"indexes \[3\] name no message"):
        registered_descriptor(client, registered, "orders.proto", (3,))


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {k: _plain(v) for k, v in value.values.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
