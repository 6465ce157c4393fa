"""Sluice's schema serdes against the real registry and broker, checked with confluent-kafka's
own deserializers; their options under Confluent's names; their errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.schemas.protobuf_messages import message_class, message_to_dict
from sluice.schemas.serdes import (
    AvroSerde,
    JsonSchemaSerde,
    ProtobufSerde,
    RegistryError,
    for_topic,
)
from sluice.serde import Serde, SerdeError
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic, free_port
from tests.schema_registry.conftest import RegistryProcess

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "item", "type": "string"},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
)
ORDER_V2 = json.dumps(
    {
        **json.loads(ORDER),
        "fields": [
            *json.loads(ORDER)["fields"],
            {"name": "quantity", "type": "int", "default": 1},
        ],
    }
)
ORDER_JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
        "required": ["id", "item"],
    }
)
ORDER_PROTO = """syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  string item = 2;
  map<string, int32> tags = 3;
  repeated Line lines = 4;
  Status status = 5;
  message Line { string sku = 1; }
  enum Status { NEW = 0; PAID = 1; }
}
"""
VALUES: dict[str, Any] = {
    "avro": {"id": 7, "item": "pen", "note": None},
    "json-schema": {"id": 7, "item": "pen"},
    "protobuf": {
        "id": 7,
        "item": "pen",
        "tags": {"red": 1},
        "lines": [{"sku": "a"}, {"sku": "b"}],
        "status": "PAID",
    },
}
SCHEMA_TYPES = {"avro": "AVRO", "json-schema": "JSON", "protobuf": "PROTOBUF"}


def _make(kind: str, url: str, **options: Any) -> Serde:
    config = {"schema.registry.url": url, **options}
    if kind == "avro":
        return AvroSerde(ORDER, config)
    if kind == "json-schema":
        return JsonSchemaSerde(ORDER_JSON, config)
    return ProtobufSerde(ORDER_PROTO, config)


def _through_broker(bootstrap: str, topic: str, data: bytes) -> bytes:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, data)
    assert producer.flush(CLIENT_TIMEOUT) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    try:
        message = consumer.poll(CLIENT_TIMEOUT)
        assert message is not None and message.error() is None, message
        value = message.value()
        assert value is not None
        return value
    finally:
        consumer.close()


@pytest.mark.parametrize("kind", ["avro", "json-schema", "protobuf"])
def test_each_format_round_trips_and_confluent_reads_it(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    kind: str,
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    serde = for_topic(_make(kind, schema_registry.url), topic, is_key=False)
    data = _through_broker(shared_broker.bootstrap, topic, serde.serialize(VALUES[kind]))
    assert serde.deserialize(data) == VALUES[kind]

    client = sr_client(schema_registry.url)
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == SCHEMA_TYPES[kind]
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == registered.schema_id
    context = SerializationContext(topic, MessageField.VALUE)
    if kind == "avro":
        assert AvroDeserializer(client)(data, context) == VALUES[kind]
    elif kind == "json-schema":
        assert JSONDeserializer(None, schema_registry_client=client)(data, context) == VALUES[kind]
    else:
        cls = message_class(ORDER_PROTO)
        message = ProtobufDeserializer(cls, {"use.deprecated.format": False})(data, context)
        assert message.lines[1].sku == "b" and message.tags["red"] == 1 and message.status == 1


def test_keys_register_under_the_key_subject(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
) -> None:
    serde = for_topic(_make("avro", schema_registry.url), "orders", is_key=True)
    serde.serialize(VALUES["avro"])
    assert sr_client(schema_registry.url).get_subjects() == ["orders-key"]


def test_record_name_strategies(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    record = _make("avro", schema_registry.url, **{"subject.name.strategy": "RecordNameStrategy"})
    record.serialize(VALUES["avro"])  # RecordNameStrategy needs no topic: unbound works
    topic_record = for_topic(
        _make(
            "avro",
            schema_registry.url,
            **{"subject.name.strategy": "io.confluent.kafka.serializers.subject."
                                        "TopicRecordNameStrategy"},
        ),
        "orders",
        is_key=False,
    )  # fmt: skip
    topic_record.serialize(VALUES["avro"])
    subjects = sorted(sr_client(schema_registry.url).get_subjects())
    assert subjects == ["orders-shop.Order", "shop.Order"], subjects


def test_without_auto_register_an_unknown_subject_is_a_registry_error(
    schema_registry: RegistryProcess,
) -> None:
    serde = for_topic(
        _make("avro", schema_registry.url, **{"auto.register.schemas": "false"}),
        "orders",
        is_key=False,
    )
    with pytest.raises(RegistryError, match=r"refused .*value of topic 'orders'.*40401"):
        serde.serialize(VALUES["avro"])


def test_use_latest_version_writes_with_the_subjects_latest_schema(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(schema_registry.url)
    client.register_schema("orders-value", Schema(ORDER, "AVRO"))
    latest = client.register_schema("orders-value", Schema(ORDER_V2, "AVRO"))
    options = {
        "schema.registry.url": schema_registry.url,
        "auto.register.schemas": False,
        "use.latest.version": True,
    }
    serde = for_topic(AvroSerde(None, options), "orders", is_key=False)
    data = serde.serialize({"id": 1, "item": "ink", "note": "x", "quantity": 3})
    assert int.from_bytes(data[1:5], "big") == latest
    # a reader with the old schema gets the record resolved to it
    old_reader = for_topic(AvroSerde(ORDER, {"schema.registry.url": schema_registry.url}),
                           "orders", is_key=False)  # fmt: skip
    assert old_reader.deserialize(data) == {"id": 1, "item": "ink", "note": "x"}


def test_normalize_schemas_finds_an_equivalent_schema(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(schema_registry.url)
    registered = '{"properties": {"a": {"type": "integer"}}, "type": "object"}'  # normal form
    reordered = '{"type": "object", "properties": {"a": {"type": "integer"}}}'
    schema_id = client.register_schema(
        "p-value", Schema(registered, "JSON"), normalize_schemas=True
    )

    def serde(normalize: bool) -> Serde:
        options = {
            "schema.registry.url": schema_registry.url,
            "auto.register.schemas": False,
            "normalize.schemas": normalize,
        }
        return for_topic(JsonSchemaSerde(reordered, options), "p", is_key=False)

    # (this order: the registry client caches what a lookup found, normalized or not)
    with pytest.raises(RegistryError, match="40403"):
        serde(False).serialize({"a": 1})
    data = serde(True).serialize({"a": 1})
    assert int.from_bytes(data[1:5], "big") == schema_id


def test_a_record_that_does_not_match_is_a_serde_error_naming_the_topic(
    schema_registry: RegistryProcess,
) -> None:
    for kind, bad in (
        ("avro", {"id": "seven", "item": "pen"}),
        ("json-schema", {"id": 7}),
        ("protobuf", {"id": 7, "colour": "red"}),
    ):
        serde = for_topic(_make(kind, schema_registry.url), f"orders-{kind}", is_key=False)
        with pytest.raises(SerdeError, match=f"value of topic 'orders-{kind}'") as caught:
            serde.serialize(bad)
        assert not isinstance(caught.value, RegistryError), (kind, caught.value)


def test_a_registry_that_is_down_is_a_registry_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    serde = for_topic(_make("avro", url), "orders", is_key=False)
    with pytest.raises(RegistryError, match=f"schema registry {url} is unreachable"):
        serde.serialize(VALUES["avro"])


# -- without a registry ------------------------------------------------------------------------


def test_options_are_checked() -> None:
    with pytest.raises(SerdeError, match=r"unknown subject\.name\.strategy 'Nope'"):
        AvroSerde(ORDER, {"subject.name.strategy": "Nope"})
    with pytest.raises(SerdeError, match=r"'use\.latest\.version' must be true or false"):
        AvroSerde(ORDER, {"use.latest.version": "yes"})
    with pytest.raises(SerdeError, match=r"needs a schema, or use\.latest\.version"):
        JsonSchemaSerde(None)
    with pytest.raises(SerdeError, match="one of them"):
        ProtobufSerde()
    with pytest.raises(SerdeError, match=r"bad Protobuf schema: schema.proto:1"):
        ProtobufSerde("syntax = 'proto3'; message M { int32 a = 1 }")
    with pytest.raises(SerdeError, match=r"no message 'Nope' in the schema \(it has shop.Order\)"):
        ProtobufSerde(ORDER_PROTO, message="Nope")


def test_binding_names_the_subject_and_keeps_bound_serdes() -> None:
    serde = AvroSerde(ORDER, {"schema.registry.url": "http://r.invalid"})
    bound = for_topic(serde, "orders", is_key=True)
    assert bound.subject_for() == "orders-key"  # type: ignore[attr-defined]
    assert for_topic(bound, "other", is_key=False) is bound
    with_default = for_topic(AvroSerde(ORDER), "t", is_key=False, default_registry="http://d:1")
    assert with_default.spec.options["schema.registry.url"] == "http://d:1"  # type: ignore[attr-defined]


def test_protobuf_messages_become_dicts_with_every_field() -> None:
    cls = message_class(ORDER_PROTO, "shop.Order")
    message = cls(id=3, item="x")
    message.lines.add(sku="s")
    assert message_to_dict(message) == {
        "id": 3,
        "item": "x",
        "tags": {},
        "lines": [{"sku": "s"}],
        "status": "NEW",
    }
    assert message_class(ORDER_PROTO, "Order") is cls
